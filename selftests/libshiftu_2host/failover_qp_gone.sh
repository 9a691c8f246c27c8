#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a QP the application destroys while its work is on its twin
# leaves the CQs it shared, and the traffic of the QPs that stay rides on
# through the outage and back.  Each side of shiftgen has a second QP on
# its CQs (--spare-qp), connected to the other's and carrying nothing.
# Host 1's rail 0 is pulled 5 s in: both QPs fail over to rail 1.  The
# client destroys its spare 7 s in, while both are there, and goes on
# polling the CQs the spare's twin had joined; rail 0 comes back at 10 s
# and the traffic QP fails back.  A destroyed QP still counted among its
# CQs' twins is read through a NULL pointer on the next poll.
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══════ rail 0: pulled 5 s to 8 s ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup

lu_keep gone gone
LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull \
	lu_pair gone 1 "$GEN" -m write_imm --spare-qp 7 -D 13
read -r off on < "$FT_TMP/gone.times"
log "gone: host 1's rail 0 down from $off ms to $on ms after the client's start"
lu_gen_clean gone

# the client's two QPs, from its library's log: the spare is the one
# shiftgen destroyed
spare=$(sed -n 's/^.*destroyed the spare QP (qp \([0-9]*\)).*$/\1/p' "$FT_TMP/gone.cli.out")
[ -n "$spare" ] || lu_fail gone "the client did not destroy its spare QP"
log "gone: $(grep -o 'destroyed the spare QP.*' "$FT_TMP/gone.cli.out")"
grep -qE "qp $spare on rxe0: .*failed over to qp [0-9]+ on rxe1 port 1" \
	"$FT_TMP/gone.cli.shiftu" || lu_fail gone "the spare QP did not fail over before it was destroyed"
grep -qE "qp $spare on rxe0: failed back" "$FT_TMP/gone.cli.shiftu" &&
	lu_fail gone "the spare QP failed back after it was destroyed"
grep -E "qp [0-9]+ on rxe0: failed back from rxe1" "$FT_TMP/gone.cli.shiftu" |
	grep -qv "qp $spare " || lu_fail gone "the traffic QP did not fail back"
# both QPs failed over, only the one left failed back; it carried traffic
# on its twin after the spare was gone
lu_check_log gone cli "qps=2" "failovers=2" "failbacks=1" "twin_wcs>0"
log "gone: $(grep '^shiftgen: role=server ' "$FT_TMP/gone.srv.out")"
