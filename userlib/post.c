// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * post.c: libshiftu's ibv_post_send and ibv_post_recv (interpose.h), from
 * the thread's QP (its anchor, window.c) or a lookup.  The other data verbs
 * are ibv_post_srq_recv (srqpost.c) and ibv_poll_cq (poll.c); a QP's look
 * at the table when the page moved is qphealth.c's.
 *
 * Each finds the library's object for the QP or CQ (the one the thread
 * used last, else a lock-free lookup), asks the health page whether
 * anything changed (one acquire load and a compare, health.h), and calls
 * the provider's function.  Everything else is in cold functions.  No
 * syscall, lock or allocation here, and no store to memory that another
 * QP's poster uses.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "failover.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "posters.h"
#include "quiesce.h"
#include "rename.h"
#include "window.h"
#include "wrapi.h"
#include "util.h"

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

void shiftu_vqp_anchor(struct shiftu_vqp *vq)
{
	if (!shiftu_window_ready())
		shiftu_window_register();
	shiftu_window.vq = vq;
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
