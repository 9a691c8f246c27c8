#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rails: with shift_ft loaded on both hosts, each rail carries RDMA WRITEs
# between them (ib_write_bw over rxe0 and over rxe1).
set -e
. "$(dirname "$0")/lib2.sh"

ft2_setup
ft_require_cmd ib_write_bw

for rail in 0 1; do
	dev=rxe$rail
	rip=10.0.$rail.2
	gidx=$(lab_gid_index "$dev") || fail "$dev has no RoCEv2 IPv4 GID"
	rgidx=$(lab-peer ". lab-lib.sh; lab_gid_index $dev") ||
		fail "host 2's $dev has no RoCEv2 IPv4 GID"
	port=$((18515 + rail))
	lab-peer --bg "ib_write_bw -d $dev -x $rgidx -p $port -s 65536 -n 200 -F" > /dev/null
	peer_listening "$port" || fail "ib_write_bw server on host 2 did not start"
	out=$(timeout 60 ib_write_bw -d "$dev" -x "$gidx" -p "$port" -s 65536 \
		-n 200 -F "$rip" 2>&1) || { echo "$out" | sed 's/^/# /'; fail "ib_write_bw over $dev"; }
	bw=$(echo "$out" | awk '$1 == 65536 { print $4 }')
	log "rail $rail ($dev): 200 x 64 KiB WRITEs, average $bw MB/s"
	[ -n "$bw" ] || fail "no bandwidth line from ib_write_bw over $dev"
done
