#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: rsockets (librdmacm's sockets over RC QPs: RDMA WRITE with
# immediate for the data and the credits, much as NCCL moves its own) work
# the same under shiftu-run on both hosts: rstream with its data check
# (-T v) exits 0 on both ends with and without the library, and under the
# library it rides host 1's rail 0 pulled from 5 s to about 10 s, its
# traffic on rail 1 during the outage, every byte checked, and back on
# rail 0 before it ends (its QP failed back).  (Without the
# library rstream cannot ride a pull at all: it waits forever.)  Each run
# is watched (rs_watch): the longest time host 1 sent nothing and the
# requests Soft-RoCE sent again are logged, the runs without the library
# and without a pull being the control.
#
#     host 1 (rstream -s 10.0.0.2 -T v)               host 2 (rstream -b 10.0.0.2)
#     rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══════════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ─────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$LU_RUN" ] || skip "shiftu-run not built (make -C $SHIFT_TOP lib)"
lu_ride_setup rstream

# rs TAG PRE ARGS...: an rstream pair on port 7471 + n over rail 0 (host
# 2's 10.0.0.2), the server started through lu_peer_run's shell and
# waited for, the client here; PRE as lu_env's; LU_DURING as lu_pair's;
# the server ended after RS_SECS (90), the client after LU_CLI_SECS.
RS_PORT=7471
rs()
{
	local tag=$1 pre=$2 port=$RS_PORT
	shift 2
	RS_PORT=$((RS_PORT + 1))

	rm -f "$FT_TMP/$tag".*
	lu_srv_spawn "$tag" "$pre" "${RS_SECS:-90}" "rstream -b 10.0.0.2 -p $port -T v $*"
	lu_cm_listen "$port"
	lu_cli "$tag" "$pre" rstream -s 10.0.0.2 -p "$port" -T v "$@"
	lu_exited_ok "$tag"
	log "$tag: client: $(grep -v '^name' "$FT_TMP/$tag.cli.out" | tail -n 1)"
}

# rs_retries DEV: host 1's DEV's requests sent again (a timeout or a NAK
# of a lost packet), RNR NAKs it got, and requests it got out of sequence,
# as RETRY/RNR/OOS (Soft-RoCE's counters)
rs_retries()
{
	local c=/sys/class/infiniband/$1/ports/1/hw_counters r=- n=- o=-

	{ read -r r < "$c/completer_retry_err"; read -r n < "$c/rcvd_rnr_err"
	  read -r o < "$c/out_of_seq_request"; } 2> /dev/null || true
	echo "$r/$n/$o"
}

# rs_watch TAG: until host 1's rstream exits (150 s at most), a line of
# TAG.watch every half second: ms from the start, host 1's packets sent on
# rail 0 and rail 1, each rail's rs_retries, and each of the client's
# threads' TID:STATE:WCHAN (/proc), so that a stall shows where the client
# waited, and whether a packet was lost
rs_watch()
{
	local t0=$EPOCHREALTIME pid='' p0 p1 ms line st wc t i

	for i in $(seq 50); do
		pid=$(pgrep -n -x rstream) && break
		sleep 0.1
	done
	[ -n "$pid" ] || return 0
	while [ -d "/proc/$pid" ]; do
		ms=$(lu_ms "$t0")
		[ "$ms" -lt 150000 ] || break
		lu_pkts rxe0 p0
		lu_pkts rxe1 p1
		line="$ms $p0 $p1 $(rs_retries rxe0) $(rs_retries rxe1)"
		for t in /proc/"$pid"/task/*; do
			st='' wc=''
			{ read -r st < "$t/stat"; } 2> /dev/null || true
			st=${st##*) }
			{ read -r wc < "$t/wchan"; } 2> /dev/null || true
			line="$line ${t##*/}:${st%% *}:${wc:-0}"
		done
		echo "$line" >> "$FT_TMP/$1.watch"
		sleep 0.5
	done
}

# rs_watched TAG: a LU_DURING command: rs_watch in the background
rs_watched()
{
	rs_watch "$1" &
}

# rs_pull TAG: lu_pull, watched
rs_pull()
{
	rs_watched "$1"
	lu_pull "$1"
}

# rs_report TAG: from TAG.watch, the longest time host 1 sent nothing, and
# the requests each rail sent again over the run (every lost packet stops
# a QP until Soft-RoCE's retransmission timer, about 2 s in the lab: what
# rail 0 does with the library or without it, not a stall of its making)
rs_report()
{
	[ -s "$FT_TMP/$1.watch" ] || { log "$1: not watched"; return 0; }
	log "$1: $(awk 'NR > 1 && $2 + $3 == n { if ($1 - t > m) m = $1 - t }
		NR == 1 || $2 + $3 != n { t = $1; n = $2 + $3 }
		NR == 1 { split($4, a, "/"); split($5, b, "/") }
		END { split($4, c, "/"); split($5, d, "/")
		      printf "host 1 sent nothing for %d ms at most; requests sent again over %.1f s: rail 0 %s, rail 1 %s",
			     m, $1 / 1000, c[1] - a[1], d[1] - b[1] }' "$FT_TMP/$1.watch")"
}

# the unpulled runs: 200 transfers (500 took 14 s and 18 s in make check)
for pre in 0 run; do
	lu_keep "plain_$pre" rsockets
	LU_DURING=rs_watched rs "plain_$pre" "$pre" -S 65536 -C 200
	rs_report "plain_$pre"
done
lu_check_log plain_run cli "qps>=1"

LU_PULL_ON=1 LU_PULL_BY=link
lu_keep pull rsockets
# host 1's packets counted from the pull on, not from 0.7 s into it, and
# for 4 s, not 1.5: a packet lost on the twins stops them for about 2 s,
# as it does rail 0 (rs_report), and one lost in the first second of the
# outage left the count's 1.5 s without a packet (1 make check in 8); so
# did one lost as the client replayed, even counted from the pull (11
# packets, rail 1's retries up by 3, in a make check of 2026-11-29); each
# lost packet costs the run that much: 120 s for the client, 150 s for the
# server.  1200 transfers take some 40 s in the lab (34 ms each with the
# pull), past the repair (about 10 s in) and the failback that follows:
# 2000 took 67 s, of make check's 25 minutes.
RS_SECS=150 LU_CLI_SECS=120 LU_PULL_COUNT_AT=0 LU_PULL_COUNT_S=4 LU_DURING=rs_pull \
	rs pull run -S 65536 -C 1200
read -r s0 s1 < "$FT_TMP/pull.outage"
log "pull: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
rs_report pull
grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/pull.cli.shiftu" ||
	lu_fail pull "the client's QP did not fail over"
lu_check_log pull cli "failovers>=1" "failbacks>=1"
[ "$s1" -gt 100 ] || lu_fail pull "rail 1 carried only $s1 packets during the outage"
