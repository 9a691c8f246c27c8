#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a QP is protected only once its twin and the peer's have joined
# each other, so that a failover's count always reaches a twin that can
# answer it.  A CI run of failover_cqex.sh (at f1c55da) failed so: the
# client's library called its QP protected once its own twin was in RTS;
# the cable was pulled, and its count, retried for ever (Soft-RoCE takes a
# retry count of 7 for "for ever"), reached the server's twin as soon as
# that was in RTR.  The server's library, starved of the CPU between RTR
# and RTS, found its twin not ready, did not follow, and dropped the
# message; the client waited 10 s for an answer that never came and gave
# its requests up flushed.  Here the server's twins wait 4 s in RTR
# (its library's SHIFTU_TEST_JOIN_DELAY_MS, the test build), and host 1's
# rail 0 is pulled 1 s after the client's library calls its QP protected:
# that comes only once the server's twin is in RTS (4 s at least after
# the client's context opened), and shiftgen's WRITE_WITH_IMM traffic
# rides the pull, both sides failing over and back: nothing lost,
# duplicated, reordered or corrupt, no error, no warning.
#
#     host 1 (shiftgen client)                        host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: host 1's out ~3 s, 1 s after protection ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins; host 2's 4 s in RTR) ─────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_JOIN_DELAY_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

DELAY=4000
LU_PULL_ON=1 LU_PULL_BY=link LU_PULL_AT=ready LU_RIDE_END=1
tag=late_join

# milliseconds of the day of a library line's time stamp (HH:MM:SS.micro)
ms_of()
{
	awk -F'[:. ]' '{ printf "%d\n", (($1 * 60 + $2) * 60 + $3) * 1000 + substr($4, 1, 3) }'
}

lu_keep "$tag" late_join
LU_SRV_ENV=SHIFTU_TEST_JOIN_DELAY_MS=$DELAY LU_DURING=lu_pull \
	lu_pair "$tag" 1 "$GEN" -m write_imm -D 40
grep -q "config: SHIFTU_TEST_JOIN_DELAY_MS=$DELAY" "$FT_TMP/$tag.srv.shiftu" ||
	lu_fail "$tag" "the server's library did not take the test setting"
lu_gen_clean "$tag"
t0=$(grep -m1 'context rxe0: interposed' "$FT_TMP/$tag.cli.shiftu" | ms_of)
t1=$(grep -m1 'protected by qp' "$FT_TMP/$tag.cli.shiftu" | ms_of)
{ [ -n "$t0" ] && [ -n "$t1" ]; } || lu_fail "$tag" "cli: no context or protection line"
log "$tag: the client's QP was protected $((t1 - t0)) ms after its context opened; the server's twin waits $DELAY ms in RTR"
[ $((t1 - t0)) -ge "$DELAY" ] ||
	lu_fail "$tag" "cli: protected $((t1 - t0)) ms after its context opened, before the server's twin could be in RTS ($DELAY ms)"
lu_moves_back "$tag" cli
lu_check_log "$tag" cli "failovers>=1" "twin_wcs>0"
# the server followed the client over (and back)
lu_check_log "$tag" srv "failovers>=1"
log "$tag cli: $(grep -o 'failed over to qp.*' "$FT_TMP/$tag.cli.shiftu" | head -n 1)"
log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
