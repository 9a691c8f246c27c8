/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * srq.h: shared receive queues, their tables and their twins (srq.c).
 *
 * A receive posted to an SRQ is consumed by whichever QP on it takes a
 * message first, and a posted receive cannot be recalled through the
 * verbs.  So the library keeps every receive the application posts to an
 * SRQ in the SRQ's table (srqtab.h), posts it on one side only (the SRQ,
 * or its twin on the backup port) under an id of the library's, and gives
 * the application its own id back with the completion.  The QPs on the
 * SRQ move one by one, as QPs without one do; a side's SRQ is emptied only
 * when no QP is left on that side to consume from it, and what it held
 * moves to the other side (Soft-RoCE's ring, which the library reads and
 * empties, lists it).  A QP's move reposts on its new side the receive its
 * NIC had taken for a message cut in the middle (it completes flushed,
 * under the library's id).
 *
 * The peer's control messages to a QP on an SRQ (handshake.h), on either
 * side, come to the QP's mailbox there (box.c), not to a receive: a
 * control receive of the library's in the SRQ could be taken by a message
 * of another QP's peer, and an application's receive may not be there yet
 * (the SRQ's receives stay where QPs still consume them).  No receive of
 * the library's ever goes into an SRQ.
 *
 * Needs Soft-RoCE's SRQ ring (another provider's SRQ cannot be emptied)
 * and an SRQ made with ibv_create_srq; other SRQs pass through, their QPs
 * unprotected, and the log says so once per QP.
 */
#ifndef _SHIFTU_SRQ_H
#define _SHIFTU_SRQ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rdma/rdma_user_rxe.h>

#include "srqstate.h"
#include "srqtab.h"

struct shiftu_ctx;
struct shiftu_vqp;
struct ibv_wc;

/* The record of @srq, or NULL.  Lock free; any thread. */
struct shiftu_srq *shiftu_srq_find(const struct ibv_srq *srq);

/*
 * Record @srq, created on @s as @attr says (granted), with its table if it
 * can have one.  Context: the create verb, before the application has the
 * SRQ.
 */
void shiftu_srq_attach(struct shiftu_ctx *s, struct ibv_srq *srq,
		       const struct ibv_srq_init_attr *attr);

/*
 * @srq is about to be resized, which maps its ring anew: the library can
 * no longer empty it, and its QPs are left unprotected
 * (shiftu_unprotect()); its receives still go through its table.
 * Context: ibv_modify_srq(), before the real one.
 */
void shiftu_srq_resize(struct ibv_srq *srq);

/* Forget @srq, and destroy its twin.  Context: the destroy verb, after the real one. */
void shiftu_srq_detach(struct ibv_srq *srq);

/*
 * ibv_post_srq_recv() to a recorded SRQ, under srq_lock (its common path
 * is shut, @r->slow, or found the cursor's entry posted, or @wr is not one
 * receive of one entry): each receive entered in its table and posted on
 * the side the table picks; one the table cannot take fails as the
 * provider would (ENOMEM full, EINVAL too many entries).  An SRQ without
 * a table: the provider's post.  Returns 0 or an errno, with *@bad_wr the
 * first not posted.  Context: the caller's post window closed.
 */
int shiftu_srq_post(struct shiftu_srq *r, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/*
 * QP @vq, created on SRQ @srq, joins it on the default side.  Returns NULL
 * when @vq can be protected, with @vq->srq set; else why not.  Context:
 * the create verb, before the application has the QP.
 */
const char *shiftu_srq_qp_attach(struct shiftu_vqp *vq, struct ibv_srq *srq);

/* @vq's QP is destroyed, or not protected after all: it leaves its SRQ. */
void shiftu_srq_qp_detach(struct shiftu_vqp *vq);

/*
 * The twin of @vq's SRQ on the backup context, made on @bak_pd (the twin
 * of the SRQ's protection domain) the first time.  NULL, with a line
 * saying why, if there is none.  Context: the shadow thread.
 */
struct ibv_srq *shiftu_srq_twin(struct shiftu_vqp *vq, struct ibv_pd *bak_pd);

/* A receive on @vq's twin: to its SRQ's twin if it has one. */
int shiftu_twin_post_recv(struct shiftu_vqp *vq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/*
 * Whether any SRQ has a table (relaxed): else no completion needs
 * shiftu_srq_give_back() (the last step of a poll, shiftu_wrid_out_all()).
 * Until then a completion keeps the table's id: a move's drain takes a
 * flushed one by it (shiftu_srq_move()).
 */
extern uint32_t shiftu_srq_tables;

/* The tabled records by their number in the ids (srq.c). */
extern struct shiftu_srq *shiftu_srq_by_table[SHIFTU_SRQ_TABLES];

/*
 * A completion with the table id *@wr_id (shiftu_wrid_srq()) on its way
 * to the application: *@wr_id becomes the application's, and its entry is
 * free.  Context: inside the thread's poll or post window (the destroy
 * verb waits them out before it frees a table); no lock.
 */
static inline void shiftu_srq_give_back(uint64_t *wr_id)
{
	struct shiftu_srq *r = __atomic_load_n(&shiftu_srq_by_table[shiftu_srq_id_table(*wr_id)],
					       __ATOMIC_ACQUIRE);

	if (r)
		shiftu_srqtab_give_back(&r->tab, wr_id);
}

/*
 * A move stopped and drained @vq's QP on the side it leaves (the default
 * QP, or the twin with @from_twin) for @to_twin's: the @n receives whose
 * flushed completions the drain took (@ids, the library's) are posted on
 * the new side, and if no QP is left on the old side, what its SRQ still
 * holds moves too, and it is emptied.  Returns 0, or -errno with a line
 * saying why (the QP is then left unprotected).  The first QP to leave
 * for the twin side makes the SRQ's posts slow, and waits out the claims
 * on their common path (no lock of the library's); the default SRQ is
 * emptied once its producer index counts their posts.  Context: fo_lock
 * and the CQs' locks held.
 */
int shiftu_srq_move(struct shiftu_vqp *vq, bool from_twin, bool to_twin,
		    const uint64_t *ids, unsigned int n);

#endif /* _SHIFTU_SRQ_H */
