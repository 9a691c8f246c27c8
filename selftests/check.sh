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

# lab_one: the one-host tests shared between two guests, each taking one
# of the two cores (lab.sh run --part: every other test), so that the
# stage takes about half as long as in one guest; then both runs' logs and
# one summary line.  Fails if either run failed or ended without its
# summary.
lab_one()
{
	local k rc=0 p=0 f=0 s=0 line
	local -a pids=()

	for k in 1 2; do
		"$top/selftests/lab/lab.sh" run one --part "$k/2" "${one[@]}" \
			> "$log_dir/lab-one.$k.log" 2>&1 &
		pids+=($!)
	done
	for k in 1 2; do
		wait "${pids[$((k - 1))]}" || rc=1
		cat "$log_dir/lab-one.$k.log"
		line=$(grep -E '^lab: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' \
			"$log_dir/lab-one.$k.log" | tail -n 1)
		if [ -z "$line" ]; then
			echo "lab-one: no summary from part $k/2"
			rc=1
			continue
		fi
		set -- $(echo "${line#lab: }" | tr -dc '0-9 ')
		p=$((p + $1)) f=$((f + $2)) s=$((s + $3))
	done
	echo "lab: $p passed, $f failed, $s skipped"
	return $rc
}

stage host host_tests
# the guests' initramfs once, before lab_one's two runs would each build it
"$top/selftests/lab/lab.sh" initramfs > /dev/null
stage lab-one lab_one
stage lab-two "$top/selftests/lab/lab.sh" run two "${two[@]}"

fail=$((fail + broken))
echo
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
