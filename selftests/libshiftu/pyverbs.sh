#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Proves: rdma-core's own python tests (those Debian ships with
# python3-pyverbs, for the rdma-core version it ships) on rxe0 pass under
# shiftu-run wherever they pass without it.  pyverbs is a set of Python
# extensions, which Python loads with RTLD_LOCAL: libshiftu must find
# libibverbs past them, and stand in its place without changing what any
# verb returns.
#
#     python3 run_tests.py --dev rxe0 ──► pyverbs (RTLD_LOCAL) ──► libibverbs ──► rxe0
#                                         plain, then under shiftu-run
set -e
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

TESTS=/usr/share/doc/rdma-core/tests
PY=/usr/bin/python3

ls_setup
[ -f "$TESTS/run_tests.py" ] || skip "rdma-core's python tests not installed ($TESTS: python3-pyverbs)"
"$PY" -c 'import pyverbs.device' 2> /dev/null || skip "$PY cannot import pyverbs (python3-pyverbs)"

# the tests as Debian ships them, some compressed, run from the folder above
mkdir -p "$FT_TMP/rc/tests"
cp "$TESTS"/* "$FT_TMP/rc/tests/"
gunzip -f "$FT_TMP"/rc/tests/*.gz

# run TAG [PREFIX...]: the whole suite on rxe0; TAG.out, and TAG.res with
# one "RESULT NAME (CLASS)" line per test (ok, skip, FAIL, ERROR).  unittest
# -v prints a test's name, maybe its docstring's first line, then its
# result; every test it ran must be accounted for.
run()
{
	local tag=$1 t0=$SECONDS ran
	shift
	(cd "$FT_TMP/rc" && timeout 400 "$@" "$PY" tests/run_tests.py --dev rxe0 -v) \
		> "$FT_TMP/$tag.out" 2>&1 || true
	awk '/^test[a-zA-Z0-9_]* \(.*\)/ { n = $1 " " $2 }
	     n != "" && / \.\.\. / {
		if ($NF == "ok") r = "ok"
		else if ($0 ~ / \.\.\. skipped /) r = "skip"
		else if ($NF == "FAIL" || $NF == "ERROR") r = $NF
		else next
		print r, n
		n = ""
	}' "$FT_TMP/$tag.out" | sort > "$FT_TMP/$tag.res"
	ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$FT_TMP/$tag.out")
	log "$tag: $(awk '{ c[$1]++ } END { printf "%d ok, %d skipped, %d failed, %d errors", c["ok"], c["skip"], c["FAIL"], c["ERROR"] }' "$FT_TMP/$tag.res") of ${ran:-?} run, in $((SECONDS - t0)) s"
	[ "$(wc -l < "$FT_TMP/$tag.res")" = "${ran:-x}" ] || {
		tail -n 30 "$FT_TMP/$tag.out" | sed 's/^/# /'
		fail "$tag: the suite did not end, or $(wc -l < "$FT_TMP/$tag.res") results were read of ${ran:-?} run"
	}
}

run plain
[ "$(grep -c '^ok ' "$FT_TMP/plain.res")" -ge 20 ] || {
	tail -n 30 "$FT_TMP/plain.out" | sed 's/^/# /'
	fail "fewer than 20 tests pass without the library: the suite did not run here"
}
run lib "$LS_RUN" -q -l info -o "$FT_TMP/lib.shiftu" --
cp "$FT_TMP"/plain.out "$FT_TMP"/lib.out "$FT_TMP"/lib.shiftu "$FT_OUT/" 2> /dev/null || true
# the library was there: it interposed the contexts and protected RC QPs
ctxs=$(grep -c 'context rxe0: interposed' "$FT_TMP/lib.shiftu" || true)
prot=$(grep -c 'protected by qp' "$FT_TMP/lib.shiftu" || true)
log "lib: $ctxs contexts interposed, $prot QPs protected by a twin on rxe1; $(grep -c ': warn: ' "$FT_TMP/lib.shiftu" || true) warnings"
[ "$ctxs" -gt 0 ] || fail "the library interposed no context: the suite did not run under it"
# every test that passed plain passes under the library
lost=$(comm -23 <(awk '$1 == "ok" { print $2, $3 }' "$FT_TMP/plain.res" | sort) \
		<(awk '$1 == "ok" { print $2, $3 }' "$FT_TMP/lib.res" | sort))
if [ -n "$lost" ]; then
	echo "$lost" | sed 's/^/# passes plain, not under shiftu-run: /'
	grep -E -A12 '^(ERROR|FAIL): ' "$FT_TMP/lib.out" | head -60 | sed 's/^/# /'
	fail "$(echo "$lost" | wc -l) tests pass without the library and not with it"
fi
