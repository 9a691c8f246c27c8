#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a QP that fails again right after a two-sided failback, while its
# twin is still being reset for the next failover, loses nothing.  The
# default QP may stop by itself then: Soft-RoCE completes a request it
# cannot route with IBV_WC_LOC_QP_OP_ERR (`ip link set down` takes the
# route; the torture run's lost receives), or one it retried in vain with
# IBV_WC_RETRY_EXC_ERR.  Its flushed requests must wait for the twin, not
# reach the application as errors.  The moment is short (the backup
# thread resets a twin in a few ms), so host 1's library holds it open for
# 1.5 s (SHIFTU_TEST_TWIN_RESET_MS), and the client's QPs retry twice with
# a 67 ms timeout (shiftgen -r 2 -t 14), so that the second pull, 0.3 s
# after its library failed back, stops its QP about 0.2 s later.  (The twin
# takes the same attributes; with a 16 ms timeout it gave up on a peer
# merely slow under emulation.)  The server keeps perftest's and NCCL's
# kind of retry count (7: for ever on Soft-RoCE): what it sends to the held
# twin waits for it, as RC does.
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ═══ rail 0: out 3-5 s, and again 0.3 s after the failback, 3 s
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
lu_ride_setup "$GEN"

# The second pull must come well inside the 1.5 s, and every process
# started costs 50-150 ms in a guest whose CPU the pollers hold: builtins
# only from the first pull on (lab-lib.sh's lab_link and lab_nap).
. lab-lib.sh

# failed_back FILE: the libshiftu log FILE says its QP failed back
failed_back()
{
	local l

	while IFS= read -r l; do
		[[ $l == *'failed back from'* ]] && return 0
	done < "$1"
	return 1
}

# twice TAG: host 1's cable out from 3 s to 5 s; then, 0.3 s after its
# library failed back, out again for 3 s
twice()
{
	local f=$FT_TMP/$1.cli.shiftu i

	lab_nap 3
	lab_link eth0 off
	lab_nap 2
	lab_link eth0 on
	for ((i = 0; i < 1000; i++)); do
		failed_back "$f" && break
		lab_nap 0.01
	done
	failed_back "$f" || return 1
	lab_nap 0.3
	lab_link eth0 off
	lab_nap 3
	lab_link eth0 on
}

LU_CLI_ENV=SHIFTU_TEST_TWIN_RESET_MS=1500 LU_CLI_ARGS="-r 2 -t 14" LU_DURING=twice \
	lu_pair imm 1 "$GEN" -m write_imm -D 25
lu_gen_clean imm
f=$FT_TMP/imm.cli.shiftu
grep -q 'while its twin is being reset: waiting for it' "$f" ||
	lu_fail imm "client: no error completion met the twin being reset (the race was not reached)"
lu_check_log imm cli "failovers=2" "failbacks=2" "twin_wcs>0"
lu_check_log imm srv "failovers=2" "failbacks=2"
log "imm cli: $(grep -o 'qp [0-9]* on rxe0: [^:]* while its twin is being reset.*' "$f")"
log "imm cli: $(grep -o 'failed over to qp.*' "$f" | tail -n 1)"
log "imm: $(grep '^shiftgen: role=server' "$FT_TMP/imm.srv.out")"
