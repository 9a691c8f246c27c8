#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a "remote invalid request" on an RDMA WRITE the peer's QP took
# the like of before (its responder lost its place in a message, as 6.1's
# Soft-RoCE did in the 300-fault soak, 5.6 s after a failback) fails the
# QP over and back like a path fault: shiftgen's client sees no error and
# the server finds every slot and checksum right.  The responder is made
# to lose its place by the test build (SHIFTU_TEST_RESET_FILE): the server,
# which posts nothing, resets its QP in place, with the PSN it expects,
# while host 1's rail 0 silently drops what the client sends; when the
# drop ends, the client's retry resends the message the responder was in,
# the responder takes its first packets for duplicates and refuses the
# next (no FIRST before it: check_op_seq()).  A drop that began between
# two messages costs nothing: the next one is tried, five at most.  Where
# the drop begins is the guest's: its one CPU runs tc only once
# Soft-RoCE's requester has stopped sending, most often at the end of a
# message (one lab run of two met the client in one at once, the other in
# none of four): if none did, the test skips, having proved nothing.
# (Dropping only the WRITEs' middle packets would make it certain, but a
# tc drop action refuses the packet, and 6.1's requester retries a refused
# packet at once, for ever: a soft lockup of the guest.)
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: netem loss 100% a moment ══ eth0 ─ rxe0 (reset)
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_RESET_FILE); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup
lu_require_netem
# in before any QP runs, changed later (failover_gen.sh says why)
tc qdisc add dev eth0 root netem loss 0%
ft_defer "tc qdisc del dev eth0 root 2> /dev/null"
RESET=$LU_RDIR/reset
REFUSED='remote invalid request error'

# desync TAG: 2 s in, up to five times until the client met a refusal:
# host 1's rail 0 drops all it sends, the server's library resets its QP
# in place (it removes the file once it has), the drop ends
desync()
{
	local i j

	lab_nap 2
	for ((i = 0; i < 5; i++)); do
		tc qdisc change dev eth0 root netem loss 100%
		lab_nap 0.3
		# not reset (the client's run ended, and its server): no more
		lu_peer_run "touch $RESET; (for _ in \$(seq 50); do [ -e $RESET ] || exit 0; sleep 0.1; done; exit 1)" ||
			{ tc qdisc change dev eth0 root netem loss 0%; return 0; }
		tc qdisc change dev eth0 root netem loss 0%
		for ((j = 0; j < 20; j++)); do
			grep -q "$REFUSED" "$FT_TMP/$1.cli.shiftu" 2> /dev/null && return 0
			lab_nap 0.1
		done
	done
}

lu_keep desync failover_desync
LU_ENV="SHIFTU_TEST_RESET_FILE=$RESET" LU_DURING=desync \
	lu_pair desync 1 "$GEN" -m write -D 40
grep -q 'reset in place, expecting PSN [0-9]* (a test setting): done' "$FT_TMP/desync.srv.shiftu" ||
	lu_fail desync "the server's library did not reset its QP"
grep -q "$REFUSED" "$FT_TMP/desync.cli.shiftu" ||
	skip "every reset met the client between two messages: no refusal to follow"
grep -q "$REFUSED on an RDMA WRITE behind one the peer took: its responder lost its place" \
	"$FT_TMP/desync.cli.shiftu" ||
	lu_fail desync "the client's library took the refusal for the application's error"
grep -qE "$REFUSED: failed over to qp [0-9]+ on rxe1" "$FT_TMP/desync.cli.shiftu" ||
	lu_fail desync "the client did not fail over on the refusal"
lu_gen_clean desync
lu_check_log desync cli "failovers>=1" "failbacks>=1" "replayed>0"
lu_moves_back desync cli
log "desync: $(grep -o "$REFUSED: failed over.*" "$FT_TMP/desync.cli.shiftu" | head -1)"
log "desync: $(grep '^shiftgen: role=server' "$FT_TMP/desync.srv.out")"
