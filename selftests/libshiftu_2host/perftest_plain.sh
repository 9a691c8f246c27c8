#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: what the failover tests ride through is a failure.  Without
# libshiftu, unmodified ib_send_bw, ib_read_bw, ib_write_lat and ib_write_bw,
# with their default flags, stall while the client's rail 0 is down (5 s to
# about 8 s, by a pulled cable): host 1 sends nothing on rail 1, and
# Soft-RoCE, which takes perftest's retry count 7 as "retry forever",
# reports no error either; the programs only go on once the cable is back.
# These are the controls of failover_perftest.sh and failover_write.sh.
#
#     host 1 (client)                                  host 2 (server)
#     PROG ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ PROG
#            rxe1 ─ eth1 ── rail 1 (unused) ──────── eth1 ─ rxe1
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_send_bw ib_read_bw ib_write_lat ib_write_bw
ft_defer lu_cable_restore

# The four together (lu_group_ride), without the library, through one
# pull: rail 1 idle during the outage.  The counts are the rails', the
# four pairs together.
tags=()
lu_group_gate
for run in send_bw:ib_send_bw read_bw:ib_read_bw write_lat:ib_write_lat write_bw:ib_write_bw; do
	tag=${run%%:*}_plain
	LU_BG_PRE=0 lu_bg_start "$tag" 30 "${run#*:}" -F -D 15
	tags+=("$tag")
done
LU_PULL_ON=1 LU_PULL_BY=link LU_BG_PRE=0 lu_group_ride "${tags[@]}"
for tag in "${tags[@]}"; do
	size=65536
	[ "$tag" != write_lat_plain ] || size=2
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: without libshiftu, packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1 (client exit $(cat "$FT_TMP/$tag.cli.rc"))"
	log "$tag: client: $(awk -v s="$size" '$1 == s && NF >= 4' "$FT_TMP/$tag.cli.out")"
	[ ! -e "$FT_TMP/$tag.cli.shiftu" ] || lu_fail "$tag" "the library was loaded"
	[ "$s1" -lt 10 ] || lu_fail "$tag" "rail 1 carried $s1 packets without the library"
done
