#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: shift_ft loads and unloads cleanly FT_CYCLES times (100; make
# check 30) with rxe0/rxe1 present and publishes both ports each time; it
# cannot be unloaded while a process still maps its page (even with the fd
# closed), can be afterwards, and a subscribed "ftnl monitor" survives the
# unload.
#
#   eth0 ── rxe0 ┐
#   eth1 ── rxe1 ┴─ shift_ft  (insmod/rmmod in a loop)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
CYCLES=${FT_CYCLES:-100}
want=$(printf 'dev_name=rxe0\tport_num=1\ndev_name=rxe1\tport_num=1')

for i in $(seq "$CYCLES"); do
	ft_unload
	insmod "$FT_KO" || fail "cycle $i: insmod"
	ft_wait_node
	nl=$("$FTNL" ports -f dev_name,port_num | grep -E 'dev_name=rxe[01]	' | sort)
	pg=$("$FTPAGE" ports -f dev_name,port_num | grep -E 'dev_name=rxe[01]	' | sort)
	ft_expect "cycle $i: netlink ports" "$nl" "$want"
	ft_expect "cycle $i: page ports" "$pg" "$want"
	# the worker's first port query: both ports reach ACTIVE
	ft_wait_port rxe0 1 ACTIVE
	ft_wait_port rxe1 1 ACTIVE
	rmmod shift_ft || fail "cycle $i: rmmod"
	[ ! -e /dev/shift_ft ] || fail "cycle $i: /dev/shift_ft left behind"
	[ $((i % 20)) -ne 0 ] || log "cycle $i of $CYCLES"
done
log "$CYCLES load/unload cycles, both ports listed each time"

# A mapping alone (its fd closed) keeps the module in use.
ft_load
"$FTPAGE" hold > "$FT_TMP/hold" &
hold=$!
ft_defer "kill $hold"
ft_wait_log "$FT_TMP/hold" '/^held/' || fail "ftpage hold did not map the page"
if rmmod shift_ft 2> "$FT_TMP/rmmod.err"; then
	fail "rmmod succeeded while the page was mapped"
fi
log "rmmod while mapped refused: $(head -n 1 "$FT_TMP/rmmod.err")"
grep -qiE 'in use|busy' "$FT_TMP/rmmod.err" ||
	fail "rmmod failed for another reason: $(cat "$FT_TMP/rmmod.err")"
ft_loaded || fail "module gone after a refused rmmod"
kill "$hold"
wait "$hold" || true
ft_unload
log "rmmod after the mapping went away: ok"

# A subscribed monitor across an unload and a load.
ft_load
ft_monitor_start "$FT_TMP/mon"
"$FTNL" report rxe0 1 fe80::10ad:1 up app
ft_wait_log "$FT_TMP/mon" '$2 == "PATH_NEW"' || fail "no event before unload"
ft_unload
sleep 0.3
if kill -0 "$FT_MON_PID" 2> /dev/null; then
	log "monitor alive after unload"
else
	wait "$FT_MON_PID" || fail "monitor died with status $? on unload"
	log "monitor exited cleanly on unload"
fi
grep -q 'FAMILY_DEL' "$FT_TMP/mon" || log "note: monitor saw no FAMILY_DEL"
ft_load
ft_wait_port rxe0 1 ACTIVE
"$FTNL" ports > /dev/null
# the reloaded table starts empty of paths
n=$("$FTNL" paths | wc -l)
ft_expect "paths after reload" "$n" 0
exit 0
