/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shadow_int.h: what the shadow files share among themselves (shadow.h is
 * what the rest of the library calls).
 *
 *   shadow.c     the shadow thread: its loop, its pass, the backers
 *   registry.c   the records of the application's objects, the records
 *                across fork(2)
 *   reclist.c    the records' lists, their leaf locks, the lookups in
 *                them: a PD's record, a CQ's record, a backup lkey
 *   twin.c       the twins: backup context, PDs, MRs, CQs, QPs; a QP's
 *                twin made, published, joined to the peer's in the pass
 *   failback.c   failing back, the asking side: the request, the probe,
 *                rejoin, cancel
 *   fbanswer.c   failing back, the answering side: the peer's request
 *                decided, answered; its cancel or rejoin served
 *   qpconn.c     a QP's connection from its recorded steps: a twin
 *                connected, ready, renewed; a QP reconnected
 *   scout.c      the look ahead for the peer's backup keys
 *   storepass.c  the store: its connection, the pass's batch of requests,
 *                the keys to forget; shadow_lock and the thread's wake-up
 *
 * A file calls those listed below it, and the records' file starts the
 * thread (shiftu_shadow_start()); scout.c and storepass.c call nothing of
 * the failover side of the library.  Each shared variable says what
 * protects it; a function's comment is with its definition.
 */
#ifndef _SHIFTU_SHADOW_INT_H
#define _SHIFTU_SHADOW_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util.h"
#include "shadow.h"
#include "store.h"
#include "vqpstate.h"

/* ---- storepass.c ----------------------------------------------------- */

/* the shadow thread waits on it, with shadow_lock */
extern pthread_cond_t shadow_wake SHIFTU_HIDDEN;
/* shadow_lock: bumped by every record (shiftu_shadow_kick()), which wakes */
extern unsigned int shadow_gen SHIFTU_HIDDEN;
/* atomic, no lock: set by shiftu_shadow_poke(), taken by the thread */
extern int shadow_poked SHIFTU_HIDDEN;
/* set once the thread runs (shadow.c, under shadow_once); read relaxed at exit */
extern bool shadow_started SHIFTU_HIDDEN;

/*
 * What one pass of the shadow thread asks the store, in one batch
 * (shiftu_kv_batch()): on a busy host each round trip costs the most, and
 * a pass that asked for each QP in turn took a round trip per QP, per step,
 * per pass (seconds, for tens of QPs on a guest's one CPU, before their
 * twins were ready).  The requests are made under the records' locks,
 * sent with none held (shiftu_batch_send()), and their answers applied under
 * them again, to the records still there.
 */
enum pass_why {
	PASS_OTHER,
	PASS_SCOUT,	/* a look ahead's (shiftu_scout_req()): @rkey the peer's key */
	PASS_FBREQ,	/* a failback request's (failback_step()): backed off
			 * if it failed */
	PASS_REJOIN,	/* a request to join our twin (rejoin_ask()) */
	PASS_CANCEL,	/* a request to cancel a granted failback
			 * (cancel_ask()) */
	PASS_FORGET,	/* a key to forget (shiftu_forget_take()) */
};

struct pass_req {
	struct shiftu_kv_req kv;
	char key[96];
	char val[160];
	/* an MR's: its record, checked to be the same one afterwards */
	struct shiftu_mr *mr;
	struct ibv_mr *mr_app, *mr_bak;
	enum pass_why why;
	int qi;			/* the QP's place in pass_vqs[], -1 for none */
	uint32_t rkey;
	uint32_t seq;		/* PASS_REJOIN, PASS_CANCEL: its fb_seq */
};

/* A QP's requests in the pass: indices into the batch, -1 for none. */
struct pass_qp {
	int pub, peer, fbreq, fbrep;
};

/* the pass's requests, n_reqs of them: the shadow thread only */
extern struct pass_req *reqs SHIFTU_HIDDEN;
extern unsigned int n_reqs SHIFTU_HIDDEN;
/* the shadow thread only: one per pass_vqs[] entry */
extern struct pass_qp *pqs SHIFTU_HIDDEN;
/*
 * The QPs of the pass under way, vqps[] as it began: the pass drops
 * shadow_lock while it waits for the store, and a QP destroyed meanwhile
 * is set NULL here (shiftu_shadow_qp_gone()), so that the pass skips it
 * after.  Under shadow_lock; n_pass is 0 between passes.
 */
extern struct shiftu_vqp **pass_vqs SHIFTU_HIDDEN;
extern unsigned int n_pass SHIFTU_HIDDEN;
/* the longest batch of late, decaying by an eighth a batch
 * (shiftu_batch_send()): the shadow thread only */
extern uint64_t store_ns SHIFTU_HIDDEN;

/* The answer to request @i of the pass: its -errno, or -EAGAIN if none. */
static inline int req_ret(int i)
{
	return i < 0 ? -EAGAIN : reqs[i].kv.ret;
}

/* The QP that made request @i for @why, NULL if none or gone since. */
static inline struct shiftu_vqp *req_vq(unsigned int i, enum pass_why why)
{
	return reqs[i].why == why && reqs[i].qi >= 0 ? pass_vqs[reqs[i].qi] : NULL;
}

/* @pq's place in pass_vqs[] (its pass_qp is at the same one in pqs[]). */
static inline int pass_index(const struct pass_qp *pq)
{
	return (int)(pq - pqs);
}

void shiftu_shadow_kick(void) SHIFTU_HIDDEN;
bool shiftu_kv_up(void) SHIFTU_HIDDEN;
void shiftu_kv_open_step(void) SHIFTU_HIDDEN;
void shiftu_kv_forget(const char *key) SHIFTU_HIDDEN;
void shiftu_forget_take(void) SHIFTU_HIDDEN;
bool shiftu_forget_waits(void) SHIFTU_HIDDEN;
bool shiftu_pass_begin(struct shiftu_vqp *const *vqs, unsigned int n) SHIFTU_HIDDEN;
int shiftu_req_add(enum shiftu_kv_op op, size_t len) SHIFTU_HIDDEN;
int shiftu_batch_send(unsigned int from) SHIFTU_HIDDEN;
void shiftu_gid_hex(const uint8_t *gid, char *buf) SHIFTU_HIDDEN;
void shiftu_storepass_fork_child(void) SHIFTU_HIDDEN;

/* ---- scout.c --------------------------------------------------------- */

/* the next look ahead, 0 for none: the shadow thread only */
extern uint64_t scout_due SHIFTU_HIDDEN;

void shiftu_scout_req(struct shiftu_vqp *vq, const struct pass_qp *pq, uint64_t now) SHIFTU_HIDDEN;
void shiftu_scout_apply(uint64_t now) SHIFTU_HIDDEN;

/* ---- reclist.c ------------------------------------------------------- */

/* the MR list's, a leaf of the lock order (lockorder.h) */
extern pthread_mutex_t mr_lock SHIFTU_HIDDEN;
/* the records: PDs and QPs under shadow_lock, MRs under mr_lock, CQs
 * under cq_lock (shadow.h) */
extern struct shiftu_pd *pds SHIFTU_HIDDEN;
extern struct shiftu_mr *mrs SHIFTU_HIDDEN;
extern struct shiftu_cq *cqs SHIFTU_HIDDEN;
extern struct shiftu_vqp **vqps SHIFTU_HIDDEN;
extern unsigned int n_vqps SHIFTU_HIDDEN;

struct shiftu_pd *shiftu_pd_find(const struct ibv_pd *pd) SHIFTU_HIDDEN;

/* Context: cq_lock held. */
static inline struct shiftu_cq *cq_find_locked(const struct ibv_cq *cq)
{
	struct shiftu_cq *c;

	for (c = cqs; c && c->app != cq; c = c->next)
		;
	return c;
}

/* ---- twin.c ---------------------------------------------------------- */

bool shiftu_twins_make(void) SHIFTU_HIDDEN;
bool shiftu_twin_asks(struct shiftu_vqp *vq, struct pass_qp *pq) SHIFTU_HIDDEN;
void shiftu_twin_step(struct shiftu_vqp *vq, const struct pass_qp *pq, bool *pending)
	SHIFTU_HIDDEN;

/* ---- failback.c ------------------------------------------------------ */

void shiftu_failback_asks(struct shiftu_vqp *vq, struct pass_qp *pq) SHIFTU_HIDDEN;
bool shiftu_failback_waits(struct shiftu_vqp *vq) SHIFTU_HIDDEN;
bool shiftu_failback_steps(struct shiftu_vqp *vq, const struct pass_qp *pq) SHIFTU_HIDDEN;
void shiftu_late_batch(unsigned int from) SHIFTU_HIDDEN;

/* ---- fbanswer.c ------------------------------------------------------ */

bool shiftu_failback_listen(struct shiftu_vqp *vq, const struct pass_qp *pq) SHIFTU_HIDDEN;

/* ---- qpconn.c -------------------------------------------------------- */

/* Where the peer writes to @vq on @side, if @vq is on an SRQ (box.c); else 0. */
static inline uint64_t box_addr(const struct shiftu_vqp *vq, enum shiftu_box_side side)
{
	return vq->app_srq && vq->mbox[side].mr ? (uint64_t)(uintptr_t)vq->mbox[side].slots : 0;
}

static inline uint32_t box_rkey(const struct shiftu_vqp *vq, enum shiftu_box_side side)
{
	return vq->app_srq && vq->mbox[side].mr ? vq->mbox[side].mr->rkey : 0;
}

void twin_connect(struct shiftu_vqp *vq) SHIFTU_HIDDEN;
int shiftu_qp_reconnect(struct shiftu_vqp *vq, uint32_t rq_psn, uint32_t sq_psn,
			unsigned int ctrl) SHIFTU_HIDDEN;

/* ---- shadow.c -------------------------------------------------------- */

void shiftu_shadow_start(void) SHIFTU_HIDDEN;
void shiftu_shadow_thread_fork_child(void) SHIFTU_HIDDEN;

#endif /* _SHIFTU_SHADOW_INT_H */
