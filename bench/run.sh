#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh: `make bench` after `make all`: the bench scenario on the two-host
# lab (selftests/lab/scenarios/bench.sh), then its report, copied out of the
# run's LAB_OUT to build/bench/report.txt (raw outputs: build/bench/raw/).
# Exits with the lab's status; a report with "not measured" lines is still
# printed.

set -e

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=$TOP/build/bench
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

rc=0
# lab.sh names the run directory on stderr ("results in DIR")
"$TOP/selftests/lab/lab.sh" scenario bench two 2> >(tee "$LOG" >&2) || rc=$?
wait
run=$(sed -n 's/.*results in \(.*\)$/\1/p' "$LOG" | tail -n 1)
if [ -z "$run" ] || [ ! -f "$run/host1/out/report.txt" ]; then
	echo "bench: no report (run: ${run:-unknown}); see the console output above" >&2
	exit 1
fi
mkdir -p "$DEST"
rm -rf "$DEST/raw"
cp "$run/host1/out/report.txt" "$DEST/report.txt"
cp -r "$run/host1/out/bench" "$DEST/raw"
echo
cat "$DEST/report.txt"
echo
echo "bench: report in $DEST/report.txt, raw outputs in $DEST/raw, run in $run"
exit "$rc"
