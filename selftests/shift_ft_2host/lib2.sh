#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib2.sh: two-host helpers on top of ../shift_ft/lib.sh (sourced, not run).
#
#           host 1                              host 2
#     rxe0 ─ eth0 10.0.0.1 ──── rail 0 ──── eth0 10.0.0.2 ─ rxe0
#     rxe1 ─ eth1 10.0.1.1 ──── rail 1 ──── eth1 10.0.1.2 ─ rxe1
#            eth2 10.0.2.1 ──── mgmt ────── eth2 10.0.2.2   (lab-peer)
#
# Tests run on host 1 and drive host 2 with lab-peer.

# shellcheck source=../shift_ft/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../shift_ft/lib.sh"
# shellcheck source=../lab/guest/lab-lib.sh
. lab-lib.sh

# ft2_setup: ft_setup on both hosts, or skip unless the lab has two.
ft2_setup()
{
	[ "${LAB_NHOSTS:-1}" -ge 2 ] || skip "needs the two-host lab"
	ft_require_cmd lab-peer lab-link
	ft_setup
	lab-peer --wait 30 > /dev/null || fail "host 2 does not answer"
	# one lab-peer for both (each starts Python on both hosts: a second in
	# the lab's guests); 3: no module
	peer "{ [ -d /sys/module/shift_ft ] || insmod $FT_KO || exit 3; } &&
	      $FTPAGE wait rxe0 1 state=ACTIVE -t 5000 > /dev/null &&
	      $FTPAGE wait rxe1 1 state=ACTIVE -t 5000 > /dev/null" || {
		[ $? = 3 ] && fail "insmod on host 2"
		fail "host 2's ports are not ACTIVE"
	}
	ft_defer ft2_links_on
}

# ft2_links_on: both of host 2's cables plugged in again (a test's end)
ft2_links_on()
{
	lab-peer 'lab-link eth0 on; lab-link eth1 on'
}

# peer CMD: run CMD on host 2, its output commented out for TAP.
peer() { lab-peer "$@" | sed 's/^/# [host2] /'; return "${PIPESTATUS[0]}"; }

# peer_listening PORT: wait (10 s) until host 2 listens on TCP PORT.
peer_listening()
{
	lab-peer "for i in \$(seq 200); do ss -ltn | grep -q ':$1 ' && exit 0; sleep 0.05; done; exit 1"
}

# ft_gid_of IP: the IPv4-mapped GID of IP, as ftnl takes it.
ft_gid_of()
{
	# shellcheck disable=SC2086
	printf '::ffff:%d.%d.%d.%d\n' ${1//./ }
}
