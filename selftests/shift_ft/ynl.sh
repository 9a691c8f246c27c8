#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: upstream's YNL (tools/net/ynl: its library, and cli.py over it),
# knowing the family only from Documentation/netlink/specs/shift_ft.yaml,
# talks to the real module: its dumps and gets of ports, pairs and paths
# decode to what shiftmon -j shows for the same rows, with no attribute the
# spec does not list for the reply; as root, pair-set and pair-clear through
# cli.py change the pair as ftnl sees it, path-report and path-del through
# it add and remove a row, and YNL decodes the PAIR_NEW event and the
# extended ack of a refused request.
#
#   cli.py, YnlFamily --spec shift_ft.yaml ──┐
#   shiftmon -j show, ftnl  ─────────────────┴── genl "shift_ft" ── rxe0 (eth0), rxe1 (eth1)
set -e
. "$(dirname "$0")/lib.sh"

YNL_DIR=${YNL_DIR:-$SHIFT_TOP/build/ynl}
CLI=$YNL_DIR/tools/net/ynl/cli.py
SPEC=$SHIFT_TOP/Documentation/netlink/specs/shift_ft.yaml
SHIFTMON=$SHIFT_TOP/tools/shiftmon/shiftmon
PY=${YNL_PYTHON:-python3}
G=fe80::ab:1
G2=fe80::ab:2
# the same GIDs as YNL's binary attributes take them
G_HEX=fe800000000000000000000000ab0001
G2_HEX=fe800000000000000000000000ab0002

[ -r "$CLI" ] || skip "no YNL tree in $YNL_DIR (make ynl: needs linux-source-6.12)"
"$PY" -c 'import yaml' 2> /dev/null || skip "$PY lacks yaml (apt-get install python3-yaml)"
ft_setup

# ynl ARGS...: the CLI with our spec (checked against the schema by the
# host test ynl_spec.py), one JSON document per line
ynl() { "$PY" "$CLI" --spec "$SPEC" --no-schema --output-json "$@"; }

# same: each line of stdin, "OP KIND do|dump [JSON]", sent by YNL's
# library (what cli.py runs), agrees with shiftmon's KIND rows; taken
# again if the table changed in between (the generation moved).  One
# Python for them all (ynl_cmp.py): one per comparison made the
# test four minutes long on a loaded guest.
same()
{
	"$PY" "$FT_DIR/ynl_cmp.py" "$SPEC" "$YNL_DIR/tools/net/ynl" "$SHIFTMON" \
		> "$FT_TMP/cmp.out" || { cat "$FT_TMP/cmp.out"; fail "YNL and shiftmon disagree"; }
	cat "$FT_TMP/cmp.out"
}

# a path row to read
"$FTNL" report rxe0 1 "$G" down agent
ft_defer "'$FTNL' path-del rxe0 1 $G"
"$FTNL" pair-clear rxe0 1 2> /dev/null || true
ft_defer "'$FTNL' pair-clear rxe0 1"

idx=$(ft_nl rxe1 1 port_index)
same << EOF
port-get ports dump
pair-get pairs dump
path-get paths dump
port-get ports do {"dev-name": "rxe0", "port-num": 1}
pair-get pairs do {"port-index": $idx}
path-get paths do {"dev-name": "rxe0", "port-num": 1, "remote-gid": "$G_HEX"}
EOF
log "dumps and gets of ports, pairs and paths: YNL and shiftmon agree"

# pair-set to a device that does not exist: no backup, CONFIGURED.  The
# PAIR_NEW event is read through YNL's library on a socket of its own,
# subscribed before the CLI's pair-set: 6.12's cli.py --subscribe with --do
# trips over an event that arrives before the ack (ynl.py _ops() drops its
# op and then reads op.attr_set of None).
"$PY" - "$YNL_DIR/tools/net/ynl" "$SPEC" "$CLI" > "$FT_TMP/set.out" << 'EOF_PY' ||
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from lib import YnlFamily
ynl = YnlFamily(sys.argv[2], '')
ynl.ntf_subscribe('events')
subprocess.run([sys.executable, sys.argv[3], '--spec', sys.argv[2], '--no-schema',
                '--do', 'pair-set', '--json',
                '{"dev-name": "rxe0", "port-num": 1, "backup-dev-name": "rxe9", "backup-port-num": 1}'],
               check=True, stdout=subprocess.DEVNULL)
ok = []
for _ in range(50):
    ynl.check_ntf()
    ok = [n for n in ynl.async_msg_queue if n['name'] == 'pair-new' and
          n['msg']['dev-name'] == 'rxe0' and n['msg']['event'] == 'pair-config' and
          n['msg']['pair-flags'] == {'configured'} and n['msg']['pair-state'] == 'none' and
          'backup-dev-name' not in n['msg']]
    if ok:
        break
    time.sleep(0.1)
print(f'# YNL decoded {len(ynl.async_msg_queue)} events, {len(ok)} the PAIR_NEW of the override')
sys.exit(0 if ok else 1)
EOF_PY
	{ cat "$FT_TMP/set.out"; fail "no PAIR_NEW event for rxe0 decoded by YNL"; }
cat "$FT_TMP/set.out"
ft_expect "ftnl after YNL pair-set" \
	"$("$FTNL" pair rxe0 1 -f backup_dev_name,pair_state,pair_flags)" \
	"$(printf 'backup_dev_name=-\tpair_state=NONE\tpair_flags=CONFIGURED')"
echo 'pair-get pairs do {"dev-name": "rxe0", "port-num": 1}' | same

ynl --do pair-clear --json '{"dev-name": "rxe0", "port-num": 1}' > /dev/null
ft_expect "ftnl after YNL pair-clear" \
	"$("$FTNL" pair rxe0 1 -f backup_dev_name,pair_flags)" \
	"$(printf 'backup_dev_name=rxe1\tpair_flags=0')"
if ynl --do pair-clear --json '{"dev-name": "rxe0", "port-num": 1}' > "$FT_TMP/clear.out" 2>&1; then
	fail "a second pair-clear through YNL succeeded"
fi
grep -q "error: -2\b" "$FT_TMP/clear.out" || { cat "$FT_TMP/clear.out"; fail "second pair-clear: no ENOENT"; }
log "pair-set and pair-clear through YNL: the table follows, ENOENT the second time"

# a path reported and forgotten through YNL (enum names in, a GID as hex)
ft_defer "'$FTNL' path-del rxe0 1 $G2"
ynl --do path-report --json "{\"dev-name\": \"rxe0\", \"port-num\": 1, \"remote-gid\": \"$G2_HEX\",
	\"report-state\": \"down\", \"report-source\": \"agent\", \"flags\": 0}" > /dev/null
ft_expect "ftnl after YNL path-report" \
	"$("$FTNL" path rxe0 1 "$G2" -f report_state,report_source)" \
	"$(printf 'report_state=DOWN\treport_source=AGENT')"
ynl --do path-del --json "{\"dev-name\": \"rxe0\", \"port-num\": 1, \"remote-gid\": \"$G2_HEX\"}" > /dev/null
"$FTNL" --expect-errno ENOENT path rxe0 1 "$G2" 2> /dev/null || fail "the path YNL deleted is still there"
log "path-report and path-del through YNL: the row comes and goes"

# a refused request: YNL shows the extended ack and names the attribute
if ynl --do pair-set --json \
	'{"dev-name": "rxe0", "port-num": 0, "backup-dev-name": "rxe1", "backup-port-num": 1}' \
	> "$FT_TMP/bad.out" 2>&1; then
	fail "pair-set with port-num 0 succeeded"
fi
grep -q "bad-attr.*\.port-num" "$FT_TMP/bad.out" || { cat "$FT_TMP/bad.out"; fail "no extack naming port-num"; }
log "port-num 0 refused: $(tr -d '\n' < "$FT_TMP/bad.out")"
exit 0
