#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: libshiftu and shiftmon's agent work with a Redis store whose
# default user is off, each as its own ACL user (from a credentials file
# or the URL, over TCP and the Unix socket); a wrong password, none at all
# or a credentials file others may read is refused with one line that
# names the store (or file) and the reason, while the job still runs to
# its end; and no password is in any log, nor in the agent's command line.
#
#     redis-server 127.0.0.1:$PORT and $FT_TMP/redis.sock (unixsocketperm 700)
#       users: default off
#              shiftu     ~shiftu:v1:*  +get +set +del        (the library)
#              shiftagent ~shift:v1:*  &shift:v1:events ...  (the agent)
#              admin      everything                          (this test)
#          ▲ AUTH shiftu                     ▲ AUTH shiftagent
#     mrkinds under shiftu-run          shiftmon agent ──netlink──► shift_ft
#     (rxe0's MR, its twin on rxe1,                              (rxe0, rxe1)
#      published as shiftu:v1:mr:*)
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup
ft_require_cmd redis-server redis-cli
SM=$SHIFT_TOP/tools/shiftmon/shiftmon
[ -x "$SM" ] || skip "shiftmon not built (make -C $SHIFT_TOP/tools/shiftmon)"

PORT=16379
SOCK=$FT_TMP/redis.sock
LIB_PASS=Lib-S3cret-4711
AGENT_PASS=Agent-S3cret-0815
ADMIN_PASS=Admin-S3cret-1234
WRONG_PASS=Wr0ng-Guess-9999

rcli() { redis-cli -p "$PORT" --user admin --pass "$ADMIN_PASS" --no-auth-warning "$@"; }

redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$FT_TMP" --unixsocket "$SOCK" --unixsocketperm 700 \
	--daemonize yes --pidfile "$FT_TMP/redis.pid" --logfile "$FT_TMP/redis.log" \
	--user default off \
	--user shiftu on ">$LIB_PASS" '~shiftu:v1:*' +get +set +del \
	--user shiftagent on ">$AGENT_PASS" '~shift:v1:*' '&shift:v1:events' \
		+ping +multi +exec +del +sadd +smembers +hset +hdel +hgetall \
		+publish +subscribe \
	--user admin on ">$ADMIN_PASS" '~*' '&*' +@all ||
	fail "redis-server did not start"
ft_defer "rcli shutdown nosave > /dev/null 2>&1"
for i in $(seq 100); do
	[ "$(rcli ping 2> /dev/null)" = PONG ] && break
	sleep 0.05
done
[ "$(rcli ping 2> /dev/null)" = PONG ] || { cat "$FT_TMP/redis.log"; fail "redis-server does not answer"; }
[ "$(redis-cli -p "$PORT" ping 2>&1)" != PONG ] || fail "the default user still gets in"
log "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'): default user off, ACL users shiftu, shiftagent, admin"

# cred FILE USER PASS MODE: a credentials file
cred()
{
	printf '# the store'"'"'s ACL user\n%s:%s\n' "$2" "$3" > "$1"
	chmod "$4" "$1"
}

# lib_run_start NAME OPTIONS...: mrkinds plain under shiftu-run OPTIONS,
# holding its MR LIB_HOLD ms (3000: the library's refusals come within
# it), or until lib_run_end ends it; its output in $FT_TMP/NAME.out, the
# library's log (debug) in $FT_TMP/NAME.log.  lib_run_end NAME [now]: with
# now, ends the hold (mrkinds takes SIGUSR1 for it); fails unless the job
# ran to its end.
lib_run_start()
{
	local name=$1
	shift
	"$LS_RUN" -q -l debug -o "$FT_TMP/$name.log" "$@" -- \
		"$LS_MRKINDS" -H "${LIB_HOLD:-3000}" plain > "$FT_TMP/$name.out" 2>&1 &
	LIB_PID=$!
	ft_defer "kill $LIB_PID 2> /dev/null"
}
lib_run_end()
{
	local name=$1 rc=0
	[ -z "${2:-}" ] || kill -USR1 "$LIB_PID" 2> /dev/null || true
	wait "$LIB_PID" || rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^done' "$FT_TMP/$name.out"; then
		sed 's/^/# /' "$FT_TMP/$name.out" "$FT_TMP/$name.log"
		fail "$name: mrkinds exited $rc"
	fi
}

# twin_published NAME: the twin's key of the job's MR appears in the store
# while the job holds it (started with LIB_HOLD=60000: under load a 3 s
# hold ended before 40 looks saw the key, in a make check), 30 s at most
twin_published()
{
	local name=$1 rkey='' t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 30 ]; do
		rkey=$(sed -n 's/^mr .*rkey=\([0-9]*\).*/\1/p' "$FT_TMP/$name.out")
		[ -n "$rkey" ] && rcli --scan --pattern "shiftu:v1:mr:*:$rkey" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# one_line NAME PATTERN: the library's log has exactly one warning, and it
# matches PATTERN (grep -E)
one_line()
{
	local log=$FT_TMP/$1.log n
	n=$(grep -c ': warn: ' "$log" || true)
	if [ "$n" != 1 ] || ! grep ': warn: ' "$log" | grep -qE "$2"; then
		sed 's/^/# /' "$log"
		fail "$1: $n warnings, expected one matching '$2'"
	fi
	log "$1: $(grep ': warn: ' "$log" | sed 's/.*: warn: //')"
}

# ---- (a) the right credentials ----
cred "$FT_TMP/lib.auth" shiftu "$LIB_PASS" 600
LIB_HOLD=60000 lib_run_start lib_file -s "redis://127.0.0.1:$PORT" -a "$FT_TMP/lib.auth"
twin_published lib_file ||
	{ sed 's/^/# /' "$FT_TMP/lib_file.out" "$FT_TMP/lib_file.log"; fail "lib_file: no twin published as user shiftu"; }
lib_run_end lib_file now
grep -q 'store redis://127.0.0.1:'"$PORT"': open as user shiftu' "$FT_TMP/lib_file.log" ||
	fail "lib_file: the store was not opened as user shiftu"
! grep -q ': warn: ' "$FT_TMP/lib_file.log" ||
	{ sed 's/^/# /' "$FT_TMP/lib_file.log"; fail "lib_file: the library warned"; }
log "library, credentials file (0600), TCP: twin published as user shiftu"

LIB_HOLD=60000 lib_run_start lib_unix -s "unix://shiftu:$LIB_PASS@$SOCK"
twin_published lib_unix ||
	{ sed 's/^/# /' "$FT_TMP/lib_unix.out" "$FT_TMP/lib_unix.log"; fail "lib_unix: no twin published over the Unix socket"; }
lib_run_end lib_unix now
log "library, unix://shiftu:***@$SOCK: twin published"

cred "$FT_TMP/agent.auth" shiftagent "$AGENT_PASS" 600
"$SM" agent --host authtest --store "redis://127.0.0.1:$PORT" \
	--store-auth-file "$FT_TMP/agent.auth" 2> "$FT_TMP/agent_ok.log" &
AGENT=$!
ft_defer "kill $AGENT 2> /dev/null"
for i in $(seq 100); do
	grep -q '^agent: resync:' "$FT_TMP/agent_ok.log" && break
	kill -0 "$AGENT" 2> /dev/null || break
	sleep 0.05
done
grep -q '^agent: resync:' "$FT_TMP/agent_ok.log" ||
	{ sed 's/^/# /' "$FT_TMP/agent_ok.log"; fail "the agent did not connect as shiftagent"; }
rcli hget shift:v1:host:authtest rxe0/1 | grep -q '^ACTIVE' ||
	{ sed 's/^/# /' "$FT_TMP/agent_ok.log"; fail "the agent's record of rxe0/1 is not in the store"; }
# a port going down reaches the store through it
ip link set dev eth1 down
ft_defer "ip link set dev eth1 up"
for i in $(seq 50); do
	rcli hget shift:v1:host:authtest rxe1/1 | grep -q '^DOWN' && break
	sleep 0.1
done
rcli hget shift:v1:host:authtest rxe1/1 | grep -q '^DOWN' ||
	{ sed 's/^/# /' "$FT_TMP/agent_ok.log"; fail "rxe1/1 down did not reach the store"; }
ip link set dev eth1 up
# its connections dropped by the server: the new ones authenticate again
rcli client kill user shiftagent > /dev/null
for i in $(seq 100); do
	[ "$(grep -c '^agent: resync:' "$FT_TMP/agent_ok.log")" -ge 2 ] && break
	sleep 0.05
done
[ "$(grep -c '^agent: resync:' "$FT_TMP/agent_ok.log")" -ge 2 ] ||
	{ sed 's/^/# /' "$FT_TMP/agent_ok.log"; fail "the agent did not reconnect as shiftagent"; }
kill "$AGENT"
wait "$AGENT" 2> /dev/null || true
log "agent, credentials file (0600): rxe0/1 ACTIVE and rxe1/1 DOWN published; reconnected as shiftagent after CLIENT KILL"

# ---- (b) a wrong password, no credentials: refused, the job runs ----
lib_run_start lib_wrong -s "redis://shiftu:$WRONG_PASS@127.0.0.1:$PORT"
lib_run_end lib_wrong
one_line lib_wrong "store redis://127.0.0.1:$PORT: AUTH as user shiftu refused: WRONGPASS"
lib_run_start lib_none -s "redis://127.0.0.1:$PORT"
lib_run_end lib_none
one_line lib_none "store redis://127.0.0.1:$PORT: (SET|GET|DEL) refused: NOAUTH .*no credentials given"
[ -z "$(rcli --scan --pattern 'shiftu:v1:mr:*')" ] || fail "a refused library left an MR key"

# agent_refused NAME PATTERN ARGS...: the agent, started with ARGS, says
# once why the store refused it, and keeps running (it retries)
agent_refused()
{
	local name=$1 pat=$2 i
	shift 2
	"$SM" agent --host authtest "$@" 2> "$FT_TMP/$name.log" &
	AGENT=$!
	for i in $(seq 60); do
		grep -qE "$pat" "$FT_TMP/$name.log" && break
		sleep 0.05
	done
	sleep 0.5	# a few retries (100, 200 ms...)
	kill -0 "$AGENT" 2> /dev/null || { sed 's/^/# /' "$FT_TMP/$name.log"; fail "$name: the agent exited"; }
	# the agent's command line no longer shows a password
	if grep -qa -e "$AGENT_PASS" -e "$WRONG_PASS" "/proc/$AGENT/cmdline"; then
		fail "$name: a password is in the agent's command line: $(tr '\0' ' ' < "/proc/$AGENT/cmdline")"
	fi
	kill "$AGENT"
	wait "$AGENT" 2> /dev/null || true
	[ "$(grep -cE "$pat" "$FT_TMP/$name.log")" = 1 ] ||
		{ sed 's/^/# /' "$FT_TMP/$name.log"; fail "$name: not one line matching '$pat'"; }
	log "$name: $(grep -E "$pat" "$FT_TMP/$name.log")"
}
agent_refused agent_wrong \
	"^agent: store redis://shiftagent:\*\*\*@127.0.0.1:$PORT: AUTH as user shiftagent refused: WRONGPASS" \
	--store "redis://shiftagent:$WRONG_PASS@127.0.0.1:$PORT"
agent_refused agent_none \
	"^agent: store redis://127.0.0.1:$PORT: ping: NOAUTH .*no credentials given" \
	--store "redis://127.0.0.1:$PORT"
# and with the right password in the URL, over the Unix socket
agent_refused agent_unix "^agent: resync:" --store "unix://shiftagent:$AGENT_PASS@$SOCK"

# ---- (c) a credentials file others may read: refused ----
cred "$FT_TMP/lib644.auth" shiftu "$LIB_PASS" 644
lib_run_start lib_644 -s "redis://127.0.0.1:$PORT" -a "$FT_TMP/lib644.auth"
lib_run_end lib_644
one_line lib_644 "store redis://127.0.0.1:$PORT: credentials file $FT_TMP/lib644.auth: refused: mode 0644 lets group or others at it"
rc=0
"$SM" agent --host authtest --store "redis://127.0.0.1:$PORT" \
	--store-auth-file "$FT_TMP/lib644.auth" 2> "$FT_TMP/agent_644.log" || rc=$?
if [ "$rc" != 1 ] || [ "$(wc -l < "$FT_TMP/agent_644.log")" != 1 ] ||
   ! grep -q "^Unable to start agent: store redis://127.0.0.1:$PORT: credentials file $FT_TMP/lib644.auth: refused: mode 0644" "$FT_TMP/agent_644.log"; then
	sed 's/^/# /' "$FT_TMP/agent_644.log"
	fail "agent, mode 0644 file: exit $rc, not one refusal line"
fi
log "agent, mode 0644 file: exit 1, $(cat "$FT_TMP/agent_644.log")"

# ---- (d) no password in any log ----
if grep -l -e "$LIB_PASS" -e "$AGENT_PASS" -e "$WRONG_PASS" "$FT_TMP"/*.log "$FT_TMP"/*.out; then
	fail "a password is in the logs above"
fi
logs=("$FT_TMP"/*.log "$FT_TMP"/*.out)
log "no password in ${#logs[@]} logs and outputs"
