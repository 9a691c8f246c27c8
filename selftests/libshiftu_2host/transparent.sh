#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: unmodified perftest runs with libshiftu preloaded on both hosts and
# gets the results it gets without it, and the library sees its verbs.
#
#     host 1                                          host 2
#     ib_* client ── rxe0 ─ eth0 10.0.0.1 ── rail 0 ── eth0 10.0.0.2 ─ rxe0 ── ib_* server
#     LD_PRELOAD=libshiftu.so.0 (or not)              LD_PRELOAD=libshiftu.so.0 (or not)
#     log in $FT_TMP                                  log in host 2's /tmp, fetched
#                  └──────────── TCP handshake over eth0, a port per pair ─────┘
#
# ib_write_bw, ib_read_bw, ib_send_bw and ib_write_lat run with their default
# flags plus only what the lab needs (device, GID index, port, few
# iterations); ib_write_bw and ib_send_bw also with --use_old_post_send.
# Debian's perftest 4.5 posts with ibv_post_send on Soft-RoCE either way
# (seen in the lab: its QPs are not created with send_ops_flags, so the
# ibv_wr_* API is never used), hence the same counters for both.  Each
# runs once plain and once preloaded.  Both runs must exit 0 on both hosts
# and print the same result line shape (#bytes, #iterations); each
# preloaded side's libshiftu log must have one exit line with qps >= 1,
# the counters that program cannot run without, and no error or warn
# line.
#
# The ib_write_bw and ib_read_bw servers are passive (the client moves the
# data; the server only sets its QP up and waits for the client to finish),
# so only their contexts and qps are required to be counted.
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_setup ib_write_bw ib_read_bw ib_send_bw ib_write_lat

BW=(-s 65536 -n 200 -F)
LAT=(-n 200 -F)
NEW="post_send>0 wr_complete=0 poll_cq>0"	# a sender, default flags
OLD="post_send>0 wr_complete=0 poll_cq>0"	# a sender with --use_old_post_send
RECV="post_recv>0 poll_cq>0"			# a receiver of SENDs

# judge TAG SIZE ITERS SRV_RESULT: both sides exited 0, the client (and the
# server, if SRV_RESULT is 1) printed a SIZE ITERS result line.
judge()
{
	local tag=$1 side
	for side in cli srv; do
		[ "$(cat "$FT_TMP/$tag.$side.rc")" = 0 ] ||
			lu_fail "$tag" "$side exited $(cat "$FT_TMP/$tag.$side.rc")"
	done
	[ -n "$(lu_result "$FT_TMP/$tag.cli.out" "$2" "$3")" ] ||
		lu_fail "$tag" "no '$2 $3 ...' result line from the client"
	if [ "$4" = 1 ] && [ -z "$(lu_result "$FT_TMP/$tag.srv.out" "$2" "$3")" ]; then
		lu_fail "$tag" "no '$2 $3 ...' result line from the server"
	fi
}

# run TAG SIZE ITERS SRV_RESULT CLI_REQS SRV_REQS PROG ARGS...: PROG plain,
# then preloaded; judge both, then the preloaded sides' libshiftu logs.
run()
{
	local tag=$1 size=$2 iters=$3 srvres=$4 creq=$5 sreq=$6 prog=$7
	shift 7

	lu_pair "$tag.plain" 0 "$prog" "$@"
	judge "$tag.plain" "$size" "$iters" "$srvres"
	lu_pair "$tag.shiftu" 1 "$prog" "$@"
	judge "$tag.shiftu" "$size" "$iters" "$srvres"
	# shellcheck disable=SC2086 # the requirement lists are words
	lu_check_log "$tag.shiftu" cli "contexts>=1" "qps>=1" $creq
	# shellcheck disable=SC2086
	lu_check_log "$tag.shiftu" srv "contexts>=1" "qps>=1" $sreq
	log "$tag plain:     $(lu_result "$FT_TMP/$tag.plain.cli.out" "$size" "$iters")"
	log "$tag preloaded: $(lu_result "$FT_TMP/$tag.shiftu.cli.out" "$size" "$iters")"
}

run write_bw     65536 200 0 "$NEW" ""      ib_write_bw "${BW[@]}"
run write_bw_old 65536 200 0 "$OLD" ""      ib_write_bw "${BW[@]}" --use_old_post_send
run read_bw      65536 200 0 "$NEW" ""      ib_read_bw "${BW[@]}"
run send_bw      65536 200 1 "$NEW" "$RECV" ib_send_bw "${BW[@]}"
run send_bw_old  65536 200 1 "$OLD" "$RECV" ib_send_bw "${BW[@]}" --use_old_post_send
run write_lat    2     200 0 "$NEW" "$NEW"  ib_write_lat "${LAT[@]}"
