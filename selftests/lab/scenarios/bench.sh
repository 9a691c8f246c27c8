#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench: what libshiftu costs an unmodified verbs program, and how fast it
# fails over, measured in one two-host lab run so that plain and preloaded
# runs see the same conditions (`make bench`, or `lab.sh scenario bench
# two`).  Runs on host 1; host 2 serves with lab-peer.  Writes
# $LAB_OUT/report.txt (one line per figure: value, unit, target, met or
# not, the command) and the raw outputs under $LAB_OUT/bench/.  A figure
# that was not measured is printed as "not measured: <reason>", never
# guessed.  Under TCG the figures are for ratios, not absolute claims.
#
#     host 1 (clients)                                  host 2 (servers)
#     rxe0 ─ eth0 10.0.0.1 ══ rail 0 (pulled in d) ══ eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ── rail 1 (the twins) ──── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ── mgmt ────────────────── eth2 10.0.2.2
#     redis-server 10.0.2.1 (the library's store on both hosts)
#
# Steps (BENCH_STEPS="lat bw ..." runs only those): a. ib_write_lat, b.
# ib_write_bw, plain and preloaded alternating BENCH_ROUNDS times; c.
# callgrind of preloaded ib_write_bw clients (with and without
# --use_old_post_send), of an ib_send_bw -b client (receives)
# and of a shiftgen --wr-api client (the extended send API, which perftest
# does not use on Soft-RoCE; also plain, for a batch's cost against the
# provider's own builders) and of a shiftgen --cq-ex=poll client (an
# extended CQ polled with ibv_start_poll, ibv_next_poll and ibv_end_poll,
# as UCX polls), each at two iteration counts (instructions
# per data verb: the slope), and strace -c
# of plain and preloaded clients at two iteration counts (syscalls per
# iteration); d. failover time by
# cause: health page (host 1's rail 0 pulled) and error completion (a
# silent drop on host 1's rail 0, as a dead switch port makes it, so the
# page sees nothing; shiftgen with NCCL's transport timeout, 20 (the
# default of current releases, 4.3 s an attempt; older ones used 18, a
# quarter of that), and retry count 6, one short of NCCL's 7, which
# Soft-RoCE takes as "retry forever");
# e. bandwidth on rail 1 during the outage against rail 0 before it;
# f. how soon after the last of a 64-QP process's QPs is ready its twins
# all are (ib_write_bw -q 64; SHIFT reports 35 ms per QP for its shadow
# verbs on real NICs).

set -e
# shellcheck source-path=SCRIPTDIR source=../../libshiftu_2host/lib.sh
. "$SHIFT_TOP/selftests/libshiftu_2host/lib.sh"

ROUNDS=${BENCH_ROUNDS:-3}
LAT_N=${BENCH_LAT_ITERS:-1000}
BW_SECS=${BENCH_BW_SECS:-5}
CG_N=${BENCH_CG_ITERS:-2000}
ST_N1=${BENCH_STRACE_ITERS1:-1000}
ST_N2=${BENCH_STRACE_ITERS2:-2000}
TWIN_QPS=${BENCH_TWIN_QPS:-64}
SHIFTGEN=${SHIFTGEN:-$SHIFT_TOP/selftests/libshiftu_2host/shiftgen}
OUT=${LAB_OUT:-/tmp}/bench
RES=$OUT/results
REPORT=${LAB_OUT:-/tmp}/report.txt
IB=/sys/class/infiniband
LU_PORT=18700

mkdir -p "$OUT"
: > "$RES"

# ---- results: key=value lines in $RES, written by steps in subshells ----

put() { echo "$1=$2" >> "$RES"; }
get() { sed -n "s/^$1=//p" "$RES" | tail -n 1; }

# median of the numbers on stdin; nothing if there are none
median()
{
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---- a client here, its server on host 2, over rail 0 ----

# bp TAG PRE TIMEOUT PROG ARGS...: PROG's server on host 2 and its client
# here, over rail 0, the library preloaded on both (PRE=1) or neither;
# BP_SRV_PRE overrides the server's.  The client's command is
# ${BP_OUTER[@]} (strace) lu_env ${BP_INNER[@]} (valgrind) PROG ...;
# BP_DURING TAG runs while the client does.  Leaves $OUT/TAG.cli.out,
# .cli.rc, .srv.out, .cmd and the libshiftu logs .cli.shiftu, .srv.shiftu.
# Returns the client's exit status.
bp()
{
	local tag=$1 pre=$2 tmo=$3 prog=$4 port=$LU_PORT rc=0 spid
	local spre=${BP_SRV_PRE:-$2} rrc=$LU_RDIR/$1.srv.rc scmd
	local -a cmd envw
	shift 4
	LU_PORT=$((LU_PORT + 1))

	rm -f "$OUT/$tag".*
	scmd="$(lu_env "$spre" "$LU_RDIR/$tag.srv.shiftu") $prog -d rxe0 -x $LU_RGIDX -p $port $*"
	spid=$(lab-peer --bg "timeout --foreground $((tmo + 30)) $scmd > $LU_RDIR/$tag.srv.out 2>&1; echo \$? > $rrc") ||
		fail "$tag: could not start the server on host 2"
	if ! peer_listening "$port"; then
		lab-peer "kill -- -$spid; cat $LU_RDIR/$tag.srv.out" > "$OUT/$tag.srv.out" 2>&1
		fail "$tag: the server did not listen: $(tail -n 1 "$OUT/$tag.srv.out")"
	fi
	read -ra envw <<< "$(lu_env "$pre" "$OUT/$tag.cli.shiftu")"
	cmd=(timeout "$tmo" "${BP_OUTER[@]}" "${envw[@]}" "${BP_INNER[@]}" "$prog" -d rxe0 -x "$LU_GIDX" -p "$port" "$@" 10.0.0.2)
	printf 'client (host 1): %s; server (host 2): %s\n' "${cmd[*]}" "$scmd" > "$OUT/$tag.cmd"
	"${cmd[@]}" > "$OUT/$tag.cli.out" 2>&1 &
	BP_CLI=$!
	[ -z "${BP_DURING:-}" ] || $BP_DURING "$tag"
	wait "$BP_CLI" || rc=$?
	echo "$rc" > "$OUT/$tag.cli.rc"
	lab-peer "for i in \$(seq 400); do [ -s $rrc ] && exit 0; sleep 0.05; done;
		  kill -- -$spid" > /dev/null 2>&1 || true
	lab-peer "cat $LU_RDIR/$tag.srv.out" > "$OUT/$tag.srv.out" 2>&1 || true
	if [ "$spre" = 1 ]; then
		lab-peer "cat $LU_RDIR/$tag.srv.shiftu" > "$OUT/$tag.srv.shiftu" 2> /dev/null || true
	fi
	return "$rc"
}

# check_preloaded TAG: the client's library interposed rxe0 and exited once.
check_preloaded()
{
	grep -q 'context rxe0: interposed' "$OUT/$1.cli.shiftu" 2> /dev/null ||
		fail "$1: the library did not interpose rxe0 in the client"
	[ -n "$(lu_exit_lines "$OUT/$1.cli.shiftu")" ] || fail "$1: no exit line from the client's library"
}

# ---- a, b: latency and bandwidth, plain and preloaded alternating ----

step_lat()
{
	local r pre tag v
	for r in $(seq "$ROUNDS"); do
		for pre in 0 1; do
			tag=lat.$pre.$r
			bp "$tag" "$pre" 120 ib_write_lat -n "$LAT_N" || fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
			v=$(lu_result "$OUT/$tag.cli.out" 2 "$LAT_N" | awk '{ print $5 }')
			[ -n "$v" ] || fail "$tag: no result line"
			[ "$pre" = 0 ] || check_preloaded "$tag"
			put "lat.$pre.$r" "$v"
			log "$tag: t_typical $v us"
		done
	done
	put lat.cmd.0 "$(cat "$OUT/lat.0.1.cmd")"
	put lat.cmd.1 "$(cat "$OUT/lat.1.1.cmd")"
}

step_bw()
{
	local r pre tag v
	for r in $(seq "$ROUNDS"); do
		for pre in 0 1; do
			tag=bw.$pre.$r
			bp "$tag" "$pre" 120 ib_write_bw -s 65536 -D "$BW_SECS" -F ||
				fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
			v=$(awk '$1 == 65536 && NF >= 5 { print $4; exit }' "$OUT/$tag.cli.out")
			[ -n "$v" ] || fail "$tag: no result line"
			[ "$pre" = 0 ] || check_preloaded "$tag"
			put "bw.$pre.$r" "$v"
			log "$tag: BW average $v MB/s"
		done
	done
	put bw.cmd.0 "$(cat "$OUT/bw.0.1.cmd")"
	put bw.cmd.1 "$(cat "$OUT/bw.1.1.cmd")"
}

# ---- c: instructions per data verb (callgrind), syscalls (strace) ----

# The data verbs measured: the library's entry points, and the extended
# send API's builders it puts in the provider's place when a batch cannot
# be direct (wrapi.c; a direct batch runs the provider's own).
CG_FNS_LIB=shiftu_post_send,shiftu_post_recv,shiftu_poll_cq,shiftu_wr_start,shiftu_wr_complete
CG_FNS_LIB=$CG_FNS_LIB,wr_rdma_write,wr_rdma_write_imm,wr_send,wr_set_sge_list,wr_set_inline_data
CG_FNS_LIB=$CG_FNS_LIB,cqx_start_poll,cqx_next_poll,cqx_end_poll,shiftu_post_srq_recv
CG_FNS=$CG_FNS_LIB
# The client's arguments besides ARGS (@N@: the iterations): perftest's
# by default, shiftgen's for the extended send API (perftest posts with
# ibv_post_send on Soft-RoCE: "ibv_wr* API : OFF").
CG_ARGS=(-s 4096 -n @N@ -F)

# Whether the client is preloaded, and the object whose functions CG_FNS
# are (the provider's, for a plain client's).
CG_PRE=1 CG_OBJ=libshiftu

# cg_run MODE N PROG ARGS...: a PROG client of N iterations under
# callgrind against a plain server; leaves $OUT/cg.MODE.N.cost, one line
# per data verb called (bench/cg-cost.awk).
cg_run()
{
	local mode=$1 n=$2 prog=$3 tag=cg.$1.$2
	shift 3
	BP_SRV_PRE=0 BP_INNER=(valgrind --tool=callgrind "--callgrind-out-file=$OUT/$tag.out")
	bp "$tag" "$CG_PRE" 900 "$prog" "${CG_ARGS[@]//@N@/$n}" "$@" ||
		fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
	BP_SRV_PRE='' BP_INNER=()
	[ "$CG_PRE" = 0 ] || check_preloaded "$tag"
	grep -qE "^c?ob=.*$CG_OBJ" "$OUT/$tag.out" || fail "$tag: $CG_OBJ is not in the callgrind profile"
	awk -v obj="$CG_OBJ" -v fns="$CG_FNS" \
	    -f "$SHIFT_TOP/bench/cg-cost.awk" "$OUT/$tag.out" > "$OUT/$tag.cost"
	cat "$OUT/$tag.cost"
}

# cg_batch OUT: shiftgen's post_wr_api() in the callgrind output OUT, one
# batch of the extended send API from ibv_wr_start to ibv_wr_complete:
# its inclusive cost (itself and all it calls, in the library or the
# provider, the provider's post included) and its calls.
cg_batch()
{
	awk -v obj=shiftgen -v fns=post_wr_api -f "$SHIFT_TOP/bench/cg-cost.awk" "$1" |
		awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		     END { print v["self"] + v["internal"] + v["external"], v["calls"] + 0 }'
}

# cg_mode MODE PROG ARGS...: MODE's client run for CG_N and for 2 CG_N
# iterations; a verb's cost is the slope between them, (added2 - added1) /
# (calls2 - calls1), so that what a process pays once (its first poll
# reads the health page's rows, say) is not spread over a few calls.  A
# verb called as often in both runs has no slope: its .why says so.
cg_mode()
{
	local mode=$1 n1=$CG_N n2=$((2 * CG_N)) f v rest
	shift
	cg_run "$mode" "$n1" "$@"
	cg_run "$mode" "$n2" "$@"
	# FN calls=N self=S internal=I ...: added = S + I
	awk 'function kv(k,    i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2) + 0 }
	     FNR == NR { c1[$1] = kv("calls"); a1[$1] = kv("self") + kv("internal"); next }
	     ($1 in c1) {
		c2 = kv("calls"); a2 = kv("self") + kv("internal")
		printf "%s %s calls=%d/%d added=%d/%d\n", $1,
		       (c2 > c1[$1] ? sprintf("%.1f", (a2 - a1[$1]) / (c2 - c1[$1])) : "-"),
		       c1[$1], c2, a1[$1], a2
	     }' "$OUT/cg.$mode.$n1.cost" "$OUT/cg.$mode.$n2.cost" > "$OUT/cg.$mode.slope"
	while read -r f v rest; do
		if [ "$v" = - ]; then
			put "cg.$mode.$f.why" "no slope: its calls did not grow from -n $n1 to -n $n2 ($rest)"
			continue
		fi
		put "cg.$mode.$f" "$v"
		put "cg.$mode.$f.detail" "-n $n1/$n2: $rest"
	done < "$OUT/cg.$mode.slope"
	# poll_cq's calls and what they cost, and the completions they took
	# (the library's count of what the calls returned on their common
	# path, in its exit line): a call's fixed cost and a completion's
	# apart (report())
	awk '$1 == "shiftu_poll_cq" { split($3, c, "[=/]"); split($4, a, "[=/]")
				     print c[2], c[3], a[2], a[3] }' "$OUT/cg.$mode.slope" |
		while read -r c1 c2 a1 a2; do
			put "cg.$mode.poll" "$c1 $c2 $a1 $a2 $(lu_stat "$OUT/cg.$mode.$n1.cli.shiftu" poll_wcs) $(lu_stat "$OUT/cg.$mode.$n2.cli.shiftu" poll_wcs)"
		done
	put "cg.$mode.exit" "$(lu_exit_lines "$OUT/cg.$mode.$n2.cli.shiftu" | sed 's/^[^:]*: info: exit: //')"
	put "cg.$mode.cmd" "$(cat "$OUT/cg.$mode.$n2.cmd"); the same with -n $n1; awk -v obj=libshiftu -f bench/cg-cost.awk on each, slope"
}

step_cg()
{
	command -v valgrind > /dev/null || skip "valgrind is not installed (apt-get install -y valgrind on the host)"
	cg_mode old ib_write_bw --use_old_post_send
	# a client that polls for its one send's completion after each: most
	# of its polls take nothing (a call's fixed cost, with recv below)
	CG_ARGS=(-s 2 -n @N@ -F)
	cg_mode lat ib_write_lat
	CG_ARGS=(-s 4096 -n @N@ -F)
	cg_mode ex ib_write_bw
	# both ways: the client posts receives and polls their completions
	cg_mode recv ib_send_bw -b --use_old_post_send
	# one WRITE a batch: ibv_wr_start, ibv_wr_rdma_write, ibv_wr_set_sge_list,
	# ibv_wr_complete
	[ -x "$SHIFTGEN" ] || skip "shiftgen missing ($SHIFTGEN)"
	CG_ARGS=(-m write -c 1 -s 4096 -n @N@ --wr-api)
	cg_mode wr "$SHIFTGEN"
	# what the library adds to a batch, its builders or the provider's
	# (which are not in the stripped provider's symbols): a whole batch,
	# as the program's post_wr_api() makes it, preloaded less plain, per
	# batch (slope)
	CG_PRE=0 CG_OBJ=shiftgen CG_FNS=post_wr_api
	cg_run wrplain "$CG_N" "$SHIFTGEN"
	cg_run wrplain $((2 * CG_N)) "$SHIFTGEN"
	CG_PRE=1 CG_OBJ=libshiftu CG_FNS=$CG_FNS_LIB
	# an extended CQ's poll: the send CQ's completions, one WRITE each
	CG_ARGS=(-m write -c 1 -s 4096 -n @N@ --cq-ex=poll --signal-all)
	cg_mode cqex "$SHIFTGEN"
	CG_ARGS=(-s 4096 -n @N@ -F)
	local p1 p2 q1 q2 pc1 pc2 qc1 qc2
	read -r p1 pc1 < <(cg_batch "$OUT/cg.wr.$CG_N.out")
	read -r p2 pc2 < <(cg_batch "$OUT/cg.wr.$((2 * CG_N)).out")
	read -r q1 qc1 < <(cg_batch "$OUT/cg.wrplain.$CG_N.out")
	read -r q2 qc2 < <(cg_batch "$OUT/cg.wrplain.$((2 * CG_N)).out")
	if [ "$pc2" -gt "$pc1" ] && [ "$qc2" -gt "$qc1" ]; then
		put cg.wr.batch "$(awk -v a="$(((p2 - p1) / (pc2 - pc1)))" -v b="$(((q2 - q1) / (qc2 - qc1)))" 'BEGIN { print a - b }')"
		put cg.wr.batch.detail "preloaded $(((p2 - p1) / (pc2 - pc1))) a batch (batches $pc1/$pc2, instructions $p1/$p2), plain $(((q2 - q1) / (qc2 - qc1))) (batches $qc1/$qc2, instructions $q1/$q2)"
	else
		put cg.wr.batch.why "no slope: batches $pc1/$pc2 preloaded, $qc1/$qc2 plain"
	fi
	put cg.wr.batch.cmd "$(cat "$OUT/cg.wrplain.$((2 * CG_N)).cmd"), and the wr run; awk -v obj=shiftgen -v fns=post_wr_api -f bench/cg-cost.awk on each"
	# the provider's doorbell is a write(2), whose glibc wrapper takes
	# its longer, multi-threaded path in a process with the library's
	# threads: part of the inclusive difference, not of the library's code
	local w0 w1
	w0=$(awk -v obj=libc -v fns=write -f "$SHIFT_TOP/bench/cg-cost.awk" "$OUT/cg.wrplain.$((2 * CG_N)).out" |
	     sed -n 's/.*added_per_call=//p')
	w1=$(awk -v obj=libc -v fns=write -f "$SHIFT_TOP/bench/cg-cost.awk" "$OUT/cg.wr.$((2 * CG_N)).out" |
	     sed -n 's/.*added_per_call=//p')
	put cg.wr.write "glibc's write() (the doorbell) $w1 instructions a call preloaded, $w0 plain"
	# the library's own, measured as for the other verbs (self + library
	# helpers): its wr_start and wr_complete, and builders if it ran any
	local f v own=0 parts=
	for f in shiftu_wr_start wr_rdma_write wr_set_sge_list shiftu_wr_complete; do
		v=$(get "cg.wr.$f")
		[ -n "$v" ] || continue
		own=$(awk -v a="$own" -v b="$v" 'BEGIN { print a + b }')
		parts="$parts ${f#shiftu_} $v"
	done
	case $parts in
	*wr_start*wr_complete*)
		put cg.wr.own "$own"
		put cg.wr.own.detail "${parts# }" ;;
	*)	put cg.wr.own.why "wr_start or wr_complete not measured" ;;
	esac
	# last, so that its failure hides nothing above: ping-pong over an
	# SRQ (perftest's latency tests put both sides' receives on one):
	# the client posts its receives with ibv_post_srq_recv, and polls
	# their completions, an SRQ's
	cg_mode srq ib_send_lat --use-srq
}

# strace -c's total of calls (main thread only: the data path's thread)
st_total() { awk '$NF == "total" { print $4 }' "$1"; }

step_strace()
{
	local pre n tag
	command -v strace > /dev/null || skip "strace is not installed (apt-get install -y strace on the host)"
	for pre in 0 1; do
		for n in "$ST_N1" "$ST_N2"; do
			tag=st.$pre.$n
			BP_OUTER=(strace -c -o "$OUT/$tag.strace")
			bp "$tag" "$pre" 300 ib_write_bw -s 4096 -n "$n" || fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
			BP_OUTER=()
			[ "$pre" = 0 ] || check_preloaded "$tag"
			put "st.$pre.$n" "$(st_total "$OUT/$tag.strace")"
			log "$tag: $(get "st.$pre.$n") syscalls"
		done
	done
	put st.cmd.1 "$(cat "$OUT/st.1.$ST_N2.cmd")"
}

# ---- d, e: failover by cause, and throughput on the backup ----

rd() { local v; read -r v < "$1"; echo "$v"; }
sent_pkts() { rd "$IB/$1/ports/1/hw_counters/sent_pkts"; }
tx_bytes() { rd "/sys/class/net/$1/statistics/tx_bytes"; }

# rail_poll FILE: every ~2 ms until all are seen (10 s at most), the
# wall-clock times of rxe0 leaving ACTIVE and of rxe1's first packet sent
# and received after the start (builtins only: no exec per sample).
rail_poll()
{
	local fd t st s r s0 r0 down='' sent='' rcvd='' end=$((SECONDS + 10))
	local c=$IB/rxe1/ports/1/hw_counters

	exec {fd}<> /dev/ptmx
	read -r s0 < "$c/sent_pkts"
	read -r r0 < "$c/rcvd_pkts"
	while [ $SECONDS -lt $end ] && { [ -z "$down" ] || [ -z "$sent" ] || [ -z "$rcvd" ]; }; do
		t=$EPOCHREALTIME
		if [ -z "$down" ]; then
			read -r st < "$IB/rxe0/ports/1/state"
			[[ $st == *ACTIVE* ]] || down=$t
		fi
		read -r s < "$c/sent_pkts"
		read -r r < "$c/rcvd_pkts"
		[ -n "$sent" ] || [ "$s" = "$s0" ] || sent=$t
		[ -n "$rcvd" ] || [ "$r" = "$r0" ] || rcvd=$t
		read -r -t 0.002 -u "$fd" _ || true
	done
	echo "${down:--} ${sent:--} ${rcvd:--}" > "$1"
}

# log_stamp TAG: stamp each line of the client's libshiftu log with the
# wall-clock time it was seen (TAG.cli.shiftu.ts), until the client ends.
log_stamp()
{
	tail -n +1 -F -s 0.01 --pid="$BP_CLI" "$OUT/$1.cli.shiftu" 2> /dev/null |
		while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done > "$OUT/$1.cli.shiftu.ts" &
}

# ts_of TAG REGEX: the time the first log line matching REGEX was seen
ts_of() { awk -v re="$2" '$0 ~ re { print $1; exit }' "$OUT/$1.cli.shiftu.ts" 2> /dev/null; }

ms() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && a != "-" && b != "" && b != "-") printf "%.1f\n", (b - a) * 1000 }'; }

# wait_traffic DEV: until DEV sends (20 s at most), then 1 s more
wait_traffic()
{
	local p
	p=$(sent_pkts "$1")
	for _ in $(seq 200); do
		[ "$(sent_pkts "$1")" = "$p" ] || break
		sleep 0.1
	done
	sleep 1
}

# during the health-path run: rail 0's rate before the pull, rail 1's
# during the outage, and the times around the pull
health_during()
{
	local tag=$1 p0 b0 p1 b1 q0 c0 q1 c1 t0 t1
	log_stamp "$tag"
	wait_traffic rxe0
	p0=$(sent_pkts rxe0) b0=$(tx_bytes eth0)
	sleep 2
	p1=$(sent_pkts rxe0) b1=$(tx_bytes eth0)
	rail_poll "$OUT/$tag.poll" &
	sleep 0.1
	t0=$EPOCHREALTIME
	lab_link eth0 off
	t1=$EPOCHREALTIME
	sleep 1
	q0=$(sent_pkts rxe1) c0=$(tx_bytes eth1)
	sleep 2
	q1=$(sent_pkts rxe1) c1=$(tx_bytes eth1)
	lab_link eth0 on
	wait $!
	echo "$t0 $t1 $((p1 - p0)) $((b1 - b0)) $((q1 - q0)) $((c1 - c0))" > "$OUT/$tag.times"
}

step_health()
{
	local tag=fo.health line t_fo t_pull t_linked r0_pkts r0_bytes r1_pkts r1_bytes down sent rcvd
	BP_DURING=health_during
	bp "$tag" 1 120 ib_write_bw -s 65536 -D 15 -F || fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
	BP_DURING=''
	check_preloaded "$tag"
	read -r t_pull t_linked r0_pkts r0_bytes r1_pkts r1_bytes < "$OUT/$tag.times"
	read -r down sent rcvd < "$OUT/$tag.poll"
	put fo.cmd "$(cat "$OUT/$tag.cmd"); lab_link eth0 off 3 s after rail 0 starts sending"
	# e: the rates, from the rail NICs' byte counters and rxe's packets
	put tp.r0_bytes "$r0_bytes" && put tp.r1_bytes "$r1_bytes"
	put tp.r0_pkts "$r0_pkts" && put tp.r1_pkts "$r1_pkts"
	put tp.bw "$(awk '$1 == 65536 && NF >= 5 { print $4; exit }' "$OUT/$tag.cli.out")"
	line=$(grep -m1 'failed over to qp' "$OUT/$tag.cli.shiftu") ||
		fail "$tag: no failover line in the client's libshiftu log"
	log "$line"
	[[ $line == *": port down: "* || $line == *": path down: "* || $line == *"port or path down: "* ]] ||
		fail "$tag: the failover was not caused by the health page: $line"
	put fo.h.lib_ms "$(sed -n 's/.* \([0-9.]*\) ms$/\1/p' <<< "$line")"
	t_fo=$(ts_of "$tag" 'failed over to qp')
	put fo.h.linked_ms "$(ms "$t_pull" "$t_linked")"
	put fo.h.down_ms "$(ms "$t_pull" "$down")"
	put fo.h.line_ms "$(ms "$t_pull" "$t_fo")"
	put fo.h.sent_ms "$(ms "$t_pull" "$sent")"
	put fo.h.rcvd_ms "$(ms "$t_pull" "$rcvd")"
}

# during the error-completion run: a silent failure on rail 0, as a dead
# switch port makes it: host 1's eth0 drops everything it sends (netem),
# while its carrier and rxe0 stay up, so the health page shows nothing and
# only the transport's retry-exceeded completion can start the failover;
# timed on host 1's own clock, like the health-page run
err_during()
{
	local tag=$1 t0 t1
	log_stamp "$tag"
	wait_traffic rxe0
	sleep 1
	t0=$EPOCHREALTIME
	tc qdisc add dev eth0 root netem loss 100%
	t1=$EPOCHREALTIME
	for _ in $(seq 600); do
		grep -q 'failed over to qp' "$OUT/$tag.cli.shiftu" 2> /dev/null && break
		sleep 0.1
	done
	tc qdisc del dev eth0 root
	echo "$t0 $t1" > "$OUT/$tag.times"
}

step_errcqe()
{
	local tag=fo.err line t_fo t_pull t_linked
	[ -x "$SHIFTGEN" ] || skip "shiftgen missing ($SHIFTGEN)"
	modprobe sch_netem 2> /dev/null
	tc qdisc add dev lo root netem delay 0ms 2> /dev/null &&
		tc qdisc del dev lo root || skip "no netem qdisc in the guest kernel"
	BP_DURING=err_during
	bp "$tag" 1 150 "$SHIFTGEN" -m write -r 6 -t 20 -D 60 || log "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
	BP_DURING=''
	read -r t_pull t_linked < "$OUT/$tag.times"
	put fo.e.cmd "$(cat "$OUT/$tag.cmd"); tc qdisc add dev eth0 root netem loss 100% 2 s after rail 0 starts sending"
	line=$(grep -m1 'failed over to qp' "$OUT/$tag.cli.shiftu") ||
		fail "$tag: no failover line in the client's libshiftu log"
	log "$line"
	[[ $line == *"transport retry counter exceeded: failed over"* ]] ||
		fail "$tag: the failover was not caused by a retry-exceeded completion: $line"
	put fo.e.lib_ms "$(sed -n 's/.* \([0-9.]*\) ms$/\1/p' <<< "$line")"
	t_fo=$(ts_of "$tag" 'failed over to qp')
	put fo.e.linked_ms "$(ms "$t_pull" "$t_linked")"
	put fo.e.line_ms "$(ms "$t_pull" "$t_fo")"
}

# step NAME: run step_NAME in a subshell (a failure ends only that step);
# its output goes to the console and $OUT/NAME.log, and the reason of a
# failure or skip to the results as NAME.why
step()
{
	local rc=0 why
	echo "== bench: $1 ($(date +%T))"
	(step_"$1") 2>&1 | tee "$OUT/$1.log"
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] && return 0
	why=$(sed -n 's/^# \(FAIL\|SKIP\): //p' "$OUT/$1.log" | head -n 1)
	put "$1.why" "${why:-step exited $rc, see bench/$1.log}"
}

# ---- f: the twins of a process with many QPs ----

# during the many-QP run: when the client first sends on rail 0 (every QP
# of perftest's is at RTS by then)
twins_during()
{
	local p

	log_stamp "$1"
	p=$(sent_pkts rxe0)
	for _ in $(seq 400); do
		[ "$(sent_pkts rxe0)" = "$p" ] || break
		sleep 0.05
	done
	echo "$EPOCHREALTIME" > "$OUT/$1.first"
}

step_twins()
{
	local tag=twins t0 tl n
	BP_DURING=twins_during
	bp "$tag" 1 60 ib_write_bw -q "$TWIN_QPS" -s 4096 -D 10 -F ||
		fail "$tag: client exited $(cat "$OUT/$tag.cli.rc")"
	BP_DURING=''
	check_preloaded "$tag"
	put tw.cmd "$(cat "$OUT/$tag.cmd")"
	n=$(grep -c 'protected by qp' "$OUT/$tag.cli.shiftu" || true)
	[ "$n" = "$TWIN_QPS" ] || fail "$tag: $n of $TWIN_QPS QPs got a twin"
	read -r t0 < "$OUT/$tag.first"
	tl=$(awk '/protected by qp/ { t = $1 } END { print t }' "$OUT/$tag.cli.shiftu.ts")
	put tw.ms "$(ms "$t0" "$tl")"
}

# ---- the report ----

# line FIGURE VALUE UNIT TARGET VERDICT CMD [WHY]: one report line; an
# empty VALUE means not measured, for the reason WHY (or else VERDICT)
line()
{
	if [ -z "$2" ]; then
		printf '%-52s not measured: %s\n' "$1" "${7:-$5}"
	else
		printf '%-52s %12s %-10s target %-8s %-8s cmd: %s\n' "$1" "$2" "$3" "$4" "${5:-info}" "$6"
	fi
}

verdict() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
	ok = (op == "<=") ? v <= t : v >= t; print ok ? "met" : "not met" }'; }

# judge VALUE OP TARGET STEP DEFAULT: met/not met, or why it is missing
judge()
{
	if [ -n "$1" ]; then
		verdict "$1" "$2" "$3"
	else
		why "$4" "$5"
	fi
}

why() { local w; w=$(get "$1.why"); echo "${w:-$2}"; }

# rounds KEY: the values KEY.1 .. KEY.ROUNDS that were measured
rounds() { local r; for r in $(seq "$ROUNDS"); do get "$1.$r"; done; }

# poll_rate MODE: the completions a poll_cq call took in MODE's runs
# (slope: completions / calls, the library's counts), or nothing
poll_rate()
{
	get "cg.$1.poll" | awk 'NF == 6 && $6 != "" && $2 > $1 { printf "%.4f", ($6 - $5) / ($2 - $1) }'
}

# poll_slope MODE: its poll_cq figure a call, unrounded (the report's is
# to a tenth), or nothing
poll_slope()
{
	get "cg.$1.poll" | awk 'NF >= 4 && $2 > $1 { printf "%.4f", ($4 - $3) / ($2 - $1) }'
}

# The modes whose poll_cq completions all take the common path's one test
# of status and opcode (good sends, and receives of QPs whose CQs are two):
# their calls cost F + b * (completions a call) with the same F and b.
POLL_FIT_MODES="old lat ex recv wr"

# poll_fit: a poll_cq call's fixed cost F and a completion's b, fitted (least
# squares) to the POLL_FIT_MODES runs' per call figures against their
# completions a call (the lat run's calls mostly take nothing, the others'
# more or less, by the run's timing: the spread is what tells F from b);
# puts cg.poll.F, cg.poll.Fx (unrounded) and cg.poll.b, or cg.poll.why
poll_fit()
{
	local m pts='' fit
	for m in $POLL_FIT_MODES; do
		[ -n "$(poll_slope "$m")" ] && [ -n "$(poll_rate "$m")" ] &&
			pts="$pts $m $(poll_rate "$m") $(poll_slope "$m")"
	done
	# F b worst-residual spread detail, or nothing
	fit=$(echo "$pts" | awk '{
		for (i = 1; i + 2 <= NF; i += 3) { m[++n] = $i; r[n] = $(i + 1); a[n] = $(i + 2) }
		if (n < 2) exit
		lo = hi = r[1]
		for (i = 1; i <= n; i++) {
			sr += r[i]; sa += a[i]; srr += r[i] * r[i]; sra += r[i] * a[i]
			if (r[i] < lo) lo = r[i]
			if (r[i] > hi) hi = r[i]
		}
		if (hi - lo < 0.1) { printf "- - - %.4f", hi - lo; exit }
		b = (n * sra - sr * sa) / (n * srr - sr * sr); F = (sa - b * sr) / n
		for (i = 1; i <= n; i++) {
			e = a[i] - F - b * r[i]; if (e < 0) e = -e
			if (e > w) w = e
			d = d sprintf("%s%s: %.4f a call, %.4f completions a call", i > 1 ? "; " : "", m[i], a[i], r[i])
		}
		printf "%.4f %.4f %.2f %.4f %s", F, b, w, hi - lo, d }')
	if [ -z "$fit" ]; then
		put cg.poll.why "fewer than two of the runs $POLL_FIT_MODES have a poll_cq slope and a completion count"
	elif [ "${fit%% *}" = - ]; then
		put cg.poll.why "the runs $POLL_FIT_MODES took about as many completions a call (spread ${fit##* }): they cannot tell a call's cost from a completion's"
	else
		read -r F b w sp detail <<< "$fit"
		put cg.poll.Fx "$F"
		put cg.poll.F "$(awk -v v="$F" 'BEGIN { printf "%.1f", v }')"
		put cg.poll.b "$(awk -v v="$b" 'BEGIN { printf "%.1f", v }')"
		put cg.poll.detail "least squares of F + b * completions a call over $detail; worst residual $w instructions a call"
	fi
}

# poll_split: the two lines of poll_fit()'s figures
poll_split()
{
	line "instructions per poll_cq call, fixed ($POLL_FIT_MODES)" "$(get cg.poll.F)" instr/call "<= 25" \
	     "$(judge "$(get cg.poll.F)" '<=' 25 cg.poll "not measured")" \
	     "the lines above [$(get cg.poll.detail)]"
	line "instructions per poll_cq completion ($POLL_FIT_MODES)" "$(get cg.poll.b)" instr/wc - info \
	     "the lines above [$(get cg.poll.detail)]" "$(why cg.poll 'not measured')"
}

# poll_lines MODE: after MODE's poll_cq line, the completions its calls
# took and what a completion cost there beyond a call's fixed cost F
# (poll_split(); not measured where the calls took too few to tell)
poll_lines()
{
	local mode=$1 r v F why=''
	r=$(poll_rate "$mode")
	[ -n "$r" ] || why="no completion count (poll_wcs) in the library's exit lines"
	line "completions per poll_cq call ($mode API)" "$r" wc/call - info \
	     "the exit lines' poll_wcs, -n $CG_N/$((2 * CG_N)) [calls, calls, added, added, completions, completions: $(get "cg.$mode.poll")]" "$why"
	case " $POLL_FIT_MODES " in *" $mode "*) return 0 ;; esac
	[ -n "$r" ] || return 0
	F=$(get cg.poll.Fx) v=$(poll_slope "$mode")
	if [ -z "$F" ]; then
		why="no fixed cost of a call (see the fixed cost line)"
	elif awk -v r="$r" 'BEGIN { exit !(r < 0.01) }'; then
		why="its calls took $r completions each: too few to tell a completion's cost from a call's"
	else
		v=$(awk -v a="$v" -v F="$F" -v r="$r" 'BEGIN { printf "%.1f", (a - F) / r }')
	fi
	[ -z "$why" ] || v=
	line "instructions per poll_cq completion ($mode API)" "$v" instr/wc - info \
	     "(its per call figure - F) / its completions a call, F fitted to the runs $POLL_FIT_MODES" "$why"
}

report()
{
	local pre med0 med1 v f mode s0 s1 slope0 slope1 add cmd h e
	echo "shift bench: $(git -C "$SHIFT_TOP" describe --always --dirty 2>/dev/null || echo unknown)," \
	     "$(date -u '+%F %T UTC'), two lab hosts, $ROUNDS rounds"
	echo "Soft-RoCE in QEMU (see Documentation/lab.rst): absolute figures are emulation-bound, ratios are the result"
	echo

	med0=$(rounds lat.0 | median) med1=$(rounds lat.1 | median)
	echo "# a. ib_write_lat, 2 B, -n $LAT_N, t_typical (median over the rounds; rounds: plain $(rounds lat.0 | paste -sd,), preloaded $(rounds lat.1 | paste -sd,))"
	line "latency, plain" "$med0" us - "" "$(get lat.cmd.0)" "$(why lat 'no result')"
	line "latency, preloaded" "$med1" us - "" "$(get lat.cmd.1)" "$(why lat 'no result')"
	v=$(awk -v a="$med0" -v b="$med1" 'BEGIN { if (a > 0 && b != "") printf "%.4f", b / a }')
	line "latency ratio preloaded/plain" "$v" "" "<= 1.01" "$(judge "$v" '<=' 1.01 lat 'no result')" "the two above"

	med0=$(rounds bw.0 | median) med1=$(rounds bw.1 | median)
	echo
	echo "# b. ib_write_bw, 64 KiB, -D $BW_SECS, BW average (median over the rounds; rounds: plain $(rounds bw.0 | paste -sd,), preloaded $(rounds bw.1 | paste -sd,))"
	line "bandwidth, plain" "$med0" MB/s - "" "$(get bw.cmd.0)" "$(why bw 'no result')"
	line "bandwidth, preloaded" "$med1" MB/s - "" "$(get bw.cmd.1)" "$(why bw 'no result')"
	v=$(awk -v a="$med0" -v b="$med1" 'BEGIN { if (a > 0 && b != "") printf "%.4f", b / a }')
	line "bandwidth ratio preloaded/plain" "$v" "" ">= 0.99" "$(judge "$v" '>=' 0.99 bw 'no result')" "the two above"

	echo
	echo "# c. instructions the library adds per data verb (callgrind, client preloaded, server plain, -s 4096, -n $CG_N and $((2 * CG_N)): (self + library helpers), slope per call; old: ib_write_bw --use_old_post_send, lat: ib_write_lat -s 2, ex: ib_write_bw, recv: ib_send_bw -b --use_old_post_send, wr: shiftgen -m write -c 1 --wr-api, whose batches are direct: the provider's builders, framed by the library's wr_start and wr_complete; wr_* lines appear only if the library's builders ran; cqex: shiftgen -m write -c 1 --cq-ex=poll --signal-all, direct sessions: the provider's start_poll, next_poll and end_poll under the library's not counted; srq: ib_send_lat --use-srq; a poll_cq call takes from none to several completions: the completions a call took are the library's count (poll_wcs in its exit line), and a call's fixed cost and a completion's come apart between the runs whose completions take the one test of status and opcode, their completions a call spread by the runs' timing; an extended CQ's start_poll and next_poll take one each)"
	poll_fit
	for mode in old lat ex recv wr cqex srq; do
		for f in shiftu_post_send shiftu_post_recv shiftu_wr_start wr_rdma_write \
			 wr_rdma_write_imm wr_send wr_set_sge_list wr_set_inline_data \
			 shiftu_wr_complete shiftu_poll_cq cqx_start_poll cqx_next_poll cqx_end_poll \
			 shiftu_post_srq_recv; do
			v=$(get "cg.$mode.$f")
			case $mode:$f in
			old:shiftu_post_send|wr:shiftu_wr_start|wr:shiftu_wr_complete|recv:shiftu_post_recv) ;;
			cqex:cqx_start_poll|cqex:cqx_next_poll|cqex:cqx_end_poll) ;;
			srq:shiftu_post_srq_recv) ;;
			cqex:shiftu_poll_cq) continue ;;
			*:shiftu_poll_cq) ;;
			*) [ -n "$v$(get "cg.$mode.$f.why")" ] || continue ;;
			esac
			line "instructions per ${f#shiftu_} ($mode API)" "$v" instr/call "<= 25" \
			     "$(judge "$v" '<=' 25 "cg.$mode.$f" "$(why cg "not called in the $mode run")")" \
			     "$(get "cg.$mode.cmd") [$(get "cg.$mode.$f.detail")]"
			[ "$f" = shiftu_poll_cq ] && [ -n "$v" ] && poll_lines "$mode"
		done
	done
	poll_split
	v=$(get cg.wr.own)
	line "instructions the library adds per batch (wr API: 4 verbs)" "$v" instr/batch "<= 100" \
	     "$(judge "$v" '<=' 100 cg.wr.own "$(why cg 'not measured')")" \
	     "the wr run above, the per-call figures of the library's functions a batch of one WRITE calls [$(get cg.wr.own.detail)]"
	v=$(get cg.wr.batch)
	line "instructions per batch, inclusive, preloaded less plain" "$v" instr/batch - info \
	     "$(get cg.wr.batch.cmd) [$(get cg.wr.batch.detail): ibv_wr_start, ibv_wr_rdma_write, ibv_wr_set_sge_list, ibv_wr_complete and all they call, provider and libc included; $(get cg.wr.write)]" \
	     "$(why cg.wr.batch 'not measured')"
	echo
	echo "# c. syscalls per iteration of the client's main thread (strace -c, ib_write_bw -s 4096 -n $ST_N1 and -n $ST_N2: slope)"
	for pre in 0 1; do
		s0=$(get "st.$pre.$ST_N1") s1=$(get "st.$pre.$ST_N2")
		v=$(awk -v a="$s0" -v b="$s1" -v d=$((ST_N2 - ST_N1)) \
			'BEGIN { if (a != "" && b != "") printf "%.4f", (b - a) / d }')
		[ "$pre" = 0 ] && slope0=$v || slope1=$v
		line "syscalls, $([ "$pre" = 1 ] && echo preloaded || echo plain) (-n $ST_N1 / -n $ST_N2)" \
		     "${s0:+$s0/$s1}" calls - "" "$(get st.cmd.1 | sed "s/-n $ST_N2/-n N/g")" "$(why strace 'no result')"
	done
	add=$(awk -v a="$slope0" -v b="$slope1" 'BEGIN { if (a != "" && b != "") printf "%.4f", b - a }')
	line "syscalls added per iteration (slope difference)" "$add" calls/iter "<= 0.01" \
	     "$(judge "$add" '<=' 0.01 strace 'no result')" \
	     "plain slope $slope0, preloaded slope $slope1"

	echo
	echo "# d. failover time by cause (times from the pull request, wall clock on host 1)"
	line "health page: library's own time (detect->twin posted)" "$(get fo.h.lib_ms)" ms - "" "$(get fo.cmd)" "$(why health 'no failover line')"
	line "health page: pull -> lab_link returned" "$(get fo.h.linked_ms)" ms - "" "$(get fo.cmd)" "$(why health 'not seen')"
	line "health page: pull -> rxe0 not ACTIVE" "$(get fo.h.down_ms)" ms - "" "$(get fo.cmd)" "$(why health 'not seen within 10 s')"
	line "health page: pull -> failover line seen" "$(get fo.h.line_ms)" ms - "" "$(get fo.cmd)" "$(why health 'not seen')"
	line "health page: pull -> first packet sent on rail 1" "$(get fo.h.sent_ms)" ms - "" "$(get fo.cmd)" "$(why health 'not seen within 10 s')"
	line "health page: pull -> first packet rcvd on rail 1" "$(get fo.h.rcvd_ms)" ms - "" "$(get fo.cmd)" "$(why health 'not seen within 10 s')"
	line "error completion: library's own time" "$(get fo.e.lib_ms)" ms - "" "$(get fo.e.cmd)" "$(why errcqe 'no failover line')"
	line "error completion: drop rule -> tc returned" "$(get fo.e.linked_ms)" ms - "" "$(get fo.e.cmd)" "$(why errcqe 'not seen')"
	line "error completion: pull -> failover line seen" "$(get fo.e.line_ms)" ms - "" "$(get fo.e.cmd)" "$(why errcqe 'not seen')"
	h=$(get fo.h.line_ms) e=$(get fo.e.line_ms)
	v=$(awk -v h="$h" -v e="$e" 'BEGIN { if (h > 0 && e != "") printf "%.0f", e / h }')
	line "failover speed-up, error completion / health page" "$v" x ">= 100" \
	     "$(if [ -n "$h" ]; then judge "$v" '>=' 100 errcqe 'error path not measured'; else why health 'health path not measured'; fi)" \
	     "pull -> failover line seen, the two lines above"

	echo
	echo "# e. throughput on the backup (health-page run: rail 0 for 2 s from 1 s after it started sending, rail 1 from 1 s to 3 s after the pull)"
	v=$(get tp.r0_bytes)
	line "rail 0 before the pull (eth0 tx)" "$(awk -v b="$v" 'BEGIN { if (b != "") printf "%.1f", b * 8 / 2 / 1e6 }')" Mb/s - "" "$(get fo.cmd)" "$(why health 'not measured')"
	line "rail 1 during the outage (eth1 tx)" "$(awk -v b="$(get tp.r1_bytes)" 'BEGIN { if (b != "") printf "%.1f", b * 8 / 2 / 1e6 }')" Mb/s - "" "$(get fo.cmd)" "$(why health 'not measured')"
	v=$(awk -v a="$(get tp.r0_bytes)" -v b="$(get tp.r1_bytes)" 'BEGIN { if (a > 0 && b != "") printf "%.3f", b / a }')
	line "backup/primary throughput ratio (bytes)" "$v" "" - "" "the two above; packets: rail 0 $(get tp.r0_pkts), rail 1 $(get tp.r1_pkts) in 2 s" "$(why health 'not measured')"
	line "ib_write_bw over the whole run (with the outage)" "$(get tp.bw)" MB/s - "" "$(get fo.cmd)" "$(why health 'not measured')"
	echo
	echo "# f. twins of a process with $TWIN_QPS QPs, from the client's first packet (all its QPs at RTS) to its last twin ready"
	v=$(get tw.ms)
	line "all $TWIN_QPS twins ready after the last QP's RTS" "$v" ms - "" "$(get tw.cmd)" "$(why twins 'not measured')"
	v=$(awk -v t="$v" -v n="$TWIN_QPS" 'BEGIN { if (t != "") printf "%.1f", (t < 0 ? 0 : t) / n }')
	line "per QP (SHIFT: 35 ms for its shadow verbs, real NICs)" "$v" ms/QP "<= 35" \
	     "$(judge "$v" '<=' 35 twins 'not measured')" "the line above / $TWIN_QPS"
}

# ---- main ----

lu_setup ib_write_bw ib_write_lat
ft_require_cmd redis-server redis-cli
smr_redis_start
LU_STORE=$SMR_STORE
BP_OUTER=() BP_INNER=()
ft_defer "lab-link eth0 on"
ft_defer "lab-peer 'lab-link eth0 on'"
log "bench: rounds $ROUNDS, latency -n $LAT_N, bandwidth -D $BW_SECS, callgrind -n $CG_N"

for s in ${BENCH_STEPS:-lat bw cg strace health errcqe twins}; do
	step "$s"
done
report | tee "$REPORT"
