#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a preloaded program whose QPs are protected can fork, as a
# training job's DataLoader workers and multiprocessing pools are forked
# after RDMA is up; its children do not hang, and it keeps its protection.
# shiftgen's client runs checked two-sided traffic with the library and
# forkhelper.so preloaded; forkhelper's thread forks it twice:
# - "open", while the library's shadow thread is stopped by ptrace
#   (holdthread) inside the library where it owns shadow_lock (found by
#   its symbol; inside the library alone it may be talking to the store,
#   with no lock held; an idle one sleeps until forkhelper's "kick" gives
#   it work): the fork must wait for the lock (the child would
#   otherwise get it held by a thread it does not have), and the child
#   opens rxe0, makes a PD, MR, CQ and QP, takes them down and exit(3)s,
#   within its 30 s alarm, its exit line counting its own device and QP
#   only;
# - "traffic": the child opens rxe0 itself and writes between two QPs of
#   its own, which the library protects as in a fresh process (twins on
#   rxe1, its own backup thread; "protected by" in its log lines).
# Then host 1's rail 0 is pulled: the parent's QP fails over and back, and
# the server's checks all pass.
#
#     host 1 (shiftgen client + forkhelper.so)        host 2 (shiftgen server)
#       ├ child "open" (forked while shadow_lock is held)
#       └ child "traffic": 2 QPs rxe0 ⟲ rxe0, twins rxe1 ⟲ rxe1
#     rxe0 ─ eth0 ══════ rail 0: pulled after the children ══ eth0 ─ rxe0
#     rxe1 ─ eth1 ── rail 1 (the twins) ──────────────────── eth1 ─ rxe1
#     redis-server 10.0.2.1 (store) ─── mgmt ─── eth2
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

lu_gen_ride_setup
[ -x "$LU_DIR/holdthread" ] || skip "holdthread not built (make -C $LU_DIR)"
[ -f "$LU_DIR/forkhelper.so" ] || skip "forkhelper.so not built (make -C $LU_DIR)"
ft_require_cmd mkfifo pgrep nm
# shadow_lock's offset in the library's image
LOCK=$(nm "$(readlink -f "$LU_LIB")" 2> /dev/null | awk '$3 == "shadow_lock" { print $1 }')
[ -n "$LOCK" ] || skip "$LU_LIB has no symbol shadow_lock (stripped?): the shadow thread cannot be held owning it"

TAG=forked
FIFO=$FT_TMP/helper.fifo
OUTF=$FT_TMP/$TAG.helper
# how long the shadow thread is held: fork() must begin within it (on
# loaded runs it began 2.47 s after the hold, and in a make check 6.6 s
# after it, at the test's default niceness: too late to tell)
HOLD=10
mkfifo "$FIFO"

pkts() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"; }

# tell CMD: CMD to forkhelper's thread
tell()
{
	timeout 10 bash -c "echo '$1' > '$FIFO'" || fail "$TAG: forkhelper did not take '$1'"
}

# helper CMD PATTERN SECS: tell CMD, then wait (SECS at most) for a line of
# forkhelper's output matching PATTERN (grep -E)
helper()
{
	local t0=$EPOCHREALTIME

	tell "$1"
	while [ "$(lu_ms "$t0")" -lt $(($3 * 1000)) ]; do
		grep -qE "$2" "$OUTF" 2> /dev/null && return 0
		lab_nap 0.1
	done
	lu_show "$OUTF"
	fail "$TAG: no line '$2' from forkhelper within $3 s"
}

# forks TAG: a LU_DURING command: once the client's QP is protected, the
# "open" child forked while the shadow thread is held HOLD s, then the
# "traffic" child, then rail 0 out for 2.5 s, packets per rail counted as
# in failover_twosided.sh; the client then ends its run (SIGUSR1).  In a
# subshell of its own, urgent (lu_urgent).
forks()
(
	local tag=$1 cli=$! pid tid shadow holder i a0 a1

	lu_urgent
	for ((i = 0; i < 200; i++)); do
		grep -q 'protected by' "$FT_TMP/$tag.cli.shiftu" 2> /dev/null && break
		lab_nap 0.1
	done
	pid=$(pgrep -P "$cli" shiftgen) || fail "$tag: no client"
	echo "$pid" > "$FT_TMP/$tag.cli.pid"
	tid=$(awk '$1 == "tid" { print $2 }' "$OUTF")
	[ -n "$tid" ] || fail "$tag: forkhelper's thread did not start"
	# the program's thread, forkhelper's, then the library's: the shadow
	# thread first (the first device), the watcher after it
	shadow=$(printf '%s\n' "/proc/$pid/task"/* | sed 's|.*/||' | sort -n |
		grep -vx -e "$pid" -e "$tid" | head -n 1)
	[ -n "$shadow" ] || fail "$tag: no library thread in the client"
	log "$tag: client $pid, forkhelper's thread $tid, shadow thread $shadow"
	"$LU_DIR/holdthread" "$shadow" "$(basename "$(readlink -f "$LU_LIB")")" "$HOLD" "$LOCK" \
		> "$FT_TMP/$tag.hold" 2>&1 &
	holder=$!
	# an idle shadow thread sleeps until it has work: a kick a second
	# gives it some (CI's lab, 2026-12-02: 30 s without taking its lock)
	for ((i = 0; i < 300; i++)); do
		grep -qs '^held' "$FT_TMP/$tag.hold" && break
		[ $((i % 10)) != 0 ] || tell kick
		lab_nap 0.1
	done
	if ! grep -q '^held' "$FT_TMP/$tag.hold"; then
		kill "$holder" 2> /dev/null || true
		wait "$holder" || true
		lu_show "$FT_TMP/$tag.hold"
		fail "$tag: the shadow thread was not held"
	fi
	helper open '^open pid' 120
	wait "$holder" || { lu_show "$FT_TMP/$tag.hold"; fail "$tag: holdthread failed"; }
	helper "traffic $LU_GIDX" '^traffic pid [0-9]+ fork_ms' 120

	lab-link eth0 off
	lab_nap 1
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	lab_nap 1.5
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$tag.outage"
	lab-link eth0 on
	for ((i = 0; i < 200; i++)); do
		grep -q 'failed back from' "$FT_TMP/$tag.cli.shiftu" && break
		lab_nap 0.1
	done
	lab_nap 0.5
	a0=$(pkts rxe0) a1=$(pkts rxe1)
	lab_nap 1.5
	echo "$(($(pkts rxe0) - a0)) $(($(pkts rxe1) - a1))" > "$FT_TMP/$tag.after"
	pkill -USR1 -P "$cli" -x shiftgen || true
)

lu_keep "$TAG" forked
# -D 250 only bounds the run: forks() ends it (SIGUSR1).  Beside four
# other guests the traffic child took over 45 s to report (make check,
# 2026-12-02): each of forks()'s waits is 120 s at most.
LU_CLI_ENV="LD_PRELOAD=$LU_LIB:$LU_DIR/forkhelper.so FORKHELPER_FIFO=$FIFO FORKHELPER_OUT=$OUTF" \
	LU_CLI_SECS=280 LU_SRV_SECS=300 LU_DURING=forks lu_pair "$TAG" 1 "$GEN" -m write_imm -D 250
lu_show "$OUTF" "$FT_TMP/$TAG.hold"
LOGF=$FT_TMP/$TAG.cli.shiftu
pid=$(cat "$FT_TMP/$TAG.cli.pid")

# the children: the "open" one forked once the held thread let the lock
# go, and neither hung
# shellcheck disable=SC2034 # the fields are read by name
read -r _ _ opid _ ofork _ owait _ ohow ost _ oat <<< "$(grep '^open pid' "$OUTF")"
[ "$ohow $ost" = "exit 0" ] ||
	lu_fail "$TAG" "the child forked while shadow_lock was held ended with $ohow $ost (signal 14: it hung)"
# fork() began while the thread was held and returned only once it was let
# go (both on CLOCK_MONOTONIC: forkhelper's and holdthread's)
rel=$(sed -n 's/^released [0-9]* at \([0-9]*\) ms,.*/\1/p' "$FT_TMP/$TAG.hold")
[ -n "$rel" ] && [ -n "$oat" ] || lu_fail "$TAG" "no release time from holdthread or no fork time from forkhelper"
[ $((oat - ofork)) -lt "$rel" ] ||
	lu_fail "$TAG" "fork() began $((oat - ofork - rel)) ms after the thread was let go: the test came too late to tell"
[ "$oat" -ge "$rel" ] ||
	lu_fail "$TAG" "fork() returned $((rel - oat)) ms before the held shadow thread was let go: it did not wait for its lock"
log "$TAG: fork() waited $ofork ms for the held shadow thread; the child ran $owait ms"
grep -qE "^([0-9:.]+ )?libshiftu\[$opid\]: info: forked from $pid:" "$LOGF" ||
	lu_fail "$TAG" "the open child did not log that it was forked"
# its exit(3) ran the library's statistics: its own device and QP only
oexit=$(grep -E "^([0-9:.]+ )?libshiftu\[$opid\]: info: exit: " "$LOGF" | sed 's/^.*: info: exit: //')
case $oexit in
"contexts=1 qps=1 post_send=0 post_recv=0 poll_cq=0 "*" failovers=0 failbacks=0 "*) ;;
*) lu_fail "$TAG" "the open child's exit line counts what is not its own: '$oexit'" ;;
esac
log "$TAG: the open child's exit line: $oexit"
read -r _ _ tpid _ tfork _ twait _ thow tst _ <<< "$(grep -E '^traffic pid [0-9]+ fork_ms' "$OUTF")"
[ "$thow $tst" = "exit 0" ] || lu_fail "$TAG" "the traffic child ended with $thow $tst"
grep -qE "^traffic pid $tpid writes [0-9]+ protected 2 ok" "$OUTF" ||
	lu_fail "$TAG" "the traffic child's QPs were not protected, or its writes failed"
log "$TAG: $(grep -E "^traffic pid $tpid writes" "$OUTF") (forked in $tfork ms, ran $twait ms)"
log "$TAG: $(grep -E "libshiftu\[$tpid\]: info: qp [0-9]+ on rxe0: protected by" "$LOGF" | head -n 1 | sed 's/^.*info: //')"

# the parent: its traffic clean, failed over and back, nothing logged
# amiss; its children's lines are theirs
lu_gen_clean "$TAG"
own() { grep -E "^([0-9:.]+ )?libshiftu\[$pid\]: " "$LOGF" || true; }
own | grep -q 'failed over to qp [0-9]* on rxe1 port 1' || lu_fail "$TAG" "the client's QP did not fail over"
own | grep -q 'failed back from rxe1' || lu_fail "$TAG" "the client's QP did not fail back"
# but for the store's lack of a key, said once
bad=$(own | grep -vE ': warn: store [^ ]*: UNAUTHENTICATED records: ' | grep -E ': (error|warn): ' | head -n 1)
[ -z "$bad" ] || lu_fail "$TAG" "the client's library logged errors or warnings, first: $bad"
n=$(own | grep -c ': info: exit: ') || true
[ "$n" = 1 ] || lu_fail "$TAG" "$n exit lines of the client, expected 1"
for k in failovers failbacks; do
	v=$(own | grep ': info: exit: ' | grep -o " $k=[0-9]*" | cut -d= -f2)
	[ "$v" = 1 ] || lu_fail "$TAG" "client: $k=$v, expected 1"
done
log "$TAG cli: $(own | grep -o 'failed over to qp.*')"
log "$TAG cli: $(own | grep -o 'failed back from.*')"
lu_check_log "$TAG" srv "failovers=1" "failbacks=1"
read -r s0 s1 < "$FT_TMP/$TAG.outage"
read -r r0 r1 < "$FT_TMP/$TAG.after"
log "$TAG: packets sent by host 1 during the outage: rail 0 $s0, rail 1 $s1; after the repair: rail 0 $r0, rail 1 $r1"
[ "$s1" -gt 100 ] || lu_fail "$TAG" "rail 1 carried only $s1 packets during the outage"
[ "$r0" -gt 100 ] || lu_fail "$TAG" "rail 0 carried only $r0 packets after the repair"
if grep -qE "libshiftu\[($opid|$tpid)\]: (error|warn): " "$LOGF"; then
	log "$TAG: the children's warnings: $(grep -E "libshiftu\[($opid|$tpid)\]: (error|warn): " "$LOGF" | sed 's/^.*: \(error\|warn\): //' | sort -u | tr '\n' ';')"
fi
log "$TAG: $(grep '^shiftgen: role=server' "$FT_TMP/$TAG.srv.out")"
