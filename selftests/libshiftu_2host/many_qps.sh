#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a process with many QPs, as NCCL has, rides a pull with every QP:
# ib_write_bw -q 16 with libshiftu on both hosts rides host 1's rail 0
# pulled from 5 s to 10 s, MANY_ROUNDS times in a row (default 5): every
# run exits 0 with its result line, each of its 16 QPs fails over and back
# (one whose twin was not ready yet when the port went down, once it is),
# and rail 1 carries the traffic during the outage.
#
#     host 1 (ib_write_bw -q 16 client)              host 2 (server)
#     16 QPs ─ rxe0 ─ eth0 ══ rail 0 (down 5-10 s) ══ eth0 ─ rxe0 ─ 16 QPs
#     16 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 16 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_write_bw
ROUNDS=${MANY_ROUNDS:-5}
# Sixteen busy pollers leave the guest's one CPU so little that a store
# request may time out (1 s) and be retried, and a QP's twin may not be
# ready when the port goes down 5 s in: the QP then stays until it is (the
# application sees a stall, never an error).  Both are said in the log and
# counted here; neither fails the test, whose QPs must all ride the pull.
LU_WARN_OK=': warn: (store redis://[^ ]*: [A-Z]+: Connection timed out|qp [0-9]+ on rxe0: port down, but its twin is not ready: staying)$'

LU_PULL_ON=1 LU_PULL_BY=link

for ((r = 1; r <= ROUNDS; r++)); do
	tag=q16_$r
	lu_keep "$tag" many_qps
	LU_DURING=lu_pull lu_pair "$tag" 1 ib_write_bw -F -q 16 -s 65536 -D 17
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	log "$tag: host 1's packets during the outage: rail 0 $s0, rail 1 $s1; the client failed back about $(cat "$FT_TMP/$tag.fbwait") tenths of a second after the repair"
	lu_exited_ok "$tag"
	[ -n "$(awk '$1 == 65536 && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
		lu_fail "$tag" "no result line from the client"
	lu_check_log "$tag" cli "qps=16" "failovers=16" "failbacks=16"
	lu_check_log "$tag" srv "qps=16"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	log "$tag: QPs whose twin was not ready at the pull: $(grep -c 'twin is not ready: staying' "$FT_TMP/$tag.cli.shiftu" || true) of 16"
done
