/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * event.h: process-wide counters behind shiftu_stats() and the dispatch of
 * events to the application's callback (shiftu_set_event_cb()).
 */
#ifndef _SHIFTU_EVENT_H
#define _SHIFTU_EVENT_H

#include <stdint.h>

#include "shiftu.h"
#include "util.h"

enum shiftu_stat {
	SHIFTU_STAT_QPS_PROTECTED,	/* add 1 / subtract 1 ((uint64_t)-1) */
	SHIFTU_STAT_FAILOVERS,
	SHIFTU_STAT_FAILBACKS,
	SHIFTU_STAT_REPLAYED_WRS,
	SHIFTU_STAT_ATOMIC_ERRORS,
	SHIFTU_STAT_UNPROTECTED,
	SHIFTU_STAT_RECORDS_DROPPED,	/* store_seal.c: unsigned or badly signed */
	SHIFTU_STAT_HEALTH_READS,	/* qphealth.c: a QP's primary read off the page */
	SHIFTU_STAT_HEALTH_STALE,	/* ... and the page stayed mid-write: read again */

	__SHIFTU_STAT_MAX
};

/*
 * The counters, each on its own cache line so that counting on one path
 * does not bounce another's line.  Updated with relaxed atomic adds and read
 * relaxed by shiftu_stats(): statistics, nothing orders on them.
 */
struct shiftu_stat_line {
	uint64_t v;
} __attribute__((aligned(64)));

extern struct shiftu_stat_line shiftu_stat_lines[__SHIFTU_STAT_MAX] SHIFTU_HIDDEN;

static inline void shiftu_stat_add(enum shiftu_stat s, uint64_t n)
{
	__atomic_fetch_add(&shiftu_stat_lines[s].v, n, __ATOMIC_RELAXED);
}

/*
 * shiftu_event_emit - count the event (FAILOVER, FAILBACK, UNPROTECTED and
 * ATOMIC_ERROR each have their counter, so callers do not add them too) and
 * call the application's callback, if any, on this thread with no library
 * lock held.  NULL device names become "".  Cold; any thread that may run
 * application code (not a signal handler).
 */
void shiftu_event_emit(enum shiftu_event_type type, struct ibv_qp *qp,
		       const char *from_dev, uint32_t from_port,
		       const char *to_dev, uint32_t to_port, int err);

#endif /* _SHIFTU_EVENT_H */
