#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the event worker never undoes a device rename.  While eth1 flaps
# (each flap queues port events, and the worker queries rxe1's port, which
# waits for the RTNL the flaps take), rxe1 is renamed back and forth: every
# PORT_NEW event for its row after a DEVICE_RENAME must carry the new name,
# and the row ends with the name the RDMA core shows.  This is a race: a
# failure shows the bug, but a run may pass without the fix.
#
#   eth1 (down/up in a loop) ── rxe1 <-> rxe8 (renamed ROUNDS times)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
# 40 renames (about 14 s under emulation; 100 took 35 s of make check's
# one-host stage, on each kernel): a stress of the race, not its proof
ROUNDS=${FT_ROUNDS:-40}
idx=$(ft_nl rxe1 1 port_index)
ft_defer "ip link set dev eth1 up"
ft_defer "rdma dev set rxe8 name rxe1"
ft_monitor_start "$FT_TMP/mon"
mon=$FT_MON_PID

flap()
{
	while :; do
		ip link set dev eth1 down
		ip link set dev eth1 up
		sleep 0.01
	done
}
flap > /dev/null 2>&1 &
flapper=$!
ft_defer "kill $flapper"

cur=rxe1
for i in $(seq "$ROUNDS"); do
	next=rxe8
	[ "$cur" = rxe8 ] && next=rxe1
	rdma dev set "$cur" name "$next"
	ft_wait_port "$next" 1 present
	cur=$next
	# land the next rename at another point of the flap cycle
	sleep "0.00$((RANDOM % 10))"
done
kill "$flapper"
wait "$flapper" 2> /dev/null || true
ip link set dev eth1 up
ft_wait_port "$cur" 1 ACTIVE
log "$ROUNDS renames of rxe1 with eth1 flapping"

# the row carries the name the RDMA core has, in the page and on netlink
[ -e "/sys/class/infiniband/$cur" ] || fail "rdma has no $cur"
ft_expect "final name (page)" "$(ft_pg "$cur" 1 port_index)" "$idx"
ft_expect "final name (netlink)" "$(ft_nl "$cur" 1 port_index)" "$idx"

# the events, in the order the table made the changes: after a rename of
# the row, no change of it may carry another name (an OVERRUN loses track
# until the next rename)
"$FTNL" report rxe0 1 fe80::a:1 up app
ft_defer "'$FTNL' path-del rxe0 1 fe80::a:1"
ft_wait_log "$FT_TMP/mon" '$2 == "PATH_NEW" && /\tremote_gid=fe80:0000:0000:0000:0000:0000:000a:0001\t/' ||
	fail "no marker event"
kill "$mon"
bad=$(awk -F'\t' -v idx="$idx" '
	$2 == "OVERRUN" { name = ""; next }
	$2 != "PORT_NEW" { next }
	{
		n = ""; p = ""
		for (i = 4; i <= NF; i++)
			if (index($i, "dev_name=") == 1)
				n = substr($i, 10)
			else if (index($i, "port_index=") == 1)
				p = substr($i, 12)
		if (p != idx)
			next
		if ($3 == "DEVICE_RENAME") { name = n; renames++; next }
		if (name != "" && n != name) { print; exit }
	}
	END { if (renames < 2) print "only " renames + 0 " DEVICE_RENAME events" }' "$FT_TMP/mon")
[ -z "$bad" ] || fail "a rename was undone: $bad"
log "every change of the row after a rename carries the new name ($(grep -c 'DEVICE_RENAME' "$FT_TMP/mon") renames seen)"
exit 0
