#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: PATH_REPORT creates and updates a path row with the reporter's
# source, pid and time; the effective state follows reports while the local
# port is ACTIVE and is DOWN while it is not; a report made with
# SHIFT_FT_REPORT_F_WITHDRAW is withdrawn when its socket closes; netlink,
# page and events agree; PATH_DEL removes the row, and PATH_DEL with a
# report source only a row whose last report came from that source.
#
#   eth0 ── rxe0 ── path to G0 (reported up/down; eth0 flapped)
#   eth1 ── rxe1 ── path to G1 (must not move when eth0 does)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
G0=fe80::1234:1
G1=fe80::1234:2
G0_TXT=fe80:0000:0000:0000:0000:0000:1234:0001
ft_defer "ip link set dev eth0 up"
ft_defer "'$FTNL' path-del rxe0 1 $G0"
ft_defer "'$FTNL' path-del rxe1 1 $G1"
"$FTNL" path-del rxe0 1 "$G0" 2> /dev/null || true
"$FTNL" path-del rxe1 1 "$G1" 2> /dev/null || true
ft_monitor_start "$FT_TMP/mon"

# path DEV KEY: a field of the path row to G0 (netlink)
path0() { "$FTNL" path rxe0 1 "$G0" -f "$1" | ft_field "$1"; }
COMMON=path_index,port_index,dev_name,port_num,remote_gid,path_state,report_state,report_source,report_pid,report_time,last_change,down_count

# netlink and page agree on every common field
agree()
{
	ft_expect "$1: page vs netlink" "$("$FTPAGE" paths -f "$COMMON" | sort)" \
		"$("$FTNL" paths -f "$COMMON" | sort)"
}

# report as a process whose pid we know
t0=$(ft_now)
bash -c 'echo $$ > "$1"; exec "$2" report rxe0 1 "$3" up app' _ "$FT_TMP/pid" "$FTNL" "$G0"
t1=$(ft_now)
pid=$(cat "$FT_TMP/pid")
ft_expect "path_state" "$(path0 path_state)" UP
ft_expect "report_state" "$(path0 report_state)" UP
ft_expect "report_source" "$(path0 report_source)" APP
ft_expect "report_pid" "$(path0 report_pid)" "$pid"
ft_expect "remote_gid" "$(path0 remote_gid)" "$G0_TXT"
ft_expect "dev_name" "$(path0 dev_name)" rxe0
ft_expect "port_index" "$(path0 port_index)" "$(ft_nl rxe0 1 port_index)"
rt=$(path0 report_time)
if [ "$rt" -lt "$t0" ] || [ "$rt" -gt "$t1" ]; then
	fail "report_time $rt outside [$t0, $t1]"
fi
ft_expect "down_count" "$(path0 down_count)" 0
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_NEW\" && \$3 == \"PATH_REPORT\" && /\tremote_gid=$G0_TXT\t/" ||
	fail "no PATH_NEW/PATH_REPORT event"
agree "after the first report"
idx=$(path0 path_index)
log "report up by pid $pid: row $idx, fields right"

"$FTNL" report rxe1 1 "$G1" up agent
ft_expect "G1 by index" "$("$FTNL" path "@$(ft_nl rxe1 1 port_index)" "$G1" -f report_source)" "report_source=AGENT"

# reports move the state
"$FTNL" report rxe0 1 "$G0" down agent
ft_expect "after report down" "$(path0 path_state)" DOWN
ft_expect "source after report down" "$(path0 report_source)" AGENT
ft_expect "down_count after report down" "$(path0 down_count)" 1
ft_expect "path_index is stable" "$(path0 path_index)" "$idx"
"$FTNL" report rxe0 1 "$G0" up app --flags 1	# NOCREATE: the row exists
ft_expect "after report up" "$(path0 path_state)" UP
agree "after reports"

# the local port wins: DOWN while rxe0 is not ACTIVE, whatever was reported
t0=$(ft_now)
ip link set dev eth0 down
ft_wait_port rxe0 1 DOWN
ft_expect "path with port down" "$(path0 path_state)" DOWN
ft_expect "report_state with port down" "$(path0 report_state)" UP
ft_expect "down_count with port down" "$(path0 down_count)" 2
lc=$(path0 last_change)
[ "$lc" -ge "$t0" ] || fail "last_change $lc not updated by the port going down"
ft_expect "rxe1 path untouched" "$("$FTNL" path rxe1 1 "$G1" -f path_state)" "path_state=UP"
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_NEW\" && \$3 == \"PORT_ERR\" && /\tremote_gid=$G0_TXT\t/ && /\tpath_state=DOWN\t/" ||
	fail "no PATH_NEW event carrying PORT_ERR for the port going down"
"$FTPAGE" torture 0.3 > /dev/null || fail "page inconsistent with the port down"
agree "with the port down"
# a report while the port is down is recorded but does not raise the path
"$FTNL" report rxe0 1 "$G0" up app
ft_expect "report up with port down" "$(path0 path_state)" DOWN
ip link set dev eth0 up
ft_wait_port rxe0 1 ACTIVE
ft_expect "path with port back" "$(path0 path_state)" UP
agree "with the port back"
log "path state: DOWN while rxe0 is down, report state again once it is up"

# F_WITHDRAW: the report lasts as long as the socket it came on (ftnl's,
# closed when it exits); one without it stays
t0=$(ft_now)
"$FTNL" report rxe0 1 "$G0" down app --flags 2
ft_expect "withdrawn: report_state" "$(path0 report_state)" UNKNOWN
ft_expect "withdrawn: report_source" "$(path0 report_source)" NONE
ft_expect "withdrawn: path_state" "$(path0 path_state)" UNKNOWN
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_NEW\" && \$3 == \"REPORTER_GONE\" && /\tremote_gid=$G0_TXT\t/" ||
	fail "no PATH_NEW/REPORTER_GONE event"
"$FTNL" report rxe1 1 "$G1" down agent
ft_expect "not withdrawn without the flag" "$("$FTNL" path rxe1 1 "$G1" -f path_state)" "path_state=DOWN"
agree "after a withdrawn report"
log "F_WITHDRAW: the report went with ftnl's socket, event REPORTER_GONE"

# PATH_DEL with a source (as the agent deletes its rows): another
# source's report keeps the row (EBUSY), the same source's goes
"$FTNL" report rxe0 1 "$G0" down app
"$FTNL" --expect-errno EBUSY path-del rxe0 1 "$G0" --source agent 2> "$FT_TMP/err" ||
	fail "path-del --source agent of an APP row: $(cat "$FT_TMP/err")"
grep -q "another source" "$FT_TMP/err" ||
	fail "EBUSY without the extack naming the other source: $(cat "$FT_TMP/err")"
ft_expect "row kept by another source's path-del" "$(path0 report_source)" APP
ft_expect "G1's row is the agent's" "$("$FTNL" path rxe1 1 "$G1" -f report_source)" "report_source=AGENT"
"$FTNL" path-del rxe1 1 "$G1" --source agent
"$FTNL" --expect-errno ENOENT path rxe1 1 "$G1" 2> /dev/null ||
	fail "the agent's row still there after path-del --source agent"
agree "after path-del with a source"
log "path-del --source: another source's row stays (EBUSY), the same source's goes"

# PATH_DEL
t0=$(ft_now)
"$FTNL" path-del rxe0 1 "$G0"
"$FTNL" --expect-errno ENOENT path rxe0 1 "$G0" 2> /dev/null || fail "row still there after path-del"
"$FTNL" paths | grep -q "remote_gid=$G0_TXT" && fail "row still in the dump"
"$FTPAGE" paths | grep -q "remote_gid=$G0_TXT" && fail "row still in the page"
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_DEL\" && /\tremote_gid=$G0_TXT\t/" ||
	fail "no PATH_DEL event"
agree "after path-del"
log "path-del: row gone from netlink and page, event seen"
exit 0
