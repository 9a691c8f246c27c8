#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a two-sided failback whose follower comes late converges,
# nothing lost, duplicated or flushed.  The side that asked goes back and
# tells the peer on the default QP.  Under make check's load a peer came
# 5.7 s later; the asker had left the default QP after 5 s of silence
# (REJOIN_NS) for its twin, asking the peer through the store to join it
# there, and the peer, going back all the same, answered into a stopped
# QP and could learn of the rejoin only from the store, on a host where
# that took longer than the asker waited for it on the twin (10 s): 7 of
# store_down.sh's 64 QPs were given up, each side reporting "no word from
# the peer in 10.0 s".  Here the
# peer (it granted the failback) follows 17 s after the asker's message
# came (SHIFTU_TEST_FOLLOW_DELAY_MS, the test build), fo_lock held as a
# thread starved of the CPU holds it, so that it reads nothing of the
# store meanwhile either: past the asker's 5 s and the 10 s after.  The
# asker must keep listening where the late peer comes (it asks the peer
# to cancel the failback instead of leaving), take its answer there, and
# both fail back, on this first try.  The client asks (its GID is the
# lower).
#
#     host 1 (shiftgen client, asks)                 host 2 (shiftgen server, late)
#     rxe0 ─ eth0 ══ rail 0: host 1's out from 3 s to 5 s ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_FOLLOW_DELAY_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

DELAY=17000

# cut TAG: host 1's cable out from 3 s to 5 s; then until both sides
# failed back once the late follow is over (70 s at most), or the client
# gave its QP up
cut()
{
	local i

	lab_nap 3
	lu_cable 1 link off
	lab_nap 2
	lu_cable 1 link on
	for ((i = 0; i < 140; i++)); do
		grep -q 'unprotected' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		if grep -q 'no word from the peer on its default QP' "$FT_TMP/$1.cli.shiftu" 2> /dev/null &&
		   [ "$(grep -c 'failed back from' "$FT_TMP/$1.cli.shiftu")" -ge 1 ] &&
		   [ "$(lu_backs_both "$1")" = 2 ]; then
			break
		fi
		lab_nap 0.5
	done
	lab_nap 1
}

lu_keep late failback_late_peer
# the client ends once both went back (LU_RIDE_END): -D 85 and 100 s only
# bound it
LU_ENV=SHIFTU_TEST_FOLLOW_DELAY_MS=$DELAY LU_DURING=cut LU_RIDE_END=1 LU_CLI_SECS=100 \
	LU_SRV_SECS=120 lu_pair late 1 "$GEN" -m write_imm -D 85
grep -q "config: SHIFTU_TEST_FOLLOW_DELAY_MS=$DELAY" "$FT_TMP/late.srv.shiftu" ||
	lu_fail late "the server's library did not take the test setting"
grep -q 'probe good: going back with the peer' "$FT_TMP/late.cli.shiftu" ||
	lu_fail late "the client did not ask to go back (the test delays the server's follow)"
grep -q "following the peer back in $DELAY ms" "$FT_TMP/late.srv.shiftu" ||
	lu_fail late "the server did not follow late"
grep -q 'no word from the peer on its default QP' "$FT_TMP/late.cli.shiftu" ||
	lu_fail late "the client heard the peer in time (the race was not reached)"
if grep -h 'no word from the peer in\|unprotected' "$FT_TMP/late.cli.shiftu" "$FT_TMP/late.srv.shiftu"; then
	lu_fail late "a QP was given up"
fi
log "late asker: $(grep -o 'qp [0-9]* on rxe0: no word from the peer on its default QP.*' "$FT_TMP/late.cli.shiftu" | head -n 1)"
log "late peer: $(grep -o 'qp [0-9]* on rxe0: the peer.*' "$FT_TMP/late.srv.shiftu" | tail -n 3 | tr '\n' '|')"
lu_check_log late cli "failovers>=1" "failbacks>=1"
lu_check_log late srv "failovers>=1" "failbacks>=1"
lu_gen_clean late
log "late: $(grep '^shiftgen: role=server' "$FT_TMP/late.srv.out")"
