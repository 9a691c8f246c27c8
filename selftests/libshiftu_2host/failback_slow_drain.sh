#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a two-sided failback survives a drain of the twin whose thread
# stalls for longer than the drain's deadline.  Going back, a side stops
# its twin and drains it up to a marker behind each queue; on a loaded
# lab host one such drain's thread stalled 13 s before its first look,
# which found the send marker, and the next look, 64 us and one kick
# later, gave the QP up because the receive marker (flushed only once
# Soft-RoCE's responder ran after the kick) had not come and 10 s had
# passed since the drain began (many_gen.sh, p64_2).  Its application's
# next WRITE_WITH_IMM then went out unprotected on the default QP, into
# the control receive the peer had posted there for the failback, and the
# peer took its immediate for the handshake's count and gave its QP up
# too.  Here the client's drains of its twin stall 10.5 s, CQ locks held,
# between stopping the twin and posting their markers
# (SHIFTU_TEST_DRAIN_STALL_MS, the test build), where the stop's tasklets
# run, so that the receive marker waits for the drain's first kick, as
# it did there: both sides must still fail back, nothing lost, duplicated
# or flushed.  The client asks to go back (its GID is the lower); the
# server's drains do not stall: as the side that follows, a drain of
# 10.5 s would outlast the asker's wait for its answer (5 s), and the
# asker would rejoin on the twins, again at each try.
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: host 1's out from 3 s to 5 s ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_DRAIN_STALL_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

STALL=10500

# cut TAG: host 1's cable out from 3 s to 5 s; then until both sides
# failed back (45 s at most: each drain of a twin stalls 10.5 s), or one
# gave a QP up
cut()
{
	local i

	lab_nap 3
	lu_cable 1 link off
	lab_nap 2
	lu_cable 1 link on
	for ((i = 0; i < 90; i++)); do
		grep -q 'unprotected' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		[ "$(lu_backs_both "$1")" = 2 ] && break
		lab_nap 0.5
	done
	lab_nap 1
}

lu_keep drain failback_slow_drain
# the client ends once both went back (LU_RIDE_END), some 35 s in: -D 55
# and 75 s only bound it
LU_CLI_ENV=SHIFTU_TEST_DRAIN_STALL_MS=$STALL LU_DURING=cut LU_RIDE_END=1 LU_CLI_SECS=75 \
	lu_pair drain 1 "$GEN" -m write_imm -D 55
grep -q "config: SHIFTU_TEST_DRAIN_STALL_MS=$STALL" "$FT_TMP/drain.cli.shiftu" ||
	lu_fail drain "the client's library did not take the test setting"
grep -q 'probe good: going back with the peer' "$FT_TMP/drain.cli.shiftu" ||
	lu_fail drain "the client did not ask to go back (the test stalls its drains only)"
grep -q 'a slow drain of its backup QP' "$FT_TMP/drain.cli.shiftu" ||
	lu_fail drain "no drain of the client's twin stalled"
log "drain: $(grep -o 'qp [0-9]* on rxe0: a slow drain of its backup QP.*' "$FT_TMP/drain.cli.shiftu" | head -n 1)"
lu_check_log drain cli "failovers>=1" "failbacks>=1"
lu_check_log drain srv "failovers>=1" "failbacks>=1"
lu_gen_clean drain
log "drain: $(grep '^shiftgen: role=server' "$FT_TMP/drain.srv.out")"
