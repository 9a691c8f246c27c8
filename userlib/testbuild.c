// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * testbuild.c: knobs of the test build only (libshiftu-test.so,
 * -DSHIFTU_TEST_BUILD; never linked into libshiftu.so).
 *
 *   SHIFTU_TEST_TWIN_RESET_MS, SHIFTU_TEST_FAILBACK_DELAY_MS,
 *   SHIFTU_TEST_SERVE_DELAY_MS, SHIFTU_TEST_WATCH_DELAY_MS,
 *   SHIFTU_TEST_REPLAY_FAIL, SHIFTU_TEST_DRAIN_STALL_MS,
 *   SHIFTU_TEST_FOLLOW_DELAY_MS
 *   SHIFTU_TEST_SCOUT_DELAY_MS
 *	read with the rest of the configuration (config.c) into its test
 *	part; what each does and its range: testbuild.h
 *   SHIFTU_TEST_RESET_FILE	a path	(none)
 *	what it does: testbuild.h; read once, as the counts' start
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

#include "config.h"
#include "log.h"
#include "serial.h"
#include "testbuild.h"

#ifndef SHIFTU_TEST_BUILD
#error "testbuild.c belongs to the test build only (-DSHIFTU_TEST_BUILD)"
#endif

/* One knob: 0..@max, 0 when unset; a bad value is logged and 0 kept. */
static int knob(char *(*get)(const char *), const char *var, uint32_t max, uint32_t *val)
{
	const char *v = get(var);

	*val = 0;
	if (!v || !shiftu_parse_ms(v, 0, max, val))
		return 0;
	/* the words config.c uses for every variable */
	shiftu_warn("%s=%s: invalid value, using 0", var, v);
	return 1;
}

int shiftu_test_knobs_from_env(struct shiftu_config *cfg, char *(*get)(const char *))
{
	int nbad = 0;

	/* one after the other: the log's lines in this order */
	nbad += knob(get, "SHIFTU_TEST_TWIN_RESET_MS", SHIFTU_TWIN_RESET_MS_MAX,
		     &cfg->test.twin_reset_ms);
	nbad += knob(get, "SHIFTU_TEST_FAILBACK_DELAY_MS", SHIFTU_FAILBACK_DELAY_MS_MAX,
		     &cfg->test.failback_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_SERVE_DELAY_MS", SHIFTU_SERVE_DELAY_MS_MAX,
		     &cfg->test.serve_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_WATCH_DELAY_MS", SHIFTU_WATCH_DELAY_MS_MAX,
		     &cfg->test.watch_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_REPLAY_FAIL", SHIFTU_REPLAY_FAIL_MAX,
		     &cfg->test.replay_fail);
	nbad += knob(get, "SHIFTU_TEST_DRAIN_STALL_MS", SHIFTU_DRAIN_STALL_MS_MAX,
		     &cfg->test.drain_stall_ms);
	nbad += knob(get, "SHIFTU_TEST_FOLLOW_DELAY_MS", SHIFTU_FOLLOW_DELAY_MS_MAX,
		     &cfg->test.follow_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_SCOUT_DELAY_MS", SHIFTU_SCOUT_DELAY_MS_MAX,
		     &cfg->test.scout_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_JOIN_DELAY_MS", SHIFTU_JOIN_DELAY_MS_MAX,
		     &cfg->test.join_delay_ms);
	nbad += knob(get, "SHIFTU_TEST_KV_TIMEOUT_MS", SHIFTU_KV_TIMEOUT_MS_MAX,
		     &cfg->test.kv_timeout_ms);
	return nbad;
}

void shiftu_test_knobs_log(const struct shiftu_config *cfg)
{
	const typeof(cfg->test) *t = &cfg->test;

	if (t->twin_reset_ms)
		shiftu_info("config: SHIFTU_TEST_TWIN_RESET_MS=%u: twins are reset %u ms after a failback (a test setting)",
			    t->twin_reset_ms, t->twin_reset_ms);
	if (t->failback_delay_ms)
		shiftu_info("config: SHIFTU_TEST_FAILBACK_DELAY_MS=%u: a two-sided failback waits %u ms after its probe (a test setting)",
			    t->failback_delay_ms, t->failback_delay_ms);
	if (t->serve_delay_ms)
		shiftu_info("config: SHIFTU_TEST_SERVE_DELAY_MS=%u: the backup thread waits for the application's poll to take a failback's message before each look (0.5 s at most) and %u ms before keeping what it found, and an answer on a default QP leaves %u ms late (a test setting)",
			    t->serve_delay_ms, t->serve_delay_ms, t->serve_delay_ms / 2);
	if (t->watch_delay_ms)
		shiftu_info("config: SHIFTU_TEST_WATCH_DELAY_MS=%u: the watcher thread waits %u ms before it serves the backup CQs' events (a test setting)",
			    t->watch_delay_ms, t->watch_delay_ms);
	if (t->replay_fail)
		shiftu_info("config: SHIFTU_TEST_REPLAY_FAIL=%u: a replay posts %u requests and fails the rest (a test setting)",
			    t->replay_fail, t->replay_fail - 1);
	if (t->drain_stall_ms)
		shiftu_info("config: SHIFTU_TEST_DRAIN_STALL_MS=%u: a drain of a twin stalls %u ms between stopping the twin and posting its markers (a test setting)",
			    t->drain_stall_ms, t->drain_stall_ms);
	if (t->follow_delay_ms)
		shiftu_info("config: SHIFTU_TEST_FOLLOW_DELAY_MS=%u: a QP that granted the peer's failback follows the peer back %u ms late (a test setting)",
			    t->follow_delay_ms, t->follow_delay_ms);
	if (t->scout_delay_ms)
		shiftu_info("config: SHIFTU_TEST_SCOUT_DELAY_MS=%u: the look ahead reads no send ring for %u ms (a test setting)",
			    t->scout_delay_ms, t->scout_delay_ms);
	if (t->join_delay_ms)
		shiftu_info("config: SHIFTU_TEST_JOIN_DELAY_MS=%u: a twin waits %u ms in RTR before RTS (a test setting)",
			    t->join_delay_ms, t->join_delay_ms);
	if (t->kv_timeout_ms)
		shiftu_info("config: SHIFTU_TEST_KV_TIMEOUT_MS=%u: a store command waits %u ms for an answer (a test setting)",
			    t->kv_timeout_ms, t->kv_timeout_ms);
}

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

static pthread_once_t files_once = PTHREAD_ONCE_INIT;
static const char *reset_file, *twin_err_file;

/* A knob that names a file: its path, or NULL when unset. */
static const char *file_knob(const char *var, const char *what)
{
	const char *s = getenv(var);

	if (!s || !*s)
		return NULL;
	shiftu_info("config: %s=%s: %s once that file is there (a test setting)", var, s, what);
	return s;
}

static void files_read(void)
{
	reset_file = file_knob("SHIFTU_TEST_RESET_FILE",
			       "a passive default QP is reset in place");
	twin_err_file = file_knob("SHIFTU_TEST_TWIN_ERR_FILE",
				  "a twin that carries its QP's work is stopped");
}

const char *shiftu_test_reset_file(void)
{
	pthread_once(&files_once, files_read);
	return reset_file;
}

const char *shiftu_test_twin_err_file(void)
{
	pthread_once(&files_once, files_read);
	return twin_err_file;
}
