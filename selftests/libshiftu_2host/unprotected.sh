#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: with the store unreachable, libshiftu runs the application
# unprotected after one clear log line: ib_write_bw preloaded on both hosts
# gets its result and exits 0, no QP is said to be protected, a cable pull
# is ridden out the way plain verbs ride it (the QP waits for the cable),
# and the library neither crashes, blocks a verb nor fails one.
#
#     host 1 (client)                                host 2 (server)
#     ib_write_bw ─ rxe0 ══ rail 0 (pulled 2 s in, 2 s) ══ rxe0 ─ ib_write_bw
#     SHIFTU_STORE=redis://10.0.2.1:6399: nothing listens there
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_write_bw
LU_STORE=redis://$SMR_ADDR:6399
ft_defer "lab-link eth0 on"

pull()
{
	sleep 2
	lab-link eth0 off
	sleep 2
	lab-link eth0 on
}
LU_DURING=pull

lu_pair nostore 1 ib_write_bw -s 65536 -D 8 -F
for side in cli srv; do
	[ "$(cat "$FT_TMP/nostore.$side.rc")" = 0 ] ||
		lu_fail nostore "$side exited $(cat "$FT_TMP/nostore.$side.rc")"
	n=$(grep -c "store redis://$SMR_ADDR:6399: .*unprotected until it answers" \
		"$FT_TMP/nostore.$side.shiftu" || true)
	[ "$n" = 1 ] || lu_fail nostore "$side: $n log lines about the unreachable store, expected 1"
	! grep -q 'protected by qp' "$FT_TMP/nostore.$side.shiftu" ||
		lu_fail nostore "$side: a QP was protected without a store"
	[ -n "$(lu_exit_lines "$FT_TMP/nostore.$side.shiftu")" ] ||
		lu_fail nostore "$side: no exit line from the library"
done
[ -n "$(awk '$1 == 65536 && NF >= 5' "$FT_TMP/nostore.cli.out")" ] ||
	lu_fail nostore "no result line from the client"
! grep -q 'failed over' "$FT_TMP/nostore.cli.shiftu" || lu_fail nostore "a failover without a twin"
log "nostore: $(grep -m1 'unprotected until it answers' "$FT_TMP/nostore.cli.shiftu")"
log "nostore: $(grep -m1 'twin is not ready' "$FT_TMP/nostore.cli.shiftu" || echo 'no post during the outage')"
log "nostore: client: $(awk '$1 == 65536 && NF >= 5' "$FT_TMP/nostore.cli.out")"
