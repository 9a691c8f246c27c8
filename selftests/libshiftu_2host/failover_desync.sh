#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a "remote invalid request" on an RDMA WRITE or a SEND the peer's
# QP took the like of before (its responder lost its place in a message,
# as 6.1's Soft-RoCE did in the 300- and 1000-fault soaks) fails the QP
# over and back like a path fault: shiftgen's client sees no error and
# the server finds every message and checksum right, in write mode and in
# send mode (where the server's library, its QP stopped by the refusal,
# may fail over on its flushes before the client meets the refusal: the
# client then follows, and judges the refusal the transport's too).  The
# responder is made to lose its place by the test build
# (SHIFTU_TEST_RESET_FILE): the server resets its QP in place, with the
# PSN it expects, and posts again what the reset dropped (its receives, a
# credit WRITE), while host 1's rail 0 silently drops what the client
# sends; when the drop ends, the client's retry resends the message the
# responder was in, the responder takes its first packets for duplicates
# and refuses the next (no FIRST before it: check_op_seq()).  A drop that
# began between two messages costs nothing: the next one is tried, eight
# at most.  Where the drop begins is the guest's: its one CPU runs tc
# only once Soft-RoCE's requester has stopped sending, most often at the
# end of a message (one lab run of two met the client in one at once, the
# other in none of four): a mode whose resets all met none is logged, and
# the test skips if both did, having proved nothing.  (Dropping only the
# middle packets would make it certain, but a tc drop action refuses the
# packet, and 6.1's requester retries a refused packet at once, for ever:
# a soft lockup of the guest.)
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

# desync TAG: 2 s in, up to eight times until the client met a refusal:
# host 1's rail 0 drops all it sends, the server's library resets its QP
# in place (it removes the file once it has), the drop ends; then until
# the client's QP is back (the run ends there: LU_RIDE_END).  An attempt
# takes 1 s on an idle guest, up to 15 s on a loaded one (a make check's
# client met its refusal at the fifth, 58 s in): the run's -D 150 (and
# the client's timeout, 170 s) only bound it.
desync()
{
	local i j

	lab_nap 2
	for ((i = 0; i < 8; i++)); do
		tc qdisc change dev eth0 root netem loss 100%
		lab_nap 0.3
		# not reset (the client's run ended, and its server): no more
		lu_peer_run "touch $RESET; (for _ in \$(seq 50); do [ -e $RESET ] || exit 0; sleep 0.1; done; exit 1)" ||
			{ tc qdisc change dev eth0 root netem loss 0%; return 0; }
		tc qdisc change dev eth0 root netem loss 0%
		for ((j = 0; j < 20; j++)); do
			if grep -q "$REFUSED" "$FT_TMP/$1.cli.shiftu" 2> /dev/null; then
				lu_backed "$1"
				return 0
			fi
			lab_nap 0.1
		done
	done
}

# Send mode's messages are 12 KiB, 12 packets: Soft-RoCE's requester
# stops at 128 packets unacknowledged (RXE_MAX_UNACKED_PSNS), in the
# middle of a message, and tc runs then.  Of 4 KiB (4 packets, 32 to the
# window) none of eight drops met one part way.  One CQ for both queues,
# as the soak's send pair and NCCL have.  The refused packet is a middle
# one, which the responder refuses before it takes a receive: the server
# sees no error of a receive, only the flushes of its stopped QP.
skipped=
for mode in write send; do
	tag=$mode size=
	[ "$mode" = write ] || size="-s 12288 --one-cq"
	lu_keep "$tag" failover_desync
	# shellcheck disable=SC2086 # $size: no word, or three
	LU_ENV="SHIFTU_TEST_RESET_FILE=$RESET" LU_DURING=desync LU_RIDE_END=1 \
		LU_CLI_SECS=170 LU_SRV_SECS=190 lu_pair "$tag" 1 "$GEN" -m "$mode" $size -D 150
	grep -q 'reset in place, expecting PSN [0-9]*, [0-9]* receives and [0-9]* requests posted again (a test setting): done' \
		"$FT_TMP/$tag.srv.shiftu" ||
		lu_fail "$tag" "the server's library did not reset its QP"
	if ! grep -q "$REFUSED" "$FT_TMP/$tag.cli.shiftu"; then
		log "$tag: every reset met the client between two messages: no refusal to follow"
		skipped="$skipped $tag"
		continue
	fi
	what="an RDMA WRITE"
	[ "$mode" = write ] || what="a SEND"
	grep -q "$REFUSED on $what behind one the peer took: its responder lost its place" \
		"$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's library took the refusal for the application's error"
	# the client's own failover, or the server's first: the refusal
	# stopped the server's QP, whose flushes it may meet before the
	# client meets the refusal
	grep -qE "($REFUSED|the peer failed over): failed over to qp [0-9]+ on rxe1" \
		"$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client did not fail over on the refusal"
	# (write mode's server, which posts nothing, answers and stays)
	[ "$mode" = write ] ||
		grep -qE ": failed over to qp [0-9]+ on rxe1" "$FT_TMP/$tag.srv.shiftu" ||
		lu_fail "$tag" "the server did not fail over"
	! grep -q "the application's own error" "$FT_TMP/$tag.cli.shiftu" "$FT_TMP/$tag.srv.shiftu" ||
		lu_fail "$tag" "a library took the refusal for its application's error"
	lu_gen_clean "$tag"
	lu_check_log "$tag" cli "failovers>=1" "failbacks>=1" "replayed>0"
	lu_moves_back "$tag" cli
	log "$tag: client: $(grep -oE "($REFUSED|the peer failed over): failed over.*" "$FT_TMP/$tag.cli.shiftu" | head -1)"
	[ "$mode" = write ] ||
		log "$tag: server: $(grep -oE "[a-z][a-z ]*: failed over to qp.*" "$FT_TMP/$tag.srv.shiftu" | head -1)"
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
done
[ "$skipped" != " write send" ] ||
	skip "every reset met the client between two messages in both modes: no refusal to follow"
