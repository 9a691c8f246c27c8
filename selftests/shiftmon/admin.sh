#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: as root, `pair set|clear` and `report` change the table as the
# dump then shows, and a refusal prints "Unable to <verb> <object>:
# <strerror> (<extended ack>)" on stderr and exits 1.
#
#   rxe0 ── backup ──► rxe1 (automatic, then configured, then automatic)
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
G=fe80::a3:1

"$FTNL" pair-clear rxe0 1 2> /dev/null || true
ft_defer "'$FTNL' pair-clear rxe0 1"
ft_defer "'$FTNL' path-del rxe0 1 $G"

pair_field() { "$SM" dump pairs dev "$1" port 1 | cut -f"$2"; }	# 8: backup dev, 12: flags

# pair set: the override shows as CONFIGURED, in dump and in show
sm_expect_rc 0 "$SM" pair set rxe0 1 rxe1 1
ft_expect "pair flags after set" "$(pair_field rxe0 12)" CONFIGURED
ft_expect "backup after set" "$(pair_field rxe0 8)" rxe1
"$SM" show pairs dev rxe0 | grep -q 'rxe1/1 .* configured' || fail "show pairs: not configured"
"$SM" show ports dev rxe0 | grep -q 'rxe1/1\*' || fail "show ports: no configured mark"
# pair clear: back to automatic
sm_expect_rc 0 "$SM" pair clear rxe0 1
ft_expect "pair flags after clear" "$(pair_field rxe0 12)" 0
log "pair set/clear"

# refusals with the kernel's extended ack
refused()
{
	local want=$1
	shift
	sm_expect_rc 1 "$SM" "$@"
	[ ! -s "$FT_TMP/out" ] || fail "$*: wrote to stdout"
	grep -qF -- "$want" "$FT_TMP/err" || {
		sed 's/^/# stderr: /' "$FT_TMP/err"
		fail "$*: stderr lacks '$want'"
	}
	[ "$(wc -l < "$FT_TMP/err")" -eq 1 ] || fail "$*: more than one line on stderr"
	log "refused: $(cat "$FT_TMP/err")"
}
refused "Unable to clear pair: No such file or directory (No pair override for this port" \
	pair clear rxe0 1
refused "Unable to set pair: Invalid argument (A port cannot be its own backup" \
	pair set rxe0 1 rxe0 1
refused "Unable to report path: No such file or directory (No such path" \
	report rxe0 1 "$G" up nocreate
refused "Unable to report path: No such device (No such device or port" \
	report nosuchdev 1 "$G" up

# report: the path row as reported
sm_expect_rc 0 "$SM" report rxe0 1 "$G" down
row=$("$SM" dump paths dev rxe0 | awk -F'\t' '$7 == "fe80:0000:0000:0000:0000:0000:00a3:0001"')
[ -n "$row" ] || fail "report: no path row"
ft_expect "path state" "$(cut -f8 <<< "$row")" DOWN
ft_expect "report state" "$(cut -f9 <<< "$row")" DOWN
ft_expect "report source" "$(cut -f10 <<< "$row")" APP
sm_expect_rc 0 "$SM" report rxe0 1 "$G" up source agent nocreate
row=$("$SM" dump paths dev rxe0 | awk -F'\t' '$7 == "fe80:0000:0000:0000:0000:0000:00a3:0001"')
ft_expect "path state after up" "$(cut -f8 <<< "$row")" UP
ft_expect "report source after agent" "$(cut -f10 <<< "$row")" AGENT
ft_expect "path down_count" "$(cut -f14 <<< "$row")" 1
log "report up/down, app/agent, nocreate"
exit 0
