#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: user nobody can show, dump, read metrics and monitor, while
# `pair set`, `pair clear` and `report` are refused with "Unable to ...:
# Operation not permitted" and exit 1, leaving the table as it was.
#
#   nobody ── shiftmon show/dump/metrics/monitor (allowed)
#   nobody ── shiftmon pair set/clear, report (EPERM)
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
ft_require_cmd setpriv jq
G=fe80::a4:1

[ "$(as_nobody id -u)" = 65534 ] || skip "setpriv cannot switch to nobody"
as_nobody test -x "$SM" || skip "$SM not executable by nobody"

"$SM" report rxe0 1 "$G" up
ft_defer "'$FTNL' path-del rxe0 1 $G"

# reads: the same rows as root's
ft_expect "dump as nobody" "$(as_nobody "$SM" dump)" "$("$SM" dump)"
as_nobody "$SM" show > /dev/null || fail "show as nobody"
as_nobody "$SM" -j show | jq -e '.ports | length > 0' > /dev/null || fail "show -j as nobody"
as_nobody "$SM" metrics | grep -q '^shift_port_up{' || fail "metrics as nobody"
log "nobody: show, dump, -j, metrics"

# monitor: subscribed as nobody, sees root's changes
SM_AS=$SM_NOBODY sm_monitor_start "$FT_TMP/mon" -t
"$SM" report rxe0 1 "$G" down
ft_wait_log "$FT_TMP/mon" '/path rxe0\/1 fe80::a4:1 DOWN report DOWN source APP/' 3 ||
	fail "monitor as nobody: no event"
log "nobody: monitor"

before=$("$SM" dump pairs; "$SM" dump paths)
denied()
{
	local want=$1
	shift
	sm_expect_rc 1 as_nobody "$SM" "$@"
	ft_expect "$* as nobody" "$(cat "$FT_TMP/err")" "$want"
	[ ! -s "$FT_TMP/out" ] || fail "$*: wrote to stdout"
}
denied "Unable to set pair: Operation not permitted" pair set rxe0 1 rxe1 1
denied "Unable to clear pair: Operation not permitted" pair clear rxe0 1
denied "Unable to report path: Operation not permitted" report rxe0 1 "$G" up
denied "Unable to report path: Operation not permitted" report rxe0 1 fe80::a4:2 down source agent
ft_expect "table after refusals" "$("$SM" dump pairs; "$SM" dump paths)" "$before"
log "nobody: pair set/clear and report refused with EPERM, table unchanged"
exit 0
