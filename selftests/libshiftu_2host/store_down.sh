#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a store that does not answer costs a job nothing, and the job is
# protected once it answers again.  shiftgen -P 64 (STORE_DOWN_P, 64
# connections of checked write_imm traffic, one QP, two MRs and two CQs
# each, one thread each; 16 in make check, where 64 took ten minutes
# beside the other guests and the 64-QP rides are many_*.sh's) starts
# with libshiftu on both hosts while their Redis is stopped
# (SIGSTOP: it takes connections and answers nothing, as a store blackholed
# or hung does): its control verbs (shiftgen's setup_ms, the time its
# connections spent making their resources and taking their QPs to RTS)
# take no longer than in the control, the same job with the store up
# (within the bound below), and
# no QP is protected while the store is stopped.  Once it answers again
# (SIGCONT) all its QPs are protected and ride a pull of host 1's rail 0
# (each fails over and back, the server counts no lost, duplicated,
# reordered or corrupt message); then the store is stopped again before
# the job ends, and its destroy verbs (teardown_ms) take no longer than in
# the control.  The libraries may warn only of the store.
#
# The bound is wide, for the two runs meet different loads of their guests
# (in a make check beside other guests the control's sum of setup_ms
# ranged from 31 s to 182 s, the store-down run's from 35 s to 90 s), and
# a store call that a verb waits for is made long: both libraries are the
# test build with SHIFTU_TEST_KV_TIMEOUT_MS=15000 (testbuild.h), so a
# command the stopped store leaves unanswered takes 15 s.  The store-down
# run's sum over the connections may be at most twice the control's and
# SLACK_MS (1 s a connection) more, and its slowest connection the
# control's and MAX_SLACK_MS (8 s) more.  A library that made one store
# call per connection on the application's thread, or held a lock its
# verbs wait for across one, would add 15 s to every connection that met
# it: 15 s a connection to the sum, and 15 s to the slowest connection,
# past both bounds.
# Before the fix, the library held the lock every verb records under
# across each of its store calls, and deleted each published key from the
# destroy verbs, two seconds each against a stopped Redis.
#
#     host 1 (shiftgen -P 64 client)                 host 2 (server)
#     64 QPs ─ rxe0 ─ eth0 ══ rail 0 (pulled) ═══════ eth0 ─ rxe0 ─ 64 QPs
#     64 twins ─ rxe1 ─ eth1 ── rail 1 ─────────────── eth1 ─ rxe1 ─ 64 twins
#     redis-server ─ eth2 10.0.2.1 ── mgmt ────────── eth2 ─ the library
#     (SIGSTOP, SIGCONT)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$LU_DIR/shiftgen
lu_gen_ride_setup
LU_LIB=$LU_TEST_LIB
LU_ENV=SHIFTU_TEST_KV_TIMEOUT_MS=15000
P=${STORE_DOWN_P:-64}
[[ $P =~ ^[1-9][0-9]*$ ]] || fail "STORE_DOWN_P=$P: a count of connections"
FB_SECS=150
SLACK_MS=$((P * 1000))
MAX_SLACK_MS=8000
# many_gen.sh's traffic: 10 messages a second per connection
ARGS=(-P "$P" -m write_imm -s 1024 -c 4 -q 16 --rate 10)
LU_PULL_ON=1 LU_PULL_BY=link

REDIS_PID=$(cat "$FT_TMP/redis.pid")
[ -n "$REDIS_PID" ] || fail "no pid of redis-server"
# before the store's shutdown (cleanups run last first)
ft_defer "kill -CONT $REDIS_PID"

# connected TAG: how many of the client's connections are up
connected()
{
	local n

	n=$(grep -c '^shiftgen\[[0-9]*\]: role=client connected: ' "$FT_TMP/$1.cli.out") || true
	echo "${n:-0}"
}

# wait_for TAG WHAT N SECS: until WHAT TAG (a count) reaches N, SECS at
# most; TAG.WHAT: the count and the ms waited
wait_for()
{
	local t0=$EPOCHREALTIME i=0

	while [ "$("$2" "$1")" -lt "$3" ] && [ "$(lu_ms "$t0")" -lt $(($4 * 1000)) ]; do
		if [ $((++i % 10)) = 3 ]; then
			lu_lib_urgent
		fi
		lab_nap 0.2
	done
	echo "$("$2" "$1") $(lu_ms "$t0")" > "$FT_TMP/$1.$2"
}

# protected TAG: how many of the client's QPs its library protects
protected()
{
	lu_count 'protected by qp' "$1"
}

# failed_back TAG: how many of them it failed back
failed_back()
{
	lu_backs "$1"
}

# up_during TAG (the control, LU_DURING): all P connections up and all P
# QPs protected, then the client's run ends.
up_during()
(
	local cli=$!

	lu_urgent
	wait_for "$1" connected "$P" 120
	wait_for "$1" protected "$P" 60
	pkill -USR1 -P "$cli" shiftgen || true
)

# down_during TAG (LU_DURING): with the store stopped since before the
# job started, all P connections up, then 5 s more (TAG.down_prot: the
# QPs protected by then); the store answers again: all P QPs protected,
# then the pull (as many_gen.sh's: once all P moved, rail 0 comes back)
# and the failbacks (FB_SECS from the client's start at most, the
# server's 3 s more); then the store is stopped again and the client's run
# ends, so that the destroy verbs meet it stopped.
down_during()
(
	local cli=$! moved mv_ms off on

	lu_urgent
	wait_for "$1" connected "$P" 120
	lab_nap 5
	protected "$1" > "$FT_TMP/$1.down_prot"
	kill -CONT "$REDIS_PID"
	wait_for "$1" protected "$P" 90
	LU_PULL_AT=1 LU_PULL_MOVED=$P LU_PULL_COUNT_AT=1.5 LU_PULL_HOLD=0.5 LU_PULL_AFTER=0 \
		lu_pull "$1"
	read -r moved mv_ms < "$FT_TMP/$1.moved"
	read -r off on < "$FT_TMP/$1.times"
	log "$1: $moved of $P QPs moved $mv_ms ms after the pull; rail 0 down from $off to $on ms into lu_pull"
	wait_for "$1" failed_back "$P" "$FB_SECS"
	lu_peer_run "(for i in \$(seq 30); do [ \$(grep -c 'failed back from' $LU_RDIR/$1.srv.shiftu) -ge $P ] && exit; sleep 0.1; done)" || true
	kill -STOP "$REDIS_PID"
	pkill -USR1 -P "$cli" shiftgen || true
)

# check_log TAG SIDE REQ...: lu_check_log's checks of SIDE's libshiftu
# log, the lines where the library warns of the store left out (a store
# that does not answer is worth a warning): any other warning fails
check_log()
{
	local tag=$1 side=$2
	shift 2

	grep -vE '^([0-9:.]+ )?libshiftu\[[0-9]+\]: (warn|error): store (redis://|unix:)[^ ]*: ' \
		"$FT_TMP/$tag.$side.shiftu" > "$FT_TMP/$tag.${side}_nostore.shiftu" || true
	lu_check_log "$tag" "${side}_nostore" "$@"
}

# setup TAG SIDE KEY: the connections' setup_ms, from their own lines
# (printed before their teardown, so there even when a run never ends):
# KEY sum, their sum; max, the largest; n, how many
setup()
{
	awk -v k="$3" '/^shiftgen\[[0-9]+\]: role=[a-z]+ / {
		for (i = 3; i <= NF; i++)
			if ($i ~ /^setup_ms=[0-9]+$/) { v = substr($i, 10) + 0; s += v; if (v > m) m = v; n++ }
	} END { print k == "sum" ? s + 0 : k == "max" ? m + 0 : n + 0 }' "$FT_TMP/$1.$2.out"
}

# teardown TAG SIDE KEY: teardown_ms or teardown_max_ms from the summary
# (nothing if the run never ended)
teardown()
{
	lu_gen "$3" "$FT_TMP/$1.$2.out"
}

# figures TAG: both sides' setup (sum, slowest) and teardown figures
figures()
{
	local side

	for side in cli srv; do
		echo "$side: setup $(setup "$1" $side sum) ms, slowest $(setup "$1" $side max) ms, teardown $(teardown "$1" $side teardown_ms) ms, slowest $(teardown "$1" $side teardown_max_ms) ms;"
	done | tr '\n' ' '
}

# within TAG SIDE WHAT GOT CTL TIMES SLACK: TAG's figure WHAT of SIDE, GOT
# ms, is at most TIMES the control's, CTL ms, and SLACK ms more
within()
{
	local want=$(($5 * $6 + $7))

	[ "$4" -le "$want" ] ||
		lu_fail "$1" "$2's $3 took $4 ms with the store stopped, more than $want ms ($6 times the control's $5 ms, and $7 ms)"
	log "$1: $2's $3 $4 ms with the store stopped (the control's $5 ms, bound $want ms)"
}

# The control: the same job, the store up; no pull (nothing to compare)
lu_keep up store_down
LU_CLI_SECS=200 LU_SRV_SECS=210 LU_DURING=up_during lu_pair up 1 "$GEN" "${ARGS[@]}" -D 150
read -r n ms < "$FT_TMP/up.connected"
log "up: $n of $P connections up $ms ms after the client started; $(cut -d' ' -f1 < "$FT_TMP/up.protected") protected $(cut -d' ' -f2 < "$FT_TMP/up.protected") ms after that"
log "up: $(figures up)"
lu_gen_clean up
[ "$n" = "$P" ] || lu_fail up "$n of $P connections up"
check_log up cli "qps=$P"
check_log up srv "qps=$P"
[ "$(protected up)" = "$P" ] || lu_fail up "$(protected up) of $P QPs protected with the store up"

# The store stopped before the job starts
tag=down
lu_keep "$tag" store_down
kill -STOP "$REDIS_PID"
t0=$EPOCHREALTIME
LU_CLI_SECS=300 LU_SRV_SECS=310 LU_DURING=down_during \
	lu_pair "$tag" 1 "$GEN" "${ARGS[@]}" -D $((FB_SECS + 60))
kill -CONT "$REDIS_PID"
read -r n ms < "$FT_TMP/$tag.connected"
log "$tag: $n of $P connections up $ms ms after the client started, the store stopped; $(cat "$FT_TMP/$tag.down_prot") QPs protected 5 s later"
log "$tag: $(cut -d' ' -f1 < "$FT_TMP/$tag.protected") protected $(cut -d' ' -f2 < "$FT_TMP/$tag.protected") ms after the store answered again; $(cut -d' ' -f1 < "$FT_TMP/$tag.failed_back") failed back"
log "$tag: $(figures "$tag")"
log "$tag: the round took $(lu_ms "$t0") ms"
for side in cli srv; do
	grep -q 'config: SHIFTU_TEST_KV_TIMEOUT_MS=15000' "$FT_TMP/$tag.$side.shiftu" ||
		lu_fail "$tag" "$side: the library did not take the test setting"
done
[ "$n" = "$P" ] || lu_fail "$tag" "$n of $P connections up 120 s after the client started, the store stopped (the control: $(cut -d' ' -f2 < "$FT_TMP/up.connected") ms)"
# the store was down indeed: a twin's exchange needs it
[ "$(cat "$FT_TMP/$tag.down_prot")" = 0 ] ||
	lu_fail "$tag" "$(cat "$FT_TMP/$tag.down_prot") QPs protected while the store was stopped"
for side in cli srv; do
	for t in up "$tag"; do
		[ "$(setup "$t" $side n)" = "$P" ] ||
			lu_fail "$t" "$side: $(setup "$t" $side n) of $P connections said their setup_ms"
	done
	within "$tag" $side "connections' control verbs in all" \
		"$(setup "$tag" $side sum)" "$(setup up $side sum)" 2 "$SLACK_MS"
	within "$tag" $side "slowest connection's control verbs" \
		"$(setup "$tag" $side max)" "$(setup up $side max)" 1 "$MAX_SLACK_MS"
done
for side in cli srv; do
	[[ $(teardown up $side teardown_ms) =~ ^[0-9]+$ ]] ||
		lu_fail up "$side: no teardown_ms in shiftgen's summary"
	[[ $(teardown "$tag" $side teardown_ms) =~ ^[0-9]+$ ]] ||
		lu_fail "$tag" "$side: no teardown_ms: its run did not end once the store was stopped again (its last line: $(tail -n 1 "$FT_TMP/$tag.$side.out"))"
	within "$tag" $side "destroy verbs in all" "$(teardown "$tag" $side teardown_ms)" \
		"$(teardown up $side teardown_ms)" 2 "$SLACK_MS"
	within "$tag" $side "slowest connection's destroy verbs" \
		"$(teardown "$tag" $side teardown_max_ms)" "$(teardown up $side teardown_max_ms)" \
		1 "$MAX_SLACK_MS"
done
read -r s0 s1 < "$FT_TMP/$tag.outage"
log "$tag: host 1's packets during the outage: rail 0 $s0, rail 1 $s1; messages $(lu_gen msgs "$FT_TMP/$tag.srv.out")"
lu_gen_clean "$tag"
check_log "$tag" cli "qps=$P" "failovers=$P" "failbacks=$P"
check_log "$tag" srv "qps=$P"
[ "$s1" -gt 100 ] || lu_fail "$tag" "rail 1 carried only $s1 packets during the outage"
