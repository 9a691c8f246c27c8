#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a SEND longer than the receive it lands in stays the
# application's error on both sides, with the library as without it.
# ibv_rc_pingpong's client sends 8 KiB into the server's 4 KiB receives
# (-s differs; nobody here wrote either end).  Soft-RoCE's responder
# finds the receive too short (rxe_resp.c: copy_data() fails,
# RESPST_ERR_MALFORMED_WQE): the server's receive completes with "local QP
# operation error", which the library otherwise takes for a path's (the
# status Soft-RoCE gives a request it could not send), and the client's
# SEND with "remote operation error".  Each library must leave its
# application the error (the receive's status is told apart by the
# provider's rings: no request of the send ring failed so under its id),
# and neither may fail over: a failover would post the receive again on
# the twin, and the server would wait for a message that never comes.
# Both ends must exit 1 on the same statuses as in the control without
# the library, run first.  The server's QP must be protected when its
# receive fails (else its error is the application's whatever it is, and
# the test proves nothing): its first message would come before its twin
# could join, so host 1 holds what it sends to the pair's TCP port 3 s
# (netem on eth2, that port only), the client's address among it, which
# the server waits for before its QP goes to RTR, and the client's "done",
# which the server waits for before it polls.  (The client's QP goes to
# RTS as it sends its first message, never protected before it: its
# "remote operation error" is the application's in any case.)  Twins join
# in about 0.5 s here, but a CI run's took over 2 s, beyond the hold: a
# ride whose server was not protected yet proves nothing and is run
# again, up to 3 times.  The library of 8430689 took the server's error
# for a path's and failed over: the server then waited for ever (killed
# after 60 s).
#
#     host 1 (ibv_rc_pingpong -s 8192)               host 2 (ibv_rc_pingpong -s 4096)
#     rxe0 ─ eth0 10.0.0.1 ══ rail 0 ═══════════════ eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ── rail 1 (the twins) ─── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ── mgmt: the programs' TCP ── eth2 10.0.2.2
#     redis-server (store)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_ride_setup ibv_rc_pingpong
lu_require_netem
# what host 1 sends to the pair's TCP port waits 3 s (prio's third band);
# the rest, the store's answers among it, goes as before
ft_defer "tc qdisc del dev eth2 root 2> /dev/null"
tc qdisc add dev eth2 root handle 1: prio
tc qdisc add dev eth2 parent 1:3 handle 30: netem delay 3s

# status TAG SIDE: the status SIDE's pingpong failed on ("Failed status
# STATUS (N) for wr_id W"), empty if none
status()
{
	sed -n 's/^Failed status \(.*\) ([0-9]*) for wr_id.*/\1/p' "$FT_TMP/$1.$2.out" | head -n 1
}

declare -A PLAIN
# short TAG PRE: the pair, without the library (PRE 0) or with it; both
# sides must fail as the control did
short()
{
	local tag=$1 pre=$2 port=$LU_PORT side rc st

	LU_PORT=$((LU_PORT + 1))
	lu_keep "$tag" recv_short
	rm -f "$FT_TMP/$tag".*
	tc filter del dev eth2 parent 1: 2> /dev/null || true
	tc filter add dev eth2 parent 1: protocol ip u32 match ip dport "$port" 0xffff flowid 1:3
	LU_GIDX_OPT=-g lu_srv_start "$tag" "$pre" 60 ibv_rc_pingpong "$port" -s 4096 -n 10
	LU_CLI_SECS=50 lu_cli "$tag" "$pre" ibv_rc_pingpong -d rxe0 -g "$LU_GIDX" -p "$port" \
		-s 8192 -n 10 "$LU_TCP"
	for side in cli srv; do
		rc=$(cat "$FT_TMP/$tag.$side.rc")
		st=$(status "$tag" "$side")
		if [ "$rc" != 1 ] || [ -z "$st" ]; then
			lu_fail "$tag" "$side exited $rc with no failed status ($(tail -n 1 "$FT_TMP/$tag.$side.out"))"
		elif [ "$pre" = 0 ]; then
			PLAIN[$side]=$st
		elif [ "$st" != "${PLAIN[$side]}" ]; then
			lu_fail "$tag" "$side failed on \"$st\", without the library on \"${PLAIN[$side]}\""
		fi
	done
	log "$tag: client: $(status "$tag" cli); server: $(status "$tag" srv)"
}

short short.0 0
for try in 1 2 3; do
	tag=short.$try
	short "$tag" 1
	grep -q "protected by qp" "$FT_TMP/$tag.srv.shiftu" && break
	log "$tag: the server's QP was not protected yet when its receive failed: this ride proves nothing"
	[ "$try" != 3 ] ||
		lu_fail "$tag" "in 3 rides, the server's QP was never protected before its receive failed"
done
for side in cli srv; do
	grep -q "qp [0-9]*: ${PLAIN[$side]}: the application's own error" "$FT_TMP/$tag.$side.shiftu" ||
		lu_fail "$tag" "$side's library did not leave \"${PLAIN[$side]}\" to its application"
done
! grep -q "failed over to qp" "$FT_TMP/$tag.cli.shiftu" "$FT_TMP/$tag.srv.shiftu" ||
	lu_fail "$tag" "a library failed over on the application's error"
lu_check_log "$tag" cli "qps=1" "failovers=0"
lu_check_log "$tag" srv "qps=1" "failovers=0"
log "$tag: server's library: $(grep -o "qp [0-9]*: ${PLAIN[srv]}: the application's own error.*" "$FT_TMP/$tag.srv.shiftu")"
