#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo: shift_ft and shiftmon on two hosts; cables pulled and plugged back,
# the health table and its live events changing on screen, and a failure on
# host 2 reaching host 1's table through the agents (`make demo`, or
# `lab.sh scenario demo`).  Runs on host 1; host 2 is driven with lab-peer.
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
fi

kill "$mon"
step "timing five more pulls of host 1's rail 0, a second apart (ftflap)"
"$ftflap" -n 5 -s 1100 -i eth0 -d rxe0 -p 1 cable | sed 's/^# /  /'

step "done: every change above was one seqcount section on the page and one multicast message"
