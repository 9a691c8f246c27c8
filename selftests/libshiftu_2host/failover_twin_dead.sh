#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a twin that fails under the work it carries does not end the
# connection when the default QP can take the work back.  In the
# 1000-fault soak (session 27) Soft-RoCE's responder lost its place on the
# backup rail while two QPs were failed over: their twins stopped, and
# their errors reached shiftgen, which gave the connections up.  Now the
# twin's errors are held, the QP goes back to its default QP, with the
# peer, once rail 0 is up, and the requests the twin flushed are replayed
# there by the peer's count.  Host 1's rail 0 is pulled; once the client's
# QP is on its twin, its library stops that twin (SHIFTU_TEST_TWIN_ERR_FILE,
# the test build), 1.5 s before rail 0 comes back.  shiftgen's
# WRITE_WITH_IMM traffic rides it: nothing lost, duplicated, reordered or
# corrupt, no error, no warning.  Then again, with rail 0 out 13 s after
# the twin stopped: 10 s after, the library gives the twin's errors to the
# application, as the pull would have without it, with a warning, and
# shiftgen ends on them; nothing hangs.  (That ride's QPs retry 6 times,
# not for ever: the server's twin, joined to the stopped one, then fails
# too, and the server's shiftgen ends as well.)
#
#     host 1 (shiftgen client)                         host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: host 1's out ~3 s ════════════════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins; host 1's stopped) ───── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_TWIN_ERR_FILE); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

tag=twin_dead
STOP=$FT_TMP/$tag.stop

# twin_dies TAG: rail 0 of host 1 out once the QP is protected; once the
# client's library has failed over, its twin is stopped (the library
# removes the file once it has), and rail 0 comes back HOLD s later; then
# up to BACK_TENTHS tenths of a second for the failback.  The client's run
# is ended then (LU_RIDE_END).
HOLD=1.5 BACK_TENTHS=200 LU_RIDE_END=1
twin_dies()
{
	local i

	lu_pull_ready "$1"
	lu_cable 1 link off
	for ((i = 0; i < 100; i++)); do
		grep -q 'failed over to qp' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		lab_nap 0.1
	done
	lab_nap 0.5
	touch "$STOP"
	for ((i = 0; i < 50; i++)); do
		[ -e "$STOP" ] || break
		lab_nap 0.1
	done
	lab_nap "$HOLD"
	lu_cable 1 link on
	for ((i = 0; i < BACK_TENTHS; i++)); do
		grep -q 'failed back from' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		lab_nap 0.1
	done
}

lu_keep "$tag" twin_dead
LU_CLI_ENV="SHIFTU_TEST_TWIN_ERR_FILE=$STOP" LU_DURING=twin_dies \
	lu_pair "$tag" 1 "$GEN" -m write_imm -D 40
grep -q "config: SHIFTU_TEST_TWIN_ERR_FILE=$STOP" "$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "the client's library did not take the test setting"
grep -qE 'its twin, qp [0-9]+ on rxe1, stopped \(a test setting\): done' "$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "cli: the twin was not stopped while it carried the work"
grep -q 'its twin failed: going back to rxe0 once its path is up' "$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "cli: the twin's errors were not held for a failback"
lu_gen_clean "$tag"
lu_moves_back "$tag" cli
lu_check_log "$tag" cli "failovers>=1" "failbacks>=1"
lu_check_log "$tag" srv "failovers>=1"
log "$tag cli: $(grep -o 'its twin failed.*' "$FT_TMP/$tag.cli.shiftu" | head -n 1)"
log "$tag cli: $(grep -o 'going back from qp.*' "$FT_TMP/$tag.cli.shiftu" | tail -n 1)"
log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"

# no failback in time: the application gets the errors
tag=twin_dead_out
STOP=$FT_TMP/$tag.stop
HOLD=13 BACK_TENTHS=0
lu_keep "$tag" twin_dead_out
LU_CLI_ENV="SHIFTU_TEST_TWIN_ERR_FILE=$STOP" LU_DURING=twin_dies \
	lu_pair "$tag" 1 "$GEN" -m write_imm -D 40 -r 6
grep -qE 'its twin failed 1[0-2]\.[0-9] s ago and its port or path is still down: the application gets its [0-9]+ errors: unprotected' \
	"$FT_TMP/$tag.cli.shiftu" ||
	lu_fail "$tag" "cli: the held errors were not given to the application 10 s after the twin failed"
rc=$(cat "$FT_TMP/$tag.cli.rc")
{ [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'completion error' "$FT_TMP/$tag.cli.out"; } ||
	lu_fail "$tag" "cli: shiftgen exited $rc: it should have ended on the twin's errors"
log "$tag cli: $(grep -o 'its twin failed [0-9.]* s ago.*' "$FT_TMP/$tag.cli.shiftu" | head -n 1)"
log "$tag: $(grep '^shiftgen: role=client' "$FT_TMP/$tag.cli.out" | tail -n 1)"
