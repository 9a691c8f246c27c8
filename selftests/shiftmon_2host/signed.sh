#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# signed: with a cluster key on both agents, port records forged on the
# store's channel by a client allowed to PUBLISH (unsigned, badly signed,
# re-filed under another host, or a genuine one replayed) leave host 1's
# path table alone, and the drops are said and counted in shiftmon
# metrics, while a real pull on host 2 still reaches host 1's page and its
# plug clears it; an unsigned record in another host's hash is dropped at
# a resync.  The control, without keys, is today's behaviour: the same
# unsigned forgery, with host 2's real instance and a later seq, puts
# host 1's path to host 2's rxe0 DOWN.
#
#     host 1                                         host 2
#     agent (key) ── redis 10.0.2.1 ── mgmt ──────── agent (key)
#        │             ▲
#     page: paths      └── redis-cli PUBLISH shift:v1:events (the forger)
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
H2=$(lab-peer hostname) || fail "host 2's name"
rgid=$(ft_gid_of 10.0.0.2)
KEY=$FT_TMP/cluster.key
KEY2=/tmp/shiftmon_2host.$FT_TEST.key	# on host 2
export SHIFT_AGENT_STATS=$FT_TMP/agent.stats

# forged [HOST] [SEQ]: the text of an unsigned DOWN of host 2's rxe0, with
# its GID, its agent's real instance and a seq (default: the hash's plus a
# million, after what the channel carried since: the agent publishes after
# it writes the hash), as HOST (default host 2)
forged()
{
	local inst seq
	read -r inst seq < <(rcli hget "shift:v1:host:$H2" rxe0/1 | cut -f7,8 | tr '\t' ' ')
	[ -n "$seq" ] || smr_fail "no record of $H2 rxe0/1 in the store"
	printf '%s\trxe0/1\tDOWN\tETHERNET\teth0\t::ffff:10.0.0.2\t9\t1\t%s\t%s' \
		"${1:-$H2}" "$inst" "${2:-$((seq + 1000000))}"
}

forge() { rcli publish shift:v1:events "$(forged "$@")" > /dev/null; }

# ---- control: no keys, the forgery is applied (today's behaviour)
smr_agent_start
smr_agent_peer_start
smr_wait_store "$H2" rxe0/1 ACTIVE
msg=$(forged)
log "control: PUBLISH shift:v1:events '$msg'"
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" -- redis-cli -h "$SMR_ADDR" -p 6379 publish shift:v1:events "$msg" > /dev/null ||
	smr_fail "control: the unsigned forgery did not reach host 1's page"
grep -q '^agent: UNAUTHENTICATED' "$SMR_LOG1" ||
	smr_fail "control: host 1's agent did not say its records are unauthenticated"
log "control, no keys: an unsigned DOWN of $H2 rxe0/1 PUBLISHed with redis-cli put host 1's path to $rgid DOWN"
kill "$SMR_PID1"
lab-peer "kill $SMR_PEER_PID"
wait "$SMR_PID1" 2> /dev/null || true
"$SMR_PATHS_CLEAR"

# ---- the same key on both hosts, each its owner's alone
openssl rand -hex 32 > "$KEY.tmp"
install -m 0600 "$KEY.tmp" "$KEY"
lab-peer "install -m 0600 /dev/null $KEY2 && echo $(cat "$KEY.tmp") > $KEY2"
rm -f "$KEY.tmp"
ft_defer "lab-peer 'rm -f $KEY2'"
chmod 0640 "$KEY"
if "$SM" agent --store "$SMR_STORE" --store-key-file "$KEY" 2> "$FT_TMP/refused"; then
	smr_fail "an agent started with a key file of mode 0640"
fi
grep -q "key file $KEY: refused: mode 0640" "$FT_TMP/refused" ||
	{ cat "$FT_TMP/refused"; smr_fail "no refusal naming the key file's mode"; }
chmod 0600 "$KEY"
smr_agent_start --store-key-file "$KEY"
smr_agent_peer_start --store-key-file "$KEY2"
smr_wait_store "$H2" rxe0/1 ACTIVE
rcli hget "shift:v1:host:$H2" rxe0/1 | grep -q "	s1/$H2/" ||
	smr_fail "host 2's record in the store is not signed"

# a real pull on host 2: DOWN in host 1's page, signed; plugged: gone
port=7102
srv=$(lab-peer --bg "exec socat TCP-LISTEN:$port,reuseaddr,fork EXEC:$SMR_DIR/pull-server") ||
	fail "pull-server on host 2"
ft_defer "lab-peer 'kill $srv'"
peer_listening "$port" || fail "pull-server on host 2 did not listen"
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 off" > /dev/null ||
	smr_fail "keys: host 2's pull never reached host 1's page"
smr_wait_store "$H2" rxe0/1 DOWN
real_down=$(rcli hget "shift:v1:host:$H2" rxe0/1)
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 on" > /dev/null ||
	smr_fail "keys: host 2's plug never cleared host 1's page"
smr_wait_store "$H2" rxe0/1 ACTIVE
log "keys: a pull on $H2 put its rxe0 DOWN in host 1's page, its plug cleared it"

# the forgeries, counted from here (host 2's records of the control run,
# unsigned, may have been dropped at host 1's resync already): today's,
# and pinned at the largest seq
sleep 1.2	# the counters reach the file at most once a second
u0=$(smr_dropped unsigned) b0=$(smr_dropped bad_signature) w0=$(smr_dropped wrong_sender)
forge
smr_no_row "an unsigned forgery"
forge "$H2" 18446744073709551615
smr_no_row "an unsigned forgery at seq 2^64 - 1"
# the genuine DOWN with its state kept and its down count changed
rcli publish shift:v1:events "$(printf '%s\trxe0/1\t%s' "$H2" "$real_down" |
	awk -F'\t' 'BEGIN { OFS = "\t" } { $7 = $7 + 1; print }')" > /dev/null
smr_no_row "a signed record altered"
# the genuine DOWN, replayed after the plug: older than the ACTIVE applied
rcli publish shift:v1:events "$(printf '%s\trxe0/1\t%s' "$H2" "$real_down")" > /dev/null
smr_no_row "a genuine DOWN replayed"
# the genuine DOWN filed under another host: not the signer's port
rcli publish shift:v1:events "$(printf 'intruder\trxe0/1\t%s' "$real_down")" > /dev/null
smr_no_row "host 2's record as another host's"
grep -qE "^agent: DROPPED a record of $H2 rxe[01]/1 \((event|resync)\): not signed" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not say it dropped an unsigned record"
grep -q "^agent: DROPPED a record of intruder rxe0/1 (event): signed by $H2" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not say it dropped the re-filed record"
[ "$(grep -c "^agent: DROPPED a record of $H2 " "$SMR_LOG1")" = 1 ] ||
	smr_fail "host 1's agent named $H2 more than once"
sleep 1.2	# the counters reach the file at most once a second
u=$(($(smr_dropped unsigned) - u0)) b=$(($(smr_dropped bad_signature) - b0))
w=$(($(smr_dropped wrong_sender) - w0))
[ "$u" -ge 2 ] && [ "$b" -ge 1 ] && [ "$w" -ge 1 ] ||
	{ "$SM" metrics | grep agent | sed 's/^/# /'; smr_fail "metrics: dropped unsigned +$u, bad_signature +$b, wrong_sender +$w"; }
"$SM" metrics | grep -q '^shift_agent_signing 1$' || smr_fail "metrics: shift_agent_signing is not 1"
log "keys: forged, altered, replayed and re-filed records left host 1's page alone; metrics: dropped unsigned +$u, bad_signature +$b, wrong_sender +$w"

# a hash, read at a resync: an unsigned record filed under a host of its own
rcli hset shift:v1:host:intruder rxe0/1 "$(forged intruder 1 | cut -f3-)" > /dev/null
rcli sadd shift:v1:hosts intruder > /dev/null
kill "$SMR_PID1"
wait "$SMR_PID1" 2> /dev/null || true
smr_agent_start --store-key-file "$KEY"
smr_no_row "an unsigned record in the hash of another host"
grep -q "^agent: DROPPED a record of intruder rxe0/1 (resync): not signed" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not drop intruder's record at its resync"
log "keys: an unsigned record in the store's hash of another host was dropped at the resync"
