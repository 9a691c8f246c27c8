// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * srq.c: shared receive queues, and the twins of those the library
 * protects (srq.h).
 *
 * A receive posted to an SRQ is consumed by whichever QP on it takes a
 * message first, and a posted receive cannot be recalled through the
 * verbs.  Copies of an SRQ's outstanding receives posted to its twin while
 * any QP still consumes from the SRQ could have one buffer filled twice.
 * So the receives move only when nothing can consume them where they are:
 * here, when the SRQ's only QP has been stopped and drained by its move.
 * Then the SRQ is inert, and what it holds is known exactly:
 *
 * - Soft-RoCE's SRQ ring is shared with the kernel in the format of
 *   <rdma/rdma_user_rxe.h>; the kernel reads the producer index from the
 *   ring every time it takes a receive (smp_load_acquire, rxe_queue.h)
 *   and publishes its consumer index there once it has copied the receive
 *   out (get_srq_wqe(), under the SRQ's consumer lock).  A QP in the error
 *   state takes no more (check_resource() in rxe_resp.c) and does not
 *   flush the SRQ: only the receive a message was cut in the middle of,
 *   which the kernel had taken, completes flushed.
 * - The application's receives still in the ring are outstanding and were
 *   not taken; the QP's receives posted and not counted complete are
 *   outstanding; the difference, 0 or 1, is the receive the NIC took and
 *   flushed.  The counts are the QP's (struct shiftu_vqp: rq.head,
 *   consumed), since its SRQ's receives are its own; receive completions
 *   are counted as they are polled (shiftu_wc_look): a drain cannot count
 *   receives by their flushes when an SRQ flushes none.
 * - Once the move has read them (the provider's ring, or the copies the
 *   library made), the SRQ's producer index goes back to the NIC's
 *   consumer index: the SRQ is empty, and nothing it held can be consumed
 *   on this side again.  librxe keeps no copy of the index
 *   (providers/rxe/rxe_queue.h reads the ring's under the SRQ's lock); the
 *   library's own posts go through the window that every move waits for.
 *
 * Moving a group of QPs that share an SRQ together is not done yet: such
 * QPs are not protected.  A QP whose SRQ has no ring the library knows
 * (another provider) is not either: it could not empty it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "failover.h"
#include "fork.h"
#include "interpose.h"
#include "log.h"
#include "provq.h"
#include "serial.h"
#include "srq.h"
#include "wrid.h"

/* The records, newest first: pushed with release, never freed. */
static struct shiftu_srq *srq_list;
/* A leaf (interpose.h): guards the records' QP links and twins; fork.h. */
pthread_mutex_t srq_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct rxe_recv_wqe *slot(const struct rxe_queue_buf *q, uint32_t i)
{
	return (const void *)(q->data + ((size_t)(i & q->index_mask) << q->log2_elem_size));
}

struct shiftu_srq *shiftu_srq_find(const struct ibv_srq *srq)
{
	/* pairs with the release in shiftu_srq_attach() */
	struct shiftu_srq *r = __atomic_load_n(&srq_list, __ATOMIC_ACQUIRE);

	while (r && __atomic_load_n(&r->app, __ATOMIC_ACQUIRE) != srq)
		r = r->next;
	return r;
}

void shiftu_srq_caps_ask(struct ibv_srq_init_attr *attr, bool *grown)
{
	*grown = true;
	attr->attr.max_wr++;
}

void shiftu_srq_caps_tell(struct ibv_srq_init_attr *attr, bool grown)
{
	if (grown)
		attr->attr.max_wr--;
}


void shiftu_srq_attach(struct shiftu_ctx *s, struct ibv_srq *srq,
		       const struct ibv_srq_init_attr *attr, bool room)
{
	struct rxe_queue_buf *ring = NULL;
	struct shiftu_srq *r;
	bool fresh = false;

	/* without its entry for a failback's control receive, no protection */
	if (room && shiftu_provq_find_srq(srq, &attr->attr, &ring))
		ring = NULL;
	pthread_mutex_lock(&srq_lock);
	for (r = srq_list; r && r->app; r = r->next)
		;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&srq_lock);
			shiftu_warn("srq %u on %s: out of memory: its QPs are not protected",
				    srq->handle, s->dev_name);
			return;
		}
		r->next = srq_list;
		fresh = true;
	}
	r->sctx = s;
	r->id = srq->handle;
	r->attr = attr->attr;
	r->ring = ring;
	r->bak = NULL;
	r->bak_ring = NULL;
	r->vq = NULL;
	r->n_qps = 0;
	r->shared = false;
	/* the record is whole before a walker can match it */
	__atomic_store_n(&r->app, srq, __ATOMIC_RELEASE);
	if (fresh)
		__atomic_store_n(&srq_list, r, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&srq_lock);
	shiftu_dbg("srq %u on %s: %u receives%s", srq->handle, s->dev_name, attr->attr.max_wr,
		   ring ? ", its ring found" : ", no ring the library can empty");
}

void shiftu_srq_resize(struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	struct shiftu_vqp *vq;

	if (!r)
		return;
	pthread_mutex_lock(&srq_lock);
	vq = __atomic_load_n(&r->vq, __ATOMIC_RELAXED);
	__atomic_store_n(&r->vq, NULL, __ATOMIC_RELAXED);
	r->ring = NULL;
	pthread_mutex_unlock(&srq_lock);
	if (vq)
		shiftu_unprotect(vq, "its SRQ is resized");
}

void shiftu_srq_detach(struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	struct ibv_srq *bak;

	if (!r)
		return;
	pthread_mutex_lock(&srq_lock);
	bak = r->bak;
	r->bak = NULL;
	r->bak_ring = NULL;
	__atomic_store_n(&r->vq, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&r->app, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&srq_lock);
	/* its QPs are gone (the verbs refuse to destroy an SRQ in use), their twins with them */
	if (bak && shiftu_real.destroy_srq(bak))
		shiftu_warn("srq %u: cannot destroy its twin", r->id);
}

const char *shiftu_srq_qp_attach(struct shiftu_vqp *vq, struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	struct shiftu_vqp *first = NULL;
	const char *why = NULL;

	if (!r)
		return "its SRQ was not made by ibv_create_srq";
	/* its receive queue is the SRQ: the rings and the drain size by it */
	vq->init_attr.cap.max_recv_wr = r->attr.max_wr;
	vq->init_attr.cap.max_recv_sge = r->attr.max_sge;
	pthread_mutex_lock(&srq_lock);
	r->n_qps++;
	vq->srq = r;
	if (r->n_qps > 1) {
		if (!r->shared)
			first = r->vq;
		r->shared = true;
		__atomic_store_n(&r->vq, NULL, __ATOMIC_RELAXED);
		why = "it shares its SRQ with another QP";
	} else if (!r->ring) {
		why = "its SRQ's ring is not one the library can empty";
	} else {
		/* before the application has the QP, so before it receives */
		__atomic_store_n(&r->vq, vq, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&srq_lock);
	if (first)
		shiftu_unprotect(first, "it shares its SRQ with another QP");
	return why;
}

void shiftu_srq_qp_unlink(struct shiftu_vqp *vq)
{
	struct shiftu_srq *r = vq->srq;

	if (!r)
		return;
	pthread_mutex_lock(&srq_lock);
	if (__atomic_load_n(&r->vq, __ATOMIC_RELAXED) == vq)
		__atomic_store_n(&r->vq, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&srq_lock);
}

void shiftu_srq_qp_detach(struct shiftu_vqp *vq)
{
	struct shiftu_srq *r = vq->srq;

	if (!r)
		return;
	pthread_mutex_lock(&srq_lock);
	if (r->n_qps)
		r->n_qps--;
	if (__atomic_load_n(&r->vq, __ATOMIC_RELAXED) == vq)
		__atomic_store_n(&r->vq, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&srq_lock);
	vq->srq = NULL;
}

struct ibv_srq *shiftu_srq_twin(struct shiftu_vqp *vq, struct ibv_pd *bak_pd)
{
	struct shiftu_srq *r = vq->srq;
	struct ibv_srq_init_attr a = { .attr = r->attr };
	struct rxe_queue_buf *ring;
	struct ibv_srq *bak;

	if (r->bak)
		return r->bak;
	if (!bak_pd)
		return NULL;
	/* the same entries: the application's, and the control receive */
	a.attr.srq_limit = 0;
	bak = shiftu_real.create_srq(bak_pd, &a);
	if (!bak) {
		shiftu_warn("srq %u on %s: cannot create its twin on %s: %s",
			    r->id, r->sctx->dev_name, r->sctx->bak_name, strerror(errno));
		return NULL;
	}
	if (shiftu_provq_find_srq(bak, &a.attr, &ring)) {
		shiftu_warn("srq %u on %s: its twin's ring is not one the library can empty",
			    r->id, r->sctx->dev_name);
		shiftu_real.destroy_srq(bak);
		return NULL;
	}
	pthread_mutex_lock(&srq_lock);
	r->bak = bak;
	r->bak_ring = ring;
	pthread_mutex_unlock(&srq_lock);
	shiftu_info("srq %u on %s: twin srq %u on %s (%u receives)", r->id,
		    r->sctx->dev_name, bak->handle, r->sctx->bak_name, a.attr.max_wr);
	return bak;
}

void shiftu_srq_adopt(struct shiftu_vqp *vq)
{
	const struct rxe_queue_buf *q = vq->srq->ring;
	uint32_t prod, cons, i, k, n = 0;

	prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	for (i = cons; i != prod && n <= vq->rq.mask; i = (i + 1) & q->index_mask, n++) {
		const struct rxe_recv_wqe *w = slot(q, i);
		struct shiftu_rwqe *e = shiftu_rwqe_at(&vq->rq, vq->rq.head);

		e->wr_id = w->wr_id;
		e->num_sge = w->dma.num_sge < vq->init_attr.cap.max_recv_sge ?
				     w->dma.num_sge : vq->init_attr.cap.max_recv_sge;
		for (k = 0; k < e->num_sge; k++) {
			e->sge[k].addr = w->dma.sge[k].addr;
			e->sge[k].length = w->dma.sge[k].length;
			e->sge[k].lkey = w->dma.sge[k].lkey;
		}
		vq->rq.head++;
	}
	if (n)
		shiftu_dbg("qp %u: %u receives already on its SRQ are its own",
			   vq->reg.app_qp->qp_num, n);
}

int shiftu_srq_qp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	struct shiftu_ctx *s = shiftu_ctx_find(qp->context);

	if (!s || !qp->srq || !s->post_srq_recv) {
		*bad_wr = wr;
		return EINVAL;
	}
	return s->post_srq_recv(qp->srq, wr, bad_wr);
}

int shiftu_twin_post_recv(struct shiftu_vqp *vq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct ibv_qp *t = vq->bak_qp;

	/* the provider's own: the backup context's ops are not the library's */
	if (t->srq)
		return t->context->ops.post_srq_recv(t->srq, wr, bad_wr);
	return t->context->ops.post_recv(t, wr, bad_wr);
}

static struct rxe_queue_buf *side_ring(const struct shiftu_vqp *vq, bool twin)
{
	return twin ? vq->srq->bak_ring : vq->srq->ring;
}

int shiftu_srq_outstanding(struct shiftu_vqp *vq, bool twin, const struct ibv_wc *flushed,
			   unsigned int stride, int n, int nr, uint64_t *n_r, uint32_t *f)
{
	const struct rxe_queue_buf *q = side_ring(vq, twin);
	uint32_t prod, cons, i, app = 0, lib = 0;
	uint64_t wr_id;
	int k;

	if (!q)
		return -EPROTO;
	/* only this move posts to it now; the NIC's index, published with release */
	prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	for (i = cons; i != prod; i = (i + 1) & q->index_mask) {
		if (shiftu_wrid_kind(slot(q, i)->wr_id) != SHIFTU_WRID_APP)
			lib++;
		else
			app++;
	}
	*n_r = vq->rq.head - __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	/*
	 * The NIC takes receives in order: one it took and flushed is the
	 * oldest outstanding, and follows any control receive of ours.
	 */
	if (shiftu_seq64_lt(*n_r, app) || *n_r - app > 1 || (*n_r != app && lib)) {
		shiftu_warn("qp %u: %" PRIu64 " receives outstanding, its SRQ holds %u (%u of the library's)",
			    vq->reg.app_qp->qp_num, *n_r, app, lib);
		return -EPROTO;
	}
	*f = *n_r - app;
	if (nr >= 0) {
		if (nr == (int)*f)
			return 0;
		shiftu_warn("qp %u: %d receives flushed, its SRQ says %u",
			    vq->reg.app_qp->qp_num, nr, *f);
		return -EPROTO;
	}
	if (!*f)
		return 0;
	/* one CQ for both queues: the flushed receive must be among the flushed */
	wr_id = slot(q, cons - 1)->wr_id;
	for (k = 0; k < n; k++)
		if (((const struct ibv_wc *)((const char *)flushed + (size_t)k * stride))->wr_id ==
		    wr_id)
			return 0;
	shiftu_warn("qp %u: the receive its NIC took from its SRQ is not among the %d flushed",
		    vq->reg.app_qp->qp_num, n);
	return -EPROTO;
}

void shiftu_srq_rewind(struct shiftu_vqp *vq, bool twin)
{
	struct rxe_queue_buf *q = side_ring(vq, twin);
	uint32_t cons;

	if (!q)
		return;
	cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	/* the kernel loads it with acquire before it takes a receive */
	__atomic_store_n(&q->producer_index, cons, __ATOMIC_RELEASE);
}

void shiftu_srq_twin_reset(struct shiftu_vqp *vq)
{
	if (vq->srq && vq->srq->bak_ring)
		shiftu_srq_rewind(vq, true);
}
