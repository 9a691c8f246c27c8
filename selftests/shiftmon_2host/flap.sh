#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# flap: a flapping port on host 2 is published at most once per 200 ms and
# its final state is never dropped: host 1 ends DOWN after a flap that ends
# pulled, and with no row (the agent deleted its own) after one that ends
# plugged.
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
smr_agent_start
smr_agent_peer_start
rgid=$(ft_gid_of 10.0.0.2)

flap()	# flap END: 15 pulls and plugs as fast as QEMU takes them, then END
{
	lab-peer ". lab-lib.sh; s=\$(date +%s%N);
		  for i in \$(seq 15); do lab_link eth0 off; lab_link eth0 on; done;
		  lab_link eth0 $1; echo \$(( (\$(date +%s%N) - s) / 1000000 ))"
}

before=$(lab-peer "grep -c '^agent: publish rxe0/1' $SMR_LOG2" || true)
ms=$(flap off)
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" > /dev/null || smr_fail "host 1 did not end DOWN after the flap"
smr_wait_store host2 rxe0/1 DOWN
sleep 0.5
after=$(lab-peer "grep -c '^agent: publish rxe0/1' $SMR_LOG2")
pubs=$((after - before))
log "flap of $ms ms: $pubs publications of rxe0/1"
# one per 200 ms window, plus the first and the last
[ "$pubs" -le $((ms / 200 + 3)) ] || smr_fail "$pubs publications in $ms ms: not rate-limited"

sleep 0.25
flap on > /dev/null
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" > /dev/null || smr_fail "host 1 still has a row after the flap"
smr_wait_store host2 rxe0/1 ACTIVE 8
