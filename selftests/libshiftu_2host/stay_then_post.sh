#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a peer that has posted nothing when the other side fails over,
# and posts only later, moves over at its first post without a second
# control message, and its message arrives as it was sent.  shiftgen -m
# write --reply, libshiftu on both hosts: the client writes, host 1's rail
# 0 is pulled 3 s in, and the client's QP fails over and tells the server,
# whose QP has posted nothing (it receives WRITEs only): it answers and
# stays on its default QP.  At the end the server answers the client's
# DONE with one SEND of its checksum, into the receive the client posted
# at the start and its library moved to the twin.  The server's library
# moves the QP over at that post, says nothing (its answer took the one
# control receive on the client's twin), and the SEND lands in the client's
# receive with the right checksum.  Before this was fixed (the spin model
# found it, model/shift.pml), the server's QP posted on its default QP,
# whose peer was drained, retried there until the transport gave up, then
# failed over and sent a second control message, which took the client's
# receive: "the reply's receive completed ... 0 bytes, with immediate
# data".  The control is the same run and pull without the library.
#
#     host 1 (shiftgen client: WRITEs)               host 2 (server: one SEND, at the end)
#     rxe0 ─ eth0 ══ rail 0 (down ~2.7 s from 3 s) ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────── eth1 ─ rxe1
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup
ARGS=(-m write -s 4096 -c 4 -q 16 -D 10 --reply)
# shiftgen connects within a second; the client cannot fail back while the
# server stays (a failback with receives on the twin is two-sided, and a
# QP still on its default QP answers it busy), so the pull waits for none
LU_PULL_AT=3 LU_PULL_FB_S=0

# the control: the same pull without the library; the reply comes on the
# repaired rail 0
lu_pull_plain stay_then_post "$GEN" "${ARGS[@]}"
lu_keep stay stay_then_post
lu_exited_ok plain
grep -q '^shiftgen: role=client reply ok' "$FT_TMP/plain.cli.out" ||
	lu_fail plain "no good reply without the library"

LU_DURING=lu_pull lu_pair stay 1 "$GEN" "${ARGS[@]}"
read -r s0 s1 < "$FT_TMP/stay.outage"
log "stay: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
lu_exited_ok stay
grep -q '^shiftgen: role=client reply ok' "$FT_TMP/stay.cli.out" ||
	lu_fail stay "the client got no good reply"
ft_expect "server result" "$(lu_gen result "$FT_TMP/stay.srv.out")" ok
ft_expect "server corrupt" "$(lu_gen corrupt "$FT_TMP/stay.srv.out")" 0
[ "$s1" -gt 100 ] || lu_fail stay "rail 1 carried only $s1 packets during the outage"
grep -q 'port down: failed over to qp [0-9]* on rxe1' "$FT_TMP/stay.cli.shiftu" ||
	lu_fail stay "the client did not fail over on its port going down"
grep -q 'the peer failed over; nothing posted here: answered, staying until this QP posts' \
	"$FT_TMP/stay.srv.shiftu" || lu_fail stay "the server did not answer and stay"
grep -q 'it posts, and the peer is on its twin: failed over to qp [0-9]* on rxe1' \
	"$FT_TMP/stay.srv.shiftu" || lu_fail stay "the server did not move over at its post"
lu_check_log stay cli "failovers=1" "twin_wcs>0"
lu_check_log stay srv "failovers=1"
log "stay: $(grep -o 'it posts, and the peer is on its twin: failed over.*' "$FT_TMP/stay.srv.shiftu")"
log "stay: $(grep '^shiftgen: role=server reply' "$FT_TMP/stay.srv.out")"
