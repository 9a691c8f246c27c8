/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * srqstate.h: the library's record of one SRQ (struct shiftu_srq): what a
 * post's common path reads, its table, its sides and its QPs.  Types
 * only; srq.c keeps the records (srq.h).
 */
#ifndef _SHIFTU_SRQSTATE_H
#define _SHIFTU_SRQSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rdma/rdma_user_rxe.h>

#include "srqtab.h"

struct shiftu_ctx;
struct shiftu_vqp;

/*
 * The library's record of an SRQ the application created with
 * ibv_create_srq().  Records are never freed (a destroyed SRQ's is kept,
 * @app NULL, and reused), so that the lock-free walk of the post path
 * and a thread's anchor (struct shiftu_window's @srq) never read freed
 * memory; they are pushed with release.
 */
struct shiftu_srq {
	/* what a post's common path reads */
	struct ibv_srq *app;		/* NULL: free */
	int (*post)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);	/* the provider's */
	/*
	 * Its receives: every one posted goes through it once @tabled.  Its
	 * default side's credits open the common path (srqtab.h): a post
	 * then claims an entry and posts it on the default SRQ with no lock,
	 * the claim inside its thread's post window, which a move that shuts
	 * the path waits out (shiftu_quiesce_srq()); the provider's post
	 * comes after the window, and a move that empties the default SRQ
	 * first waits for its producer index to count it (@def_prod).
	 */
	struct shiftu_srqtab tab;
	struct shiftu_srq *next;
	struct shiftu_ctx *sctx;
	uint32_t id;			/* its handle, for the log */
	struct ibv_srq_attr attr;	/* as granted */
	/* the rest under srq_lock */
	/*
	 * Posts take srq_lock (shiftu_srq_post()): the common path is shut.
	 * Clear while every QP on the SRQ is on the default side, its table
	 * and ring are there, a receive of one entry fits, and quiesce.h has
	 * its barrier.
	 */
	bool slow;
	/*
	 * The default SRQ's producer index less the common path's posts
	 * (shiftu_srqtab_fast_posts()): the library's own posts there and its
	 * emptying move it.
	 */
	uint32_t def_prod;
	/* Soft-RoCE's ring of @app (provq.c), NULL if not found or resized */
	struct rxe_queue_buf *ring;
	/* the twin on the backup context (made by the shadow thread) */
	struct ibv_srq *bak;
	struct rxe_queue_buf *bak_ring;
	bool tabled;
	bool dying;			/* destroyed, its table not freed yet */
	/* the QPs on it */
	struct shiftu_vqp **qps;
	unsigned int n_qps, cap_qps;
	unsigned int told_key;		/* said once that a key had no backup */
};

#endif /* _SHIFTU_SRQSTATE_H */
