#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: two-sided traffic rides cable pulls across the wraps of the
# handshake's counts, at 2^31 (the 31 bits the count has on the wire) and
# at 2^32, with no message lost or duplicated.  The test build of the
# library (libshiftu-test.so.0) starts every QP's send and receive counts
# where SHIFTU_TEST_COUNT_START says, on both hosts, instead of after
# days of traffic.  Each failover and failback exchanges the counts; the
# side that receives one extends its 31 bits to 64 near its own send
# count, and replays only the sends it does not cover.  The 64-bit count
# each side read must be the one the other told (their debug lines).
#   wrap32: write_imm from just below 2^32, rail 0 pulled on host 1; its
#           counts at the handshakes place the next run's start
#   wrap31: write_imm from below 2^31, so that the failover's handshake
#           comes before the wrap and the failback's after it, rail 0
#           pulled on host 1 (up to three runs, each placed from the
#           last one's handshakes: where they come varies)
#   send31: SENDs from just below 2^31 with one CQ for both queues (the
#           library then counts receives as they are polled), rail 0
#           pulled on host 2
# Before serial.h, each of these handshakes past 2^31 replayed a message
# the peer had or dropped one it had not (shiftu_serial, a host test,
# shows it without the lab).
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ═══ rail 0: pulled 2 s in, either end ═══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
#     both: LD_PRELOAD=libshiftu-test.so.0 SHIFTU_TEST_COUNT_START=...
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# the test build; lu_setup skips the test if it is not built
LU_LIB=$LU_TEST_LIB
lu_gen_ride_setup

W31=$((1 << 31))
W32=$((1 << 32))
PULL=1

# cross TAG: rail 0 of host $PULL out from 2 s to 5 s into the client's
# run; once the client failed back (20 s at most), the client ends its
# run (shiftgen's SIGUSR1: -D 30 only bounds it)
cross()
{
	local cli=$! t=0

	lab_nap 2
	lu_cable "$PULL" link off
	lab_nap 3
	lu_cable "$PULL" link on
	while [ "$t" -lt 200 ] && ! grep -q 'failed back from' "$FT_TMP/$1.cli.shiftu"; do
		lab_nap 0.1
		t=$((t + 1))
	done
	lab_nap 0.5
	pkill -USR1 -P "$cli" shiftgen || true
}

# heard TAG SIDE: the 64-bit counts SIDE's library read from the peer at
# each handshake, one a line ("received SENT": the peer's receive count,
# our send count then)
heard()
{
	sed -n 's/.*it has received \([0-9]*\) messages, we sent \([0-9]*\)$/\1 \2/p' \
		"$FT_TMP/$1.$2.shiftu"
}

# told TAG SIDE: the receive counts SIDE's library told the peer
told()
{
	sed -n 's/.*told the peer\( (answer)\)\{0,1\}: \([0-9]*\) received$/\2/p' \
		"$FT_TMP/$1.$2.shiftu"
}

# ride TAG START MODE [ARGS...]: shiftgen's MODE from count START on both
# hosts through a pull on host $PULL's rail 0.  Both sides exit 0, the
# server counts nothing lost, duplicated, reordered or corrupt, both
# failed over and back once, on the test build's counts; every count a
# side read is one the other told, at most a queue's worth below its own
# send count.  HEARD gets the counts the client read.
HEARD=
ride()
{
	local tag=$1 start=$2 mode=$3 side other p s n=0
	shift 3

	lu_keep "$tag" wrap
	LU_LOG=debug LU_ENV="SHIFTU_TEST_COUNT_START=$start" LU_DURING=cross \
		lu_pair "$tag" 1 "$GEN" -m "$mode" -D 30 "$@"
	lu_gen_clean "$tag"
	for side in cli srv; do
		grep -q "test build: two-sided counts start at $start\$" "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the test build did not start its counts at $start"
		grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail over"
		grep -q 'failed back from rxe1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail back"
		lu_check_log "$tag" "$side" "failovers=1" "failbacks=1" "twin_wcs>0"
		other=srv
		[ "$side" = cli ] || other=cli
		heard "$tag" "$side" > "$FT_TMP/$tag.$side.heard"
		while read -r p s; do
			n=$((n + 1))
			told "$tag" "$other" | grep -qx "$p" ||
				lu_fail "$tag" "$side read the count $p, which $other never told (it told: $(told "$tag" "$other" | tr '\n' ' '))"
			if [ "$p" -gt "$s" ] || [ $((s - p)) -ge 4096 ]; then
				lu_fail "$tag" "$side read the count $p against its own $s"
			fi
			log "$tag $side: read the peer's count $p ($(printf '%#x' "$p")), its own send count $s"
		done < "$FT_TMP/$tag.$side.heard"
	done
	[ "$n" -ge 2 ] || lu_fail "$tag" "only $n counts were read at the handshakes"
	HEARD=$(heard "$tag" cli | cut -d' ' -f1)
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

# past TAG WRAP [both]: a handshake of the client's came after WRAP; with
# "both", one before it too.  Returns 1 if not.
past()
{
	local p before=0 after=0

	for p in $HEARD; do
		if [ "$p" -ge "$2" ]; then after=$((after + 1)); else before=$((before + 1)); fi
	done
	log "$1: handshakes of the client before $2: $before, after: $after"
	[ "$after" -gt 0 ] && { [ "${3:-}" != both ] || [ "$before" -gt 0 ]; }
}

# mid START: how many messages into the last run, from START, its first
# and last handshake lay, and half way between them (MID)
MID=
mid()
{
	local first last

	first=$(echo "$HEARD" | head -n 1) last=$(echo "$HEARD" | tail -n 1)
	MID=$(((first + last) / 2 - $1))
	log "the first handshake $((first - $1)) messages in, the last $((last - $1))"
	[ "$MID" -gt 0 ] || fail "no messages between the handshakes"
}

start=$((W32 - 200))
PULL=1
ride wrap32 "$start" write_imm
past wrap32 "$W32" || lu_fail wrap32 "no handshake came after the count passed $W32: nothing was proved"
# the wrap at 2^31 half way between the failover's handshake and the
# failback's; where they come varies from run to run: a run that missed
# places the next
mid "$start"
for try in 1 2 3; do
	start=$((W31 - MID))
	ride "wrap31_$try" "$start" write_imm
	past "wrap31_$try" "$W31" both && break
	[ "$try" != 3 ] ||
		lu_fail "wrap31_$try" "in $try runs, no failover came before the count reached $W31 and its failback after"
	mid "$start"
done
PULL=2
ride send31 $((W31 - 200)) send --one-cq
past send31 "$W31" || lu_fail send31 "no handshake came after the count passed $W31: nothing was proved"
