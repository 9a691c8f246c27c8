#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo: shift_ft and shiftmon on two hosts; cables pulled and plugged back,
# the health table and its live events changing on screen, a failure on
# host 2 reaching host 1's table through the agents, and unmodified
# ib_write_bw under libshiftu riding through a cable pull on its backup NIC
# and back to the plugged cable (`make demo`, or `lab.sh scenario demo`).
# The demo fails unless ib_write_bw exits 0, rail 1 carried its packets
# during the outage, and rail 0 again after the plug.  Runs on host 1;
# host 2 is driven with lab-peer.
#
#           host 1                              host 2
#     rxe0 ─ eth0 ─────────── rail 0 ─────────── eth0 ─ rxe0
#     rxe1 ─ eth1 ─────────── rail 1 ─────────── eth1 ─ rxe1
#            eth2 ─────────── management ─────── eth2
#            redis-server (10.0.2.1), shiftmon agent    shiftmon agent

set -e

ko=$SHIFT_TOP/build/kmod/$(uname -r)/shift_ft.ko
sm=$SHIFT_TOP/tools/shiftmon/shiftmon
ftflap=$SHIFT_TOP/selftests/shift_ft/ftflap
ftpage=$SHIFT_TOP/selftests/shift_ft/ftpage
store=redis://10.0.2.1:6379
two=$([ "$LAB_NHOSTS" -gt 1 ] && echo yes || true)

step() { printf '\n\033[1m=== %s\033[0m\n' "$*"; }
cleanup()
{
	kill "$mon" "$agent" 2> /dev/null || true
	[ -n "$two" ] && lab-peer "pkill -f 'shiftmon agent'" > /dev/null 2>&1
	redis-cli -h 10.0.2.1 shutdown nosave > /dev/null 2>&1 || true
}
trap cleanup EXIT

# demo_rails PID: host 1's packets sent per second on each rail, by the
# clock, while PID runs (20 s at most); host 1's rail 0 is pulled from
# outside at 3 s and plugged back at 8 s.  Builtins only (lab_nap, read,
# lab_link): the pollers leave the guest little CPU, and a process started
# costs 50-150 ms, which would stretch every second.  Sets DEMO_OUT (rail
# 1's packets while rail 0 was out) and DEMO_BACK (rail 0's from 3 s after
# the plug on).
demo_rails()
{
	local pid=$1 t0=$EPOCHREALTIME t a0 a1 b0 b1 us frac

	DEMO_OUT=0 DEMO_BACK=0
	read -r a0 < /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
	read -r a1 < /sys/class/infiniband/rxe1/ports/1/hw_counters/sent_pkts
	for ((t = 1; t <= 20; t++)); do
		kill -0 "$pid" 2> /dev/null || break
		us=$(( t * 1000000 - (${EPOCHREALTIME//[!0-9]/} - ${t0//[!0-9]/}) ))
		if [ "$us" -gt 0 ]; then
			printf -v frac '%06d' $((us % 1000000))
			lab_nap "$((us / 1000000)).$frac"
		fi
		read -r b0 < /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
		read -r b1 < /sys/class/infiniband/rxe1/ports/1/hw_counters/sent_pkts
		printf '  t=%2ds  packets sent/s  rail 0 (rxe0): %6d   rail 1 (rxe1): %6d\n' \
			"$t" $((b0 - a0)) $((b1 - a1))
		[ "$t" -gt 4 ] && [ "$t" -le 8 ] && DEMO_OUT=$((DEMO_OUT + b1 - a1))
		[ "$t" -gt 11 ] && DEMO_BACK=$((DEMO_BACK + b0 - a0))
		a0=$b0 a1=$b1
		case $t in
		3) echo "  -- pulling host 1's rail 0 (QEMU set_link off) --"
		   lab_link eth0 off ;;
		8) echo "  -- plugging it back --"
		   lab_link eth0 on ;;
		esac
	done
}

# demo_verdict RC: what the ride showed, in one line; fails the demo
# unless ib_write_bw exited RC 0 having moved to rail 1 and back.
demo_verdict()
{
	if [ "$1" = 0 ] && [ "$DEMO_OUT" -gt 1000 ] && [ "$DEMO_BACK" -gt 1000 ] &&
	   grep -q 'failed back' /tmp/demo-cli.shiftu; then
		printf '  \033[32mrode through\033[0m: %d packets on rail 1 while rail 0 was out, %d on rail 0 again from 3 s after the plug, exit 0\n' \
			"$DEMO_OUT" "$DEMO_BACK"
		return 0
	fi
	printf '  \033[31mdid not ride through\033[0m: exit %s, %d packets on rail 1 while rail 0 was out, %d on rail 0 from 3 s after the plug\n' \
		"$1" "$DEMO_OUT" "$DEMO_BACK"
	return 1
}

step "loading shift_ft on both hosts"
insmod "$ko"
[ -n "$two" ] && lab-peer "insmod $ko && echo host 2: loaded"
"$ftpage" wait rxe0 1 state=ACTIVE -t 5000 > /dev/null
"$ftpage" wait rxe1 1 state=ACTIVE -t 5000 > /dev/null
dmesg | grep shift_ft | tail -n 1

step "host 1: shiftmon show (rxe0 and rxe1 back each other up)"
"$sm" show ports
"$sm" show pairs

step "host 1: shiftmon monitor -t, live, below"
"$sm" monitor -t > >(sed -u 's/^/  [monitor] /') &
mon=$!
sleep 0.5

step "pulling host 1's rail 0 cable from outside (QEMU set_link off)"
lab-link eth0 off
"$ftpage" wait rxe0 1 state=DOWN -t 3000 > /dev/null
sleep 0.3
"$sm" show pairs

step "plugging it back"
lab-link eth0 on
"$ftpage" wait rxe0 1 state=ACTIVE -t 5000 > /dev/null
sleep 0.3
"$sm" show pairs

if [ -n "$two" ]; then
	step "the cluster: redis on host 1's management address, an agent on each host"
	redis-server --bind 10.0.2.1 --port 6379 --save '' --appendonly no \
		--protected-mode no --daemonize yes --dir /tmp > /dev/null
	for i in $(seq 100); do
		[ "$(redis-cli -h 10.0.2.1 ping 2> /dev/null)" = PONG ] && break
		sleep 0.05
	done
	"$sm" agent --store "$store" 2> >(sed -u 's/^/  [agent1] /') &
	agent=$!
	lab-peer --bg "exec $sm agent --store $store 2> /tmp/demo-agent2.log" > /dev/null
	sleep 2
	"$sm" show --cluster --store "$store"

	step "host 2 loses rail 0 (pulled from outside); host 1's paths to it, via the agents"
	lab-peer "lab-link eth0 off"
	sleep 1.5
	"$sm" show paths

	step "host 2's rail 0 is plugged back"
	lab-peer "lab-link eth0 on"
	sleep 2
	"$sm" show paths

	step "libshiftu: unmodified ib_write_bw under shiftu-run on both hosts; host 1's rail 0 pulled 3 s in, plugged back at 8 s"
	. lab-lib.sh
	run="$SHIFT_TOP/userlib/shiftu-run -l info -s $store"
	g1=$(lab_gid_index rxe0)
	g2=$(lab-peer ". lab-lib.sh; lab_gid_index rxe0")
	lab-peer --bg "$run -o /tmp/demo-srv.shiftu -- \
		ib_write_bw -d rxe0 -x $g2 -p 18800 -s 65536 -D 16 -F > /tmp/demo-srv.out 2>&1" > /dev/null
	sleep 1.5
	$run -o /tmp/demo-cli.shiftu -- \
		ib_write_bw -d rxe0 -x "$g1" -p 18800 -s 65536 -D 16 -F 10.0.0.2 > /tmp/demo-cli.out 2>&1 &
	bw=$!
	demo_rails "$bw"
	rc=0
	wait "$bw" || rc=$?
	echo "  what shiftu-run said on host 1:"
	grep '^shiftu-run:' /tmp/demo-cli.out | sed 's/^/  /'
	echo "  ib_write_bw exited $rc:"
	grep -E '^ *65536 ' /tmp/demo-cli.out | sed 's/^/  /'
	echo "  what libshiftu said (info lines of both hosts):"
	grep -E 'failed over|failed back|port (down|up)|probe good' /tmp/demo-cli.shiftu |
		sed 's/^/  [host 1] /'
	lab-peer "grep -E 'failed over|failed back|port (down|up)|probe good|exit:' /tmp/demo-srv.shiftu" |
		sed 's/^/  [host 2] /'
	grep 'exit:' /tmp/demo-cli.shiftu | sed 's/^/  [host 1] /'
	demo_verdict "$rc"
	"$sm" show pairs
fi

kill "$mon"
step "timing five more pulls of host 1's rail 0, a second apart (ftflap)"
"$ftflap" -n 5 -s 1100 -i eth0 -d rxe0 -p 1 cable | sed 's/^# /  /'

step "done: every change above was one seqcount section on the page and one multicast message"
