#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# get-kselftest.sh OUTDIR: extract the kselftest framework (kselftest.h,
# kselftest_harness.h, lib.mk and kselftest/) from Debian's linux-source
# tarball into OUTDIR/tools/testing/selftests. Runs once: a stamp file
# records the tarball it came from and a later call with the same tarball
# is a no-op. Test Makefiles include $(KSFT_DIR)/lib.mk with
# KSFT_DIR=OUTDIR/tools/testing/selftests.

set -e

TARBALL=${KSFT_TARBALL:-/usr/src/linux-source-6.1.tar.xz}

main()
{
	local out=$1 stamp top members

	if [ -z "$out" ]; then
		echo "usage: $0 OUTDIR" >&2
		return 2
	fi
	stamp=$out/.kselftest-stamp
	# The stamp holds the tarball's identity so a new source package
	# triggers a fresh extraction.
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stat -c '%n %s %Y' "$TARBALL")" ]; then
		return 0
	fi
	if [ ! -r "$TARBALL" ]; then
		echo "get-kselftest: $TARBALL missing (apt-get install linux-source-6.1)" >&2
		return 1
	fi
	top=$(basename "$TARBALL" .tar.xz)/tools/testing/selftests
	members=("$top/kselftest.h" "$top/kselftest_harness.h" "$top/lib.mk" "$top/kselftest")
	mkdir -p "$out"
	echo "get-kselftest: extracting kselftest from $TARBALL"
	tar -xJf "$TARBALL" -C "$out" --strip-components=1 "${members[@]}"
	stat -c '%n %s %Y' "$TARBALL" >"$stamp"
}

main "$@"
