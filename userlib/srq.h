/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * srq.h: shared receive queues and their twins (srq.c).
 *
 * A receive posted to an SRQ can be consumed by any QP attached to it, and
 * a posted receive cannot be recalled through the verbs.  So the receives
 * outstanding on an SRQ can only move to its twin once nothing can consume
 * them where they are: every QP on the SRQ stopped and drained.  This
 * version protects a QP on an SRQ when the SRQ has that one QP (and only
 * on Soft-RoCE, whose SRQ ring the library finds and empties): the SRQ
 * then moves with its QP, and its receives are the QP's receives, counted
 * and moved by the QP's failover as a receive queue's would be.  A QP on
 * an SRQ shared with other QPs is not protected (it runs as without the
 * library; the log says so once per QP).
 */
#ifndef _SHIFTU_SRQ_H
#define _SHIFTU_SRQ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rdma/rdma_user_rxe.h>

struct shiftu_ctx;
struct shiftu_vqp;
struct ibv_wc;

/*
 * The library's record of an SRQ the application created with
 * ibv_create_srq().  Records are never freed (a destroyed SRQ's is kept,
 * @app NULL, and reused), so that the lock-free walk of the post path
 * never reads freed memory; they are pushed with release.
 */
struct shiftu_srq {
	struct ibv_srq *app;		/* NULL: free */
	struct shiftu_srq *next;
	struct shiftu_ctx *sctx;
	uint32_t id;			/* its handle, for the log */
	struct ibv_srq_attr attr;	/* as granted, the library's entry included */
	/* Soft-RoCE's ring of @app (provq.c), NULL if not found */
	struct rxe_queue_buf *ring;
	/* the twin on the backup context (shadow thread; srq_lock) */
	struct ibv_srq *bak;
	struct rxe_queue_buf *bak_ring;
	/*
	 * The one QP on the SRQ, which its receives follow, or NULL (none,
	 * or several: @shared).  Written under srq_lock, read relaxed by the
	 * post path: a QP is attached before the application has it, so
	 * before it can receive.
	 */
	struct shiftu_vqp *vq;
	unsigned int n_qps;
	bool shared;
};

/* The record of @srq, or NULL.  Lock free; any thread. */
struct shiftu_srq *shiftu_srq_find(const struct ibv_srq *srq);

/*
 * ibv_create_srq(): ask for one receive more than the application does
 * (the control receive a two-sided failback puts at the head, handshake.h)
 * and tell it what it asked for.  *@grown says whether to take it back.
 */
void shiftu_srq_caps_ask(struct ibv_srq_init_attr *attr, bool *grown);
void shiftu_srq_caps_tell(struct ibv_srq_init_attr *attr, bool grown);

/*
 * Record @srq, created on @s as @attr says (granted); @room: with the
 * library's entry (shiftu_srq_caps_ask()), without which its QPs are not
 * protected.  Context: the create verb.
 */
void shiftu_srq_attach(struct shiftu_ctx *s, struct ibv_srq *srq,
		       const struct ibv_srq_init_attr *attr, bool room);

/*
 * @srq is about to be resized, which maps its ring anew: the library no
 * longer reads it, and its QP is left unprotected (shiftu_unprotect()).
 * Context: ibv_modify_srq(), before the real one.
 */
void shiftu_srq_resize(struct ibv_srq *srq);

/* Forget @srq, and destroy its twin.  Context: the destroy verb, before the real one. */
void shiftu_srq_detach(struct ibv_srq *srq);

/*
 * QP @vq, created on SRQ @srq, joins it.  Returns NULL when @vq can be
 * protected (the SRQ's first QP, on a ring the library can empty), with
 * @vq->srq set; else why not.  A second QP makes the SRQ shared: its first
 * QP is then left unprotected too (shiftu_unprotect()).  Context: the
 * create verb, before the application has the QP.
 */
const char *shiftu_srq_qp_attach(struct shiftu_vqp *vq, struct ibv_srq *srq);

/* @vq, attached, is not protected after all: its SRQ's posts pass through. */
void shiftu_srq_qp_unlink(struct shiftu_vqp *vq);

/*
 * The receives the application posted to @vq's SRQ before @vq joined it
 * are @vq's: counted, and copied into its ring for a QP that copies its
 * requests (one that reads the provider's rings finds them there).  Context: the
 * create verb, @vq's rings made, before the application has the QP.
 */
void shiftu_srq_adopt(struct shiftu_vqp *vq);

/* @vq's QP is destroyed: it leaves its SRQ.  Context: the destroy verb. */
void shiftu_srq_qp_detach(struct shiftu_vqp *vq);

/*
 * The twin of @vq's SRQ on the backup context, made on @bak_pd (the twin
 * of the SRQ's protection domain) the first time.  NULL, with a line
 * saying why, if there is none.  Context: the shadow thread.
 */
struct ibv_srq *shiftu_srq_twin(struct shiftu_vqp *vq, struct ibv_pd *bak_pd);

/*
 * vq->post_recv of a QP on an SRQ: the provider's post to the QP's SRQ
 * (on the application's context).  Cold: the post path calls the
 * provider's post_srq_recv itself.
 */
int shiftu_srq_qp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr);

/* A receive on @vq's twin: to its SRQ's twin if it has one. */
int shiftu_twin_post_recv(struct shiftu_vqp *vq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/*
 * A move stopped and drained @vq's QP on the side it leaves (the default
 * QP, or the twin with @twin), which is the only QP on that side's SRQ:
 * nothing consumes from the SRQ any more.  How many receives are
 * outstanding (*@n_r: posted, less those counted complete), and how many
 * of them the NIC had taken from the SRQ and flushed (*@f: 0, or 1, a
 * message cut in the middle), from the @n error completions the drain
 * collected in @flushed (@nr of them receives, when the QP's two CQs tell
 * them apart, else -1).  The SRQ's ring tells which: what it still holds
 * of the application's is outstanding and not taken.  Returns 0, or
 * -EPROTO when the counts do not add up.  Context: fo_lock and the CQs'
 * locks held.
 */
int shiftu_srq_outstanding(struct shiftu_vqp *vq, bool twin, const struct ibv_wc *flushed,
			   unsigned int stride, int n, int nr, uint64_t *n_r, uint32_t *f);

/*
 * Empty the SRQ of the side @vq's move leaves: its producer index back to
 * the NIC's consumer index.  The receives it held are reposted on the other
 * side by the move; none can be consumed here any more.  Context: as
 * above, once the move cannot fail before it reposts them.
 */
void shiftu_srq_rewind(struct shiftu_vqp *vq, bool twin);

/*
 * Empty the twin's SRQ as @vq's twin is reset (shiftu_twin_renew()), as a
 * reset empties a receive queue.  Context: the twin in the reset state.
 */
void shiftu_srq_twin_reset(struct shiftu_vqp *vq);

#endif /* _SHIFTU_SRQ_H */
