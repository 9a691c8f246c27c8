#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers of the shiftmon tests (sourced, not run), on top of
# ../shift_ft/lib.sh (ft_setup, ft_defer, the page and netlink helpers).
#
# Topology (one lab guest):
#
#     eth0 ── rxe0   rail 0   (lab_link eth0 off|on pulls its cable)
#     eth1 ── rxe1   rail 1
#
#     shiftmon ──netlink──► shift_ft ◄──mmap── ftpage (the reference)

SM_DIR=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../shift_ft/lib.sh
. "$SM_DIR/../shift_ft/lib.sh"

SM=${SHIFTMON:-$SHIFT_TOP/tools/shiftmon/shiftmon}
# a GID the tests own: sm_sync's path rows, deleted on exit
SM_SYNC_GID=fe80::5f:1

# sm_setup: ft_setup, and skip unless shiftmon is built.
sm_setup()
{
	[ -x "$SM" ] || skip "shiftmon not built (make -C $SHIFT_TOP/tools/shiftmon)"
	ft_setup
}

# a command prefix (exec'ing: the pid stays the tool's, so kill reaches it)
SM_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --"
as_nobody() { $SM_NOBODY "$@"; }

# sm_monitor_start LOG [OPTIONS...]: "shiftmon monitor OPTIONS" writing to
# LOG (prefixed by the command words in $SM_AS, e.g. "$SM_NOBODY"); returns
# once it is subscribed (a path report made as root shows up in LOG).  Sets
# SM_MON_PID.  A background process left behind would hold the runner's
# output open, so every one is killed at exit.
sm_monitor_start()
{
	local log=$1 i
	shift
	# shellcheck disable=SC2086 # a word list
	$SM_AS "$SM" monitor "$@" > "$log" 2> "$log.err" &
	SM_MON_PID=$!
	ft_defer "kill $SM_MON_PID"
	ft_defer "'$FTNL' path-del rxe0 1 $SM_SYNC_GID"
	for i in $(seq 100); do
		"$SM" report rxe0 1 "$SM_SYNC_GID" up source agent
		grep -qi "fe80::5f:1\|fe80:0000:0000:0000:0000:0000:005f:0001" "$log" && return 0
		kill -0 "$SM_MON_PID" 2> /dev/null || break
		sleep 0.1
	done
	cat "$log" "$log.err" | sed 's/^/# monitor: /'
	fail "shiftmon monitor did not subscribe"
}

# sm_quiet FILE...: return once none of the FILEs (monitors' logs) has
# grown for a second, 10 s at most.  A port's last line may come late:
# on 6.12 rxe reports a port ACTIVE twice after `ip link set up`, at
# NETDEV_UP and again when the carrier comes back, up to 0.3 s later
# (6.12's virtio_net drops the carrier at `ip link set down`, 6.1's keeps
# it: carrier_down_count and carrier_up_count in sysfs).
sm_quiet()
{
	local i was now

	now=$(stat -c %s "$@")
	for i in $(seq 10); do
		was=$now
		sleep 1
		now=$(stat -c %s "$@")
		[ "$now" != "$was" ] || return 0
	done
}

# sm_expect_rc WANT CMD...: run CMD, check its exit status.
sm_expect_rc()
{
	local want=$1 rc=0
	shift
	"$@" > "$FT_TMP/out" 2> "$FT_TMP/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		sed 's/^/# stdout: /' "$FT_TMP/out"
		sed 's/^/# stderr: /' "$FT_TMP/err"
		fail "$*: exit $rc, expected $want"
	fi
}
