#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the library takes no range of the application's 64-bit wr_id
# space for itself.  shiftgen --shift-ids posts every request, on both
# sides, under an id that starts with "SHIFT" in ASCII, as the library's
# own do, most of them exactly ids the library names for itself (a
# control receive's on a default QP, an SRQ table's, a drain's marker, a
# control message's, a bell's, and the ids it renames such requests to),
# its sends mostly unsignaled, and checks every id a completion brings
# back.  Without the library (the control) the run is clean, so shiftgen
# and its ids are right; with the library preloaded on both hosts, SEND
# traffic (receives counted as polled, one CQ for both queues),
# WRITE_WITH_IMM traffic, and WRITE_WITH_IMM polled from extended CQs
# (ibv_start_poll ... ibv_end_poll, read with the accessors) ride a pull of
# host 1's rail 0: both sides fail
# over and back, and no completion is lost, doubled, reordered or given
# back under another id, on the common path, on the twin and in the
# drains and replays in between.  (A library that took those ids for its
# own drops their completions or counts them as its own.)
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══════ rail 0: pulled 2 s in ═══════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup

pkts() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }

# pull TAG: host 1's rail 0 out from 2 s to 5 s, host 1's packets on rail
# 1 counted over 1.5 s of the outage; then the client ends its run
# (shiftgen's SIGUSR1)
pull()
{
	local a1 cli=$!
	sleep 2
	lab-link eth0 off
	sleep 1
	a1=$(pkts rxe1)
	sleep 1.5
	echo "$(($(pkts rxe1) - a1))" > "$FT_TMP/$1.outage"
	sleep 0.5
	lab-link eth0 on
	lu_backed "$1"
	sleep 1
	pkill -USR1 -P "$cli" shiftgen || true
}

# plain TAG MODE ARGS...: the control, without the library or a pull
plain()
{
	local tag=$1 mode=$2
	shift 2
	lu_pair "$tag" 0 "$GEN" -m "$mode" --shift-ids -D 3 "$@"
	lu_gen_clean "$tag"
	ft_expect "$tag client corrupt" "$(lu_gen corrupt "$FT_TMP/$tag.cli.out")" 0
	log "$tag: $(grep '^shiftgen: role=client' "$FT_TMP/$tag.cli.out")"
}

# ride TAG MODE ARGS...: MODE through a pull with the library on both
# hosts: both sides clean, every id given back as posted, both failed
# over and back, rail 1 carried the outage
ride()
{
	local tag=$1 mode=$2 side s1
	shift 2
	LU_DURING=pull lu_pair "$tag" 1 "$GEN" -m "$mode" --shift-ids -D 30 "$@"
	lu_gen_clean "$tag"
	ft_expect "$tag client corrupt" "$(lu_gen corrupt "$FT_TMP/$tag.cli.out")" 0
	for side in cli srv; do
		grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail over"
		grep -q 'failed back from rxe1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail back"
		lu_check_log "$tag" "$side" "failovers=1" "failbacks=1" "twin_wcs>0" "renamed>0"
	done
	read -r s1 < "$FT_TMP/$tag.outage"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	log "$tag: packets host 1 sent on rail 1 during the outage: $s1"
	log "$tag: $(grep '^shiftgen: role=client' "$FT_TMP/$tag.cli.out")"
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

plain send_plain send -s 4096 -q 8
ride send_ride send --one-cq
ride imm_ride write_imm
ride cqex_ride write_imm --cq-ex=poll
