// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rename.c: the application's ids in the library's range, renamed on
 * their way in and given back on their way out (rename.h).  What the
 * context's verbs need around it (the waits, the windows, an SRQ table's
 * ids) is the data path's (post.c, srqpost.c, poll.c): this file reaches
 * no other of the library's.
 */
#include <errno.h>
#include <stdlib.h>

#include "lockorder.h"
#include "log.h"
#include "rename.h"
#include "util.h"

/* a hold ends once its table has been empty this long (rename.h) */
#define HOLD_IDLE_NS		(1000ULL * 1000 * 1000)

static uint64_t renamed_total;

/*
 * Every context's table and hold, under one lock: they are reached on
 * cold paths only, and fork(2) takes one lock, not one a context.  A leaf.
 */
static pthread_mutex_t wrid_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(wrid, .rank = SHIFTU_RANK_WRID, .name = "wrid_lock", .lock = &wrid_lock);

uint64_t shiftu_wrid_renamed(void)
{
	return __atomic_load_n(&renamed_total, __ATOMIC_RELAXED);
}

struct shiftu_wrids *shiftu_wrids_get(struct shiftu_wrids **slot, uint32_t *slow,
				      const char *name)
{
	struct shiftu_wrids *w = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	shiftu_wridtab_init(&w->tab, &wrid_lock);
	w->slow = slow;
	w->name = name;
	if (!__atomic_compare_exchange_n(slot, &none, w, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(w);
		return none;
	}
	return w;
}

/*
 * A slot for @app.  The hold of the context's polls starts with the first
 * slot taken while there is none: its count goes in under the table's
 * lock, so that holds and their ends stay in step.  Returns 0 or -ENOMEM;
 * @sv->wait_gen is set when the hold is not armed yet.
 */
static int claim(struct shiftu_wrids *w, uint64_t app, bool quiet, uint64_t *id,
		 struct shiftu_wrid_saved *sv)
{
	uint32_t gen;
	int ret;

	ret = shiftu_wridtab_claim(&w->tab, app, quiet, id);
	if (ret < 0)
		return ret;
	/* not empty: an end of the hold starts its idle second again */
	__atomic_store_n(&w->idle_ns, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&wrid_lock);
	if (!w->held) {
		w->held = 1;
		w->gen++;
		/* sequentially consistent: the quiesce's barrier orders it
		 * with the polls' windows */
		__atomic_fetch_add(w->slow, 1, __ATOMIC_SEQ_CST);
	}
	gen = w->gen;
	pthread_mutex_unlock(&wrid_lock);
	if (__atomic_load_n(&w->armed, __ATOMIC_ACQUIRE) != gen)
		sv->wait_gen = gen;
	__atomic_fetch_add(&renamed_total, 1, __ATOMIC_RELAXED);
	return 0;
}

void shiftu_wrid_armed(struct shiftu_wrids *w, uint32_t gen)
{
	__atomic_store_n(&w->armed, gen, __ATOMIC_RELEASE);
}

static bool saved_room(struct shiftu_wrid_saved *sv)
{
	uint64_t *p;
	unsigned int i;

	if (sv->n < sv->cap)
		return true;
	/* quiet bits for 64 requests: a chain with more in the range fails */
	if (sv->n == 64)
		return false;
	p = malloc(64 * sizeof(*p));
	if (!p)
		return false;
	for (i = 0; i < sv->n; i++)
		p[i] = sv->ids[i];
	sv->ids = p;
	sv->cap = 64;
	return true;
}

static void saved_init(struct shiftu_wrid_saved *sv)
{
	sv->n = 0;
	sv->cap = SHIFTU_ARRAY_SIZE(sv->inline_ids);
	sv->ids = sv->inline_ids;
	sv->quiet = 0;
	sv->wait_gen = 0;
}

static void saved_fini(struct shiftu_wrid_saved *sv)
{
	if (sv->ids != sv->inline_ids)
		free(sv->ids);
}

/* A request in the range found no slot: said once per context. */
static void refused(struct shiftu_wrids *w, uint64_t app)
{
	if (!w)
		shiftu_warn("a request with id 0x%llx, which the library renames, is refused: no memory for its table",
			    (unsigned long long)app);
	else if (!w->told_full++)
		shiftu_warn("%s: a request with id 0x%llx, which the library renames, is refused: %u renamed requests are out, as many as the table holds",
			    w->name, (unsigned long long)app, SHIFTU_WRIDTAB_SLOTS);
}

int shiftu_wrid_send_in(struct shiftu_wrids *w, struct ibv_send_wr *wr, bool sig_all,
			struct shiftu_wrid_saved *sv, struct ibv_send_wr **bad_wr)
{
	struct ibv_send_wr *x;
	uint64_t id;
	bool quiet;

	saved_init(sv);
	for (x = wr; x; x = x->next) {
		if (!shiftu_wrid_ranged(x->wr_id))
			continue;
		quiet = !sig_all && !(x->send_flags & IBV_SEND_SIGNALED);
		if (!w || !saved_room(sv) || claim(w, x->wr_id, quiet, &id, sv)) {
			refused(w, x->wr_id);
			shiftu_wrid_send_out(w, wr, wr, sv);
			*bad_wr = wr;	/* none of the chain is posted */
			return ENOMEM;
		}
		sv->ids[sv->n] = x->wr_id;
		if (quiet) {
			sv->quiet |= 1ULL << sv->n;
			x->send_flags |= IBV_SEND_SIGNALED;
		}
		sv->n++;
		x->wr_id = id;
	}
	return 0;
}

/*
 * Give a request of the chain its own id back, if it was renamed (the
 * renamed ones are the chain's only ids in the range), and its table
 * entry too if the provider refused it (@gone): *@k counts the renamed
 * ones so far.  Returns whether it was renamed.
 */
static bool give_back(struct shiftu_wrids *w, uint64_t *wr_id, bool gone,
		      const struct shiftu_wrid_saved *sv, unsigned int *k)
{
	if (shiftu_wrid_kind(*wr_id) != SHIFTU_WRID_RENAMED)
		return false;
	if (gone)
		shiftu_wridtab_unclaim(&w->tab, *wr_id);
	*wr_id = sv->ids[(*k)++];
	return true;
}

void shiftu_wrid_send_out(struct shiftu_wrids *w, struct ibv_send_wr *wr,
			  const struct ibv_send_wr *bad, struct shiftu_wrid_saved *sv)
{
	bool gone = false;
	unsigned int k = 0;

	for (; wr && k < sv->n; wr = wr->next) {
		gone |= wr == bad;
		if (give_back(w, &wr->wr_id, gone, sv, &k) && (sv->quiet & (1ULL << (k - 1))))
			wr->send_flags &= ~IBV_SEND_SIGNALED;
	}
	saved_fini(sv);
}

int shiftu_wrid_recv_in(struct shiftu_wrids *w, struct ibv_recv_wr *wr,
			struct shiftu_wrid_saved *sv, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *x;
	uint64_t id;

	saved_init(sv);
	for (x = wr; x; x = x->next) {
		if (!shiftu_wrid_ranged(x->wr_id))
			continue;
		if (!w || !saved_room(sv) || claim(w, x->wr_id, false, &id, sv)) {
			refused(w, x->wr_id);
			shiftu_wrid_recv_out(w, wr, wr, sv);
			*bad_wr = wr;	/* none of the chain is posted */
			return ENOMEM;
		}
		sv->ids[sv->n++] = x->wr_id;
		x->wr_id = id;
	}
	return 0;
}

void shiftu_wrid_recv_out(struct shiftu_wrids *w, struct ibv_recv_wr *wr,
			  const struct ibv_recv_wr *bad, struct shiftu_wrid_saved *sv)
{
	bool gone = false;
	unsigned int k = 0;

	for (; wr && k < sv->n; wr = wr->next) {
		gone |= wr == bad;
		give_back(w, &wr->wr_id, gone, sv, &k);
	}
	saved_fini(sv);
}

int shiftu_wrid_give_back(struct shiftu_wrids *w, struct ibv_wc *wc)
{
	uint64_t app;
	bool last;
	int ret;

	ret = shiftu_wridtab_take(&w->tab, wc->wr_id, wc->status == IBV_WC_SUCCESS, &app, &last);
	if (ret > 0)
		wc->wr_id = app;
	else if (ret < 0)
		shiftu_warn("%s: a completion of qp %u has the renamed id 0x%llx, which names no request out",
			    w->name, wc->qp_num, (unsigned long long)wc->wr_id);
	return ret != 0;
}

void shiftu_wrid_hold_end(struct shiftu_wrids *w)
{
	uint64_t now, since;

	if (!__atomic_load_n(&w->held, __ATOMIC_RELAXED) || shiftu_wridtab_used(&w->tab))
		return;
	now = shiftu_mono_ns();
	since = __atomic_load_n(&w->idle_ns, __ATOMIC_RELAXED);
	if (!since) {
		__atomic_store_n(&w->idle_ns, now, __ATOMIC_RELAXED);
		return;
	}
	if (now - since < HOLD_IDLE_NS)
		return;
	pthread_mutex_lock(&wrid_lock);
	if (w->held && !w->tab.used) {
		w->held = 0;
		__atomic_fetch_sub(w->slow, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&wrid_lock);
	__atomic_store_n(&w->idle_ns, 0, __ATOMIC_RELAXED);
}
