#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: when many QPs that share a CQ fail over at once, no peer's
# control message is lost, however many one poll of that CQ finds:
# ib_send_bw -q 16 (16 QPs on one send CQ and one receive CQ, two-sided
# traffic, so each side waits for the other's receive count) with libshiftu
# on both hosts rides host 1's rail 0 pulled from 5 s to about 8 s, while
# each library's watcher thread waits 1 s before it serves a backup CQ's
# event (SHIFTU_TEST_WATCH_DELAY_MS), so that the 16 messages pile up in
# one CQ (the client moves its 16 QPs within about 150 ms); a poll then
# takes up to 16 at once, twice the handshake's batch of 8.  Both runs
# exit 0 with the client's result line, each of the 16 QPs fails over and
# back, and neither library logs a warning (a lost message leaves its QP
# "unprotected" 10 s later, with a warning).  The control, the same run
# without the library, leaves rail 1 idle.
#
#     host 1 (ib_send_bw -q 16 client)               host 2 (server)
#     16 QPs ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ 16 QPs
#     16 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 16 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_send_bw
Q=16
LU_PULL_ON=1 LU_PULL_BY=link

lu_keep plain many_send
LU_DURING=lu_pull lu_pair plain 0 ib_send_bw -F -q $Q -s 65536 -D 11
read -r s0 s1 < "$FT_TMP/plain.outage"
log "plain: exit $(cat "$FT_TMP/plain.cli.rc") and $(cat "$FT_TMP/plain.srv.rc"); host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
[ "$s1" -lt 100 ] || lu_fail plain "rail 1 carried $s1 packets without the library"

tag=send16
lu_keep "$tag" many_send
LU_ENV="SHIFTU_TEST_WATCH_DELAY_MS=1000" LU_DURING=lu_pull \
	lu_pair "$tag" 1 ib_send_bw -F -q $Q -s 65536 -D 25
read -r s0 s1 < "$FT_TMP/$tag.outage"
log "$tag: host 1's packets during the outage: rail 0 $s0, rail 1 $s1; the client failed back about $(cat "$FT_TMP/$tag.fbwait") tenths of a second after the repair"
# kept N: how many messages came beyond a poll's batch, on either side
kept=$(cat "$FT_TMP/$tag".{cli,srv}.shiftu |
       sed -n "s/.*: \([0-9]*\) of the peers' control messages came beyond .*/\1/p" |
       awk '{ n += $1 } END { print n + 0 }')
log "$tag: control messages that came beyond a poll's batch of 8: $kept"
lu_exited_ok "$tag"
[ -n "$(awk '$1 == 65536 && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
	lu_fail "$tag" "no result line from the client"
lu_check_log "$tag" cli "qps=$Q" "failovers=$Q" "failbacks=$Q"
lu_check_log "$tag" srv "qps=$Q"
[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
[ "$kept" -gt 0 ] || lu_fail "$tag" "no poll found more than 8 control messages: the case was not made"
