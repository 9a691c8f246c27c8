#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the path table keeps room for the host's own applications.  Rows
# of reports without F_WITHDRAW (an agent's, an administrator's) stop at
# max_paths - reserved_paths (ENOSPC naming reserved_paths), new ones and
# take-overs alike; libshiftu-style reports (source APP, F_WITHDRAW) then
# still find the reserved rows; once their reporter is gone, the idle rows
# are recycled for the next report (PATH_DEL carrying PATH_REPORT).
# reserved_paths defaults to a quarter of max_paths and must be below it.
#
#   eth0 ── rxe0 ── agent-style rows to fe80::a:*   (fill what they may)
#   eth1 ── rxe1 ── libshiftu-style rows to fe80::b:*, then fe80::c:*
#                   (F_WITHDRAW, the reporter's socket held by ftnl --hold)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_defer "ft_unload; ft_load"	# the default module for the next test
PARAM=/sys/module/shift_ft/parameters/reserved_paths

# E ERRNO CMD...: ftnl fails with ERRNO; its message goes to $FT_TMP/err
E()
{
	local e=$1
	shift
	"$FTNL" --expect-errno "$e" "$@" 2> "$FT_TMP/err" ||
		fail "ftnl $* did not fail with $e: $(cat "$FT_TMP/err")"
}
rows() { "$FTNL" paths | wc -l; }
src_count() { "$FTNL" paths -f report_source | grep -c "=$1\$" || true; }

ft_unload
ft_load
ft_expect "default reserved_paths (max_paths=1024)" "$(cat "$PARAM")" 256
ft_unload
for bad in "reserved_paths=16" "reserved_paths=100"; do
	# shellcheck disable=SC2086 # two words on purpose
	if insmod "$FT_KO" max_paths=16 $bad 2> /dev/null; then
		rmmod shift_ft
		fail "insmod with max_paths=16 $bad succeeded"
	fi
	dmesg | tail -n 5 | grep -q "shift_ft: reserved_paths must be below max_paths" ||
		fail "no log line explaining why $bad was refused"
done
log "reserved_paths: a quarter of max_paths by default, refused unless below it"

ft_load max_paths=16 reserved_paths=4
ft_expect "reserved_paths" "$(cat "$PARAM")" 4
ft_monitor_start "$FT_TMP/mon"

# the agents take all they may: 12 rows
"$FTNL" report rxe0 1 fe80::a:1 down agent --count 12
E ENOSPC report rxe0 1 fe80::a:100 down agent
grep -q "reserved_paths" "$FT_TMP/err" || fail "ENOSPC without naming reserved_paths: $(cat "$FT_TMP/err")"
E ENOSPC report rxe0 1 fe80::a:101 down app	# shiftmon report: no F_WITHDRAW
ft_expect "rows after the agents" "$(rows)" 12
log "12 agent rows, then ENOSPC (reserved_paths) for reports without F_WITHDRAW"

# libshiftu-style reports still find the four reserved rows
ft_bg_start "$FT_TMP/hold1" '^# hold:' "ftnl report --hold" \
	"$FTNL" report rxe1 1 fe80::b:1 down app --flags 2 --count 4 --hold
holder=$FT_BG_PID
ft_expect "rows with the application's" "$(rows)" 16
ft_expect "application's row" "$("$FTNL" path rxe1 1 fe80::b:4 -f path_state,report_source)" \
	"path_state=DOWN"$'\t'"report_source=APP"
E ENOSPC report rxe1 1 fe80::b:5 down app --flags 2
grep -q "see max_paths" "$FT_TMP/err" || fail "a full table's ENOSPC does not say so: $(cat "$FT_TMP/err")"
# an agent cannot take an application's row over either
E ENOSPC report rxe1 1 fe80::b:1 up agent
ft_expect "taken-over row" "$("$FTNL" path rxe1 1 fe80::b:1 -f report_source)" "report_source=APP"
log "F_WITHDRAW reports got the 4 reserved rows; the agents cannot take them over"

# the reporter goes: its rows are idle, and still not the agents'
t0=$(ft_now)
kill "$holder"
wait "$holder" 2> /dev/null || true
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_NEW\" && \$3 == \"REPORTER_GONE\" && /remote_gid=fe80:0000:0000:0000:0000:0000:000b:0004/" ||
	fail "no REPORTER_GONE for the held reports"
ft_expect "idle rows" "$(src_count NONE)" 4
E ENOSPC report rxe0 1 fe80::a:102 down agent
E ENOSPC report rxe1 1 fe80::b:2 down agent

# the next application's report recycles an idle row
t0=$(ft_now)
ft_bg_start "$FT_TMP/hold2" '^# hold:' "ftnl report --hold" \
	"$FTNL" report rxe1 1 fe80::c:1 down app --flags 2 --hold
ft_expect "rows after a recycle" "$(rows)" 16
ft_expect "idle rows after a recycle" "$(src_count NONE)" 3
ft_expect "the recycled row's report" "$("$FTNL" path rxe1 1 fe80::c:1 -f report_source)" "report_source=APP"
ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_DEL\" && \$3 == \"PATH_REPORT\" && /remote_gid=fe80:0000:0000:0000:0000:0000:000b:000/" ||
	fail "no PATH_DEL/PATH_REPORT for the recycled row"
log "an idle row recycled for the next F_WITHDRAW report, announced as PATH_DEL/PATH_REPORT"

# an agent that forgets a row of its own may report another
"$FTNL" path-del rxe0 1 fe80::a:1 --source agent
"$FTNL" report rxe0 1 fe80::a:103 down agent
E ENOSPC report rxe0 1 fe80::a:104 down agent
ft_expect "agent rows at the end" "$(src_count AGENT)" 12
ft_expect "page rows at the end" "$("$FTPAGE" paths | wc -l)" "$(rows)"
"$FTPAGE" torture 0.3 > /dev/null || fail "page inconsistent at the end"
exit 0
