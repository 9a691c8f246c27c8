// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * wrapi.c: the extended send API (ibv_wr_start ... ibv_wr_complete) on a QP
 * the library protects.
 *
 * The provider's wr_* builders write its send queue directly.  Where the
 * library reads a failed QP's requests from the provider's rings
 * (SHIFTU_RINGS_PROVIDER, provq.c), that is all it needs: a batch that
 * starts while the QP is on the posts' common path is a direct batch, built
 * by the provider's own builders, and wr_complete only counts what the
 * provider put in its ring, as a post counts its request.  The library's
 * wr_start and wr_complete frame it; the builders cost nothing more.
 *
 * The provider holds its send queue's lock from wr_start to wr_complete.
 * A failover must not wait for it (its drain posts a marker on that queue,
 * and the poster may be the thread failing over, from a poll inside its
 * batch): a move that finds a direct batch open leaves the move to the
 * batch's poster, which makes it once the batch is posted or aborted
 * (drain.c: shiftu_batch_open(), struct shiftu_vqp's @move_deferred).
 *
 * Otherwise (a QP that copies its requests, or on its slow path: moved,
 * moving, or the page moved) the builders are the library's: each request
 * of a batch becomes an ibv_send_wr in a per-QP array (inline bytes copied
 * at once, as the verb promises the caller may reuse its buffer on return),
 * and wr_complete posts the chain through the library's post_send, the one
 * path that records, fails over and replays.  The QP's builders are swapped
 * at wr_start, when no batch is open.
 *
 * One difference is visible there: the provider posts a batch whole or not
 * at all; a chain posted by ibv_post_send may stop part way (a full queue),
 * and then the requests before the failed one are posted.  Programs that
 * size their batches by the queue's free entries, as they must, never see
 * it.
 *
 * The verbs make wr_start ... wr_complete (or wr_abort) a per-QP critical
 * section, which the provider's lock keeps: a second thread's wr_start
 * waits for the first's batch to be posted.  The library's batch (its
 * array, its direct flag and producer index, the builders in the QP) is
 * per QP too, so the library keeps that section itself, before the
 * provider: wr_start takes the QP's batch (@holder, one compare-and-swap,
 * as the provider's own lock is one), waiting, yielding, while another
 * thread holds it; wr_complete and wr_abort give it back.  A thread that
 * is to become the send queue's poster (posters.h) takes it too
 * (shiftu_wr_hold()), so that no batch is open while the poster changes,
 * and a direct batch, which its poster opened as the queue's poster,
 * counts what it posted as the poster still.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "failover.h"
#include "interpose.h"
#include "log.h"
#include "provq.h"
#include "window.h"
#include "wrapi.h"

struct shiftu_wrbatch {
	struct ibv_send_wr *wr;		/* cap entries, the chain of a batch */
	struct ibv_sge *sge;		/* max_sge per entry */
	uint8_t *inl;			/* max_inline bytes per entry */
	struct ibv_send_wr *cur;	/* the request being built, or NULL */
	uint32_t cap;
	uint32_t n;
	uint32_t max_sge;
	uint32_t max_inline;
	int err;			/* the first error of the batch */
	/*
	 * Direct batches: the provider's entry points and builders as the QP
	 * came with them, and the send ring's producer index at wr_start.
	 */
	struct ibv_qp_ex prov;
	uint32_t prod0;
	uint8_t can_direct;		/* SHIFTU_RINGS_PROVIDER */
	uint8_t direct;			/* a direct batch is open; a move reads it */
	uint8_t prov_builders;		/* the QP has the provider's builders */
	/*
	 * The thread inside the QP's batch (its window block's address), or
	 * NULL: taken with a compare-and-swap (acquire), given back with a
	 * release store; what the holder wrote of the batch is then the
	 * next holder's.
	 */
	const struct shiftu_window *holder;
};

/* batch_take() when @b is held: by us (false), or by another thread. */
static shiftu_cold bool batch_take_slow(struct shiftu_wrbatch *b)
{
	const struct shiftu_window *none = NULL, *me = &shiftu_window;

	if (__atomic_load_n(&b->holder, __ATOMIC_RELAXED) == me)
		return false;
	do {
		/* another thread's batch: the provider would have us wait too */
		sched_yield();
		none = NULL;
	} while (!__atomic_compare_exchange_n(&b->holder, &none, me, false, __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	return true;
}

/* Take @b's batch for the calling thread if it is free. */
static inline bool batch_try(struct shiftu_wrbatch *b)
{
	const struct shiftu_window *none = NULL;

	return __atomic_compare_exchange_n(&b->holder, &none, &shiftu_window, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Take @b's batch for the calling thread: false if it has it already. */
static inline bool batch_take(struct shiftu_wrbatch *b)
{
	if (__builtin_expect(batch_try(b), 1))
		return true;
	return batch_take_slow(b);
}

static inline void batch_give(struct shiftu_wrbatch *b)
{
	__atomic_store_n(&b->holder, NULL, __ATOMIC_RELEASE);
}

bool shiftu_wr_hold(struct shiftu_vqp *vq)
{
	return vq->wb && batch_take(vq->wb);
}

void shiftu_wr_release(struct shiftu_vqp *vq)
{
	batch_give(vq->wb);
}

/*
 * The thread that posted the QP's last batch usually builds the next: the
 * QP is then the thread's, found without a lookup (post.c).
 */
static inline struct shiftu_vqp *vqp_of(struct ibv_qp_ex *qpx)
{
	return shiftu_vqp_find(&qpx->qp_base);
}

static inline struct shiftu_wrbatch *batch_of(struct ibv_qp_ex *qpx)
{
	struct shiftu_vqp *vq = vqp_of(qpx);

	return vq ? vq->wb : NULL;
}

static void batch_fail(struct shiftu_wrbatch *b, int err)
{
	if (!b->err)
		b->err = err;
	b->cur = NULL;
}

/* A new request of @opcode, with the flags and wr_id the caller set. */
static struct ibv_send_wr *batch_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct shiftu_wrbatch *b = batch_of(qpx);
	struct ibv_send_wr *w;

	if (!b)
		return NULL;
	if (b->err)
		return NULL;
	if (b->n == b->cap) {
		batch_fail(b, ENOMEM);
		return NULL;
	}
	w = &b->wr[b->n];
	/*
	 * The header and the wr union, all a provider reads of a request of
	 * the opcodes built here; the XRC, bind and TSO parts stay as
	 * calloc() left them: no builder writes them.
	 */
	w->wr_id = qpx->wr_id;
	w->next = NULL;
	w->sg_list = &b->sge[(size_t)b->n * b->max_sge];
	w->num_sge = 0;
	w->opcode = opcode;
	/* inline is what wr_set_inline_data says, not a flag */
	w->send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
	w->imm_data = 0;
	memset(&w->wr, 0, sizeof(w->wr));
	if (b->n)
		b->wr[b->n - 1].next = w;
	b->n++;
	b->cur = w;
	return w;
}

/* A new RDMA request (WRITE, WRITE_WITH_IMM, READ) at @rkey/@remote_addr. */
static struct ibv_send_wr *rdma_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
				    uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *w = batch_new(qpx, opcode);

	if (w) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = remote_addr;
	}
	return w;
}

/* A new atomic at @rkey/@remote_addr: @compare_add, and @swap for CAS. */
static void atomic_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
		       uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *w = batch_new(qpx, opcode);

	if (w) {
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.remote_addr = remote_addr;
		w->wr.atomic.compare_add = compare_add;
		w->wr.atomic.swap = swap;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	rdma_new(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *w = rdma_new(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr);

	if (w)
		w->imm_data = imm_data;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	rdma_new(qpx, IBV_WR_RDMA_READ, rkey, remote_addr);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	batch_new(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *w = batch_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm_data;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare, uint64_t swap)
{
	atomic_new(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	atomic_new(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

/* The request the data setters apply to; no request open is an error. */
static struct ibv_send_wr *batch_cur(struct shiftu_wrbatch *b)
{
	if (b && !b->cur && !b->err)
		batch_fail(b, EINVAL);
	return b ? b->cur : NULL;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct shiftu_wrbatch *b = batch_of(qpx);
	struct ibv_send_wr *w = batch_cur(b);

	if (!w)
		return;
	if (!b->max_sge) {
		batch_fail(b, EINVAL);
		return;
	}
	w->sg_list[0] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
	w->num_sge = 1;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct shiftu_wrbatch *b = batch_of(qpx);
	struct ibv_send_wr *w = batch_cur(b);

	if (!w)
		return;
	if (num_sge > b->max_sge) {
		batch_fail(b, EINVAL);
		return;
	}
	memcpy(w->sg_list, sg_list, num_sge * sizeof(*sg_list));
	w->num_sge = (int)num_sge;
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct shiftu_wrbatch *b = batch_of(qpx);
	struct ibv_send_wr *w = batch_cur(b);
	uint8_t *dst;
	size_t i, len = 0;

	if (!w)
		return;
	for (i = 0; i < num_buf; i++)
		len += buf_list[i].length;
	if (len > b->max_inline || !b->max_sge) {
		batch_fail(b, EINVAL);
		return;
	}
	/* copied now: the caller may reuse its buffers when this returns */
	dst = &b->inl[(size_t)(w - b->wr) * b->max_inline];
	for (i = 0, len = 0; i < num_buf; i++) {
		if (buf_list[i].length)
			memcpy(dst + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	w->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = (uint32_t)len };
	w->num_sge = 1;
	w->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

/* The builders of the operations replayed: the provider's, or ours. */
static void builders_use(struct shiftu_wrbatch *b, struct ibv_qp_ex *qpx, bool provider);

/*
 * A direct batch opens if @vq is on the posts' common path, tested inside
 * the posting window as a post tests it: a move waits for us, or we see it.
 */
static inline bool direct_open(struct shiftu_vqp *vq, struct shiftu_wrbatch *b)
{
	bool open;

	shiftu_window_open();
	open = shiftu_vqp_open(vq);
	if (__builtin_expect(open, 1))
		b->direct = 1;
	shiftu_window_close();
	return open;
}

/*
 * The provider's wr_start, the ring's producer index noted before its
 * lock, which changes nothing: the ring has one poster, us, and the
 * library posts there only with the gate closed, which an open direct
 * batch holds off (drain.c: shiftu_batch_open()).
 */
static inline void direct_begin(struct shiftu_vqp *vq, struct shiftu_wrbatch *b,
				struct ibv_qp_ex *qpx)
{
	b->prod0 = shiftu_provq_prod(vq->psq);
	b->prov.wr_start(qpx);
}

/* A batch of the library's builders. */
static void library_begin(struct shiftu_wrbatch *b, struct ibv_qp_ex *qpx)
{
	if (b->prov_builders)
		builders_use(b, qpx, false);
	b->n = 0;
	b->cur = NULL;
	b->err = 0;
}

/*
 * wr_start on a QP that is not the thread's, whose builders are ours, or
 * whose batch another thread holds: the batch taken (waiting for it), the
 * QP becomes the thread's (its window registered), and the batch is
 * direct if it can be.
 */
static __attribute__((noinline)) void wr_start_other(struct ibv_qp_ex *qpx)
{
	struct shiftu_vqp *vq = vqp_of(qpx);
	struct shiftu_wrbatch *b;

	if (!vq || !vq->wb)
		return;
	b = vq->wb;
	shiftu_vqp_anchor(vq);
	batch_take(b);
	shiftu_bump(&vq->wr_starts);
	if (b->can_direct && direct_open(vq, b)) {
		if (!b->prov_builders)
			builders_use(b, qpx, true);
		direct_begin(vq, b, qpx);
		return;
	}
	library_begin(b, qpx);
}

/*
 * shiftu_: the bench (selftests/lab/scenarios/bench.sh) measures it by
 * name.  The common path: the thread's QP, with the provider's builders
 * in place, on the posts' common path.
 */
static void shiftu_wr_start(struct ibv_qp_ex *qpx)
{
	struct shiftu_vqp *vq = shiftu_window.vq;
	struct shiftu_wrbatch *b = vq->wb;

	/* a batch held by another thread is waited for out of line */
	if (__builtin_expect(vq->reg.app_qp != &qpx->qp_base || !b || !b->prov_builders, 0) ||
	    __builtin_expect(!batch_try(b), 0)) {
		wr_start_other(qpx);
		return;
	}
	shiftu_bump(&vq->wr_starts);
	if (__builtin_expect(!direct_open(vq, b), 0)) {
		library_begin(b, qpx);
		return;
	}
	direct_begin(vq, b, qpx);
}

/* A move waits for this poster's batch: made now that it is posted. */
static shiftu_cold void direct_deferred(struct shiftu_vqp *vq)
{
	const char *why = __atomic_exchange_n(&vq->move_deferred, NULL, __ATOMIC_RELAXED);

	if (why)
		shiftu_failover(vq, why);
}

/*
 * A direct batch posted a request whose id may be in the library's range
 * (rename.h): the provider's builders wrote it to its ring as the
 * application gave it, and the doorbell has rung, too late to rename it.
 * Its completion may be taken for the library's.  The QP's later batches
 * are the library's builders', whose requests go through the library's
 * post_send, which renames them.
 */
static shiftu_cold void direct_ranged(struct shiftu_vqp *vq, struct shiftu_wrbatch *b,
				      struct ibv_qp_ex *qpx, uint32_t prod)
{
	uint32_t n = (prod - b->prod0) & vq->psq->index_mask, i;
	const struct rxe_send_wqe *w;

	for (i = 0; i < n; i++) {
		w = (const void *)(vq->psq->data +
				   ((size_t)((b->prod0 + i) & vq->psq->index_mask) <<
				    vq->psq->log2_elem_size));
		if (shiftu_wrid_ranged(w->wr.wr_id))
			break;
	}
	if (i == n)
		return;		/* 'S' first, and not "SHIFT" */
	/* the batch is still ours (batch_give() comes after) */
	b->can_direct = 0;
	builders_use(b, qpx, false);
	shiftu_warn("qp %u: a batch of the extended send API posted id 0x%llx, in the library's range, as the provider's builders wrote it: its completion may be taken for the library's; the QP's later batches go through the library's builders, which rename such ids",
		    vq->reg.app_qp->qp_num, (unsigned long long)w->wr.wr_id);
}

/*
 * Complete a direct batch, or abort it when a builder failed (@b->err),
 * and count what the provider put in its ring, inside the posting window as
 * a post counts: a move that began meanwhile waits for the count, or, if it
 * came first and found the batch open, is ours to make.
 */
static inline int direct_complete(struct shiftu_vqp *vq, struct shiftu_wrbatch *b,
				  struct ibv_qp_ex *qpx)
{
	uint32_t n, n2;
	int ret = b->err;
	bool maybe;

	shiftu_window_open();
	if (__builtin_expect(!ret, 1)) {
		ret = b->prov.wr_complete(qpx);
	} else {
		b->prov.wr_abort(qpx);
		b->err = 0;
	}
	/* what the provider published, even if its doorbell failed after */
	n = shiftu_provq_since(vq->psq, b->prod0, SHIFTU_TWO_SIDED, &n2, &maybe);
	vq->sq.head += n;
	vq->sent2 += n2;
	b->direct = 0;
	shiftu_window_close();
	if (__builtin_expect(maybe, 0))
		direct_ranged(vq, b, qpx, b->prod0 + n);
	/* statistics, by the batch's holder: no locked add */
	__atomic_store_n(&vq->wr_posts, __atomic_load_n(&vq->wr_posts, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
	batch_give(b);
	if (__builtin_expect(__atomic_load_n(&vq->move_deferred, __ATOMIC_RELAXED) != NULL, 0))
		direct_deferred(vq);
	return ret;
}

/* shiftu_: as shiftu_wr_start() */
static int shiftu_wr_complete(struct ibv_qp_ex *qpx)
{
	struct shiftu_vqp *vq = vqp_of(qpx);
	struct shiftu_wrbatch *b;
	struct ibv_send_wr *bad;
	int ret;

	if (!vq || !vq->wb)
		return EINVAL;
	b = vq->wb;
	shiftu_bump(&vq->wr_completes);
	if (__builtin_expect(b->direct, 1))
		return direct_complete(vq, b, qpx);
	ret = b->err;
	if (!ret && b->n) {
		ret = shiftu_post_send_vq(vq, b->wr, &bad);
		/* statistics: what ibv_post_send did not post */
		if (!ret)
			shiftu_qp_count(&vq->wr_posts, b->n);
	}
	b->n = 0;
	b->cur = NULL;
	b->err = 0;
	batch_give(b);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct shiftu_vqp *vq = vqp_of(qpx);
	struct shiftu_wrbatch *b = vq ? vq->wb : NULL;

	if (!b)
		return;
	if (b->direct) {
		b->err = ECANCELED;
		/* gives the batch back */
		direct_complete(vq, b, qpx);
		return;
	}
	b->n = 0;
	b->cur = NULL;
	b->err = 0;
	batch_give(b);
}

/*
 * Builders of operations the library does not replay.  A QP asking for one
 * in its send_ops_flags is not protected (its provider's builders stay);
 * these stand in on a protected QP only for a caller that uses an operation
 * it did not ask for.
 */
static void wr_unsupported(struct ibv_qp_ex *qpx)
{
	struct shiftu_wrbatch *b = batch_of(qpx);

	if (b)
		batch_fail(b, EOPNOTSUPP);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	wr_unsupported(qpx);
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	(void)mw, (void)rkey, (void)info;
	wr_unsupported(qpx);
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	wr_unsupported(qpx);
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t remote_addr, const void *atomic_wr)
{
	(void)rkey, (void)remote_addr, (void)atomic_wr;
	wr_unsupported(qpx);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	(void)ah, (void)remote_qpn, (void)remote_qkey;
	wr_unsupported(qpx);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	(void)remote_srqn;
	wr_unsupported(qpx);
}

bool shiftu_wr_ops_covered(uint64_t send_ops_flags)
{
	return !(send_ops_flags & ~(uint64_t)SHIFTU_WR_OPS);
}

/* The library's builders of the operations it replays. */
static const struct ibv_qp_ex lib_builders = {
	.wr_rdma_write = wr_rdma_write,
	.wr_rdma_write_imm = wr_rdma_write_imm,
	.wr_rdma_read = wr_rdma_read,
	.wr_send = wr_send,
	.wr_send_imm = wr_send_imm,
	.wr_atomic_cmp_swp = wr_atomic_cmp_swp,
	.wr_atomic_fetch_add = wr_atomic_fetch_add,
	.wr_set_sge = wr_set_sge,
	.wr_set_sge_list = wr_set_sge_list,
	.wr_set_inline_data = wr_set_inline_data,
	.wr_set_inline_data_list = wr_set_inline_data_list,
};

/*
 * The others stay the library's stubs in a direct batch too: the batch
 * fails at wr_complete, aborted, as on the library's path.
 */
static void builders_use(struct shiftu_wrbatch *b, struct ibv_qp_ex *qpx, bool provider)
{
	const struct ibv_qp_ex *f = provider ? &b->prov : &lib_builders;

	qpx->wr_rdma_write = f->wr_rdma_write;
	qpx->wr_rdma_write_imm = f->wr_rdma_write_imm;
	qpx->wr_rdma_read = f->wr_rdma_read;
	qpx->wr_send = f->wr_send;
	qpx->wr_send_imm = f->wr_send_imm;
	qpx->wr_atomic_cmp_swp = f->wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = f->wr_atomic_fetch_add;
	qpx->wr_set_sge = f->wr_set_sge;
	qpx->wr_set_sge_list = f->wr_set_sge_list;
	qpx->wr_set_inline_data = f->wr_set_inline_data;
	qpx->wr_set_inline_data_list = f->wr_set_inline_data_list;
	b->prov_builders = provider;
}

bool shiftu_wr_direct_open(const struct shiftu_vqp *vq)
{
	/* only a QP that can have one opens one */
	return vq->wb && __atomic_load_n(&vq->wb->direct, __ATOMIC_RELAXED);
}

bool shiftu_wr_can_direct(const struct shiftu_vqp *vq)
{
	return vq->wb && vq->wb->can_direct;
}

int shiftu_wr_attach(struct shiftu_vqp *vq, struct ibv_qp_ex *qpx)
{
	const struct ibv_qp_cap *cap = &vq->init_attr.cap;
	struct shiftu_wrbatch *b;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cap = cap->max_send_wr ? cap->max_send_wr : 1;
	b->max_sge = cap->max_send_sge;
	b->max_inline = cap->max_inline_data;
	b->wr = calloc(b->cap, sizeof(*b->wr));
	b->sge = calloc((size_t)b->cap * (b->max_sge ? b->max_sge : 1), sizeof(*b->sge));
	b->inl = b->max_inline ? calloc(b->cap, b->max_inline) : NULL;
	if (!b->wr || !b->sge || (b->max_inline && !b->inl)) {
		free(b->wr);
		free(b->sge);
		free(b->inl);
		free(b);
		return -ENOMEM;
	}
	b->prov = *qpx;
	b->can_direct = vq->rings == SHIFTU_RINGS_PROVIDER && vq->psq;
	vq->wb = b;

	qpx->wr_start = shiftu_wr_start;
	qpx->wr_complete = shiftu_wr_complete;
	qpx->wr_abort = wr_abort;
	builders_use(b, qpx, false);
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_send_inv = wr_local_inv;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_atomic_write = wr_atomic_write;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	return 0;
}

void shiftu_wr_detach(struct shiftu_vqp *vq)
{
	struct shiftu_wrbatch *b = vq->wb;

	if (!b)
		return;
	vq->wb = NULL;
	free(b->wr);
	free(b->sge);
	free(b->inl);
	free(b);
}
