// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * wridtab.c: the table of the application's renamed ids (wridtab.h).
 */
#include <errno.h>
#include <string.h>

#include "wrid.h"
#include "wridtab.h"

_Static_assert(SHIFTU_WRIDTAB_SLOTS <= 0x1000, "a renamed id has 12 bits for its slot");
_Static_assert((SHIFTU_WRIDTAB_SLOTS & (SHIFTU_WRIDTAB_SLOTS - 1)) == 0,
	       "the claims' cursor wraps by a mask");

void shiftu_wridtab_init(struct shiftu_wridtab *t, pthread_mutex_t *lock)
{
	memset(t, 0, sizeof(*t));
	t->lock = lock;
}

int shiftu_wridtab_claim(struct shiftu_wridtab *t, uint64_t app, bool quiet, uint64_t *id)
{
	uint32_t i, k;
	int ret = -ENOMEM;

	pthread_mutex_lock(t->lock);
	/*
	 * From the slot after the last one claimed: slots are freed about in
	 * the order they were claimed, so the next is most often free, and a
	 * slot just freed is not used again at once (a stale id stays stale
	 * for a while even without its generation).
	 */
	for (k = 0; k < SHIFTU_WRIDTAB_SLOTS && t->used < SHIFTU_WRIDTAB_SLOTS; k++) {
		i = (t->next + k) & (SHIFTU_WRIDTAB_SLOTS - 1);
		if (t->state[i] != SHIFTU_WRIDTAB_FREE)
			continue;
		t->state[i] = quiet ? SHIFTU_WRIDTAB_QUIET : SHIFTU_WRIDTAB_TAKEN;
		t->app[i] = app;
		t->next = i + 1;
		*id = SHIFTU_RENAMED_ID(t->gen[i], i);
		ret = t->used++ == 0;
		t->renamed++;
		break;
	}
	pthread_mutex_unlock(t->lock);
	return ret;
}

/* @id's slot, if it is taken under that generation; else -1.  *t->lock. */
static int slot_of(const struct shiftu_wridtab *t, uint64_t id)
{
	uint32_t i = shiftu_renamed_slot(id);

	if (shiftu_wrid_kind(id) != SHIFTU_WRID_RENAMED || i >= SHIFTU_WRIDTAB_SLOTS ||
	    t->state[i] == SHIFTU_WRIDTAB_FREE || t->gen[i] != shiftu_renamed_gen(id))
		return -1;
	return (int)i;
}

/* Slot @i is free: its next use has another generation.  *t->lock. */
static bool slot_free(struct shiftu_wridtab *t, int i)
{
	t->state[i] = SHIFTU_WRIDTAB_FREE;
	t->gen[i] = (t->gen[i] + 1) & 0x3ff;
	return --t->used == 0;
}

int shiftu_wridtab_take(struct shiftu_wridtab *t, uint64_t id, bool good, uint64_t *app,
			bool *last)
{
	int i, ret;

	pthread_mutex_lock(t->lock);
	i = slot_of(t, id);
	if (i < 0) {
		pthread_mutex_unlock(t->lock);
		*last = false;
		return -ENOENT;
	}
	ret = !(good && t->state[i] == SHIFTU_WRIDTAB_QUIET);
	*app = t->app[i];
	*last = slot_free(t, i);
	pthread_mutex_unlock(t->lock);
	return ret;
}

bool shiftu_wridtab_unclaim(struct shiftu_wridtab *t, uint64_t id)
{
	bool last = false;
	int i;

	pthread_mutex_lock(t->lock);
	i = slot_of(t, id);
	if (i >= 0)
		last = slot_free(t, i);
	pthread_mutex_unlock(t->lock);
	return last;
}

uint32_t shiftu_wridtab_used(struct shiftu_wridtab *t)
{
	return __atomic_load_n(&t->used, __ATOMIC_RELAXED);
}
