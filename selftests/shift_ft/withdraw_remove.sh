#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a SHIFT_FT_REPORT_F_WITHDRAW report ends with its row: once the
# port's device is removed (its path rows with it), the reporter's later
# exit changes nothing (no REPORTER_GONE event, no new generation), and a
# slot reused by another port's report stays that report's.
#
#   eth2 ── rxe2 ── path to G   (reported DOWN with F_WITHDRAW, socket held)
#   rdma link delete rxe2       (the row goes with the device)
#   the reporter exits          (must not touch the table)
#   eth0 ── rxe0 ── path to M   (a marker report: orders the events)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
ft_rxe2_prepare
G=fe80::dead:1
G_TXT=fe80:0000:0000:0000:0000:0000:dead:0001
M=fe80::dead:2
M_TXT=fe80:0000:0000:0000:0000:0000:dead:0002
ft_defer "'$FTNL' path-del rxe0 1 $M"
"$FTNL" path-del rxe0 1 "$M" 2> /dev/null || true
ft_monitor_start "$FT_TMP/mon"

for round in 1 2; do
	rdma link add rxe2 type rxe netdev eth2
	ft_wait_port rxe2 1 present
	ft_bg_start "$FT_TMP/hold" '^# hold:' "ftnl report --hold" \
		"$FTNL" report rxe2 1 "$G" down app --flags 2 --hold
	holder=$FT_BG_PID
	ft_expect "round $round: held report" \
		"$("$FTNL" path rxe2 1 "$G" -f report_state)" "report_state=DOWN"

	t0=$(ft_now)
	rdma link delete rxe2
	ft_wait_port rxe2 1 absent
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t0 && \$2 == \"PATH_DEL\" && /\tremote_gid=$G_TXT\t/" ||
		fail "round $round: no PATH_DEL for the removed device's path"
	if [ "$round" -eq 2 ]; then
		# the freed path slot taken by a report that owns nothing
		"$FTNL" report rxe0 1 "$M" up agent
	fi
	paths=$("$FTNL" paths)
	gen=$("$FTPAGE" gen)

	# the holder's socket is released by the time it is reaped (its
	# files close before it becomes a zombie)
	t1=$(ft_now)
	kill "$holder"
	wait "$holder" 2> /dev/null || true
	ft_expect "round $round: generation after the reporter exited" "$("$FTPAGE" gen)" "$gen"
	ft_expect "round $round: paths after the reporter exited" "$("$FTNL" paths)" "$paths"

	# events are sent in order: a marker's PATH_NEW comes after anything
	# the release could have announced
	"$FTNL" report rxe0 1 "$M" down agent
	ft_wait_log "$FT_TMP/mon" "\$1 >= $t1 && \$2 == \"PATH_NEW\" && /\tremote_gid=$M_TXT\t/" ||
		fail "round $round: no PATH_NEW for the marker"
	bogus=$(awk -F'\t' -v t="$t1" '$1 >= t && $3 == "REPORTER_GONE"' "$FT_TMP/mon")
	[ -z "$bogus" ] ||
		fail "round $round: the reporter's exit announced a removed row: $bogus"
	ft_expect "round $round: marker kept its report" \
		"$("$FTNL" path rxe0 1 "$M" -f report_source)" "report_source=AGENT"
	"$FTNL" path-del rxe0 1 "$M"
	log "round $round: reporter exited after its device went: table and events unmoved"
done
"$FTPAGE" torture 0.3 > /dev/null || fail "page inconsistent at the end"
exit 0
