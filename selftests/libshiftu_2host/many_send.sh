#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: when many QPs that share a CQ fail over at once, no peer's control
# message is lost, however many one poll of that CQ finds: ib_send_bw -q 16
# -s 1024 (16 QPs on one send CQ and one receive CQ, two-sided traffic, so
# each side waits for the other's receive count), with libshiftu on both
# hosts, rides host 1's rail 0 pulled from 5 s to about 8 s, while each
# library's watcher thread waits 1 s before it serves a backup CQ's event
# (SHIFTU_TEST_WATCH_DELAY_MS), so that the 16 messages pile up in one CQ
# (the client moves its 16 QPs within about 150 ms); a poll then takes up to
# 16 at once, twice the handshake's batch of 8.  Both runs exit 0 with the
# client's result line, each of the 16 QPs fails over and back, and neither
# library logs a warning (a lost message leaves its QP "unprotected" 10 s
# later, with a warning).  The control, the same run without the library,
# leaves rail 1 idle.  The run lasts 45 s: the shadow thread fails the 16 QPs
# back one after the other, and in the lab the last one went back 11 to 23 s
# after the repair, up to 33 s into the run.
#
#     host 1 (ib_send_bw -q 16 client)               host 2 (server)
#     16 QPs ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ 16 QPs
#     16 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 16 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_WATCH_DELAY_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_ride_setup ib_send_bw
Q=16
# Messages of 1 KiB, one packet each.  Messages of 64 KiB on 16 QPs end in
# "Failed status 9" (or 11) on Soft-RoCE alone: ib_send_bw -F -q 16 -s
# 65536 -D 45, without the library and without a pull, failed 3 runs of 6
# in the lab (Debian's 6.1), and the same with -s 1024 none of 6.  With the
# library, this test's run of them failed in about one make check of
# seven, seconds after its QPs were back: not the library's doing, and not
# what this test is about.
SIZE=1024
LU_PULL_ON=1 LU_PULL_BY=link

lu_pull_plain many_send ib_send_bw -F -q $Q -s $SIZE -D 11

tag=send16
lu_keep "$tag" many_send
# the client took 43 s for a 35 s run: 90 s for a 45 s one; debug logs,
# for the receives each move posted and the library's control receives
LU_LOG=debug LU_CLI_SECS=90 LU_SRV_SECS=100 LU_ENV="SHIFTU_TEST_WATCH_DELAY_MS=1000" \
	LU_DURING=lu_pull lu_pair "$tag" 1 ib_send_bw -F -q $Q -s $SIZE -D 45
# kept N: how many messages came beyond a poll's batch, on either side
kept=$(cat "$FT_TMP/$tag".{cli,srv}.shiftu |
       sed -n "s/.*: \([0-9]*\) of the peers' control messages came beyond .*/\1/p" |
       awk '{ n += $1 } END { print n + 0 }')
log "$tag: control messages that came beyond a poll's batch of 8: $kept"
lu_bw_rode "$tag" $Q $SIZE
[ "$kept" -gt 0 ] || lu_fail "$tag" "no poll found more than 8 control messages: the case was not made"
