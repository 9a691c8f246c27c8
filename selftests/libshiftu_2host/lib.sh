#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers of the libshiftu preload tests (sourced, not run), on top
# of ../shift_ft_2host/lib2.sh (ft2_setup, peer, peer_listening) and
# ../shift_ft/lib.sh (ft_setup, fail, skip, log, ft_defer).
#
#           host 1                                   host 2
#     rxe0 ─ eth0 10.0.0.1 ─────── rail 0 ─────── eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ─────── rail 1 ─────── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ─────── mgmt ───────── eth2 10.0.2.2   (lab-peer)
#
#     perftest client                               perftest server
#     LD_PRELOAD=libshiftu.so.0                     LD_PRELOAD=libshiftu.so.0
#     SHIFTU_LOG_FILE=$FT_TMP/TAG.cli.shiftu        SHIFTU_LOG_FILE=$LU_RDIR/TAG.srv.shiftu
#                                                   (host 2's own /tmp; fetched
#                                                    back with lab-peer cat)
#
# The library's contract for these tests: at SHIFTU_LOG=info it logs, once
# per opened device, "context rxeN: interposed", and at process exit exactly
# one line
#   libshiftu[PID]: info: exit: contexts=N qps=N post_send=N post_recv=N ...
# whose key=value pairs are read by name (more may be added).

LU_DIR=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# the agent tests' helpers (redis on host 1, agents), on top of lib2.sh
# shellcheck source-path=SCRIPTDIR source=../shiftmon_2host/lib.sh
. "$LU_DIR/../shiftmon_2host/lib.sh"

# The store (smr_redis_start) shares host 1's one CPU with the
# application's pollers, where a job's store lives on a host they do not
# starve (many cores, or another host): it runs at niceness -10.  At the
# default niceness it answered in 1 to 5 s beside 64 pollers, and 64
# failbacks took a minute after the repair (many_gen); beside 16 QPs it
# answered nothing for 5 s around a repair (many_qps).
SMR_REDIS_NICE=${SMR_REDIS_NICE:--10}

LU_LIB=${LIBSHIFTU:-$SHIFT_TOP/userlib/libshiftu.so.0}
# the test build (userlib/testbuild.h: the SHIFTU_TEST_ knobs): a test that
# sets a knob preloads it (LU_LIB=$LU_TEST_LIB)
LU_TEST_LIB=${LIBSHIFTU_TEST:-$SHIFT_TOP/userlib/libshiftu-test.so.0}
LU_RDIR=		# host 2's scratch directory, made by lu_setup
LU_SRV_PID=		# host 2's running perftest server (its process group)
LU_PORT=${LU_PORT:-18600}	# the next perftest TCP port; one per pair

# LU_RXE_XMIT_FATAL: 1 where Soft-RoCE fails a QP one of whose packets the
# qdisc refused, and reports it as a flush.  6.12's rxe_send() returns what
# ip_local_out() returned, so rxe_requester() takes NET_XMIT_CN (the noop
# qdisc that dev_deactivate() puts in: a carrier loss, `ip link set down`,
# a root qdisc replaced) or NET_XMIT_DROP as a failed send: the request
# gets IB_WC_LOC_QP_OP_ERR and the QP goes to ERR, whose requests its
# completer then flushes first, that one too ("work request flushed").
# 6.1's rxe_send() took net_xmit_eval() of it (NET_XMIT_CN is success) and
# turned any other refusal into -EAGAIN, which its requester retries; its
# completer completes a failed request with its own status.  A carrier
# loss refuses a QP's packets only for a moment (linkwatch swaps in the
# noop qdisc, then ARP drops the neighbour and packets wait in its queue),
# so a plain QP on 6.12 survives a pull or not by when it sends.
case $(uname -r) in
6.1.*) LU_RXE_XMIT_FATAL=0 ;;
*) LU_RXE_XMIT_FATAL=1 ;;
esac

# lu_require_lib: skip unless the library is built.
lu_require_lib()
{
	[ -f "$LU_LIB" ] || skip "libshiftu not built ($LU_LIB; make -C $SHIFT_TOP lib)"
}

# lu_setup CMD...: both hosts ready (ft2_setup), the library built, CMDs
# (the perftest binaries) installed; lu_peer_run's shell on host 2 open, a
# scratch directory there, and rxe0's RoCEv2 IPv4 GID index on each host
# (LU_GIDX, LU_RGIDX).
lu_setup()
{
	lu_require_lib
	ft_require_cmd timeout socat "$@"
	ft2_setup
	ft_defer lu_kill_server
	lu_peer_open
	LU_RDIR=$(lu_peer_out "mktemp -d /tmp/libshiftu_2host.$FT_TEST.XXXXXX") || LU_RDIR=
	[ -n "$LU_RDIR" ] || fail "no scratch directory on host 2"
	ft_defer "lu_peer_try 'rm -rf $LU_RDIR'"
	lu_rails_answer
	LU_GIDX=$(lab_gid_index rxe0) || fail "rxe0 has no RoCEv2 IPv4 GID"
	LU_RGIDX=$(lu_peer_out "lab_gid_index rxe0") || LU_RGIDX=
	[ -n "$LU_RGIDX" ] || fail "host 2's rxe0 has no RoCEv2 IPv4 GID"
}

# lu_rail_pings N: host 2 answers a ping on rail N (one try, then three)
lu_rail_pings()
{
	ping -q -c 1 -W 3 -I "eth$1" "10.0.$1.2" > /dev/null 2>&1 ||
		ping -q -c 3 -W 3 -I "eth$1" "10.0.$1.2" > /dev/null 2>&1
}

# lu_rails_answer: host 2 answers a ping on both rails before the test
# starts.  A rail that an earlier test left dead (the lab's virtio links
# have stalled after a pull: the guest's transmit counter stops) is said
# so, with both hosts' view of it (lu_rails_state); both ends of its cable
# are pulled and put back once, and if that is not enough both guests'
# NICs of that rail are reset and its rxe device made again
# (lab_rail_reset).  A rail still dead then fails the test, named as the
# lab's, not as this test's failure.
lu_rails_answer()
{
	local n

	for n in 0 1; do
		lu_rail_pings "$n" && continue
		lu_rails_state
		log "the lab's rail $n is dead before the test: host 2 (10.0.$n.2) answers no ping; pulling and putting back both ends"
		lab_link "eth$n" off
		lu_peer_run "lab_link eth$n off"
		lab_nap 1
		lab_link "eth$n" on
		lu_peer_run "lab_link eth$n on"
		lu_rail_active "$n"
		if lu_rail_pings "$n"; then
			log "the lab's rail $n answers again once both ends were pulled and put back"
			continue
		fi
		log "the lab's rail $n is still dead: resetting both guests' NIC of rail $n and making rxe$n again"
		lab_rail_reset "$n" ||
			fail "the lab's rail $n is dead before the test, and host 1's NIC of it could not be reset"
		lu_peer_run "lab_rail_reset $n" ||
			fail "the lab's rail $n is dead before the test, and host 2's NIC of it could not be reset"
		lu_rail_active "$n"
		lu_rail_pings "$n" ||
			fail "the lab's rail $n is dead before the test: host 2 (10.0.$n.2) answers no ping, even once both ends were pulled and put back and both NICs reset"
		log "the lab's rail $n answers again once both guests' NICs of it were reset"
	done
}

# lu_rail_active N: rxeN's port ACTIVE on both hosts (5 s at most each; a
# port slow to come up is judged by the ping that follows)
lu_rail_active()
{
	"$FTPAGE" wait "rxe$1" 1 state=ACTIVE -t 5000 > /dev/null || true
	lu_peer_run "$FTPAGE wait rxe$1 1 state=ACTIVE -t 5000 > /dev/null" || true
}

# lu_kill_server: end host 2's perftest server if one is still running
# (with lab-peer: when deferred, lu_peer_run's shell may be gone).
lu_kill_server()
{
	[ -z "$LU_SRV_PID" ] || lab-peer "kill -- -$LU_SRV_PID" 2> /dev/null
	LU_SRV_PID=
}

# lu_env PRELOAD LOGFILE: the "env ..." prefix of a command run with the
# library preloaded (PRELOAD=1) or through shiftu-run (PRELOAD=run: the shim
# directory too), logging at info to LOGFILE, each line timed (a failure's
# lines of both hosts can then be merged), with the store LU_STORE
# (default: the library's own) and the further VAR=VALUE words in LU_ENV;
# or without it (PRELOAD=0).
LU_RUN=$SHIFT_TOP/userlib/shiftu-run
lu_env()
{
	local vars="SHIFTU_LOG=${LU_LOG:-info} SHIFTU_LOG_TIME=1 SHIFTU_LOG_FILE=$2${LU_STORE:+ SHIFTU_STORE=$LU_STORE}${LU_ENV:+ $LU_ENV}"

	case $1 in
	1) echo "env LD_PRELOAD=$LU_LIB $vars" ;;
	run) echo "env -u LD_PRELOAD $vars $LU_RUN -q --" ;;
	*) echo "env -u LD_PRELOAD" ;;
	esac
}

# The programs' own TCP exchange (perftest's, shiftgen's) runs over mgmt:
# a rail 0 taken down by either means, QEMU's set_link or `ip link set
# down` (which takes its routes with it), leaves it alone.
LU_TCP=10.0.2.2

# lu_cable HOST BY off|on: rail 0 on host HOST (1: the client's, 2: the
# server's) taken down or brought back BY QEMU's set_link from outside
# (link: the cable) or by `ip link set eth0 down|up` inside (ip).  Host 1
# uses lab-lib.sh's lab_link, host 2 lu_peer_run's shell (lu_setup opens
# it): lab-peer would start Python on both hosts, seconds late while
# pollers hold the guests' CPUs.  Callers defer lu_cable_restore.
lu_cable()
{
	local c="lab_link eth0 $3"

	if [ "$2" = ip ]; then
		case $3 in
		off) c="ip link set eth0 down" ;;
		*) c="ip link set eth0 up" ;;
		esac
	fi
	if [ "$1" = 1 ]; then
		$c
	else
		[ -n "$LU_PEER_FD" ] || lu_peer_open
		lu_peer_run "$c"
	fi
}

# lu_cable_restore: rail 0 up on both hosts, whichever way it was taken.
lu_cable_restore()
{
	lab_link eth0 on; ip link set eth0 up
	lu_peer_try "lab_link eth0 on; ip link set eth0 up"
}

# lu_exited_ok TAG: both sides of the pair TAG exited 0.
lu_exited_ok()
{
	local side
	for side in cli srv; do
		[ "$(cat "$FT_TMP/$1.$side.rc")" = 0 ] ||
			lu_fail "$1" "$side exited $(cat "$FT_TMP/$1.$side.rc")"
	done
}

# lu_plain_rode TAG: the control TAG (no library) rode lu_pull's pull of
# host 1's rail 0: both sides exited 0.  Where a refused packet is fatal
# (LU_RXE_XMIT_FATAL), its client may instead have died of the pull: then
# host 1's rxe0 counted refused packets during the ride (TAG.refused) and
# the client's output names the flushed or failed request; logged, and
# returns 1: what only a run that rode shows is not there to check.  The
# run with the library, under the same pull, must ride it all the same.
lu_plain_rode()
{
	local tag=$1 refused

	read -r refused < "$FT_TMP/$tag.refused"
	if [ "$LU_RXE_XMIT_FATAL" = 1 ] && [ "$(cat "$FT_TMP/$tag.cli.rc")" != 0 ] &&
	   [ "$refused" -gt 0 ] &&
	   grep -qiE 'work request flushed error|local QP operation error' "$FT_TMP/$tag.cli.out"; then
		log "$tag: without the library, the client's QP died of the pull: host 1's rxe0 refused $refused packets, $(uname -r)'s Soft-RoCE fails a QP on one (client: $(grep -iE -m 1 'work request flushed error|local QP operation error' "$FT_TMP/$tag.cli.out"))"
		return 1
	fi
	lu_exited_ok "$tag"
	log "$tag: without the library, rode the pull (host 1's rxe0 refused $refused packets)"
}

# lu_pull_plain DIR PROG ARGS...: the control of a pull test: the pair
# "plain" of PROG ARGS without the library, through lu_pull (its files
# kept in DIR); without the library, rail 1 stays idle through the outage.
lu_pull_plain()
{
	local dir=$1 s0 s1
	shift

	lu_keep plain "$dir"
	LU_DURING=lu_pull lu_pair plain 0 "$@"
	read -r s0 s1 < "$FT_TMP/plain.outage"
	log "plain: exit $(cat "$FT_TMP/plain.cli.rc") and $(cat "$FT_TMP/plain.srv.rc"); host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
	[ "$s1" -lt 100 ] || lu_fail plain "rail 1 carried $s1 packets without the library"
}

# lu_bw_rode TAG Q [SIZE]: the perftest bandwidth pair TAG (messages of
# SIZE bytes, 65536 unless given; Q QPs) rode lu_pull with the library:
# both exited 0, the client has its result line, its Q QPs all failed over
# and back, and rail 1 carried the traffic during the outage.
lu_bw_rode()
{
	local s0 s1 size=${3:-65536}

	read -r s0 s1 < "$FT_TMP/$1.outage"
	log "$1: host 1's packets during the outage: rail 0 $s0, rail 1 $s1; the test saw the client's failback $(cat "$FT_TMP/$1.fbwait") ms after the repair"
	lu_exited_ok "$1"
	[ -n "$(awk -v s="$size" '$1 == s && NF >= 4' "$FT_TMP/$1.cli.out")" ] ||
		lu_fail "$1" "no result line from the client"
	lu_check_log "$1" cli "qps=$2" "failovers=$2" "failbacks=$2"
	lu_check_log "$1" srv "qps=$2"
	[ "$s1" -gt 100 ] || lu_fail "$1" "rail 1 carried only $s1 packets during the outage"
}

# lu_ride_setup CMD...: lu_setup CMD... for rides through pulls: the
# libraries' store is a Redis on host 1 (mgmt), and rail 0 comes back up
# on both hosts at the end, whatever happened.
lu_ride_setup()
{
	lu_setup "$@"
	ft_require_cmd redis-server redis-cli
	smr_redis_start
	LU_STORE=$SMR_STORE
	ft_defer lu_cable_restore
}

# lu_gen_ride_setup: lu_ride_setup for shiftgen (GEN), which the test
# skips unless it is built.
GEN=$LU_DIR/shiftgen
lu_gen_ride_setup()
{
	[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
	lu_ride_setup "$GEN"
}

# lu_backed TAG: wait (20 s at most: the peer's port is seen up seconds
# after its cable returns, and probing backs off while it is out) until
# host 1's library logged TAG's client failing back, and half a second more
lu_backed()
{
	for _ in $(seq 200); do
		grep -q 'failed back from' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		sleep 0.1
	done
	sleep 0.5
}

# lu_rounds: ROUNDS, the many-QP rides' rounds: MANY_ROUNDS, default 5
# (make check sets 2; `make many` runs the default).
lu_rounds()
{
	ROUNDS=${MANY_ROUNDS:-5}
	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || fail "MANY_ROUNDS=$ROUNDS: a number of rounds, 1 or more"
}

# lu_require_netem: tc with the netem qdisc, else the test skips; host 1's
# rail 0 loses its qdisc when the test ends.
lu_require_netem()
{
	ft_require_cmd tc
	modprobe sch_netem 2> /dev/null || true
	if ! tc qdisc add dev lo root netem delay 0ms 2> /dev/null; then
		skip "no netem qdisc in this kernel"
	fi
	tc qdisc del dev lo root
	ft_defer "tc qdisc del dev eth0 root 2> /dev/null"
}

# lu_peer_open: a shell on host 2 for lu_peer_run, over one TCP connection
# on mgmt (socat there, started once; bash's /dev/tcp here).  A command
# then starts no process on either side, where lab-peer starts Python on
# both: seconds each while pollers hold the guests' CPUs.  The shell ends
# with the test: its connection closes when the test's shell exits, and
# the shell's read meets the end of its input (lab-peer's kill, in the
# test's cleanups, cost a second a test).
LU_PEER_FD=
lu_peer_open()
{
	local port=$LU_PORT pid i
	LU_PORT=$((LU_PORT + 1))

	pid=$(lab-peer --bg "exec socat TCP-LISTEN:$port,bind=$LU_TCP,reuseaddr EXEC:'bash $LU_DIR/peer-shell'") ||
		fail "could not start a shell on host 2"
	# until the connection is made; after, it ends with it
	ft_defer "[ -n \"\$LU_PEER_FD\" ] || lab-peer 'kill $pid' 2> /dev/null"
	for ((i = 0; i < 100; i++)); do
		# the group's 2> is undone after it, the exec's fd stays
		{ exec {LU_PEER_FD}<> "/dev/tcp/$LU_TCP/$port"; } 2> /dev/null && return 0
		sleep 0.1
	done
	fail "the shell on host 2 did not listen on port $port"
}

# lu_peer_run CMD...: CMD run by lu_peer_open's shell on host 2 (its
# output discarded); returns its status.  CMD must not exit that shell
# (peer-shell).
lu_peer_run()
{
	local reply

	echo "$*" >&"$LU_PEER_FD"
	IFS= read -r -t 60 -u "$LU_PEER_FD" reply || fail "no answer from the shell on host 2 to: $*"
	return "${reply#lu-peer }"
}

# lu_cm_listen PORT: until an rdma_cm listener on host 2 has PORT (its
# cm_id, in rdma's resources: such a listener has no socket to wait for),
# 3 s at most, or 3 s more when rdma does not show it (LAB.md)
lu_cm_listen()
{
	lu_peer_run "(for i in \$(seq 60); do rdma res show cm_id 2> /dev/null | grep -q 'LISTEN.*:$1 ' && exit 0; sleep 0.05; done; sleep 3)" || true
}

# lu_peer_try CMD...: CMD run on host 2 by lu_peer_open's shell if it is
# open and answers, else by lab-peer; returns its status.  For the test's
# cleanups, which must not fail the test on their way: a dead shell is
# given up for the rest of the test.
lu_peer_try()
{
	local reply

	if [ -n "$LU_PEER_FD" ] && { echo "$*" >&"$LU_PEER_FD"; } 2> /dev/null &&
	   IFS= read -r -t 20 -u "$LU_PEER_FD" reply && [ "${reply#lu-peer }" != "$reply" ]; then
		return "${reply#lu-peer }"
	fi
	LU_PEER_FD=
	lab-peer "$*"
}

# ft2_links_on, as lib2.sh has it, through lu_peer_try
ft2_links_on()
{
	lu_peer_try "lab_link eth0 on; lab_link eth1 on"
}

# lu_peer_out CMD...: as lu_peer_run, CMD's standard output copied to
# ours (its standard error discarded).  In a command substitution, a
# missing answer ends only the subshell: callers check what they got.
lu_peer_out()
{
	local line

	echo "?$*" >&"$LU_PEER_FD"
	while IFS= read -r -t 60 -u "$LU_PEER_FD" line; do
		case $line in
		'|'*) printf '%s\n' "${line#|}" ;;
		'lu-peer '*) return "${line#lu-peer }" ;;
		esac
	done
	fail "no answer from the shell on host 2 to: $*"
}

# lu_pkts DEV VAR: VAR set to the packets host 1's RDMA device DEV has
# sent (port 1), read without a process.
lu_pkts()
{
	read -r "$2" < "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"
}

# lu_refused VAR: VAR gets host 1's rxe0 send_err, the packets its qdisc
# refused as Soft-RoCE counts them (6.1 counts only the refusals it turned
# into -EAGAIN, not NET_XMIT_CN: LU_RXE_XMIT_FATAL)
lu_refused()
{
	read -r "$1" < /sys/class/infiniband/rxe0/ports/1/hw_counters/send_err
}

# lu_ms T0: milliseconds from $EPOCHREALTIME T0 to now (its separator is
# the locale's: only the digits are kept, microseconds).
lu_ms()
{
	local t=$EPOCHREALTIME
	echo $(((${t//[!0-9]/} - ${1//[!0-9]/}) / 1000))
}

# lu_pull TAG...: a LU_DURING command.  While the client of the pair TAG
# runs (or the clients of the pairs TAG..., started together:
# lu_group_ride),
# rail 0 of host LU_PULL_ON (1 or 2) goes down by LU_PULL_BY (link or ip,
# lu_cable) 5 s in (LU_PULL_AT, for a program that is connected sooner;
# LU_PULL_AT=ready: once the clients are ready, lu_pull_ready)
# and comes back 2.7 s later (LU_PULL_HOLD, 0.5 s by default, is the last
# part of that, for an outage that must last longer).  Host 1's packets
# per rail are counted for 1.5 s (LU_PULL_COUNT_S) from 0.7 s into the
# outage (LU_PULL_COUNT_AT, for QPs that take longer to move; both
# lengthen the outage; TAG.outage: rail 0's, rail 1's), and again for
# 1.5 s from 0.3 s after the library of every client preloaded failed
# back, 60 s at most after the repair (LU_PULL_FB_S: another bound, 0 for
# a QP that cannot fail back; beside the other lanes' guests failbacks
# came 10 s to 16 s after the repair, and a window counted before one
# finds rail 0 idle; TAG.fbwait: how long after the repair the test saw
# it, in ms); with no library, 3 s after the repair
# (TAG.after; none with LU_PULL_AFTER=0).  TAG.times: when the pull and
# the repair took effect, in ms from the start of lu_pull; TAG.refused:
# the packets host 1's rxe0 saw refused from the pull to the end
# (lu_refused).  Each TAG gets the same files: the counts are the rail's,
# all pairs together.  No process is started but grep's and
# ip's: the pollers leave the guests little CPU.
# With LU_PULL_MOVED=N, the outage is as long as the moves need, not
# fixed: the count starts LU_PULL_COUNT_AT after the clients' libraries
# logged N failovers in all (lu_moves), LU_PULL_MOVE_S (20 s) at most
# after the pull; a QP that has not moved by then stays and fails its
# test's count of failovers.
LU_PULL_ON=1 LU_PULL_BY=link
lu_pull()
{
	local t0=$EPOCHREALTIME a0 a1 b0 b1 off on tag pre=0 t1 e0 e1

	if [ "${LU_PULL_AT:-5}" = ready ]; then
		lu_pull_ready "$@"
		lu_pull_rts $#
	elif [[ ${LU_PULL_AT:-5} =~ ^[0-9]+$ ]] && [ "${LU_PULL_AT:-5}" -ge 2 ]; then
		# the look (a second, beside busy pollers) in the last one
		lab_nap $((${LU_PULL_AT:-5} - 1))
		lab_nap 1 &
		lu_pull_rts $#
		wait $!
	else
		lab_nap "${LU_PULL_AT:-5}"
		lu_pull_rts $#
	fi
	lu_refused e0
	lu_cable "$LU_PULL_ON" "$LU_PULL_BY" off
	off=$(lu_ms "$t0")
	if [ -n "${LU_PULL_MOVED:-}" ]; then
		t1=$EPOCHREALTIME
		while [ "$(lu_moves "$@")" -lt "$LU_PULL_MOVED" ] &&
		      [ "$(lu_ms "$t1")" -lt $((${LU_PULL_MOVE_S:-20} * 1000)) ]; do
			lab_nap 0.1
		done
		for tag; do
			echo "$(lu_moves "$tag") $(lu_ms "$t1")" > "$FT_TMP/$tag.moved"
		done
	fi
	lab_nap "${LU_PULL_COUNT_AT:-0.7}"
	lu_pkts rxe0 a0; lu_pkts rxe1 a1
	lab_nap "${LU_PULL_COUNT_S:-1.5}"
	lu_pkts rxe0 b0; lu_pkts rxe1 b1
	for tag; do
		echo "$((b0 - a0)) $((b1 - a1))" > "$FT_TMP/$tag.outage"
	done
	lab_nap "${LU_PULL_HOLD:-0.5}"
	lu_cable "$LU_PULL_ON" "$LU_PULL_BY" on
	on=$(lu_ms "$t0")
	for tag; do
		echo "$off $on" > "$FT_TMP/$tag.times"
		[ -e "$FT_TMP/$tag.cli.shiftu" ] || continue
		pre=1
		while [ $(($(lu_ms "$t0") - on)) -lt $((${LU_PULL_FB_S:-60} * 1000)) ] &&
		      ! grep -q 'failed back from' "$FT_TMP/$tag.cli.shiftu"; do
			lab_nap 0.1
		done
		echo "$(($(lu_ms "$t0") - on))" > "$FT_TMP/$tag.fbwait"
	done
	# LU_PULL_AFTER=0: a test that reads no TAG.after does not wait for it
	if [ "${LU_PULL_AFTER:-1}" = 1 ]; then
		if [ "$pre" = 1 ]; then
			lab_nap 0.3
		else
			lab_nap 3
		fi
		lu_pkts rxe0 a0; lu_pkts rxe1 a1
		lab_nap 1.5
		lu_pkts rxe0 b0; lu_pkts rxe1 b1
		for tag; do
			echo "$((b0 - a0)) $((b1 - a1))" > "$FT_TMP/$tag.after"
		done
	fi
	lu_refused e1
	for tag; do
		echo "$((e1 - e0))" > "$FT_TMP/$tag.refused"
	done
}

# lu_pull_rts N: until host 1's rxe0 holds N RC QPs in RTS, 60 s at most
# (rdma's view): lu_pull's N clients have connected.  A move to RTR needs
# the peer's MAC, which a pulled rail cannot resolve, library or not: a
# pull 5 s in came before a client's RTR beside six busy guests ("Failed
# to modify QP to RTR", 2026-12-01), and 30 s were not enough beside eight
# (2026-12-02).  A pair of many QPs stands for the others (failover_srq's
# shared pair, 16): waiting for each pair's own QP, by its program's pid,
# made the pull come 15 s to 35 s after the start beside other guests,
# when the pingpongs sized to about 18 s were ending (lab, 2026-12-02), so
# the count stays.  Said when it waited.
lu_pull_rts()
{
	local t0=$EPOCHREALTIME n looks=0

	while :; do
		n=$(rdma res show qp link rxe0/1 2> /dev/null | grep -c 'type RC state RTS' || true)
		looks=$((looks + 1))
		[ "$n" -lt "$1" ] && [ "$(lu_ms "$t0")" -lt 60000 ] || break
		lab_nap 0.2
	done
	[ "$looks" = 1 ] ||
		log "lu_pull: $n of $1 clients' QPs in RTS after $(lu_ms "$t0") ms more"
}

# lu_pull_ready TAG...: lu_pull's start with LU_PULL_AT=ready, for a ride
# that need not wait a fixed 5 s: once host 1's rxe0 has sent 200 packets
# from the call on (the clients move data) and, in a ride with the library
# (LU_RIDE_PRE, as lu_cli and lu_group_ride set it, not 0), each client's
# library has logged LU_PULL_QPS (1) of its QPs protected (their twins
# connected to the peer's), or the clients LU_PULL_PROTECTED in all, for
# pairs of different QP counts, then LU_PULL_SETTLE (1 s) for the peer's
# side;
# 30 s at most (a pull before the twins are ready tests nothing: beside
# the other lanes' guests, four preloaded pairs were protected 10 s after
# their start, make check 2026-12-02).  TAG.ready: the ms waited.
lu_pull_ready()
{
	local t0=$EPOCHREALTIME p0 p want=0 tag

	[ "${LU_RIDE_PRE:-0}" = 0 ] || want=${LU_PULL_PROTECTED:-$(($# * ${LU_PULL_QPS:-1}))}
	lu_pkts rxe0 p0
	while [ "$(lu_ms "$t0")" -lt 30000 ]; do
		lu_pkts rxe0 p
		if [ $((p - p0)) -ge 200 ] && [ "$(lu_count 'protected by qp' "$@")" -ge "$want" ]; then
			lab_nap "${LU_PULL_SETTLE:-1}"
			break
		fi
		lab_nap 0.1
	done
	for tag; do
		lu_ms "$t0" > "$FT_TMP/$tag.ready"
	done
}

# lu_moves TAG...: how many failovers the clients' libraries of the pairs
# TAG... logged in all (grep's count: no other process)
lu_moves()
{
	lu_count 'failed over to qp' "$@"
}

# lu_backs TAG...: how many failbacks they logged in all
lu_backs()
{
	lu_count 'failed back from' "$@"
}

# lu_count RE TAG...: lines matching RE in the clients' libshiftu logs of
# the pairs TAG..., in all: one grep for them all (a process costs tens of
# milliseconds beside the pollers, and a wait looks every 0.2 s)
lu_count()
{
	local re=$1 files=() line s=0 tag
	shift

	for tag; do
		files+=("$FT_TMP/$tag.cli.shiftu")
	done
	while IFS= read -r line; do
		s=$((s + ${line##*:}))
	done < <(grep -cH -- "$re" "${files[@]}" 2> /dev/null)
	echo "$s"
}

# lu_backs_both TAG: how many of pair TAG's two libraries, the client's and
# the server's, logged a failback, 0 to 2
lu_backs_both()
{
	local n=0

	grep -q 'failed back from' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && n=$((n + 1))
	lu_peer_run "grep -q 'failed back from' $LU_RDIR/$1.srv.shiftu" && n=$((n + 1))
	echo "$n"
}

# lu_wait_backs N SECS TAG...: until the clients' libraries of the pairs
# TAG... logged N failbacks in all, SECS at most; TAG.fbdone (each TAG's):
# the failbacks seen and the ms waited.  A rider that ends its run once
# its QPs are back (lu_end) then waits out no fixed length.
lu_wait_backs()
{
	local n=$1 secs=$2 t0=$EPOCHREALTIME tag
	shift 2

	while [ "$(lu_backs "$@")" -lt "$n" ] && [ "$(lu_ms "$t0")" -lt $((secs * 1000)) ]; do
		lab_nap 0.2
	done
	for tag; do
		echo "$(lu_backs "$tag") $(lu_ms "$t0")" > "$FT_TMP/$tag.fbdone"
	done
}

# lu_end PIDS PROG: end the run of perftest PROG, a child of each of PIDS
# (a comma-separated list of timeout's, as lu_cli and lu_bg_start start
# it): SIGALRM, perftest's own end of a duration (-D), which then stops
# sampling and ends its run within its margin (2 s), printing its result
# as at the end of -D; or SIGUSR1 for shiftgen (and shiftgen_dl), whose
# next message is then its last.  -D stays the bound of a run that never
# gets there.
lu_end()
{
	local sig=ALRM

	# shiftgen's own: its next message is its last
	[ "${2#shiftgen}" = "$2" ] || sig=USR1
	pkill -"$sig" -P "$1" -x "$2" || true
}

# lu_lib_urgent: every thread of libshiftu's on both hosts (thread.h names
# them shiftu*) at niceness -10, as lu_urgent does for a test's own steps
# and smr_redis_start for the store (SMR_REDIS_NICE): beside dozens of an
# application's pollers on the guest's one CPU, which is also the NIC, a
# pass of the backup thread's took seconds (64 QPs: a failback request
# answered 5 s after the repair and the probes seen 12 s after that).  A
# job's library runs beside pollers that leave it a core (many cores).
# Threads started later (backers) keep the default.
# shellcheck disable=SC2016 # run here and by host 2's shell alike
LU_LIB_URGENT='t=; for d in /proc/[0-9]*/task/[0-9]*; do { read -r c < "$d/comm"; } 2> /dev/null || continue; case $c in shiftu*) t="$t ${d##*/}" ;; esac; done; [ -z "$t" ] || renice -n -10 -p $t > /dev/null 2>&1; true'
lu_lib_urgent()
{
	eval "$LU_LIB_URGENT"
	lu_peer_run "$LU_LIB_URGENT" || true
}

# lu_urgent: this (sub)shell and what it starts from now on at niceness
# -10.  At 0, beside a job's pollers on the guest's one CPU, each step of a
# pull's (a grep, a nap) took seconds: a pull meant for 1 s after the last
# twin was ready came 28 s after it (many_gen), a repair meant for 15 s
# into a run came 23 s into it (many_qps).
lu_urgent()
{
	renice -n -10 -p "$BASHPID" > /dev/null
}

# lu_pull_urgent TAG...: lu_pull in a subshell of its own, urgent (a LU_DURING
# command: the test's shell, and the processes it starts after, keep their
# niceness)
lu_pull_urgent()
(
	lu_urgent
	lu_pull "$@"
)

# lu_ride_ok TAG SIZE: the unmodified perftest pair TAG, preloaded on both
# hosts, rode lu_pull's outage (lu_rode): both sides exited 0, the client
# printed a result line for SIZE bytes, its QP failed over to rxe1 and back
# once, rail 1 carried host 1's packets during the outage and rail 0 after
# the repair.
lu_ride_ok()
{
	lu_rode "$1"
	[ -n "$(awk -v s="$2" '$1 == s && NF >= 4' "$FT_TMP/$1.cli.out")" ] ||
		lu_fail "$1" "no result line from the client"
}

# lu_group_ride TAG...: the pairs TAG..., started by lu_bg_start (each
# collected as its own LU_BG_PRE was, TAG.pre; a pull takes LU_BG_PRE's
# now) with LU_BG_GATE set to lu_group_gate's file:
# their clients start together, then go through one lu_pull (urgent:
# beside their pollers the pull's steps would lag), then the clients of
# the pairs LU_GROUP_END (words) are ended (lu_end), and the servers of
# those LU_GROUP_END_SRV (SIGALRM), then all are collected (lu_bg_wait).
# One outage rides several programs: a pull's timeline (some 11 s) is the
# same for one pair as for three, and the guests' CPU is shared
# meanwhile, not left idle.  Started one after the other, each
# pair's start waited seconds for the pollers of those before it.  With
# LU_GROUP_PULL=0, no pull: the pairs only run together.
lu_group_ride()
{
	local tag t0 ends

	touch "$LU_BG_GATE"
	LU_BG_GATE=
	if [ "${LU_GROUP_PULL:-1}" = 1 ]; then
		LU_RIDE_PRE=${LU_BG_PRE:-1} lu_pull_urgent "$@"
	fi
	# LU_GROUP_END: the pairs whose clients end once the pull is over;
	# LU_GROUP_END_SRV: those whose servers too (a perftest server that
	# times -D itself: ib_send_bw's, from its first message, and a
	# latency test's; ib_read_bw's and ib_write_bw's end with their
	# client, and take SIGALRM for a kill)
	for tag in ${LU_GROUP_END:-}; do
		lu_end "$(cat "$FT_TMP/$tag.cli.pid")" "$(cat "$FT_TMP/$tag.prog")"
	done
	ends=
	for tag in ${LU_GROUP_END_SRV:-}; do
		ends+="pkill -ALRM -s $(cat "$FT_TMP/$tag.srv.sid") -x $(cat "$FT_TMP/$tag.prog"); "
	done
	[ -z "$ends" ] || lu_peer_run "$ends true" || true
	t0=$EPOCHREALTIME
	for tag; do
		lu_bg_wait "$tag" "$(cat "$FT_TMP/$tag.pre")"
	done
	[ -z "${LU_GROUP_END:-}" ] ||
		log "lu_group_ride: the pairs ended $(lu_ms "$t0") ms after their clients were told to"
}

# lu_group_gate: LU_BG_GATE set to a new gate file for lu_group_ride
lu_group_gate()
{
	LU_BG_GATE=$FT_TMP/gate.$((++LU_GATES))
	rm -f "$LU_BG_GATE"
}
LU_GATES=0

# lu_rode TAG: the pair TAG rode lu_pull's outage: both sides exited 0, the
# client's QP failed over to rxe1 and back once, both sides' libraries saw
# it through, a completion made on a twin reached the program on one side
# at least, rail 1 carried host 1's packets during the outage and rail 0
# after the repair.
lu_rode()
{
	local tag=$1 s0 s1 r0 r1 off on

	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	read -r off on < "$FT_TMP/$tag.times"
	log "$tag: host $LU_PULL_ON's rail 0 down by $LU_PULL_BY from $off ms to $on ms after the client's start; packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1 (the test saw the client's failback $(cat "$FT_TMP/$tag.fbwait") ms after the repair)"
	lu_exited_ok "$tag"
	grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail over"
	grep -q 'failed back from rxe1' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail back"
	lu_check_log "$tag" cli "failovers=1" "failbacks=1" "twin_wcs>=0"
	lu_check_log "$tag" srv "qps>=1" "twin_wcs>=0"
	# a completion made on a twin reached the program, on either side: a
	# client that signals one send in 100 (ib_send_bw -e) may have none
	# on its twin when the outage carried fewer (74 on a slow machine);
	# its server's receives each have one
	[ $(($(lu_stat "$FT_TMP/$tag.cli.shiftu" twin_wcs) + $(lu_stat "$FT_TMP/$tag.srv.shiftu" twin_wcs))) -gt 0 ] ||
		lu_fail "$tag" "no completion made on a twin reached the program on either side"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
	log "$tag: $(grep -o 'failed over to qp.*' "$FT_TMP/$tag.cli.shiftu")"
	log "$tag: $(grep -o 'failed back from.*' "$FT_TMP/$tag.cli.shiftu")"
}

# lu_pp_pair TAG PRE PROG ARGS...: one of rdma-core's ibv_*_pingpong, its
# server on host 2 (-g its GID index) and its client on host 1, over rail
# 0, TCP over mgmt on a port of their own, both preloaded (PRE=1) or
# neither, LU_DURING run meanwhile as lu_pair does; the same files in
# $FT_TMP as lu_pair.
lu_pp_pair()
{
	local tag=$1 pre=$2 prog=$3 port=$LU_PORT
	shift 3
	LU_PORT=$((LU_PORT + 1))

	rm -f "$FT_TMP/$tag".*
	LU_GIDX_OPT=-g lu_srv_start "$tag" "$pre" 120 "$prog" "$port" "$@"
	LU_CLI_SECS=100 lu_cli "$tag" "$pre" "$prog" -d rxe0 -g "$LU_GIDX" -p "$port" "$@" "$LU_TCP"
}

# lu_pp_line TAG: the pingpong client's "N iters in T seconds" line.
lu_pp_line()
{
	grep -m1 'iters in' "$FT_TMP/$1.cli.out" || echo "(no result line)"
}

# lu_pp_iters TAG SECS [MIN]: sets ITERS to how many iterations (MIN, 2000
# unless given, at least) last SECS at the pace of the pingpong pair TAG,
# which ran unpulled; fails if TAG printed no pace.
lu_pp_iters()
{
	local usec

	usec=$(sed -n 's/^.* = \([0-9.]*\) usec\/iter.*$/\1/p' "$FT_TMP/$1.cli.out")
	usec=${usec%%.*}
	if [ -z "$usec" ] || [ "$usec" -le 0 ]; then
		lu_fail "$1" "no usec/iter in the client's output"
	fi
	ITERS=$(($2 * 1000000 / usec))
	[ "$ITERS" -ge "${3:-2000}" ] || ITERS=${3:-2000}
}

# lu_keep TAG DIR: when the test ends, passed or not, the files of the pair
# TAG (host 2's libshiftu log fetched if lu_pair did not get that far) are
# kept in $FT_OUT/DIR (lab: the run's out/), for a look after the run.
lu_keep()
{
	ft_defer lu_keep_now "$1" "$2"
}

lu_keep_now()
{
	mkdir -p "$FT_OUT/$2"
	cp "$FT_TMP/$1".* "$FT_OUT/$2/" 2> /dev/null
	[ -s "$FT_OUT/$2/$1.srv.shiftu" ] ||
		lab-peer "cat $LU_RDIR/$1.srv.shiftu" > "$FT_OUT/$2/$1.srv.shiftu" 2> /dev/null
	return 0
}

# lu_rides ON SUFFIX [events]: ib_send_bw, ib_read_bw and ib_write_lat
# together (lu_group_ride), preloaded, through host ON's rail 0 going down
# by QEMU's set_link, then by ip link; each rides as lu_ride_ok says.  The
# pull comes once the clients are protected and moving data
# (LU_PULL_AT=ready), the repair about 3 s later, the after-window ends 2
# s after every client has failed back, and the runs are ended then
# (LU_GROUP_END, and LU_GROUP_END_SRV for the servers that time -D
# themselves): their -D 45 (with a margin of 2 s, -f 2) only bounds
# them.  (A fixed 15 s was too short on a slower machine, whose failbacks
# came 12 s to 14 s after the repair: make check, 2026-12-01.)  With
# "events", ib_send_bw -e (completions by event, where perftest refuses
# -D: 3,500 messages, some 15 s beside the others, over 100 s on a slower
# machine in make check: 150 s and its timeout's 40 s for them) rides the
# first pull too.  The tags end in SUFFIX, and _ip for ip link.
lu_rides()
{
	local by sfx run prog size tag tags ends srvs

	LU_PULL_ON=$1
	for by in link ip; do
		LU_PULL_BY=$by sfx=$2 tags=()
		[ "$by" = link ] || sfx=${2}_ip
		lu_group_gate
		for run in send_bw:ib_send_bw read_bw:ib_read_bw write_lat:ib_write_lat; do
			tag=${run%%:*}$sfx prog=${run#*:}
			lu_keep "$tag" rides
			lu_bg_start "$tag" 45 "$prog" -F -D 45 -f 2
			tags+=("$tag")
		done
		ends="${tags[*]}" srvs="send_bw$sfx write_lat$sfx"
		if [ "${3:-}" = events ] && [ "$by" = link ]; then
			lu_keep "send_bw_events$sfx" rides
			lu_bg_start "send_bw_events$sfx" 150 ib_send_bw -F -e -n 3500
			tags+=("send_bw_events$sfx")
		fi
		LU_PULL_AT=ready LU_GROUP_END=$ends LU_GROUP_END_SRV=$srvs lu_group_ride "${tags[@]}"
		for tag in "${tags[@]}"; do
			size=65536
			[ "${tag#write_lat}" = "$tag" ] || size=2
			lu_ride_ok "$tag" "$size"
		done
	done
}

# lu_pair TAG PRELOAD PROG ARGS...: PROG's server on host 2 and its client
# on host 1, over rail 0 (rxe0, 10.0.0.x; TCP over mgmt), on a TCP port of
# their own, both preloaded or neither; the client also gets the words of
# LU_CLI_ENV (VAR=VALUE) and LU_CLI_ARGS (after ARGS), the server the words
# of LU_SRV_ENV; the server is ended after LU_SRV_SECS (90 s).  Leaves in $FT_TMP:
# TAG.cli.out, TAG.cli.rc, TAG.srv.out, TAG.srv.rc and, when preloaded,
# TAG.cli.shiftu and TAG.srv.shiftu (the libshiftu logs; the server's
# fetched from host 2).
# Fails only when the pair could not be run; the caller judges the results.
lu_pair()
{
	local tag=$1 pre=$2 prog=$3 port=$LU_PORT
	shift 3
	LU_PORT=$((LU_PORT + 1))

	rm -f "$FT_TMP/$tag".*
	lu_srv_start "$tag" "$pre" "${LU_SRV_SECS:-90}" "$prog" "$port" "$@"

	# shellcheck disable=SC2086 # LU_CLI_ARGS: words
	lu_cli "$tag" "$pre" "$prog" -d rxe0 -x "$LU_GIDX" -p "$port" "$@" ${LU_CLI_ARGS:-} "$LU_TCP"
}

# lu_cli TAG PRE CMD...: the client of the pair TAG, whose server runs on
# host 2 (LU_SRV_PID): CMD here, with the library as PRE says (lu_env) and
# the words of LU_CLI_ENV, ended after LU_CLI_SECS (60 s), LU_DURING run
# meanwhile (LU_RIDE_PRE set to PRE for it) and, with LU_RIDE_END=1, CMD's
# run ended once that returned (lu_end: its -D only bounds it); then
# the server's results.  Leaves TAG.cli.{out,rc,shiftu} and TAG.srv.* in
# $FT_TMP, as lu_pair says.
lu_cli()
{
	local tag=$1 pre=$2 rc=0 cpid
	shift 2

	# timeout before env, as on host 2; with LU_DURING set, that command
	# runs while the client does (pulling cables, say)
	# shellcheck disable=SC2046 # lu_env's words are separate arguments
	# shellcheck disable=SC2086 # LU_CLI_ENV: words
	timeout "${LU_CLI_SECS:-60}" $(lu_env "$pre" "$FT_TMP/$tag.cli.shiftu") ${LU_CLI_ENV:-} "$@" \
		> "$FT_TMP/$tag.cli.out" 2>&1 &
	cpid=$!
	if [ -n "${LU_DURING:-}" ]; then
		LU_RIDE_PRE=$pre $LU_DURING "$tag" || { wait; fail "$tag: $LU_DURING failed"; }
		[ "${LU_RIDE_END:-0}" = 0 ] || lu_end "$cpid" "${1##*/}"
	fi
	wait $cpid || rc=$?
	echo "$rc" > "$FT_TMP/$tag.cli.rc"

	if lu_srv_collect "$tag" "$pre"; then
		LU_SRV_PID=
	else
		lu_kill_server
	fi
	return 0
}

# lu_srv_start TAG PRE SECS PROG PORT ARGS...: the server of the pair TAG
# on host 2, PROG -d rxe0 -x GIDX -p PORT ARGS (perftest's and shiftgen's
# words; LU_GIDX_OPT for another program's GID index option), with the
# library as PRE says (lu_env), ended after SECS.  Returns once it listens
# on PORT, with LU_SRV_STARTED set (lu_srv_spawn).
LU_SRV_STARTED=
lu_srv_start()
{
	local tag=$1 pre=$2 secs=$3 prog=$4 port=$5
	shift 5

	lu_srv_spawn "$tag" "$pre" "$secs" "$prog -d rxe0 ${LU_GIDX_OPT:--x} $LU_RGIDX -p $port $*"
	if ! lu_peer_run "(for i in \$(seq 200); do ss -ltn | grep -q ':$port ' && exit 0; sleep 0.05; done; exit 1)"; then
		lu_peer_out "cat $LU_RDIR/$tag.srv.out" | sed 's/^/# [host2] /'
		fail "$tag: the $prog server on host 2 did not listen on port $port"
	fi
}

# lu_srv_spawn TAG PRE SECS CMD: CMD (one string) started on host 2 as the
# server of the pair TAG, with the library as PRE says, ended after SECS;
# its output and status go to host 2's LU_RDIR (lu_srv_collect fetches
# them).  LU_SRV_STARTED and LU_SRV_PID: its pid, which is also its process
# group's (setsid).
lu_srv_spawn()
{
	local tag=$1 pre=$2 secs=$3 cmd pid

	# timeout before env: only CMD runs with the library; --foreground
	# keeps it in setsid's process group
	cmd="timeout --foreground $secs $(lu_env "$pre" "$LU_RDIR/$tag.srv.shiftu")${LU_SRV_ENV:+ $LU_SRV_ENV} $4 > $LU_RDIR/$tag.srv.out 2>&1; echo \$? > $LU_RDIR/$tag.srv.rc"
	pid=$(lu_peer_out "setsid bash -c $(printf %q "$cmd") < /dev/null > /dev/null 2>&1 & echo \$!") || pid=
	[ -n "$pid" ] || fail "$tag: could not start its server on host 2: $4"
	LU_SRV_STARTED=$pid LU_SRV_PID=$pid
}

# lu_srv_collect TAG PRE: once the client of the pair TAG is done, its
# server's status (it ends by itself within 30 s, else "none"), output and,
# if preloaded (PRE not 0), libshiftu log, into $FT_TMP/TAG.srv.{rc,out,shiftu}.
# Returns 1 when the server did not end.
lu_srv_collect()
{
	local tag=$1 pre=$2 rrc=$LU_RDIR/$1.srv.rc

	lu_peer_out "(for i in \$(seq 600); do [ -s $rrc ] && exec cat $rrc; sleep 0.05; done; echo none)" \
		> "$FT_TMP/$tag.srv.rc" || fail "$tag: no server status from host 2"
	lu_peer_out "cat $LU_RDIR/$tag.srv.out" > "$FT_TMP/$tag.srv.out" || true
	if [ "$pre" != 0 ]; then
		lu_peer_out "cat $LU_RDIR/$tag.srv.shiftu" > "$FT_TMP/$tag.srv.shiftu" ||
			rm -f "$FT_TMP/$tag.srv.shiftu"
	fi
	[ "$(cat "$FT_TMP/$tag.srv.rc")" != none ]
}

# lu_srv_collect_all PRE TAG...: lu_srv_collect for the servers of the
# pairs TAG... together, in one call to host 2's shell where each pair's
# takes three (a call costs a quarter of a second beside the pollers): once
# they all ended (30 s at most), their status, output and log.  A server
# that did not end leaves "none" in its TAG.srv.rc.
lu_srv_collect_all()
{
	local pre=$1 tag list=''
	shift

	for tag; do
		list+=" $tag"
	done
	lu_peer_out "(for i in \$(seq 600); do n=0; for t in$list; do [ -s $LU_RDIR/\$t.srv.rc ] && n=\$((n + 1)); done; [ \$n = $# ] && exit; sleep 0.05; done); for t in$list; do for k in rc out shiftu; do echo \"@@lu \$t.srv.\$k\"; cat $LU_RDIR/\$t.srv.\$k || { [ \$k != rc ] || echo none; }; done; done" \
		> "$FT_TMP/srv_all.out" || fail "$1: no server status from host 2"
	awk -v d="$FT_TMP" '/^@@lu / { f = d "/" $2; printf "" > f; next } f { print > f }' "$FT_TMP/srv_all.out"
	for tag; do
		if [ "$pre" = 0 ] || [ ! -s "$FT_TMP/$tag.srv.shiftu" ]; then
			rm -f "$FT_TMP/$tag.srv.shiftu"
		fi
	done
}

# lu_bg_start TAG SECS PROG ARGS...: a PROG pair like lu_pair's, preloaded
# (or as LU_BG_PRE says: lu_env), left running in the background for about
# SECS; the client's ARGS are the server's too (LU_GIDX_OPT: as lu_srv_start
# says, for both).  With LU_BG_GATE set, the client starts only once that
# file exists (lu_group_ride).  lu_bg_wait TAG [PRE] collects it into the
# same files as lu_pair (PRE: as started, 1 unless given).
lu_bg_start()
{
	local tag=$1 secs=$2 prog=$3 port=$LU_PORT
	shift 3
	LU_PORT=$((LU_PORT + 1))

	rm -f "$FT_TMP/$tag".*
	lu_srv_start "$tag" "${LU_BG_PRE:-1}" $((secs + 60)) "$prog" "$port" "$@"
	ft_defer "lu_peer_try 'kill -- -$LU_SRV_STARTED' 2> /dev/null"
	# the subshell waits for LU_BG_GATE, then becomes timeout (same pid)
	# shellcheck disable=SC2046 # lu_env's words are separate arguments
	(
		while [ -n "${LU_BG_GATE:-}" ] && [ ! -e "$LU_BG_GATE" ]; do
			sleep 0.05
		done
		exec timeout $((secs + 40)) $(lu_env "${LU_BG_PRE:-1}" "$FT_TMP/$tag.cli.shiftu") \
			"$prog" -d rxe0 "${LU_GIDX_OPT:--x}" "$LU_GIDX" -p "$port" "$@" "$LU_TCP"
	) > "$FT_TMP/$tag.cli.out" 2>&1 &
	echo $! > "$FT_TMP/$tag.cli.pid"
	echo "${prog##*/}" > "$FT_TMP/$tag.prog"
	echo "$LU_SRV_STARTED" > "$FT_TMP/$tag.srv.sid"
	echo "${LU_BG_PRE:-1}" > "$FT_TMP/$tag.pre"
	lu_stuck_watch "$tag" $((secs + 25)) "$LU_BG_GATE" &
}

# lu_stuck_watch TAG SECS GATE: once GATE exists (none: at once), if the
# client of the pair TAG still runs SECS seconds later, 15 s before its
# timeout kills it, both hosts' view of their RC QPs on rxe0 and rxe1
# (rdma -d: states and PSNs) goes to TAG.stuck, host 1's twice around
# host 2's: a pair whose PSNs moved in between was slow, not stalled.
# host 2 answers seconds later on a loaded lab, so its PSNs are not those
# of host 1's moment (session 38 took such a difference for a stall of
# failover_srq's srq.1, 2026-12-02).  lab-peer, not the test's peer
# shell, whose answers this would take.
lu_stuck_watch()
{
	local tag=$1 secs=$2 gate=$3 pid t0 cmd

	cmd='for d in rxe0 rxe1; do rdma -d res show qp link $d/1 2>&1 | grep "type RC" || true; done'
	pid=$(cat "$FT_TMP/$tag.cli.pid")
	while [ -n "$gate" ] && [ ! -e "$gate" ]; do
		kill -0 "$pid" 2> /dev/null || return 0
		sleep 0.2
	done
	t0=$SECONDS
	while kill -0 "$pid" 2> /dev/null; do
		if [ $((SECONDS - t0)) -ge "$secs" ]; then
			{
				echo "host 1, ${secs} s after the start:"
				eval "$cmd"
				echo "host 2, $((SECONDS - t0)) s after it:"
				timeout 12 lab-peer "$cmd" || echo "(no answer: $?)"
				echo "host 1, $((SECONDS - t0)) s after it:"
				eval "$cmd"
			} > "$FT_TMP/$tag.stuck" 2>&1
			return 0
		fi
		sleep 1
	done
}

lu_bg_wait()
{
	local tag=$1 rc=0

	wait "$(cat "$FT_TMP/$tag.cli.pid")" || rc=$?
	echo "$rc" > "$FT_TMP/$tag.cli.rc"
	lu_srv_collect "$tag" "${2:-1}" || true
}

# lu_show FILE...: files as comments, for a failure's context.
lu_show()
{
	local f
	for f in "$@"; do
		[ -f "$f" ] || { log "${f##*/}: (missing)"; continue; }
		sed "s|^|# ${f##*/}: |" "$f" | tail -n "${LU_SHOW_LINES:-40}"
	done
}

# lu_rails_state: once per test, both hosts' view of rail 0 and rail 1
# (link state and counters, neighbours, qdisc, the virtio queues as the
# driver and as QEMU count them, the kernel's last lines), so that a
# failure the lab's network caused tells itself from the library's.
lu_rails_state()
{
	local cmd='for i in eth0 eth1; do ip -s -o link show $i; ip neigh show dev $i; tc -s qdisc show dev $i | tr "\n" " "; echo; ethtool -S $i | grep -E "tx_queue_0_(packets|kicks|tx_timeouts)|rx_queue_0_(packets|kicks)" | tr -s " \n" "  "; echo; echo "QEMU: $(lab_virtq $i 2>&1)"; done; grep -E "virtio[0-9]+-(input|output)" /proc/interrupts | tr -s " "; dmesg | tail -n 5'

	[ -z "${LU_RAILS_SHOWN:-}" ] || return 0
	LU_RAILS_SHOWN=1
	eval "$cmd" 2>&1 | sed 's|^|# host 1 rails: |'
	[ -z "${LU_PEER_FD:-}" ] ||
		lu_peer_out "$cmd" 2>&1 | sed 's|^|# host 2 rails: |' || true
}

# lu_fail TAG MESSAGE: show what the pair TAG left, then fail.  The
# client's files come last, its program's own output last of all, nearest
# the verdict: a log cut to its tail (CI's) keeps the program's error.
lu_fail()
{
	local f
	lu_rails_state
	for f in "$FT_TMP/$1".*; do
		case $f in *.cli.*) ;; *) lu_show "$f" ;; esac
	done
	for f in "$FT_TMP/$1".cli.*; do
		case $f in *.cli.out) ;; *) lu_show "$f" ;; esac
	done
	LU_SHOW_LINES=24 lu_show "$FT_TMP/$1".cli.out
	lu_culprit "$1"
	lu_warns "$1"
	lu_lasts "$1"
	fail "$1: $2"
}

# lu_warns TAG: the first warnings of each side's library in the pair TAG
# (but the unauthenticated store's), last before the verdict: where a log
# cut to its tail (CI's) shows a failure's first cause, of 64 QPs' lines.
lu_warns()
{
	local side

	for side in srv cli; do
		grep -E '^([0-9:.]+ )?libshiftu\[[0-9]+\]: (warn|error): ' "$FT_TMP/$1.$side.shiftu" 2> /dev/null |
			grep -v ': UNAUTHENTICATED records: ' | head -n 6 |
			sed "s|^|# $side warns: |" || true
	done
}

# lu_lasts TAG: each side's last library lines in the pair TAG, cut short:
# what each library did last (a move it waits in, its exit or none), in
# a log cut to its tail beside the other side's warnings.
lu_lasts()
{
	local side

	for side in srv cli; do
		[ -f "$FT_TMP/$1.$side.shiftu" ] || continue
		grep -E '^([0-9:.]+ )?libshiftu\[[0-9]+\]: ' "$FT_TMP/$1.$side.shiftu" |
			tail -n 4 | cut -c1-240 | sed "s|^|# $side last: |" || true
	done
}

# lu_culprit TAG: for a perftest run that printed "Failed status S: wr_id
# K", the libshiftu lines of the QP K on that side and of its peer on the
# other, last, where a failure's tail shows them: perftest's wr_id is the
# QP's index, and its "local address" lines name the QPs in that order.
lu_culprit()
{
	local side other k qpn peer
	for side in cli srv; do
		other=srv; [ $side = srv ] && other=cli
		k=$(sed -n 's/.*Failed status[^:]*: wr_id \([0-9]*\).*/\1/p' \
			"$FT_TMP/$1.$side.out" 2> /dev/null | head -n 1)
		[ -n "$k" ] || continue
		qpn=$(grep -o 'local address: .*QPN 0x[0-9a-f]*' "$FT_TMP/$1.$side.out" |
		      sed -n "$((k + 1))s/.*QPN //p")
		peer=$(grep -o 'remote address: .*QPN 0x[0-9a-f]*' "$FT_TMP/$1.$side.out" |
		       sed -n "$((k + 1))s/.*QPN //p")
		{ [ -n "$qpn" ] && [ -n "$peer" ]; } || continue
		log "$1: $side's QP $k failed: qp $((qpn)), its peer qp $((peer)) on the $other side"
		grep -E "qp $((qpn))([: ]|$)" "$FT_TMP/$1.$side.shiftu" 2> /dev/null |
			tail -n 40 | sed "s|^|# $side qp $((qpn)): |"
		grep -E "qp $((peer))([: ]|$)" "$FT_TMP/$1.$other.shiftu" 2> /dev/null |
			tail -n 40 | sed "s|^|# $other qp $((peer)): |"
	done
	return 0
}

# lu_exit_lines FILE: the "exit:" lines of a libshiftu log.
lu_exit_lines()
{
	grep -E '^([0-9:.]+ )?libshiftu\[[0-9]+\]: info: exit:( |$)' "$1" 2> /dev/null || true
}

# lu_stat FILE KEY: the value of KEY in the "exit:" line of a libshiftu log
# (the last one, if there are several); nothing if there is none.
lu_stat()
{
	lu_exit_lines "$1" | tail -n 1 | awk -v k="$2" '{
		for (i = 4; i <= NF; i++)
			if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit }
	}'
}

# lu_moves_back TAG SIDE: every QP move of SIDE's library (cli or srv) in
# the pair TAG came back: as many failbacks as failovers, but for a last
# failover that began less than LU_BACK_GRACE (default 5) s before the
# library's exit line and after its last failback: a probe had no time to
# bring that one back (a starved guest's QP meeting its transport's limit
# again in the run's last moments; CI saw one 0.5 s before the exit).  The
# exception is logged.  Fails TAG otherwise.
lu_moves_back()
{
	local f=$FT_TMP/$1.$2.shiftu fo fb late

	fo=$(lu_stat "$f" failovers) fb=$(lu_stat "$f" failbacks)
	[ "$fo" != "$fb" ] || return 0
	# seconds from the last failover line to the exit line, if it came
	# after the last failback line; -1 otherwise
	late=$(awk '
		function t(s, a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
		/^[0-9:.]+ libshiftu\[[0-9]+\]: info: (failover|failback): / { last = $4; at = t($1) }
		/^[0-9:.]+ libshiftu\[[0-9]+\]: info: exit:( |$)/ { ex = t($1) }
		END {
			if (last != "failover:" || ex == "") { print -1; exit }
			d = ex - at; if (d < 0) d += 86400
			printf "%.3f\n", d
		}' "$f")
	if [ $((fo - fb)) = 1 ] &&
	   awk -v d="$late" -v g="${LU_BACK_GRACE:-5}" 'BEGIN { exit !(d >= 0 && d < g) }'; then
		log "$1 $2: the last of $fo failovers came ${late} s before the exit, too late to come back"
		return 0
	fi
	lu_fail "$1" "$2: failed over $fo times and back $fb times"
}

# lu_check_log TAG SIDE REQ...: the libshiftu log of SIDE (cli or srv) of
# the pair TAG has one exit line, a "context rxe0: interposed" line, no
# error or warn line, and meets each REQ: KEY>N, KEY>=N or KEY=N, where KEY
# may be a sum (post_send+wr_complete), of the values in the exit line (as
# lu_stat reads them).  One awk reads it all: a process costs tens of
# milliseconds on the lab's guests, and the many-QP tests check 80 logs.
lu_check_log()
{
	local tag=$1 side=$2 f=$FT_TMP/$1.$2.shiftu req out
	shift 2

	[ -s "$f" ] || lu_fail "$tag" "$side: no libshiftu log"
	for req; do
		[[ $req =~ ^[a-z_+]+(\>=|\>|=)[0-9]+$ ]] || fail "bad requirement '$req'"
	done
	out=$(awk -v reqs="$*" '
		/^([0-9:.]+ )?libshiftu\[[0-9]+\]: info: exit:( |$)/ { n++; last = $0 }
		/^([0-9:.]+ )?libshiftu\[[0-9]+\]: info: context rxe0: interposed( |$)/ { ctx = 1 }
		# a store on host 1 without a key: said once, expected
		/: warn: store [^ ]*: UNAUTHENTICATED records: / { next }
		/^([0-9:.]+ )?libshiftu\[[0-9]+\]: (error|warn): / { if (!bad++) first = $0 }
		END {
			if (n != 1) { printf "%d exit lines in the libshiftu log, expected 1\n", n; exit 1 }
			if (!ctx) { print "no \"context rxe0: interposed\" line"; exit 1 }
			# the first of them in the message: a log cut to its tail
			# (as CI shows it) may have lost the line itself
			if (bad) { printf "the library logged %d errors or warnings, first: %s\n", bad, first; exit 1 }
			nf = split(last, w, " ")
			for (i = 4; i <= nf; i++)
				if ((j = index(w[i], "=")) > 1 && !(substr(w[i], 1, j - 1) in v))
					v[substr(w[i], 1, j - 1)] = substr(w[i], j + 1)
			nr = split(reqs, r, " ")
			for (i = 1; i <= nr; i++) {
				match(r[i], /(>=|>|=)/)
				key = substr(r[i], 1, RSTART - 1)
				op = substr(r[i], RSTART, RLENGTH)
				want = substr(r[i], RSTART + RLENGTH) + 0
				got = 0
				nk = split(key, ks, "+")
				for (k = 1; k <= nk; k++) {
					if (!(ks[k] in v) || v[ks[k]] !~ /^[0-9]+$/) {
						printf "exit line has no numeric %s\n", ks[k]
						exit 1
					}
					got += v[ks[k]]
				}
				if (!(op == ">" ? got > want : op == ">=" ? got >= want : got == want)) {
					printf "%s is %.0f, expected %s%.0f\n", key, got, op, want
					exit 1
				}
			}
			sub(/^.*: info: exit: /, "", last)
			print last
		}' "$f") || lu_fail "$tag" "$side: $out"
	log "$tag $side: $out"
}

# lu_result FILE SIZE ITERS: the result line of a perftest output (its
# first two columns are #bytes and #iterations); nothing if there is none.
lu_result()
{
	awk -v s="$2" -v n="$3" '$1 == s && $2 == n && NF >= 5 { print; exit }' "$1"
}

# lu_gen KEY FILE: KEY's value in the shiftgen summary line of FILE (its
# messages read "shiftgen: role=ROLE: ...")
lu_gen()
{
	awk -v k="$1" '/^shiftgen: role=[a-z]+ / { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$2"
}

# lu_gen_clean TAG: the shiftgen pair TAG ended well: both sides exited 0,
# the server counted no lost, duplicated, reordered or corrupt message and
# no error, the client saw no error, and the server's result is ok.
lu_gen_clean()
{
	local tag=$1 k

	lu_exited_ok "$tag"
	for k in lost dup reorder corrupt errors; do
		[ "$(lu_gen $k "$FT_TMP/$tag.srv.out")" = 0 ] ||
			lu_fail "$tag" "server: $k=$(lu_gen $k "$FT_TMP/$tag.srv.out")"
	done
	ft_expect "$tag client errors" "$(lu_gen errors "$FT_TMP/$tag.cli.out")" 0
	ft_expect "$tag server result" "$(lu_gen result "$FT_TMP/$tag.srv.out")" ok
}
