// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqpark.c: the peers' control messages beyond a poll's batch (cq.h).
 *
 * A poll that takes a peer's control message from a CQ hands it to the
 * handshake once it has dropped the CQ's lock, from an array of
 * SHIFTU_HS_BATCH on its stack.  What comes beyond waits in the CQ's park
 * (shiftu_hs_keep()) and is handed over after, oldest first, by one
 * thread at a time (shiftu_hs_unpark()), so that no message overtakes an
 * older one.
 */
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "cq_int.h"
#include "handshake.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "shadow.h"

void shiftu_hs_keep(struct shiftu_cq *c, struct shiftu_hs_msg *msgs, int *n_msgs,
		    const struct shiftu_hs_msg *m)
{
	struct shiftu_hs_msg *p;
	unsigned int cap;

	/* what is parked is older: a message may not overtake it */
	if (!c->park_n && *n_msgs < SHIFTU_HS_BATCH) {
		msgs[(*n_msgs)++] = *m;
		return;
	}
	if (c->park_n == c->park_cap) {
		cap = c->park_cap ? 2 * c->park_cap : SHIFTU_HS_BATCH;
		p = realloc(c->park, cap * sizeof(*p));
		if (!p) {
			shiftu_warn("qp %u: no memory to keep the peer's control message: it is lost",
				    m->vq->reg.app_qp->qp_num);
			return;
		}
		c->park = p;
		c->park_cap = cap;
	}
	c->park[c->park_n] = *m;
	/* read unlocked by shiftu_hs_unpark()'s first look */
	__atomic_store_n(&c->park_n, c->park_n + 1, __ATOMIC_RELAXED);
}

void shiftu_hs_unpark(struct shiftu_cq *c)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	unsigned int n, total = 0;

	/* racy, and fine: a thread that parks unparks after */
	if (!__atomic_load_n(&c->park_n, __ATOMIC_RELAXED))
		return;
	/*
	 * One thread at a time, so that they go in order: a message may
	 * start a move whose own unpark (on this thread or another) would
	 * otherwise hand over later ones first.  That thread takes what is
	 * parked meanwhile.
	 */
	cq_lock_urgent(c);
	if (c->unparking) {
		shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
		return;
	}
	c->unparking = true;
	for (;;) {
		n = c->park_n < SHIFTU_HS_BATCH ? c->park_n : SHIFTU_HS_BATCH;
		if (!n)
			break;
		memcpy(msgs, c->park, n * sizeof(*msgs));
		memmove(c->park, c->park + n, (c->park_n - n) * sizeof(*msgs));
		__atomic_store_n(&c->park_n, c->park_n - n, __ATOMIC_RELAXED);
		shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
		total += n;
		shiftu_hs_deliver(msgs, n);
		cq_lock_urgent(c);
	}
	c->unparking = false;
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	if (total)
		shiftu_info("%s: %u of the peers' control messages came beyond a poll's %d: kept, and handed over after",
			    c->sctx->bak_name, total, SHIFTU_HS_BATCH);
}

void shiftu_hs_park_forget(struct shiftu_cq *c, const struct shiftu_vqp *vq)
{
	unsigned int i, kept = 0;

	for (i = 0; i < c->park_n; i++)
		if (c->park[i].vq != vq)
			c->park[kept++] = c->park[i];
	__atomic_store_n(&c->park_n, kept, __ATOMIC_RELAXED);
}
