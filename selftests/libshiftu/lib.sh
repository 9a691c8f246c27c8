#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers of the one-host libshiftu tests (sourced, not run), on
# top of ../shift_ft/lib.sh (ft_setup, ft_defer, fail, skip, log).
#
# Topology (one lab guest): rxe0 on eth0 (rail 0), rxe1 on eth1 (rail 1),
# each the other's backup; a job's QPs loop back to rxe0 itself.

LS_DIR=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../shift_ft/lib.sh
. "$LS_DIR/../shift_ft/lib.sh"

LS_RUN=$SHIFT_TOP/userlib/shiftu-run
LS_LIB=$SHIFT_TOP/userlib/libshiftu.so.0

# ls_setup: ft_setup (the module loaded, both ports up), and skip unless the
# library and shiftu-run are built.
ls_setup()
{
	[ -x "$LS_RUN" ] && [ -f "$LS_LIB" ] ||
		skip "libshiftu or shiftu-run not built (make -C $SHIFT_TOP lib)"
	ft_setup
}

LS_MRKINDS=$LS_DIR/mrkinds

# ls_mr_kind KIND: mrkinds KIND without the library, then under shiftu-run
# with a store of its own: the region's twin is registered on rxe1 and its
# rkey published (the store's mr:GUID:RKEY key appears while the region is
# held), and the key is forgotten once the region is deregistered.  Returns
# 4, with the reason in LS_WHY, when the kind cannot be registered here
# even without the library.
LS_WHY=
ls_mr_kind()
{
	local kind=$1 store=$FT_TMP/store.$1 out=$FT_TMP/mr.$1 rc=0 rkey i pid

	"$LS_MRKINDS" -H 0 "$kind" > "$out.plain" 2>&1 || rc=$?
	if [ "$rc" = 4 ]; then
		LS_WHY=$(sed 's/^mrkinds: //' "$out.plain")
		return 4
	fi
	[ "$rc" = 0 ] || { sed 's/^/# /' "$out.plain"; fail "$kind: mrkinds exited $rc without the library"; }
	"$LS_RUN" -q -l info -o "$out.shiftu" -- env SHIFTU_STORE_DIR="$store" \
		"$LS_MRKINDS" -H 4000 "$kind" > "$out.lib" 2>&1 &
	pid=$!
	for i in $(seq 40); do
		grep -q '^done' "$out.lib" && break
		rkey=$(sed -n 's/^\(mr\|rereg\) .*rkey=\([0-9]*\).*/\2/p' "$out.lib" | tail -n 1)
		[ -n "$rkey" ] && ls "$store" 2> /dev/null | grep -q "mr%3A[0-9a-fA-F]*%3A$rkey\$" && break
		sleep 0.1
	done
	if [ -z "$rkey" ] || ! ls "$store" 2> /dev/null | grep -q "mr%3A[0-9a-fA-F]*%3A$rkey\$"; then
		wait "$pid" || true
		sed 's/^/# /' "$out.lib" "$out.shiftu"
		fail "$kind: no twin published for rkey ${rkey:-?} within 4 s"
	fi
	wait "$pid" || rc=$?
	[ "$rc" = 0 ] || { sed 's/^/# /' "$out.lib" "$out.shiftu"; fail "$kind: mrkinds exited $rc under shiftu-run"; }
	if ls "$store" | grep -q "mr%3A"; then
		fail "$kind: the twin's key outlived the region: $(ls "$store" | grep 'mr%3A')"
	fi
	if grep -q ': warn: ' "$out.shiftu"; then
		sed 's/^/# /' "$out.shiftu"
		fail "$kind: the library warned"
	fi
	log "$kind: $(grep -h '^\(mr\|rereg\) ' "$out.lib" | tr '\n' ' ')twin published for rkey $rkey, forgotten at deregistration"
}
