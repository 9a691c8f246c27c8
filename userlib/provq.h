/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * provq.h: a QP's outstanding work read from the provider's own queues
 * (provq.c), so that the data path records nothing.
 */
#ifndef _SHIFTU_PROVQ_H
#define _SHIFTU_PROVQ_H

#include <stdint.h>

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
 * Note where the application's requests end in the provider's rings: the
 * drain calls it on the stopped QP before it posts its markers behind them.
 * Counts that were derived (below) are made exact there.
 * Context: fo_lock, the QP in the error state.
 */
void shiftu_provq_mark(struct shiftu_vqp *vq);

/*
 * Derived counts.  While the work is on the default QP the data path
 * counts nothing: every request that reaches the provider's rings then is
 * the application's, so the provider's producer indices count them.
 * shiftu_provq_rebase() starts that (@vq->derived), from the indices as
 * they are now: call it once the library's own requests are posted, when
 * the work is back on the default QP.  shiftu_provq_sync() ends it,
 * folding what the indices moved into @vq->sq.head and @vq->rq.head:
 * call it before the library posts a request of its own to the default
 * QP.  Both: fo_lock, or before the application has the QP.
 */
void shiftu_provq_rebase(struct shiftu_vqp *vq);
void shiftu_provq_sync(struct shiftu_vqp *vq);

/*
 * The application's send and receive requests posted to @vq so far
 * (counted or derived).  Any thread: one being posted may be counted or
 * not.
 */
uint64_t shiftu_sq_posted(const struct shiftu_vqp *vq);
uint64_t shiftu_rq_posted(const struct shiftu_vqp *vq);

/*
 * Copy the last @n_s send and @n_r receive requests the application
 * posted to its QP before shiftu_provq_mark(), which a failover found
 * outstanding, from the provider's rings into @vq's own, as entries
 * head - n .. head - 1, with the two-sided counts the handshake needs.
 * Returns 0, -ERANGE (more than the provider's ring holds) or -EPROTO
 * (one of those slots holds a request of the library's: the positions
 * are not what the counts say).
 * Context: fo_lock.
 */
int shiftu_provq_take(struct shiftu_vqp *vq, uint64_t n_s, uint64_t n_r);

#endif /* _SHIFTU_PROVQ_H */
