#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: the page_test harness cases (a read-only, self-describing, pollable
# /dev/shift_ft) pass with the module loaded in the lab, without kernel
# warnings.  page_test itself is the kselftest_harness.h program.
#
#   page_test ── open/mmap/ioctl/poll ── /dev/shift_ft
set -e
. "$(dirname "$0")/lib.sh"

ft_setup
[ -x "$FT_DIR/page_test" ] || skip "page_test not built"
rc=0
"$FT_DIR/page_test" || rc=$?
[ "$rc" -eq 0 ] || fail "page_test exited $rc"
exit 0
