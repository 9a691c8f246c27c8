#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified ib_write_bw, preloaded with libshiftu on both hosts,
# keeps writing through a pull of the client's rail-0 cable: the health page
# shows the port down, the library fails the QP over to its twin on rxe1
# (set up in the background, attributes exchanged through Redis), replays
# what was outstanding, and the run ends with exit 0 and its result line,
# with rail 1 carrying the traffic during the outage.  The same run without
# the library stalls: neither rail moves while the cable is out.
#
#     host 1 (client)                                   host 2 (server)
#     ib_write_bw ─ rxe0 ─ eth0 ══ rail 0 (pulled 3 s in) ══ eth0 ─ rxe0 ─ ib_write_bw
#          └─ twin ─ rxe1 ─ eth1 ── rail 1 ───────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_write_bw
ft_require_cmd redis-server redis-cli
smr_redis_start
LU_STORE=$SMR_STORE
ft_defer "lab-link eth0 on"

pkts() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }

# pull TAG: while the client runs, pull rail 0 3 s in, and count what each
# rail sent from 1 s after the pull for 2 s; plug it back after that.
pull()
{
	local tag=$1 a0 a1
	sleep 3
	lab-link eth0 off
	sleep 1
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	sleep 2
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$tag.outage"
	lab-link eth0 on
}
LU_DURING=pull

ARGS=(-s 65536 -D 8 -F)

lu_pair plain 0 ib_write_bw "${ARGS[@]}"
read -r p0 p1 < "$FT_TMP/plain.outage"
log "without libshiftu, packets sent during the outage: rail 0 $p0, rail 1 $p1 (exit $(cat "$FT_TMP/plain.cli.rc"))"
[ "$p1" -lt 10 ] || lu_fail plain "rail 1 carried $p1 packets without the library"

lu_pair shiftu 1 ib_write_bw "${ARGS[@]}"
read -r s0 s1 < "$FT_TMP/shiftu.outage"
log "with libshiftu, packets sent during the outage: rail 0 $s0, rail 1 $s1"
for side in cli srv; do
	[ "$(cat "$FT_TMP/shiftu.$side.rc")" = 0 ] ||
		lu_fail shiftu "$side exited $(cat "$FT_TMP/shiftu.$side.rc")"
done
# with -D the iteration count varies: any 65536-byte result line
[ -n "$(awk '$1 == 65536 && NF >= 5' "$FT_TMP/shiftu.cli.out")" ] ||
	lu_fail shiftu "no result line from the client"
grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/shiftu.cli.shiftu" ||
	lu_fail shiftu "the client's QP did not fail over"
grep -q 'protected by qp' "$FT_TMP/shiftu.srv.shiftu" ||
	lu_fail shiftu "the server's QP was not protected"
[ "$s1" -gt 100 ] || lu_fail shiftu "rail 1 carried only $s1 packets during the outage"
# the writes on the twin completed (a twin that is not connected would only
# see retransmissions), and the application saw those completions
lu_check_log shiftu cli "failovers=1" "replayed>=0" "twin_wcs>0"
log "$(grep -o 'port down: failed over.*' "$FT_TMP/shiftu.cli.shiftu")"
log "client: $(awk '$1 == 65536 && NF >= 5' "$FT_TMP/shiftu.cli.out")"
