// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * event.c: counters and the event callback (event.h), shiftu_stats() and
 * shiftu_set_event_cb().
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "event.h"
#include "fork.h"
#include "health.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "qp.h"
#include "util.h"

struct shiftu_stat_line shiftu_stat_lines[__SHIFTU_STAT_MAX];

/*
 * The callback and its argument change together under cb_lock; emit copies
 * both under it and calls without it, so a callback may re-register.
 */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;

/* the statistics are the process's: the child's start at zero */
static void stats_fork_child(void)
{
	memset(shiftu_stat_lines, 0, sizeof(shiftu_stat_lines));
}
SHIFTU_FORK_HOOK(cb, .rank = SHIFTU_RANK_CB, .name = "cb_lock", .lock = &cb_lock,
		 .child = stats_fork_child);
static shiftu_event_cb cb_fn;
static void *cb_arg;

static const char *const event_names[] = {
	[SHIFTU_EV_FAILOVER] = "failover",
	[SHIFTU_EV_FAILBACK] = "failback",
	[SHIFTU_EV_UNPROTECTED] = "unprotected",
	[SHIFTU_EV_ATOMIC_ERROR] = "atomic-error",
};

static const enum shiftu_stat event_stat[] = {
	[SHIFTU_EV_FAILOVER] = SHIFTU_STAT_FAILOVERS,
	[SHIFTU_EV_FAILBACK] = SHIFTU_STAT_FAILBACKS,
	[SHIFTU_EV_UNPROTECTED] = SHIFTU_STAT_UNPROTECTED,
	[SHIFTU_EV_ATOMIC_ERROR] = SHIFTU_STAT_ATOMIC_ERRORS,
};

SHIFTU_EXPORT int shiftu_set_event_cb(shiftu_event_cb cb, void *arg)
{
	shiftu_fork_init();
	shiftu_lock(&cb_lock, SHIFTU_LOCK_CB);
	cb_fn = cb;
	cb_arg = cb ? arg : NULL;
	shiftu_unlock(&cb_lock, SHIFTU_LOCK_CB);
	return 0;
}

void __attribute__((cold)) shiftu_event_emit(enum shiftu_event_type type, struct ibv_qp *qp,
					     const char *from_dev, uint32_t from_port,
					     const char *to_dev, uint32_t to_port, int err)
{
	struct shiftu_event ev;
	struct timespec ts;
	char to[48] = "";
	shiftu_event_cb fn;
	void *arg;

	if (type == SHIFTU_EV_UNSPEC || type > SHIFTU_EV_MAX)
		return;
	shiftu_stat_add(event_stat[type], 1);
	if (to_dev)
		snprintf(to, sizeof(to), " -> %s:%u", to_dev, to_port);
	shiftu_info("%s: qp %p %s:%u%s%s%s", event_names[type], (void *)qp, from_dev ?: "",
		    from_port, to, err ? ": " : "", err ? strerror(-err) : "");

	shiftu_lock(&cb_lock, SHIFTU_LOCK_CB);
	fn = cb_fn;
	arg = cb_arg;
	shiftu_unlock(&cb_lock, SHIFTU_LOCK_CB);
	if (!fn)
		return;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.type = type;
	ev.qp = qp;
	ev.from_dev = from_dev ?: "";
	ev.from_port = from_port;
	ev.to_dev = to_dev ?: "";
	ev.to_port = to_port;
	ev.time_ns = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	ev.err = err;
	fn(&ev, arg);
}

static uint64_t stat_get(enum shiftu_stat s)
{
	return __atomic_load_n(&shiftu_stat_lines[s].v, __ATOMIC_RELAXED);
}

SHIFTU_EXPORT int shiftu_stats(struct shiftu_stats *user)
{
	struct shiftu_stats st;
	uint32_t size;

	if (!user || user->size < SHIFTU_STATS_SIZE_VER0)
		return -EINVAL;
	size = user->size < sizeof(st) ? user->size : sizeof(st);
	memset(&st, 0, sizeof(st));
	st.size = size;
	if (shiftu_health_generation())
		st.flags |= SHIFTU_STATS_F_HEALTH_PAGE;
	if (shiftu_config()->disabled)
		st.flags |= SHIFTU_STATS_F_DISABLED;
	st.qps = shiftu_qp_registered();
	st.qps_protected = stat_get(SHIFTU_STAT_QPS_PROTECTED);
	st.failovers = stat_get(SHIFTU_STAT_FAILOVERS);
	st.failbacks = stat_get(SHIFTU_STAT_FAILBACKS);
	st.replayed_wrs = stat_get(SHIFTU_STAT_REPLAYED_WRS);
	st.atomic_errors = stat_get(SHIFTU_STAT_ATOMIC_ERRORS);
	st.unprotected = stat_get(SHIFTU_STAT_UNPROTECTED);
	st.records_dropped = stat_get(SHIFTU_STAT_RECORDS_DROPPED);
	st.health_generation = shiftu_health_generation();
	memcpy(user, &st, size);
	return 0;
}
