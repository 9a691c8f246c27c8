// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork.c: the library's locks in their order, and the library across
 * fork(2) (fork.h).
 *
 * The handlers are registered with pthread_atfork() the first time the
 * library is used (its configuration is read, or a thread opens a window),
 * so that a preloaded program that never uses RDMA runs none of them.
 * posix_spawn(3), vfork(2) and system(3), which run no fork handlers, cost
 * nothing more either.
 *
 * Before the fork, the forking thread takes every lock in the order of
 * interpose.h, which every other thread follows too, so that it waits only
 * for holders that can finish: a shadow pass (bounded by its one batch of
 * store requests, a few seconds at worst), a move (bounded by its quiesce,
 * 5 s at worst, 35 s for a thread inside a verb that waits for a CPU) and
 * the short sections of the rest.  After it, the parent lets
 * them go and goes on as before: its QPs, twins, threads and reports are
 * untouched.  The child lets them go too, and then forgets the parent's
 * state, which it must neither use nor undo: its devices and QPs are the
 * parent's (the verbs give a child no use of them; their files are shared
 * with the parent, so a twin destroyed or a QP moved here would be the
 * parent's), its store connections (a command sent on them would
 * interleave with the parent's), its path reports' socket (the kernel
 * withdraws the reports when the socket is released, which the child's
 * copy would put off until the child exits), the open file of the health
 * page (whose wakeups are per file) and its threads (the child has only
 * the forking one).  A device the child opens is then protected as in a
 * fresh process: the threads start again on its first QP.
 *
 * A fork from the library's event callback, or from a signal
 * handler on a thread that holds a lock of the library, would wait for
 * itself; neither is supported.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "fork.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "quiesce.h"
#include "report.h"
#include "shadow.h"

const struct shiftu_lock_ref shiftu_lock_order[] = {
	{ "serve_lock", &serve_lock },
	{ "shadow_lock", &shadow_lock },
	{ "records", NULL },		/* QPs', fo_locks, cq_lock, CQs' */
	{ "srq_lock", &srq_lock },
	{ "mr_lock", &mr_lock },
	{ "kv_fast_lock", &kv_fast_lock },
	{ "backer_lock", &backer_lock },
	{ "nl_lock", &nl_lock },
	{ "vqp_lock", &vqp_lock },
	{ "ctx_lock", &ctx_lock },
	{ "cqx_lock", &cqx_lock },
	{ "box_lock", &box_lock },
	{ "reg_lock", &reg_lock },
	{ "health_lock", &health_lock },
	{ "windows_lock", &windows_lock },
	{ "ch_lock", &ch_lock },
	{ "cb_lock", &cb_lock },
	{ "config_lock", &config_lock },
	{ NULL, NULL },
};

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
	const struct shiftu_lock_ref *r;

	for (r = shiftu_lock_order; r->name; r++) {
		if (r->lock)
			pthread_mutex_lock(r->lock);
		else
			shiftu_shadow_fork_lock();
	}
}

static void unlock_all(void)
{
	const struct shiftu_lock_ref *r;

	for (r = shiftu_lock_order; r->name; r++) {
		if (r->lock)
			pthread_mutex_unlock(r->lock);
		else
			shiftu_shadow_fork_unlock();
	}
}

static void parent(void)
{
	unlock_all();
}

/*
 * The child has one thread, this one, and every lock it took in prepare()
 * (glibc's mutexes of the default kind may be unlocked by the copy of the
 * thread that locked them).  Then the parent's state goes.
 */
static void child(void)
{
	bool had_rdma;

	unlock_all();
	shiftu_windows_fork_child();
	had_rdma = shiftu_interpose_fork_child();
	shiftu_shadow_fork_child();
	shiftu_hs_fork_child();
	shiftu_box_fork_child();
	shiftu_report_fork_child();
	shiftu_health_fork_child();
	/* the statistics are the process's: the child's start at zero */
	memset(shiftu_stat_lines, 0, sizeof(shiftu_stat_lines));
	shiftu_twin_wcs = 0;
	if (had_rdma)
		shiftu_info("forked from %d: its devices and QPs stay its own, unprotected here; a device this process opens is protected",
			    (int)getppid());
}

static void fork_init(void)
{
	pthread_atfork(prepare, parent, child);
}

void shiftu_fork_init(void)
{
	pthread_once(&fork_once, fork_init);
}
