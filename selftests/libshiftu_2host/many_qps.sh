#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a process with many QPs, as NCCL has, rides a pull with every QP:
# ib_write_bw -q 16 with libshiftu on both hosts rides host 1's rail 0
# pulled from 5 s to about 15 s, five rounds in a row: every run exits 0 with
# its result line, each of its 16 QPs fails over and back, neither
# library logs a warning, and rail 1 carries the traffic during the
# outage.  The control, the same run without the library, leaves rail 1
# idle.  The outage lasts 10 s, not the 2.7 s of the other tests: on the
# lab's one guest CPU, Soft-RoCE carries the moved QPs' traffic in softirq
# and the later moves get little of the CPU (each QP has 8 MiB of WRITEs
# outstanding), so 2.7 s saw 11 or 12 of the 16 moved, the rest staying
# put until the repair; a NIC that fails stays failed far longer.
#
#     host 1 (ib_write_bw -q 16 client)              host 2 (server)
#     16 QPs ─ rxe0 ─ eth0 ══ rail 0 (down 5-15 s) ═ eth0 ─ rxe0 ─ 16 QPs
#     16 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 16 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_write_bw
ROUNDS=5
Q=16
LU_PULL_ON=1 LU_PULL_BY=link

# the control: without the library the QPs stay on rail 0 through the outage
lu_keep plain many_qps
LU_DURING=lu_pull lu_pair plain 0 ib_write_bw -F -q $Q -s 65536 -D 14
read -r s0 s1 < "$FT_TMP/plain.outage"
log "plain: exit $(cat "$FT_TMP/plain.cli.rc") and $(cat "$FT_TMP/plain.srv.rc"); host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
[ "$s1" -lt 100 ] || lu_fail plain "rail 1 carried $s1 packets without the library"

for ((r = 1; r <= ROUNDS; r++)); do
	tag=q16_$r
	lu_keep "$tag" many_qps
	LU_PULL_HOLD=8 LU_DURING=lu_pull lu_pair "$tag" 1 ib_write_bw -F -q $Q -s 65536 -D 30
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	log "$tag: host 1's packets during the outage: rail 0 $s0, rail 1 $s1; the client failed back about $(cat "$FT_TMP/$tag.fbwait") tenths of a second after the repair"
	lu_exited_ok "$tag"
	[ -n "$(awk '$1 == 65536 && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
		lu_fail "$tag" "no result line from the client"
	lu_check_log "$tag" cli "qps=$Q" "failovers=$Q" "failbacks=$Q"
	lu_check_log "$tag" srv "qps=$Q"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	log "$tag: QPs whose twin was not ready yet at the pull: $(grep -c 'twin is not ready yet' "$FT_TMP/$tag.cli.shiftu" || true) of $Q"
done
