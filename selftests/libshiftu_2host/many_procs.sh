#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: eight processes (MANY_PROCS_N, 8 by default; make check runs
# 4) started together, each with its own QP and libshiftu on both hosts,
# all connect and all ride one pull of host 1's rail 0 (1 s after all
# their QPs are protected, for about 3 s; 5 s after the start without the
# library), MANY_ROUNDS (default 5) rounds in a row, each run ended once
# all are back (lu_end): every ib_write_bw pair exits 0 with its result
# line, its QP failed over and back, its library logged no warning (none
# left its QP unprotected: eight pollers on one guest CPU keep each other
# waiting inside their verbs, which a move must wait out, not take for a
# stuck thread), and rail 1 carried the traffic during the outage.  The
# control round, the same processes without the library, shows them all
# connecting and rail 1 carrying nothing.
#
#     host 1: 8 x ib_write_bw client ─ rxe0 ══ rail 0 (down ~3 s) ═══ rxe0 ─ 8 x server: host 2
#             8 twins ─ rxe1 ── rail 1 ─────────────────────────────── rxe1 ─ 8 twins
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ib_write_bw
lu_rounds
N=${MANY_PROCS_N:-8}
[[ $N =~ ^[1-9][0-9]*$ ]] || fail "MANY_PROCS_N=$N: a count of processes"
# 40 s bounds a run: each ends once the N clients' QPs are all back
# (lu_end), or without the library 4.5 s after the repair.  The QPs are
# protected 5 to 8 s in, the rail is down from 1 s after that for about 3
# s, and each client's failback is one-sided: after its probe its fence
# waits for the 128 writes in flight on the twin, at about 0.85 MB/s a
# process with eight on the guest's CPU: of 64 KiB (perftest's default)
# 5 to 11 s, of 16 KiB (16 packets each, as many outstanding, as many
# replayed) 1 to 2 s.  -f 2: perftest's margin, which an ended run waits
# out before its result (by default a quarter of -D).
SECS=40
SIZE=16384
LU_PULL_ON=1 LU_PULL_BY=link

# pull TAG PRE: lu_pull of round TAG, in a subshell of its own, urgent
# (lu_urgent); with the library (PRE 1), once the N clients' QPs are all
# protected, without it once they are all in RTS (rdma's view of host 1's
# rxe0), 30 s at most either way.  Eight processes set up on the guest's
# one CPU can take longer than lu_pull's 5 s (in one round a client had
# not reached RTR then; in a make check's control a client's move to RTR
# met the rail down and failed, "Failed to modify QP to RTR": it needs
# the peer's MAC, library or not).  Then the N clients' runs end (lu_end;
# round's pids), with the library once all N failed back (40 s at most).
pull()
(
	local t0=$EPOCHREALTIME n=0 i tags=()

	lu_urgent
	for ((i = 1; i <= N; i++)); do
		tags+=("${1}_$i")
	done
	if [ "$2" != 1 ]; then
		while :; do
			n=$(rdma res show qp link rxe0/1 2> /dev/null |
			    grep -c 'type RC state RTS .*comm ib_write_bw' || true)
			if [ "$n" -ge "$N" ] || [ "$(lu_ms "$t0")" -ge 30000 ]; then
				break
			fi
			lab_nap 0.1
		done
		log "$1: $n of $N clients' QPs in RTS $(lu_ms "$t0") ms after they started"
		LU_PULL_AT=1 lu_pull "${1}_1"
	else
		while [ "$n" -lt "$N" ] && [ "$(lu_ms "$t0")" -lt 30000 ]; do
			lab_nap 0.1
			n=0
			for ((i = 1; i <= N; i++)); do
				grep -q 'protected by qp' "$FT_TMP/${1}_$i.cli.shiftu" 2> /dev/null &&
					n=$((n + 1))
			done
		done
		log "$1: $n of $N clients' QPs protected $(lu_ms "$t0") ms after they started"
		lu_lib_urgent
		LU_PULL_AT=1 LU_PULL_AFTER=0 lu_pull "${1}_1"
		lu_wait_backs "$N" 40 "${tags[@]}"
		log "$1: $(lu_backs "${tags[@]}") of $N clients' QPs back $(lu_ms "$t0") ms after they started"
	fi
	lu_end "$(IFS=,; echo "${pids[*]}")" ib_write_bw
)

# round TAG PRE: N pairs, preloaded or not (PRE, lu_env), through one pull;
# their files are TAG_1 ... TAG_N, the pull's TAG_1.
round()
{
	local r=$1 pre=$2 i tag ports=() pids=() srvs=() tags=() rc all='' t0=$EPOCHREALTIME

	for ((i = 1; i <= N; i++)); do
		tag=${r}_$i
		lu_keep "$tag" many_procs
		rm -f "$FT_TMP/$tag".*
		# the servers together, not each waiting for the last to listen
		lu_srv_spawn "$tag" "$pre" 90 "ib_write_bw -d rxe0 -x $LU_RGIDX -p $LU_PORT -F -s $SIZE -D $SECS -f 2"
		ports+=("$LU_PORT")
		srvs+=("$LU_SRV_STARTED")
		all+=" $LU_PORT"
		LU_PORT=$((LU_PORT + 1))
	done
	lu_peer_run "(for i in \$(seq 400); do n=0; for p in$all; do ss -ltn | grep -q \":\$p \" && n=\$((n + 1)); done; [ \$n = $N ] && exit 0; sleep 0.05; done; exit 1)" ||
		fail "$r: the $N ib_write_bw servers on host 2 did not all listen"
	for ((i = 1; i <= N; i++)); do
		tag=${r}_$i
		# shellcheck disable=SC2046 # lu_env's words are separate arguments
		timeout 70 $(lu_env "$pre" "$FT_TMP/$tag.cli.shiftu") ib_write_bw -d rxe0 -x "$LU_GIDX" \
			-p "${ports[$((i - 1))]}" -F -s "$SIZE" -D "$SECS" -f 2 "$LU_TCP" > "$FT_TMP/$tag.cli.out" 2>&1 &
		pids+=($!)
	done
	log "$r: the $N servers listened $(lu_ms "$t0") ms into the round"
	pull "$r" "$pre"
	log "$r: the pull done and the runs ended $(lu_ms "$t0") ms into the round"
	tags=()
	for ((i = 1; i <= N; i++)); do
		tag=${r}_$i rc=0
		wait "${pids[$((i - 1))]}" || rc=$?
		echo "$rc" > "$FT_TMP/$tag.cli.rc"
		tags+=("$tag")
	done
	lu_srv_collect_all "$pre" "${tags[@]}"
	for ((i = 1; i <= N; i++)); do
		if [ "$(cat "$FT_TMP/${r}_$i.srv.rc")" = none ]; then
			LU_SRV_PID=${srvs[$((i - 1))]}
			lu_kill_server
		fi
	done
	log "$r: the $N pairs collected $(lu_ms "$t0") ms into the round"
}

# every pair connected (a result line) and exited 0
connected()
{
	local i tag

	for ((i = 1; i <= N; i++)); do
		tag=${1}_$i
		lu_exited_ok "$tag"
		[ -n "$(awk -v s="$SIZE" '$1 == s && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
			lu_fail "$tag" "no result line from the client"
	done
}

# the control: without the library all eight connect (each client prints
# its peer's address once the out-of-band exchange is done), and nothing
# moves to rail 1: they stall through the outage
round plain 0
read -r s0 s1 < "$FT_TMP/plain_1.outage"
log "plain: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
for ((i = 1; i <= N; i++)); do
	grep -q 'remote address:' "$FT_TMP/plain_$i.cli.out" ||
		lu_fail "plain_$i" "the client did not connect without the library"
	log "plain_$i: exit $(cat "$FT_TMP/plain_$i.cli.rc") and $(cat "$FT_TMP/plain_$i.srv.rc")"
done
[ "$s1" -lt 100 ] || fail "plain: rail 1 carried $s1 packets without the library"
log "plain: $N of $N pairs connected without the library, rail 1 idle during the outage"

for ((r = 1; r <= ROUNDS; r++)); do
	t1=$EPOCHREALTIME
	round "p$r" 1
	read -r s0 s1 < "$FT_TMP/p${r}_1.outage"
	log "round $r: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
	connected "p$r"
	for ((i = 1; i <= N; i++)); do
		lu_check_log "p${r}_$i" cli "qps=1" "failovers=1" "failbacks=1"
		lu_check_log "p${r}_$i" srv "qps=1"
	done
	[ "$s1" -gt 100 ] || fail "round $r: rail 1 carried only $s1 packets during the outage"
	log "round $r: $N of $N pairs connected, rode the pull, failed over and back, exited 0 (the round and its checks took $(lu_ms "$t1") ms)"
done
