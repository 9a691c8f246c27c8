#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: QPs on an SRQ, one or several, ride a pull of rail 0 under libshiftu and fail back: the SRQ's outstanding receives move to the twin SRQ and back, none lost or consumed twice.
#
#     host 1 (client)                                   host 2 (server, started first)
#     rxe0 ─ eth0 10.0.0.1 ══ rail 0: pulled 5 s to 8 s ══ eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ─── rail 1 (the twins) ───────── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ─── mgmt: the programs' TCP ──── eth2 10.0.2.2
#     redis-server (store)      lu_peer_run's shell
#
# rdma-core's ibv_srq_pingpong -q 1: one RC QP whose receives come from an
# SRQ, one CQ for sends and receives, every wr_id and status checked (it
# exits 1 on an error completion or a wr_id it did not post), and with -c
# every received buffer.  A message lost would stall the ping-pong (both
# ends wait for it until killed); one consumed twice would leave a receive
# count that does not match the iterations.  Without the library (the
# control) the run rides the pull by itself: its retry count, 7, never runs
# out on Soft-RoCE, it stalls and goes on.  With the library on both ends
# the client's QP fails over to rxe1 (no QP is left on the SRQ: its
# outstanding receives, read from Soft-RoCE's ring, go to the twin SRQ,
# and the SRQ is emptied), the server's follows on hearing it in its
# mailbox, and host 1's packets go over rail 1 during the outage.  After
# the repair both fail back: the QP grants no remote access, but the
# failback's probe and messages go to the peer's mailbox, which its reset
# QP grants remote writes to.  The library before SRQs gave such a QP no
# twin: it stalled through the outage like the control, and this test
# fails on it.
#
# Then shiftgen -m send --srq (its receives posted with ibv_post_srq_recv
# to an SRQ of the QP's own, every message's sequence number and checksum
# checked by the server) through the same pull, with the library: both
# sides fail over and back (the server's SRQ's receives move to the twin
# SRQ and back), rail 1 carries the traffic during the outage and rail 0
# after, and the server counts no message lost, duplicated, reordered or
# corrupt.
#
# Last, ibv_srq_pingpong as it comes (16 QPs on one SRQ, one CQ) through
# the same pull, without the library (the control) and with it.  With it
# each QP of each side fails over on its own; the SRQ's receives stay
# where QPs still consume them and move to the twin SRQ when the last QP
# has left, and the peers' control messages come to the QPs' mailboxes;
# after the repair they fail back one by one, the receives following the
# last; the runs exit 0 with every buffer checked.  The library before
# this gave such QPs no twin (it said they were unprotected), and this
# part fails on it.
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
lu_ride_setup ibv_srq_pingpong "$GEN"

# what the library says when an SRQ's receives move (srq.c)
SRQ_OVER='srq [0-9]*: [1-9][0-9]* receives moved from its default SRQ to its twin SRQ'
SRQ_BACK='srq [0-9]*: [1-9][0-9]* receives moved from its twin SRQ to its default SRQ'

# srq_pace TAG ARGS...: ibv_srq_pingpong ARGS at the lab's pace, unpulled
# and without the library, sizes the pulled runs (ITERS) to about 13 s:
# lu_pull takes rail 0 down 5 s in, brings it back about 8 s in, and the
# QPs fail back within a second or two.
srq_pace()
{
	local t=$1
	shift
	lu_keep "$t" srq
	lu_pp_pair "$t" 0 ibv_srq_pingpong "$@" -c -n 300
	lu_exited_ok "$t"
	lu_pp_iters "$t" 13
	log "$t: $(lu_pp_line "$t"): $ITERS iterations for the pulled runs"
}

# srq_ride TAG PRE ARGS...: ibv_srq_pingpong ARGS, every buffer checked,
# through a pull of host 1's rail 0, with the library on both ends (PRE 1)
# or without; both ends exit 0 with the client's result line.  s0, s1:
# host 1's packets on rail 0 and rail 1 during the outage.
srq_ride()
{
	local t=$1 pre=$2 off on
	shift 2
	lu_keep "$t" srq
	LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull \
		lu_pp_pair "$t" "$pre" ibv_srq_pingpong "$@" -c -n "$ITERS"
	read -r s0 s1 < "$FT_TMP/$t.outage"
	read -r off on < "$FT_TMP/$t.times"
	log "$t: rail 0 down from $off ms to $on ms; host 1's packets during the outage: rail 0 $s0, rail 1 $s1; client: $(lu_pp_line "$t")"
	lu_exited_ok "$t"
	grep -q 'iters in' "$FT_TMP/$t.cli.out" || lu_fail "$t" "no result line from the client"
}

srq_pace pace -q 1
for pre in 0 1; do
	t=srq.$pre
	srq_ride "$t" "$pre" -q 1
	[ "$pre" = 1 ] || continue
	grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$t.cli.shiftu" ||
		lu_fail "$t" "the client's QP did not fail over"
	grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$t.srv.shiftu" ||
		lu_fail "$t" "the server's QP did not follow"
	grep -q "$SRQ_OVER" "$FT_TMP/$t.cli.shiftu" ||
		lu_fail "$t" "the client's SRQ did not move"
	log "$t: client: $(grep -o 'srq [0-9]*: .*' "$FT_TMP/$t.cli.shiftu" | head -n 1)"
	log "$t: server: $(grep -o 'srq [0-9]*: .*' "$FT_TMP/$t.srv.shiftu" | head -n 1)"
	[ "$s1" -gt 100 ] || lu_fail "$t" "rail 1 carried only $s1 packets during the outage"
	grep -q "$SRQ_BACK" "$FT_TMP/$t.cli.shiftu" ||
		lu_fail "$t" "the client's SRQ did not move back"
	lu_check_log "$t" cli "qps=1" "failovers=1" "failbacks=1"
	lu_check_log "$t" srv "qps=1" "failovers=1" "failbacks=1"
done

# gen: checked SEND traffic into SRQs through the pull, failing over and back
t=gen
lu_keep "$t" srq
LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull lu_pair "$t" 1 "$GEN" -m send --srq -D 13
lu_rode "$t"
lu_gen_clean "$t"
for side in cli srv; do
	grep -q 'failed back from rxe1' "$FT_TMP/$t.$side.shiftu" ||
		lu_fail "$t" "$side: the QP did not fail back"
done
grep -q "$SRQ_OVER" "$FT_TMP/$t.srv.shiftu" ||
	lu_fail "$t" "the server's SRQ did not move to its twin"
grep -q "$SRQ_BACK" "$FT_TMP/$t.srv.shiftu" ||
	lu_fail "$t" "the server's SRQ did not move back"
lu_check_log "$t" srv "failovers=1" "failbacks=1"
log "$t: server: $(grep -o 'srq [0-9]*: .*' "$FT_TMP/$t.srv.shiftu" | tr '\n' ';')"
log "$t: $(grep '^shiftgen: role=server' "$FT_TMP/$t.srv.out")"

# shared: sixteen QPs on one SRQ through the pull, each side's moving one
# by one
srq_pace pace16
for pre in 0 1; do
	t=shared.$pre
	srq_ride "$t" "$pre"
	[ "$pre" = 1 ] || continue
	for side in cli srv; do
		n=$(grep -c 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$t.$side.shiftu" || true)
		[ "$n" = 16 ] || lu_fail "$t" "$side: $n of its 16 QPs failed over"
		grep -q "$SRQ_OVER" "$FT_TMP/$t.$side.shiftu" ||
			lu_fail "$t" "$side: the SRQ's receives did not move to its twin"
		grep -q "$SRQ_BACK" "$FT_TMP/$t.$side.shiftu" ||
			lu_fail "$t" "$side: the SRQ's receives did not move back"
		log "$t: $side: $(grep -o 'srq [0-9]*: .*' "$FT_TMP/$t.$side.shiftu" | tr '\n' ';')"
	done
	log "$t: the client's first QP failed back $(cat "$FT_TMP/$t.fbwait") ms after the repair"
	[ "$s1" -gt 100 ] || lu_fail "$t" "rail 1 carried only $s1 packets during the outage"
	lu_check_log "$t" cli "qps=16" "failovers=16" "failbacks=16"
	lu_check_log "$t" srv "qps=16" "failovers=16" "failbacks=16"
done
