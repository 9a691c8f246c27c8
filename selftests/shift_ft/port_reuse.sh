#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: an F_WITHDRAW report made on a netlink port that another socket
# had a moment ago lasts as long as its own socket, not the old one.
# Netlink frees a port before it tells its release (NETLINK_URELEASE): a
# socket that binds it in between (the same process, mostly: autobind
# tries the pid first) and reports at once must not lose its report when
# the old socket's release is told, and must lose it when it closes.
#
#   round r: socket A on port P reports A+r (F_WITHDRAW)
#            A closes  ║  socket B binds P as soon as it is free, reports B+r
#            a dumper takes the table's lock over and over, so that the
#            release's notifier waits for it: the window widens
#   then:    every B+r still reported by an application, every A+r not;
#            ftreuse exits: every B+r withdrawn
#
# A race, run ROUNDS times, which the new socket's report never won in the
# lab (one CPU or two, LAB_SMP): the released socket's notifier takes the
# table's lock first.  So it guards what the module does with a reused
# port's reports (kept while the new socket lives, withdrawn when it
# goes), and a module that withdraws by port alone passes it too.
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
FTREUSE=$FT_DIR/ftreuse
[ -x "$FTREUSE" ] || skip "ftreuse not built"
A=fe80::5e05:a000:0
B=fe80::5e05:b000:0
ROUNDS=${FT_REUSE_ROUNDS:-200}

# A+r and B+r, r = 0..ROUNDS-1, as report_source per row
sources()
{
	"$FTNL" paths -f remote_gid,report_source |
		awk -F'\t' -v pre="$1" 'index($1, "remote_gid=" pre) == 1 { sub(/^[^=]*=/, "", $2); n[$2]++ }
			END { for (s in n) printf "%s=%d ", s, n[s] }'
}

ft_defer "'$FTNL' path-del rxe0 1 $A --count $ROUNDS 2> /dev/null"
ft_defer "'$FTNL' path-del rxe0 1 $B --count $ROUNDS 2> /dev/null"
"$FTREUSE" rxe0 1 "$A" "$B" "$ROUNDS" > "$FT_TMP/reuse" 2>&1 &
holder=$!
ft_defer "kill $holder 2> /dev/null"
for _ in $(seq 600); do
	grep -q '^# hold:' "$FT_TMP/reuse" && break
	kill -0 "$holder" 2> /dev/null || { cat "$FT_TMP/reuse" >&2; fail "ftreuse failed"; }
	sleep 0.1
done
grep -q '^# hold:' "$FT_TMP/reuse" || fail "ftreuse did not finish its $ROUNDS rounds in 60 s"
log "$(grep '^rounds=' "$FT_TMP/reuse") (binds refused while the old socket held the port)"

# GIDs as the table prints them: fe80:0000:...:5e05:a000:000N
a_src=$(sources fe80:0000:0000:0000:0000:5e05:a000)
b_src=$(sources fe80:0000:0000:0000:0000:5e05:b000)
log "old sockets' paths: $a_src; new sockets' paths: $b_src"
ft_expect "new sockets' reports, their sockets open" "$b_src" "APP=$ROUNDS "
ft_expect "old sockets' reports, their sockets closed" "$a_src" "NONE=$ROUNDS "

kill "$holder"
wait "$holder" 2> /dev/null || true
b_src=$(sources fe80:0000:0000:0000:0000:5e05:b000)
ft_expect "new sockets' reports, their sockets closed" "$b_src" "NONE=$ROUNDS "
"$FTPAGE" torture 0.3 > /dev/null || fail "page inconsistent at the end"
exit 0
