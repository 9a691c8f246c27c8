#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: NCCL-style traffic survives many failures in one run.  Two shiftgen
# pairs run at once with libshiftu on both hosts, one in write_imm mode
# (chunks of WRITEs closed by a WRITE_WITH_IMM notification, NCCL's simple
# protocol) from shiftgen_dl under shiftu-run, which reaches libibverbs as
# NCCL does (dlopen, verbs looked up by handle), one preloaded in send mode (SEND/RECV messages, one CQ for both
# queues as NCCL has: the library then counts receives as they are polled,
# where the write_imm pair's drains count them); meanwhile rail 0
# is pulled TORTURE_PULLS times (default 50), at random moments, on either
# host, by QEMU set_link from outside or by `ip link set down` inside, for a
# random 0.3-1.5 s.  Both pairs must exit 0, and their servers must count
# zero lost, duplicated, reordered or corrupt notifications and no error.
#
# `make soak` (selftests/lab/scenarios/soak.sh) runs it as the soak: more
# faults, shorter (TORTURE_OUT_MS="LO HI": 50-500 ms flaps), more QPs per
# process (TORTURE_CONNS: each pair that many connections, a QP each, in
# threads of one process, as an NCCL communicator's channels), and with
# TORTURE_KINDS=all two more kinds of fault: a silent drop (netem loss 100%
# on rail 0: the port stays up, only the QPs' retries can tell) and a pull
# of rail 1, the twins' rail, made only while every QP of both hosts is
# back on rail 0 (their logs count as many failbacks as failovers; else
# that fault is a rail-0 pull).  TORTURE_KINDS=riding: rail-0 pulls by
# set_link and silent drops only, the faults plain Soft-RoCE rides by
# retrying (an ip link down fails its QPs at once): with TORTURE_PLAIN=1,
# the control that tells whether an error seen with the library is the
# transport's own.  TORTURE_PLAIN=1 is the control: the same
# traffic and faults without the library (Soft-RoCE retries for ever, so
# the pairs ride the faults on rail 0 alone, slowly): the checker must
# count nothing wrong there either.
#
# The send pair's SENDs are TORTURE_SEND_CHUNK bytes (default 1024: one
# packet at the rails' path MTU).  Soft-RoCE itself turns a retried SEND of
# several packets into an extra empty SEND when an ACK of its last packet
# meets it half sent (lab.sh scenario rxeretry shows it without the
# library, on both kernels); the receiver takes that for a message: one
# too many without the library, and with it the message it displaced is
# counted as received, so it is not replayed.  A single-packet request is
# never half sent.  TORTURE_SEND_CHUNK=4096 puts the transport's flaw back
# in.
#
#     host 1 (clients)                                 host 2 (servers)
#     rxe0 ─ eth0 ═══ rail 0: pulled, either end ═══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
GENDL=$LU_DIR/shiftgen_dl
PULLS=${TORTURE_PULLS:-50}
read -r OUT_LO OUT_HI <<< "${TORTURE_OUT_MS:-300 1500}"
CONNS=${TORTURE_CONNS:-1}
KINDS=${TORTURE_KINDS:-pulls}
case $KINDS in pulls|all|riding) ;; *) fail "TORTURE_KINDS=$KINDS: pulls, all or riding" ;; esac
SEND_CHUNK=${TORTURE_SEND_CHUNK:-1024}
PLAIN=${TORTURE_PLAIN:-0}
case $PLAIN in 0|1) ;; *) fail "TORTURE_PLAIN=$PLAIN: 0 or 1" ;; esac
[ -x "$GEN" ] && [ -x "$GENDL" ] || skip "shiftgen or shiftgen_dl not built (make -C $LU_DIR)"
[ -x "$LU_RUN" ] || skip "shiftu-run not built (make -C $SHIFT_TOP lib)"
lu_setup "$GEN" "$GENDL"
ft_require_cmd redis-server redis-cli ip
smr_redis_start
LU_STORE=$SMR_STORE
ft_defer "lab-link eth0 on; ip link set eth0 up"
ft_defer "lu_peer_try 'lab_link eth0 on; ip link set eth0 up'"
if [ "$KINDS" != pulls ]; then
	lu_require_netem
	ft_defer "lab-link eth1 on"
	ft_defer "lu_peer_try 'lab_link eth1 on; tc qdisc del dev eth0 root 2> /dev/null'"
	# the dead switch port, on both hosts: netem's loss changes, the qdisc stays
	tc qdisc add dev eth0 root netem loss 0%
	lu_peer_run "tc qdisc add dev eth0 root netem loss 0%" || fail "host 2: no netem"
fi

# both hosts' rxe0 transport counters at the end, pass or fail, beside
# the faults' log: an error the transport gave (a "remote invalid request"
# in the 300-fault soak) reads with its retries, sequence NAKs and
# duplicates (rcvd_seq_err, out_of_seq_request, duplicate_request, ...)
# shellcheck disable=SC2016 # expanded where it runs: here (eval) and on host 2
COUNTERS='for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo "${f##*/} $(cat "$f")"; done'
counters()
{
	# a subshell: lu_peer_out's fail, if host 2 is gone, ends only it
	(
		eval "$COUNTERS" | sed 's/^/host1 /'
		lu_peer_out "$COUNTERS" | sed 's/^/host2 /'
	) > "$FT_OUT/torture.counters.log" 2>&1 || :
}
ft_defer counters

# rnd VAR LO HI: VAR = a random number of milliseconds in [LO, HI], as seconds
rnd() { local ms=$((RANDOM % ($3 - $2 + 1) + $2)); printf -v "$1" '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

# the traffic ends 5 s after the last pull (SIGUSR1: the clients' last
# message); -D is only its bound: 2.5 s a pull at most, and 10 s for a
# slow guest's (10 pulls took 66 s on a slower machine, past a bound of
# 4 s a pull: make check, 2026-12-01)
DUR=$((PULLS * 10 + 60))
conns=
[ "$CONNS" -gt 1 ] && conns="-P $CONNS"
for m in imm send; do
	lu_keep "$m" torture
	mode=$m opts="--one-cq -s $SEND_CHUNK" gen=$GEN LU_BG_PRE=1
	[ "$m" = imm ] && mode=write_imm opts='' gen=$GENDL LU_BG_PRE=run
	[ "$PLAIN" = 1 ] && LU_BG_PRE=0
	# shellcheck disable=SC2086 # $opts, $conns: no word, or their words
	lu_bg_start "$m" "$DUR" "$gen" -m "$mode" $opts $conns -D "$DUR" -W $((DUR + 30))
done

# MOVES: an awk program over libshiftu logs: "OVER BACK", the QP moves
# they tell (failovers, failbacks), and its status 0 when those are equal
MOVES='/: failed over to qp / { o++ } /: failed back from / { b++ } END { print o + 0, b + 0; exit o + 0 != b + 0 }'

# every QP of both hosts back on rail 0: as many failbacks as failovers
# (without the library, none ever left)
all_back()
{
	[ "$PLAIN" = 1 ] && return 0
	awk "$MOVES" "$FT_TMP/imm.cli.shiftu" "$FT_TMP/send.cli.shiftu" > /dev/null &&
		lu_peer_run "awk '$MOVES' $LU_RDIR/imm.srv.shiftu $LU_RDIR/send.srv.shiftu > /dev/null"
}

# each fault, for a failure's context: host 1's clock, the host, what, how long
FAULTS=$FT_OUT/torture.faults.log
: > "$FAULTS"
names=(set_link set_link ip_link drop rail1)
sleep 2
host1=0 host2=0 ipdown=0 drops=0 rail1=0 t0=$SECONDS
# A pull costs little beyond its sleeps, or the pulls stretch well past
# their schedule: four pollers share the guests' CPUs.  Host 1 pulls with
# lab-lib.sh's lab_link, host 2 through lu_peer_run (lu_setup opened its
# shell): no process started.
for ((i = 0; i < PULLS; i++)); do
	rnd gap 200 1000
	rnd out "$OUT_LO" "$OUT_HI"
	lab_nap "$gap"
	kind=$((RANDOM % 3))
	if [ "$KINDS" = all ]; then
		kind=$((RANDOM % 5))
		# the twins' rail only while nothing rides it, nor is about
		# to: a QP that the last fault's retries fail moves a moment
		# after it (a double fault, which nothing survives)
		if [ "$kind" = 4 ]; then
			lab_nap 2
			all_back || kind=0
		fi
	elif [ "$KINDS" = riding ]; then
		kind=$((RANDOM % 2 * 3))	# 0: set_link, 3: a drop
	fi
	case $kind in
	0|1)	down="lab_link eth0 off" up="lab_link eth0 on" ;;
	2)	down="ip link set eth0 down" up="ip link set eth0 up"; ipdown=$((ipdown + 1)) ;;
	3)	down="tc qdisc change dev eth0 root netem loss 100%"
		up="tc qdisc change dev eth0 root netem loss 0%"; drops=$((drops + 1)) ;;
	4)	down="lab_link eth1 off" up="lab_link eth1 on"; rail1=$((rail1 + 1)) ;;
	esac
	h=$((RANDOM % 2 + 1))
	echo "$(date +%T.%3N) host$h ${names[$kind]} $out" >> "$FAULTS"
	if [ "$h" = 1 ]; then
		host1=$((host1 + 1))
		$down
		lab_nap "$out"
		$up
	else
		host2=$((host2 + 1))
		lu_peer_run "$down; sleep $out; $up" || fail "host 2: $down; $up failed"
	fi
done
log "$PULLS faults in $((SECONDS - t0)) s: $host1 on host 1, $host2 on host 2; $ipdown rail-0 pulls by ip link, $drops silent drops, $rail1 rail-1 pulls, the rest rail-0 pulls by set_link"
[ "$PLAIN" = 1 ] ||
	log "QP moves (failovers failbacks) so far: host 1 $(awk "$MOVES" "$FT_TMP/imm.cli.shiftu" "$FT_TMP/send.cli.shiftu"), host 2 $(lu_peer_out "awk '$MOVES' $LU_RDIR/imm.srv.shiftu $LU_RDIR/send.srv.shiftu")"
sleep 5
early=
for m in imm send; do
	# the client is timeout's child (env executes shiftgen)
	pkill -USR1 -P "$(cat "$FT_TMP/$m.cli.pid")" shiftgen || early="$early $m"
done

for m in imm send; do
	lu_bg_wait "$m" $((1 - PLAIN))
done
[ -z "$early" ] || fail "${early# }: the client ended before the pulls did"
for m in imm send; do
	lu_gen_clean "$m"
	if [ "$PLAIN" = 0 ]; then
		lu_check_log "$m" cli "failovers>0" "failbacks>0"
		lu_check_log "$m" srv "failovers>0" "failbacks>0"
	fi
	log "$m: $(grep '^shiftgen: role=server' "$FT_TMP/$m.srv.out")"
done
