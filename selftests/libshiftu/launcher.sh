#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: shiftu-run says in one line what protection a job gets (the
# backups of the pair table, an unreachable store, no module at all), sets
# up the shim directory and the preload, refuses bad input with exit 2 and a
# message naming it, passes the command's exit status through, and still
# runs the job when it cannot protect it; a job that never opens a device
# makes the library do nothing at all.
#
#     shiftu-run ── LD_LIBRARY_PATH=userlib/shim, LD_PRELOAD=libshiftu.so.0 ──► CMD
#         └── shiftmon dump pairs ──netlink──► shift_ft (rxe0 <-> rxe1)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup

# expect_rc WANT CMD...: CMD exits WANT; its output in $FT_TMP/out
expect_rc()
{
	local want=$1 rc=0
	shift
	"$@" > "$FT_TMP/out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { sed 's/^/# /' "$FT_TMP/out"; fail "$* exited $rc, expected $want"; }
}

line=$("$LS_RUN" --check 2>&1)
log "--check: $line"
case $line in
"shiftu-run: backups "*rxe0/1-\>rxe1/1*"; store local") ;;
*) fail "--check did not list rxe0's backup and the store: $line" ;;
esac
[[ $line == *rxe1/1-\>rxe0/1* ]] || fail "--check did not list rxe1's backup: $line"

expect_rc 7 "$LS_RUN" -q -- sh -c 'exit 7'
expect_rc 0 "$LS_RUN" -q -s redis://127.0.0.1:6379 -l debug -o /dev/null -- env
grep -qx "LD_LIBRARY_PATH=$SHIFT_TOP/userlib/shim\(:.*\)\?" "$FT_TMP/out" ||
	fail "the shim directory is not first on LD_LIBRARY_PATH: $(grep LD_LIBRARY_PATH "$FT_TMP/out")"
grep -qx "LD_PRELOAD=$LS_LIB\( .*\)\?" "$FT_TMP/out" ||
	fail "libshiftu is not preloaded: $(grep LD_PRELOAD "$FT_TMP/out")"
for v in SHIFTU_STORE=redis://127.0.0.1:6379 SHIFTU_LOG=debug SHIFTU_LOG_FILE=/dev/null; do
	grep -qx "$v" "$FT_TMP/out" || fail "$v not in the job's environment"
done
# run twice, nothing is added twice
expect_rc 0 env LD_LIBRARY_PATH="$SHIFT_TOP/userlib/shim" "$LS_RUN" -q -- "$LS_RUN" -q -- env
[ "$(grep -c "libshiftu.so" "$FT_TMP/out")" = 1 ] || fail "libshiftu preloaded twice by nested shiftu-run"

expect_rc 2 "$LS_RUN" -s bogus -- true
grep -q "'bogus'" "$FT_TMP/out" || fail "bad store not named: $(cat "$FT_TMP/out")"
expect_rc 2 "$LS_RUN" -l loud -- true
grep -q "'loud'" "$FT_TMP/out" || fail "bad log level not named: $(cat "$FT_TMP/out")"
expect_rc 2 "$LS_RUN" --frobnicate -- true
expect_rc 2 "$LS_RUN"
expect_rc 2 env SHIFTU_STORE=nowhere "$LS_RUN" -- true
expect_rc 127 "$LS_RUN" -- no-such-command-here
log "bad input: exit 2 with the value named; a missing command: 127"

# nothing listens on port 1: the job runs, the line says why it is exposed
expect_rc 0 "$LS_RUN" -s redis://127.0.0.1:1 -- true
grep -q 'store redis://127.0.0.1:1 not reachable' "$FT_TMP/out" ||
	fail "an unreachable store was not reported: $(cat "$FT_TMP/out")"

# a job that never opens a device: not one line from the library, even at debug
expect_rc 0 "$LS_RUN" -q -l debug -o "$FT_TMP/lazy.log" -- sh -c 'sleep 0.2'
[ ! -s "$FT_TMP/lazy.log" ] || fail "the library did something for a job without RDMA: $(head -3 "$FT_TMP/lazy.log")"

# no module: the job still runs, and the line says it is unprotected
ft_unload
ft_defer ft_load
expect_rc 0 "$LS_RUN" -- true
grep -q '^shiftu-run: unprotected: no health page /dev/shift_ft' "$FT_TMP/out" ||
	fail "without the module, no 'unprotected' line: $(cat "$FT_TMP/out")"
log "without the module: $(cat "$FT_TMP/out")"
