// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qp.c: the QP registry (qp.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "lock.h"
#include "lockorder.h"
#include "qp.h"

#define TABLE_MIN	64		/* slots; a power of two */
#define TOMBSTONE	((struct ibv_qp *)1)

/*
 * One slot.  key is NULL (never used: ends a probe), TOMBSTONE (removed:
 * probe on) or an application's QP.  The writer stores val, then key with
 * release; the reader loads key with acquire (pairs with it), then val.
 */
struct slot {
	struct ibv_qp *key;
	struct shiftu_qp *val;
};

struct table {
	uint32_t mask;			/* slots - 1 */
	uint32_t live;			/* keys that are QPs; under reg_lock */
	struct table *older;		/* retired tables, freed at fini */
	struct slot slots[];
};

struct shiftu_qp_slot shiftu_qp_cache[SHIFTU_QP_CACHE];

static struct shiftu_qp_slot *cache_slot(const struct ibv_qp *qp)
{
	return &shiftu_qp_cache[qp->qp_num & (SHIFTU_QP_CACHE - 1)];
}

/* Published with release (pairs with the acquire in shiftu_qp_lookup()). */
static struct table *reg_table;
static uint64_t reg_count;		/* relaxed; written under reg_lock */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(reg, .rank = SHIFTU_RANK_REG, .name = "reg_lock", .lock = &reg_lock);

static uint32_t qp_hash(const struct ibv_qp *qp, uint32_t mask)
{
	/* Fibonacci hashing: qp_nums are often consecutive */
	return (uint32_t)(((uint64_t)qp->qp_num * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

static struct table *table_new(uint32_t slots)
{
	struct table *t = calloc(1, sizeof(*t) + (size_t)slots * sizeof(struct slot));

	if (t)
		t->mask = slots - 1;
	return t;
}

/* Put @q into @t, which has room; reuses the first tombstone on the way. */
static void table_put(struct table *t, struct shiftu_qp *q)
{
	uint32_t i = qp_hash(q->app_qp, t->mask);
	struct slot *s;

	for (;; i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->key == NULL || s->key == TOMBSTONE)
			break;
	}
	__atomic_store_n(&s->val, q, __ATOMIC_RELAXED);
	__atomic_store_n(&s->key, q->app_qp, __ATOMIC_RELEASE);
	t->live++;
}

/* Under reg_lock: the slot holding @qp in @t, or NULL. */
static struct slot *table_find(struct table *t, const struct ibv_qp *qp)
{
	uint32_t i = qp_hash(qp, t->mask), n;
	struct slot *s;

	for (n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->key == NULL)
			return NULL;
		if (s->key == qp)
			return s;
	}
	return NULL;
}

/* Under reg_lock: make room for one more live entry. */
static int table_reserve(void)
{
	struct table *old = reg_table, *t;
	uint32_t slots = TABLE_MIN, i;

	if (old && (old->live + 1) * 2 <= old->mask + 1)
		return 0;
	if (old)
		slots = (old->mask + 1) * 2;
	t = table_new(slots);
	if (!t)
		return -ENOMEM;
	if (old) {
		for (i = 0; i <= old->mask; i++)
			if (old->slots[i].key && old->slots[i].key != TOMBSTONE)
				table_put(t, old->slots[i].val);
		t->older = old;
	}
	/* every slot of t is written before t is published */
	__atomic_store_n(&reg_table, t, __ATOMIC_RELEASE);
	return 0;
}

int shiftu_qp_register(struct shiftu_qp *q)
{
	int err;

	shiftu_lock(&reg_lock, SHIFTU_LOCK_REG);
	if (reg_table && table_find(reg_table, q->app_qp)) {
		err = -EEXIST;
		goto unlock;
	}
	err = table_reserve();
	if (err)
		goto unlock;
	table_put(reg_table, q);
	if (!cache_slot(q->app_qp)->key) {
		__atomic_store_n(&cache_slot(q->app_qp)->val, q, __ATOMIC_RELAXED);
		__atomic_store_n(&cache_slot(q->app_qp)->key, q->app_qp, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&reg_count, reg_count + 1, __ATOMIC_RELAXED);
unlock:
	shiftu_unlock(&reg_lock, SHIFTU_LOCK_REG);
	return err;
}

int shiftu_qp_unregister(struct shiftu_qp *q)
{
	struct slot *s = NULL;
	int err = -ENOENT;

	shiftu_lock(&reg_lock, SHIFTU_LOCK_REG);
	if (reg_table)
		s = table_find(reg_table, q->app_qp);
	if (s && s->val == q) {
		/* readers that already matched the key are racing the QP's own
		 * destruction: the verbs rule makes that the caller's bug */
		__atomic_store_n(&s->key, TOMBSTONE, __ATOMIC_RELEASE);
		__atomic_store_n(&s->val, NULL, __ATOMIC_RELAXED);
		if (cache_slot(q->app_qp)->key == q->app_qp)
			__atomic_store_n(&cache_slot(q->app_qp)->key, NULL, __ATOMIC_RELEASE);
		reg_table->live--;
		__atomic_store_n(&reg_count, reg_count - 1, __ATOMIC_RELAXED);
		err = 0;
	}
	shiftu_unlock(&reg_lock, SHIFTU_LOCK_REG);
	return err;
}

struct shiftu_qp *shiftu_qp_lookup(const struct ibv_qp *qp)
{
	/* pairs with the release store of reg_table in table_reserve() */
	struct table *t = __atomic_load_n(&reg_table, __ATOMIC_ACQUIRE);
	struct ibv_qp *key;
	uint32_t i, n;

	if (!t || !qp)
		return NULL;
	i = qp_hash(qp, t->mask);
	for (n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
		/* pairs with the release store of key in table_put() */
		key = __atomic_load_n(&t->slots[i].key, __ATOMIC_ACQUIRE);
		if (key == qp)
			return __atomic_load_n(&t->slots[i].val, __ATOMIC_RELAXED);
		if (!key)
			break;
	}
	return NULL;
}

uint64_t shiftu_qp_registered(void)
{
	return __atomic_load_n(&reg_count, __ATOMIC_RELAXED);
}

void shiftu_qp_registry_fini(void)
{
	struct table *t, *older;

	shiftu_lock(&reg_lock, SHIFTU_LOCK_REG);
	for (t = reg_table; t; t = older) {
		older = t->older;
		free(t);
	}
	reg_table = NULL;
	reg_count = 0;
	memset(shiftu_qp_cache, 0, sizeof(shiftu_qp_cache));
	shiftu_unlock(&reg_lock, SHIFTU_LOCK_REG);
}
