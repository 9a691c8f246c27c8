#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a failover that needs a backup rkey of the peer's which the look
# ahead has not fetched yet holds its sends until the shadow thread has
# it from the store, then replays them: nothing lost, duplicated, reordered
# or corrupt, no error, no warning.  Under load (many_procs.sh, issue 17
# item 8) a QP failed over 2.8 s after it was protected, before the look
# ahead had read its ring; the replay found no backup for the server's rkey
# and the application got the errors.  Here the client's look ahead reads
# no ring for its first 8 s (SHIFTU_TEST_SCOUT_DELAY_MS, the test build),
# and host 1's rail 0 is pulled 1 s after the client's QP is protected:
# shiftgen's WRITE_WITH_IMM traffic (a message outstanding: the replay
# waits for the peer's count, then for the key) and its plain WRITEs
# (replayed at once by the move, which now waits for the key) ride it.
#
#     host 1 (shiftgen client)                         host 2 (shiftgen server)
#     rxe0 ─ eth0 ══ rail 0: host 1's out ~3 s, 1 s after protection ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────────────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build (SHIFTU_TEST_SCOUT_DELAY_MS); lu_setup skips without it
LU_LIB=$LU_TEST_LIB

lu_gen_ride_setup

DELAY=8000
LU_PULL_ON=1 LU_PULL_BY=link LU_PULL_AT=ready LU_RIDE_END=1

# ride MODE: shiftgen in MODE through the pull; the client's move held
# its sends for the server's rkey and replayed them once it came
ride()
{
	local tag=$1

	lu_keep "$tag" rkey_hold
	LU_CLI_ENV=SHIFTU_TEST_SCOUT_DELAY_MS=$DELAY LU_DURING=lu_pull \
		lu_pair "$tag" 1 "$GEN" -m "$1" -D 40
	grep -q "config: SHIFTU_TEST_SCOUT_DELAY_MS=$DELAY" "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's library did not take the test setting"
	lu_gen_clean "$tag"
	grep -q 'failed over to qp' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail over"
	grep -q 'not looked up ahead yet: sends held' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's move did not wait for the server's rkey (the look ahead had it first?)"
	grep -q 'requests replayed' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's held sends were not replayed"
	lu_check_log "$tag" cli "failovers>=1" "twin_wcs>0"
	# in write mode the server posts nothing: it answers and stays
	if [ "$1" = write_imm ]; then
		lu_check_log "$tag" srv "failovers>=1"
	else
		lu_check_log "$tag" srv
	fi
	log "$tag: $(grep -o 'qp [0-9]* on rxe0: .*not looked up ahead yet: sends held.*' "$FT_TMP/$tag.cli.shiftu" | head -n 1)"
	log "$tag: $(grep -o 'qp [0-9]* on rxe0: the peer.s rkeys came.*' "$FT_TMP/$tag.cli.shiftu" | head -n 1)"
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

ride write_imm
ride write
