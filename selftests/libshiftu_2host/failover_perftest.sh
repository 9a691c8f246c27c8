#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified perftest programs other than ib_write_bw ride through
# rail 0 going down from 5 s to 10 s, by a pulled cable (QEMU's set_link)
# or by `ip link set eth0 down` in the guest, with libshiftu preloaded on
# both hosts, each with its default flags: ib_send_bw (two-sided: the
# server's receives move to its twin by the handshake), ib_read_bw (READs
# replayed; the probe before failing back is an empty READ, see
# shiftu_probe()), ib_write_lat (both sides send), each with the client's
# rail and with the server's, and ib_send_bw -e, whose both sides sleep in
# their completion channels: the completions their twins make must wake
# them (the library's bell).  Each run exits 0 with its result line, rail
# 1 carries its packets while rail 0 is down, and the QPs come back to
# rail 0 after; the lab's kernel-log check fails the run on any WARN
# (Soft-RoCE's too).  (ib_write_bw is failover_write.sh's.)
#
#     host 1 (client)                                  host 2 (server)
#     PROG ─ rxe0 ─ eth0 ══ rail 0 (down 5-10 s, ════ eth0 ─ rxe0 ─ PROG
#                                  either end)
#       └─ twin ─ rxe1 ─ eth1 ── rail 1 ──────────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library;
#                                                    perftest's TCP)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_send_bw ib_read_bw ib_write_lat
ft_require_cmd redis-server redis-cli
smr_redis_start
LU_STORE=$SMR_STORE
ft_defer lu_cable_restore

pkts() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }

# pull TAG: rail 0 of host $PULL_ON down $PULL_BY from 5 s to 10 s; host
# 1's packets per rail counted over 2 s of the outage and over 2 s once its
# library failed back (12 s at most after 10 s, then half a second)
pull()
{
	local a0 a1
	sleep 5
	lu_cable "$PULL_ON" "$PULL_BY" off
	sleep 1
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	sleep 2
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$1.outage"
	sleep 2
	lu_cable "$PULL_ON" "$PULL_BY" on
	for _ in $(seq 120); do
		grep -q 'failed back from' "$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
		sleep 0.1
	done
	sleep 0.5
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	sleep 2
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$1.after"
}
LU_DURING=pull

# ride ON BY PROG SIZE TAG ARGS...: PROG -F ARGS through rail 0 going down
# on host ON by BY (link, ip); exit 0 both sides, a result line for SIZE
# bytes, rail 1 during the outage, rail 0 after
ride()
{
	local prog=$3 size=$4 tag=$5 s0 s1 r0 r1 side
	PULL_ON=$1 PULL_BY=$2
	shift 5
	lu_pair "$tag" 1 "$prog" -F "$@"
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: host $PULL_ON's rail 0 down by $PULL_BY; packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
	for side in cli srv; do
		[ "$(cat "$FT_TMP/$tag.$side.rc")" = 0 ] ||
			lu_fail "$tag" "$side exited $(cat "$FT_TMP/$tag.$side.rc")"
	done
	[ -n "$(awk -v s="$size" '$1 == s && NF >= 4' "$FT_TMP/$tag.cli.out")" ] ||
		lu_fail "$tag" "no result line from the client"
	grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail over"
	grep -q 'failed back from rxe1' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail back"
	lu_check_log "$tag" cli "failovers=1" "failbacks=1" "twin_wcs>0"
	lu_check_log "$tag" srv "qps>=1"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
	log "$tag: $(grep -o 'failed over to qp.*' "$FT_TMP/$tag.cli.shiftu")"
	log "$tag: $(grep -o 'failed back from.*' "$FT_TMP/$tag.cli.shiftu")"
	log "$tag: client: $(awk -v s="$size" '$1 == s && NF >= 4' "$FT_TMP/$tag.cli.out")"
}

ride 1 link ib_send_bw 65536 send_bw -D 22
ride 2 ip ib_send_bw 65536 send_bw_srv_ip -D 22
ride 1 link ib_read_bw 65536 read_bw -D 22
ride 1 ip ib_read_bw 65536 read_bw_ip -D 22
ride 2 link ib_read_bw 65536 read_bw_srv -D 22
ride 2 link ib_write_lat 2 write_lat -D 22
ride 1 ip ib_write_lat 2 write_lat_ip -D 22
# perftest refuses -D with -e: about 22 s of messages at the lab's rate
ride 1 link ib_send_bw 65536 send_bw_events -e -n 9000
