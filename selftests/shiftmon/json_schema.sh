#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: `show -j` and `monitor -j` print JSON that jq parses, with exactly
# the documented keys and types of schema version 1 (shiftmon(8)), and -p
# (pretty) is the same document.
#
#   shiftmon -j show / -j monitor ──► jq
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
ft_require_cmd jq
G=fe80::a2:1

"$SM" report rxe0 1 "$G" down
ft_defer "'$FTNL' path-del rxe0 1 $G"

PORT_K='backup_index dev_index dev_name down_count event_count event_counts generation ifindex last_change last_event link_layer mtu netdev node_guid numa_node pair_flags pair_state phys_state port_index port_num speed state width'
PAIR_K='backup_dev_name backup_index backup_port_num backup_state dev_name generation pair_flags pair_state port_index port_num state'
PATH_K='dev_name down_count generation last_change path_index path_state port_index port_num remote_gid report_pid report_source report_state report_time'

keys() { jq -r "$1 | keys_unsorted | sort | join(\" \")"; }
expect_keys() { [ "$2" = "$3" ] || fail "$1 keys: '$2', expected '$3'"; }

"$SM" -j show > "$FT_TMP/all.json"
jq -e . "$FT_TMP/all.json" > /dev/null || fail "show -j: not JSON"
expect_keys top "$(keys . < "$FT_TMP/all.json")" "pairs paths ports version"
[ "$(jq .version "$FT_TMP/all.json")" = 1 ] || fail "version is not 1"
# every row of a kind has exactly its keys
for k in ports pairs paths; do
	case $k in
	ports) want=$PORT_K ;;
	pairs) want=$PAIR_K ;;
	paths) want=$PATH_K ;;
	esac
	n=$(jq ".$k | length" "$FT_TMP/all.json")
	[ "$n" -gt 0 ] || fail "no $k"
	bad=$(jq -r --arg w "$want" ".${k}[] | keys_unsorted | sort | join(\" \") | select(. != \$w)" "$FT_TMP/all.json")
	[ -z "$bad" ] || fail "$k keys: '$bad', expected '$want'"
done
# types: numbers are numbers, states are names, node_guid a hex string
jq -e '.ports[] | (.port_index | type) == "number" and (.state | test("^[A-Z_]+$"))
	and (.node_guid | test("^0x[0-9a-f]{16}$")) and (.pair_flags | type) == "array"
	and (.last_event | type) == "string" and (.link_layer | type) == "string"
	and (.numa_node | type) == "number" and (.generation | type) == "number"
	and (.event_counts | type) == "object"
	and ([.event_counts[]] | all(type == "number")) and (.event_counts | add) == .event_count' \
	"$FT_TMP/all.json" > /dev/null || fail "port types"
jq -e '.paths[] | (.remote_gid | test("^([0-9a-f]{4}:){7}[0-9a-f]{4}$")) and
	(.path_state | test("^(UNKNOWN|UP|DOWN)$")) and (.report_source | type) == "string"' \
	"$FT_TMP/all.json" > /dev/null || fail "path types"
# one kind: only its array
expect_keys "show -j ports" "$("$SM" -j show ports | keys .)" "ports version"
expect_keys "show -j paths" "$("$SM" -j show paths | keys .)" "paths version"
# pretty is the same document
[ "$("$SM" -j -p show ports | jq -S -c 'del(.ports[].generation)')" = \
  "$("$SM" -j show ports | jq -S -c 'del(.ports[].generation)')" ] || fail "-p differs"
[ "$("$SM" -j -p show ports | wc -l)" -gt 5 ] || fail "-p is not indented"
log "show -j: schema version 1"

# monitor -j: one JSON object per line, a port event nests the port object
sm_monitor_start "$FT_TMP/mon" -j -t -r
ft_defer "ip link set dev eth1 up"
ip link set dev eth1 down
ft_wait_port rxe1 1 state=DOWN
ip link set dev eth1 up
ft_wait_port rxe1 1 state=ACTIVE
"$SM" report rxe0 1 "$G" up
sm_quiet "$FT_TMP/mon"
jq -e . "$FT_TMP/mon" > /dev/null || fail "monitor -j: not JSON lines"
[ "$(wc -l < "$FT_TMP/mon")" -eq "$(jq -c . "$FT_TMP/mon" | wc -l)" ] ||
	fail "monitor -j: an object spans lines"
line=$(jq -c 'select(.cmd == "PORT_NEW" and .port.dev_name == "rxe1" and .port.state == "DOWN")' "$FT_TMP/mon" | head -n 1)
[ -n "$line" ] || fail "monitor -j: no PORT_NEW of rxe1 going DOWN"
expect_keys "monitor port event" "$(keys . <<< "$line")" "cmd event kind port relative timestamp type unknown_attrs"
expect_keys "monitor .port" "$(keys .port <<< "$line")" "$PORT_K"
jq -e '.type == "event" and .kind == "port" and (.relative | type) == "number"
	and (.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}[+-][0-9]{2}:[0-9]{2}$"))
	and (.event | type) == "string"' <<< "$line" > /dev/null || fail "monitor -j: types in $line"
line=$(jq -c 'select(.cmd == "PAIR_NEW")' "$FT_TMP/mon" | head -n 1)
[ -n "$line" ] || fail "monitor -j: no PAIR_NEW"
expect_keys "monitor .pair" "$(keys .pair <<< "$line")" "$PAIR_K"
line=$(jq -c 'select(.cmd == "PATH_NEW" and .path.report_state == "UP" and .path.remote_gid == "fe80:0000:0000:0000:0000:0000:00a2:0001")' "$FT_TMP/mon" | head -n 1)
[ -n "$line" ] || fail "monitor -j: no PATH_NEW of $G"
expect_keys "monitor .path" "$(keys .path <<< "$line")" "$PATH_K"
[ "$(jq -r .event <<< "$line")" = PATH_REPORT ] || fail "monitor -j: path event"
log "monitor -j: $(wc -l < "$FT_TMP/mon") lines, schema version 1"
exit 0
