// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * datapath.c: libshiftu's versions of the provider's data verbs.
 *
 * Each finds the library's object for the QP or CQ (the one the thread
 * used last, else a lock-free lookup), asks the health page whether
 * anything changed (one acquire load and a compare, health.h), and calls
 * the provider's function.  Everything else is in cold functions.  No
 * syscall, lock or allocation here, and no store to memory that another
 * QP's poster uses.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cq.h"
#include "failover.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "posters.h"
#include "quiesce.h"
#include "rename.h"
#include "wrapi.h"
#include "srq.h"
#include "util.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* A QP the library did not see created (none should exist): pass through. */
static shiftu_cold int post_send_unmanaged(struct ibv_qp *qp,
					   struct ibv_send_wr *wr,
					   struct ibv_send_wr **bad_wr)
{
	struct shiftu_ctx *s = shiftu_ctx_find(qp->context);

	if (!s) {
		*bad_wr = wr;
		return EINVAL;
	}
	return s->post_send(qp, wr, bad_wr);
}

static shiftu_cold int post_recv_unmanaged(struct ibv_qp *qp,
					   struct ibv_recv_wr *wr,
					   struct ibv_recv_wr **bad_wr)
{
	struct shiftu_ctx *s = shiftu_ctx_find(qp->context);

	if (!s) {
		*bad_wr = wr;
		return EINVAL;
	}
	return s->post_recv(qp, wr, bad_wr);
}

/* What a thread's anchors point at before its first post and poll. */
struct shiftu_vqp shiftu_vqp_none = {	/* reg.app_qp NULL: no QP's */
	.rc_qpn = UINT32_MAX,		/* no QP's number either */
};
static struct shiftu_ctx ctx_none;	/* ctx NULL: no CQ's */

/*
 * The thread's window (quiesce.h) and its anchors.  Most threads post to
 * one QP and poll one context's CQs: the anchor's compare (its object's
 * app_qp or ctx) replaces a lookup.  A thread that posts to several QPs
 * pays the registry's cache, as all did before; one that polls CQs of two
 * contexts finds the other one in ctx_before.  The compare is a plain
 * load: an anchored QP may be gone, its node kept for another QP
 * (interpose.c), and whatever app_qp a racing attach or detach leaves
 * there, it is not the QP the thread posts to (that one is alive, its node
 * is its own).  Contexts' nodes are never freed either.
 */
__thread struct shiftu_window shiftu_window __attribute__((tls_model("initial-exec"))) = {
	.vq = &shiftu_vqp_none,
	.srq = &shiftu_srq_none,
	.ctx = &ctx_none,
	.ctx_before = &ctx_none,
};

void shiftu_vqp_anchor(struct shiftu_vqp *vq)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.vq = vq;
}

/* The same for a context's polls: its page seq and its slow CQs. */
static inline bool ctx_open(const struct shiftu_ctx *s)
{
	uint64_t seq = shiftu_health_seq();

	return likely(s->seen_slow == seq);
}

/*
 * The managed QP of @qp, or NULL, as the thread's QP.  The registry's cache
 * first, with no call before the provider's (a thread that posts to several
 * QPs pays about what all did before the anchors); the table, or the
 * thread's first post (its window is not registered yet), out of line.
 * reg is the first member: the registry's entry is the vqp.
 */
static shiftu_cold struct shiftu_vqp *vqp_take_slow(const struct ibv_qp *qp)
{
	struct shiftu_vqp *vq = (struct shiftu_vqp *)shiftu_qp_lookup(qp);

	if (vq)
		shiftu_vqp_anchor(vq);
	return vq;
}

static inline struct shiftu_vqp *vqp_take(const struct ibv_qp *qp)
{
	struct shiftu_vqp *vq = (struct shiftu_vqp *)shiftu_qp_cached(qp);

	if (unlikely(!vq) || unlikely(!shiftu_window_ready()))
		return vqp_take_slow(qp);
	shiftu_window.vq = vq;
	return vq;
}

/* An IBV_SEND_INLINE request: its bytes, which the caller may reuse. */
static shiftu_cold void record_inline(struct shiftu_ring *r, struct shiftu_swqe *e,
				      const struct ibv_send_wr *w, uint32_t max_sge)
{
	/* past the descriptor below, which a QP of no sge has room for too */
	uint32_t sges = shiftu_swqe_sges(max_sge);
	uint8_t *dst = (uint8_t *)&e->sge[sges];
	uint32_t room = r->stride - sizeof(*e) - sges * sizeof(e->sge[0]);
	uint32_t len = 0;
	int i;

	for (i = 0; i < w->num_sge; i++) {
		uint32_t n = w->sg_list[i].length;

		if (n > room - len)
			n = room - len;	/* the provider refuses it anyway */
		memcpy(dst + len, (void *)(uintptr_t)w->sg_list[i].addr, n);
		len += n;
	}
	e->num_sge = 1;
	e->sge[0].addr = (uintptr_t)dst;
	e->sge[0].length = len;
	e->sge[0].lkey = 0;
}

/*
 * Record @w in the send ring: a descriptor copy, no payload.  Only the
 * send queue's poster (posters.h), or a thread holding fo_lock, records:
 * head is a plain relaxed counter.
 */
static inline void record_send(struct shiftu_vqp *vq, const struct ibv_send_wr *w)
{
	struct shiftu_ring *r = &vq->sq;
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	struct shiftu_swqe *e = (struct shiftu_swqe *)((char *)r->slots +
						       (h & r->mask) * r->stride);
	uint32_t max_sge = vq->init_attr.cap.max_send_sge;
	int i, n = w->num_sge;

	e->wr_id = w->wr_id;
	e->remote_addr = w->wr.rdma.remote_addr;
	e->rkey = w->wr.rdma.rkey;
	e->imm_data = w->imm_data;
	e->opcode = w->opcode;
	e->send_flags = w->send_flags;
	if (unlikely(SHIFTU_TWO_SIDED & (1U << (w->opcode & 31))))
		vq->sent2++;
	/* its rkey is not where an RDMA request's is, and a held one is
	 * posted from here with its operands (shiftu_swqe_wr()) */
	if (unlikely(shiftu_wr_atomic(w->opcode))) {
		e->rkey = w->wr.atomic.rkey;
		e->compare_add = w->wr.atomic.compare_add;
		e->swap = w->wr.atomic.swap;
	}
	e->seq2 = vq->sent2;
	if (unlikely(w->send_flags & IBV_SEND_INLINE)) {
		record_inline(r, e, w, max_sge);
	} else {
		if (unlikely(n > (int)max_sge))
			n = max_sge;	/* the provider refuses it anyway */
		e->num_sge = n;
		for (i = 0; i < n; i++)
			e->sge[i] = w->sg_list[i];
	}
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELAXED);
}

/* Two-sided requests in @w's chain: the peer's receives they consume. */
static inline uint64_t two_sided(const struct ibv_send_wr *w)
{
	uint64_t n = 0;

	for (; w; w = w->next)
		n += (SHIFTU_TWO_SIDED >> (w->opcode & 31)) & 1;
	return n;
}

static inline uint64_t chain_len(const struct ibv_send_wr *w)
{
	uint64_t n = 0;

	for (; w; w = w->next)
		n++;
	return n;
}

/* The provider refused @bad and what follows it: forget them. */
static shiftu_cold void unrecord_send(struct shiftu_vqp *vq, struct ibv_send_wr *bad)
{
	__atomic_store_n(&vq->sq.head, vq->sq.head - chain_len(bad), __ATOMIC_RELAXED);
	vq->sent2 -= two_sided(bad);
}

/*
 * A post the common path does not take: the QP copies its requests
 * (SHIFTU_RINGS_COPY) or records none, or, with the provider's rings, a
 * chain, or a two-sided request to number: counted, and taken back if
 * the provider refuses.
 */
static __attribute__((noinline)) int post_counted(struct shiftu_vqp *vq, struct ibv_qp *qp,
						   struct ibv_send_wr *wr,
						   struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *w;
	int ret;

	if (vq->rings == SHIFTU_RINGS_COPY) {
		for (w = wr; w; w = w->next)
			record_send(vq, w);
	} else if (vq->rings == SHIFTU_RINGS_PROVIDER) {
		__atomic_store_n(&vq->sq.head, vq->sq.head + chain_len(wr), __ATOMIC_RELAXED);
		vq->sent2 += two_sided(wr);
	}
	ret = vq->post_send(qp, wr, bad_wr);
	if (unlikely(ret) && vq->rings)
		unrecord_send(vq, *bad_wr);
	return ret;
}

/*
 * One one-sided request that the provider's rings keep: counted, and
 * posted.  A request the provider refuses stays counted:
 * the count places what a failover reads from the provider's rings
 * (provq.c) relative to its end, so one too many only shows in the
 * statistics.  (The rings cannot count for us: rxe keeps their indices
 * modulo their size.)
 */
static inline bool post_plain(const struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	return !vq->copying && !((SHIFTU_TWO_SIDED >> (wr->opcode & 31)) & 1) &&
	       !wr->next;
}

static inline int post_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			       struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	if (likely(post_plain(vq, wr))) {
		__atomic_store_n(&vq->sq.head, vq->sq.head + 1, __ATOMIC_RELAXED);
		return vq->post_send(qp, wr, bad_wr);
	}
	return post_counted(vq, qp, wr, bad_wr);
}

void shiftu_record_send(struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	record_send(vq, wr);
}

int shiftu_post_send_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			     struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return post_default(vq, qp, wr, bad_wr);
}

/*
 * The calling thread is the poster of the queue whose gate's poster is
 * @poster (posters.h): the one thread that may count its requests outside
 * fo_lock.  Read inside the thread's window, as the gate is: a thread
 * taking the queue waits for that window.
 */
static inline bool poster_is_me(const uint16_t *poster)
{
	uint16_t me = (uint16_t)(shiftu_window.tag >> SHIFTU_POSTER_SHIFT);

	return me && __atomic_load_n(poster, __ATOMIC_RELAXED) == me;
}

/*
 * The slow path of a send, the QP's batch of the extended send API held
 * (wrapi.h) so that no batch is open while its send queue changes poster.
 * Context: the thread's window closed.
 */
static shiftu_cold int post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
				      struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool held = shiftu_wr_hold(vq);
	int ret;

	ret = shiftu_post_send_slow(vq, qp, wr, bad_wr);
	if (held)
		shiftu_wr_release(vq);
	return ret;
}

/*
 * The health page moved, the QP is on its slow path, the calling thread
 * is not its send queue's poster, or the post counts.  Entered inside the
 * posting thread's window (quiesce.h): a post to the default QP stays
 * inside it, so that a move that closes the gate, or a thread that takes
 * the queue, waits for it; what may wait for a move (the page's news, the
 * slow path, which takes fo_lock and the queue) is done outside.
 */
static inline int post_send_rest(struct ibv_qp *qp, struct ibv_send_wr *wr,
				 struct ibv_send_wr **bad_wr, struct shiftu_vqp *vq)
{
	int ret;

	if (unlikely(shiftu_health_moved(&vq->health_seen))) {
		shiftu_window_leave();
		shiftu_vqp_health(vq);
		shiftu_window_enter();
	}
	if (unlikely(__atomic_load_n(&vq->slow, __ATOMIC_RELAXED)) ||
	    unlikely(!poster_is_me(&vq->poster))) {
		shiftu_window_leave();
		return post_send_slow(vq, qp, wr, bad_wr);
	}
	ret = post_default(vq, qp, wr, bad_wr);
	shiftu_window_leave();
	return ret;
}

/* the first rename of a hold waits this long for the polls in flight */
#define WRID_QUIESCE_NS		(200ULL * 1000 * 1000)

/* @s's renamed requests (rename.h), made at its first rename. */
static struct shiftu_wrids *ctx_wrids(struct shiftu_ctx *s)
{
	return shiftu_wrids_get(&s->wrids, &s->slow_cqs, s->dev_name);
}

/*
 * The renames of @sv began a hold of @s's polls (or came before the
 * rename that began it waited): the polls that passed the context's test
 * before it are waited out, so that none of them takes a renamed
 * completion past its look.  Context: the caller's windows closed.
 */
static void wrid_arm(struct shiftu_ctx *s, struct shiftu_wrids *w,
		     const struct shiftu_wrid_saved *sv)
{
	if (!sv->wait_gen)
		return;
	if (!shiftu_quiesce(WRID_QUIESCE_NS, false))
		shiftu_info("%s: a poll in flight is not out after %llu ms: renaming anyway",
			    s->dev_name, WRID_QUIESCE_NS / 1000000);
	shiftu_wrid_armed(w, sv->wait_gen);
}

/*
 * A request of @wr's chain has an id in the library's range (rename.h):
 * renamed, outside the window (the context's first rename may wait for
 * the other threads' windows), then posted as any other, and the
 * application's ids put back in @wr.
 */
static shiftu_cold int post_send_renamed(struct ibv_qp *qp, struct ibv_send_wr *wr,
					 struct ibv_send_wr **bad_wr, struct shiftu_vqp *vq)
{
	struct shiftu_wrid_saved sv;
	struct shiftu_wrids *w;
	int ret;

	shiftu_window_leave();
	w = ctx_wrids(vq->sctx);
	ret = shiftu_wrid_send_in(w, wr, vq->init_attr.sq_sig_all, &sv, bad_wr);
	if (ret)
		return ret;
	wrid_arm(vq->sctx, w, &sv);
	shiftu_window_enter();
	ret = post_send_rest(qp, wr, bad_wr, vq);
	shiftu_wrid_send_out(w, wr, ret ? *bad_wr : NULL, &sv);
	return ret;
}

/*
 * Past the common path's test (post_send_rest()), or a request whose id
 * may be in the library's range.  @vq comes last: the common path's jump
 * here leaves the verb's arguments where they are.
 */
static __attribute__((noinline)) int post_send_other(struct ibv_qp *qp,
						      struct ibv_send_wr *wr,
						      struct ibv_send_wr **bad_wr,
						      struct shiftu_vqp *vq)
{
	if (unlikely(shiftu_wrid_send_ranged(wr)))
		return post_send_renamed(qp, wr, bad_wr, vq);
	return post_send_rest(qp, wr, bad_wr, vq);
}

/*
 * The common path, for the thread's QP @vq: the posting thread's window,
 * the QP's word against the page's sequence and the thread's tag (it is
 * the queue's poster), the count, and the provider's
 * post; a two-sided request (one SEND or WRITE_WITH_IMM) is numbered for
 * the handshake too.  Nothing but the window's offset is kept across the
 * provider's call: the one-sided path has no use for anything else, and
 * what the two-sided one may need, @vq, is the thread's anchor.
 */
static __attribute__((always_inline)) inline int post_send_common(struct shiftu_vqp *vq,
								  struct ibv_qp *qp,
								  struct ibv_send_wr *wr,
								  struct ibv_send_wr **bad_wr)
{
	int ret;

	/* before the gate's load: a move that closes it, or a thread that
	 * takes the queue, waits for us */
	shiftu_window_open();
	/* an id whose top byte is 'S' may be in the library's range: its
	 * request may be renamed (rename.h) */
	if (unlikely(!shiftu_vqp_open(vq)) || unlikely(wr->next) ||
	    unlikely(shiftu_wrid_maybe(wr->wr_id)))
		return post_send_other(qp, wr, bad_wr, vq);
	/* only the queue's poster writes them; a move reads them once we are out */
	vq->sq.head++;
	if (unlikely((SHIFTU_TWO_SIDED >> (wr->opcode & 31)) & 1)) {
		vq->sent2++;
		/* its own load of post_send: the other branch calls through memory */
		shiftu_hide_var(vq);
		ret = vq->post_send(qp, wr, bad_wr);
		/*
		 * Refused: the number is taken back (the peer's receive count
		 * is compared with it).  The thread's QP is still @vq: only
		 * the thread's cold paths change it, and the provider's post
		 * reaches none.
		 */
		if (unlikely(ret))
			shiftu_window.vq->sent2--;
	} else {
		ret = vq->post_send(qp, wr, bad_wr);
	}
	shiftu_window_close();
	return ret;
}

/* @qp is not the thread's QP: it becomes the thread's (vqp_take()). */
static __attribute__((noinline)) int post_send_find(struct ibv_qp *qp,
						     struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad_wr)
{
	struct shiftu_vqp *vq = vqp_take(qp);

	if (unlikely(!vq))
		return post_send_unmanaged(qp, wr, bad_wr);
	return post_send_common(vq, qp, wr, bad_wr);
}

int shiftu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr)
{
	struct shiftu_vqp *vq = shiftu_window.vq;

	if (unlikely(vq->reg.app_qp != qp))
		return post_send_find(qp, wr, bad_wr);
	return post_send_common(vq, qp, wr, bad_wr);
}

int shiftu_post_send_vq(struct shiftu_vqp *vq, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr)
{
	shiftu_vqp_anchor(vq);
	return post_send_common(vq, vq->reg.app_qp, wr, bad_wr);
}

/* Record @w in the receive ring (descriptor only), as record_send(). */
static inline void record_recv(struct shiftu_vqp *vq, const struct ibv_recv_wr *w)
{
	struct shiftu_ring *r = &vq->rq;
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	struct shiftu_rwqe *e = (struct shiftu_rwqe *)((char *)r->slots +
						       (h & r->mask) * r->stride);
	int i, n = w->num_sge;

	if (unlikely(n > (int)vq->init_attr.cap.max_recv_sge))
		n = vq->init_attr.cap.max_recv_sge;	/* refused anyway */
	e->wr_id = w->wr_id;
	e->num_sge = n;
	for (i = 0; i < n; i++)
		e->sge[i] = w->sg_list[i];
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELAXED);
}

void shiftu_record_recv(struct shiftu_vqp *vq, const struct ibv_recv_wr *wr)
{
	record_recv(vq, wr);
}

/* The provider refused @bad and what follows it: forget them. */
static shiftu_cold void unrecord_recv(struct shiftu_vqp *vq, struct ibv_recv_wr *bad)
{
	uint64_t n = 0;

	for (; bad; bad = bad->next)
		n++;
	__atomic_store_n(&vq->rq.head, vq->rq.head - n, __ATOMIC_RELAXED);
}

/* Count @wr's chain (SHIFTU_RINGS_PROVIDER). */
static inline void count_recv(struct shiftu_vqp *vq, const struct ibv_recv_wr *w)
{
	uint64_t n = 1;

	for (w = w->next; unlikely(w); w = w->next)
		n++;
	__atomic_store_n(&vq->rq.head, vq->rq.head + n, __ATOMIC_RELAXED);
}

/*
 * Receives are counted exactly, taken back when the provider refuses them:
 * with one CQ for both queues, the receives a failover finds outstanding
 * are those posted less those completed.
 */
static inline int post_recv_counted(struct shiftu_vqp *vq, struct ibv_qp *qp,
				    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret;

	count_recv(vq, wr);
	ret = vq->post_recv(qp, wr, bad_wr);
	if (unlikely(ret))
		unrecord_recv(vq, *bad_wr);
	return ret;
}

static inline int post_recv_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
				    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *w;
	int ret;

	if (likely(!vq->copying))
		return post_recv_counted(vq, qp, wr, bad_wr);
	if (vq->rings)
		for (w = wr; w; w = w->next)
			record_recv(vq, w);
	ret = vq->post_recv(qp, wr, bad_wr);
	if (unlikely(ret) && vq->rings)
		unrecord_recv(vq, *bad_wr);
	return ret;
}

int shiftu_post_recv_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			     struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return post_recv_default(vq, qp, wr, bad_wr);
}

/* The health page moved, the QP is on its slow path, the calling thread
 * is not its receive queue's poster, or it copies: as post_send_rest(),
 * inside the posting thread's window. */
static inline int post_recv_rest(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr, struct shiftu_vqp *vq)
{
	int ret;

	if (shiftu_health_moved(&vq->health_seen_r)) {
		shiftu_window_leave();
		shiftu_vqp_health(vq);
		shiftu_window_enter();
	}
	if (__atomic_load_n(&vq->slow_r, __ATOMIC_RELAXED) || !poster_is_me(&vq->poster_r)) {
		shiftu_window_leave();
		return shiftu_post_recv_slow(vq, qp, wr, bad_wr);
	}
	ret = post_recv_default(vq, qp, wr, bad_wr);
	shiftu_window_leave();
	return ret;
}

/* An id of @wr's chain in the library's range: as post_send_renamed(). */
static shiftu_cold int post_recv_renamed(struct ibv_qp *qp, struct ibv_recv_wr *wr,
					 struct ibv_recv_wr **bad_wr, struct shiftu_vqp *vq)
{
	struct shiftu_wrid_saved sv;
	struct shiftu_wrids *w;
	int ret;

	shiftu_window_leave();
	w = ctx_wrids(vq->sctx);
	ret = shiftu_wrid_recv_in(w, wr, &sv, bad_wr);
	if (ret)
		return ret;
	wrid_arm(vq->sctx, w, &sv);
	shiftu_window_enter();
	ret = post_recv_rest(qp, wr, bad_wr, vq);
	shiftu_wrid_recv_out(w, wr, ret ? *bad_wr : NULL, &sv);
	return ret;
}

int shiftu_wrid_post_srq(struct shiftu_ctx *s,
			 int (*post)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				     struct ibv_recv_wr **bad_wr),
			 struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct shiftu_wrid_saved sv;
	struct shiftu_wrids *w;
	int ret;

	if (!shiftu_wrid_recv_ranged(wr))
		return post(srq, wr, bad_wr);
	w = ctx_wrids(s);
	ret = shiftu_wrid_recv_in(w, wr, &sv, bad_wr);
	if (ret)
		return ret;
	wrid_arm(s, w, &sv);
	ret = post(srq, wr, bad_wr);
	shiftu_wrid_recv_out(w, wr, ret ? *bad_wr : NULL, &sv);
	return ret;
}

int shiftu_wrid_out_all(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	struct shiftu_wrids *w = __atomic_load_n(&s->wrids, __ATOMIC_ACQUIRE);
	bool srq = __atomic_load_n(&shiftu_srq_tables, __ATOMIC_RELAXED);
	bool open = shiftu_window_ready() && (shiftu_window.seq & 1);
	int i, j;

	if (n <= 0 || (!w && !srq))
		return n;
	/* the destroy verb frees an SRQ's table once no window is open
	 * (post's: a poll's may be closed already) */
	if (srq && !open)
		shiftu_window_enter();
	for (i = 0, j = 0; i < n; i++) {
		/* classified once: an id given back is the application's */
		switch (shiftu_wrid_kind(wc[i].wr_id)) {
		case SHIFTU_WRID_SRQ:
			if (srq)
				shiftu_srq_give_back(&wc[i].wr_id);
			break;
		case SHIFTU_WRID_RENAMED:
			/* a quiet send's good completion: the library's */
			if (w && !shiftu_wrid_give_back(w, &wc[i]))
				continue;
			break;
		default:
			break;
		}
		if (j != i)
			wc[j] = wc[i];
		j++;
	}
	if (srq && !open)
		shiftu_window_close();
	if (w)
		shiftu_wrid_hold_end(w);
	return j;
}

/* As post_send_other(). */
static __attribute__((noinline)) int post_recv_other(struct ibv_qp *qp,
						      struct ibv_recv_wr *wr,
						      struct ibv_recv_wr **bad_wr,
						      struct shiftu_vqp *vq)
{
	if (unlikely(shiftu_wrid_recv_ranged(wr)))
		return post_recv_renamed(qp, wr, bad_wr, vq);
	return post_recv_rest(qp, wr, bad_wr, vq);
}

/*
 * The common path, for the thread's QP @vq: the window, the QP's word, the
 * count (a chain's out of line), and the provider's post, as for sends.
 */
static __attribute__((always_inline)) inline int post_recv_common(struct shiftu_vqp *vq,
								  struct ibv_qp *qp,
								  struct ibv_recv_wr *wr,
								  struct ibv_recv_wr **bad_wr)
{
	int ret;

	shiftu_window_open();
	if (unlikely(!shiftu_vqp_open_r(vq)) || unlikely(wr->next) ||
	    unlikely(shiftu_wrid_maybe(wr->wr_id)))
		return post_recv_other(qp, wr, bad_wr, vq);
	vq->rq.head++;
	ret = vq->post_recv(qp, wr, bad_wr);
	/* refused: not counted (the thread's QP is still @vq, as for sends) */
	if (unlikely(ret))
		shiftu_window.vq->rq.head--;
	shiftu_window_close();
	return ret;
}

/* @qp is not the thread's QP: as post_send_find(). */
static __attribute__((noinline)) int post_recv_find(struct ibv_qp *qp,
						     struct ibv_recv_wr *wr,
						     struct ibv_recv_wr **bad_wr)
{
	struct shiftu_vqp *vq = vqp_take(qp);

	if (unlikely(!vq))
		return post_recv_unmanaged(qp, wr, bad_wr);
	return post_recv_common(vq, qp, wr, bad_wr);
}

int shiftu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct shiftu_vqp *vq = shiftu_window.vq;

	if (unlikely(vq->reg.app_qp != qp))
		return post_recv_find(qp, wr, bad_wr);
	return post_recv_common(vq, qp, wr, bad_wr);
}

/*
 * ibv_post_srq_recv(), past the common path: the thread's SRQ is not
 * @srq's record (its first post, or to another SRQ), or @wr is a chain or
 * not of one scatter entry.  Entered with the window closed.
 */
static shiftu_cold int post_srq_other(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				      struct ibv_recv_wr **bad_wr)
{
	struct shiftu_srq *r = shiftu_window.srq;
	struct shiftu_ctx *s;

	if (!srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (r->app != srq) {
		r = shiftu_srq_find(srq);
		if (!r) {
			s = shiftu_ctx_find(srq->context);
			if (!s || !s->post_srq_recv) {
				*bad_wr = wr;
				return EINVAL;
			}
			return shiftu_wrid_post_srq(s, s->post_srq_recv, srq, wr, bad_wr);
		}
		/* the anchor is set outside the window (quiesce.h) */
		if (!shiftu_window_ready())
			shiftu_window_register();
		shiftu_window.srq = r;
	}
	if (!wr->next && wr->num_sge == 1)
		return shiftu_post_srq_recv(srq, wr, bad_wr);
	return shiftu_srq_post(r, wr, bad_wr);
}

/*
 * The common path found no credit (it is shut for a move, or the default
 * SRQ may be full: @e NULL) or the cursor's entry @e still posted: the
 * credit goes back and a claim found posted is counted, inside the window
 * that a move waits out, then the post takes srq_lock.  Its arguments are
 * where the common path holds them when it gives up (@srq and @bad_wr as
 * they came, @e where the provider's post takes its request, @wr aside),
 * so that neither path moves them for the other.
 */
static shiftu_cold_args int post_srq_slow(struct ibv_srq *srq, struct shiftu_srqent *e,
					  struct ibv_recv_wr **bad_wr,
					  struct ibv_recv_wr *wr)
{
	struct shiftu_srq *r = shiftu_window.srq;

	(void)srq;
	if (e)
		shiftu_srqtab_skip(&r->tab, 1);
	shiftu_srqtab_uncredit(&r->tab);
	shiftu_window_close();
	return shiftu_srq_post(r, wr, bad_wr);
}

/*
 * ibv_post_srq_recv(): through the SRQ's table (srq.h).  The common path:
 * one receive of one scatter entry to the thread's SRQ while all its QPs
 * are on the default side: inside the window, a credit of the default
 * SRQ's room and an entry claimed, no lock; the entry keeps the
 * application's id and scatter entry (a move posts it again from there)
 * and its own request, under the library's id, goes to the provider's
 * post as a tail call, after the window: the credit means the provider
 * cannot refuse it, so nothing is left to do after it.  A move that shuts
 * the path waits out the windows, then the producer index (srq.c).
 *
 * Its cost is counted (make bench: at most 25 instructions over the
 * provider's post, and it takes 25; check a change with objdump -d): the
 * tail call takes @srq and @bad_wr in the registers they came in, and
 * only @wr moves, to free the one the entry's request goes out in.
 */
int shiftu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct shiftu_srq *r = shiftu_window.srq;
	struct shiftu_srqent *e;

	if (unlikely(r->app != srq) || unlikely(wr->next) || unlikely(wr->num_sge != 1))
		return post_srq_other(srq, wr, bad_wr);
	/* before the credit: a move that shuts the path waits for us */
	shiftu_window_open();
	if (unlikely(!shiftu_srqtab_credit(&r->tab)))
		return post_srq_slow(srq, NULL, bad_wr, wr);
	if (unlikely(!shiftu_srqtab_claim_fast(&r->tab, &e)))
		return post_srq_slow(srq, e, bad_wr, wr);
	e->wr_id = wr->wr_id;
	e->sge[0] = wr->sg_list[0];
	shiftu_window_close();
	/*
	 * @srq is @r's (checked above), and stays in the register it came
	 * in: without the empty asm, GCC 12 gives that register to the
	 * window's TLS offset and moves @srq out and back (28 instructions
	 * in all); @r->app loaded again instead costs a load (26).
	 */
	shiftu_hide_var(srq);
	return r->post(srq, &e->wr, bad_wr);
}

_Static_assert(offsetof(struct ibv_wc, opcode) == offsetof(struct ibv_wc, status) + 4 &&
	       sizeof(((struct ibv_wc *)0)->status) == 4 && __BYTE_ORDER == __LITTLE_ENDIAN,
	       "a completion's status and opcode are read as one 64-bit word");

/* The completion's status and opcode, masked with shiftu_wc_look. */
static inline uint64_t wc_look(const struct ibv_wc *wc)
{
	uint64_t w;

	memcpy(&w, &wc->status, sizeof(w));
	return w & __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED);
}

/*
 * A completion that needs a look (an error, or a receive to count) and
 * was not a good receive counted here, without a call.  The first test is
 * the one a good send completion takes, status and opcode in one 64-bit
 * test; only a completion that fails it has its status looked at alone.
 */
static inline bool wc_looked(const struct ibv_wc *wc)
{
	return unlikely(wc_look(wc) != 0) &&
	       (wc->status != IBV_WC_SUCCESS ||
		!shiftu_count_recv_cached(shiftu_window.ctx, wc->qp_num));
}

/*
 * What the poll hands the application: the library's ids given back
 * (rename.h; an SRQ's table's, a renamed request's), each completion
 * classified once.  Only a process with an SRQ table or a renamed
 * request pays more than the test.
 */
static inline int poll_out(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	if (unlikely(__atomic_load_n(&shiftu_srq_tables, __ATOMIC_RELAXED)) ||
	    unlikely(__atomic_load_n(&s->wrids, __ATOMIC_RELAXED) != NULL))
		return shiftu_wrid_out_all(s, wc, n);
	return n;
}

/*
 * The @n completions the thread's poll took (its context, CQ and array
 * are in its block), from the @i-th on, the first that needs a
 * look: errors and receives.  Leaves the poller's window (quiesce.h) once
 * they are counted, or stashed for a failover.  A receive posted through
 * an SRQ's table (its QP is not in the receive cache under its number)
 * comes here: the application's id back, inside the window.
 */
static __attribute__((noinline)) int poll_took(int n, int i)
{
	struct shiftu_ctx *s = shiftu_window.ctx;
	struct ibv_wc *wc = shiftu_window.wc;

	for (; i < n; i++) {
		/* an error completion may start a failover (the transport's verdict) */
		if (unlikely(wc[i].status != IBV_WC_SUCCESS)) {
			n = shiftu_poll_error(s, shiftu_window.cq, wc, n);
			shiftu_poll_leave();
			return poll_out(s, wc, n);
		}
		if (wc_look(&wc[i]))
			shiftu_count_recv(s, wc[i].qp_num);
	}
	n = poll_out(s, wc, n);
	shiftu_poll_leave();
	return n;
}

/* Entered with the window open; a slow poll takes the CQ's lock, which
 * keeps it out of a drain's way: no window. */
static shiftu_cold int poll_moved(struct shiftu_ctx *s, struct ibv_cq *cq,
				  int num, struct ibv_wc *wc)
{
	shiftu_poll_leave();
	if (shiftu_health_moved(&s->health_seen))
		shiftu_ctx_health(s);
	if (__atomic_load_n(&s->slow_cqs, __ATOMIC_RELAXED))
		return shiftu_poll_cq_slow(s, cq, num, wc);
	shiftu_poll_reenter();
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	return poll_took(s->poll_cq(cq, num, wc), 0);
}

/*
 * The common path, for the thread's context @s: the poller's window, the
 * context's word against the page's sequence, the provider's poll, and a
 * look at each completion's status and opcode; a good send completion
 * needs nothing more, a good receive of a QP the context's cache holds is
 * counted here, the rest goes to poll_took().  The verb's arguments go to
 * the thread's block, not to registers kept across the provider's call:
 * only the array is used after it on this path.
 */
static __attribute__((always_inline)) inline int poll_common(struct shiftu_ctx *s,
							     struct ibv_cq *cq, int num,
							     struct ibv_wc *wc)
{
	int n, i;

	/* before the slow flag's load: a move that sets it waits for us */
	shiftu_poll_open();
	if (unlikely(!ctx_open(s)))
		return poll_moved(s, cq, num, wc);
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	n = s->poll_cq(cq, num, wc);
	if (n > 0) {
		/* statistics (the exit line): one add, its thread's word */
		shiftu_window.wcs += (uint32_t)n;
		/* most polls that take any take one: it is looked at first */
		wc = shiftu_window.wc;
		if (wc_looked(&wc[0]))
			return poll_took(n, 0);
		/* the rest with the loop's test at its foot */
		if (unlikely(n > 1))
			for (i = 1; i < n; i++)
				if (wc_looked(&wc[i]))
					return poll_took(n, i);
	}
	shiftu_poll_close();
	return n;
}

/*
 * @cq's context is neither of the thread's two, or this is the thread's
 * first poll (its window is not registered yet).  A context the library
 * does not manage cannot reach here (its ops were never replaced).
 */
static shiftu_cold int poll_list(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_ctx_find(cq->context);

	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.ctx_before = shiftu_window.ctx;
	shiftu_window.ctx = s;
	return poll_common(s, cq, num, wc);
}

/*
 * @cq's context is not the thread's: it polls CQs of several (a thread for
 * two rails, say).  The one it polled before, if it is @cq's, becomes the
 * thread's, with no call before the provider's, as on the common path.
 */
static __attribute__((noinline)) int poll_find(struct ibv_cq *cq, int num,
					       struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_window.ctx_before;

	if (unlikely(s->ctx != cq->context))
		return poll_list(cq, num, wc);
	shiftu_window.ctx_before = shiftu_window.ctx;
	shiftu_window.ctx = s;
	return poll_common(s, cq, num, wc);
}

int shiftu_poll_taken(struct shiftu_ctx *s, struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.ctx = s;
	shiftu_window.cq = cq;
	shiftu_window.wc = wc;
	return poll_took(n, 0);
}

int shiftu_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct shiftu_ctx *s = shiftu_window.ctx;

	if (unlikely(s->ctx != cq->context))
		return poll_find(cq, num, wc);
	return poll_common(s, cq, num, wc);
}

int shiftu_vqp_primary(struct shiftu_vqp *vq, struct shiftu_port_health *ph,
		       uint8_t *path)
{
	uint64_t since;

	*path = SHIFT_FT_PATH_UNKNOWN;
	if (!vq->port_num ||
	    shiftu_health_port(vq->sctx->node_guid, vq->port_num, ph))
		return -ENOENT;
	if (ph->state != SHIFT_FT_PORT_ACTIVE)
		return 1;
	/*
	 * A path down by this QP's own report: its probe tells when it is
	 * back.  A path down since before the QP last came back to it: the
	 * probe (ours or the peer's) proved it since; the table has not
	 * heard yet (the agents relay a remote port late).
	 */
	if (vq->has_dgid && !shiftu_health_path(ph->port_index, vq->dgid, path, &since))
		return *path == SHIFT_FT_PATH_DOWN &&
		       !__atomic_load_n(&vq->reported, __ATOMIC_RELAXED) &&
		       since > __atomic_load_n(&vq->back_ns, __ATOMIC_RELAXED);
	return 0;
}

void shiftu_vqp_health(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;
	uint32_t flags;
	int down;

	down = shiftu_vqp_primary(vq, &ph, &path);
	if (down < 0)
		return;		/* unbound, no page, or no row for the port: unknown */
	if (down == vq->down)
		return;
	/* which, for a failover another thread starts on seeing @down */
	vq->down_path = path == SHIFT_FT_PATH_DOWN;
	vq->down = down;
	/*
	 * Set here, cleared only by the slow paths under fo_lock: a move
	 * another thread is making still reads Default until it is done.
	 */
	if (down)
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
	flags = __atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED);
	shiftu_qp_set_flags(&vq->reg, down ? flags | SHIFTU_QP_F_PRIMARY_DOWN :
					     flags & ~SHIFTU_QP_F_PRIMARY_DOWN);
	shiftu_info("qp %u on %s port %u: %s %s (backup: %s port %u)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
		    path == SHIFT_FT_PATH_DOWN ? "path" : "port",
		    down ? "down" : "up",
		    ph.backup_index == SHIFT_FT_NO_PORT ? "none" : ph.backup_dev_name,
		    ph.backup_port_num);
	if (down)
		shiftu_failover(vq, path == SHIFT_FT_PATH_DOWN ? "path down" : "port down");
}
