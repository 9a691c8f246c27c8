// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * srqtab.c: the receives of an SRQ whose QPs move one by one (srqtab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srqtab.h"
#include "wrid.h"

int shiftu_srqtab_init(struct shiftu_srqtab *t, uint32_t no, uint32_t size, uint32_t max_sge)
{
	uint32_t n = 1;

	memset(t, 0, sizeof(*t));
	if (!size || size > SHIFTU_SRQTAB_MAX / 2 || max_sge > UINT16_MAX ||
	    no >= SHIFTU_SRQ_TABLES)
		return -EINVAL;
	/* twice the SRQ, so that the cursor's entry has long been taken */
	while (n < 2 * size)
		n <<= 1;
	t->stride = (uint32_t)(sizeof(struct shiftu_srqent) + (size_t)max_sge * sizeof(struct ibv_sge));
	t->ents = calloc(n, t->stride);
	if (!t->ents)
		return -ENOMEM;
	t->no = no;
	t->id_base = SHIFTU_SRQ_ID(no, 0);
	t->mask = n - 1;
	t->max_sge = max_sge;
	return 0;
}

void shiftu_srqtab_fini(struct shiftu_srqtab *t)
{
	free(t->ents);
	memset(t, 0, sizeof(*t));
}

uint64_t shiftu_srqtab_outstanding(const struct shiftu_srqtab *t, enum shiftu_side side)
{
	/* out first: an entry counted out was counted in before */
	uint64_t out = __atomic_load_n(&t->out[side], __ATOMIC_ACQUIRE);

	return __atomic_load_n(&t->in[side], __ATOMIC_RELAXED) - out;
}

enum shiftu_side shiftu_srqtab_route(const struct shiftu_srqtab *t)
{
	uint64_t d, w;

	if (!t->members[SHIFTU_SIDE_TWIN])
		return SHIFTU_SIDE_DEFAULT;
	if (!t->members[SHIFTU_SIDE_DEFAULT])
		return SHIFTU_SIDE_TWIN;
	d = shiftu_srqtab_outstanding(t, SHIFTU_SIDE_DEFAULT);
	w = shiftu_srqtab_outstanding(t, SHIFTU_SIDE_TWIN);
	/* w / members[twin] < d / members[default], without dividing */
	return w * t->members[SHIFTU_SIDE_DEFAULT] < d * t->members[SHIFTU_SIDE_TWIN] ?
		       SHIFTU_SIDE_TWIN : SHIFTU_SIDE_DEFAULT;
}

/* The posted entry @id names, or NULL. */
static struct shiftu_srqent *posted(const struct shiftu_srqtab *t, uint64_t id)
{
	struct shiftu_srqent *e;
	uint32_t i = shiftu_srq_id_index(id);

	if (shiftu_wrid_kind(id) != SHIFTU_WRID_SRQ || shiftu_srq_id_table(id) != t->no ||
	    !t->ents || i > t->mask)
		return NULL;
	e = shiftu_srqtab_ent(t, i);
	return __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE) ? e : NULL;
}

int shiftu_srqtab_put(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
		      enum shiftu_side side, uint64_t *id)
{
	uint32_t tries, i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > t->max_sge)
		return -EINVAL;
	/* at most the SRQ's receives are posted: half the entries are free */
	for (tries = 0; tries <= t->mask; tries++) {
		if (shiftu_srqtab_claim(t, wr, wr->num_sge, side, &i)) {
			*id = t->id_base | i;
			return 0;
		}
	}
	return -ENOMEM;
}

const struct shiftu_srqent *shiftu_srqtab_find(const struct shiftu_srqtab *t, uint64_t id)
{
	return posted(t, id);
}

int shiftu_srqtab_take(struct shiftu_srqtab *t, uint64_t id, uint64_t *wr_id)
{
	if (!t->ents || !shiftu_wrid_srq(id) || shiftu_srq_id_table(id) != t->no ||
	    !shiftu_srqtab_give_back(t, &id))
		return -ENOENT;
	*wr_id = id;
	return 0;
}

int shiftu_srqtab_move(struct shiftu_srqtab *t, uint64_t id, enum shiftu_side side)
{
	struct shiftu_srqent *e = posted(t, id);

	if (!e)
		return -ENOENT;
	__atomic_fetch_add(&t->in[side], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->out[shiftu_srqent_side(e)], 1, __ATOMIC_RELEASE);
	__atomic_store_n(&e->hdr, SHIFTU_SRQENT_HDR(side, shiftu_srqent_num_sge(e)),
			 __ATOMIC_RELAXED);
	return 0;
}

int shiftu_srqtab_wr(const struct shiftu_srqtab *t, uint64_t id, struct ibv_recv_wr *wr,
		     struct ibv_sge *sg)
{
	const struct shiftu_srqent *e = posted(t, id);
	unsigned int n;

	if (!e)
		return -ENOENT;
	n = shiftu_srqent_num_sge(e);
	if (n)
		memcpy(sg, e->sge, (size_t)n * sizeof(*sg));
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->sg_list = sg;
	wr->num_sge = (int)n;
	return 0;
}

void shiftu_srqtab_join(struct shiftu_srqtab *t, enum shiftu_side side)
{
	t->members[side]++;
}

bool shiftu_srqtab_leave(struct shiftu_srqtab *t, enum shiftu_side side)
{
	if (t->members[side])
		t->members[side]--;
	return !t->members[side];
}
