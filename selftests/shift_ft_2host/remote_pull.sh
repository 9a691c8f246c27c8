#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# remote_pull: a cable pulled on host 2 from outside shows in host 2's
# table and not in host 1's; host 1's path row to host 2's NIC follows the
# reports an agent would relay, and goes DOWN with host 1's own port too.
set -e
. "$(dirname "$0")/lib2.sh"

ft2_setup
rgid=$(ft_gid_of 10.0.0.2)

ft_monitor_start "$FT_TMP/mon"
ft_defer "$FTNL path-del rxe0 1 $rgid"

# host 2 loses rail 0: its table says so, host 1's does not
lab-peer "lab-link eth0 off" || fail "lab-link on host 2"
peer "$FTPAGE wait rxe0 1 state=DOWN -t 3000" > /dev/null ||
	fail "host 2's page never showed rxe0 DOWN"
peer "$FTPAGE wait rxe0 1 pair_state=PRIMARY_DOWN -t 3000" > /dev/null ||
	fail "host 2's rxe0 pair is not PRIMARY_DOWN"
ft_expect "host 1 rxe0 state" "$(ft_pg rxe0 1 state)" ACTIVE

# what an agent relays: host 2's rxe0 is gone
"$FTNL" report rxe0 1 "$rgid" down agent
ft_wait_log "$FT_TMP/mon" '/PATH_NEW/ && /path_state=DOWN/ && /report_source=AGENT/' ||
	fail "no PATH_NEW DOWN event"
row=$("$FTPAGE" paths)
echo "$row" | sed 's/^/# page: /'
echo "$row" | grep -q "path_state=DOWN" || fail "page path row not DOWN"

# host 2 back: the agent says so, the path is UP
lab-peer "lab-link eth0 on"
peer "$FTPAGE wait rxe0 1 state=ACTIVE -t 5000" > /dev/null ||
	fail "host 2's rxe0 did not come back"
"$FTNL" report rxe0 1 "$rgid" up agent
ft_expect "path state after up report" \
	"$("$FTNL" path rxe0 1 "$rgid" -f path_state | ft_field path_state)" UP

# host 1's own pull takes the path down whatever the last report said
lab-link eth0 off
ft_wait_port rxe0 1 state=DOWN
ft_expect "path state with local port down" \
	"$("$FTNL" path rxe0 1 "$rgid" -f path_state | ft_field path_state)" DOWN
lab-link eth0 on
ft_wait_port rxe0 1 state=ACTIVE
ft_expect "path state with local port back" \
	"$("$FTNL" path rxe0 1 "$rgid" -f path_state | ft_field path_state)" UP
down=$("$FTNL" path rxe0 1 "$rgid" -f down_count | ft_field down_count)
ft_expect "path down_count" "$down" 2
