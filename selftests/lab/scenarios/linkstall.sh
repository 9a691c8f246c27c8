#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# linkstall: pull host 1's rail 0 with QEMU's set_link again and again under
# Soft-RoCE traffic without the library, and stop at the first pull after
# which rail 0 carries nothing (`lab.sh scenario linkstall two`).
# LINKSTALL_PULLS (default 40) pulls; the traffic is one ibv_rc_pingpong
# pair, or with LINKSTALL_LOAD=N N ib_write_bw pairs of 64 KiB WRITEs (the
# load under which many_procs.sh saw stalls).  On a stall, both guests'
# and QEMU's view of eth0 are printed and the scenario holds
# LINKSTALL_HOLD seconds (default 0) so QEMU can be asked from outside
# (lab.sh monitor 1).

set -e
. lab-lib.sh

PULLS=${LINKSTALL_PULLS:-40}
HOLD=${LINKSTALL_HOLD:-0}
LOAD=${LINKSTALL_LOAD:-0}
GIX=$(lab_gid_index rxe0)

# start_traffic: the pair(s) on rail 0, servers on host 2; sets CLIENTS
start_traffic()
{
	local p

	CLIENTS=()
	if [ "$LOAD" -eq 0 ]; then
		lab-peer "pkill -x ibv_rc_pingpong; true"
		lab-peer --bg "ibv_rc_pingpong -d rxe0 -g $GIX -n 1000000 -s 4096" >/dev/null
		lab_nap 1
		ibv_rc_pingpong -d rxe0 -g "$GIX" -n 1000000 -s 4096 10.0.0.2 \
			>/tmp/linkstall.log 2>&1 &
		CLIENTS+=($!)
		return
	fi
	lab-peer "pkill -x ib_write_bw; while pgrep -x ib_write_bw > /dev/null; do sleep 0.2; done"
	for p in $(seq 18600 $((18600 + LOAD - 1))); do
		lab-peer --bg "timeout 40 ib_write_bw -d rxe0 -x $GIX -p $p -F -s 65536 -D 10" >/dev/null
	done
	lab_nap 2
	for p in $(seq 18600 $((18600 + LOAD - 1))); do
		timeout 40 ib_write_bw -d rxe0 -x "$GIX" -p "$p" -F -s 65536 -D 10 10.0.2.2 \
			>/tmp/linkstall.$p.log 2>&1 &
		CLIENTS+=($!)
	done
}

diag()
{
	echo "== $1"
	ip -s link show eth0
	ip neigh show dev eth0
	tc -s qdisc show dev eth0
	ethtool -S eth0 2>&1
	grep . /sys/class/net/eth0/queues/tx-0/tx_timeout \
		/sys/class/net/eth0/carrier /sys/class/net/eth0/operstate
	grep virtio /proc/interrupts
	lab_virtq eth0
}

for i in $(seq 1 "$PULLS"); do
	start_traffic
	# the pull comes once rail 0 carries the traffic (a port found down
	# at start-up fails perftest), then 0-2 s later
	read -r tx0 </sys/class/net/eth0/statistics/tx_packets
	for _ in $(seq 200); do
		read -r tx1 </sys/class/net/eth0/statistics/tx_packets
		[ $((tx1 - tx0)) -lt 1000 ] || break
		lab_nap 0.1
	done
	lab_nap "$((RANDOM % 3)).$((RANDOM % 10))"
	read -r tx0 </sys/class/net/eth0/statistics/tx_packets
	lab_link eth0 off
	lab_nap 2.7
	lab_link eth0 on
	lab_nap 4
	# ibv_rc_pingpong runs until killed; the ib_write_bw clients end by
	# themselves (-D 10), so that their servers do too
	[ "$LOAD" -gt 0 ] || kill "${CLIENTS[@]}" 2>/dev/null || true
	rcs=
	for c in "${!CLIENTS[@]}"; do
		if wait "${CLIENTS[c]}" 2>/dev/null; then
			rcs+=0
		else
			rcs+=1
			[ "$LOAD" -eq 0 ] || [ -n "${failed:-}" ] ||
				failed=$(tail -n 2 "/tmp/linkstall.$((18600 + c)).log" | tr '\n' ' ')
		fi
	done
	[ -z "${failed:-}" ] || echo "pull $i: a client failed: $failed"
	failed=
	read -r tx1 </sys/class/net/eth0/statistics/tx_packets
	if ping -c 3 -W 1 -I eth0 10.0.0.2 >/dev/null 2>&1; then
		echo "pull $i: rail 0 alive (tx $tx0 -> $tx1; client exits $rcs; QEMU: $(lab_virtq eth0 2>&1))"
		continue
	fi
	lab_nap 5
	if ping -c 3 -W 1 -I eth0 10.0.0.2 >/dev/null 2>&1; then
		echo "pull $i: rail 0 alive after 5 s more (tx $tx0 -> $tx1)"
		continue
	fi
	echo "STALL after pull $i (tx $tx0 -> $tx1)"
	diag "host 1 at the stall"
	lab_nap 3
	diag "host 1 3 s later"
	lab-peer ". lab-lib.sh; $(declare -f diag); diag 'host 2 at the stall'"
	[ "$HOLD" -gt 0 ] && { echo "holding $HOLD s"; lab_nap "$HOLD"; }
	exit 1
done
echo "no stall in $PULLS pulls"
