/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provq.h: a QP's outstanding work read from the provider's own queues
 * (provq.c), so that the data path records nothing.
 */
#ifndef _SHIFTU_PROVQ_H
#define _SHIFTU_PROVQ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "wrid.h"

#include <rdma/rdma_user_rxe.h>

struct shiftu_vqp;

/*
 * Find the send and receive rings of @vq's QP in the provider's memory
 * (Soft-RoCE's, whose format is kernel ABI) and keep them in @vq.
 * Returns 0, or -ENOENT when the provider's layout is not recognised (the
 * QP then copies its requests as they are posted).  Cold: reads
 * /proc/self/maps.  Context: the thread that created the QP.
 */
int shiftu_provq_find(struct shiftu_vqp *vq);

/*
 * Find the ring of SRQ @srq, created with @attr (as granted), in the
 * provider's memory as shiftu_provq_find() does a QP's.  Returns 0 with
 * *@ring set, or -ENOENT.  Cold.
 */
int shiftu_provq_find_srq(struct ibv_srq *srq, const struct ibv_srq_attr *attr,
			  struct rxe_queue_buf **ring);

/*
 * Note where the application's requests end in the provider's rings: the
 * drain calls it on the stopped QP before it posts its markers behind them.
 * Context: fo_lock, the QP in the error state.
 */
void shiftu_provq_mark(struct shiftu_vqp *vq);

/*
 * Copy the last @n_s send and @n_r receive requests the application
 * posted to its QP before shiftu_provq_mark(), which a failover found
 * outstanding, from the provider's rings into @vq's own, as the last
 * entries before head but those a replay left on no QP (@vq->sq_gap),
 * with the two-sided counts the handshake needs.  The move found them
 * there the same way (shiftu_posted_from()).
 * Returns 0, -ERANGE (more than the provider's ring holds) or -EPROTO
 * (one of those slots holds a request of the library's: the positions
 * are not what the counts say).
 * Context: fo_lock.
 */
int shiftu_provq_take(struct shiftu_vqp *vq, uint64_t n_s, uint64_t n_r);

/*
 * The remote keys of the RDMA and atomic requests that send ring @q holds,
 * read while its poster may be writing it (the shadow thread's look ahead,
 * scout.c: a torn key costs a lookup that finds nothing): up to @max
 * distinct non-zero ones go to @out, after the @n there already.  Returns
 * the new count.
 */
unsigned int shiftu_provq_rkeys(const struct rxe_queue_buf *q, uint32_t *out,
				unsigned int n, unsigned int max);

/*
 * Whether the "remote invalid request" that send ring @q's request @wr_id
 * completed with is the transport's: the request is an RDMA WRITE (with or
 * without immediate data) or a SEND (with or without), and a request of
 * the application's of the same kind posted before it since the QP was
 * last reset, at least as long, completed.  Soft-RoCE's responder refuses
 * a WRITE as an invalid request only when the peer's QP grants no remote
 * write or their path MTUs differ (the peer's configuration: then it
 * refuses every WRITE of that length, and the one before would have
 * failed), or when a packet does not continue the message it expects (its
 * place in the sequence lost, rxe_resp.c's check_op_seq() and
 * check_rkey()'s length checks); a SEND, when the same holds of its
 * packets, or when the receive it lands in is shorter than it
 * (RESPST_ERR_LENGTH).  A SEND as long as one the peer's receives took
 * before meets a receive that short only if the peer's application
 * shrank its receives: then the replay on the twins meets it too, and the
 * application gets the error one move later.  Without the library, 6.1's
 * Soft-RoCE gave this refusal to 2 of 8 connections through 200 set_link
 * pulls and silent drops (make soak SOAK_PLAIN=1 SOAK_KINDS=riding,
 * 2026-11-30): it is the transport's own.  The ring is read as the poll
 * that took the error left it: the request's slot, with the status the
 * kernel wrote there, and those before it stay until the application
 * posts a ring's worth more.  Returns what the request was ("an RDMA
 * WRITE", "a SEND") when the refusal is the transport's, else NULL.
 * Context: the poller of the error, cold.
 */
const char *shiftu_provq_desync(const struct rxe_queue_buf *q, uint64_t wr_id);

/*
 * Whether the error @status a poll took with @wr_id, on a QP whose send
 * ring is @sq and receive ring @rq, completed one of its receives (the
 * error completion's opcode is not defined): no request of @sq's
 * completed with that status under that id (Soft-RoCE's requester writes
 * each request's status into its slot), and a receive of @rq's with that
 * id has been taken (a slot behind the consumer index the responder
 * moves).  Context: the poller of the error, cold.
 */
bool shiftu_provq_recv_error(const struct rxe_queue_buf *sq, const struct rxe_queue_buf *rq,
			     uint64_t wr_id, uint32_t status);

#ifdef SHIFTU_TEST_BUILD
/*
 * The test build's reset in place of a QP with work outstanding
 * (shadow.c): a copy of the requests outstanding in ring @q (*@n of them,
 * malloc'd; NULL with *@n 0 when there are none or no memory), posted
 * again in order to @qp once the reset has dropped them, the receives
 * with @post_recv, the sends with @post_send.  Only RDMA WRITEs and
 * SENDs, with or without immediate data or inline, are posted again.
 * Returns 0, -EOPNOTSUPP (another kind) or the post's error.
 */
void *shiftu_provq_save(const struct rxe_queue_buf *q, uint32_t *n);
int shiftu_provq_repost_recvs(struct ibv_qp *qp, const void *saved, uint32_t n,
			      const struct rxe_queue_buf *rq,
			      int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *,
					       struct ibv_recv_wr **));
int shiftu_provq_repost_sends(struct ibv_qp *qp, const void *saved, uint32_t n,
			      const struct rxe_queue_buf *sq,
			      int (*post_send)(struct ibv_qp *, struct ibv_send_wr *,
					       struct ibv_send_wr **));
#endif

/*
 * Add @rkey to the @n distinct keys of @out unless it is there, or zero, or
 * @out holds @max.  Returns the new count.
 */
static inline unsigned int shiftu_rkey_note(uint32_t *out, unsigned int n, unsigned int max,
					    uint32_t rkey)
{
	unsigned int i;

	if (!rkey || n == max)
		return n;
	for (i = 0; i < n; i++)
		if (out[i] == rkey)
			return n;
	out[n] = rkey;
	return n + 1;
}

/*
 * The producer index of send ring @q (vq->psq), which only the QP's poster
 * (and the provider on its behalf) writes.  Read by that poster.
 */
static inline uint32_t shiftu_provq_prod(const struct rxe_queue_buf *q)
{
	return __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED);
}

/*
 * The requests the provider put in send ring @q from index @from to the
 * producer index: their number, in *@two_sided those that consume a
 * receive at the peer (@mask: 1 << opcode of those), and in *@maybe
 * whether any has an id that may be in the library's range
 * (shiftu_wrid_maybe()).  Context: the QP's poster, which wrote them.
 */
static inline uint32_t shiftu_provq_since(const struct rxe_queue_buf *q, uint32_t from,
					  uint32_t mask, uint32_t *two_sided, bool *maybe)
{
	uint32_t n = (shiftu_provq_prod(q) - from) & q->index_mask, i, k = 0;
	const struct rxe_send_wqe *w;
	bool m = false;

	for (i = 0; i < n; i++) {
		w = (const void *)(q->data + ((size_t)((from + i) & q->index_mask) <<
					      q->log2_elem_size));
		k += (mask >> (w->wr.opcode & 31)) & 1;
		m |= shiftu_wrid_maybe(w->wr.wr_id);
		/* a batch of one, the usual: no loop */
		if (__builtin_expect(n == 1, 1))
			break;
	}
	*two_sided = k;
	*maybe = m;
	return n;
}

#endif /* _SHIFTU_PROVQ_H */
