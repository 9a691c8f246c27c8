// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * testbuild.c: knobs of the test build only (libshiftu-test.so,
 * -DSHIFTU_TEST_BUILD; never linked into libshiftu.so).
 *
 *   SHIFTU_TEST_COUNT_START	0..2^64-1, decimal or 0x hex	(0)
 *	where every QP's two-sided counts start (serial.h): a lab test
 *	starts them just below 2^31 or 2^32 and pulls cables across the
 *	wrap.  Both ends of a connection must be given the same value:
 *	each side's receive count counts the other's sends.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "log.h"
#include "serial.h"

#ifndef SHIFTU_TEST_BUILD
#error "testbuild.c belongs to the test build only (-DSHIFTU_TEST_BUILD)"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t count_start;

static void count_start_read(void)
{
	const char *s = getenv("SHIFTU_TEST_COUNT_START");
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || *s == '-') {
		shiftu_warn("SHIFTU_TEST_COUNT_START=%s: not a number: the counts start at 0", s);
		return;
	}
	count_start = v;
	shiftu_info("test build: two-sided counts start at %" PRIu64, count_start);
}

uint64_t shiftu_count_start(void)
{
	pthread_once(&once, count_start_read);
	return count_start;
}
