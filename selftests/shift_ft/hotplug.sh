#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: RDMA devices that come, go and get renamed while the page is mapped
# and a monitor is subscribed show up in the table and the page at once, each
# with its event (PORT_NEW/DEVICE_ADD, PORT_DEL/DEVICE_REMOVE,
# PORT_NEW/DEVICE_RENAME), and that readers never see a torn row meanwhile.
#
#   eth0 ── rxe0    eth1 ── rxe1 <-> rxe9 (renamed and back)
#   eth2 ── rxe2    (added and deleted 20 times)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_rxe2_prepare
ROUNDS=${FT_ROUNDS:-20}

ft_watch_start "$FT_TMP/watch"
ft_monitor_start "$FT_TMP/mon"
"$FTPAGE" torture 3600 > "$FT_TMP/torture" 2>&1 &
torture=$!
ft_defer "kill $torture"

for i in $(seq "$ROUNDS"); do
	t0=$(ft_now)
	rdma link add rxe2 type rxe netdev eth2
	ft_wait_port rxe2 1 present
	"$FTNL" port rxe2 1 > /dev/null || fail "round $i: rxe2 not in netlink table"
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PORT_NEW\" && \$3 == \"DEVICE_ADD\" && /\tdev_name=rxe2\t/" ||
		fail "round $i: no PORT_NEW/DEVICE_ADD event for rxe2"
	idx=$(ft_nl rxe2 1 port_index)
	ft_expect "round $i: rxe2 page port_index" "$(ft_pg rxe2 1 port_index)" "$idx"

	t0=$(ft_now)
	rdma link delete rxe2
	ft_wait_port rxe2 1 absent
	"$FTNL" --expect-errno ENODEV,ENOENT port rxe2 1 2> /dev/null ||
		fail "round $i: rxe2 still answers on netlink"
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PORT_DEL\" && /\tdev_name=rxe2\t/ && /\tport_index=$idx\t/" ||
		fail "round $i: no PORT_DEL event for rxe2"
	# the rails are untouched
	ft_expect "round $i: rxe0 state" "$(ft_pg rxe0 1 state)" ACTIVE
done
log "$ROUNDS add/delete rounds of rxe2: table, page and events follow"
grep -q "port_gone" "$FT_TMP/watch" ||
	fail "the page watcher never saw a row go away"

# Rename rxe1 -> rxe9 -> rxe1: same row, new name, an event each time.
idx=$(ft_nl rxe1 1 port_index)
dev_index=$(ft_nl rxe1 1 dev_index)
ft_defer "rdma dev set rxe9 name rxe1"
for pair in "rxe1 rxe9" "rxe9 rxe1"; do
	read -r from to <<< "$pair"
	t0=$(ft_now)
	rdma dev set "$from" name "$to"
	ft_wait_port "$to" 1 present
	ft_wait_port "$from" 1 absent
	ft_expect "rename $from->$to: port_index" "$(ft_nl "$to" 1 port_index)" "$idx"
	ft_expect "rename $from->$to: dev_index" "$(ft_nl "$to" 1 dev_index)" "$dev_index"
	ft_expect "rename $from->$to: page dev_name" "$(ft_pg "$to" 1 port_index)" "$idx"
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PORT_NEW\" && \$3 == \"DEVICE_RENAME\" && /\tdev_name=$to\t/" ||
		fail "rename $from->$to: no PORT_NEW/DEVICE_RENAME event"
	# the pair of rxe0 names the renamed device
	ft_expect "rename $from->$to: rxe0 backup" "$(ft_nl_pair rxe0 1 backup_dev_name)" "$to"
done
log "rename rxe1 -> rxe9 -> rxe1: same row, dev_name and events follow"

kill -TERM "$torture"
if ! wait "$torture"; then
	cat "$FT_TMP/torture" >&2
	fail "ftpage torture found inconsistent rows"
fi
log "$(grep '^# torture' "$FT_TMP/torture" | sed 's/^# //')"
exit 0
