#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: with 500 path rows and both rails flapping, every netlink dump is
# either consistent (one generation, every row once, all rows of a port in
# the same state) or flagged NLM_F_DUMP_INTR, a retried dump always ends
# consistent, and page readers never see a torn or inconsistent row.
#
#   eth0 ── rxe0 ── 250 paths   } ip link down/up in a loop
#   eth1 ── rxe1 ── 250 paths   }
#   ftnl paths/ports dumps + ftpage torture, concurrently
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
HALF=${FT_HALF_PATHS:-250}
SECONDS_RUN=${FT_DUMP_SECONDS:-20}
NPATH=$((HALF * 2))
ft_defer "'$FTNL' path-del rxe0 1 fe80::d:0 --count $HALF"
ft_defer "'$FTNL' path-del rxe1 1 fe80::e:0 --count $HALF"

before=$("$FTNL" paths | wc -l)
[ "$before" -eq 0 ] || fail "$before path rows left over by an earlier test"
"$FTNL" report rxe0 1 fe80::d:0 up app --count "$HALF"
"$FTNL" report rxe1 1 fe80::e:0 up agent --count "$HALF"
total=$((before + NPATH))
ft_expect "rows" "$("$FTNL" paths | wc -l)" "$total"
ft_expect "page rows" "$("$FTPAGE" paths | wc -l)" "$total"

# check_paths FILE: a complete dump is consistent.  Prints a reason if not.
check_paths()
{
	awk -F'\t' -v want="$total" '
		{
			delete f
			for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
			gens[f["generation"]]++
			if (f["path_index"] in idx) { print "path_index " f["path_index"] " twice"; bad = 1 }
			idx[f["path_index"]] = 1
			if (f["remote_gid"] in gid) { print "gid " f["remote_gid"] " twice"; bad = 1 }
			gid[f["remote_gid"]] = 1
			if (f["path_state"] != "UP" && f["path_state"] != "DOWN") { print "state " f["path_state"]; bad = 1 }
			# one generation: every row of a port has the same effective state
			key = f["dev_name"] "/" f["port_num"]
			if (key in st && st[key] != f["path_state"]) { print "mixed states on " key; bad = 1 }
			st[key] = f["path_state"]
			if (f["dev_name"] != "rxe0" && f["dev_name"] != "rxe1") { print "row on " f["dev_name"]; bad = 1 }
			n++
		}
		END {
			ng = 0; for (g in gens) ng++
			if (ng != 1) { print ng " generations in one dump"; bad = 1 }
			if (n != want) { print n " rows, expected " want; bad = 1 }
			exit bad
		}' "$1"
}

check_ports()
{
	awk -F'\t' '
		{
			delete f
			for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
			gens[f["generation"]]++
			if (f["port_index"] in idx) { print "port_index twice"; bad = 1 }
			idx[f["port_index"]] = 1
			n++
		}
		END {
			ng = 0; for (g in gens) ng++
			if (ng != 1) { print ng " generations in one dump"; bad = 1 }
			if (n < 2) { print n " ports"; bad = 1 }
			exit bad
		}' "$1"
}

# the page under the same storm, and the flapper
"$FTPAGE" torture "$((SECONDS_RUN + 5))" > "$FT_TMP/torture" 2>&1 &
torture=$!
ft_defer "kill $torture"
ft_flap_rails 0.05
flapper=$FT_FLAPPER

end=$(($(date +%s) + SECONDS_RUN))
ok=0 intr=0 retried=0 ports_ok=0 ports_intr=0
while [ "$(date +%s)" -lt "$end" ]; do
	"$FTNL" --no-retry paths > "$FT_TMP/dump"
	if [ "$(tail -n 1 "$FT_TMP/dump")" = INTR ]; then
		intr=$((intr + 1))
	else
		why=$(check_paths "$FT_TMP/dump") || fail "unflagged inconsistent path dump: $why"
		ok=$((ok + 1))
	fi
	"$FTNL" paths > "$FT_TMP/dump"
	why=$(check_paths "$FT_TMP/dump") || fail "retried path dump inconsistent: $why"
	retried=$((retried + 1))

	"$FTNL" --no-retry ports > "$FT_TMP/dump"
	if [ "$(tail -n 1 "$FT_TMP/dump")" = INTR ]; then
		ports_intr=$((ports_intr + 1))
	else
		why=$(check_ports "$FT_TMP/dump") || fail "unflagged inconsistent port dump: $why"
		ports_ok=$((ports_ok + 1))
	fi
done
touch "$FT_TMP/stop"
wait "$flapper" || true
ip link set dev eth0 up
ip link set dev eth1 up

log "path dumps: $ok consistent, $intr flagged INTR, $retried retried dumps consistent"
log "port dumps: $ports_ok consistent, $ports_intr flagged INTR"
[ "$intr" -gt 0 ] || log "note: no path dump was interrupted (race window not hit)"
[ "$ok" -gt 0 ] || [ "$intr" -gt 0 ] || fail "no dump completed"

kill -TERM "$torture" 2> /dev/null || true
if ! wait "$torture"; then
	cat "$FT_TMP/torture" >&2
	fail "ftpage torture found inconsistent rows"
fi
log "$(grep '^# torture' "$FT_TMP/torture" | sed 's/^# //')"

ft_wait_port rxe0 1 ACTIVE
ft_wait_port rxe1 1 ACTIVE
"$FTNL" paths > "$FT_TMP/dump"
check_paths "$FT_TMP/dump" > /dev/null || fail "final dump inconsistent"
ft_expect "all paths up at the end" "$("$FTNL" paths -f path_state | sort -u)" "path_state=UP"
exit 0
