#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: `shiftmon monitor -t` prints every one of 20 cable pulls and
# restores (and 5 `ip link` flaps) of rxe0 as a port line with the right
# state and down count, stamped between the command and the page showing
# the change (+1 s), with the pair lines that follow; `-r` stamps every line
# with a non-negative delay; lines reach a pipe at once.
#
#   eth0 ── rxe0  (pulled: lab_link eth0 off|on; ip link set eth0 down|up)
#   eth1 ── rxe1  (its automatic backup)
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
PULLS=${SM_PULLS:-20}
FLAPS=${SM_FLAPS:-5}
cable=yes
# shellcheck source=../lab/guest/lab-lib.sh
if command -v lab-lib.sh > /dev/null; then
	. lab-lib.sh
else
	cable=no
fi

"$FTNL" pair-clear rxe0 1 2> /dev/null || true
"$FTNL" pair-clear rxe1 1 2> /dev/null || true
ft_defer "ip link set dev eth0 up"
[ "$cable" = no ] || ft_defer "lab-link eth0 on"

sm_monitor_start "$FT_TMP/mon" -t
# a second monitor, relative stamps, through a pipe that must not buffer
mkfifo "$FT_TMP/pipe"
cat "$FT_TMP/pipe" > "$FT_TMP/rel" &
"$SM" monitor -r > "$FT_TMP/pipe" 2> /dev/null &
ft_defer "kill $! 2> /dev/null"
for i in $(seq 100); do
	"$SM" report rxe0 1 "$SM_SYNC_GID" down source agent
	grep -q 'fe80::5f:1 DOWN' "$FT_TMP/rel" && break
	sleep 0.1
done
grep -q 'fe80::5f:1 DOWN' "$FT_TMP/rel" || fail "monitor -r in a pipe: no line (buffered?)"
: > "$FT_TMP/marks"

# transition WHAT down|up COMMAND...: run it, wait for the page, record
transition()
{
	local what=$1 dir=$2 state t0 t1 dc
	shift 2
	[ "$dir" = down ] && state=DOWN || state=ACTIVE
	t0=$EPOCHREALTIME
	"$@"
	"$FTPAGE" wait rxe0 1 "state=$state" -t 3000 > /dev/null ||
		fail "$what $dir: rxe0 never became $state"
	t1=$EPOCHREALTIME
	dc=$(ft_pg rxe0 1 down_count)
	printf '%s-%s\t%s\t%s\t%s\t%s\n' "$what" "$dir" "$state" "$t0" "$t1" "$dc" >> "$FT_TMP/marks"
}

if [ "$cable" = yes ]; then
	for i in $(seq "$PULLS"); do
		transition cable down lab_link eth0 off
		transition cable up lab_link eth0 on
	done
	log "cable: $PULLS pulls and restores"
fi
for i in $(seq "$FLAPS"); do
	transition ip down ip link set dev eth0 down
	transition ip up ip link set dev eth0 up
done
log "ip link: $FLAPS flaps"
sm_quiet "$FT_TMP/mon" "$FT_TMP/rel"	# both monitors have every line

# the monitor's port lines of rxe0: epoch seconds, state, down count
grep -E '^\[[^]]+\] port rxe0/1 ' "$FT_TMP/mon" > "$FT_TMP/ports" || fail "no port lines"
sed -E 's/^\[([^]]+)\].*/\1/' "$FT_TMP/ports" | date -f - +%s.%N > "$FT_TMP/epochs" ||
	fail "timestamps date(1) cannot read: $(head -n 1 "$FT_TMP/ports")"
awk '{ for (i = 1; i <= NF; i++) if ($i == "downs") d = $(i + 1); print $4 "\t" d }' \
	"$FT_TMP/ports" | paste "$FT_TMP/epochs" - > "$FT_TMP/events"

# each transition: the first line after its command with its state
awk -F'\t' '
	FNR == NR { what[NR] = $1; st[NR] = $2; t0[NR] = $3; t1[NR] = $4; dc[NR] = $5; n = NR; next }
	{ t[++m] = $1; s[m] = $2; d[m] = $3 }
	END {
		bad = 0; j = 1
		for (i = 1; i <= n; i++) {
			k = j
			while (j <= m && (t[j] < t0[i] || s[j] != st[i])) j++
			if (j > m) { printf "# %s (#%d): no %s line after %.6f\n", what[i], i, st[i], t0[i]; bad++; j = k; continue }
			if (t[j] > t1[i] + 1.0) { printf "# %s (#%d): line at %.6f, page at %.6f\n", what[i], i, t[j], t1[i]; bad++ }
			if (d[j] != dc[i]) { printf "# %s (#%d): downs %s, page %s\n", what[i], i, d[j], dc[i]; bad++ }
			lat = t[j] - t0[i]; if (lat > max) max = lat; sum += lat
			j++
		}
		printf "# %d transitions, %d port lines; command to line: mean %.1f ms, max %.1f ms\n", n, m, n ? sum / n * 1000 : 0, max * 1000
		exit bad != 0
	}' "$FT_TMP/marks" "$FT_TMP/events" || fail "monitor lines do not match the transitions"

# the pair follows the port: rxe0 PRIMARY_DOWN and BOTH_UP lines
n=$(wc -l < "$FT_TMP/marks")
pd=$(grep -c '\] pair rxe0/1 PRIMARY_DOWN ' "$FT_TMP/mon" || true)
[ "$pd" -ge $((n / 2)) ] || fail "only $pd PRIMARY_DOWN pair lines for $((n / 2)) downs"

# -r: every line starts with a non-negative delay, and none is missing
awk '!/^\[\+[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]\] / { bad++ } END { exit bad }' "$FT_TMP/rel" ||
	fail "monitor -r: a line without [+seconds]: $(grep -v '^\[+' "$FT_TMP/rel" | head -n 1)"
r=$(grep -c ' port rxe0/1 ' "$FT_TMP/rel" || true)
[ "$r" -eq "$(wc -l < "$FT_TMP/ports")" ] || fail "monitor -r: $r port lines, monitor -t: $(wc -l < "$FT_TMP/ports")"
[ "$cable" = yes ] || skip "lab-lib.sh not found: cable pulls not tested (ip link part passed)"
exit 0
