#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a move waits for an application thread it overtook inside a data
# verb, and gives the QP up, with a warning, rather than guess when the
# thread stays there.  The client's main thread, which posts and polls, is
# stopped by ptrace (holdthread; the library's threads run on) inside
# Soft-RoCE's provider, which the library calls from ibv_post_send,
# ibv_post_recv and ibv_poll_cq with the thread's window open (quiesce.h).
# Rail 0 is pulled while it is held, and the watcher starts the move.
# Each QP has one CQ, as NCCL's do: the receives outstanding are then
# counted from the pollers' counts, which the held thread may be about to
# change.
# The thread is let go once the client's library said what the move does
# about it, not after a time of the test's own: on a starved guest the
# port's event reached the library after a 2.5 s hold had ended, and the
# move had nothing to wait for (CI, 2026-12-02).
# - short: the move says it waits; the thread is let go 1.5 s later; the
#   move goes on then (so it takes over a second), and the traffic rides
#   through the pull and back with shiftgen's checks all passing.
# - long: past the move's bound of 5 s its QP is left unprotected, with a
#   warning, the event (EIO) and no failover; the thread is let go then,
#   and the program goes on on rail 0 once the cable is back.
#
#     host 1 (shiftgen client, held)                 host 2 (shiftgen server)
#     rxe0 ─ eth0 ══════ rail 0: pulled 2 s in ═══════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup
[ -x "$LU_DIR/holdthread" ] || skip "holdthread not built (make -C $LU_DIR)"

# held TAG: a LU_DURING command.  2 s in, the client's main thread is
# stopped inside Soft-RoCE's provider (holdthread) and, once it is, host
# 1's rail 0 pulled; the thread is let go HOLD seconds after the client's
# library logged a line matching SAID (grep -E; 45 s at most), and the
# cable comes back BACK seconds after that.  TAG.hold: holdthread's output.
held()
{
	local tag=$1 cli=$! pid holder i

	lab_nap 2
	pid=$(pgrep -P "$cli" shiftgen) || fail "$tag: no client to hold"
	# 90 s: holdthread's own bound, should this shell be gone
	"$LU_DIR/holdthread" "$pid" librxe- 90 > "$FT_TMP/$tag.hold" 2>&1 &
	holder=$!
	for ((i = 0; i < 300; i++)); do
		grep -q '^held' "$FT_TMP/$tag.hold" && break
		lab_nap 0.1
	done
	grep -q '^held' "$FT_TMP/$tag.hold" ||
		{ wait "$holder"; lu_show "$FT_TMP/$tag.hold"; fail "$tag: the client's thread was not held"; }
	lu_cable 1 link off
	for ((i = 0; i < 450; i++)); do
		grep -qE "$SAID" "$FT_TMP/$tag.cli.shiftu" && break
		lab_nap 0.1
	done
	grep -qE "$SAID" "$FT_TMP/$tag.cli.shiftu" || log "$tag: the library did not say '$SAID' in 45 s"
	lab_nap "$HOLD"
	kill -USR1 "$holder" 2> /dev/null || true
	wait "$holder" || { lu_show "$FT_TMP/$tag.hold"; fail "$tag: holdthread failed"; }
	lab_nap "$BACK"
	lu_cable 1 link on
	[ "$tag" = short ] || return 0
	# the short ride ends once both libraries went back (LU_RIDE_END), 40 s
	# at most: holdthread may take seconds to catch the thread, and a run of
	# fixed length ended before the failback on a slow machine
	for ((i = 0; i < 80; i++)); do
		[ "$(lu_backs_both "$tag")" = 2 ] && break
		lab_nap 0.5
	done
}
LU_DURING=held

# logged TAG REGEX WHY: the client's library log of the pair TAG has a line
# matching REGEX (grep -E), or the test fails: WHY
logged()
{
	grep -qE "$2" "$FT_TMP/$1.cli.shiftu" || lu_fail "$1" "$3"
}

# the failover's own time in ms, from its line in the client's log (the
# whole move's, before the parenthesis that splits it)
fo_ms()
{
	sed -n 's/.*failed over to qp .*, \([0-9][0-9.]*\) ms (.*/\1/p' "$FT_TMP/$1.cli.shiftu" |
		awk '{ printf "%d\n", $1 }'
}

# ride TAG SECONDS: a SEND run of shiftgen, one CQ per QP, preloaded on
# both hosts, held as HOLD and BACK say; its files kept in out/held
ride()
{
	lu_keep "$1" held
	lu_pair "$1" 1 "$GEN" -m send --one-cq -D "$2"
}

WAITS='a thread is still inside a data verb the move overtook: waiting for it'
GIVES_UP='a thread stayed inside a data verb for 5 s or more: its work cannot be moved safely: unprotected'

LU_RIDE_END=1 LU_CLI_SECS=75 SAID=$WAITS HOLD=1.5 BACK=2 ride short 50
lu_gen_clean short
logged short "$WAITS" "the move did not wait for the held thread"
logged short 'failed over to qp [0-9]+ on rxe1 port 1' "the client's QP did not fail over"
ms=$(fo_ms short)
log "short: $(paste -s -d ' ' "$FT_TMP/short.hold"); the failover took $ms ms"
[ "${ms:-0}" -ge 1000 ] || lu_fail short "the failover took ${ms:-?} ms: it did not wait for the held thread"
for side in cli srv; do
	lu_check_log short "$side" "failovers=1" "failbacks=1" "twin_wcs>0"
done
log "short: $(grep '^shiftgen: role=server' "$FT_TMP/short.srv.out")"

SAID=$GIVES_UP HOLD=0.5 BACK=1 ride long 16
lu_exited_ok long
logged long "$GIVES_UP" "the move did not give up the QP"
log "long: $(paste -s -d ' ' "$FT_TMP/long.hold"): $(grep -o 'qp [0-9]* on rxe0: a thread stayed.*' "$FT_TMP/long.cli.shiftu")"
[ "$(lu_stat "$FT_TMP/long.cli.shiftu" failovers)" = 0 ] ||
	lu_fail long "the client's QP failed over anyway"
# the event an application's callback gets, logged: -EIO
logged long 'info: unprotected: qp 0x[0-9a-f]+ rxe0:1: Input/output error$' \
	"no unprotected event with EIO"
log "long: $(grep '^shiftgen: role=client' "$FT_TMP/long.cli.out")"
log "long: $(grep '^shiftgen: role=server' "$FT_TMP/long.srv.out")"
