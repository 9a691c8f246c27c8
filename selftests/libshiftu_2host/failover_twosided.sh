#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: two-sided traffic rides through a pull of rail 0 with libshiftu
# preloaded on both hosts.  shiftgen sends NCCL-style messages (chunks of
# WRITEs closed by a WRITE_WITH_IMM notification; SENDs into posted
# receives) with sequence numbers and checksums, and the server checks every
# notification: none lost, duplicated, reordered, or ahead of its data.
# The side that sees the failure moves its receives to its twin and tells
# the peer its receive count; the peer, woken by the completion event, does
# the same and answers; each replays only what the other had not received.
# When rail 0 is back, both go back to it by the same handshake, and the
# traffic leaves rail 1.  The third run posts with the extended send API
# (ibv_wr_*) on both sides and reaps completions inside its batches: the
# provider's builders fill its ring while the QP is on rail 0; the client
# holds a batch open across the pull, so that the failover meets it and
# is made by its poster once the batch is posted; the library's builders
# take over while on the twin.
# The library reads what a failover must move from Soft-RoCE's own rings;
# the second run makes it copy every request as it is posted instead
# (SHIFTU_RECORD=copy, what a provider with an unknown queue format gets),
# and gives each QP one CQ for both queues, as NCCL does (the library then
# counts receive completions as they are polled).  In that run the backup
# threads, which look for the failback's message on the default QP's CQ
# while the application may not poll it, are held before each look until
# the application's poll took the message (half a second at most), and
# 50 ms before keeping what a look found (SHIFTU_TEST_SERVE_DELAY_MS);
# the peer's answer leaves 25 ms late (else the move that sent the first
# message may take the answer itself).  So the leader's answer comes to
# the application's own poll while the look that followed its good probe
# is held, and the QP goes back under the held thread: it must then leave
# the CQ to the application, whose polls are on the common path again, or
# the messages it took would arrive after later ones.
#
#     host 1 (shiftgen client)                       host 2 (shiftgen server)
#     rxe0 ─ eth0 ══════ rail 0: pulled 2 s in ═══════ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
[ -x "$GEN" ] || skip "shiftgen not built (make -C $LU_DIR)"
lu_setup "$GEN"
[ -f "$LU_TEST_LIB" ] || skip "the test build is not built ($LU_TEST_LIB; make -C $SHIFT_TOP lib)"
ft_require_cmd redis-server redis-cli
smr_redis_start
LU_STORE=$SMR_STORE
ft_defer "lab-link eth0 on"
ft_defer "lu_peer_try 'lab_link eth0 on'"

PULL=1
link() { if [ "$PULL" = 1 ]; then lab-link "$@"; else lab-peer "lab-link $*"; fi; }
pkts() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }

# pull TAG: rail 0 out from 2 s to 5 s; host 1's packets per rail counted
# over 1.5 s of the outage and over 1.5 s once it failed back; then the
# client (the job lu_pair started last) ends its run (shiftgen's SIGUSR1:
# -D 60 only bounds it; 30 s ended a run before its failback on a slower
# machine, where the pull of host 2's rail came 13 s late: make check,
# 2026-12-01).  Its steps are urgent (lu_urgent), as lu_pull's are:
# beside the pollers each lab-peer took seconds.  With HOLD set, the
# client keeps a batch open from just before the pull until its library
# says the failover met it, 4 s at most (shiftgen's SIGUSR2, twice): how
# soon the library sees the port down depends on the lab's load, not on a
# fixed time.
pull()
(
	local a0 a1 cli=$!

	lu_urgent
	sleep 2
	if [ -n "${HOLD:-}" ]; then
		pkill -USR2 -P "$cli" shiftgen || fail "$1: no client to signal"
		sleep 0.3
	fi
	link eth0 off
	if [ -n "${HOLD:-}" ]; then
		for _ in $(seq 40); do
			grep -q 'during a batch of the extended send API' \
				"$FT_TMP/$1.cli.shiftu" 2> /dev/null && break
			sleep 0.1
		done
		pkill -USR2 -P "$cli" shiftgen || true
	fi
	sleep 1
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	sleep 1.5
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$1.outage"
	sleep 0.5
	link eth0 on
	lu_backed "$1"
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	sleep 1.5
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$1.after"
	pkill -USR1 -P "$cli" shiftgen || true
)
LU_DURING=pull

# ride TAG MODE [ARGS...]: a run of MODE through a pull on host $PULL's
# side; both sides exit 0, the server's checks all pass, both sides kept
# their requests as $RINGS says and failed over and back
ride()
{
	local tag=$1 mode=$2 side s0 s1 r0 r1
	shift 2
	LU_CLI_SECS=90 LU_SRV_SECS=120 lu_pair "$tag" 1 "$GEN" -m "$mode" -D 60 "$@"
	lu_gen_clean "$tag"
	for side in cli srv; do
		grep -q "protected by qp .*requests $RINGS)" "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP's requests were not $RINGS"
		grep -q 'failed over to qp [0-9]* on rxe1 port 1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail over"
		grep -q 'failed back from rxe1' "$FT_TMP/$tag.$side.shiftu" ||
			lu_fail "$tag" "$side: the QP did not fail back"
		lu_check_log "$tag" "$side" "failovers=1" "failbacks=1" "twin_wcs>0"
		log "$tag $side: $(grep -o 'failed over to qp.*' "$FT_TMP/$tag.$side.shiftu")"
		log "$tag $side: $(grep -o 'failed back from.*' "$FT_TMP/$tag.$side.shiftu")"
	done
	read -r s0 s1 < "$FT_TMP/$tag.outage"
	read -r r0 r1 < "$FT_TMP/$tag.after"
	log "$tag: packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
	[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
	[ "$r0" -gt 100 ] || lu_fail "$tag" "rail 0 carried only $r0 packets after the repair"
	[ "$r1" -lt 100 ] || lu_fail "$tag" "rail 1 still carried $r1 packets after the repair" 
	log "$tag: $(grep '^shiftgen: role=server' "$FT_TMP/$tag.srv.out")"
}

RINGS="in the provider's rings"
PULL=1
ride imm_cli write_imm
PULL=2
lu_keep send_srv twosided
# the test build, which has SHIFTU_TEST_SERVE_DELAY_MS
RINGS="copied as posted" LU_LOG=debug \
	LU_LIB=$LU_TEST_LIB \
	LU_ENV="SHIFTU_RECORD=copy SHIFTU_TEST_SERVE_DELAY_MS=50" ride send_srv send --one-cq
# the side that led the failback (its probe was good) waited for the
# peer's answer, and its backup thread's look, held until then, found it
# taken by the application's poll
taken='' lead=''
for side in cli srv; do
	n=$(grep -c "the failback's message came to the application's poll meanwhile" \
		"$FT_TMP/send_srv.$side.shiftu") || true
	taken="$taken $side $n"
	if grep -q 'probe good.*going back with the peer' "$FT_TMP/send_srv.$side.shiftu"; then
		lead=$side
		[ "$n" -gt 0 ] ||
			lu_fail send_srv "$side led the failback, and its backup thread never found the peer's answer taken before its look"
	fi
done
[ -n "$lead" ] || lu_fail send_srv "neither side's probe was good"
log "send_srv: $lead led the failback; looks of the backup threads that found the failback's message taken:$taken"
PULL=1
HOLD=1 ride wrapi_cli send --wr-api --poll-in-batch
for side in cli srv; do
	lu_check_log wrapi_cli "$side" "wr_start>0" "wr_complete>0" "post_send=0"
done
grep -q 'during a batch of the extended send API: failing over once it is posted' \
	"$FT_TMP/wrapi_cli.cli.shiftu" ||
	lu_fail wrapi_cli "cli: the failover did not meet the batch held open across the pull"
log "wrapi_cli cli: $(grep -o 'qp [0-9]* on rxe0: .* during a batch.*' "$FT_TMP/wrapi_cli.cli.shiftu")"
