#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: when a failover's replay cannot post all the outstanding sends on
# the twin, none of them is lost: those posted complete there, the others
# complete flushed at once, and the QP is given up, its errors going to
# the application.  The replay is made to fail by a test setting
# (SHIFTU_TEST_REPLAY_FAIL=3: its third post on fails with EIO); a real
# twin refuses a post only when it is broken itself.  shiftgen's client
# signals every WR (--signal-all), so that each must come back exactly
# once, good or flushed: it counts those that did not (unfinished=N).
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: lossy at 3 s, pulled at 4 s ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins; replay cut short) ── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_REPLAY_FAIL); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup
lu_require_netem

# cut TAG: 3 s in, host 1's rail 0 drops all it sends for a second, so
# that its requests stay outstanding, then goes down until the client's
# replay failed (10 s at most), then comes back
cut()
{
	local i

	lab_nap 3
	tc qdisc add dev eth0 root netem loss 100%
	lab_nap 1
	lu_cable 1 link off
	tc qdisc del dev eth0 root
	for ((i = 0; i < 100; i++)); do
		grep -q 'replay failed' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		lab_nap 0.1
	done
	lu_cable 1 link on
}

lu_keep replay replay_fail
LU_CLI_ENV=SHIFTU_TEST_REPLAY_FAIL=3 LU_DURING=cut \
	lu_pair replay 1 "$GEN" -m write --signal-all -D 12
grep -q 'config: SHIFTU_TEST_REPLAY_FAIL=3' "$FT_TMP/replay.cli.shiftu" ||
	lu_fail replay "the client's library did not take the test setting"
grep -qE 'qp [0-9]+ on rxe0: replay failed: Input/output error: the application gets the errors' \
	"$FT_TMP/replay.cli.shiftu" || lu_fail replay "the client's replay did not fail"
log "replay: $(grep -o 'qp [0-9]* on rxe0: replay failed.*' "$FT_TMP/replay.cli.shiftu")"
# the application's errors, and an exit of its own (1), not a crash
ft_expect "replay client exit" "$(cat "$FT_TMP/replay.cli.rc")" 1
errors=$(lu_gen errors "$FT_TMP/replay.cli.out")
[ "${errors:-0}" -gt 0 ] || lu_fail replay "the client saw no error completion"
ft_expect "replay client unfinished" "$(lu_gen unfinished "$FT_TMP/replay.cli.out")" 0
ft_expect "replay client corrupt" "$(lu_gen corrupt "$FT_TMP/replay.cli.out")" 0
log "replay: $(grep '^shiftgen: role=client ' "$FT_TMP/replay.cli.out")"
