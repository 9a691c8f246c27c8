/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failback_int.h: what the asking side of a failback (failback.c) and the
 * answering side (fbanswer.c) share: their words in the store and their
 * waits.
 */
#ifndef _SHIFTU_FAILBACK_INT_H
#define _SHIFTU_FAILBACK_INT_H

#include "shadow_int.h"

/*
 * How long a failback that told the peer waits for its answer on the
 * default QP before it asks the peer to cancel (failback.c: rejoin_ns(),
 * CANCEL_WAIT_NS), and how soon after a failback the answering side looks
 * for the peer's requests more often (fbanswer.c): the
 * answer comes from the peer's next poll or watcher round, which a busy
 * host makes late (64 QPs going back together in the lab: 2 s was too
 * short, and each cancel costs a whole new failback).  A failure it can
 * see (its port or path down, an error on the default QP) rejoins at once.
 */
#define REJOIN_NS	(5ULL * 1000 * 1000 * 1000)

/* How often a side whose twin is connected looks for the peer's failback
 * request (fbanswer.c), at most; the asking side's wait counts it. */
#define FB_POLL_NS	(500ULL * 1000 * 1000)

/*
 * The last word of a failback's request (fbreq): the asking side's
 * receives are on its twin (the failback is two-sided), and it would probe
 * with an empty SEND (shiftu_probe_by_send()).  The last word of the
 * answer (fbrep): the failback is two-sided (FB_TWIN_RECVS), and the peer
 * posted a second control receive for that SEND (FB_PROBE_SEND; not on an
 * SRQ, whose QP's peer probes its mailbox, box.c).
 */
#define FB_TWIN_RECVS	1U
#define FB_PROBE_SEND	2U

/*
 * The peer's side: a request to reset our QP for a new PSN, read in the
 * pass's first batch.  Granted when our QP carries no sends of its own (a
 * passive side, or one on its twin).  Context: the shadow thread,
 * vq->lock held.
 */
void shiftu_failback_answer_req(struct shiftu_vqp *vq, struct pass_qp *pq) SHIFTU_HIDDEN;

#endif /* _SHIFTU_FAILBACK_INT_H */
