#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: where UCX can move data over Soft-RoCE at all, it moves the same
# under shiftu-run: ucx_perftest's tag_bw between two processes on rxe0
# (rc_verbs, wired up over ud_verbs, through the device's own loopback)
# completes, without the library and then with it.  Where the plain run cannot (UCX 1.13 aborts in its
# own wire-up on Soft-RoCE, LAB.md), the test skips with that run's error.
#
#     ucx_perftest (server) ◄── rc_verbs on rxe0:1 ──► ucx_perftest 127.0.0.1 (client)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup
ft_require_cmd ucx_perftest timeout

export UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc_verbs,ud_verbs,self
PORT=13337

# perf TAG [PREFIX...]: one server and one client, 20 s at most each;
# TAG.srv, TAG.cli, and the client's exit status returned
perf()
{
	local tag=$1 rc=0 srv
	shift
	timeout 20 "$@" ucx_perftest -p "$PORT" > "$FT_TMP/$tag.srv" 2>&1 &
	srv=$!
	sleep 1
	timeout 20 "$@" ucx_perftest -p "$PORT" -t tag_bw -s 65536 -n 2000 127.0.0.1 \
		> "$FT_TMP/$tag.cli" 2>&1 || rc=$?
	wait "$srv" || true
	PORT=$((PORT + 1))
	return "$rc"
}

rc=0
perf plain || rc=$?
if [ "$rc" != 0 ]; then
	why=$(grep -h -m1 -iE 'error|abort|fail|not available' "$FT_TMP/plain.cli" "$FT_TMP/plain.srv" |
	      head -n 1 | tr -s ' ')
	[ -n "$why" ] || why=$(tail -n 2 "$FT_TMP/plain.cli" | tr -s ' \n' ' ')
	skip "ucx_perftest cannot move data over Soft-RoCE here, without the library either (client exit $rc$([ "$rc" = 124 ] && echo ', timed out after 20 s')): ${why:-no output}"
fi
log "plain: $(tail -n 1 "$FT_TMP/plain.cli")"
perf lib "$LS_RUN" -q -l info -o "$FT_TMP/lib.shiftu" -- ||
	{ sed 's/^/# /' "$FT_TMP/lib.cli" "$FT_TMP/lib.shiftu" | tail -30; fail "ucx_perftest failed under shiftu-run"; }
log "shiftu-run: $(tail -n 1 "$FT_TMP/lib.cli")"
grep -q 'context rxe0: interposed' "$FT_TMP/lib.shiftu" || fail "the library did not interpose UCX's context"
