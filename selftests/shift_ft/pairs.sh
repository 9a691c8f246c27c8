#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: automatic backups follow the ABI rule (another device, same link
# layer, nearest NUMA node, then the next slot cyclically); PAIR_SET moves a
# backup to another device (flag CONFIGURED, event PAIR_CONFIG, page and
# netlink agree, the pair no longer follows the old backup), the override may name
# devices that do not exist yet and survives its device going and coming
# back, and PAIR_CLEAR returns to the automatic choice.
#
#   eth0 ── rxe0 ──auto──> rxe1 ── eth1
#             └──override──> rxe2 ── eth2 (temporary)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_rxe2_prepare
for d in rxe0 rxe1 rxe2; do
	"$FTNL" pair-clear "$d" 1 2> /dev/null || true
done
ft_defer "'$FTNL' pair-clear rxe0 1"
ft_defer "ip link set dev eth1 up"

# auto_of DEV: the automatic backup the ABI rule picks, from the page rows
auto_of()
{
	"$FTPAGE" ports -f port_index,dev_name,dev_index,link_layer,numa_node |
		awk -F'\t' -v dev="$1" '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[NR, kv[1]] = kv[2] } }
		$2 == "dev_name=" dev { me = NR }
		END {
			best = ""; bcost = 1e9; bkey = 1e9
			for (r = 1; r <= NR; r++) {
				if (r == me || v[r, "dev_index"] == v[me, "dev_index"] ||
				    v[r, "link_layer"] != v[me, "link_layer"])
					continue
				cost = v[r, "numa_node"] == v[me, "numa_node"] ? 0 : 1
				d = v[r, "port_index"] - v[me, "port_index"]
				key = d > 0 ? d : d + 1e6
				if (cost < bcost || (cost == bcost && key < bkey)) {
					best = v[r, "dev_name"]; bcost = cost; bkey = key
				}
			}
			print best
		}'
}

# The ABI: while an override's backup is absent, the port has no backup
# (pair_state NONE) and stays CONFIGURED; the automatic choice never
# silently replaces an administrator's.
absent_backup()
{
	local got
	got=$("$FTNL" pair rxe0 1 -f backup_dev_name,pair_state,pair_flags)
	ft_expect "$1" "$got" "$(printf 'backup_dev_name=-\tpair_state=NONE\tpair_flags=CONFIGURED')"
	ft_expect "$1: page backup_index" "$(ft_pg rxe0 1 backup_index)" -
	log "$1: no backup, still CONFIGURED"
}

# pair_is DEV BACKUP STATE FLAGS: netlink pair and page row agree on it
pair_is()
{
	local got bidx
	got=$("$FTNL" pair "$1" 1 -f backup_dev_name,backup_port_num,pair_state,pair_flags)
	ft_expect "$1 pair" "$got" "$(printf 'backup_dev_name=%s\tbackup_port_num=1\tpair_state=%s\tpair_flags=%s' "$2" "$3" "$4")"
	bidx=$(ft_nl "$2" 1 port_index)
	ft_expect "$1 page backup_index" "$(ft_pg "$1" 1 backup_index)" "$bidx"
	ft_expect "$1 netlink port backup_index" "$(ft_nl "$1" 1 backup_index)" "$bidx"
	ft_expect "$1 page pair_flags" "$(ft_pg "$1" 1 pair_flags)" "$4"
	ft_expect "$1 page pair_state" "$(ft_pg "$1" 1 pair_state)" "$3"
}

ft_expect "auto backup of rxe0 (two devices)" "$(auto_of rxe0)" rxe1
pair_is rxe0 rxe1 BOTH_UP 0
pair_is rxe1 rxe0 BOTH_UP 0
ft_expect "pairs dump rows" "$("$FTNL" pairs | grep -cE 'dev_name=rxe[01]	')" 2
log "automatic: rxe0 <-> rxe1"

ft_monitor_start "$FT_TMP/mon"
rdma link add rxe2 type rxe netdev eth2
ft_wait_port rxe2 1 ACTIVE
# three devices: each backs up the next slot, cyclically
for d in rxe0 rxe1 rxe2; do
	pair_is "$d" "$(auto_of "$d")" BOTH_UP 0
done
log "three devices: rxe0->$(auto_of rxe0) rxe1->$(auto_of rxe1) rxe2->$(auto_of rxe2)"

t0=$(ft_now)
"$FTNL" pair-set rxe0 1 rxe2 1
ft_wait_port rxe0 1 pair_flags=CONFIGURED
pair_is rxe0 rxe2 BOTH_UP CONFIGURED
pair_is rxe1 "$(auto_of rxe1)" BOTH_UP 0
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PAIR_NEW\" && \$3 == \"PAIR_CONFIG\" && /\tdev_name=rxe0\t/ && /\tbackup_dev_name=rxe2\t/ && /\tpair_flags=CONFIGURED\t?/" ||
	fail "no PAIR_NEW/PAIR_CONFIG event for rxe0 -> rxe2"
log "override rxe0 -> rxe2: CONFIGURED, event seen"

# rxe0's pair no longer follows rxe1 (eth2 is management: it stays up)
ip link set dev eth1 down
ft_wait_port rxe1 1 pair_state=PRIMARY_DOWN
pair_is rxe0 rxe2 BOTH_UP CONFIGURED
ip link set dev eth1 up
ft_wait_port rxe1 1 pair_state=BOTH_UP
log "rxe0's pair state ignores rxe1 going down"

# the override survives rxe2 going away and coming back
rdma link delete rxe2
ft_wait_port rxe2 1 absent
absent_backup "rxe0 -> rxe2 with rxe2 gone"
rdma link add rxe2 type rxe netdev eth2
ft_wait_port rxe2 1 ACTIVE
ft_wait_port rxe0 1 pair_flags=CONFIGURED
pair_is rxe0 rxe2 BOTH_UP CONFIGURED
log "override back with rxe2"

t0=$(ft_now)
"$FTNL" pair-clear rxe0 1
ft_wait_port rxe0 1 pair_flags=0
auto=$(auto_of rxe0)
pair_is rxe0 "$auto" BOTH_UP 0
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PAIR_NEW\" && \$3 == \"PAIR_CONFIG\" && /\tdev_name=rxe0\t/ && /\tbackup_dev_name=$auto\t/" ||
	fail "no PAIR_NEW/PAIR_CONFIG event for the clear"
"$FTNL" --expect-errno ENOENT pair-clear rxe0 1 2> /dev/null ||
	fail "a second pair-clear did not fail with ENOENT"

# names that do not exist yet: accepted; no backup until the backup exists
rdma link delete rxe2
ft_wait_port rxe2 1 absent
"$FTNL" pair-set rxe0 1 rxe7 1
sleep 0.1
absent_backup "rxe0 -> rxe7 (never existed)"
"$FTNL" pair-set rxe5 1 rxe6 1
"$FTNL" pair-clear rxe5 1
"$FTNL" pair-clear rxe0 1
pair_is rxe0 rxe1 BOTH_UP 0
log "overrides of absent devices: accepted, inert, cleared"
exit 0
