#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: every way verbs register host memory gets a twin on the backup
# NIC: ibv_reg_mr, ibv_reg_mr_iova, ibv_reg_mr_iova2 and a region whose
# access ibv_rereg_mr changed (whatever the kernel's rxe answers to it,
# the library answers the same and the twin follows the region's keys);
# each twin's rkey is published while the region lives and forgotten when
# it goes.
#
#     mrkinds ── reg (KIND) ──► rxe0            (the application's region)
#                libshiftu ──► rxe1 twin ──► store: mr:GUID:RKEY = twin rkey
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ls_setup
[ -x "$LS_MRKINDS" ] || skip "mrkinds not built (make -C $LS_DIR)"

for kind in plain iova iova2 rereg; do
	ls_mr_kind "$kind" || fail "$kind: $LS_WHY"
done
# the library returns what libibverbs returned
ft_expect "ibv_rereg_mr's result with the library" \
	"$(sed -n 's/^rereg ret=\([-0-9]*\).*/\1/p' "$FT_TMP/mr.rereg.lib")" \
	"$(sed -n 's/^rereg ret=\([-0-9]*\).*/\1/p' "$FT_TMP/mr.rereg.plain")"
