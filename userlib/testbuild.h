/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * testbuild.h: the lab's knobs, read by the test build only
 * (libshiftu-test.so.0, -DSHIFTU_TEST_BUILD, testbuild.c).  The production
 * library has neither the variables nor the code behind them: there each
 * accessor below is a constant 0, and what a call site does with a nonzero
 * value is folded away by the compiler.
 *
 *   SHIFTU_TEST_TWIN_RESET_MS		0..10000	(0)
 *	a stale twin's reset is put off this long after a failback
 *	(twin.c), rather than done in the move (move.c)
 *   SHIFTU_TEST_FAILBACK_DELAY_MS	0..10000	(0)
 *	a two-sided failback waits this long after its good probe
 *   SHIFTU_TEST_SERVE_DELAY_MS		0..1000		(0)
 *	shiftu_app_serve() waits for the application's poll to take the
 *	failback's message, then this long before it keeps what it found
 *	(cq.c); an answer on the default QP leaves half that late
 *	(handshake.c)
 *   SHIFTU_TEST_WATCH_DELAY_MS		0..10000	(0)
 *	the watcher thread waits this long before it serves the backup
 *	CQs' events (watcher.c)
 *   SHIFTU_TEST_REPLAY_FAIL		0..65536	(0)
 *	a replay's post this far on (1: the first) fails with EIO
 *	(replay.c)
 *   SHIFTU_TEST_RESET_FILE		a path		(none)
 *	once the file is there, the shadow thread resets in place, with
 *	the PSNs it queries, each default QP, posting again what it had
 *	outstanding (WRITEs, SENDs, receives), then removes the file:
 *	its responder forgets the message it was in, as Soft-RoCE's did in
 *	the 300- and 1000-fault soaks (shadow.c)
 *   SHIFTU_TEST_TWIN_ERR_FILE		a path		(none)
 *	once the file is there, the shadow thread moves to the error state
 *	each twin that carries its QP's work (Fallback), then removes the
 *	file: the twin fails under it, its requests flushed, as a backup
 *	NIC's would be (shadow.c)
 *   SHIFTU_TEST_DRAIN_STALL_MS		0..20000	(0)
 *	a drain of a twin stalls this long, CQ locks held, after it
 *	stopped the twin and before it posts its markers, as a thread
 *	starved of the CPU does (drain.c)
 *   SHIFTU_TEST_FOLLOW_DELAY_MS		0..20000	(0)
 *	a QP that granted the peer's two-sided failback takes the peer's
 *	message on its default QP this long late: it waits, fo_lock held,
 *	before it follows the peer back, as a side starved of the CPU
 *	does, past the peer's wait for its answer; the process's first
 *	follow only (failover.c)
 *   SHIFTU_TEST_SCOUT_DELAY_MS		0..60000	(0)
 *	the look ahead reads no QP's send ring for this long after its
 *	first chance to (scout.c): a failover in that time meets keys of
 *	the peer's that nothing fetched ahead
 *   SHIFTU_TEST_JOIN_DELAY_MS		0..20000	(0)
 *	a twin waits this long in RTR before RTS (qpconn.c, twin.c), as
 *	one whose thread is starved of the CPU between the two steps: it
 *	takes the peer's messages, but cannot answer them yet
 *   SHIFTU_TEST_KV_TIMEOUT_MS		0..60000	(0)
 *	the store's connect and read timeout, the least and the most a
 *	command waits for an answer (store_redis.c), in place of
 *	SHIFTU_KV_TIMEOUT_MS and SHIFTU_KV_TIMEOUT_MAX_MS: a verb that
 *	waited for a stopped store would take this long at least
 *
 * A bad value is logged (warn: variable and value) and 0 is used; a value
 * in force is logged at info as a test setting.  None of them is on the
 * data path: each is read by a failover, a failback or a library thread.
 */
#ifndef _SHIFTU_TESTBUILD_H
#define _SHIFTU_TESTBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SHIFTU_TWIN_RESET_MS_MAX	10000
#define SHIFTU_FAILBACK_DELAY_MS_MAX	10000
#define SHIFTU_SERVE_DELAY_MS_MAX	1000
#define SHIFTU_WATCH_DELAY_MS_MAX	10000
#define SHIFTU_REPLAY_FAIL_MAX		65536
#define SHIFTU_DRAIN_STALL_MS_MAX	20000
#define SHIFTU_FOLLOW_DELAY_MS_MAX	20000
#define SHIFTU_SCOUT_DELAY_MS_MAX	60000
#define SHIFTU_JOIN_DELAY_MS_MAX	20000
#define SHIFTU_KV_TIMEOUT_MS_MAX	60000

#ifdef SHIFTU_TEST_BUILD
/*
 * Fill @cfg->test from the variables @get returns, logging each bad value (its
 * default, 0, is kept).  Called by shiftu_config_from_env().  Returns the
 * number of bad values.
 */
int shiftu_test_knobs_from_env(struct shiftu_config *cfg,
			       char *(*get)(const char *)) SHIFTU_HIDDEN;
/* Log (info) each knob in force: a library under test says so. */
void shiftu_test_knobs_log(const struct shiftu_config *cfg) SHIFTU_HIDDEN;

/* Each reads the configuration (config.h), reading the environment first
 * if nothing has yet. */
static inline uint32_t shiftu_test_twin_reset_ms(void)
{
	return shiftu_config()->test.twin_reset_ms;
}

static inline uint32_t shiftu_test_failback_delay_ms(void)
{
	return shiftu_config()->test.failback_delay_ms;
}

static inline uint32_t shiftu_test_serve_delay_ms(void)
{
	return shiftu_config()->test.serve_delay_ms;
}

static inline uint32_t shiftu_test_watch_delay_ms(void)
{
	return shiftu_config()->test.watch_delay_ms;
}

static inline uint32_t shiftu_test_replay_fail(void)
{
	return shiftu_config()->test.replay_fail;
}

/* SHIFTU_TEST_RESET_FILE, SHIFTU_TEST_TWIN_ERR_FILE, or NULL (read once) */
const char *shiftu_test_reset_file(void) SHIFTU_HIDDEN;
const char *shiftu_test_twin_err_file(void) SHIFTU_HIDDEN;

static inline uint32_t shiftu_test_drain_stall_ms(void)
{
	return shiftu_config()->test.drain_stall_ms;
}

static inline uint32_t shiftu_test_follow_delay_ms(void)
{
	return shiftu_config()->test.follow_delay_ms;
}

static inline uint32_t shiftu_test_scout_delay_ms(void)
{
	return shiftu_config()->test.scout_delay_ms;
}

static inline uint32_t shiftu_test_join_delay_ms(void)
{
	return shiftu_config()->test.join_delay_ms;
}

static inline uint32_t shiftu_test_kv_timeout_ms(void)
{
	return shiftu_config()->test.kv_timeout_ms;
}
#else
static inline int shiftu_test_knobs_from_env(struct shiftu_config *cfg,
					     char *(*get)(const char *))
{
	(void)cfg;
	(void)get;
	return 0;
}

static inline void shiftu_test_knobs_log(const struct shiftu_config *cfg)
{
	(void)cfg;
}

static inline uint32_t shiftu_test_twin_reset_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_failback_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_serve_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_watch_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_replay_fail(void)
{
	return 0;
}

static inline const char *shiftu_test_reset_file(void)
{
	return NULL;
}

static inline const char *shiftu_test_twin_err_file(void)
{
	return NULL;
}

static inline uint32_t shiftu_test_drain_stall_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_follow_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_scout_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_join_delay_ms(void)
{
	return 0;
}

static inline uint32_t shiftu_test_kv_timeout_ms(void)
{
	return 0;
}
#endif /* SHIFTU_TEST_BUILD */

#endif /* _SHIFTU_TESTBUILD_H */
