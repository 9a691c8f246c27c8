#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh: helpers of the one-host libshiftu tests (sourced, not run), on
# top of ../shift_ft/lib.sh (ft_setup, ft_defer, fail, skip, log).
#
# Topology (one lab guest): rxe0 on eth0 (rail 0), rxe1 on eth1 (rail 1),
# each the other's backup; a job's QPs loop back to rxe0 itself.

LS_DIR=$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../shift_ft/lib.sh
. "$LS_DIR/../shift_ft/lib.sh"

LS_RUN=$SHIFT_TOP/userlib/shiftu-run
LS_LIB=$SHIFT_TOP/userlib/libshiftu.so.0

# ls_setup: ft_setup (the module loaded, both ports up), and skip unless the
# library and shiftu-run are built.
ls_setup()
{
	[ -x "$LS_RUN" ] && [ -f "$LS_LIB" ] ||
		skip "libshiftu or shiftu-run not built (make -C $SHIFT_TOP lib)"
	ft_setup
}
