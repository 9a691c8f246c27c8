#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: QPs whose CQs come from ibv_create_cq_ex are protected like QPs on
# ordinary CQs.  shiftgen's checked two-sided traffic (--cq-ex: extended
# CQs with IBV_WC_STANDARD_FLAGS) rides a pull of rail 0 with libshiftu
# preloaded on both hosts: WRITE_WITH_IMM polled with ibv_start_poll,
# ibv_next_poll and ibv_end_poll, every field read with the ibv_wc_read_*
# accessors (host 1's cable pulled), in sessions that are the provider's
# own until the pull; SEND with one CQ for both queues in sessions that stay
# open, so that the failover is left to the session's end (host 1's); SEND
# with one CQ for both queues, polled with ibv_poll_cq through
# ibv_cq_ex_to_cq (host 2's).  None lost,
# duplicated, reordered or corrupt, no error, no completion of a QP that is
# not the application's (so none of the library's, and every twin
# completion renamed); both sides fail over and back, rail 1 carries the
# traffic during the outage and rail 0 after.  Without the library (the
# control) the same traffic stalls for the outage: rail 1 carries nothing.
# (Before the library served extended CQs, their QPs had no twin: no
# failover, the same stall.)
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══════ rail 0: pulled 2 s in ═══════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup

# pull TAG: rail 0 of host $PULL out from 2 s to 5 s; host 1's packets per
# rail counted over 1.5 s of the outage, and over 1.5 s from half a second
# after the client's library failed back (20 s at most; 2 s after the
# repair without the library); then the client (the job lu_cli started
# last) ends its run (shiftgen's SIGUSR1: -D 30 only bounds it).
pull()
{
	local tag=$1 cli=$! a0 a1 b0 b1 t=0

	lab_nap 2
	lu_cable "$PULL" link off
	lab_nap 1
	lu_pkts rxe0 a0; lu_pkts rxe1 a1
	lab_nap 1.5
	lu_pkts rxe0 b0; lu_pkts rxe1 b1
	echo "$((b0 - a0)) $((b1 - a1))" > "$FT_TMP/$tag.outage"
	lab_nap 0.5
	lu_cable "$PULL" link on
	if [ -e "$FT_TMP/$tag.cli.shiftu" ]; then
		while [ "$t" -lt 200 ] && ! grep -q 'failed back from' "$FT_TMP/$tag.cli.shiftu"; do
			lab_nap 0.1
			t=$((t + 1))
		done
		lab_nap 0.5
	else
		lab_nap 2
	fi
	lu_pkts rxe0 a0; lu_pkts rxe1 a1
	lab_nap 1.5
	lu_pkts rxe0 b0; lu_pkts rxe1 b1
	echo "$((b0 - a0)) $((b1 - a1))" > "$FT_TMP/$tag.after"
	pkill -USR1 -P "$cli" shiftgen || true
}
LU_DURING=pull

# ride TAG PRE ARGS...: shiftgen ARGS through pull on host $PULL's side,
# with the library (PRE 1) or without (0); both sides end clean
ride()
{
	local tag=$1 pre=$2
	shift 2
	lu_keep "$tag" cqex
	lu_pair "$tag" "$pre" "$GEN" -D 30 "$@"
	lu_gen_clean "$tag"
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

# rode TAG: both sides' QPs failed over and back once, rail 1 carried
# host 1's packets during the outage and rail 0 after
rode()
{
	local tag=$1 side
	for side in cli srv; do
		grep -q "qp [0-9]* on rxe0: protected by qp" "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP was not protected"
		grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail over"
		grep -q 'failed back from rxe1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail back"
		lu_check_log "$tag" "$side" "failovers=1" "failbacks=1" "twin_wcs>0"
		log "$tag $side: $(grep -o 'failed over to qp.*' "$FT_TMP/$tag.$side.shiftu")"
	done
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
	[ "$r1" -lt 100 ] || lu_fail "$tag" "rail 1 still carried $r1 packets after the repair"
}

PULL=1
ride plain 0 -m write_imm --cq-ex
[ "$s1" -lt 100 ] || lu_fail plain "rail 1 carried $s1 packets without the library"
[ "$r0" -gt 100 ] || lu_fail plain "rail 0 carried only $r0 packets after the repair"

PULL=1
ride poll_cli 1 -m write_imm --cq-ex=poll
rode poll_cli

# the client's sessions take one completion each and stay open 100 ms
# more, one CQ for both queues (each receive counted as the session takes
# it); the client posts one message between two sessions, keeps 16 in
# flight and signals each (--signal-all), so that its CQ never runs dry:
# the client is in a session nearly all the time, and the port's loss is
# seen while one is open, its failover left to the session's end.  16 KiB
# messages, 16 packets each at the rails' MTU, so that the outage still
# carries hundreds at ten messages a second.  The server's sessions end at
# once, so that its credits never keep the client waiting outside one.
# Not always: a session may end between the loss and the library's look,
# and the next one starts served, with nothing to leave.  Sessions that
# took up to 16 completions ran the CQ dry every few sessions, and the
# client waited outside one for the next completion (with 20 ms sessions
# on both sides, 16 in flight and one send in 16 signaled: a failover
# with no direct session open in 1 ride of 6 locally, in 3 of 3 in CI;
# with 100 ms sessions, 64 in flight and one in 16 signaled, in 1 of 20
# alone, and in the first ride of make check).  Every ride must be
# intact, and one of three at least must leave its failover to a session.
PULL=1
for try in 1 2 3; do
	LU_CLI_ARGS=--cq-ex=linger ride "linger_cli$try" 1 \
		-m send -s 16384 -q 16 --signal-all --one-cq --cq-ex
	rode "linger_cli$try"
	grep -q 'during a polling session of its extended CQ: failing over once it ends' \
		"$FT_TMP/linger_cli$try.cli.shiftu" && break
	log "linger_cli$try: no polling session was open when the client failed over: again"
	[ "$try" -lt 3 ] ||
		lu_fail linger_cli "cli: in 3 rides, no failover was left to an open polling session"
done

PULL=2
ride ibv_srv 1 -m send --one-cq --cq-ex=ibv
rode ibv_srv
