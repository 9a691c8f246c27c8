#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo: shift_ft and shiftmon on two hosts; cables pulled and plugged back,
# the health table and its live events changing on screen, a failure on
# host 2 reaching host 1's table through the agents, and unmodified
# ib_write_bw under libshiftu riding through a cable pull on its backup NIC
# (`make demo`, or `lab.sh scenario demo`).  Runs on host 1; host 2 is
# driven with lab-peer.
#
#           host 1                              host 2
#     rxe0 ─ eth0 ─────────── rail 0 ─────────── eth0 ─ rxe0
#     rxe1 ─ eth1 ─────────── rail 1 ─────────── eth1 ─ rxe1
#            eth2 ─────────── management ─────── eth2
#            redis-server (10.0.2.1), shiftmon agent    shiftmon agent

set -e

ko=$SHIFT_TOP/kmod/shift_ft.ko
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

	step "libshiftu: unmodified ib_write_bw, preloaded on both hosts; host 1's rail 0 pulled 3 s in, plugged back 4 s later"
	. lab-lib.sh
	lib=$SHIFT_TOP/userlib/libshiftu.so.0
	env="SHIFTU_LOG=info SHIFTU_STORE=$store"
	g1=$(lab_gid_index rxe0)
	g2=$(lab-peer ". lab-lib.sh; lab_gid_index rxe0")
	lab-peer --bg "env LD_PRELOAD=$lib $env SHIFTU_LOG_FILE=/tmp/demo-srv.shiftu \
		ib_write_bw -d rxe0 -x $g2 -p 18800 -s 65536 -D 14 -F > /tmp/demo-srv.out 2>&1" > /dev/null
	sleep 1.5
	env LD_PRELOAD="$lib" $env ib_write_bw -d rxe0 -x "$g1" -p 18800 -s 65536 -D 14 -F \
		10.0.0.2 > /tmp/demo-cli.out 2> >(sed -u 's/^/  [client] /') &
	bw=$!
	pk() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }
	a0=$(pk rxe0) a1=$(pk rxe1)
	for t in $(seq 15); do
		sleep 1
		b0=$(pk rxe0) b1=$(pk rxe1)
		printf '  t=%2ds  packets sent/s  rail 0 (rxe0): %6d   rail 1 (rxe1): %6d\n' \
			"$t" $((b0 - a0)) $((b1 - a1))
		a0=$b0 a1=$b1
		[ "$t" = 3 ] && { echo "  -- pulling host 1's rail 0 --"; lab-link eth0 off; }
		[ "$t" = 7 ] && { echo "  -- plugging it back --"; lab-link eth0 on; }
	done
	wait "$bw" && echo "  ib_write_bw exited 0:" || echo "  ib_write_bw failed:"
	grep -E '^ *65536 ' /tmp/demo-cli.out | sed 's/^/  /'
	"$sm" show pairs
fi

kill "$mon"
step "timing five more pulls of host 1's rail 0, a second apart (ftflap)"
"$ftflap" -n 5 -s 1100 -i eth0 -d rxe0 -p 1 cable | sed 's/^# /  /'

step "done: every change above was one seqcount section on the page and one multicast message"
