#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: what the failover tests ride through is a failure.  Without
# libshiftu, unmodified ib_send_bw, ib_read_bw and ib_write_lat, with their
# default flags, stall while the client's rail 0 is down (5 s to about 8 s, by a
# pulled cable): host 1 sends nothing on rail 1, and Soft-RoCE, which takes
# perftest's retry count 7 as "retry forever", reports no error either; the
# programs only go on once the cable is back.  (ib_write_bw's run without
# the library: failover_write.sh.)
#
#     host 1 (client)                                  host 2 (server)
#     PROG ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ PROG
#            rxe1 ─ eth1 ── rail 1 (unused) ──────── eth1 ─ rxe1
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_send_bw ib_read_bw ib_write_lat
ft_defer lu_cable_restore

# stall PROG SIZE TAG ARGS...: PROG -F ARGS without the library through the
# pull; rail 1 idle during the outage
stall()
{
	local prog=$1 size=$2 tag=$3 s0 s1 r0 r1
	shift 3
	LU_PULL_ON=1 LU_PULL_BY=link LU_DURING=lu_pull lu_pair "$tag" 0 "$prog" -F "$@"
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: without libshiftu, packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1 (client exit $(cat "$FT_TMP/$tag.cli.rc"))"
	log "$tag: client: $(awk -v s="$size" '$1 == s && NF >= 4' "$FT_TMP/$tag.cli.out")"
	[ ! -e "$FT_TMP/$tag.cli.shiftu" ] || lu_fail "$tag" "the library was loaded"
	[ "$s1" -lt 10 ] || lu_fail "$tag" "rail 1 carried $s1 packets without the library"
}

stall ib_send_bw 65536 send_bw_plain -D 13
stall ib_read_bw 65536 read_bw_plain -D 13
stall ib_write_lat 2 write_lat_plain -D 13
