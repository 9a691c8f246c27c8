// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * reclist.c: the lists of the application's objects' records (shadow.h,
 * shadow_int.h), the MR and CQ lists' leaf locks, and the lookups in them
 * that the data paths and the shadow thread make: a PD's record, a CQ's
 * record, a backup lkey.  registry.c records and drops; the lookups take
 * no lock but the lists' own, and call nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "lock.h"
#include "lockorder.h"
#include "shadow_int.h"
#include "vqpstate.h"

/*
 * The MR and CQ lists have locks of their own, leaves of the lock order,
 * because the data paths look them up (keys while on a twin, a CQ's
 * record in the slow poll) and must not wait for a shadow pass.
 */
pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(mr, .rank = SHIFTU_RANK_MR, .name = "mr_lock", .lock = &mr_lock);
pthread_mutex_t cq_lock = PTHREAD_MUTEX_INITIALIZER;

struct shiftu_pd *pds;
struct shiftu_mr *mrs;
struct shiftu_cq *cqs;
struct shiftu_vqp **vqps;
unsigned int n_vqps;

struct shiftu_pd *shiftu_pd_find(const struct ibv_pd *pd)
{
	struct shiftu_pd *p;

	for (p = pds; p && p->app != pd; p = p->next)
		;
	return p;
}

struct shiftu_cq *shiftu_cq_find(const struct ibv_cq *cq)
{
	struct shiftu_cq *c;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	c = cq_find_locked(cq);
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return c;
}

/* ---- lookups for the failover path ----------------------------------- */

int shiftu_backup_lkey(struct shiftu_vqp *vq, uint32_t lkey, uint32_t *out)
{
	struct shiftu_mr *m;
	int ret = -ENOENT;

	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (m = mrs; m; m = m->next)
		if (m->app->lkey == lkey && m->pd && m->pd->sctx == vq->sctx &&
		    m->bak) {
			*out = m->bak->lkey;
			ret = 0;
			break;
		}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
	return ret;
}
