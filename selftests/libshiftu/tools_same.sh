#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: programs nobody here wrote see the same devices through
# shiftu-run as without it: rdma-core's ibv_devices and ibv_devinfo -v
# print the same, and UCX's ucx_info -d lists the same memory domains,
# transports and devices (rxe0:1, rc_verbs among them).
#
#     ibv_devinfo / ucx_info ──► (shim: libshiftu, then libibverbs) ──► rxe0, rxe1
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup
ft_require_cmd ibv_devices ibv_devinfo ucx_info

# same NAME CMD...: CMD prints the same, exits the same, both ways
same()
{
	local name=$1 rc0=0 rc1=0
	shift
	"$@" > "$FT_TMP/$name.plain" 2>&1 || rc0=$?
	"$LS_RUN" -q -- "$@" > "$FT_TMP/$name.lib" 2>&1 || rc1=$?
	[ "$rc0" = "$rc1" ] || fail "$name: exit $rc0 plain, $rc1 under shiftu-run"
	if ! diff -u "$FT_TMP/$name.plain" "$FT_TMP/$name.lib" > "$FT_TMP/$name.diff"; then
		sed 's/^/# /' "$FT_TMP/$name.diff" | head -40
		fail "$name: output differs under shiftu-run"
	fi
	log "$name: same output ($(wc -l < "$FT_TMP/$name.plain") lines), exit $rc0 both ways"
}

same ibv_devices ibv_devices
same ibv_devinfo ibv_devinfo -v
grep -q 'hca_id:.*rxe0' "$FT_TMP/ibv_devinfo.plain" || fail "ibv_devinfo did not list rxe0"
same ucx_info ucx_info -d
grep -q 'Device: rxe0:1' "$FT_TMP/ucx_info.plain" || fail "ucx_info -d did not list rxe0:1"
grep -q 'Transport: rc_verbs' "$FT_TMP/ucx_info.plain" || fail "ucx_info -d did not list rc_verbs"
