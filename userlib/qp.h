/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qp.h: the registry of the QPs libshiftu manages, keyed by the
 * application's struct ibv_qp *.
 *
 * The interposer owns struct shiftu_qp (it embeds one in its own per-QP
 * state and frees it); the registry only maps the application's handle to
 * it.  Lookups run on the data path and the public query, so they are lock
 * free: an open-addressing table of (key, value) slots, probed from a hash of
 * qp->qp_num and matched by comparing the key pointer (qp_num is unique only
 * per device, the pointer is unique in the process).  Insertions and
 * removals take one mutex; growing or purging tombstones publishes a new
 * table and keeps the old ones until shiftu_qp_registry_fini(), so a reader
 * that still walks an old table reads memory that stays valid.
 *
 * Lifetime rule (the verbs rule): a QP is not used concurrently with or
 * after its ibv_destroy_qp().  The interposer unregisters before it lets
 * its struct shiftu_qp go; a reader looking up another QP never
 * dereferences a value whose key does not match, so a removed entry is
 * never touched here.  (The data path's own per-thread anchors do read a
 * gone entry: the interposer keeps them, vqp.c.)
 */
#ifndef _SHIFTU_QP_H
#define _SHIFTU_QP_H

#include <stdint.h>

#include <infiniband/verbs.h>

#include "shiftu.h"
#include "util.h"

/*
 * Per-QP state the public query reports.  The interposer writes the fields
 * with relaxed atomic stores (shiftu_qp_set_*(), shiftu_qp_count()); the
 * query reads them relaxed, one by one: they are statistics, nothing orders
 * on them.
 */
struct shiftu_qp {
	struct ibv_qp *app_qp;		/* the key: the handle the app holds */
	uint32_t send_state;		/* enum shiftu_send_state */
	uint32_t recv_state;		/* enum shiftu_recv_state */
	uint32_t flags;			/* SHIFTU_QP_F_* */
	uint32_t pad;
	uint64_t failovers;
	uint64_t failbacks;
	uint64_t replayed_wrs;
	/* the interposer's own fields follow in its containing structure */
};

/*
 * Make @q findable as @q->app_qp (set by the caller, with qp_num valid).
 * Returns 0, -EEXIST (that handle is registered), -ENOMEM.  Thread safe;
 * takes the registry mutex; may allocate.
 */
int shiftu_qp_register(struct shiftu_qp *q);

/*
 * Remove @q.  Returns 0 or -ENOENT.  After it returns no new lookup finds
 * @q; the caller may free @q once the QP's verbs calls are over (verbs
 * rule above).  Thread safe; takes the registry mutex.
 */
int shiftu_qp_unregister(struct shiftu_qp *q);

/*
 * The entry registered for @qp, or NULL.  Lock free, no allocation or
 * shared store: two acquire loads per probe (table, slot key) plus the value.
 * Any thread.
 */
struct shiftu_qp *shiftu_qp_lookup(const struct ibv_qp *qp);

/*
 * The data path's try after the thread's own QP (post.c): a
 * direct-mapped cache in front of the table, one slot per qp_num modulo its
 * size.  A slot is taken by the first QP registered with that index and
 * freed only when that QP is unregistered, so a slot whose key is a live QP
 * never changes under its posters; the others, and every QP when two
 * collide, go to the table.
 */
#define SHIFTU_QP_CACHE		1024	/* slots; a power of two */

struct shiftu_qp_slot {
	struct ibv_qp *key;
	struct shiftu_qp *val;
};

extern struct shiftu_qp_slot shiftu_qp_cache[SHIFTU_QP_CACHE] SHIFTU_HIDDEN;

/* @qp's entry if the cache holds it, else NULL (look it up in the table). */
static inline struct shiftu_qp *shiftu_qp_cached(const struct ibv_qp *qp)
{
	const struct shiftu_qp_slot *s =
		&shiftu_qp_cache[qp->qp_num & (SHIFTU_QP_CACHE - 1)];

	struct shiftu_qp *v;

	/* pairs with the release store of key in shiftu_qp_register() */
	if (__builtin_expect(__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) != qp, 0))
		return NULL;
	v = __atomic_load_n(&s->val, __ATOMIC_RELAXED);
	if (!v)
		__builtin_unreachable();	/* stored before the key */
	return v;
}

static inline struct shiftu_qp *shiftu_qp_find(const struct ibv_qp *qp)
{
	struct shiftu_qp *v = shiftu_qp_cached(qp);

	return v ? v : shiftu_qp_lookup(qp);
}

/* Registered entries now (relaxed). */
uint64_t shiftu_qp_registered(void);

/* Free every table; only when no thread can look up (tests, teardown). */
void shiftu_qp_registry_fini(void);

/* Relaxed setters for the interposer; see struct shiftu_qp. */
static inline void shiftu_qp_set_send_state(struct shiftu_qp *q, enum shiftu_send_state s)
{
	__atomic_store_n(&q->send_state, s, __ATOMIC_RELAXED);
}

static inline void shiftu_qp_set_recv_state(struct shiftu_qp *q, enum shiftu_recv_state s)
{
	__atomic_store_n(&q->recv_state, s, __ATOMIC_RELAXED);
}

static inline void shiftu_qp_set_flags(struct shiftu_qp *q, uint32_t flags)
{
	__atomic_store_n(&q->flags, flags, __ATOMIC_RELAXED);
}

/* Threads may post on one QP concurrently: an atomic add, on the QP's line. */
static inline void shiftu_qp_count(uint64_t *field, uint64_t n)
{
	__atomic_fetch_add(field, n, __ATOMIC_RELAXED);
}

#endif /* _SHIFTU_QP_H */
