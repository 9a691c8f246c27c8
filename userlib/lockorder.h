/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lockorder.h: the library's locks, in the one order every thread takes
 * them, and what each file does with its own across fork(2).  The test
 * build checks the order on every take (lock.h, lockcheck.c).
 *
 * A thread holding a lock of this list takes only locks below it, and
 * fork(2) takes them all in this order (fork.c, from the ranks below):
 *
 *   serve_lock		the watcher's round of twin completions (watcher.c)
 *   a QP's batch		its extended send API's batch (wrapi.c's @holder,
 *			taken by a compare-and-swap, waited for yielding):
 *			held from the application's ibv_wr_start to its
 *			ibv_wr_complete, and by a thread that is to become
 *			the send queue's poster (posters.h); not in fork's
 *			table: a child never posts to its parent's QPs
 *   shadow_lock		a shadow pass, but never its store I/O, and the PD
 *			and QP records (shadow.c, registry.c)
 *     vq->lock		a QP's connection steps; one QP's at a time
 *       vq->fo_lock		a QP's moves; one QP's at a time
 *         cq_lock		the CQ records' list, and their room for a
 *			failover's completions (shiftu_cq_hold()) (registry.c)
 *         a CQ's lock	both of a QP's in address order (shiftu_lock_cqs())
 *           srq_lock	the SRQs' sides and twins, and the posts to a tabled
 *			SRQ off its common path (srq.c); takes only mr_lock,
 *			for a receive's keys on the backup device, and
 *			windows_lock, waiting out the posts on that path
 *           leaves: mr_lock (reclist.c), forget_lock (storepass.c), backer_lock
 *           (shadow.c), nl_lock (report.c),
 *           vqp_lock (vqp.c), ctx_lock (ctx.c), cqx_lock (cqex.c),
 *           box_lock (box.c), reg_lock (qp.c), health_lock
 *           (health.c), windows_lock (quiesce.c), ch_lock (watcher.c),
 *           cb_lock (event.c), config_lock (config.c), wrid_lock
 *           (rename.c): none is held while
 *           another lock of the library is taken (cq_lock's holder starts
 *           the watcher under ch_lock, which is below it).
 *
 * A move waits, under fo_lock, for the windows of the posting and polling
 * threads (quiesce.h), and a thread taking a queue of a QP (posters.h)
 * for the post windows on that QP; a thread inside its window takes only
 * locks below fo_lock.  The shadow thread holds shadow_lock for a pass, but
 * drops it while it waits for the store (no lock of this list is held
 * across store I/O, and no application thread does any), and takes a
 * QP's lock, then its fo_lock, under it: no path takes shadow_lock under
 * either (shiftu_shadow_poke() is lock-free for that).
 */
#ifndef _SHIFTU_LOCKORDER_H
#define _SHIFTU_LOCKORDER_H

#include <pthread.h>

/* The order above, outermost first: what fork(2) takes, in this order. */
enum shiftu_lock_rank {
	SHIFTU_RANK_SERVE,	/* serve_lock (watcher.c) */
	SHIFTU_RANK_SHADOW,	/* shadow_lock (storepass.c) */
	SHIFTU_RANK_RECORDS,	/* every QP's lock, then every fo_lock,
				 * cq_lock, every CQ's lock (registry.c) */
	SHIFTU_RANK_SRQ,	/* srq_lock (srq.c) */
	SHIFTU_RANK_MR,		/* the leaves, as above */
	SHIFTU_RANK_FORGET,
	SHIFTU_RANK_BACKER,
	SHIFTU_RANK_NL,
	SHIFTU_RANK_VQP,
	SHIFTU_RANK_CTX,
	SHIFTU_RANK_CQX,
	SHIFTU_RANK_BOX,
	SHIFTU_RANK_REG,
	SHIFTU_RANK_HEALTH,
	SHIFTU_RANK_WINDOWS,
	SHIFTU_RANK_CH,
	SHIFTU_RANK_CB,
	SHIFTU_RANK_CONFIG,
	SHIFTU_RANK_WRID,
	SHIFTU_RANK_NONE,	/* no lock: a child's step only */
};

/*
 * The same order lock by lock, as lock.h takes them and the test build
 * checks it (lockcheck.c): a thread holding a lock of a class takes only
 * locks of a later class, or a second of the same class where the table
 * above allows two (a QP's two CQs, in address order); a thread holding a
 * leaf takes no lock at all.  fork(2)'s own takes (fork.c, and the records'
 * in registry.c) follow the ranks above and are not checked.
 */
enum shiftu_lock_class {
	SHIFTU_LOCK_SERVE,	/* serve_lock */
	SHIFTU_LOCK_SHADOW,	/* shadow_lock */
	SHIFTU_LOCK_VQ,		/* a QP's lock */
	SHIFTU_LOCK_FO,		/* a QP's fo_lock */
	SHIFTU_LOCK_CQ_LIST,	/* cq_lock */
	SHIFTU_LOCK_CQ,		/* a CQ's lock: two at most */
	SHIFTU_LOCK_SRQ,	/* srq_lock */
	SHIFTU_LOCK_LEAF,	/* the leaves, in no order among themselves: */
	SHIFTU_LOCK_MR = SHIFTU_LOCK_LEAF,
	SHIFTU_LOCK_FORGET,
	SHIFTU_LOCK_BACKER,
	SHIFTU_LOCK_NL,
	SHIFTU_LOCK_VQP,
	SHIFTU_LOCK_CTX,
	SHIFTU_LOCK_CQX,
	SHIFTU_LOCK_BOX,
	SHIFTU_LOCK_REG,
	SHIFTU_LOCK_HEALTH,
	SHIFTU_LOCK_WINDOWS,
	SHIFTU_LOCK_CH,
	SHIFTU_LOCK_CB,
	SHIFTU_LOCK_CONFIG,
	SHIFTU_LOCK_CLASSES
};

/*
 * A file's part in fork(2) (fork.c): @lock (or, for the records' many,
 * @take and @release) taken before the fork in @rank's place, and let go
 * after it in both processes; then, in the child, with every lock free,
 * @child forgets what is the parent's.  The child has one thread, the
 * forking one; it must neither use nor undo the parent's state.
 */
struct shiftu_fork_hook {
	enum shiftu_lock_rank rank;
	const char *name;
	pthread_mutex_t *lock;
	void (*take)(void);
	void (*release)(void);
	void (*child)(void);
};

/*
 * Define a hook: fork.c finds every one in their section, so that it
 * names none of the files it serves.
 */
#define SHIFTU_FORK_HOOK(id, ...)						\
	static const struct shiftu_fork_hook shiftu_fork_hook_##id		\
	__attribute__((used, section("shiftu_fork_hooks"), aligned(sizeof(void *)))) = \
		{ __VA_ARGS__ }

#endif /* _SHIFTU_LOCKORDER_H */
