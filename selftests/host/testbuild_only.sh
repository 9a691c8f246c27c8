#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# testbuild_only: the count start of the test build (SHIFTU_TEST_COUNT_START,
# userlib/testbuild.c) is in libshiftu-test.so.0 and not in the production
# libshiftu.so.0, which no environment can make start its counts elsewhere.
set -e -o pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
lib=$top/userlib
ksft_skip=4

for f in libshiftu.so.0 libshiftu-test.so.0; do
	[ -f "$lib/$f" ] || { echo "# SKIP: $f not built (make -C $lib)"; exit $ksft_skip; }
done
if grep -q SHIFTU_TEST_COUNT_START "$lib/libshiftu.so.0"; then
	echo "# libshiftu.so.0 reads SHIFTU_TEST_COUNT_START"
	exit 1
fi
if nm "$lib/libshiftu.so.0" 2> /dev/null | grep -q ' shiftu_count_start$'; then
	echo "# libshiftu.so.0 has shiftu_count_start()"
	exit 1
fi
grep -q SHIFTU_TEST_COUNT_START "$lib/libshiftu-test.so.0" ||
	{ echo "# libshiftu-test.so.0 does not read SHIFTU_TEST_COUNT_START"; exit 1; }
readelf -d "$lib/libshiftu-test.so.0" | grep -q 'soname: \[libshiftu-test.so.0\]' ||
	{ echo "# libshiftu-test.so.0 has another soname"; exit 1; }
echo "# the count start is the test build's only"
