/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cq_int.h: what the CQ files share among themselves (cq.h is what the
 * rest of the library calls).
 *
 *   cq.c      the slow polls of the application's CQs, the application's
 *             own and the shadow thread's: the stash, the library's own
 *             completions taken out, the CQ's lock and the turns the
 *             application's polls give library threads
 *   cqerr.c   an error completion a poll meets: the QP it fails over, or
 *             the error left to the application
 *   cqtwin.c  the twin CQ's completions: the library's own taken out, the
 *             application's renamed; the watcher's turn; the twins' fences
 *   cqpark.c  the peers' control messages beyond a poll's batch, kept in
 *             their CQ's park and handed over in order
 *
 * cq.c's slow polls call the other three, which call back into it (the
 * stash, the CQ's lock, the messages handed over, the slow poll again
 * after an error); cqtwin.c calls cqerr.c (a status's word for the log)
 * and cqpark.c too.  The helpers below were static in cq.c and inlined
 * wherever they were called: static inlines here, they stay so, under
 * their short names.  Each function's comment is with its definition,
 * and says what lock it needs.  No file outside these four includes this
 * header.
 */
#ifndef _SHIFTU_CQ_INT_H
#define _SHIFTU_CQ_INT_H

#include <stdbool.h>

#include <infiniband/verbs.h>

#include "cq.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "shadow.h"
#include "util.h"

/* ---- cq.c ------------------------------------------------------------ */

/* the library's own completions taken out of @wc[0..n); how many are left */
int shiftu_drop_ours(struct shiftu_ctx *s, struct ibv_wc *wc, int n) SHIFTU_HIDDEN;
/* the slow poll: shiftu_poll_cq_slow() but for the ids given back */
int shiftu_poll_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
		     struct ibv_wc *wc) SHIFTU_HIDDEN;

/* ---- cqerr.c --------------------------------------------------------- */

/* a completion status as a word for the log */
const char *shiftu_wc_status_word(enum ibv_wc_status st) SHIFTU_HIDDEN;
/* the QP of the error completion @wc the library fails over, else NULL */
struct shiftu_vqp *shiftu_error_vq(struct shiftu_ctx *s, const struct ibv_cq *cq,
				   const struct ibv_wc *wc) SHIFTU_HIDDEN;
/* fail @vq over on the error completion @wc a poller met (and stashed) */
void shiftu_error_failover(struct shiftu_vqp *vq, const struct ibv_wc *wc,
			   bool wait) SHIFTU_HIDDEN;
/* the first error of @wc[0..k) to fail over on, and what follows, stashed */
int shiftu_hold_error(struct shiftu_ctx *s, struct shiftu_cq *c, struct ibv_wc *wc,
		      int k, struct shiftu_vqp **vq, struct ibv_wc *first) SHIFTU_HIDDEN;

/* ---- inline: the CQ's slow poll count and its lock ------------------- */

/* The CQs of context @s take the slow poll while @on (cq->lock held). */
static inline void cq_slow_ctx(struct shiftu_ctx *s, bool on)
{
	__atomic_fetch_add(&s->slow_cqs, on ? 1 : -1, __ATOMIC_RELAXED);
}

/*
 * @c's lock; @urgent: a library thread's turn, to which the application's
 * slow polls give way (cq_give_way(), cq.c).  Without that, on a CPU the
 * poller shares, the poller takes the lock again each time it drops it,
 * before the woken waiter runs: a two-sided failback's replay waited 4.4 s
 * for the send CQ of ib_send_bw -q 16 in the lab, and a drain's polls came
 * 60 ms apart.
 */
static inline void cq_take(struct shiftu_cq *c, bool urgent)
{
	if (!urgent) {
		shiftu_lock(&c->lock, SHIFTU_LOCK_CQ);
		return;
	}
	__atomic_fetch_add(&c->urgent, 1, __ATOMIC_RELAXED);
	shiftu_lock(&c->lock, SHIFTU_LOCK_CQ);
	__atomic_fetch_sub(&c->urgent, 1, __ATOMIC_RELAXED);
}

static inline void cq_lock_urgent(struct shiftu_cq *c)
{
	cq_take(c, true);
}

#endif /* _SHIFTU_CQ_INT_H */
