/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cq.h: the CQ side of a failover (cq.c, cqerr.c, cqtwin.c, cqpark.c:
 * cq_int.h), and what the failover files (failover_int.h) share with it.
 *
 * Locking: a shiftu_cq's stash, twins and counters are under its lock; a
 * move takes both CQs of its QP (shiftu_lock_cqs()) under its fo_lock.
 */
#ifndef _SHIFTU_CQ_H
#define _SHIFTU_CQ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "wrid.h"

struct shiftu_ctx;
struct shiftu_cq;
struct shiftu_vqp;
struct shiftu_hs_msg;

/*
 * Count the receive completions among @k just taken from a CQ of @s, if
 * pollers count them (shiftu_wc_look).
 */
void shiftu_took(struct shiftu_ctx *s, const struct ibv_wc *wc, int k);

/*
 * Keep @wc for the application's next poll of @c, after what is kept
 * already (a bell's completion is dropped; a sleeping application is
 * woken, bell.c).  Returns 0 or -ENOMEM.  Context: c->lock held.
 */
int shiftu_stash_push(struct shiftu_cq *c, const struct ibv_wc *wc);

/*
 * A control message of ours was posted on @vq's default QP, signaled
 * (sq_sig_all): its CQs take the slow poll until its completion is taken
 * out (shiftu_ctrl_send_done()), or @all of them when the QP stops
 * (reset, destroyed).  Any thread.
 */
void shiftu_ctrl_sent(struct shiftu_vqp *vq);
void shiftu_ctrl_send_done(struct shiftu_vqp *vq, bool all);

/* @vq's CQs take the slow poll while @on (their locks held). */
void shiftu_cq_slow(struct shiftu_vqp *vq, bool on);

/*
 * @c's lock, once no drain is under way on it (shiftu_drain() drops it), for a
 * library thread: the application's polls give way to it.
 */
void shiftu_cq_lock_quiet(struct shiftu_cq *c);

/* Both CQs of a QP, locked in address order (one lock if they are one),
 * the application's polls giving way. */
void shiftu_lock_cqs(struct shiftu_cq *a, struct shiftu_cq *b);
void shiftu_unlock_cqs(struct shiftu_cq *a, struct shiftu_cq *b);

/* @vq posts on its twin: @c matches the twin's completions to it.
 * Context: @c->lock held. */
void shiftu_twins_add(struct shiftu_cq *c, struct shiftu_vqp *vq);
void shiftu_twins_del(struct shiftu_cq *c, struct shiftu_vqp *vq);
bool shiftu_twins_has(const struct shiftu_cq *c, const struct shiftu_vqp *vq);

/* Hand the peers' control messages @msgs to the handshake.  Context: no
 * lock held. */
void shiftu_hs_deliver(struct shiftu_hs_msg *msgs, int n);

/*
 * Let every twin of @c whose fence has completed release its held requests,
 * if a poll of @c's twin CQ took a send completion of one waiting for it
 * (any number of them in one poll).  The caller of a poll that took from
 * the twin CQ calls it after dropping @c's lock.  Context: no lock held.
 */
void shiftu_cq_fences(struct shiftu_cq *c);

/*
 * Go back with every QP of @c whose going back is due (shiftu_back_due()):
 * the application's slow poll of @c, once it has dropped @c's lock and
 * left its window.  Context: no lock held.
 */
void shiftu_cq_backs(struct shiftu_cq *c);

/*
 * A peer's control message @m, taken from a CQ of @c: to @msgs while they
 * have room and nothing waits in @c's park, else to the park (its
 * completion is consumed: dropping it would leave the QP that waits for it
 * unprotected).  Context: c->lock held.
 */
void shiftu_hs_keep(struct shiftu_cq *c, struct shiftu_hs_msg *msgs, int *n_msgs,
		    const struct shiftu_hs_msg *m);
/*
 * Hand what @c's park holds to the handshake, oldest first; the caller of
 * a poll that parked calls it after shiftu_hs_deliver() of its @msgs, which
 * are older.  Context: no lock held.
 */
void shiftu_hs_unpark(struct shiftu_cq *c);
/* @vq is going: its parked messages are dropped.  Context: c->lock held. */
void shiftu_hs_park_forget(struct shiftu_cq *c, const struct shiftu_vqp *vq);

/*
 * Completions taken from the twin CQ of @c: the library's own taken out
 * (control messages to @msgs), the others renamed (c->lock held; the
 * caller calls shiftu_cq_fences() after); and the watcher's call when that
 * CQ had an event (no lock held).
 */
int shiftu_twin_take(struct shiftu_cq *c, struct ibv_wc *wc, int k,
		    struct shiftu_hs_msg *msgs, int *n_msgs);
void shiftu_twin_serve(struct shiftu_cq *c);

/*
 * Completions taken from the application's CQ of @c: the library's own on a
 * default QP taken out, a peer's control message (a two-sided failback's)
 * to @msgs and a probe's to its QP.  Flushed requests of the library's
 * are left: a drain counts its markers.  Returns how many are left.
 */
int shiftu_app_own(struct shiftu_cq *c, struct ibv_wc *wc, int k,
		   struct shiftu_hs_msg *msgs, int *n_msgs);

/* The shadow thread's poll of @vq's receive CQ, which the application may
 * not poll while a two-sided failback's message is awaited on it. */
void shiftu_app_serve(struct shiftu_vqp *vq);

/*
 * The shadow thread's look at @vq's refused receive (vqpstate.h:
 * @refused_ns): once it has waited REFUSAL_WAIT_NS with no failover of
 * the peer's to follow, its errors go to the application, the QP
 * unprotected, as its own error would leave it.  True while it waits.
 * Context: the shadow thread, vq->lock held.
 */
bool shiftu_refusal_step(struct shiftu_vqp *vq);

/* poll_cq found an error completion among the @n it took into @wc. */
int shiftu_poll_error(struct shiftu_ctx *s, struct ibv_cq *cq, struct ibv_wc *wc, int n);

/* poll_cq while the context has CQs that need it: the library's stash,
 * then the CQ, then its twin. */
int shiftu_poll_cq_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
			struct ibv_wc *wc);

#endif /* _SHIFTU_CQ_H */
