#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers of the shiftmon agent tests (sourced, not run), on top of
# ../shift_ft_2host/lib2.sh (ft2_setup, peer) and ../shift_ft/lib.sh.
#
#           host 1                                   host 2
#     rxe0 ─ eth0 10.0.0.1 ─────── rail 0 ─────── eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ─────── rail 1 ─────── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ─────── mgmt ───────── eth2 10.0.2.2
#              │                                    │
#     redis-server 10.0.2.1:6379 ◄── shiftmon agent ┘
#     shiftmon agent ──┘   (PUBLISH/SUBSCRIBE shift:v1:events, hashes)
#
# Tests run on host 1, start host 2's agent with lab-peer --bg, and read
# host 1's page (pathwait, ftpage).

SMR_DIR=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../shift_ft_2host/lib2.sh
. "$SMR_DIR/../shift_ft_2host/lib2.sh"

SM=${SHIFTMON:-$SHIFT_TOP/tools/shiftmon/shiftmon}
PATHWAIT=$SMR_DIR/pathwait
# how long a wait for a change the agents carry (a pull on one host, a
# record published) may take to show in a page: a bound, not a figure
# (propagation.sh measures it).  Through lab-peer, the other host's agent,
# the store and this host's agent, it took over 5 s in make check beside
# four other guests (store_restart.sh, 2026-12-02).
SMR_WAIT_MS=30000
SMR_ADDR=10.0.2.1
SMR_STORE=redis://$SMR_ADDR:6379
SMR_LOG1=$FT_TMP/agent1.log
SMR_LOG2=/tmp/shiftmon_2host.$FT_TEST.agent2.log	# on host 2
SMR_PEER_PID=

rcli() { redis-cli -h "$SMR_ADDR" -p 6379 "$@"; }

# smr_logs: both agents' logs, commented, for a failure's context.
smr_logs()
{
	[ -f "$SMR_LOG1" ] && sed 's/^/# [agent1] /' "$SMR_LOG1" | tail -n 40
	[ -n "$SMR_PEER_PID" ] && lab-peer "tail -n 40 $SMR_LOG2" 2> /dev/null |
		sed 's/^/# [agent2] /'
	return 0
}

smr_fail() { smr_logs; fail "$@"; }

SMR_PATHS_CLEAR=$SMR_DIR/paths_clear

# smr_setup: both hosts' modules, shiftmon with its agent, redis; no path
# rows on either host, before and after.
smr_setup()
{
	[ -x "$SM" ] || skip "shiftmon not built (make -C $SHIFT_TOP/tools/shiftmon)"
	[ -x "$PATHWAIT" ] || skip "pathwait not built (make -C $SMR_DIR)"
	"$SM" help agent > /dev/null 2>&1 || skip "this shiftmon has no agent command"
	ft_require_cmd redis-server redis-cli
	ft2_setup
	"$SMR_PATHS_CLEAR"
	lab-peer "$SMR_PATHS_CLEAR"
	ft_defer "lab-peer $SMR_PATHS_CLEAR"
	ft_defer "$SMR_PATHS_CLEAR"
}

# smr_redis_start: a fresh, empty redis-server on host 1's management
# address (no persistence: a restart loses everything), at the niceness
# SMR_REDIS_NICE if set (a store host that the job's pollers do not
# starve).
smr_redis_start()
{
	local i first=${SMR_REDIS_DEFERRED:-}

	rcli shutdown nosave > /dev/null 2>&1 || true
	${SMR_REDIS_NICE:+nice -n "$SMR_REDIS_NICE"} redis-server --bind "$SMR_ADDR" --port 6379 --save '' --appendonly no \
		--protected-mode no --daemonize yes --dir "$FT_TMP" \
		--pidfile "$FT_TMP/redis.pid" --logfile "$FT_TMP/redis.log" ||
		fail "redis-server did not start"
	if [ -z "$first" ]; then
		ft_defer "redis-cli -h $SMR_ADDR -p 6379 shutdown nosave"
		SMR_REDIS_DEFERRED=1
	fi
	for i in $(seq 100); do
		[ "$(rcli ping 2> /dev/null)" = PONG ] && return 0
		sleep 0.05
	done
	cat "$FT_TMP/redis.log" >&2
	fail "redis-server does not answer on $SMR_ADDR"
}

smr_redis_stop()
{
	rcli shutdown nosave > /dev/null 2>&1 || true
	local i
	for i in $(seq 100); do
		rcli ping > /dev/null 2>&1 || return 0
		sleep 0.05
	done
	fail "redis-server did not stop"
}

# smr_agent_start [ARGS...]: host 1's agent (with the agent's ARGS),
# returning once it has resynced.
smr_agent_start()
{
	local i
	"$SM" agent --store "$SMR_STORE" "$@" 2> "$SMR_LOG1" &
	SMR_PID1=$!
	ft_defer "kill $SMR_PID1"
	for i in $(seq 200); do
		grep -q '^agent: resync:' "$SMR_LOG1" && return 0
		kill -0 "$SMR_PID1" 2> /dev/null || break
		sleep 0.05
	done
	smr_fail "host 1's agent did not connect and resync"
}

# smr_agent_peer_start [ARGS...]: host 2's agent, the same way.
smr_agent_peer_start()
{
	SMR_PEER_PID=$(lab-peer --bg "exec $SM agent --store $SMR_STORE $* 2> $SMR_LOG2") ||
		fail "lab-peer --bg"
	ft_defer "lab-peer 'kill $SMR_PEER_PID'"
	lab-peer "for i in \$(seq 200); do grep -q '^agent: resync:' $SMR_LOG2 && exit 0;
		  kill -0 $SMR_PEER_PID 2> /dev/null || exit 1; sleep 0.05; done; exit 1" ||
		smr_fail "host 2's agent did not connect and resync"
}

# smr_no_row WHAT: host 1's page has no path row, 2 s after WHAT
smr_no_row()
{
	local rows
	sleep 2
	rows=$("$FTPAGE" paths)
	[ -z "$rows" ] || { echo "$rows" | sed 's/^/# page: /'; smr_fail "$1: a path row in host 1's page"; }
}

# smr_dropped REASON: shiftmon metrics' count of records host 1's agent
# dropped for REASON (0 when none)
smr_dropped()
{
	"$SM" metrics | awk -v r="reason=\"$1\"" \
		'$1 ~ /^shift_agent_records_dropped_total/ && index($1, r) { print $2 + 0 }'
}

# smr_wait_store HOST PORT STATE [SECONDS]: the store's record of HOST's
# PORT ("rxe0/1") has STATE.
smr_wait_store()
{
	local i n=$((${4:-5} * 20)) got=
	for ((i = 0; i < n; i++)); do
		got=$(rcli hget "shift:v1:host:$1" "$2" 2> /dev/null | cut -f1)
		[ "$got" = "$3" ] && return 0
		sleep 0.05
	done
	smr_fail "store: $1 $2 is '$got', expected $3"
}
