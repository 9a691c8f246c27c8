#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a QP that fails again right after a two-sided failback, while its
# twin is still being reset for the next failover, loses nothing.  The
# default QP may stop by itself then: Soft-RoCE completes a request it
# cannot route with IBV_WC_LOC_QP_OP_ERR (`ip link set down` takes the
# route; the torture run's lost receives), or one it retried in vain with
# IBV_WC_RETRY_EXC_ERR.  Its flushed requests must wait for the twin, not
# reach the application as errors.  A failback renews its twin itself now,
# so host 1's library is made to leave it to the backup thread and to hold
# it back for 1.5 s (SHIFTU_TEST_TWIN_RESET_MS), and the client's QPs retry
# twice with a 67 ms timeout (shiftgen -r 2 -t 14), so that the second
# pull, 0.3 s after its library failed back, stops its QP about 0.2 s
# later.  (The twin
# takes the same attributes; with a 16 ms timeout it gave up on a peer
# merely slow under emulation.)  The server keeps perftest's and NCCL's
# kind of retry count (7: for ever on Soft-RoCE): what it sends to the held
# twin waits for it, as RC does.
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ═══ rail 0: out 2 s, and again 0.3 s after the failback, 2 s (up to 3 times)
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_TWIN_RESET_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

# The second pull must come well inside the 1.5 s, and every process
# started costs 50-150 ms in a guest whose CPU the pollers hold: builtins
# only from the first pull on (lab-lib.sh's lab_link and lab_nap).

# lines FILE WORDS: how many lines of FILE hold WORDS
lines()
{
	local l n=0

	while IFS= read -r l; do
		[[ $l == *"$2"* ]] && n=$((n + 1))
	done < "$1"
	echo "$n"
}

# back FILE N: wait (10 s at most) until FILE logs its QP's Nth failback
back()
{
	local i

	for ((i = 0; i < 1000; i++)); do
		[ "$(lines "$1" 'failed back from')" -ge "$2" ] && return 0
		lab_nap 0.01
	done
	return 1
}

# cycles TAG: up to three times, until the client's library has met the
# race: host 1's cable out for 2 s; 0.3 s after its library failed back,
# out again for 2 s; back on rail 0 before the next.  Whether the second
# pull stops the QP in time depends on its having requests unacknowledged
# then (not while it waits for credits), which is up to the traffic.  The
# client runs until the cycles are done (SIGUSR1), 55 s at most: three
# cycles took longer than its 40 s once.
cycles()
{
	local f=$FT_TMP/$1.cli.shiftu c n

	lab_nap 3
	for ((c = 0; c < 3; c++)); do
		n=$(lines "$f" 'failed back from')
		lab_link eth0 off
		lab_nap 2
		lab_link eth0 on
		back "$f" $((n + 1)) || return 1
		lab_nap 0.3
		lab_link eth0 off
		lab_nap 2
		lab_link eth0 on
		back "$f" $((n + 2)) || return 1
		[ "$(lines "$f" 'while its twin is being reset')" = 0 ] || break
	done
	echo "$((c < 3 ? c + 1 : 3))" > "$FT_TMP/$1.cycles"
	# the client is the only shiftgen on host 1
	pkill -USR1 -x shiftgen || true
}

lu_keep imm failover_after_failback
LU_CLI_ENV=SHIFTU_TEST_TWIN_RESET_MS=1500 LU_CLI_ARGS="-r 2 -t 14" LU_DURING=cycles \
	lu_pair imm 1 "$GEN" -m write_imm -D 55
lu_gen_clean imm
f=$FT_TMP/imm.cli.shiftu
lu_check_log imm cli "failovers>=2" "failbacks>=2" "twin_wcs>0"
lu_check_log imm srv "failovers>=2" "failbacks>=2"
grep -q 'while its twin is being reset: waiting for it' "$f" ||
	skip "no error completion met the client's twin being reset in $(cat "$FT_TMP/imm.cycles") cycles (the race was not reached; nothing was lost)"
log "imm: the race reached in cycle $(cat "$FT_TMP/imm.cycles")"
log "imm cli: $(grep -o 'qp [0-9]* on rxe0: [^:]* while its twin is being reset.*' "$f")"
log "imm cli: $(grep -o 'failed over to qp.*' "$f" | tail -n 1)"
log "imm: $(grep '^shiftgen: role=server' "$FT_TMP/imm.srv.out")"
