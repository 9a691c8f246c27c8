#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: bad arguments print the usage on stderr, nothing on stdout, and exit
# 2, before any netlink; help and --version exit 0 on stdout.
#
#   shiftmon (no module needed) ── argument parsing only
set -e
. "$(dirname "$0")/lib.sh"

[ -x "$SM" ] || skip "shiftmon not built"

bad()
{
	local rc=0
	"$SM" "$@" > "$FT_TMP/out" 2> "$FT_TMP/err" || rc=$?
	[ "$rc" -eq 2 ] || { sed 's/^/# /' "$FT_TMP/err"; fail "shiftmon $*: exit $rc, expected 2"; }
	grep -q '^Usage: ' "$FT_TMP/err" || fail "shiftmon $*: no usage on stderr"
	[ ! -s "$FT_TMP/out" ] || fail "shiftmon $*: wrote to stdout"
}

bad bogus
bad -x
bad --no-such-option
bad --color
bad -c sometimes
bad show nonsense
bad show ports dev
bad show dev rxe0 port 0
bad show dev rxe0 port 256
bad dump ports extra
bad dump ports dev rxe0 dev rxe1
bad monitor extra
bad pair set rxe0 1 rxe1
bad pair set rxe0 x rxe1 1
bad pair set rxe0 1 rxe1 1 extra
bad pair clear rxe0
bad pair frob
bad report rxe0 1 not-a-gid up
bad report rxe0 1 fe80::1 sideways
bad report rxe0 1 fe80::1 up source kernel
bad report rxe0 1 fe80::1 up extra
bad report rxe0 256 fe80::1 up
bad report "" 1 fe80::1 up
bad report rxe0 1 fe80::1
bad metrics extra
bad host-key a b
SHIFT_HOST_KEY_FILE= bad host-key
bad help nosuch
log "bad arguments: usage on stderr, exit 2"

for good in help -h --help "help monitor"; do
	# shellcheck disable=SC2086 # word list
	out=$("$SM" $good) || fail "shiftmon $good: exit $?"
	case $out in
	Usage:*) ;;
	*) fail "shiftmon $good: no usage on stdout" ;;
	esac
done
v=$("$SM" -V)
case $v in
"shiftmon "?*) log "$v" ;;
*) fail "shiftmon -V: '$v'" ;;
esac
[ "$("$SM" --version)" = "$v" ] || fail "--version differs from -V"
exit 0
