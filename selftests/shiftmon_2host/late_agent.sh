#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# late_agent: an agent started after host 2's rail is already down catches
# up from the store: host 1's page shows it DOWN, and the row goes when it
# is plugged.
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
smr_agent_peer_start
rgid=$(ft_gid_of 10.0.0.2)

lab-peer "lab-link eth0 off" || fail "lab-link on host 2"
smr_wait_store host2 rxe0/1 DOWN
"$PATHWAIT" "$rgid" ABSENT -t 10 > /dev/null || smr_fail "host 1 has a row before its agent runs"

t0=$(ft_now)
smr_agent_start
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" > /dev/null ||
	smr_fail "host 1's late agent did not catch up"
log "caught up $(( ($(ft_now) - t0) / 1000000 )) ms after starting the agent"
grep -q "^agent: apply host2 rxe0/1 DOWN (resync" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not apply host 2's rxe0 from the store"

"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" -- lab-peer "lab-link eth0 on" > /dev/null ||
	smr_fail "plug: host 1's row never deleted"
