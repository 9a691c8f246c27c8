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
	size_t stride = 1;
	uint32_t n = 1, i;

	memset(t, 0, sizeof(*t));
	if (!size || size > SHIFTU_SRQTAB_MAX / 2 || max_sge > UINT16_MAX ||
	    no >= SHIFTU_SRQ_TABLES)
		return -EINVAL;
	/* twice the SRQ, so that the cursor's entry has long been taken */
	while (n < 2 * size)
		n <<= 1;
	/* a power of two, so that the common path masks the cursor for the
	 * entry's offset; room for the one entry its request names */
	while (stride < sizeof(struct shiftu_srqent) +
			(size_t)(max_sge ? max_sge : 1) * sizeof(struct ibv_sge))
		stride <<= 1;
	t->stride = (uint32_t)stride;
	t->ents = calloc(n, stride);
	if (!t->ents)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct shiftu_srqent *e = shiftu_srqtab_ent(t, i);

		e->wr.wr_id = SHIFTU_SRQ_ID(no, i);
		e->wr.sg_list = e->sge;
		e->wr.num_sge = 1;
	}
	t->no = no;
	t->id_base = SHIFTU_SRQ_ID(no, 0);
	t->mask = n - 1;
	t->bytes_mask = (uint32_t)(n * stride - 1);
	t->max_sge = max_sge;
	t->cap[SHIFTU_SIDE_DEFAULT] = (int32_t)size;
	t->room[SHIFTU_SIDE_DEFAULT] = (int32_t)size - SHIFTU_SRQTAB_SHUT;
	t->shut = true;
	return 0;
}

void shiftu_srqtab_fini(struct shiftu_srqtab *t)
{
	free(t->ents);
	memset(t, 0, sizeof(*t));
}

void shiftu_srqtab_shut(struct shiftu_srqtab *t, bool shut)
{
	if (shut == t->shut)
		return;
	t->shut = shut;
	/* seq_cst: before the caller's wait for the posts that got a credit */
	__atomic_fetch_add(&t->room[SHIFTU_SIDE_DEFAULT],
			   shut ? -SHIFTU_SRQTAB_SHUT : SHIFTU_SRQTAB_SHUT, __ATOMIC_SEQ_CST);
}

uint64_t shiftu_srqtab_outstanding(const struct shiftu_srqtab *t, enum shiftu_side side)
{
	int64_t room = __atomic_load_n(&t->room[side], __ATOMIC_ACQUIRE);

	if (side == SHIFTU_SIDE_DEFAULT && t->shut)
		room += SHIFTU_SRQTAB_SHUT;
	/* never above @cap: each credit given back was taken before */
	return room < t->cap[side] ? (uint64_t)(t->cap[side] - room) : 0;
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
	int ret = -ENOMEM;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > t->max_sge)
		return -EINVAL;
	/* at most the SRQ's receives are posted: half the entries are free */
	for (tries = 0; tries <= t->mask && ret; tries++) {
		if (shiftu_srqtab_claim(t, wr, wr->num_sge, side, &i)) {
			*id = t->id_base | i;
			ret = 0;
		}
	}
	/* none posts from the common path: the caller posts, and counts it */
	shiftu_srqtab_skip(t, tries);
	return ret;
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
	__atomic_fetch_sub(&t->room[side], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->room[shiftu_srqent_side(e)], 1, __ATOMIC_RELEASE);
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
