/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cqex.h: CQs made with ibv_create_cq_ex, polled with ibv_start_poll,
 * ibv_next_poll, ibv_end_poll and the ibv_wc_read_* accessors (cqex.c).
 *
 * Those are function pointers in the struct ibv_cq_ex itself.  On a CQ
 * the library serves, start_poll, next_poll and end_poll are the
 * library's.  A session is the provider's own, the library looking at each
 * completion's status, while the CQ's context is on the poll's common
 * path; otherwise each start_poll and next_poll takes one completion
 * through the library's ibv_poll_cq path (interpose.h, cq.c), so that such
 * a CQ is protected exactly as one from ibv_create_cq, and the accessors,
 * the library's for that session, read that completion.  A CQ asking for
 * a field a struct ibv_wc does not carry (a timestamp, a VLAN, a flow tag,
 * tag matching) is left as the provider made it, and its QPs unprotected.
 */
#ifndef _SHIFTU_CQEX_H
#define _SHIFTU_CQEX_H

#include <stdbool.h>

#include <infiniband/verbs.h>

struct shiftu_ctx;

/* Whether the library can serve an extended CQ asked for with @attr. */
bool shiftu_cqx_servable(const struct ibv_cq_init_attr_ex *attr);

/*
 * Serve @cq, which the provider just made for @s: the library's polling
 * functions replace the provider's in it.  Returns 0, or -ENOMEM (then it
 * is left as it is).  Context: ibv_create_cq_ex, before the application
 * has the CQ.
 */
int shiftu_cqx_attach(struct shiftu_ctx *s, struct ibv_cq_ex *cq);

/* @cq is being destroyed: forget it, if it is an extended CQ served. */
void shiftu_cqx_detach(const struct ibv_cq *cq);

/*
 * A move is about to leave the default QP whose CQs are @a and @b: the
 * sessions of those that are extended CQs served are told to make the
 * moves left to them when they end (shiftu_vqp_polls_done()).  Returns
 * whether either is one.  Then, once the move has made the context's polls
 * slow and waited out the data verbs in flight (quiesce.h),
 * shiftu_cqx_direct() says whether a direct session, which holds the
 * provider's CQ until its thread ends it, is still open on either: the
 * move is then left to it.  Context: the QP's fo_lock, no CQ lock.  Cold.
 */
bool shiftu_cqx_mark(const struct ibv_cq *a, const struct ibv_cq *b);
bool shiftu_cqx_direct(const struct ibv_cq *a, const struct ibv_cq *b);

/*
 * Another thread's direct session is open on @cq: a slow poll of it takes
 * nothing from the provider (which would wait, holding the CQ's lock, for
 * that session to end).  Cold.
 */
bool shiftu_cqx_busy(const struct ibv_cq *cq);

#endif /* _SHIFTU_CQEX_H */
