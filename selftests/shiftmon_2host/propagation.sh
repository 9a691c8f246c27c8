#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# propagation: a rail pulled on host 2 is DOWN in host 1's page within 1 s,
# relayed by the two agents through the store, and its rows are gone again
# (host 1's agent deletes its own) when plugged; median and maximum over 10
# pulls (SMR_PULLS) go to $LAB_OUT/propagation.txt.
#
# Host clocks differ, so everything is timed on host 1, by pathwait: from
# the request it sends to host 2's pull-server (already connected and
# ready, so no process starts on either side) to host 1's own page showing
# the path, nothing subtracted.  Pulls are 1.2 s apart: host 2's kernel
# hears of a carrier loss through linkwatch, which holds it until a second
# after the previous link event.
#
#   host 2: eth0 pulled (QEMU set_link) -> rxe0 PORT_ERR -> shift_ft -> agent
#           -> redis on host 1 (mgmt) -> host 1's agent -> PATH_REPORT -> page
set -e
. "$(dirname "$0")/lib.sh"

smr_setup
smr_redis_start
smr_agent_start
smr_agent_peer_start

rgid=$(ft_gid_of 10.0.0.2)
n=${SMR_PULLS:-10}
max_ms=${SMR_MAX_MS:-1000}
port=7101
srv=$(lab-peer --bg "exec socat TCP-LISTEN:$port,reuseaddr,fork EXEC:$SMR_DIR/pull-server") ||
	fail "pull-server on host 2"
ft_defer "lab-peer 'kill $srv'"
peer_listening "$port" || fail "pull-server on host 2 did not listen"
: > "$FT_TMP/down"
: > "$FT_TMP/up"
: > "$FT_TMP/ack"
for i in $(seq "$n"); do
	read -r d a < <("$PATHWAIT" "$rgid" DOWN -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 off") ||
		smr_fail "pull $i: host 2's rxe0 ($rgid) never DOWN in host 1's page"
	if [ "$i" -eq 1 ]; then
		# every row the agent made is an AGENT report toward host 2's rxe0
		rows=$("$FTPAGE" paths)
		echo "$rows" | sed 's/^/# page: /'
		if echo "$rows" | grep -v "report_source=AGENT" | grep -q .; then
			smr_fail "a path row that is not an AGENT report"
		fi
		echo "$rows" | grep -q "remote_gid=0000:0000:0000:0000:0000:ffff:0a00:0002" ||
			smr_fail "no row toward $rgid"
	fi
	read -r u _ < <("$PATHWAIT" "$rgid" ABSENT -t "$SMR_WAIT_MS" --send 10.0.2.2 "$port" "eth0 on") ||
		smr_fail "plug $i: host 2's rxe0 ($rgid) still has a row in host 1's page"
	[ -n "$d" ] && [ -n "$u" ] || smr_fail "pull $i: pathwait failed"
	echo "$d" >> "$FT_TMP/down"
	echo "$u" >> "$FT_TMP/up"
	echo "$a" >> "$FT_TMP/ack"
	log "pull $i: DOWN in host 1's page after $((d / 1000)) us (QEMU acked the pull after $((a / 1000)) us); plug: row gone after $((u / 1000)) us"
	sleep 1.2
done

# the agent deleted what it reported: after the last plug, no row is left
rows=$("$FTPAGE" paths)
[ -z "$rows" ] || { echo "$rows" | sed 's/^/# page: /'; smr_fail "rows left after the last plug"; }

down=$(ft_stats_ms "$FT_TMP/down")
up=$(ft_stats_ms "$FT_TMP/up")
ack=$(ft_stats_ms "$FT_TMP/ack")
log "pull on host 2 -> DOWN in host 1's page: $down"
log "plug on host 2 -> rows gone from host 1's page: $up"
log "pull request -> QEMU's acknowledgement:  $ack"
{
	echo "# shiftmon agent propagation, $(date -u +%FT%TZ), kernel $(uname -r)"
	echo "# on host 1, from the request to host 2's pull-server to host 1's page"
	echo "down         $down"
	echo "up (gone)    $up"
	echo "qemu-ack     $ack"
} >> "$FT_OUT/propagation.txt"
worst=$(sort -n "$FT_TMP/down" | tail -n 1)
[ "$worst" -le $((max_ms * 1000000)) ] ||
	smr_fail "slowest pull reached host 1's page after $((worst / 1000000)) ms (limit $max_ms ms)"
