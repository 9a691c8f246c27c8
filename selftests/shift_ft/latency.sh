#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a port pulled down and plugged back, by "ip link" inside the guest
# and by a cable pull from outside (QEMU set_link), reaches the page and the
# "events" group within 1 s of the kernel's own RTM_NEWLINK for it, every
# time, over 20 cycles of each; prints the median and maximum of each from
# the request (and of the link message), measured by ftflap in one poll()
# loop with no process start in between (also appended to
# $LAB_OUT/latency.txt).  Cable pulls are a second apart: the guest hears
# of carrier loss through linkwatch, which holds an event until a second
# after its previous run; a run of linkwatch just before a pull still
# holds it, which is why the limit counts from the link message (ftflap.c).
#
#   eth0 ── rxe0  (flapped)      eth1 ── rxe1  (left alone)
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
FTFLAP=$FT_DIR/ftflap
[ -x "$FTFLAP" ] || skip "ftflap not built"
CYCLES=${FT_FLAPS:-20}
ft_defer "ip link set dev eth0 up"

run()
{
	local kind=$1 settle=$2 rc=0
	"$FTFLAP" -n "$CYCLES" -i eth0 -d rxe0 -p 1 -l 1000 -s "$settle" "$kind" \
		> "$FT_TMP/$kind" || rc=$?
	grep '^#' "$FT_TMP/$kind" | tail -n 4
	grep -v '^#' "$FT_TMP/$kind" | sed 's/^/# /'
	return $rc
}

run ip 100 || fail "ip link flaps: a transition was missing, wrong or over 1 s"
ft_wait_port rxe0 1 ACTIVE
if [ -w /dev/ttyS1 ] && command -v lab-link > /dev/null; then
	run cable 1100 || fail "cable pulls: a transition was missing, wrong or over 1 s"
	cable=yes
fi

mkdir -p "$FT_OUT"
{
	echo "# shift_ft latency, request to update, ftflap ($(date -u +%FT%TZ))"
	cat "$FT_TMP/ip" "$FT_TMP/cable" 2> /dev/null | grep -v '^#'
} >> "$FT_OUT/latency.txt"
[ "${cable:-}" = yes ] || skip "no lab control line: cable pulls not measured (ip part passed)"
