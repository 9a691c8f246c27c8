/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.h: how libshiftu stands between an application and libibverbs.
 *
 * Control verbs are exported functions of libibverbs, so the library defines
 * the same symbols, with the same symbol version (IBVERBS_1.1, see
 * libshiftu.map); preloaded, linked ahead of libibverbs or reached through
 * the shim directory, its definitions win, and it reaches the real ones
 * through libibverbs' own handle (real.c, real.h).  Data verbs are
 * static inlines that jump through function pointers the provider filled in:
 * the context's ops (post_send, post_recv, poll_cq, req_notify_cq), the
 * extended context's create_qp_ex and create_cq_ex, each extended QP's
 * wr_* members (wrapi.c), and each extended CQ's start_poll, next_poll,
 * end_poll and read_* members (cqex.c).  When a device is opened the library keeps the provider's
 * pointers and puts its own in their place; its versions look up their
 * object, do the cheap check, and call the provider's (the wr_* builders
 * instead collect a batch for the library's post_send).
 *
 * Lifetimes follow the verbs rules: an object is not used concurrently with
 * or after its destroy call, and a context outlives its QPs and CQs.
 *
 * The state of a context and of a QP is ctxstate.h and vqpstate.h; the
 * real verbs, real.h.
 *
 * Lock order: lockorder.h.
 */
#ifndef _SHIFTU_INTERPOSE_H
#define _SHIFTU_INTERPOSE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "ctxstate.h"
#include "health.h"
#include "qp.h"
#include "util.h"
#include "vqpstate.h"
#include "window.h"

/* The page moved: re-read it for every managed QP of context @s (which
 * may fail some over).  Context: a polling thread.  Cold. */
void shiftu_ctx_health(struct shiftu_ctx *s);

/*
 * shiftu_ctx_health() for every context: the page moved while the
 * application may be asleep in its completion channel.  Context: the
 * watcher thread (watcher.c).
 */
void shiftu_health_sweep(void);

/*
 * The common paths' test of a QP: the page has not moved since the QP last
 * looked, its gate is open, and the calling thread is the queue's poster
 * (see struct shiftu_vqp).  The word's load is a plain one, after the
 * sequence's, so that it folds into the compare: one aligned load, which
 * sees a racing writer's member before or after its store, whole, and
 * either way is handled (a post that passed is waited for by the move or
 * by the thread taking the queue, one that did not takes the other path).
 * The thread's tag is or'ed in from its block: one instruction.
 * shiftu_vqp_open(): ibv_post_send (and a direct batch of the extended
 * send API); shiftu_vqp_open_r(): ibv_post_recv.
 */
static inline bool shiftu_vqp_open(const struct shiftu_vqp *vq)
{
	uint64_t seq = shiftu_health_seq();

	return __builtin_expect(vq->seen_gate == (seq | shiftu_window.tag), 1);
}

static inline bool shiftu_vqp_open_r(const struct shiftu_vqp *vq)
{
	uint64_t seq = shiftu_health_seq();

	return __builtin_expect(vq->seen_gate_r == (seq | shiftu_window.tag), 1);
}

/* The managed QP number @qp_num of context @s, or NULL.  Cold. */
struct shiftu_vqp *shiftu_vqp_by_num(struct shiftu_ctx *s, uint32_t qp_num);

/* The managed QP whose twin is QP number @qp_num of @s's backup, or NULL. */
struct shiftu_vqp *shiftu_vqp_by_twin(struct shiftu_ctx *s, uint32_t qp_num);

/* The context's state, NULL if the library does not manage it.  Cold. */
struct shiftu_ctx *shiftu_ctx_find(const struct ibv_context *ctx);

/* The contexts, newest first (published with release; interpose.c, ctx.c). */
extern struct shiftu_ctx *shiftu_ctx_list SHIFTU_HIDDEN;

/* Statistics counter bump: relaxed load and store, no locked instruction. */
static inline void shiftu_bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/*
 * A failover puts up to SHIFTU_CQ_PER_QP completions of the library's own
 * per protected QP into each of its CQs (the markers behind both queues, a
 * control message flushed on each).  A CQ is made with room for
 * SHIFTU_CQ_EXTRA of them beyond what the application asks for (four QPs'),
 * and grows as more QPs take room on it (shiftu_cq_hold(), shadow.h).
 */
#define SHIFTU_CQ_PER_QP	4
#define SHIFTU_CQ_EXTRA		(4 * SHIFTU_CQ_PER_QP)

/*
 * What the poll's common path masks a completion's status and opcode with,
 * read as one 64-bit word (status in the low half): what is left needs a
 * look.  SHIFTU_WC_LOOK_ERRORS until the library manages a QP whose send
 * and receive CQ are one, SHIFTU_WC_LOOK_RECVS from then on (never back):
 * only such a QP needs its receive completions counted as they come, since
 * its drain cannot tell its flushed receives from its flushed sends; the
 * drain of any other counts the receives it flushes.  Set when the QP is
 * created, before it can take a receive (qpverbs.c).
 */
#define SHIFTU_WC_LOOK_ERRORS	0xffffffffULL
#define SHIFTU_WC_LOOK_RECVS	((uint64_t)IBV_WC_RECV << 32 | SHIFTU_WC_LOOK_ERRORS)
extern uint64_t shiftu_wc_look SHIFTU_HIDDEN;

/*
 * The QP of number @qp_num of context @s (NULL if none), put in the
 * receive cache unless it owes counts.  Takes the registry's lock.
 */
struct shiftu_vqp *shiftu_count_recv_slow(struct shiftu_ctx *s, uint32_t qp_num);

/*
 * A move counted @owed receive completions of @vq for a poller that took
 * them and has not counted them yet: they are added to @vq->consumed and
 * owed, and @vq leaves the receive cache until they are paid.  Cold.
 */
void shiftu_recv_owe(struct shiftu_vqp *vq, uint64_t owed);

/* One of @vq->recv_owed paid, if any is left (cold; cq.c). */
bool shiftu_recv_owed_pay(struct shiftu_vqp *vq);

/* The receive cache's key bit of a QP on an SRQ (struct shiftu_vqp). */
#define SHIFTU_RC_SRQ	0x80000000U

/*
 * shiftu_count_recv() below for the poll's common path: the context's
 * cache holds QP @qp_num (which then owes no count), and the completion is
 * counted.  Returns false, having counted nothing, otherwise.  A QP that
 * leaves the cache meanwhile is one that a move owes counts or that goes:
 * a move's quiesce waits for this poller, and a QP destroyed while its
 * completions are polled is the application's bug.
 */
static inline bool shiftu_count_recv_cached(struct shiftu_ctx *s, uint32_t qp_num)
{
	/* the slot's offset folded into the load (&rcache[i] costs an lea) */
	struct shiftu_vqp *vq = __atomic_load_n(s->rcache + (size_t)(qp_num & 63), __ATOMIC_RELAXED);

	if (__builtin_expect(__atomic_load_n(&vq->rc_qpn, __ATOMIC_RELAXED) != qp_num, 0))
		return false;
	__atomic_fetch_add(&vq->consumed, 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * A receive completion of QP @qp_num came out of a CQ of context @s: count
 * it for the handshake, or pay one its QP owes.  An atomic add: two
 * threads may poll one CQ.
 */
static inline void shiftu_count_recv(struct shiftu_ctx *s, uint32_t qp_num)
{
	struct shiftu_vqp *vq = __atomic_load_n(s->rcache + (size_t)(qp_num & 63), __ATOMIC_RELAXED);
	uint32_t key = __atomic_load_n(&vq->rc_qpn, __ATOMIC_RELAXED);

	/* as shiftu_count_recv_cached(), with the one look for both keys */
	if (__builtin_expect(key == qp_num, 1)) {
		__atomic_fetch_add(&vq->consumed, 1, __ATOMIC_RELAXED);
		return;
	}
	/* a QP on an SRQ, in the cache under its other key */
	if (key != (qp_num | SHIFTU_RC_SRQ))
		vq = shiftu_count_recv_slow(s, qp_num);
	if (!vq)
		return;
	if (__builtin_expect(__atomic_load_n(&vq->recv_owed, __ATOMIC_RELAXED) != 0, 0) &&
	    shiftu_recv_owed_pay(vq))
		return;
	__atomic_fetch_add(&vq->consumed, 1, __ATOMIC_RELAXED);
}

/* Completions the library took from twin CQs (relaxed; statistics). */
extern uint64_t shiftu_twin_wcs SHIFTU_HIDDEN;

/* post.c, poll.c, srqpost.c: the replacements of the provider's data verbs. */
int shiftu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr);
int shiftu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
int shiftu_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
/*
 * @n completions of @cq (a CQ of @s) that the caller took from the provider
 * otherwise than by its poll_cq (an extended CQ's session, cqex.c), looked
 * at as the poll's common path looks at those it took: receives counted,
 * errors held for a failover, an SRQ table's ids given back.  Returns how
 * many remain for the application, in @wc.  Entered with the thread's poll
 * window open; leaves it.
 */
int shiftu_poll_taken(struct shiftu_ctx *s, struct ibv_cq *cq, struct ibv_wc *wc, int n);
int shiftu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);

/*
 * ibv_post_srq_recv() of @wr through @post (the provider's) on @srq, an
 * SRQ of context @s the library keeps no table of: its ids in the
 * library's range renamed (rename.h).  Context: no window open, no lock
 * held.
 */
int shiftu_wrid_post_srq(struct shiftu_ctx *s,
			 int (*post)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				     struct ibv_recv_wr **bad_wr),
			 struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/*
 * Completions @wc[0..n), taken from a CQ of context @s, on their way to
 * the application: a renamed one gets the application's id back (a quiet
 * send's good one is taken out), an SRQ table's too, each classified
 * once (rename.h).  Returns how many are left.  Context: the last step
 * before the application has them; no lock held.
 */
int shiftu_wrid_out_all(struct shiftu_ctx *s, struct ibv_wc *wc, int n);

/*
 * A direct polling session of the extended CQ @cq ended (cqex.c): the moves
 * of its QPs that were left to it are made, and the slow polls they held
 * given back.  Returns false, having made none, when there was no memory
 * to list them.  Context: the session's thread, no lock held, the
 * provider's CQ let go.
 */
bool shiftu_vqp_polls_done(const struct ibv_cq *cq);

/* @vq becomes the thread's QP, its window registered first (post.c). */
void shiftu_vqp_anchor(struct shiftu_vqp *vq);

/*
 * post_send on @vq, the application's counters left alone (wrapi.c).  @vq
 * becomes the thread's QP, as for an ibv_post_send().
 */
int shiftu_post_send_vq(struct shiftu_vqp *vq, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr);

/*
 * The managed QP of @qp, or NULL: the thread's QP (post.c) when it is
 * @qp, without a lookup, else the registry's.  Any thread.
 */
static inline struct shiftu_vqp *shiftu_vqp_find(const struct ibv_qp *qp)
{
	struct shiftu_vqp *vq = shiftu_window.vq;

	if (__builtin_expect(vq->reg.app_qp == qp, 1))
		return vq;
	/* reg is the first member: the registry's entry is the vqp */
	return (struct shiftu_vqp *)shiftu_qp_find(qp);
}

/*
 * What the table says of @vq's primary: 1 its port or its path to the peer
 * is down, 0 both are good, negative unknown: -ENOENT (QP not bound to a
 * port, or no row), -ENODEV (no page), -ESTALE (the page stayed mid-write).
 * @ph and @path get what was read.  Cold; any thread.
 */
struct shiftu_port_health;
int shiftu_vqp_primary(struct shiftu_vqp *vq, struct shiftu_port_health *ph,
		       uint8_t *path);

/*
 * Re-read what the table says about @vq's port and path after the page
 * moved, and record it in @vq->down.  Cold; any thread posting on @vq.
 */
void shiftu_vqp_health(struct shiftu_vqp *vq);

#endif /* _SHIFTU_INTERPOSE_H */
