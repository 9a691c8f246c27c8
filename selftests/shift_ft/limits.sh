#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the module's limits are explicit.  Out-of-range parameters are
# refused at load with a message; with max_ports=1 the second port is not
# silently dropped but named in the log, a device added to a full table is
# named too, and freeing a slot lets the next device in.
#
#   eth0 ── rxe0 (tracked)   eth1 ── rxe1 (over the limit)   eth2 ── rxe2
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_defer "ft_unload; ft_load"	# the default module for the next test
ft_unload

for bad in max_ports=0 max_ports=5000 max_paths=0 max_paths=70000; do
	if insmod "$FT_KO" "$bad" 2> "$FT_TMP/err"; then
		rmmod shift_ft
		fail "insmod with $bad succeeded"
	fi
	dmesg | tail -n 5 | grep -q "shift_ft: max_ports must be" ||
		fail "no log line explaining why $bad was refused"
	log "$bad refused: $(head -n 1 "$FT_TMP/err")"
done

# rxe0 and rxe1 exist; only one fits
insmod "$FT_KO" max_ports=1
ft_wait_node
"$FTPAGE" wait rxe0 1 present -t 3000 > /dev/null ||
	"$FTPAGE" wait rxe1 1 present -t 3000 > /dev/null || fail "no port in the table"
rows=$("$FTNL" ports | wc -l)
ft_expect "port rows with max_ports=1" "$rows" 1
tracked=$("$FTNL" ports -f dev_name | ft_field dev_name)
other=rxe1
[ "$tracked" = rxe1 ] && other=rxe0
dmesg | grep -q "shift_ft: $other port 1 not tracked: port table full (max_ports=1)" ||
	fail "no log line for the untracked $other"
log "tracked $tracked; the log names $other as not tracked"
ft_expect "pair of the lone port" "$(ft_nl_pair "$tracked" 1 pair_state)" NONE

# a device added to the full table is named, not dropped silently
ft_rxe2_prepare
rdma link add rxe2 type rxe netdev eth2
for i in $(seq 50); do
	dmesg | grep -q "shift_ft: rxe2 port 1 not tracked" && break
	sleep 0.1
done
dmesg | grep -q "shift_ft: rxe2 port 1 not tracked: port table full (max_ports=1)" ||
	fail "no log line for rxe2 added to a full table"
ft_expect "port rows after rxe2" "$("$FTNL" ports | wc -l)" 1

# a freed slot is taken by the next device registered
rdma link delete "$tracked"
"$FTPAGE" wait "$tracked" 1 absent -t 3000 > /dev/null || fail "$tracked still listed"
ft_expect "port rows after delete" "$("$FTNL" ports | wc -l)" 0
rdma link add "$tracked" type rxe netdev "eth${tracked#rxe}"
"$FTPAGE" wait "$tracked" 1 present -t 3000 > /dev/null || fail "$tracked not back"
ft_wait_port "$tracked" 1 ACTIVE
