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
#            A's release waits 20 ms before shift_ft hears of it
#   then:    every B+r still reported by an application, every A+r not;
#            ftreuse exits: every B+r withdrawn
#
# Left to chance, the new socket's report never won the race in the lab
# (one CPU or two, LAB_SMP): the window between the port freed and the
# release told is a few instructions.  The selftests' own module,
# sft_nldelay (nldelay/), holds each release of ftreuse's ports in it, ahead
# of shift_ft's notifier, so every round's B reports inside it.  A module
# that withdraws a port's reports by the port alone (5bcc1ec's) loses
# every B+r here.
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
FTREUSE=$FT_DIR/ftreuse
[ -x "$FTREUSE" ] || skip "ftreuse not built"
NLDELAY_KO=${FT_KO%/*}/sft_nldelay.ko
[ -f "$NLDELAY_KO" ] || skip "$NLDELAY_KO not built (make module KVER=$(uname -r))"
insmod "$NLDELAY_KO" delay_ms=20 || fail "insmod $NLDELAY_KO"
ft_defer "rmmod sft_nldelay"
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
held=$(cat /sys/module/sft_nldelay/parameters/delayed)
log "releases held in the window: $held"
[ "$held" -ge "$ROUNDS" ] || fail "sft_nldelay held $held releases, fewer than the $ROUNDS rounds"

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
