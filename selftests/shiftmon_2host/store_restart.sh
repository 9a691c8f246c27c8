#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# store_restart: redis restarted (empty) in the middle of the run: the
# agents reconnect and resync, the hashes hold again what they held before,
# and pulls after the restart still propagate.
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
smr_agent_start
smr_agent_peer_start
rgid=$(ft_gid_of 10.0.0.2)

"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" -- lab-peer "lab-link eth0 off" > /dev/null ||
	smr_fail "host 2's rxe0 never DOWN in host 1's page"
smr_wait_store host2 rxe0/1 DOWN
smr_wait_store host1 rxe0/1 ACTIVE

# a key no agent writes: its absence shows the new server started empty
rcli set smr:before-restart 1 > /dev/null
smr_redis_stop
sleep 1
smr_redis_start
[ -z "$(rcli get smr:before-restart)" ] || fail "the new redis kept the old data"

# repopulated by the agents: host 2's rxe0 still DOWN, nothing lost
smr_wait_store host2 rxe0/1 DOWN 10
smr_wait_store host2 rxe1/1 ACTIVE 10
smr_wait_store host1 rxe0/1 ACTIVE 10
smr_wait_store host1 rxe1/1 ACTIVE 10
hosts=$(rcli smembers shift:v1:hosts | sort | tr '\n' ' ')
ft_expect "hosts in the store" "$hosts" "host1 host2 "
[ "$(grep -c '^agent: resync:' "$SMR_LOG1")" -ge 2 ] || smr_fail "host 1's agent did not resync"
lab-peer "[ \$(grep -c '^agent: resync:' $SMR_LOG2) -ge 2 ]" || smr_fail "host 2's agent did not resync"
"$PATHWAIT" "$rgid" DOWN -t 100 > /dev/null || smr_fail "host 1's row is no longer DOWN"

# after the restart, both directions still propagate
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" -- lab-peer "lab-link eth0 on" > /dev/null ||
	smr_fail "plug after the restart: host 1's row never deleted"
sleep 0.25
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" -- lab-peer "lab-link eth0 off" > /dev/null ||
	smr_fail "pull after the restart: never DOWN in host 1's page"
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" -- lab-peer "lab-link eth0 on" > /dev/null ||
	smr_fail "plug after the restart: host 1's row never deleted"
