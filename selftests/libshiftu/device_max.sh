#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: a CQ and an RC QP asked for at exactly Soft-RoCE's max_cqe and
# max_qp_wr (and one past them, and one entry below) get, under libshiftu,
# what they get without it: the library's extra queue entry and CQ room
# never make a create fail that the plain verbs accept.  The QP at
# max_qp_wr, and a QP on the CQ of max_cqe entries (no room there for a
# failover's completions), run unprotected, each with one info line.
#
#     devmax ── create_cq / create_qp at the limits ──► rxe0   (control: no library)
#     devmax ── the same, under shiftu-run ──► libshiftu ──► rxe0
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

LS_DEVMAX=$LS_DIR/devmax

ls_setup
[ -x "$LS_DEVMAX" ] || skip "devmax not built (make -C $LS_DIR)"

out=$FT_TMP/devmax
"$LS_DEVMAX" -d rxe0 > "$out.plain" 2>&1 ||
	{ sed 's/^/# /' "$out.plain"; fail "devmax failed without the library"; }
"$LS_RUN" -q -l info -o "$out.shiftu" -- env SHIFTU_STORE_DIR="$FT_TMP/store.devmax" \
	"$LS_DEVMAX" -d rxe0 > "$out.lib" 2>&1 ||
	{ sed 's/^/# /' "$out.lib" "$out.shiftu"; fail "devmax failed under shiftu-run"; }
sed 's/^/# plain: /' "$out.plain"
sed 's/^/# lib:   /' "$out.lib"
grep -q '^done$' "$out.lib" || fail "devmax did not finish under shiftu-run"
# the control: at the limits, the plain verbs create both
grep -q '^cq max_cqe ([0-9]*): ok' "$out.plain" || fail "rxe refused a CQ of max_cqe without the library"
grep -q '^qp max_qp_wr ([0-9]*): ok' "$out.plain" || fail "rxe refused a QP of max_qp_wr without the library"
# the library: line for line the same results
diff -u "$out.plain" "$out.lib" | sed 's/^/# /'
ft_expect "devmax's results under the library" "$(cat "$out.lib")" "$(cat "$out.plain")"
# the QPs it could not protect say so, once each
ft_expect "the QP at max_qp_wr's line" \
	"$(grep -c "max_qp_wr): unprotected" "$out.shiftu" || true)" 1
ft_expect "the QP on the CQ of max_cqe's line" \
	"$(grep -c "max_cqe): unprotected" "$out.shiftu" || true)" 1
log "$(grep -c ': ok' "$out.plain") creates succeeded, $(grep -c ': failed' "$out.plain") failed, the same with the library"
