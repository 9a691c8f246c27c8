#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# testbuild_only: the test build's knobs (SHIFTU_TEST_*, userlib/testbuild.c)
# are read by libshiftu-test.so.0 and are not in the production
# libshiftu.so.0, which no environment can make start its counts elsewhere,
# wait, fail a replay or reset a QP; nor is the test build's check of the lock order.
set -e -o pipefail

top=$(cd -P "$(dirname "$0")/../.." && pwd)
lib=$top/userlib
ksft_skip=4
knobs="SHIFTU_TEST_COUNT_START SHIFTU_TEST_TWIN_RESET_MS SHIFTU_TEST_FAILBACK_DELAY_MS
       SHIFTU_TEST_SERVE_DELAY_MS SHIFTU_TEST_WATCH_DELAY_MS SHIFTU_TEST_REPLAY_FAIL
       SHIFTU_TEST_RESET_FILE SHIFTU_TEST_TWIN_ERR_FILE SHIFTU_TEST_DRAIN_STALL_MS SHIFTU_TEST_FOLLOW_DELAY_MS
       SHIFTU_TEST_SCOUT_DELAY_MS SHIFTU_TEST_JOIN_DELAY_MS SHIFTU_TEST_KV_TIMEOUT_MS"
# those read with the configuration: a good value each, a bad value each
good="SHIFTU_TEST_TWIN_RESET_MS=1500 SHIFTU_TEST_FAILBACK_DELAY_MS=2000
      SHIFTU_TEST_SERVE_DELAY_MS=50 SHIFTU_TEST_WATCH_DELAY_MS=1000 SHIFTU_TEST_REPLAY_FAIL=3
      SHIFTU_TEST_DRAIN_STALL_MS=11000 SHIFTU_TEST_FOLLOW_DELAY_MS=7000
      SHIFTU_TEST_SCOUT_DELAY_MS=5000 SHIFTU_TEST_JOIN_DELAY_MS=3000
      SHIFTU_TEST_KV_TIMEOUT_MS=15000"
bad="SHIFTU_TEST_TWIN_RESET_MS=-1 SHIFTU_TEST_FAILBACK_DELAY_MS=10001
     SHIFTU_TEST_SERVE_DELAY_MS=1001 SHIFTU_TEST_WATCH_DELAY_MS=10001 SHIFTU_TEST_REPLAY_FAIL=65537
     SHIFTU_TEST_DRAIN_STALL_MS=20001 SHIFTU_TEST_FOLLOW_DELAY_MS=20001
     SHIFTU_TEST_SCOUT_DELAY_MS=60001 SHIFTU_TEST_JOIN_DELAY_MS=20001
     SHIFTU_TEST_KV_TIMEOUT_MS=60001"

for f in libshiftu.so.0 libshiftu-test.so.0; do
	[ -f "$lib/$f" ] || { echo "# SKIP: $f not built (make -C $lib)"; exit $ksft_skip; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strings "$lib/libshiftu.so.0" > "$tmp/prod.strings"
strings "$lib/libshiftu-test.so.0" > "$tmp/test.strings"
if grep SHIFTU_TEST_ "$tmp/prod.strings" | sed 's/^/# libshiftu.so.0 has: /' | grep .; then
	exit 1
fi
nm "$lib/libshiftu.so.0" > "$tmp/prod.nm" 2> /dev/null || :
if grep -q -e ' shiftu_count_start$' -e ' shiftu_test_' -e ' shiftu_lock_check$' "$tmp/prod.nm"; then
	echo "# libshiftu.so.0 has shiftu_count_start(), a shiftu_test_ function or the lock order's check"
	exit 1
fi
# the lock order's check (lockcheck.c) is the test build's alone
grep -q 'lock order: taking' "$tmp/prod.strings" &&
	{ echo "# libshiftu.so.0 checks the lock order"; exit 1; }
grep -q 'lock order: taking' "$tmp/test.strings" ||
	{ echo "# libshiftu-test.so.0 does not check the lock order"; exit 1; }
for k in $knobs; do
	grep -qx "$k" "$tmp/test.strings" ||
		{ echo "# libshiftu-test.so.0 does not read $k"; exit 1; }
done
readelf -d "$lib/libshiftu-test.so.0" | grep -q 'soname: \[libshiftu-test.so.0\]' ||
	{ echo "# libshiftu-test.so.0 has another soname"; exit 1; }

# What each library makes of the knobs: shiftu_set_options() reads the
# environment (the configuration is otherwise read at the first device open).
cat > "$tmp/readenv.c" <<'EOC'
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct { uint32_t size, mask; char rest[24]; } o = { .size = 32 };
	int (*set)(const void *);
	void *h;

	if (argc != 2 || !(h = dlopen(argv[1], RTLD_NOW)) ||
	    !(set = (int (*)(const void *))dlsym(h, "shiftu_set_options"))) {
		fprintf(stderr, "cannot load %s\n", argc == 2 ? argv[1] : "?");
		return 1;
	}
	return set(&o) ? 1 : 0;
}
EOC
${CC:-cc} -o "$tmp/readenv" "$tmp/readenv.c" -ldl
readenv() # library, variables...
{
	local so=$1

	shift
	env SHIFTU_LOG=info SHIFTU_LOG_FILE="$tmp/log" "$@" "$tmp/readenv" "$lib/$so" ||
		{ echo "# $so: shiftu_set_options() failed"; exit 1; }
}
readenv libshiftu-test.so.0 $good
for kv in $good; do
	grep -q "info: config: $kv: .*(a test setting)" "$tmp/log" ||
		{ echo "# libshiftu-test.so.0 does not say $kv is in force:"; sed 's/^/# /' "$tmp/log"; exit 1; }
done
readenv libshiftu-test.so.0 $bad
for kv in $bad; do
	grep -q "warn: $kv: invalid value, using 0" "$tmp/log" ||
		{ echo "# libshiftu-test.so.0 does not refuse $kv:"; sed 's/^/# /' "$tmp/log"; exit 1; }
done
: > "$tmp/log"
readenv libshiftu.so.0 $good
readenv libshiftu.so.0 $bad
if grep SHIFTU_TEST_ "$tmp/log" | sed 's/^/# libshiftu.so.0 said: /' | grep .; then
	exit 1
fi
echo "# the SHIFTU_TEST_ knobs are the test build's only"
