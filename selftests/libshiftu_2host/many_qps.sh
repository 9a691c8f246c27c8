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

# The store runs on host 1, whose one CPU the client's polling and
# Soft-RoCE's 16 QPs share with it (a job's store lives on a host its
# pollers do not starve): at the default niceness, in two of the rounds
# of one session, it answered nothing for 5 s around the repair, and 9 of
# the 16 QPs asked to fail back too late for the run's end.
SMR_REDIS_NICE=-10
lu_ride_setup ib_write_bw
ROUNDS=5
Q=16
LU_PULL_ON=1 LU_PULL_BY=link

# the control: without the library the QPs stay on rail 0 through the outage
lu_pull_plain many_qps ib_write_bw -F -q $Q -s 65536 -D 14

for ((r = 1; r <= ROUNDS; r++)); do
	tag=q16_$r
	lu_keep "$tag" many_qps
	# 45 s: in one round of make many the probes were seen good 17 s
	# after the repair (the shadow thread beside the pollers), and the
	# 30 s run ended 2 s later, before the fence that fails back
	LU_CLI_SECS=90 LU_SRV_SECS=100 LU_PULL_HOLD=8 LU_DURING=lu_pull_urgent \
		lu_pair "$tag" 1 ib_write_bw -F -q $Q -s 65536 -D 45
	lu_bw_rode "$tag" $Q
	log "$tag: QPs whose twin was not ready yet at the pull: $(grep -c 'twin is not ready yet' "$FT_TMP/$tag.cli.shiftu" || true) of $Q"
done
