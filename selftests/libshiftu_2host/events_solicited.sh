#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: an application that sleeps in its completion channel armed for
# solicited completions only (ibv_req_notify_cq(cq, 1)) is woken by the
# messages its twin receives.  shiftgen's client marks each notification
# solicited (--solicited), and its server, whenever its receive CQ is
# empty, arms it so and sleeps; a message found after a full second's
# sleep with no event is a missed wake-up, and fails the run.  Host 1's
# rail 0 goes down for about 3 s once the pair runs (lu_pull_ready), and
# each run ends once the pull is over (LU_RIDE_END): the server sleeps
# through the outage
# until the client's failover, and its receives then complete on its twin,
# on another device, where only the library's bell can raise its event.
# The bell rings a solicited-only arm with a flushed receive, after
# widening the arm (6.12's Soft-RoCE raises no solicited event for a flushed
# receive, 6.1's none for a flushed send: bell.c).  The control runs first:
# the same pair and pull without the library, whose server must miss no
# wake-up either (plain Soft-RoCE raises the solicited events itself); on
# 6.12 its client may die of the pull instead (lu_plain_rode).
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server, asleep)
#     rxe0 ─ eth0 ══════ rail 0: pulled for 3 s ═════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup

lu_keep solicited_plain solicited
LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull LU_PULL_AT=ready LU_RIDE_END=1 \
	lu_pair solicited_plain 0 "$GEN" -m write_imm --solicited -D 30
read -r off on < "$FT_TMP/solicited_plain.times"
log "solicited_plain: host 1's rail 0 down from $off ms to $on ms after the client's start"
if lu_plain_rode solicited_plain; then
	lu_gen_clean solicited_plain
	ft_expect "control: solicited server missed_wakes" \
		"$(lu_gen missed_wakes "$FT_TMP/solicited_plain.srv.out")" 0
	wakes=$(lu_gen wakes "$FT_TMP/solicited_plain.srv.out")
	[ "${wakes:-0}" -gt 0 ] || lu_fail solicited_plain "the server was never woken by an event"
	log "solicited_plain: $(grep '^shiftgen: role=server ' "$FT_TMP/solicited_plain.srv.out")"
fi

lu_keep solicited solicited
LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull LU_PULL_AT=ready LU_RIDE_END=1 \
	lu_pair solicited 1 "$GEN" -m write_imm --solicited -D 30
read -r off on < "$FT_TMP/solicited.times"
log "solicited: host 1's rail 0 down from $off ms to $on ms after the client's start"
lu_gen_clean solicited
ft_expect "solicited server missed_wakes" "$(lu_gen missed_wakes "$FT_TMP/solicited.srv.out")" 0
wakes=$(lu_gen wakes "$FT_TMP/solicited.srv.out")
[ "${wakes:-0}" -gt 0 ] || lu_fail solicited "the server was never woken by an event"
lu_check_log solicited cli "failovers=1" "failbacks=1" "twin_wcs>0"
lu_check_log solicited srv "failovers=1" "failbacks=1" "twin_wcs>0"
log "solicited: $(grep '^shiftgen: role=server ' "$FT_TMP/solicited.srv.out")"
