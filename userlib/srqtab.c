// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * srqtab.c: the receives of an SRQ whose QPs move one by one (srqtab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srqtab.h"
#include "wrid.h"

static struct shiftu_srqent *ent(const struct shiftu_srqtab *t, uint32_t i)
{
	return (struct shiftu_srqent *)(t->ents + (size_t)i * t->stride);
}

int shiftu_srqtab_init(struct shiftu_srqtab *t, uint32_t no, uint32_t size, uint32_t max_sge)
{
	uint32_t i;

	memset(t, 0, sizeof(*t));
	if (!size || size > SHIFTU_SRQTAB_MAX || max_sge > UINT16_MAX ||
	    no >= SHIFTU_SRQ_TABLES)
		return -EINVAL;
	t->no = no;
	t->stride = sizeof(struct shiftu_srqent) + (size_t)max_sge * sizeof(struct ibv_sge);
	t->ents = calloc(size, t->stride);
	if (!t->ents)
		return -ENOMEM;
	t->size = size;
	t->max_sge = max_sge;
	for (i = 0; i < size; i++)
		ent(t, i)->next_free = i + 1 < size ? i + 1 : SHIFTU_SRQTAB_MAX;
	t->free = 0;
	t->n_free = size;
	return 0;
}

void shiftu_srqtab_fini(struct shiftu_srqtab *t)
{
	free(t->ents);
	memset(t, 0, sizeof(*t));
}

uint64_t shiftu_srqtab_outstanding(const struct shiftu_srqtab *t, enum shiftu_side side)
{
	return t->in[side] - t->out[side];
}

enum shiftu_side shiftu_srqtab_route(const struct shiftu_srqtab *t)
{
	uint64_t d = shiftu_srqtab_outstanding(t, SHIFTU_SIDE_DEFAULT);
	uint64_t w = shiftu_srqtab_outstanding(t, SHIFTU_SIDE_TWIN);

	if (!t->members[SHIFTU_SIDE_TWIN])
		return SHIFTU_SIDE_DEFAULT;
	if (!t->members[SHIFTU_SIDE_DEFAULT])
		return SHIFTU_SIDE_TWIN;
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
	    i >= t->size)
		return NULL;
	e = ent(t, i);
	return e->posted ? e : NULL;
}

int shiftu_srqtab_put(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
		      enum shiftu_side side, uint64_t *id)
{
	struct shiftu_srqent *e;
	uint32_t i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > t->max_sge)
		return -EINVAL;
	if (!t->n_free)
		return -ENOMEM;
	i = t->free;
	e = ent(t, i);
	t->free = e->next_free;
	t->n_free--;
	e->wr_id = wr->wr_id;
	e->num_sge = (uint16_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(e->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*e->sge));
	e->side = side;
	e->posted = 1;
	t->in[side]++;
	*id = SHIFTU_SRQ_ID(t->no, i);
	return 0;
}

const struct shiftu_srqent *shiftu_srqtab_find(const struct shiftu_srqtab *t, uint64_t id)
{
	return posted(t, id);
}

int shiftu_srqtab_take(struct shiftu_srqtab *t, uint64_t id, uint64_t *wr_id)
{
	struct shiftu_srqent *e = posted(t, id);

	if (!e)
		return -ENOENT;
	*wr_id = e->wr_id;
	t->out[e->side]++;
	e->posted = 0;
	e->next_free = t->free;
	t->free = shiftu_srq_id_index(id);
	t->n_free++;
	return 0;
}

int shiftu_srqtab_move(struct shiftu_srqtab *t, uint64_t id, enum shiftu_side side)
{
	struct shiftu_srqent *e = posted(t, id);

	if (!e)
		return -ENOENT;
	t->out[e->side]++;
	t->in[side]++;
	e->side = side;
	return 0;
}

int shiftu_srqtab_wr(const struct shiftu_srqtab *t, uint64_t id, struct ibv_recv_wr *wr,
		     struct ibv_sge *sg)
{
	const struct shiftu_srqent *e = posted(t, id);

	if (!e)
		return -ENOENT;
	if (e->num_sge)
		memcpy(sg, e->sge, (size_t)e->num_sge * sizeof(*sg));
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->sg_list = sg;
	wr->num_sge = e->num_sge;
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
