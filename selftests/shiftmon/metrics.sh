#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: `shiftmon metrics` is valid Prometheus text exposition (HELP and
# TYPE before each family, every other line `name{labels} value`, no series
# twice), its values follow the table as a port goes down and up, events
# are counted by cause and add up to the page's total, and the
# textfile-collector recipe (write, then mv) works.
#
#   eth1 ── rxe1 (set down and up)    rxe0's pair: BOTH_UP -> BACKUP_DOWN
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
G=fe80::a6:1
"$FTNL" pair-clear rxe0 1 2> /dev/null || true
"$SM" report rxe0 1 "$G" down
ft_defer "'$FTNL' path-del rxe0 1 $G"
ft_defer "ip link set dev eth1 up"

# check FILE: the exposition format, line by line
check()
{
	awk '
		BEGIN { lbl = "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\.)*\"" }
		/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* ./ { help[$3] = 1; next }
		/^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (gauge|counter|untyped)$/ {
			if (!help[$3]) { print "# TYPE before HELP: " $0; bad++ }
			type[$3] = $4; next }
		/^#/ { print "# bad comment: " $0; bad++; next }
		{
			if ($0 !~ "^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{(" lbl "(," lbl ")*)?\\})? [-+]?([0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?|NaN|[-+]Inf)$") {
				print "# bad sample: " $0; bad++; next }
			name = $0; sub(/[{ ].*/, "", name)
			if (!(name in type)) { print "# no TYPE for " name; bad++ }
			if (type[name] == "counter" && name !~ /_total$/) { print "# counter " name; bad++ }
			series = $0; sub(/ [^ ]*$/, "", series)
			if (seen[series]++) { print "# twice: " series; bad++ }
			n++
		}
		END { if (!n) { print "# no samples"; bad++ } exit bad != 0 }' "$1"
}
value() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF }' "$1"; }
# ev FILE CAUSE: rxe1's events of one cause
ev() { value "$1" "shift_port_events_total{$l1,event=\"$2\"}"; }
# ev_sum FILE: rxe1's events summed over every cause
ev_sum()
{
	awk -v p="shift_port_events_total{$l1,event=" \
		'index($0, p) == 1 { s += $NF; n++ } END { if (n) print s }' "$1"
}

"$SM" metrics > "$FT_TMP/m1" || fail "metrics: exit $?"
check "$FT_TMP/m1" || fail "metrics: not the exposition format"
for m in shift_port_up shift_port_state shift_port_down_total shift_port_events_total \
	 shift_port_last_change_seconds shift_port_info shift_pair_state \
	 shift_path_state shift_path_down_total shift_table_generation; do
	grep -q "^# TYPE $m " "$FT_TMP/m1" || fail "metrics: no $m"
done
netdev1=$(ft_pg rxe1 1 netdev)
l1="dev=\"rxe1\",port=\"1\",netdev=\"$netdev1\""
ft_expect "rxe1 up" "$(value "$FT_TMP/m1" "shift_port_up{$l1}")" 1
ft_expect "rxe1 ACTIVE" "$(value "$FT_TMP/m1" "shift_port_state{$l1,state=\"ACTIVE\"}")" 1
ft_expect "rxe1 down_total" "$(value "$FT_TMP/m1" "shift_port_down_total{$l1}")" "$(ft_pg rxe1 1 down_count)"
ft_expect "rxe1 events, all causes" "$(ev_sum "$FT_TMP/m1")" "$(ft_pg rxe1 1 event_count)"
for c in PORT_ACTIVE PORT_ERR LID_CHANGE PKEY_CHANGE SM_CHANGE CLIENT_REREGISTER \
	 GID_CHANGE DEVICE_FATAL DEVICE_ADD DEVICE_RENAME; do
	[ -n "$(ev "$FT_TMP/m1" $c)" ] || fail "rxe1: no events_total series for $c"
done
ft_expect "rxe1 DEVICE_ADD events" "$(ev "$FT_TMP/m1" DEVICE_ADD)" 1
ft_expect "rxe1 DEVICE_FATAL events" "$(ev "$FT_TMP/m1" DEVICE_FATAL)" 0
ft_expect "path DOWN" "$(value "$FT_TMP/m1" 'shift_path_state{dev="rxe0",port="1",remote_gid="fe80::a6:1",state="DOWN"}')" 1
# last change: a Unix time in the past, after boot
lc=$(value "$FT_TMP/m1" "shift_port_last_change_seconds{$l1}")
awk -v lc="$lc" -v now="$EPOCHREALTIME" -v up="$(cut -d' ' -f1 /proc/uptime)" \
	'BEGIN { exit !(lc <= now + 1 && lc >= now - up - 1) }' || fail "last_change_seconds $lc"
log "metrics: format, families and values"

# rxe1 down: its gauges and rxe0's pair follow
dc=$(ft_pg rxe1 1 down_count)
ip link set dev eth1 down
ft_wait_port rxe1 1 state=DOWN
ft_wait_port rxe0 1 pair_state=BACKUP_DOWN
"$SM" metrics > "$FT_TMP/m2"
check "$FT_TMP/m2" || fail "metrics (rxe1 down): not the exposition format"
ft_expect "rxe1 up (down)" "$(value "$FT_TMP/m2" "shift_port_up{$l1}")" 0
ft_expect "rxe1 DOWN" "$(value "$FT_TMP/m2" "shift_port_state{$l1,state=\"DOWN\"}")" 1
ft_expect "rxe1 ACTIVE (down)" "$(value "$FT_TMP/m2" "shift_port_state{$l1,state=\"ACTIVE\"}")" 0
ft_expect "rxe1 down_total (down)" "$(value "$FT_TMP/m2" "shift_port_down_total{$l1}")" $((dc + 1))
grep -q '^shift_pair_state{dev="rxe0",port="1",netdev="[^"]*",backup_dev="rxe1",backup_port="1",state="BACKUP_DOWN"} 1$' "$FT_TMP/m2" ||
	fail "rxe0 pair not BACKUP_DOWN"
grep -q '^shift_port_info{dev="rxe1",.*last_event="PORT_ERR".*} 1$' "$FT_TMP/m2" ||
	fail "rxe1 info: last_event is not PORT_ERR"
[ "$(ev "$FT_TMP/m2" PORT_ERR)" -gt "$(ev "$FT_TMP/m1" PORT_ERR)" ] ||
	fail "rxe1 PORT_ERR events did not grow: $(ev "$FT_TMP/m1" PORT_ERR) -> $(ev "$FT_TMP/m2" PORT_ERR)"
ip link set dev eth1 up
ft_wait_port rxe1 1 state=ACTIVE
"$SM" metrics > "$FT_TMP/m3"
[ "$(ev "$FT_TMP/m3" PORT_ACTIVE)" -gt "$(ev "$FT_TMP/m2" PORT_ACTIVE)" ] ||
	fail "rxe1 PORT_ACTIVE events did not grow: $(ev "$FT_TMP/m2" PORT_ACTIVE) -> $(ev "$FT_TMP/m3" PORT_ACTIVE)"
ft_expect "rxe1 events, all causes (after)" "$(ev_sum "$FT_TMP/m3")" "$(ft_pg rxe1 1 event_count)"
# the same counts in dump and -j
"$SM" -j show ports dev rxe1 > "$FT_TMP/j"
ft_expect "show -j event_counts, summed" \
	"$(jq '.ports[0].event_counts | add' "$FT_TMP/j")" "$(ev_sum "$FT_TMP/m3")"
ft_expect "show -j PORT_ERR" "$(jq '.ports[0].event_counts.PORT_ERR' "$FT_TMP/j")" \
	"$(ev "$FT_TMP/m3" PORT_ERR)"
"$SM" dump ports dev rxe1 | cut -f24 | tr ',' '\n' | grep -qx "PORT_ERR=$(ev "$FT_TMP/m3" PORT_ERR)" ||
	fail "dump event_counts: $("$SM" dump ports dev rxe1 | cut -f24)"
log "metrics follow rxe1 down and up; events by cause agree in metrics, -j and dump"

# the textfile collector recipe
dir=$FT_TMP/textfile
mkdir -p "$dir"
"$SM" metrics > "$dir/shift.prom.$$" && mv "$dir/shift.prom.$$" "$dir/shift.prom"
check "$dir/shift.prom" || fail "textfile: not the exposition format"
if command -v promtool > /dev/null; then
	promtool check metrics < "$dir/shift.prom" || fail "promtool check metrics"
	log "promtool check metrics: ok"
fi
exit 0
