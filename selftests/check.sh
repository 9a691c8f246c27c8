#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: the host tests, then the lab: the one-host tests in one
# guest beside the two-host tests in two lanes (TWO_LANES=2, the default:
# two pairs of guests, each with half of them), then one summary.  Every
# stage must end with its own "N passed, N failed" line; a stage that ends
# without one (it crashed, the guest never reported) counts as a failure,
# so nothing that did not run can look green.
#
# The lab boots KVER, the kernel the top Makefile built for; each other
# installed kernel with headers and an image in /boot also gets the module
# built.  The kernels share the one-host tests by this rule: the module's
# own (LAB_KMOD_DIRS) run on each other kernel, in the one-host guest after
# KVER's, and KVER runs the rest of the one-host tests and all the two-host
# ones, which load the module there for every test.  With no other kernel,
# KVER runs everything.  KERNELS=all runs everything on each kernel
# instead: all the one-host tests, then a two-host run of its own.
#
# The many-QP rides (many_*.sh) run MANY_ROUNDS rounds each, 1 here unless
# set, torture.sh TORTURE_PULLS pulls, 10 here, shift_ft's load_unload.sh
# FT_CYCLES module loads, 15 here, its port_events.sh and latency.sh
# FT_FLAPS down/up cycles of each kind, 10 here, store_down.sh's and
# many_gen.sh's jobs STORE_DOWN_P and MANY_GEN_P connections, 16 here,
# and many_procs.sh MANY_PROCS_N processes, 4 here: a round, a pull, a
# load, a flap, a connection or a process more repeats a behaviour, which
# `make many` (5 rounds, 64 connections, 8 processes), `make torture` (50
# pulls), `make soak` (1000 faults) and `make lab` (100 loads, 20 flaps)
# are for; make check, within 25 minutes, runs each behaviour (2 rounds
# and 50 pulls took it to 27, 15 pulls, 30 loads and 20 flaps to 26.7 on
# 2026-12-01).  On CI's two cores, 64 connections and 8 processes starved
# their guests' threads and store for 5 to 10 s (2026-12-02).
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ksft_dir=${KSFT_DIR:-$top/build/kselftest/tools/testing/selftests}
log_dir=$top/build/check
mkdir -p "$log_dir"

pass=0 fail=0 skip=0 broken=0 stages=()

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
	stages+=("$name")
	echo "== $name (at ${SECONDS} s)"
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

# The host tests, run by the lab guests' ksft-run, which enters a directory
# through a link in the kselftest tree: runner.sh then names them
# "selftests: host: ..." (or model) and finds their "settings" (per-test
# timeout).
# Each of HOST_DIRS runs beside the others, its TAP shown once all are
# done, in their order: the host tests run one after another, each on one
# CPU, for about 50 s, and the spin model's 45 s came after them before.
host_tests() {
	local d n pids=()

	for d in ${HOST_DIRS:-selftests/host selftests/model}; do
		n=${d##*/}
		KSFT_DIR="$ksft_dir" "$top/selftests/lab/guest/ksft-run" "$top/$d" \
			> "$log_dir/host-$n.tap" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	: > "$log_dir/host.tap"
	for d in ${HOST_DIRS:-selftests/host selftests/model}; do
		cat "$log_dir/host-${d##*/}.tap" >> "$log_dir/host.tap"
	done
	cat "$log_dir/host.tap"
	echo "host: $(tap_summary < "$log_dir/host.tap")"
}

# the test directories of each topology, as the top Makefile lists them
one=() two=() kmod=()
for d in ${LAB_ONE_DIRS:-selftests/shift_ft}; do one+=("$top/$d"); done
for d in ${LAB_TWO_DIRS:-selftests/shift_ft_2host}; do two+=("$top/$d"); done
for d in ${LAB_KMOD_DIRS:-selftests/shift_ft}; do kmod+=("$top/$d"); done

two_lanes=${TWO_LANES:-2}
case $two_lanes in
1|2) ;;
*) echo "check: TWO_LANES=$two_lanes: 1 (one two-host run) or 2 (two lanes) only" >&2
   exit 2 ;;
esac

case ${KERNELS:-} in
"") ;;
all) kmod=("${one[@]}") ;;
*) echo "check: KERNELS=$KERNELS: only KERNELS=all (every test on every kernel) is known" >&2
   exit 2 ;;
esac

kver=${KVER:-$("$top/scripts/kver.sh")}
others=()
for k in $("$top/scripts/kver.sh" --all); do
	[ "$k" != "$kver" ] && [ -r "/boot/vmlinuz-$k" ] && others+=("$k")
done

# KVER's one-host run: without the module's tests when another kernel
# runs them (the rule above; a third of the one-host time)
if [ "${#others[@]}" -gt 0 ] && [ -z "${KERNELS:-}" ]; then
	rest=()
	for d in "${one[@]}"; do
		[[ " ${kmod[*]} " = *" $d "* ]] || rest+=("$d")
	done
	[ "${#rest[@]}" -gt 0 ] && one=("${rest[@]}")
fi

# lab_part NAME: a lab run as lab.sh printed it into NAME.out, and its
# exit status from NAME.rc (for stage; none written: failed)
lab_part()
{
	cat "$log_dir/$1.out"
	return "$(cat "$log_dir/$1.rc" 2> /dev/null || echo 1)"
}

# The one-host lane: KVER's one-host tests, then the module's on each
# other kernel, one guest after the other, beside the two-host lanes (its
# guest is the fifth on two cores, and off the critical path: the lanes
# took 1440 s, the one-host tests 565 s of it before, 2026-11-29).
lane_one()
{
	local o

	LAB_KVER=$kver "$top/selftests/lab/lab.sh" run one "${one[@]}" \
		> "$log_dir/lab-one.out" 2>&1
	echo $? > "$log_dir/lab-one.rc"
	for o in "${others[@]}"; do
		LAB_KVER=$o "$top/selftests/lab/lab.sh" run one "${kmod[@]}" \
			> "$log_dir/lab-one-$o.out" 2>&1
		echo $? > "$log_dir/lab-one-$o.rc"
	done
}

# Two-host lane K: part K/2 of the two-host tests on KVER (lab.sh run
# --part: every other test).  The two lanes run side by side: the guests
# of one wait (pulls held, backoffs, probes) while the other's work.  Two
# pairs of guests on the two cores took make check from 43 to 33 minutes;
# the 64-QP rides, starved, found two library defects there (a failback
# cut short by the peer's 5 s wait, a replay before the rkeys were looked
# up), fixed since (Documentation/lab.rst).
lane_two()
{
	LAB_KVER=$kver "$top/selftests/lab/lab.sh" run two --part "$1/2" "${two[@]}" \
		> "$log_dir/lab-two-$1.out" 2>&1
	echo $? > "$log_dir/lab-two-$1.rc"
}

# digest: what failed, a few lines a failure, last in the output: CI keeps
# only the log's tail, and a failure whose lines scrolled out of it was
# lost (2026-12-02).  Per stage: each "not ok" with the first FAIL line of
# its test, and the first line of each kernel report (the lab's dmesg scan
# of the whole run, or a test's own, dmesg-check).
digest()
{
	local name out

	for name in "${stages[@]}"; do
		out=$(awk -v pat='BUG:|WARNING:|Oops|refcount_t|UBSAN|KASAN|general protection|NETDEV WATCHDOG|stall|soft lockup' '
			function clip(s) { sub(/^[# ]*/, "", s); return substr(s, 1, 200) }
			/^# selftests: / { first = "" }
			/^not ok / { print "  " clip($0); if (first != "") print "    " first; first = "" ; next }
			/FAIL:/ && first == "" { first = clip($0) }
			/FAIL: .*(tests planned|no test ran|no success token|no dmesg)/ { print "  " clip($0) }
			/dmesg reports kernel problems|dmesg-check: kernel reported problems/ { print "  " clip($0); want = 1; next }
			want && $0 ~ pat { print "    " clip($0); want = 0 }
		' "$log_dir/$name.log")
		[ -n "$out" ] || continue
		echo "check: $name:"
		echo "$out"
	done
}

stage host host_tests
# The module for the other kernels (make all built KVER's).
for o in "${others[@]}"; do
	make -s -C "$top" module KVER="$o" > "$log_dir/module-$o.log" 2>&1 ||
		{ cat "$log_dir/module-$o.log"; echo "== module for $o: build failed"; broken=$((broken + 1)); }
done
# Each initramfs is built once first, before the runs would each build it.
for k in "$kver" "${others[@]}"; do
	LAB_KVER=$k "$top/selftests/lab/lab.sh" initramfs > /dev/null
done
rm -f "$log_dir"/lab-one*.rc "$log_dir"/lab-two-*.rc
export MANY_ROUNDS=${MANY_ROUNDS:-1} TORTURE_PULLS=${TORTURE_PULLS:-10} FT_CYCLES=${FT_CYCLES:-15} \
	FT_FLAPS=${FT_FLAPS:-10} STORE_DOWN_P=${STORE_DOWN_P:-16} MANY_GEN_P=${MANY_GEN_P:-16} \
	MANY_PROCS_N=${MANY_PROCS_N:-4}
pids=()
lane_one &
pids+=($!)
if [ "$two_lanes" = 2 ]; then
	for k in 1 2; do
		lane_two "$k" &
		pids+=($!)
	done
fi
wait "${pids[@]}"
lanes_end=$SECONDS
stage lab-one lab_part lab-one
for o in "${others[@]}"; do
	stage "lab-one-$o" lab_part "lab-one-$o"
done
if [ "$two_lanes" = 2 ]; then
	for k in 1 2; do
		stage "lab-two-$k" lab_part "lab-two-$k"
	done
else
	stage lab-two env LAB_KVER="$kver" "$top/selftests/lab/lab.sh" run two "${two[@]}"
fi
if [ "${KERNELS:-}" = all ]; then
	for o in "${others[@]}"; do
		stage "lab-two-$o" env LAB_KVER="$o" "$top/selftests/lab/lab.sh" run two "${two[@]}"
	done
fi

fail=$((fail + broken))
echo
digest
echo "check: the lab's lanes ended at ${lanes_end} s, all at ${SECONDS} s"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
