/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose_int.h: what the control verbs' files share among themselves
 * (interpose.h is what the rest of the library calls).
 *
 *   interpose.c  the contexts: ibv_open_device() and ibv_close_device(),
 *                a context's data verbs taken over and given back
 *   qpverbs.c    ibv_create_qp(), ibv_modify_qp(), ibv_destroy_qp() and
 *                the extended context's create_qp_ex: a QP managed, its
 *                rings, the entry more each queue takes for a failover
 *   cqsrq.c      the CQ and SRQ verbs: a CQ's room for a failover's
 *                completions, the extended context's create_cq_ex
 *   pdmr.c       the PD and MR verbs, recorded for their twins
 *   vqp.c        the managed QPs' list: its nodes and lookups, the
 *                contexts' receive caches, fork(2)'s child, the exit line
 *   sweep.c      the QPs collected and pinned: a health sweep, a polling
 *                session's end
 *   ctx.c        the contexts' list, its lock and its lookup
 *
 * The verbs' files find a context with shiftu_ctx_find() (ctx.c);
 * interpose.c puts the create_*_ex of qpverbs.c and cqsrq.c in a context's
 * ops; qpverbs.c takes and gives back vqp.c's nodes; vqp.c reads the
 * contexts' list for fork(2)'s child and the exit line.  Each shared
 * variable says what protects it; a function's comment is with its
 * definition.  The variables keep the short names they had in
 * interpose.c: no file outside these includes this header.
 */
#ifndef _SHIFTU_INTERPOSE_INT_H
#define _SHIFTU_INTERPOSE_INT_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "interpose.h"
#include "util.h"

/* ---- ctx.c ----------------------------------------------------------- */

/* shiftu_ctx_list's writers, and the exit line's walk of it */
extern pthread_mutex_t ctx_lock SHIFTU_HIDDEN;

/* ---- qpverbs.c ------------------------------------------------------- */

/* the extended context's create_qp_ex, in the context's ops */
struct ibv_qp *shiftu_create_qp_ex(struct ibv_context *ctx,
				   struct ibv_qp_init_attr_ex *attr) SHIFTU_HIDDEN;

/* ---- cqsrq.c --------------------------------------------------------- */

/* the extended context's create_cq_ex, in the context's ops */
struct ibv_cq_ex *shiftu_create_cq_ex(struct ibv_context *ctx,
				      struct ibv_cq_init_attr_ex *attr) SHIFTU_HIDDEN;

/* ---- vqp.c ----------------------------------------------------------- */

/*
 * Every managed QP, for the exit statistics; under vqp_lock.  A node that
 * was registered is never freed: a thread's anchor (post.c) or a
 * context's receive cache may still point at it after its QP is gone (a
 * poller that loaded it before qp_detach() cleared the slot, or
 * shiftu_count_recv_slow() storing what it found as the QP went), and
 * reads its app_qp (the cache: app_qp->qp_num) to see that it is not the
 * QP looked for.  A QP that goes leaves its node on vqp_spare, for the
 * next QP, with app_qp at qp_gone (before the provider frees the QP, whose
 * address a new QP may get), which stays until the next QP's replaces it.
 */
struct vqp_node {
	struct shiftu_vqp vq;
	struct vqp_node *prev, *next;
};
extern struct vqp_node *vqp_list SHIFTU_HIDDEN;
extern pthread_mutex_t vqp_lock SHIFTU_HIDDEN;

/* The counts of QPs and contexts already gone; under vqp_lock / ctx_lock. */
struct vqp_retired {
	uint64_t contexts, qps;
	uint64_t post_sends, post_recvs, wr_starts, wr_completes;
	uint64_t poster_changes;
};
extern struct vqp_retired retired SHIFTU_HIDDEN;

/* a zeroed node for a new QP, and a node whose QP went */
struct vqp_node *shiftu_vqp_node_get(void) SHIFTU_HIDDEN;
void shiftu_vqp_node_put(struct vqp_node *n) SHIFTU_HIDDEN;
/* @vq leaves its context's receive cache; vqp_lock held */
void shiftu_rcache_drop(struct shiftu_vqp *vq, uint32_t qp_num) SHIFTU_HIDDEN;

#endif /* _SHIFTU_INTERPOSE_INT_H */
