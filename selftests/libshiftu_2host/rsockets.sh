#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: rsockets (librdmacm's sockets over RC QPs: RDMA WRITE with
# immediate for the data and the credits, much as NCCL moves its own) work
# the same under shiftu-run on both hosts: rstream with its data check
# (-T v) exits 0 on both ends with and without the library, and under the
# library it rides host 1's rail 0 pulled from 5 s to about 8 s, its traffic on
# rail 1 during the outage, every byte checked.  (Without the library
# rstream cannot ride a pull at all: it waits forever.)
#
#     host 1 (rstream -s 10.0.0.2 -T v)               host 2 (rstream -b 10.0.0.2)
#     rxe0 ─ eth0 ══ rail 0 (down 5-8 s) ══════════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ─────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -x "$LU_RUN" ] || skip "shiftu-run not built (make -C $SHIFT_TOP lib)"
lu_ride_setup rstream

# rs TAG PRE ARGS...: an rstream pair on port 7471 + n over rail 0 (host
# 2's 10.0.0.2), the server started through lu_peer_run's shell and
# waited for, the client here; PRE as lu_env's; LU_DURING as lu_pair's.
RS_PORT=7471
rs()
{
	local tag=$1 pre=$2 port=$RS_PORT
	shift 2
	RS_PORT=$((RS_PORT + 1))

	rm -f "$FT_TMP/$tag".*
	lu_srv_spawn "$tag" "$pre" 90 "rstream -b 10.0.0.2 -p $port -T v $*"
	# rdma_cm listens on no TCP port: give the server its start
	lab_nap 3
	lu_cli "$tag" "$pre" rstream -s 10.0.0.2 -p "$port" -T v "$@"
	lu_exited_ok "$tag"
	log "$tag: client: $(grep -v '^name' "$FT_TMP/$tag.cli.out" | tail -n 1)"
}

for pre in 0 run; do
	lu_keep "plain_$pre" rsockets
	rs "plain_$pre" "$pre" -S 65536 -C 500
done
lu_check_log plain_run cli "qps>=1"

LU_PULL_ON=1 LU_PULL_BY=link
lu_keep pull rsockets
LU_DURING=lu_pull rs pull run -S 65536 -C 2000
read -r s0 s1 < "$FT_TMP/pull.outage"
log "pull: host 1's packets during the outage: rail 0 $s0, rail 1 $s1"
grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/pull.cli.shiftu" ||
	lu_fail pull "the client's QP did not fail over"
lu_check_log pull cli "failovers>=1"
[ "$s1" -gt 100 ] || lu_fail pull "rail 1 carried only $s1 packets during the outage"
