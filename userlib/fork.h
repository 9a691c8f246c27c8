/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork.h: the library across fork(2) (fork.c).
 *
 * A process that forks while another of its threads holds a lock of the
 * library would give its child that lock held by a thread the child does
 * not have: the child's first verb would wait for ever.  The library's
 * fork handlers take every lock it has, in the order interpose.h states,
 * before the fork, and release them after it in both processes; the child
 * then forgets what is the parent's (its QPs' records and twins, its
 * store connections, its path reports' socket, its threads).
 */
#ifndef _SHIFTU_FORK_H
#define _SHIFTU_FORK_H

#include <pthread.h>
#include <stdbool.h>

#include "util.h"

/* The library's global locks, each defined in the file that uses it. */
extern pthread_mutex_t serve_lock SHIFTU_HIDDEN;	/* handshake.c */
extern pthread_mutex_t shadow_lock;			/* shadow.h */
extern pthread_mutex_t mr_lock SHIFTU_HIDDEN;		/* shadow.c */
extern pthread_mutex_t cq_lock SHIFTU_HIDDEN;		/* shadow.c */
extern pthread_mutex_t kv_fast_lock SHIFTU_HIDDEN;	/* shadow.c */
extern pthread_mutex_t backer_lock SHIFTU_HIDDEN;	/* shadow.c */
extern pthread_mutex_t nl_lock SHIFTU_HIDDEN;		/* report.c */
extern pthread_mutex_t vqp_lock SHIFTU_HIDDEN;		/* interpose.c */
extern pthread_mutex_t ctx_lock SHIFTU_HIDDEN;		/* interpose.c */
extern pthread_mutex_t cqx_lock SHIFTU_HIDDEN;		/* cqex.c */
extern pthread_mutex_t box_lock SHIFTU_HIDDEN;		/* box.c */
extern pthread_mutex_t srq_lock SHIFTU_HIDDEN;		/* srq.c */
extern pthread_mutex_t reg_lock SHIFTU_HIDDEN;		/* qp.c */
extern pthread_mutex_t health_lock SHIFTU_HIDDEN;	/* health.c */
extern pthread_mutex_t windows_lock SHIFTU_HIDDEN;	/* quiesce.c */
extern pthread_mutex_t ch_lock SHIFTU_HIDDEN;		/* handshake.c */
extern pthread_mutex_t cb_lock SHIFTU_HIDDEN;		/* event.c */
extern pthread_mutex_t config_lock SHIFTU_HIDDEN;	/* config.c */

/*
 * The lock order of interpose.h as a table, outermost first.  An entry
 * with a NULL @lock stands for the records' locks (every recorded QP's
 * lock, then every one's fo_lock, cq_lock, every CQ's lock in address
 * order: shadow.c).  Ends with an entry whose @name is NULL.
 */
struct shiftu_lock_ref {
	const char *name;
	pthread_mutex_t *lock;
};

extern const struct shiftu_lock_ref shiftu_lock_order[] SHIFTU_HIDDEN;

/*
 * Register the fork handlers, once.  Called where the library starts to
 * be used (config.c, quiesce.c, event.c); any thread.
 */
void shiftu_fork_init(void);

/*
 * What each file does for fork.c.  Context: *_fork_lock()/_unlock(): the
 * forking thread, shadow_lock held.  *_fork_child(): the child's only
 * thread, no lock held, every lock free.
 */
/* shadow.c: the records' locks in order (fork.h's table), and back */
void shiftu_shadow_fork_lock(void);
void shiftu_shadow_fork_unlock(void);
/* shadow.c: forget the records and the store handles; the shadow thread
 * starts again with the child's first device */
void shiftu_shadow_fork_child(void);
/* interpose.c: the parent's QPs are unprotected here; true if it had any
 * device or QP */
bool shiftu_interpose_fork_child(void);
/* quiesce.c: the forking thread's window is the only one */
void shiftu_windows_fork_child(void);
/* handshake.c: no watcher, no channel */
void shiftu_hs_fork_child(void);
/* box.c: the parent's QPs' mailboxes are not looked at */
void shiftu_box_fork_child(void);
/* report.c: the child's copy of the reports' socket is closed */
void shiftu_report_fork_child(void);
/* health.c: the page's file opened again, the mapping kept */
void shiftu_health_fork_child(void);

#endif /* _SHIFTU_FORK_H */
