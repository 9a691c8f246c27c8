#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers shared by the shift_ft shell tests (sourced, not run).
#
# Topology (one lab guest; the lab creates the rxe devices before tests run):
#
#     eth0 ── rxe0   rail 0   (lab-link eth0 off|on pulls its cable)
#     eth1 ── rxe1   rail 1
#     eth2           management (tests may put a temporary rxe2 on it)
#
# A test calls ft_setup first: it skips (exit 4, with the reason) unless it
# is root in a lab with the module built and rxe0/rxe1 present, loads
# shift_ft if needed, and marks the kernel log.  On exit, deferred cleanups
# run in reverse order, then the kernel log is scanned: a BUG, WARNING,
# Oops, refcount or leak report turns the test into a failure.

FT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SHIFT_TOP=${SHIFT_TOP:-$(cd "$FT_DIR/../.." && pwd)}
# make module keeps one build per kernel: the one for the kernel running here
FT_KO=${FT_KO:-$SHIFT_TOP/build/kmod/$(uname -r)/shift_ft.ko}
FTNL=$FT_DIR/ftnl
FTPAGE=$FT_DIR/ftpage
FT_TEST=$(basename "$0" .sh)
FT_TMP=$(mktemp -d "/tmp/shift_ft.$FT_TEST.XXXXXX")
# shellcheck disable=SC2034 # used by the tests that source this
FT_OUT=${LAB_OUT:-$FT_TMP}
ksft_skip=4

# LAB_XTRACE=1: every command this test's shells run, with the time it
# started, into $FT_OUT/TEST.xtrace (selftests/lab/xtrace-top says where
# a test spends its time).  Not the test's output: its TAP stays clean.
if [ "${LAB_XTRACE:-0}" = 1 ]; then
	exec {FT_XTRACE_FD}> "$FT_OUT/$FT_TEST.xtrace"
	BASH_XTRACEFD=$FT_XTRACE_FD
	PS4='+ $EPOCHREALTIME ${BASH_SOURCE[0]##*/}:$LINENO '
	set -x
fi

FT_CLEANUPS=()
FT_DMESG_MARK=

log() { echo "# $*"; }
skip() { echo "# SKIP: $*"; exit "$ksft_skip"; }
fail() { echo "# FAIL: $*"; exit 1; }

# ft_defer CMD...: run CMD (eval'd) at exit, last deferred first.
ft_defer() { FT_CLEANUPS+=("$*"); }

# ft_flap_rails HALF [HOOK]: in the background until $FT_TMP/stop exists,
# eth0 and eth1 go down and up in turn, HALF seconds each way, and HOOK
# (a command, run in the flapper's shell) after every round; both rails
# are up again at the test's end.  FT_FLAPPER: the flapper's pid (touch
# $FT_TMP/stop, then wait for it, to stop it earlier).
ft_flap_rails()
{
	ft_defer "ip link set dev eth0 up; ip link set dev eth1 up"
	(
		while [ ! -e "$FT_TMP/stop" ]; do
			for d in eth0 eth1; do
				ip link set dev "$d" down
				sleep "$1"
				ip link set dev "$d" up
				sleep "$1"
			done
			${2:-:}
		done
	) &
	FT_FLAPPER=$!
	ft_defer "touch '$FT_TMP/stop'; wait $FT_FLAPPER"
}

# ---- kernel log ----

ft_dmesg_mark()
{
	if command -v dmesg-check > /dev/null; then
		dmesg-check mark > /dev/null
	else
		FT_DMESG_MARK=$(dmesg 2> /dev/null | wc -l)
	fi
}

# Returns 1 (and prints the lines) if the kernel complained since the mark.
ft_dmesg_scan()
{
	if command -v dmesg-check > /dev/null; then
		# an explicit status: a bare "return" in a trap handler returns
		# the status from before the trap
		dmesg-check scan
		return $?
	fi
	[ -n "$FT_DMESG_MARK" ] || return 0
	local bad
	bad=$(dmesg 2> /dev/null | tail -n +"$((FT_DMESG_MARK + 1))" |
	      grep -E 'BUG:|WARNING:|Oops|refcount_t|leak|KASAN|UBSAN|general protection|list_(add|del) corruption|NETDEV WATCHDOG' || true)
	[ -z "$bad" ] && return 0
	printf '# dmesg: %s\n' "${bad//$'\n'/$'\n'# dmesg: }"
	return 1
}

ft_exit()
{
	local rc=$? i
	set +e
	for ((i = ${#FT_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${FT_CLEANUPS[i]}" > /dev/null 2>&1
	done
	if ! ft_dmesg_scan; then
		echo "# FAIL: kernel log has new warnings"
		if [ "$rc" -eq 0 ] || [ "$rc" -eq "$ksft_skip" ]; then
			rc=1
		fi
	fi
	rm -rf "$FT_TMP"
	echo "# $FT_TEST took ${SECONDS} s"
	case $rc in
	0) echo "# PASS: $FT_TEST" ;;
	"$ksft_skip") ;;
	*) echo "# FAIL: $FT_TEST (exit $rc)" ;;
	esac
	exit "$rc"
}
trap ft_exit EXIT

# ---- requirements and the module ----

ft_require_cmd()
{
	local c
	for c in "$@"; do
		command -v "$c" > /dev/null || skip "$c not found"
	done
}

ft_loaded() { [ -d /sys/module/shift_ft ]; }

# ft_load [PARAM=VALUE ...]: load unless loaded (always, if params given).
ft_load()
{
	if ft_loaded; then
		[ $# -eq 0 ] && return 0
		ft_unload
	fi
	insmod "$FT_KO" "$@" || fail "insmod $FT_KO $*"
	ft_wait_node
}

ft_unload()
{
	local i
	ft_loaded || return 0
	# the last munmap of an exiting holder may still be in flight
	for i in $(seq 50); do
		rmmod shift_ft 2> /dev/null && return 0
		sleep 0.1
	done
	rmmod shift_ft || fail "rmmod shift_ft"
}

ft_wait_node()
{
	local i
	for i in $(seq 100); do
		[ -c /dev/shift_ft ] && return 0
		sleep 0.02
	done
	fail "/dev/shift_ft did not appear"
}

ft_setup()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	[ -f "$FT_KO" ] || skip "module $FT_KO not built (make module KVER=$(uname -r))"
	if [ ! -x "$FTNL" ] || [ ! -x "$FTPAGE" ]; then
		skip "helpers not built (make -C $FT_DIR)"
	fi
	if [ ! -e /sys/class/infiniband/rxe0 ] || [ ! -e /sys/class/infiniband/rxe1 ]; then
		skip "rxe0/rxe1 missing: needs the lab"
	fi
	ft_require_cmd ip rdma awk insmod rmmod
	ft_dmesg_mark
	ft_load
	ft_wait_port rxe0 1 ACTIVE
	ft_wait_port rxe1 1 ACTIVE
}

# ---- reading the table ----

# ft_nl DEV PORT KEY: a field of the port's netlink reply.
ft_nl()
{
	local v
	v=$("$FTNL" port "$1" "$2" -f "$3") || return 1
	echo "${v#*=}"
}

# ft_nl_pair DEV PORT KEY: a field of the pair's netlink reply.
ft_nl_pair()
{
	local v
	v=$("$FTNL" pair "$1" "$2" -f "$3") || return 1
	echo "${v#*=}"
}

# ft_pg DEV PORT KEY: a field of the port's row in the page.
ft_pg()
{
	"$FTPAGE" ports -f dev_name,port_num,"$3" |
		awk -F'\t' -v d="dev_name=$1" -v p="port_num=$2" \
			'$1 == d && $2 == p { sub(/^[^=]*=/, "", $3); print $3 }'
}

# ft_field KEY: the value of KEY in each key=value line on stdin.
ft_field()
{
	awk -F'\t' -v k="$1" '{
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1) { print substr($i, length(k) + 2); next }
	}'
}

# ft_expect WHAT GOT WANT
ft_expect()
{
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# ft_wait_port DEV PORT COND... : wait (3 s) until the page row matches.
ft_wait_port()
{
	"$FTPAGE" wait "$@" -t "${FT_WAIT_MS:-3000}" > /dev/null ||
		fail "page row $1 $2 never matched: ${*:3}"
}

ft_now() { "$FTPAGE" now; }

# ---- background helpers ----

# ft_bg_start LOG READY WHAT CMD...: CMD in the background writing to LOG,
# killed at exit; waits (5 s) for a line matching READY.  Sets FT_BG_PID.
ft_bg_start()
{
	local log=$1 ready=$2 what=$3 i
	shift 3
	"$@" > "$log" 2>&1 &
	FT_BG_PID=$!
	ft_defer "kill $FT_BG_PID"
	for i in $(seq 250); do
		grep -q "$ready" "$log" && return 0
		kill -0 "$FT_BG_PID" 2> /dev/null || break
		sleep 0.02
	done
	cat "$log" >&2
	fail "$what did not start"
}

# ft_monitor_start LOG: a subscribed "ftnl monitor"; sets FT_MON_PID.
ft_monitor_start()
{
	ft_bg_start "$1" '^# monitor: subscribed' "ftnl monitor" "$FTNL" monitor
	FT_MON_PID=$FT_BG_PID
}

# ft_watch_start LOG: "ftpage watch" (a live mapping); sets FT_WATCH_PID.
ft_watch_start()
{
	ft_bg_start "$1" '^# watch: mapped' "ftpage watch" "$FTPAGE" watch
	FT_WATCH_PID=$FT_BG_PID
}

# ft_wait_log FILE AWK_CONDITION [SECONDS]: wait for a matching line.
ft_wait_log()
{
	local i n=$((${3:-3} * 20))
	for ((i = 0; i < n; i++)); do
		awk -F'\t' "$2 { found = 1; exit } END { exit !found }" "$1" && return 0
		sleep 0.05
	done
	log "no line of $1 matched: $2; last lines:"
	tail -n 5 "$1" | sed 's/^/#   /'
	return 1
}

# ---- devices ----

ft_link_up()
{
	local d
	for d in "$@"; do
		ip link set dev "$d" up
	done
}

# Remove a leftover rxe2 from an earlier failed run, and defer its removal.
ft_rxe2_prepare()
{
	[ -e /sys/class/net/eth2 ] || skip "no eth2 for a temporary rxe2"
	if [ -e /sys/class/infiniband/rxe2 ]; then
		rdma link delete rxe2
	fi
	ft_defer "rdma link delete rxe2"
}

# Latency statistics of a file of nanosecond values: "n median max" in ms.
ft_stats_ms()
{
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (!NR) { print "n=0"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "n=%d median=%.3fms max=%.3fms\n", NR, m / 1e6, v[NR] / 1e6
	}'
}
