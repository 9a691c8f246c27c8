#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo: shift_ft on two hosts, a cable pulled and plugged back, the health
# table and its events changing (`make demo`, or `lab.sh scenario demo`).
# Runs on host 1; host 2 is driven with lab-peer.
#
#           host 1                              host 2
#     rxe0 ─ eth0 ─────────── rail 0 ─────────── eth0 ─ rxe0
#     rxe1 ─ eth1 ─────────── rail 1 ─────────── eth1 ─ rxe1
#            eth2 ─────────── management ─────── eth2

set -e

ft=$SHIFT_TOP/selftests/shift_ft
ko=$SHIFT_TOP/kmod/shift_ft.ko
fields=dev_name,port_num,netdev,state,down_count,last_event,backup_index,pair_state

step() { printf '\n\033[1m=== %s\033[0m\n' "$*"; }
table() { "$ft/ftpage" ports -f "$fields" | column -t; }

step "loading shift_ft on both hosts"
insmod "$ko"
[ "$LAB_NHOSTS" -gt 1 ] && lab-peer "insmod $ko && echo host 2: loaded"
"$ft/ftpage" wait rxe0 1 state=ACTIVE -t 5000 > /dev/null
"$ft/ftpage" wait rxe1 1 state=ACTIVE -t 5000 > /dev/null
dmesg | grep shift_ft | tail -n 1

step "host 1: the health table as the page shows it (rxe0 and rxe1 back each other up)"
table

step "host 1: live events from the 'events' multicast group"
"$ft/ftnl" monitor > >(sed -u 's/^/  [event] /') &
mon=$!
trap 'kill $mon 2> /dev/null || true' EXIT
sleep 0.5

step "pulling host 1's rail 0 cable from outside (QEMU set_link off)"
lab-link eth0 off
"$ft/ftpage" wait rxe0 1 state=DOWN -t 3000 > /dev/null
sleep 0.5
table

step "plugging it back"
lab-link eth0 on
"$ft/ftpage" wait rxe0 1 state=ACTIVE -t 5000 > /dev/null
sleep 0.5
table

if [ "$LAB_NHOSTS" -gt 1 ]; then
	step "host 2 loses rail 1 (pulled from outside); host 2's table"
	lab-peer "lab-link eth1 off && $ft/ftpage wait rxe1 1 state=DOWN -t 3000 >/dev/null && $ft/ftpage ports -f $fields | column -t"
	lab-peer "lab-link eth1 on && $ft/ftpage wait rxe1 1 state=ACTIVE -t 5000 >/dev/null"
	echo "  host 2's rail 1 is back"
fi

kill $mon
step "timing five more pulls of host 1's rail 0, a second apart (ftflap)"
"$ft/ftflap" -n 5 -s 1100 -i eth0 -d rxe0 -p 1 cable | sed 's/^# /  /'

step "done: every change above was one seqcount section on the page and one multicast message"
