#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: events other than a port going down or up reach the table too.
# An address added to and removed from a rail changes the port's GID table;
# the row records GID_CHANGE as its last event, counts it, announces it,
# and neither its state nor its down count moves.
#
#   eth0 (+ 10.0.0.77/24, then removed) ── rxe0
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_monitor_start "$FT_TMP/mon"
ft_defer "ip addr del 10.0.0.77/24 dev eth0"

for step in add del; do
	count0=$(ft_pg rxe0 1 event_count)
	down0=$(ft_pg rxe0 1 down_count)
	t0=$(ft_now)
	ip addr "$step" 10.0.0.77/24 dev eth0
	ft_wait_port rxe0 1 last_event=GID_CHANGE
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PORT_NEW\" && \$3 == \"GID_CHANGE\" && /\tdev_name=rxe0\t/" ||
		fail "no PORT_NEW/GID_CHANGE event for address $step"
	ft_expect "state after address $step" "$(ft_pg rxe0 1 state)" ACTIVE
	ft_expect "down_count after address $step" "$(ft_pg rxe0 1 down_count)" "$down0"
	count1=$(ft_pg rxe0 1 event_count)
	[ "$count1" -gt "$count0" ] || fail "event_count did not grow ($count0 -> $count1)"
	log "address $step: GID_CHANGE recorded, event_count $count0 -> $count1"
done
ft_expect "netlink last_event" "$(ft_nl rxe0 1 last_event)" GID_CHANGE
