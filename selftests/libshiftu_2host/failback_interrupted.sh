#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a two-sided failback cut short loses nothing.  The side that goes
# back first (the asker) moves its receives to its default QP and sends
# the peer its receive count there; if the port goes in that moment, the
# count is lost with the QP (Soft-RoCE completes a request it cannot route
# with IBV_WC_LOC_QP_OP_ERR), and the peer, still on its twin, never hears.
# The asker must then put its work back on its twin, renewed when it left
# it, and ask the peer through the store to join it there (the peer renews
# its own twin and speaks first); the failback comes later, as usual.
# Both libraries wait 4 s between a failback's good probe and going back
# (SHIFTU_TEST_FAILBACK_DELAY_MS), and the asker's rail 0 goes down by
# `ip link set down` inside that wait, for 5 s.  (With 2 s, a starved
# guest's look at the peer's log took so long that the cut came after the
# failback: make check, 2026-11-30.  A cut that misses the wait all the
# same makes the test skip: the case did not happen.)
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ═══ rail 0: host 1's out 2 s; then the asker's ip link down in its wait
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_FAILBACK_DELAY_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

WAITING='going back in 4000 ms'

# asker TAG: which host's library waits to go back (1 or 2), within 20 s
asker()
{
	local i

	for ((i = 0; i < 100; i++)); do
		if grep -q "$WAITING" "$FT_TMP/$1.cli.shiftu" 2> /dev/null; then
			echo 1
			return 0
		fi
		if lu_peer_run "grep -q '$WAITING' $LU_RDIR/$1.srv.shiftu"; then
			echo 2
			return 0
		fi
		lab_nap 0.2
	done
	return 1
}

# cut TAG: host 1's cable out for 2 s; when a library waits to go back,
# that host's rail 0 down (ip link) for 5 s, past the wait's end however
# early in it the wait is seen (a 3 s cut seen 0.75 s in came back 20 ms
# before the wait ended, alone in the lab on 2026-12-01: the failback was
# not cut, and the test failed)
cut()
{
	local who

	lab_nap 3
	lab_link eth0 off
	lab_nap 2
	lab_link eth0 on
	who=$(asker "$1") || { echo "no library went back within 20 s" > "$FT_TMP/$1.asker"; return 0; }
	if [ "$who" = 1 ]; then
		ip link set eth0 down
		lab_nap 5
		ip link set eth0 up
	else
		lu_peer_run "ip link set eth0 down; sleep 5; ip link set eth0 up" ||
			return 1
	fi
	echo "$who" > "$FT_TMP/$1.asker"
}

lu_keep imm failback_interrupted
LU_ENV=SHIFTU_TEST_FAILBACK_DELAY_MS=4000 LU_DURING=cut \
	lu_pair imm 1 "$GEN" -m write_imm -D 35
lu_gen_clean imm
who=$(cat "$FT_TMP/imm.asker")
[[ $who == [12] ]] || fail "imm: $who"
if [ "$who" = 1 ]; then
	ask=$FT_TMP/imm.cli.shiftu peer=$FT_TMP/imm.srv.shiftu
else
	ask=$FT_TMP/imm.srv.shiftu peer=$FT_TMP/imm.cli.shiftu
fi
# what the asker's log says first after its wait began: its failback done
# (the cut came too late) or its port going down
first=$(awk -v w="$WAITING" 'index($0, w) { on = 1; next }
	on && /failed back from/ { print "back"; exit }
	on && /: (port|path) down/ { print "down"; exit }' "$ask")
[ "$first" != back ] ||
	skip "imm: host $who's rail 0 went down after its failback, not in its wait (a starved guest)"
log "imm: host $who asked to go back, and lost its rail 0 while it waited"
lu_check_log imm cli "failovers>=1" "failbacks>=1" "twin_wcs>0"
lu_check_log imm srv "failovers>=1" "failbacks>=1"
grep -qE 'while it went back: back on qp' "$ask" ||
	fail "imm: host $who's library did not move its work back onto its twin"
grep -q 'asked the peer to join its renewed twin' "$ask" ||
	fail "imm: host $who's library did not ask the peer to join it"
grep -q 'the peer renewed its twin: back on qp' "$peer" ||
	fail "imm: the peer's library did not join the renewed twin"
log "imm asker: $(grep -oE 'qp [0-9]+ on rxe0: [^:]* while it went back: .*' "$ask")"
log "imm peer: $(grep -oE 'qp [0-9]+ on rxe0: the peer renewed its twin: .*' "$peer")"
log "imm asker: $(grep -o 'failed back from.*' "$ask" | tail -n 1)"
log "imm: $(grep '^shiftgen: role=server' "$FT_TMP/imm.srv.out")"
