#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# own_events: an agent never applies its own host's events: a rail pulled
# on host 1 goes DOWN in host 2's page, and host 1's table has no path row
# toward any of its own GIDs.
set -e
. "$(dirname "$0")/lib.sh"

# own_rows: host 1's path rows toward host 1's own GIDs
own_rows()
{
	local g
	for g in 0000:0000:0000:0000:0000:ffff:0a00:0001 \
		 0000:0000:0000:0000:0000:ffff:0a00:0101 $own_ll; do
		"$FTPAGE" paths | grep "remote_gid=$g" || true
	done
}

smr_setup
smr_redis_start
smr_agent_start
smr_agent_peer_start

# host 1's link-local GIDs, in the page's notation
own_ll=$(ip -6 -o addr show scope link | awk '{ print $4 }' | cut -d/ -f1 |
	 while read -r a; do python3 -c "import ipaddress,sys; print(':'.join(ipaddress.ip_address(sys.argv[1]).exploded.split(':')))" "$a"; done)

lab-link eth0 off
peer "$PATHWAIT $(ft_gid_of 10.0.0.1) DOWN -t $SMR_WAIT_MS" > /dev/null ||
	smr_fail "host 1's rxe0 never DOWN in host 2's page"
lab-link eth0 on
peer "$PATHWAIT $(ft_gid_of 10.0.0.1) ABSENT -t $SMR_WAIT_MS" > /dev/null ||
	smr_fail "host 1's rxe0 still has a row in host 2's page after the plug"

grep -q "^agent: publish rxe0/1 DOWN" "$SMR_LOG1" || smr_fail "host 1 did not publish its rxe0 DOWN"
if grep -q "^agent: apply host1 " "$SMR_LOG1"; then
	smr_fail "host 1 applied its own event"
fi
bad=$(own_rows)
[ -z "$bad" ] || { echo "$bad" | sed 's/^/# own: /'; smr_fail "host 1 has path rows toward its own GIDs"; }
