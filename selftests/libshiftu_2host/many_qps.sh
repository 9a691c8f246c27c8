#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a process with many QPs, as NCCL has, rides a pull with every QP:
# ib_write_bw -q 16 with libshiftu on both hosts rides host 1's rail 0
# pulled 5 s in, MANY_ROUNDS (default 5) rounds in a row: every run exits 0 with its result
# line, each of its 16 QPs fails over and back, neither library logs a
# warning, and rail 1 carries the traffic during the outage.  The
# control, the same run without the library, leaves rail 1 idle.  The
# outage lasts until all 16 moved and 2.7 s more (lu_pull's
# LU_PULL_MOVED), not the 2.7 s of the other tests: on the lab's one
# guest CPU, Soft-RoCE carries the moved QPs' traffic in softirq and the
# later moves get little of the CPU (with 8 MiB of 64 KiB WRITEs
# outstanding on each QP, 2.7 s saw 11 or 12 of the 16 moved, the rest
# staying put until the repair); a NIC that fails stays failed far
# longer.  A round's run ends once its 16 QPs are back (lu_end), not at
# a fixed length.
#
#     host 1 (ib_write_bw -q 16 client)              host 2 (server)
#     16 QPs ─ rxe0 ─ eth0 ══ rail 0 (down ~5 s) ═══ eth0 ─ rxe0 ─ 16 QPs
#     16 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 16 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_write_bw
lu_rounds
Q=16
# WRITEs of 16 KiB (16 packets each), perftest's 128 outstanding on each
# QP as with its default 64 KiB, so as many requests replayed in a move:
# the guest's one CPU is also the NIC, and what it pays for is the bytes
# in flight.  With 64 KiB (128 MiB in flight) the 16 moves took up to 5 s
# (16 KiB: up to 1 s), the failbacks came 6 to 10 s after the repair (16
# KiB: 1 to 2 s), and an ended run completed its writes for 1 to 7 s
# before its result.
SIZE=16384
# -f 2: perftest's margin, which a run ended early (lu_end) waits out
# before its result: by default a quarter of -D, 11 s of -D 45
MARGIN=2
LU_PULL_ON=1 LU_PULL_BY=link

# the control: without the library the QPs stay on rail 0 through the outage
lu_pull_plain many_qps ib_write_bw -F -q $Q -s $SIZE -D 14

# ride TAG: the round's pull (lu_pull 5 s in, until all Q QPs moved),
# urgent, and the libraries' threads too from 3 s in (lu_lib_urgent: the
# client's QPs are protected 1.5 to 2 s in); once the client's library has
# failed all Q back (60 s at most), the client's run ends (lu_end).
ride()
(
	local cli=$! t0 r

	lu_urgent
	lab_nap 3
	lu_lib_urgent
	LU_PULL_AT=2 LU_PULL_MOVED=$Q LU_PULL_COUNT_AT=0.7 LU_PULL_HOLD=0.5 LU_PULL_AFTER=0 \
		lu_pull "$1"
	lu_wait_backs $Q 60 "$1"
	t0=$EPOCHREALTIME
	lu_end "$cli" ib_write_bw
	# when the run printed its result, and when its process was gone
	while ! grep -q "^ $SIZE " "$FT_TMP/$1.cli.out" && [ "$(lu_ms "$t0")" -lt 30000 ]; do
		lab_nap 0.2
	done
	r=$(lu_ms "$t0")
	while pgrep -P "$cli" > /dev/null && [ "$(lu_ms "$t0")" -lt 60000 ]; do
		lab_nap 0.2
	done
	echo "$r $(lu_ms "$t0")" > "$FT_TMP/$1.ended"
)

for ((r = 1; r <= ROUNDS; r++)); do
	tag=q16_$r
	lu_keep "$tag" many_qps
	t0=$EPOCHREALTIME
	# -D 45 bounds a run that its end (ride) does not reach: in one
	# round of make many, before lu_lib_urgent, the probes were seen
	# good 17 s after the repair
	LU_CLI_SECS=90 LU_SRV_SECS=100 LU_DURING=ride \
		lu_pair "$tag" 1 ib_write_bw -F -q $Q -s $SIZE -D 45 -f $MARGIN
	read -r moved mv_ms < "$FT_TMP/$tag.moved"
	read -r off on < "$FT_TMP/$tag.times"
	read -r backs fb_ms < "$FT_TMP/$tag.fbdone"
	read -r res_ms gone_ms < "$FT_TMP/$tag.ended"
	log "$tag: $moved of $Q QPs moved $mv_ms ms after the pull, rail 0 down from $((off + 3000)) to $((on + 3000)) ms after the client's start; $backs of $Q back $fb_ms ms after lu_pull's end; its run ended (lu_end): result $res_ms ms, process gone $gone_ms ms after; the round took $(lu_ms "$t0") ms"
	lu_bw_rode "$tag" $Q $SIZE
	log "$tag: QPs whose twin was not ready yet at the pull: $(grep -c 'twin is not ready yet' "$FT_TMP/$tag.cli.shiftu" || true) of $Q"
done
