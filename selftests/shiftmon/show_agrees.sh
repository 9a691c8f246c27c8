#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: `show`, `show -j` and `dump` agree with the shared page for every
# port and path row, field by field (and with the netlink pair rows), and the
# dev/port filters select exactly the matching rows.
#
#   shiftmon dump / show / show -j ──netlink──► shift_ft ◄──mmap── ftpage
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
ft_require_cmd jq
G1=fe80::a1:1
G2=fe80::a1:2

"$SM" report rxe0 1 "$G1" up
ft_defer "'$FTNL' path-del rxe0 1 $G1"
"$SM" report rxe1 1 "$G2" down source agent
ft_defer "'$FTNL' path-del rxe1 1 $G2"

PORT_F=generation,port_index,dev_name,dev_index,port_num,node_guid,link_layer,netdev,ifindex,numa_node,state,phys_state,speed,width,mtu,last_change,down_count,last_event,event_count,backup_index,pair_state,pair_flags
# netlink only, not on the page: compared with event_count below
PORT_NL_F=event_counts
PAIR_F=generation,port_index,dev_name,port_num,state,backup_index,backup_dev_name,backup_port_num,backup_state,pair_state,pair_flags
PATH_F=generation,path_index,port_index,dev_name,port_num,remote_gid,path_state,report_state,report_source,report_pid,report_time,last_change,down_count

# key=value lines to values only, sorted
values() { awk -F'\t' -v OFS='\t' '{ for (i = 1; i <= NF; i++) sub(/^[^=]*=/, "", $i); print }' | sort; }

# the JSON array KEY as the dump's lines, fields FIELDS
json_tsv()
{
	jq -r --arg k "$1" --arg f "$2" '
		def v: if . == null then "-"
		       elif type == "array" then (if length == 0 then "0" else join("|") end)
		       else tostring end;
		. as $top | ($f | split(",")) as $fs |
		$top[$k][] | . as $row | [$fs[] | $row[.] | v] | @tsv' | sort
}

# compare KIND: up to 5 tries, in case the table moves between the reads
compare()
{
	local kind=$1 fields=$2 ref=$3
	local last=$(($(tr ',' '\n' <<< "$fields" | wc -l) + 1))
	for _ in 1 2 3 4 5; do
		"$ref" > "$FT_TMP/ref"
		"$SM" dump "${kind}s" | cut -f2-$last | sort > "$FT_TMP/dump"
		"$SM" -j show "${kind}s" | json_tsv "${kind}s" "$fields" > "$FT_TMP/json"
		if cmp -s "$FT_TMP/ref" "$FT_TMP/dump" && cmp -s "$FT_TMP/ref" "$FT_TMP/json"; then
			[ -s "$FT_TMP/ref" ] || fail "no $kind rows at all"
			log "$kind: dump and -j equal the reference, $(wc -l < "$FT_TMP/ref") rows"
			return 0
		fi
		sleep 0.2
	done
	diff "$FT_TMP/ref" "$FT_TMP/dump" | sed 's/^/# dump: /' || true
	diff "$FT_TMP/ref" "$FT_TMP/json" | sed 's/^/# json: /' || true
	fail "$kind rows differ from the reference"
}
ref_ports() { "$FTPAGE" ports -f "$PORT_F" | values; }
ref_paths() { "$FTPAGE" paths -f "$PATH_F" | values; }
ref_pairs() { "$FTNL" pairs -f "$PAIR_F" | values; }
compare port "$PORT_F" ref_ports
compare path "$PATH_F" ref_paths
compare pair "$PAIR_F" ref_pairs

# dump of everything: the three kinds, each line starting with its kind
"$SM" dump > "$FT_TMP/all"
[ "$(cut -f1 "$FT_TMP/all" | sort -u | tr '\n' ' ')" = "pair path port " ] ||
	fail "dump: kinds $(cut -f1 "$FT_TMP/all" | sort -u | tr '\n' ' ')"
"$SM" -H dump ports | head -n 1 > "$FT_TMP/h"
[ "$(cat "$FT_TMP/h")" = "kind	${PORT_F//,/	}	$PORT_NL_F" ] || fail "dump -H header: $(cat "$FT_TMP/h")"
awk -F'\t' -v n="$(($(tr ',' '\n' <<< "$PORT_F,$PORT_NL_F" | wc -l) + 1))" \
	'$1 == "port" && NF != n { bad = 1 } END { exit bad }' "$FT_TMP/all" ||
	fail "dump: a port line without its fields"
# event_counts (NAME=N,...) add up to event_count (column 20) on every port
awk -F'\t' '$1 == "port" {
		n = split($24, c, ","); s = 0
		for (i = 1; i <= n; i++) { sub(/^[A-Z_0-9]*=/, "", c[i]); s += c[i] }
		if (s != $20) { print "# " $4 ": " $24 " != " $20; bad = 1 }
	} END { exit bad }' "$FT_TMP/all" || fail "dump: event_counts do not add up to event_count"

# the human table: one line per page row, with its netdev and state
"$SM" show ports > "$FT_TMP/show"
"$FTPAGE" ports -f dev_name,port_num,netdev,state | values > "$FT_TMP/pg"
while IFS=$'\t' read -r dev port netdev state; do
	awk -v d="$dev" -v p="$port" -v n="$netdev" -v s="$state" \
		'$1 == d && $2 == p && $3 == n && $4 == s { found = 1 } END { exit !found }' \
		"$FT_TMP/show" || { sed 's/^/# /' "$FT_TMP/show"; fail "show: no line for $dev $port $netdev $state"; }
done < "$FT_TMP/pg"
[ "$(($(wc -l < "$FT_TMP/show") - 1))" -eq "$(wc -l < "$FT_TMP/pg")" ] || fail "show: row count"
"$SM" show paths | grep -q "^rxe1 .*fe80::a1:2 .*DOWN .*DOWN .*AGENT" || fail "show paths: rxe1's path"
# the overview: ports, then the paths since there are some
"$SM" > "$FT_TMP/overview"
grep -q '^DEV .*NETDEV' "$FT_TMP/overview" && grep -q '^DEV .*REMOTE_GID' "$FT_TMP/overview" ||
	fail "shiftmon: no ports and paths tables"
log "show: every page row, with netdev and state"

# colour: never in a pipe, with -c always; NO_COLOR does not beat -c always
esc=$(printf '\033')
! grep -q "$esc" "$FT_TMP/show" || fail "colour in a pipe"
"$SM" -c always show | grep -q "$esc\[32mACTIVE" || fail "-c always: no colour"
NO_COLOR=1 "$SM" -c auto show | grep -q "$esc" && fail "NO_COLOR: colour"
"$SM" -c never show | grep -q "$esc" && fail "-c never: colour"

# filters
for d in rxe0 rxe1; do
	[ "$("$SM" dump ports dev $d | cut -f4 | sort -u)" = "$d" ] || fail "dump dev $d"
	[ "$("$SM" -j show ports dev $d | jq -r '.ports[].dev_name' | sort -u)" = "$d" ] ||
		fail "show -j dev $d"
	[ "$("$SM" show ports dev $d port 1 | tail -n +2 | awk '{ print $1 "/" $2 }')" = "$d/1" ] ||
		fail "show dev $d port 1"
done
[ -z "$("$SM" dump ports dev nosuchdev)" ] || fail "dump dev nosuchdev: rows"
[ -z "$("$SM" dump ports dev rxe0 port 2)" ] || fail "dump dev rxe0 port 2: rows"
log "filters select the rows of one device and port"
exit 0
