#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the module DKMS built against the installed headers (kept in
# build/dkms/KVER/ by selftests/host/dkms_build.sh) loads in the lab's
# kernel, carries the tree's version, and tracks both ports.
set -e
. "$(dirname "$0")/lib.sh"

# for this kernel: shift_ft.ko, or .ko.xz as DKMS makes it for 6.12
dkms_ko=$(ls "$SHIFT_TOP/build/dkms/$(uname -r)"/shift_ft.ko* 2> /dev/null | head -n 1)
[ -n "$dkms_ko" ] ||
	skip "no DKMS-built module for $(uname -r) (run selftests/host/dkms_build.sh first)"
ft_setup
ft_defer "ft_unload; ft_load"	# the tree's module for the next test
ft_unload

want=$(modinfo -F version "$FT_KO")	# the tree's own build
got=$(modinfo -F version "$dkms_ko")
# make check builds both from one tree; a lab-only run may find an old one
[ "$got" = "$want" ] ||
	skip "DKMS module $got is from another build than $want: run selftests/host/dkms_build.sh first"
insmod "$dkms_ko"
ft_wait_node
ft_wait_port rxe0 1 ACTIVE
ft_wait_port rxe1 1 ACTIVE
ft_expect "loaded version" "$(cat /sys/module/shift_ft/version)" "$want"
log "DKMS-built shift_ft $got loaded and tracks rxe0 and rxe1"
