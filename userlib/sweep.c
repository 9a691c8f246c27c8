// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * sweep.c: the managed QPs collected and pinned (interpose_int.h), for a
 * health sweep of a context's QPs, or of every context's when the page
 * moved, and for the moves a polling session's end releases.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "cq.h"
#include "failover.h"
#include "interpose.h"
#include "interpose_int.h"
#include "lock.h"
#include "lockorder.h"
#include "shadow.h"

/*
 * The QPs for which @match(@vq, @arg) holds, collected under the list's
 * lock and each pinned: the caller acts on them (a failover takes locks
 * this list's lock must not hold) and unpins each when done with it; a QP
 * destroyed meanwhile keeps its node (its locks, its number) until then.
 * Returns the array (the caller frees it), *@k its length; NULL with *@k 0
 * when there is none, or no memory for it (*@oom then set).
 */
static struct shiftu_vqp **vqps_pinned(bool (*match)(const struct shiftu_vqp *, const void *),
				       const void *arg, size_t *k, bool *oom)
{
	struct shiftu_vqp **v;
	struct vqp_node *n;
	size_t cap = 0;

	*k = 0;
	shiftu_lock(&vqp_lock, SHIFTU_LOCK_VQP);
	for (n = vqp_list; n; n = n->next)
		cap++;
	v = cap ? malloc(cap * sizeof(*v)) : NULL;
	*oom = cap && !v;
	for (n = vqp_list; v && n; n = n->next)
		if (match(&n->vq, arg)) {
			__atomic_fetch_add(&n->vq.pins, 1, __ATOMIC_RELAXED);
			v[(*k)++] = &n->vq;
		}
	shiftu_unlock(&vqp_lock, SHIFTU_LOCK_VQP);
	return v;
}

static void vqp_unpin(struct shiftu_vqp *vq)
{
	__atomic_fetch_sub(&vq->pins, 1, __ATOMIC_RELEASE);
}

static bool vqp_of_ctx(const struct shiftu_vqp *vq, const void *s)
{
	return vq->sctx == s && vq->rings;
}

void shiftu_ctx_health(struct shiftu_ctx *s)
{
	struct shiftu_vqp **v;
	size_t i, k;
	bool oom;

	v = vqps_pinned(vqp_of_ctx, s, &k, &oom);
	for (i = 0; i < k; i++) {
		shiftu_vqp_health(v[i]);
		vqp_unpin(v[i]);
	}
	free(v);
}

void shiftu_health_sweep(void)
{
	/* pairs with the release in ctx_attach(); nodes are never freed */
	struct shiftu_ctx *s = __atomic_load_n(&shiftu_ctx_list, __ATOMIC_ACQUIRE);

	for (; s; s = s->next)
		if (__atomic_load_n(&s->ctx, __ATOMIC_ACQUIRE))
			shiftu_ctx_health(s);
}

/* @vq's move waits for a polling session of @cq (cqex.c). */
static bool vqp_polls_held(const struct shiftu_vqp *vq, const void *cq)
{
	return __atomic_load_n(&vq->poll_hold, __ATOMIC_RELAXED) &&
	       ((vq->scq && vq->scq->app == cq) || (vq->rcq && vq->rcq->app == cq));
}

bool shiftu_vqp_polls_done(const struct ibv_cq *cq)
{
	struct shiftu_vqp **v, *vq;
	const char *why;
	size_t i, k;
	uint8_t hold;
	bool oom;

	v = vqps_pinned(vqp_polls_held, cq, &k, &oom);
	if (oom)
		return false;
	for (i = 0; i < k; i++) {
		vq = v[i];
		/*
		 * The hold first: a move that is left to a session again
		 * takes a hold of its own before this one is given back.
		 */
		hold = __atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL);
		why = __atomic_exchange_n(&vq->move_deferred, NULL, __ATOMIC_ACQ_REL);
		if (why)
			shiftu_failover(vq, why);
		if (hold)
			shiftu_cq_slow(vq, false);
		vqp_unpin(vq);
	}
	free(v);
	return true;
}
