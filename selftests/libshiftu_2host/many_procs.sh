#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: eight processes started together, each with its own QP and
# libshiftu on both hosts, all connect and all ride one pull of host 1's
# rail 0 (5 s to 10 s), MANY_ROUNDS times in a row (default 5): every
# ib_write_bw pair exits 0 with its result line and its QP failed over and
# back.  (Without the library the same eight start 8 of 8.)
#
#     host 1: 8 x ib_write_bw client ─ rxe0 ══ rail 0 (down 5-10 s) ══ rxe0 ─ 8 x server: host 2
#             8 twins ─ rxe1 ── rail 1 ─────────────────────────────── rxe1 ─ 8 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_write_bw
ROUNDS=${MANY_ROUNDS:-5}
N=8
LU_WARN_OK=': warn: store redis://[^ ]*: [A-Z]+: Connection timed out$'
LU_PULL_ON=1 LU_PULL_BY=link

for ((r = 1; r <= ROUNDS; r++)); do
	tags=()
	for ((i = 1; i <= N; i++)); do
		tags+=("p${r}_$i")
		lu_keep "p${r}_$i" many_procs
	done
	# the servers, one by one (each listens before the next), then the
	# clients all at once
	ports=()
	for tag in "${tags[@]}"; do
		rm -f "$FT_TMP/$tag".*
		lu_srv_start "$tag" 1 90 ib_write_bw "$LU_PORT" -F -s 65536 -D 17
		ports+=("$LU_PORT:$LU_SRV_STARTED")
		LU_PORT=$((LU_PORT + 1))
	done
	pids=()
	for i in "${!tags[@]}"; do
		tag=${tags[$i]}
		# shellcheck disable=SC2046 # lu_env's words are separate arguments
		timeout 60 $(lu_env 1 "$FT_TMP/$tag.cli.shiftu") ib_write_bw -d rxe0 -x "$LU_GIDX" \
			-p "${ports[$i]%:*}" -F -s 65536 -D 17 "$LU_TCP" > "$FT_TMP/$tag.cli.out" 2>&1 &
		pids+=($!)
	done
	lu_pull "${tags[0]}"
	for i in "${!tags[@]}"; do
		rc=0
		wait "${pids[$i]}" || rc=$?
		echo "$rc" > "$FT_TMP/${tags[$i]}.cli.rc"
		LU_SRV_PID=${ports[$i]#*:}
		lu_srv_collect "${tags[$i]}" 1 && LU_SRV_PID= || lu_kill_server
	done
	read -r s0 s1 < "$FT_TMP/${tags[0]}.outage"
	log "round $r: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
	for tag in "${tags[@]}"; do
		lu_exited_ok "$tag"
		[ -n "$(awk '$1 == 65536 && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
			lu_fail "$tag" "no result line from the client"
		lu_check_log "$tag" cli "qps=1" "failovers=1" "failbacks=1"
		lu_check_log "$tag" srv "qps=1"
	done
	[ "$s1" -gt 100 ] || fail "round $r: rail 1 carried only $s1 packets during the outage"
	log "round $r: $N of $N pairs connected, rode the pull, failed over and back, exited 0"
done
