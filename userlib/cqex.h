/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cqex.h: CQs made with ibv_create_cq_ex, polled with ibv_start_poll,
 * ibv_next_poll, ibv_end_poll and the ibv_wc_read_* accessors (cqex.c).
 *
 * Those are function pointers in the struct ibv_cq_ex itself.  On a CQ
 * the library serves, they are the library's: each start_poll and
 * next_poll takes one completion through the library's ibv_poll_cq path
 * (interpose.h, cq.c), so that such a CQ is protected exactly as one from
 * ibv_create_cq, and the accessors read that completion.  A CQ asking for
 * a field a struct ibv_wc does not carry (a timestamp, a VLAN, a flow tag,
 * tag matching) is left as the provider made it, and its QPs unprotected.
 */
#ifndef _SHIFTU_CQEX_H
#define _SHIFTU_CQEX_H

#include <stdbool.h>

#include <infiniband/verbs.h>

/* Whether the library can serve an extended CQ asked for with @attr. */
bool shiftu_cqx_servable(const struct ibv_cq_init_attr_ex *attr);

/*
 * Serve @cq, which the provider just made: the library's polling
 * functions replace the provider's in it.  Returns 0, or -ENOMEM (then it
 * is left as it is).  Context: ibv_create_cq_ex, before the application
 * has the CQ.
 */
int shiftu_cqx_attach(struct ibv_cq_ex *cq);

/* @cq is being destroyed: forget it, if it is an extended CQ served. */
void shiftu_cqx_detach(const struct ibv_cq *cq);

#endif /* _SHIFTU_CQEX_H */
