#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bounded: what host 1's agent holds is bounded.  It deletes the rows it
# reported DOWN once the remote port is ACTIVE again or REMOVED (and leaves
# a row an application reported since), or, at a resync, once its host's
# hash no longer has the port; it holds at most --host-rows rows towards
# one remote host, saying so once; it remembers at most --remote-ports
# remote ports, forgetting the one heard from the longest ago among those
# that hold no row, and saying once when every one does; and a new agent
# deletes the rows an earlier one left that no record in the store explains.
#
# The remote ports are forged: records published on the store's channel for
# hosts that do not exist (ghost, ghost2, ghost3; ghost4 has a hash too),
# as any client of the store could.  Host 1 has two local ports of the same
# link layer (rxe0, rxe1), so each remote GID makes two rows.
#
#   redis-cli PUBLISH shift:v1:events "ghost<TAB>rxeN/1<TAB>record"
#        -> host 1's agent (--host-rows 8 --remote-ports 6) -> host 1's page
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
smr_agent_start --host-rows 8 --remote-ports 6

T=$'\t'
SEQ=0
# pub HOST PORT STATE GIDS: a forged record of HOST's PORT ("rxeN/1")
pub()
{
	SEQ=$((SEQ + 1))
	rcli publish shift:v1:events \
		"$1$T$2$T$3${T}ETHERNET$T-$T$4${T}0${T}0${T}00000000000000aa$T$SEQ" > /dev/null
}
# applied PATTERN: wait (5 s) for host 1's agent to log a line matching it
applied()
{
	local i
	for i in $(seq 100); do
		grep -q "$1" "$SMR_LOG1" && return 0
		sleep 0.05
	done
	smr_fail "host 1's agent never logged '$1'"
}
# rows HEX: the page's rows whose remote GID is ::ffff:10.HEX.x.x
rows() { "$FTPAGE" paths -f remote_gid | grep -c "ffff:0a$1:" || true; }
pw() { "$PATHWAIT" "$@" > /dev/null; }

# ---- back UP, and gone: the agent deletes what it reported ----
pub ghost rxe1/1 DOWN ::ffff:10.9.0.1
pw ::ffff:10.9.0.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost rxe1 never DOWN"
ft_expect "rows toward ghost rxe1" "$(rows 09)" 2
pub ghost rxe1/1 ACTIVE ::ffff:10.9.0.1
pw ::ffff:10.9.0.1 ABSENT -t "$SMR_WAIT_MS" || smr_fail "ghost rxe1 ACTIVE again: the agent's rows stayed"
applied "^agent: apply ghost rxe1/1 ACTIVE (event, seq $SEQ): 2 paths deleted"
log "a remote port ACTIVE again: the agent deleted its 2 rows"

# an application's report made since is not the agent's to delete
pub ghost rxe1/1 DOWN ::ffff:10.9.0.1
pw ::ffff:10.9.0.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost rxe1 never DOWN again"
"$FTNL" report rxe0 1 ::ffff:10.9.0.1 down app
pub ghost rxe1/1 ACTIVE ::ffff:10.9.0.1
applied "^agent: apply ghost rxe1/1 ACTIVE (event, seq $SEQ): 1 path deleted"
ft_expect "the application's row" "$("$FTNL" path rxe0 1 ::ffff:10.9.0.1 -f report_source)" "report_source=APP"
"$FTNL" --expect-errno ENOENT path rxe1 1 ::ffff:10.9.0.1 2> /dev/null ||
	smr_fail "the agent's own row toward ghost rxe1 stayed"
"$FTNL" path-del rxe0 1 ::ffff:10.9.0.1
log "an application's report on the path kept its row; the agent's went"

pub ghost rxe2/1 DOWN ::ffff:10.9.0.2
pw ::ffff:10.9.0.2 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost rxe2 never DOWN"
pub ghost rxe2/1 REMOVED ::ffff:10.9.0.2
pw ::ffff:10.9.0.2 ABSENT -t "$SMR_WAIT_MS" || smr_fail "ghost rxe2 REMOVED: the agent's rows stayed"
applied "^agent: forget ghost rxe2/1 REMOVED (event, seq $SEQ): 2 paths deleted"
log "a remote port REMOVED: rows deleted, entry forgotten"

# ---- at most 8 rows towards one host ----
pub ghost rxe3/1 DOWN ::ffff:10.9.3.1,::ffff:10.9.3.2,::ffff:10.9.3.3
applied "^agent: apply ghost rxe3/1 DOWN (event, seq $SEQ): 6 paths DOWN"
pub ghost rxe4/1 DOWN ::ffff:10.9.4.1,::ffff:10.9.4.2,::ffff:10.9.4.3
applied "^agent: apply ghost rxe4/1 DOWN (event, seq $SEQ): 2 paths DOWN (incomplete)"
pub ghost rxe5/1 DOWN ::ffff:10.9.5.1
applied "^agent: apply ghost rxe5/1 DOWN (event, seq $SEQ): 0 paths DOWN (incomplete)"
ft_expect "rows toward ghost at its cap" "$(rows 09)" 8
ft_expect "cap lines logged" "$(grep -c '^agent: host ghost: 8 path rows, the most --host-rows allows' "$SMR_LOG1")" 1
pub ghost2 rxe0/1 DOWN ::ffff:10.10.0.1
pw ::ffff:10.10.0.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost2's port not recorded: the cap is per host"
# room again once ghost's rxe3 is up: rxe5's next record is recorded
pub ghost rxe3/1 ACTIVE ::ffff:10.9.3.1,::ffff:10.9.3.2,::ffff:10.9.3.3
applied "^agent: apply ghost rxe3/1 ACTIVE (event, seq $SEQ): 6 paths deleted"
pub ghost rxe5/1 DOWN ::ffff:10.9.5.1
pw ::ffff:10.9.5.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost rxe5 not recorded once there was room"
ft_expect "rows toward ghost" "$(rows 09)" 4
log "--host-rows 8: ghost stopped at 8 rows (logged once), ghost2 unaffected, room again after an UP"

# ---- a port removed while the agent was away from the store ----
rcli sadd shift:v1:hosts ghost4 > /dev/null
pub ghost4 rxe1/1 DOWN ::ffff:10.12.0.1
rcli hset shift:v1:host:ghost4 rxe1/1 \
	"DOWN${T}ETHERNET$T-$T::ffff:10.12.0.1${T}0${T}0${T}00000000000000aa$T$SEQ" > /dev/null
pw ::ffff:10.12.0.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost4 rxe1 never DOWN"
# its REMOVED goes by unheard: the port leaves ghost4's hash while host 1's
# agent is disconnected (its subscription killed), and it resyncs
rcli hdel shift:v1:host:ghost4 rxe1/1 > /dev/null
n=$(grep -c '^agent: resync:' "$SMR_LOG1")
rcli client kill type pubsub > /dev/null
for i in $(seq 100); do
	[ "$(grep -c '^agent: resync:' "$SMR_LOG1")" -gt "$n" ] && break
	sleep 0.05
done
pw ::ffff:10.12.0.1 ABSENT -t "$SMR_WAIT_MS" || smr_fail "ghost4 rxe1 left the store: the agent's rows stayed"
applied "^agent: forget ghost4 rxe1/1: not in the store: 2 paths deleted"
log "a port gone from its host's hash while the agent was away: rows deleted at the resync"

# ---- at most 6 remote ports remembered ----
# entries: ghost rxe1 (no row), rxe3 (no row), rxe4, rxe5, ghost2 rxe0
pub ghost3 rxe1/1 DOWN ::ffff:10.11.0.1
pw ::ffff:10.11.0.1 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost3 rxe1 (the sixth entry) not recorded"
pub ghost3 rxe2/1 DOWN ::ffff:10.11.0.2
pw ::ffff:10.11.0.2 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost3 rxe2 did not take ghost rxe1's entry"
pub ghost3 rxe3/1 DOWN ::ffff:10.11.0.3
pw ::ffff:10.11.0.3 DOWN -t "$SMR_WAIT_MS" || smr_fail "ghost3 rxe3 did not take ghost rxe3's entry"
pub ghost3 rxe4/1 DOWN ::ffff:10.11.0.4
applied "^agent: Unable to track ghost3 rxe4/1: each of the 6 remote port entries holds path rows"
pub ghost3 rxe5/1 DOWN ::ffff:10.11.0.5
pub ghost3 rxe6/1 DOWN ::ffff:10.11.0.6
pw ::ffff:10.11.0.4 ABSENT -t 10 || smr_fail "ghost3 rxe4 recorded beyond --remote-ports"
sleep 0.5
ft_expect "rows toward ghost3" "$(rows 0b)" 6
ft_expect "full lines logged" "$(grep -c '^agent: Unable to track ' "$SMR_LOG1")" 1
kill -0 "$SMR_PID1" || smr_fail "host 1's agent died"
log "--remote-ports 6: row-less entries taken, the oldest first; a seventh port with rows is refused, logged once"

# ---- rows an earlier agent left: the next one deletes them at its resync ----
# ghost, ghost2 and ghost3 were only on the channel: no record in the store
# explains the rows of the agent stopped here; an application's row stays
left=$("$FTPAGE" paths -f report_source | grep -c AGENT || true)
[ "$left" -gt 0 ] || smr_fail "no agent row to leave behind"
kill "$SMR_PID1"
wait "$SMR_PID1" 2> /dev/null || true
"$FTNL" report rxe0 1 ::ffff:10.13.0.1 down app
ft_defer "$FTNL path-del rxe0 1 ::ffff:10.13.0.1"
ft_expect "the stopped agent's rows" "$("$FTPAGE" paths -f report_source | grep -c AGENT || true)" "$left"
smr_agent_start --host-rows 8 --remote-ports 6
applied "^agent: resync: .*; $left path rows that no DOWN record explains deleted"
ft_expect "agent rows after the resync" "$("$FTPAGE" paths -f report_source | grep -c AGENT || true)" 0
ft_expect "the application's row" "$("$FTNL" path rxe0 1 ::ffff:10.13.0.1 -f report_source)" "report_source=APP"
log "an earlier agent's $left rows, which no record in the store explains, deleted at the next agent's resync; an application's row kept"
