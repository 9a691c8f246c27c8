#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified ib_write_bw, preloaded with libshiftu on both hosts,
# keeps writing through rail 0 going down for about 3 s, the client's or
# the server's, by a pulled cable (QEMU's set_link) or by `ip link set eth0
# down` in the guest: the client's health page shows its port down (its own) or
# the path down (the server's cable, relayed by the shiftmon agents; or the
# server's library, which sees its port go on its page, fails over first and
# tells the client), the library fails the QP over to its twin on rxe1 (set
# up in the background, attributes exchanged through Redis), replays what
# was outstanding, and the run ends with exit 0 and its result line, with
# rail 1 carrying the traffic during the outage, and back on rail 0 after
# it.  The same run without the library stalls: neither rail moves while
# the cable is out (perftest_plain.sh, with the other programs' controls).
#
#     host 1 (client)                                   host 2 (server)
#     ib_write_bw ─ rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══ eth0 ─ rxe0 ─ ib_write_bw
#          └─ twin ─ rxe1 ─ eth1 ── rail 1 ───────────────── eth1 ─ rxe1 ─ twin ┘
#     redis-server 10.0.2.1 ─────── mgmt ───────── (host 2's library)
#     shiftmon agent ──────────────────────────── shiftmon agent
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$SM" ] || skip "shiftmon not built (make -C $SHIFT_TOP/tools/shiftmon)"
lu_ride_setup ib_write_bw
"$SMR_PATHS_CLEAR"
lu_peer_run "$SMR_PATHS_CLEAR"
ft_defer "lu_peer_try $SMR_PATHS_CLEAR"
ft_defer "$SMR_PATHS_CLEAR"
smr_agent_start
smr_agent_peer_start

# Each ride ends once its pull is over (lu_end; -D only bounds it, and -f 2
# keeps perftest's margin, a quarter of -D by default, at 2 s), and the pull
# comes once the clients' QPs are protected and moving data, not at a
# fixed 5 s (lu_pull_ready).
LU_DURING=lu_pull LU_PULL_AT=ready LU_RIDE_END=1

ARGS=(-s 65536 -D 30 -f 2 -F)

# ride TAG CAUSE BACK: the run with the library on both ends, rail 0 of
# host $LU_PULL_ON down by $LU_PULL_BY (lu_pull); the client's QP fails
# over for CAUSE, an extended regex ("port down" when its own cable is out,
# or, with `ip link set down`, the error completion of a send that rxe
# could not transmit, which may come before the port's event; "path down"
# or "the peer failed over" when the server's is), and with
# BACK=1 must be back on rail 0 after the repair.
ride()
{
	local tag=$1 cause=$2 back=$3 s0 s1 r0 r1
	lu_pair "$tag" 1 ib_write_bw "${ARGS[@]}"
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: with libshiftu, rail 0 down on host $LU_PULL_ON by $LU_PULL_BY; packets sent during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
	lu_exited_ok "$tag"
	# with -D the iteration count varies: any 65536-byte result line
	[ -n "$(awk '$1 == 65536 && NF >= 5' "$FT_TMP/$tag.cli.out")" ] ||
		lu_fail "$tag" "no result line from the client"
	grep -qE "($cause): failed over to qp [0-9]* on rxe1 port 1" "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail over for '$cause'"
	grep -q 'protected by qp' "$FT_TMP/$tag.srv.shiftu" ||
		lu_fail "$tag" "the server's QP was not protected"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	# the writes on the twin completed (a twin that is not connected would
	# only see retransmissions), and the application saw those completions;
	# once: a path the server's page still shows down after the failback
	# (the agents relay late) went down before it and moves nothing
	lu_check_log "$tag" cli "failovers=1" "twin_wcs>0"
	log "$tag: $(grep -oE "($cause): failed over.*" "$FT_TMP/$tag.cli.shiftu")"
	log "$tag: client: $(awk '$1 == 65536 && NF >= 5' "$FT_TMP/$tag.cli.out")"
	[ "$back" = 1 ] || return 0
	# back on the repaired rail by itself
	lu_check_log "$tag" cli "failbacks=1"
	grep -q 'failed back from rxe1' "$FT_TMP/$tag.cli.shiftu" ||
		lu_fail "$tag" "the client's QP did not fail back"
	grep -q 'reset for the peer.s failback' "$FT_TMP/$tag.srv.shiftu" ||
		lu_fail "$tag" "the server's QP was not reset for the failback"
	[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
	log "$tag: $(grep -o 'failed back from.*' "$FT_TMP/$tag.cli.shiftu")"
}

# Where a packet the qdisc refuses fails its QP (LU_RXE_XMIT_FATAL: 6.12),
# host 1's own pull can fail the client's QP before its port's event is
# read, and the request that failed completes flushed with the rest, its
# own status ("local QP operation error" on 6.1) lost: that is the pull too.
OWN=
[ "$LU_RXE_XMIT_FATAL" = 0 ] || OWN="|work request flushed"
# The agents relay host 1's port down to host 2's page, and host 2's library
# may read it and fail over first (CI: 133 ms before host 1's library read
# its own port's event, on a starved guest): the client then moves with its
# peer, having seen its port go down all the same.
ride client_pull "port down|the peer failed over$OWN" 1
grep -qE 'qp [0-9]+ on rxe0 port 1: port down' "$FT_TMP/client_pull.cli.shiftu" ||
	lu_fail client_pull "the client's library did not see its port go down"
LU_PULL_ON=2
ride server_pull "path down|the peer failed over" 1
LU_PULL_BY=ip
ride server_ip "path down|the peer failed over" 1
LU_PULL_ON=1
ride client_ip "port down|local QP operation error$OWN" 1
