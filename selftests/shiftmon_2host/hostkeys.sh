#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hostkeys: with host keys (each agent its own Ed25519 key, the cluster's
# public keys in a hosts file), a host speaks for its own ports only, even
# against whoever holds a key.  Host 1's root, who holds host 1's key,
# signs a DOWN of host 2's rxe0 as host 2 and PUBLISHes it: host 1's agent
# drops it (bad_signature) and its page keeps no row; signed as a host the
# hosts file does not list, it is dropped too (unknown_sender); a genuine
# pull on host 2 still reaches host 1's page, signed with host 2's key,
# and its plug clears it.  With each host's GIDs on its line of the hosts
# file, host 2's root signing as host 2 a DOWN that names a third host's
# GID is dropped too (foreign_gid), where without them it moved host 1's
# path to that GID.  The control: with one cluster key on both
# agents, the same forgery signed by a holder of that key puts host 1's
# path to host 2's rxe0 DOWN.  The signatures are made here with
# openssl(1) from recsign.h's description, not by shiftmon.
#
#     host 1                                         host 2
#     agent (host1.key) ── redis 10.0.2.1 ── mgmt ── agent (host2.key)
#        │                    ▲
#     page: paths             └── PUBLISH, signed by host 1's root as host 2
set -e
. "$(dirname "$0")/lib.sh"

ft_require_cmd openssl od
smr_setup
smr_redis_start
H2=$(lab-peer hostname) || fail "host 2's name"
rgid=$(ft_gid_of 10.0.0.2)
export SHIFT_AGENT_STATS=$FT_TMP/agent.stats
umask 077
CKEY=$FT_TMP/cluster.key K1=$FT_TMP/host1.key HOSTS=$FT_TMP/hosts
P2=/tmp/shiftmon_2host.$FT_TEST		# host 2's files: $P2.key, .hosts, .ckey
ft_defer "lab-peer 'rm -f $P2.key $P2.hosts $P2.ckey'"

# canon CONTEXT NAME TEXT SENDER SEQ: recsign.h's canonical string
canon()
{
	printf '%s\0%s\0%s\0%s\0' "$1" "$2" "$3" "$4"
	# shellcheck disable=SC2059 # the format is the bytes
	printf "$(printf '%016x' "$5" | sed 's/../\\x&/g')"
}

# hex to bytes, and back
# shellcheck disable=SC2059 # the format is the bytes
unhex() { printf "$(tr -d '\n' | sed 's/../\\x&/g')"; }
tohex() { od -An -v -tx1 | tr -d ' \n'; }

# s1 KEYFILE NAME TEXT SENDER SEQ: the cluster key's token
s1()
{
	canon shift-rec-v1 "$2" "$3" "$4" "$5" > "$FT_TMP/canon"
	printf 's1/%s/%016x/%s' "$4" "$5" "$(openssl dgst -sha256 -mac HMAC \
		-macopt "hexkey:$(cat "$1")" -r "$FT_TMP/canon" | cut -d' ' -f1)"
}

# s2 KEYFILE NAME TEXT SENDER SEQ: the token of the host key in KEYFILE (a
# seed: RFC 8410's PrivateKeyInfo prefix makes it a DER key)
s2()
{
	canon shift-rec-v2 "$2" "$3" "$4" "$5" > "$FT_TMP/canon"
	{ printf 302e020100300506032b657004220420; cat "$1"; } | unhex > "$FT_TMP/priv.der"
	openssl pkeyutl -sign -rawin -keyform DER -inkey "$FT_TMP/priv.der" \
		-in "$FT_TMP/canon" -out "$FT_TMP/sig" || fail "openssl pkeyutl -sign"
	rm -f "$FT_TMP/priv.der"
	printf 's2/%s/%016x/%s' "$4" "$5" "$(tohex < "$FT_TMP/sig")"
}

# forged SIGN KEYFILE SENDER [PORT GID]: the channel message of a DOWN of
# host 2's PORT (rxe0/1) naming GID (its own, ::ffff:10.0.0.2), with its
# agent's real instance and a seq a second after the store's (host 2's
# clock: the guests' clocks drift apart, and a seq not after the one
# applied is skipped), signed by SIGN with KEYFILE as SENDER
forged()
{
	local inst seq text port=${4:-rxe0/1} gid=${5:-::ffff:10.0.0.2}
	read -r inst seq < <(rcli hget "shift:v1:host:$H2" rxe0/1 | cut -f7,8 | tr '\t' ' ')
	[ -n "$seq" ] || smr_fail "no record of $H2 rxe0/1 in the store"
	seq=$((seq + 1000000))
	text=$(printf 'DOWN\tETHERNET\teth0\t%s\t9\t1\t%s\t%s' "$gid" "$inst" "$seq")
	printf '%s\t%s\t%s\t%s' "$H2" "$port" "$text" \
		"$("$1" "$2" "port:$port" "$text" "$3" "$seq")"
}

stop_agents()
{
	kill "$SMR_PID1"
	lab-peer "kill $SMR_PEER_PID"
	wait "$SMR_PID1" 2> /dev/null || true
	"$SMR_PATHS_CLEAR"
}

# ---- control: one cluster key, held by host 1's root too
openssl rand -hex 32 > "$CKEY"
lab-peer "install -m 0600 /dev/null $P2.ckey && echo $(cat "$CKEY") > $P2.ckey"
smr_agent_start --store-key-file "$CKEY"
smr_agent_peer_start --store-key-file "$P2.ckey"
smr_wait_store "$H2" rxe0/1 ACTIVE
msg=$(forged s1 "$CKEY" "$H2")
log "control: PUBLISH shift:v1:events '$msg'"
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" -- redis-cli -h "$SMR_ADDR" -p 6379 publish shift:v1:events "$msg" > /dev/null ||
	smr_fail "control: a cluster key holder's DOWN of $H2 rxe0/1 did not reach host 1's page"
log "control, cluster key: host 1's root signed a DOWN of $H2 rxe0/1 as $H2 with the cluster key; host 1's page put the path to $rgid DOWN"
stop_agents

# ---- host keys: each host its own, the hosts file from shiftmon host-key
openssl rand -hex 32 > "$K1"
lab-peer "install -m 0600 /dev/null $P2.key && openssl rand -hex 32 > $P2.key" ||
	fail "host 2's key"
{
	echo "# the cluster's host keys"
	"$SM" host-key "$K1"
	lab-peer "$SM host-key $P2.key"
} > "$HOSTS" || fail "shiftmon host-key"
chmod 0644 "$HOSTS"
# lab-peer passes no standard input: the lines go in the command
lab-peer "install -m 0644 /dev/null $P2.hosts && echo '$(grep -v '^#' "$HOSTS")' > $P2.hosts" ||
	fail "host 2's hosts file"
[ "$(grep -c '^[^#]' "$HOSTS")" = 2 ] || { cat "$HOSTS"; fail "the hosts file has no two lines"; }
# refused: a hosts file others may write, one without this host
chmod 0664 "$HOSTS"
if "$SM" agent --store "$SMR_STORE" --host-key-file "$K1" --hosts-file "$HOSTS" 2> "$FT_TMP/refused"; then
	smr_fail "an agent started with a hosts file of mode 0664"
fi
grep -q "hosts file $HOSTS: refused: mode 0664: group or others may write it" "$FT_TMP/refused" ||
	{ cat "$FT_TMP/refused"; smr_fail "no refusal naming the hosts file's mode"; }
chmod 0644 "$HOSTS"
if "$SM" agent --store "$SMR_STORE" --host nothere --host-key-file "$K1" --hosts-file "$HOSTS" \
	2> "$FT_TMP/refused"; then
	smr_fail "an agent started as a host the hosts file does not list"
fi
grep -q "does not list this host, nothere" "$FT_TMP/refused" ||
	{ cat "$FT_TMP/refused"; smr_fail "no refusal naming the missing host"; }
# -v: each drop said, not only a host's first
smr_agent_start --host-key-file "$K1" --hosts-file "$HOSTS" -v
smr_agent_peer_start --host-key-file "$P2.key" --hosts-file "$P2.hosts"
smr_wait_store "$H2" rxe0/1 ACTIVE
rcli hget "shift:v1:host:$H2" rxe0/1 | grep -q "	s2/$H2/" ||
	smr_fail "host 2's record in the store is not signed with its host key"
grep -q "records signed and checked with host keys" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not say it uses host keys"

# a genuine pull on host 2: DOWN in host 1's page; plugged: gone
port=7103
srv=$(lab-peer --bg "exec socat TCP-LISTEN:$port,reuseaddr,fork EXEC:$SMR_DIR/pull-server") ||
	fail "pull-server on host 2"
ft_defer "lab-peer 'kill $srv'"
peer_listening "$port" || fail "pull-server on host 2 did not listen"
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 off" > /dev/null ||
	smr_fail "host keys: host 2's pull never reached host 1's page"
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 on" > /dev/null ||
	smr_fail "host keys: host 2's plug never cleared host 1's page"
smr_wait_store "$H2" rxe0/1 ACTIVE
log "host keys: a pull on $H2 put its rxe0 DOWN in host 1's page, its plug cleared it"

# the forgeries: host 1's key as host 2, a key nobody listed, the cluster key
# publish WHAT MSG: MSG on the channel, and no path row 2 s after
publish()
{
	local n
	log "$1: PUBLISH shift:v1:events '$2'"
	n=$(rcli publish shift:v1:events "$2")
	[ "$n" -ge 1 ] || smr_fail "$1: no agent subscribed to the channel ($n)"
	smr_no_row "$1"
}

sleep 1.2	# the counters reach the file at most once a second
b0=$(smr_dropped bad_signature) n0=$(smr_dropped unknown_sender)
publish "a DOWN of $H2 signed with host 1's key" "$(forged s2 "$K1" "$H2")"
openssl rand -hex 32 > "$FT_TMP/stranger.key"
publish "a DOWN of $H2 signed by an unlisted host" "$(forged s2 "$FT_TMP/stranger.key" stranger)"
publish "a DOWN of $H2 signed with the cluster key" "$(forged s1 "$CKEY" "$H2")"
# once per host the drop is said (at the resync already: host 2's records
# of the control, under the cluster key), each with -v
for why in "bad signature" "signed by stranger, whom the hosts file does not list" \
	   "signed with a cluster key, not its host's key"; do
	grep -q "^agent: drop $H2 rxe0/1 (event): $why" "$SMR_LOG1" ||
		smr_fail "host 1's agent did not drop a forgery for this: $why"
done
sleep 1.2
b=$(($(smr_dropped bad_signature) - b0)) n=$(($(smr_dropped unknown_sender) - n0))
[ "$b" -ge 2 ] && [ "$n" -ge 1 ] ||
	{ "$SM" metrics | grep agent | sed 's/^/# /'; smr_fail "metrics: dropped bad_signature +$b, unknown_sender +$n"; }
"$SM" metrics | grep -q '^shift_agent_signing 1$' || smr_fail "metrics: shift_agent_signing is not 1"
log "host keys: host 1's root signing as $H2, an unlisted host and the cluster key's token left host 1's page alone; metrics: dropped bad_signature +$b, unknown_sender +$n"

# ---- a host names only its own GIDs: host 2's root, who holds host 2's
# key, signs as host 2 a DOWN of a port of its own that names a third
# host's GID.  The control: a hosts file without GID lists (as above)
# lets it through, and host 1's path to that GID goes DOWN.
K2=$FT_TMP/host2.key
lab-peer "cat $P2.key" > "$K2" || fail "host 2's key"
ogid=$(ft_gid_of 10.0.0.3)
msg=$(forged s2 "$K2" "$H2" rxe9/1 "$ogid")
log "GIDs, control: PUBLISH shift:v1:events '$msg'"
"$PATHWAIT" "$ogid" DOWN -t "$SMR_WAIT_MS" -- redis-cli -h "$SMR_ADDR" -p 6379 publish shift:v1:events "$msg" > /dev/null ||
	smr_fail "GIDs, control: host 2's DOWN naming $ogid did not reach host 1's page"
log "GIDs, control: without GID lists, $H2's root, signing as $H2, put host 1's path to $ogid (not $H2's) DOWN"
# each host's line lists its GIDs, as its agent publishes them
gids_of()
{
	local p
	for p in rxe0/1 rxe1/1; do
		rcli hget "shift:v1:host:$1" "$p" | cut -f4 | tr ',' ' '
	done | tr '\n' ' '
}
H1=$(hostname)
g1=$(gids_of "$H1") g2=$(gids_of "$H2")
[ -n "${g1// }" ] && [ -n "${g2// }" ] || smr_fail "no GIDs in the store's records ($H1: '$g1', $H2: '$g2')"
stop_agents
awk -v h1="$H1" -v g1="$g1" -v h2="$H2" -v g2="$g2" \
	'/^#/ || !NF { print; next } $1 == h1 { print $0, g1; next } $1 == h2 { print $0, g2; next } { print }' \
	"$HOSTS" > "$HOSTS.gids"
chmod 0644 "$HOSTS.gids"
sed 's/^/# hosts: /' "$HOSTS.gids"
lab-peer "install -m 0644 /dev/null $P2.hosts && echo '$(grep -v '^#' "$HOSTS.gids")' > $P2.hosts" ||
	fail "host 2's hosts file with GIDs"
smr_agent_start --host-key-file "$K1" --hosts-file "$HOSTS.gids" -v
smr_agent_peer_start --host-key-file "$P2.key" --hosts-file "$P2.hosts"
smr_wait_store "$H2" rxe0/1 ACTIVE
# the genuine records still go through: host 2's pull and plug
"$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 off" > /dev/null ||
	smr_fail "GID lists: host 2's pull never reached host 1's page"
"$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 on" > /dev/null ||
	smr_fail "GID lists: host 2's plug never cleared host 1's page"
smr_wait_store "$H2" rxe0/1 ACTIVE
sleep 1.2
f0=$(smr_dropped foreign_gid)
publish "a DOWN of $H2 rxe9/1 naming $ogid, signed as $H2" "$(forged s2 "$K2" "$H2" rxe9/1 "$ogid")"
grep -q "^agent: drop $H2 rxe9/1 (event): names GID $ogid, which the hosts file does not give it" "$SMR_LOG1" ||
	grep -q "^agent: DROPPED a record of $H2 rxe9/1 (event): names GID $ogid, which the hosts file does not give it" "$SMR_LOG1" ||
	smr_fail "host 1's agent did not say why it dropped $H2's record naming $ogid"
sleep 1.2
f=$(($(smr_dropped foreign_gid) - f0))
[ "$f" -ge 1 ] || { "$SM" metrics | grep agent | sed 's/^/# /'; smr_fail "metrics: dropped foreign_gid +$f"; }
! grep -q "which the hosts file does not give $H1" "$SMR_LOG1" ||
	smr_fail "host 1's agent found a GID of its own that its line does not list"
log "GID lists: $H2's genuine pull and plug reached host 1's page; its record naming $ogid was dropped (foreign_gid +$f)"
