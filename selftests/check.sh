#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: the host tests, then the lab (the one-host tests shared by
# two guests, then the two-host run), then one summary.  Every stage must
# end with its own "N passed, N failed" line; a stage that ends without one
# (it crashed, the guest never reported) counts as a failure, so nothing
# that did not run can look green.
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ksft_dir=${KSFT_DIR:-$top/build/kselftest/tools/testing/selftests}
log_dir=$top/build/check
mkdir -p "$log_dir"

pass=0 fail=0 skip=0 broken=0

# Count the top-level TAP results of a kselftest run (lines not indented).
tap_summary() {
	awk '/^ok .*# SKIP/ { s++; next }
	     /^ok /         { p++; next }
	     /^not ok /     { f++ }
	     END { printf "%d passed, %d failed, %d skipped\n", p, f, s }'
}

# stage NAME CMD...: run, stream, then add up its closing summary line.
stage() {
	local name=$1 log=$log_dir/$1.log line rc
	shift
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E '^([a-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		echo "== $name: no summary line (exit $rc): counted as failed"
		broken=$((broken + 1))
		return
	fi
	set -- $(echo "${line#*: }" | tr -dc '0-9 ')
	pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + ${3:-0}))
	if [ "$rc" != 0 ] && [ "$2" = 0 ]; then
		echo "== $name: exit $rc with no failed test: counted as failed"
		broken=$((broken + 1))
	fi
}

host_tests() {
	make -s -C "$top/selftests/host" OUTPUT="$top/selftests/host" KSFT_DIR="$ksft_dir" SHIFT_TOP="$top" \
		run_tests | tee "$log_dir/host.tap"
	echo "host: $(tap_summary < "$log_dir/host.tap")"
}

# the test directories of each topology, as the top Makefile lists them
one=() two=()
for d in ${LAB_ONE_DIRS:-selftests/shift_ft}; do one+=("$top/$d"); done
for d in ${LAB_TWO_DIRS:-selftests/shift_ft_2host}; do two+=("$top/$d"); done

# lab_part K RC: part K/2 of the one-host tests, as lab.sh printed it, and
# its exit status RC (for stage)
lab_part()
{
	cat "$log_dir/lab-one-$1.out"
	return "$2"
}

stage host host_tests
# The one-host tests, shared by two guests side by side, each taking one of
# the two cores (lab.sh run --part: every other test), so that they take
# about half as long as in one guest; the initramfs is built once first,
# before the two runs would each build it.
"$top/selftests/lab/lab.sh" initramfs > /dev/null
pids=()
for k in 1 2; do
	"$top/selftests/lab/lab.sh" run one --part "$k/2" "${one[@]}" > "$log_dir/lab-one-$k.out" 2>&1 &
	pids+=($!)
done
rcs=()
for pid in "${pids[@]}"; do
	wait "$pid"
	rcs+=($?)
done
stage lab-one-1 lab_part 1 "${rcs[0]}"
stage lab-one-2 lab_part 2 "${rcs[1]}"
stage lab-two "$top/selftests/lab/lab.sh" run two "${two[@]}"

fail=$((fail + broken))
echo
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
