#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a QP that fails again right after a two-sided failback, while its
# twin is still being reset for the next failover, loses nothing.  Soft-RoCE
# completes a request it cannot route with IBV_WC_LOC_QP_OP_ERR and stops
# the QP by itself (`ip link set down` takes the route): the flushed
# requests must wait for the twin, not reach the application as errors.
# The moment is short (the backup thread resets a twin in a few ms), so the
# libraries hold it open for 1.5 s (SHIFTU_TEST_TWIN_RESET_MS); host 1's
# route goes 0.3 s after its library logged the failback, once the client
# posts again (it has just replayed a window's worth and waits for credits).
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ═══ rail 0: cable out 3-5 s; route out 0.3 s after the failback, 3 s
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
lu_ride_setup "$GEN"

# cut TAG: the cable out from 3 s to 5 s; then, 0.3 s after the client's
# failback, its route out for 3 s
cut()
{
	local f=$FT_TMP/$1.cli.shiftu

	sleep 3
	lab-link eth0 off
	sleep 2
	lab-link eth0 on
	for _ in $(seq 1000); do
		grep -q 'failed back from' "$f" 2> /dev/null && break
		sleep 0.02
	done
	grep -q 'failed back from' "$f" || return 1
	sleep 0.3
	ip link set eth0 down
	sleep 3
	ip link set eth0 up
}

LU_ENV=SHIFTU_TEST_TWIN_RESET_MS=1500 LU_DURING=cut lu_pair imm 1 "$GEN" -m write_imm -D 25
lu_gen_clean imm
f=$FT_TMP/imm.cli.shiftu
grep -q 'while its twin is being reset: waiting for it' "$f" ||
	lu_fail imm "client: no error completion met the twin being reset (the race was not reached)"
lu_check_log imm cli "failovers=2" "failbacks=2" "twin_wcs>0"
lu_check_log imm srv "failovers=2" "failbacks=2"
log "imm cli: $(grep -o 'qp [0-9]* on rxe0: [^:]* while its twin is being reset.*' "$f")"
log "imm cli: $(grep -o 'failed over to qp.*' "$f" | tail -n 1)"
log "imm: $(grep '^shiftgen: role=server' "$FT_TMP/imm.srv.out")"
