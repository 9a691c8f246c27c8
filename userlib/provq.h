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
 * Context: fo_lock, the QP in the error state.
 */
void shiftu_provq_mark(struct shiftu_vqp *vq);

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
