/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failover.h: moving a QP to its twin, and the slow paths of the data verbs
 * while it is there (failover.c).
 */
#ifndef _SHIFTU_FAILOVER_H
#define _SHIFTU_FAILOVER_H

#include <infiniband/verbs.h>

struct shiftu_ctx;
struct shiftu_vqp;

/*
 * Fail @vq over to its twin (@why names the cause in the log).  Does
 * nothing unless the QP is on its default port; leaves it there, to be
 * asked again at the next post, while the twin is not ready.  Context: a
 * posting thread of @vq.  Cold.
 */
void shiftu_failover(struct shiftu_vqp *vq, const char *why);

/* post_send while @vq->slow is set. */
int shiftu_post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* post_send on the default QP, recording each work request (datapath.c). */
int shiftu_post_send_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			     struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* poll_cq while the context has CQs that need it: the library's stash,
 * then the CQ, then its twin. */
int shiftu_poll_cq_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
			struct ibv_wc *wc);

#endif /* _SHIFTU_FAILOVER_H */
