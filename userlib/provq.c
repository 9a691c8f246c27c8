// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * provq.c: a failed QP's outstanding work, read from the provider's own
 * queues, so that the data path copies nothing as it posts.
 *
 * Soft-RoCE's send and receive queues are rings its provider shares with
 * the kernel through mmap(2) of the uverbs device, in a format that is
 * kernel ABI (<rdma/rdma_user_rxe.h>: struct rxe_queue_buf, rxe_send_wqe,
 * rxe_recv_wqe).  A request stays in its slot after it completes or is
 * flushed, until the slot is used again (the ring has more slots than the
 * QP has entries) or the QP is reset.  So the n requests a failover's drain
 * flushed are the n slots before the producer index as it was when the
 * drain stopped the QP (before its markers), and shiftu_provq_take()
 * copies them into the library's ring then, once.
 * The data path only counts (post.c).  It cannot leave even that to
 * the producer indices: rxe keeps them modulo the ring's size.
 *
 * Where the provider keeps a ring's address is not ABI.  librxe keeps, in
 * its QP object after the struct ibv_qp, each ring's struct mminfo (the
 * mmap offset and size the kernel answered, ABI) followed by the ring's
 * address; rdma-core has laid out the receive ring's before the send
 * ring's since the provider was written.  shiftu_provq_find() looks for
 * exactly that: an address that starts a mapping of
 * /dev/infiniband/uverbs* whose file offset and length are the mminfo's
 * before it, with a ring header that agrees with the QP's capabilities.
 * Another provider or another layout finds nothing, and that QP copies
 * each request as it is posted instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_user_rxe.h>

#include "log.h"
#include "provq.h"
#include "vqpstate.h"
#include "wrid.h"

/* How far past the struct ibv_qp the provider's object is searched. */
#define SCAN_BYTES	2048
#define MAX_MAPS	4096

struct map {
	uintptr_t start, end;
	uint64_t off;
	int uverbs;
};

/* The process's mappings; *@n of them.  Returns NULL on failure. */
static struct map *read_maps(int *n)
{
	struct map *m = calloc(MAX_MAPS, sizeof(*m));
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int k = 0;

	if (!m || !f)
		goto err;
	while (k < MAX_MAPS && fgets(line, sizeof(line), f)) {
		unsigned long s, e, off;

		if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &off) != 3)
			continue;
		m[k].start = s;
		m[k].end = e;
		m[k].off = off;
		m[k].uverbs = strstr(line, " /dev/infiniband/uverbs") != NULL;
		k++;
	}
	fclose(f);
	*n = k;
	return m;
err:
	if (f)
		fclose(f);
	free(m);
	return NULL;
}

static const struct map *map_at(const struct map *m, int n, uintptr_t a)
{
	int i;

	for (i = 0; i < n; i++)
		if (m[i].start <= a && a < m[i].end)
			return &m[i];
	return NULL;
}

/* A ring of at least @entries + 1 slots of at least @elem bytes in @size. */
static bool ring_fits(const struct rxe_queue_buf *q, uint32_t size,
		      size_t elem, uint32_t entries)
{
	uint32_t mask = q->index_mask, lg = q->log2_elem_size;

	return (mask & (mask + 1)) == 0 && mask >= entries && lg < 24 &&
	       ((size_t)1 << lg) >= elem &&
	       sizeof(*q) + ((size_t)(mask + 1) << lg) <= size;
}

/*
 * Up to @max rings of the provider's object at @base, whose public part
 * (struct ibv_qp, struct ibv_srq) is @pub bytes long: each a struct mminfo
 * followed by the address of a mapping of /dev/infiniband/uverbs* with
 * that offset and length, in the provider's order.  Returns how many, or
 * -ENOENT.
 */
static int scan_rings(const char *base, size_t pub, const struct rxe_queue_buf **found,
		      uint32_t *sizes, int max)
{
	const char *p, *end;
	const struct map *heap;
	struct map *maps;
	int n, nf = 0;

	maps = read_maps(&n);
	if (!maps)
		return -ENOENT;
	heap = map_at(maps, n, (uintptr_t)base);
	if (!heap)
		goto out;
	end = base + SCAN_BYTES;
	if ((uintptr_t)end > heap->end)
		end = (const char *)heap->end;
	p = base + ((pub + 7) & ~7UL);
	for (; p + sizeof(struct mminfo) + sizeof(void *) <= end && nf < max; p += 8) {
		const struct map *m;
		struct mminfo mi;
		uintptr_t a;

		memcpy(&mi, p, sizeof(mi));
		memcpy(&a, p + sizeof(mi), sizeof(a));
		if (!mi.size || !a)
			continue;
		m = map_at(maps, n, a);
		if (!m || !m->uverbs || m->start != a || m->off != mi.offset ||
		    mi.size > m->end - m->start)
			continue;
		sizes[nf] = mi.size;
		found[nf++] = (const struct rxe_queue_buf *)a;
	}
out:
	free(maps);
	return nf;
}

int shiftu_provq_find(struct shiftu_vqp *vq)
{
	const struct ibv_qp_cap *cap = &vq->init_attr.cap;
	const struct rxe_queue_buf *found[2];
	uint32_t sizes[2];
	bool rq = !vq->init_attr.srq;
	int nf;

	nf = scan_rings((const char *)vq->reg.app_qp, sizeof(struct ibv_qp), found, sizes, 2);
	if (nf != 1 + rq)
		return -ENOENT;
	if (!ring_fits(found[rq], sizes[rq], sizeof(struct rxe_send_wqe) +
		       (cap->max_send_sge * sizeof(struct rxe_sge) > cap->max_inline_data ?
			cap->max_send_sge * sizeof(struct rxe_sge) : cap->max_inline_data),
		       cap->max_send_wr))
		return -ENOENT;
	if (rq && !ring_fits(found[0], sizes[0], sizeof(struct rxe_recv_wqe) +
			     cap->max_recv_sge * sizeof(struct rxe_sge), cap->max_recv_wr))
		return -ENOENT;
	vq->psq = found[rq];
	vq->prq = rq ? found[0] : NULL;
	return 0;
}

int shiftu_provq_find_srq(struct ibv_srq *srq, const struct ibv_srq_attr *attr,
			  struct rxe_queue_buf **ring)
{
	const struct rxe_queue_buf *found[1];
	uint32_t sizes[1];

	if (scan_rings((const char *)srq, sizeof(struct ibv_srq), found, sizes, 1) != 1 ||
	    !ring_fits(found[0], sizes[0], sizeof(struct rxe_recv_wqe) +
		       attr->max_sge * sizeof(struct rxe_sge), attr->max_wr))
		return -ENOENT;
	/* the library empties it (srq.c): not const */
	*ring = (struct rxe_queue_buf *)found[0];
	return 0;
}

static const void *slot(const struct rxe_queue_buf *q, uint32_t i)
{
	return q->data + ((size_t)(i & q->index_mask) << q->log2_elem_size);
}

static void take_send(struct shiftu_vqp *vq, const struct rxe_send_wqe *w,
		      struct shiftu_swqe *e, uint64_t seq2)
{
	struct shiftu_ring *r = &vq->sq;
	uint32_t i, max_sge = vq->init_attr.cap.max_send_sge;
	uint32_t op = w->wr.opcode;

	e->wr_id = w->wr.wr_id;
	e->opcode = op;
	e->send_flags = w->wr.send_flags;
	e->imm_data = w->wr.ex.imm_data;
	if (shiftu_wr_atomic(op)) {
		e->remote_addr = w->wr.wr.atomic.remote_addr;
		e->rkey = w->wr.wr.atomic.rkey;
		e->compare_add = w->wr.wr.atomic.compare_add;
		e->swap = w->wr.wr.atomic.swap;
	} else {
		e->remote_addr = w->wr.wr.rdma.remote_addr;
		e->rkey = w->wr.wr.rdma.rkey;
	}
	e->seq2 = seq2;
	if (w->wr.send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = (uint8_t *)&e->sge[max_sge];
		uint32_t len = w->dma.length;
		uint32_t room = r->stride - sizeof(*e) - max_sge * sizeof(e->sge[0]);

		if (len > room)
			len = room;	/* the provider refused more */
		memcpy(dst, w->dma.inline_data, len);
		e->num_sge = 1;
		e->sge[0].addr = (uintptr_t)dst;
		e->sge[0].length = len;
		e->sge[0].lkey = 0;
		return;
	}
	e->num_sge = w->dma.num_sge < max_sge ? w->dma.num_sge : max_sge;
	for (i = 0; i < e->num_sge; i++) {
		e->sge[i].addr = w->dma.sge[i].addr;
		e->sge[i].length = w->dma.sge[i].length;
		e->sge[i].lkey = w->dma.sge[i].lkey;
	}
}

static void take_recv(struct shiftu_vqp *vq, const struct rxe_recv_wqe *w,
		      struct shiftu_rwqe *e)
{
	uint32_t i, max_sge = vq->init_attr.cap.max_recv_sge;

	e->wr_id = w->wr_id;
	e->num_sge = w->dma.num_sge < max_sge ? w->dma.num_sge : max_sge;
	for (i = 0; i < e->num_sge; i++) {
		e->sge[i].addr = w->dma.sge[i].addr;
		e->sge[i].length = w->dma.sge[i].length;
		e->sge[i].lkey = w->dma.sge[i].lkey;
	}
}

unsigned int shiftu_provq_rkeys(const struct rxe_queue_buf *q, uint32_t *out,
				unsigned int n, unsigned int max)
{
	uint32_t i, op, rkey;

	for (i = 0; i <= q->index_mask && n < max; i++) {
		const struct rxe_send_wqe *w = slot(q, i);

		op = __atomic_load_n(&w->wr.opcode, __ATOMIC_RELAXED);
		if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			rkey = __atomic_load_n(&w->wr.wr.atomic.rkey, __ATOMIC_RELAXED);
		else if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
			 op == IBV_WR_RDMA_READ)
			rkey = __atomic_load_n(&w->wr.wr.rdma.rkey, __ATOMIC_RELAXED);
		else
			continue;
		n = shiftu_rkey_note(out, n, max, rkey);
	}
	return n;
}

/*
 * The kind of request a refused one is compared with: an RDMA WRITE (its
 * remote access, length and packet order are all the responder checks of
 * it) or a SEND (its length against the receive, and its packet order);
 * 0 for the others, which a refusal always leaves the application's.
 */
static uint32_t desync_kind(uint32_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return 1;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return 2;
	default:
		return 0;
	}
}

/* A slot the provider has not written since the QP's reset zeroed it. */
static bool slot_empty(const struct rxe_send_wqe *w)
{
	return !w->wr.wr_id && !w->wr.opcode && !w->dma.length && !w->dma.num_sge;
}

const char *shiftu_provq_desync(const struct rxe_queue_buf *q, uint64_t wr_id)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	uint32_t k, mask = q->index_mask, len = 0, kind = 0;
	const struct rxe_send_wqe *w;

	/*
	 * The completed slots, newest first: past those still outstanding,
	 * back to the oldest the provider has not begun to write again (the
	 * slot at the producer index may be under its pen).
	 */
	for (k = ((prod - cons) & mask) + 1; k <= mask; k++) {
		w = slot(q, prod - k);
		if (!kind) {
			if (w->wr.wr_id != wr_id ||
			    __atomic_load_n(&w->status, __ATOMIC_RELAXED) != IBV_WC_REM_INV_REQ_ERR)
				continue;
			kind = desync_kind(w->wr.opcode);
			/* an empty request proves nothing by its length */
			if (!kind || !w->dma.length)
				return NULL;
			len = w->dma.length;
			continue;
		}
		/* before the QP's last reset: another connection's */
		if (slot_empty(w))
			return NULL;
		/* one that failed too is no evidence: it may be the same fault */
		if (shiftu_wrid_app(w->wr.wr_id) &&
		    __atomic_load_n(&w->status, __ATOMIC_RELAXED) == IBV_WC_SUCCESS &&
		    desync_kind(w->wr.opcode) == kind && w->dma.length >= len)
			return kind == 1 ? "an RDMA WRITE" : "a SEND";
	}
	return NULL;
}

bool shiftu_provq_recv_error(const struct rxe_queue_buf *sq, const struct rxe_queue_buf *rq,
			     uint64_t wr_id, uint32_t status)
{
	uint32_t prod = __atomic_load_n(&sq->producer_index, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&sq->consumer_index, __ATOMIC_ACQUIRE);
	uint32_t k;

	/* the completed send slots, as shiftu_provq_desync() reads them */
	for (k = ((prod - cons) & sq->index_mask) + 1; k <= sq->index_mask; k++) {
		const struct rxe_send_wqe *w = slot(sq, prod - k);

		if (w->wr.wr_id == wr_id && __atomic_load_n(&w->status, __ATOMIC_RELAXED) == status)
			return false;
	}
	/* the taken receive slots, newest first, back to the oldest the
	 * application has not posted into again */
	prod = __atomic_load_n(&rq->producer_index, __ATOMIC_ACQUIRE);
	cons = __atomic_load_n(&rq->consumer_index, __ATOMIC_ACQUIRE);
	for (k = 1; k <= rq->index_mask - ((prod - cons) & rq->index_mask); k++) {
		const struct rxe_recv_wqe *r = slot(rq, cons - k);

		if (r->wr_id == wr_id)
			return true;
	}
	return false;
}

#ifdef SHIFTU_TEST_BUILD
void *shiftu_provq_save(const struct rxe_queue_buf *q, uint32_t *n)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	size_t elem = (size_t)1 << q->log2_elem_size;
	uint32_t k, count = (prod - cons) & q->index_mask;
	char *out;

	*n = 0;
	if (!count || !(out = malloc(count * elem)))
		return NULL;
	for (k = 0; k < count; k++)
		memcpy(out + k * elem, slot(q, cons + k), elem);
	*n = count;
	return out;
}

/* at most this many scatter entries a request posted again */
#define REPOST_SGE	16

/* The scatter list of a request's @dma as the verbs take it; its length. */
static int repost_sges(const struct rxe_dma_info *dma, struct ibv_sge *sge)
{
	uint32_t i;

	for (i = 0; i < dma->num_sge && i < REPOST_SGE; i++)
		sge[i] = (struct ibv_sge){ .addr = dma->sge[i].addr,
					   .length = dma->sge[i].length,
					   .lkey = dma->sge[i].lkey };
	return (int)i;
}

int shiftu_provq_repost_recvs(struct ibv_qp *qp, const void *saved, uint32_t n,
			      const struct rxe_queue_buf *rq,
			      int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *,
					       struct ibv_recv_wr **))
{
	size_t elem = (size_t)1 << rq->log2_elem_size;
	struct ibv_sge sge[REPOST_SGE];
	struct ibv_recv_wr wr, *bad;
	uint32_t k;
	int ret;

	for (k = 0; k < n; k++) {
		const struct rxe_recv_wqe *w = (const void *)((const char *)saved + k * elem);

		wr = (struct ibv_recv_wr){ .wr_id = w->wr_id, .sg_list = sge,
					   .num_sge = repost_sges(&w->dma, sge) };
		ret = post_recv(qp, &wr, &bad);
		if (ret)
			return -ret;
	}
	return 0;
}

int shiftu_provq_repost_sends(struct ibv_qp *qp, const void *saved, uint32_t n,
			      const struct rxe_queue_buf *sq,
			      int (*post_send)(struct ibv_qp *, struct ibv_send_wr *,
					       struct ibv_send_wr **))
{
	size_t elem = (size_t)1 << sq->log2_elem_size;
	struct ibv_sge sge[REPOST_SGE];
	struct ibv_send_wr wr, *bad;
	uint32_t k;
	int ret;

	for (k = 0; k < n; k++) {
		const struct rxe_send_wqe *w = (const void *)((const char *)saved + k * elem);

		if (!desync_kind(w->wr.opcode))
			return -EOPNOTSUPP;
		wr = (struct ibv_send_wr){
			.wr_id = w->wr.wr_id, .sg_list = sge,
			.opcode = (enum ibv_wr_opcode)w->wr.opcode,
			.send_flags = w->wr.send_flags,
			.imm_data = w->wr.ex.imm_data,
		};
		wr.wr.rdma.remote_addr = w->wr.wr.rdma.remote_addr;
		wr.wr.rdma.rkey = w->wr.wr.rdma.rkey;
		if (w->wr.send_flags & IBV_SEND_INLINE) {
			/* the provider copies inline data as it posts */
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)w->dma.inline_data,
						   .length = w->dma.length };
			wr.num_sge = 1;
		} else {
			wr.num_sge = repost_sges(&w->dma, sge);
		}
		ret = post_send(qp, &wr, &bad);
		if (ret)
			return -ret;
	}
	return 0;
}
#endif

void shiftu_provq_mark(struct shiftu_vqp *vq)
{
	/* the provider published its slots before the producer index */
	vq->psq_mark = __atomic_load_n(&vq->psq->producer_index, __ATOMIC_ACQUIRE);
	if (vq->prq)
		vq->prq_mark = __atomic_load_n(&vq->prq->producer_index, __ATOMIC_ACQUIRE);
}

int shiftu_provq_take(struct shiftu_vqp *vq, uint64_t n_s, uint64_t n_r)
{
	const struct rxe_queue_buf *sq = vq->psq, *rq = vq->prq;
	uint64_t k, at = vq->sq.head, seq2 = vq->sent2, skipped;
	uint32_t prod;

	if (n_s > (uint64_t)sq->index_mask + 1 || n_s > vq->sq.mask + 1 ||
	    (n_r && (!rq || n_r > (uint64_t)rq->index_mask + 1 || n_r > vq->rq.mask + 1)))
		return -ERANGE;
	prod = vq->psq_mark;
	for (k = 1; k <= n_s; k++) {
		const struct rxe_send_wqe *w = slot(sq, prod - k);

		if (!shiftu_wrid_app(w->wr.wr_id))
			return -EPROTO;
		/* those a replay completed without posting them were recorded
		 * then, and are not in the provider's ring (proto.h) */
		skipped = 0;
		at = shiftu_posted_prev(&vq->sq, &vq->sq_gap, at, &skipped);
		seq2 -= skipped;
		take_send(vq, w, shiftu_swqe_at(&vq->sq, at), seq2);
		if (SHIFTU_TWO_SIDED & (1U << (w->wr.opcode & 31)))
			seq2--;
	}
	if (!n_r)
		return 0;
	prod = vq->prq_mark;
	for (k = 1; k <= n_r; k++) {
		const struct rxe_recv_wqe *w = slot(rq, prod - k);

		if (!shiftu_wrid_app(w->wr_id))
			return -EPROTO;
		take_recv(vq, w, shiftu_rwqe_at(&vq->rq, vq->rq.head - k));
	}
	return 0;
}
