#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: `shiftmon monitor` survives the module being unloaded and loaded
# again, twice: it prints the ports going away, a line saying the family is
# gone, a line saying it is back and subscribed, and then the new module's
# events; `monitor -j` says the same in JSON.  A monitor started while the
# module is absent waits for it.
#
#   shiftmon monitor ── nlctrl "notify" (DELFAMILY/NEWFAMILY) + shift_ft "events"
set -e
. "$(dirname "$0")/lib.sh"

sm_setup
ft_require_cmd jq
ft_defer "ft_load"

sm_monitor_start "$FT_TMP/mon" -t
"$SM" monitor -j > "$FT_TMP/json" 2>&1 &
ft_defer "kill $! 2> /dev/null"
for i in $(seq 100); do
	"$SM" report rxe0 1 "$SM_SYNC_GID" down source agent
	grep -q 'PATH_NEW' "$FT_TMP/json" && break
	sleep 0.1
done
grep -q 'PATH_NEW' "$FT_TMP/json" || fail "monitor -j did not subscribe"

reloads=0
late=
for cycle in 1 2; do
	ft_unload
	ft_wait_log "$FT_TMP/mon" '/family shift_ft removed/' 5 || fail "cycle $cycle: no removal line"
	kill -0 "$SM_MON_PID" || fail "cycle $cycle: monitor died with the module"
	if [ "$cycle" = 2 ]; then
		# a monitor started while the module is away waits for it
		"$SM" monitor > "$FT_TMP/late" 2>&1 &
		late=$!
		ft_defer "kill $late 2> /dev/null"
		ft_wait_log "$FT_TMP/late" '/not registered \(module not loaded\); waiting/' 5 ||
			fail "late monitor: no waiting line"
	fi
	ft_load
	ft_wait_port rxe0 1 ACTIVE
	ft_wait_log "$FT_TMP/mon" '/family shift_ft registered; subscribed to events again/' 5 ||
		fail "cycle $cycle: no resubscription line"
	# the new module's events reach the monitor
	G=fe80::a5:$cycle
	"$SM" report rxe0 1 "$G" down
	ft_wait_log "$FT_TMP/mon" "/path rxe0\\/1 fe80::a5:$cycle DOWN/" 5 ||
		fail "cycle $cycle: no event after the reload"
	reloads=$((reloads + 1))
	log "cycle $cycle: removed, back, events flow"
done

# order: ports deleted, family gone, family back, then the new events
awk '
	/port rxe0\/1 deleted event DEVICE_REMOVE/ && !gone { del = 1 }
	/family shift_ft removed/ { gone++ }
	/family shift_ft registered/ { back++ }
	/fe80::a5:2 DOWN/ { ev = back }
	END { exit !(del && gone == 2 && back == 2 && ev == 2) }' "$FT_TMP/mon" ||
	{ sed 's/^/# /' "$FT_TMP/mon" | tail -n 20; fail "monitor lines out of order"; }

ft_wait_log "$FT_TMP/late" '/family shift_ft registered; subscribed/' 5 ||
	fail "late monitor: did not subscribe when the module came"
ft_wait_log "$FT_TMP/late" '/fe80::a5:2 DOWN/' 5 || fail "late monitor: no event"

jq -e . "$FT_TMP/json" > /dev/null || fail "monitor -j: not JSON"
[ "$(jq -r 'select(.type == "family_removed") | .family' "$FT_TMP/json" | sort | uniq -c | awk '{ print $1 " " $2 }')" = "2 shift_ft" ] ||
	fail "monitor -j: family_removed lines"
[ "$(jq -r 'select(.type == "family_registered") | .family' "$FT_TMP/json" | wc -l)" = 2 ] ||
	fail "monitor -j: family_registered lines"
jq -s -e 'any(.[]; .type == "event" and .cmd == "PORT_DEL" and .event == "DEVICE_REMOVE" and .port.dev_name == "rxe0")' \
	"$FT_TMP/json" > /dev/null ||
	{ jq -c '[.type, .cmd, .event, .kind]' "$FT_TMP/json" | uniq -c | sed 's/^/# /'; fail "monitor -j: no PORT_DEL"; }
log "PORT_DEL seen by -j: $(jq -c 'select(.cmd == "PORT_DEL") | [.port.dev_name, .port.port_num, .port.port_index]' "$FT_TMP/json" | tr '\n' ' ')"
"$FTNL" path-del rxe0 1 fe80::a5:1 2> /dev/null || true
"$FTNL" path-del rxe0 1 fe80::a5:2 2> /dev/null || true
log "$reloads reloads survived"
exit 0
