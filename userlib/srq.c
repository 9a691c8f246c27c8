// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * srq.c: shared receive queues, their tables and their twins (srq.h).
 *
 * What the library relies on in Soft-RoCE's SRQ ring, shared with the
 * kernel in the format of <rdma/rdma_user_rxe.h>:
 *
 * - the kernel reads the producer index from the ring every time it takes
 *   a receive (smp_load_acquire, rxe_queue.h) and publishes its consumer
 *   index there once it has copied the receive out (get_srq_wqe(), under
 *   the SRQ's consumer lock);
 * - a QP in the error state takes no more (check_resource() in
 *   rxe_resp.c) and does not flush the SRQ: only the receive a message
 *   was cut in the middle of, which the kernel had taken, completes
 *   flushed, with the QP's number and the receive's id;
 * - librxe keeps no copy of the producer index (providers/rxe/rxe_queue.h
 *   reads the ring's under the SRQ's lock), so a side nobody consumes from
 *   any more is emptied by setting its producer index back to the kernel's
 *   consumer index.  No post may reach that side meanwhile: a post on the
 *   common path (srqpost.c) goes to the default SRQ with no lock, and
 *   only while no QP is on the twin side; the first QP to leave for the
 *   twin side shuts that path (@slow, the table's credits) and waits out
 *   the claims on it, made inside their threads' post windows.  Their
 *   provider's posts come after the windows (a tail call): the default
 *   SRQ is emptied only once its producer index has counted every one
 *   (wait_default()).  Every other post is made under srq_lock, which the
 *   emptying holds too.
 *
 * Which side a QP is on is @vq->srq_side: where its receives come from,
 * the default SRQ until its first failover has moved it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "failover.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "provq.h"
#include "quiesce.h"
#include "real.h"
#include "shadow.h"
#include "srq.h"
#include "util.h"
#include "wrid.h"

#define MAX_SGE		16
/* how long a move or the destroy verb waits for posts and polls on their common path */
#define SRQ_QUIESCE_NS	1000000000ULL

/* The records, newest first: pushed with release, never freed. */
static struct shiftu_srq *srq_list;
/*
 * Guards the records' QP lists, sides and twins, and the posts to a
 * tabled SRQ off its common path; takes mr_lock (a receive's keys on the
 * backup device) and windows_lock (lockorder.h).
 */
static pthread_mutex_t srq_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(srq, .rank = SHIFTU_RANK_SRQ, .name = "srq_lock", .lock = &srq_lock);
/*
 * The tabled records by their number in the ids (wrid.h): written under
 * srq_lock with release, read by shiftu_srq_give_back() with acquire.
 */
struct shiftu_srq *shiftu_srq_by_table[SHIFTU_SRQ_TABLES];
uint32_t shiftu_srq_tables;

static const char *const side_name[] = { "default SRQ", "twin SRQ" };

static const struct rxe_recv_wqe *slot(const struct rxe_queue_buf *q, uint32_t i)
{
	return (const void *)(q->data + ((size_t)(i & q->index_mask) << q->log2_elem_size));
}

struct shiftu_srq *shiftu_srq_find(const struct ibv_srq *srq)
{
	/* pairs with the release in shiftu_srq_attach() */
	struct shiftu_srq *r = __atomic_load_n(&srq_list, __ATOMIC_ACQUIRE);

	while (r && __atomic_load_n(&r->app, __ATOMIC_ACQUIRE) != srq)
		r = r->next;
	return r;
}

/* A free table number, or -1.  srq_lock. */
static int table_no(void)
{
	unsigned int i;

	for (i = 0; i < SHIFTU_SRQ_TABLES; i++)
		if (!shiftu_srq_by_table[i])
			return (int)i;
	return -1;
}

/*
 * Whether posts to @r may take the common path: its table and ring are
 * there, no QP is on the twin side (so every receive goes to the default
 * SRQ), its request of one entry fits, and a move can wait out the claims
 * that passed this (quiesce.h's barrier).  Opening it gives the table's
 * credits back; shutting it here needs no wait: only a move (to the twin
 * side) ever empties the default SRQ, and it waits.  srq_lock.
 */
static void gate(struct shiftu_srq *r)
{
	r->slow = !r->tabled || !r->ring || r->tab.members[SHIFTU_SIDE_TWIN] ||
		  !r->attr.max_sge || !shiftu_quiesce_barrier();
	if (r->tab.ents)
		shiftu_srqtab_shut(&r->tab, r->slow);
}

void shiftu_srq_attach(struct shiftu_ctx *s, struct ibv_srq *srq,
		       const struct ibv_srq_init_attr *attr)
{
	struct rxe_queue_buf *ring = NULL;
	const char *why = NULL;
	struct shiftu_srq *r;
	bool fresh = false;
	int no, ret;

	if (shiftu_provq_find_srq(srq, &attr->attr, &ring))
		why = "its ring is not one the library can empty";
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	for (r = srq_list; r && (r->app || r->dying); r = r->next)
		;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
			shiftu_warn("srq %u on %s: out of memory: its QPs are not protected",
				    srq->handle, s->dev_name);
			return;
		}
		r->next = srq_list;
		fresh = true;
	}
	r->slow = true;
	r->post = s->post_srq_recv;
	r->sctx = s;
	r->id = srq->handle;
	r->attr = attr->attr;
	r->ring = ring;
	r->bak = NULL;
	r->bak_ring = NULL;
	r->n_qps = 0;
	r->tabled = false;
	no = why ? -1 : table_no();
	if (!why && no < 0)
		why = "too many SRQs";
	if (!why) {
		ret = shiftu_srqtab_init(&r->tab, (uint32_t)no, attr->attr.max_wr,
					 attr->attr.max_sge);
		if (ret)
			why = ret == -ENOMEM ? "out of memory" : "it is too large";
	}
	if (!why) {
		r->tabled = true;
		r->def_prod = __atomic_load_n(&ring->producer_index, __ATOMIC_ACQUIRE);
		__atomic_store_n(&shiftu_srq_by_table[no], r, __ATOMIC_RELEASE);
		__atomic_fetch_add(&shiftu_srq_tables, 1, __ATOMIC_RELAXED);
	}
	gate(r);
	/* the record is whole before a walker can match it */
	__atomic_store_n(&r->app, srq, __ATOMIC_RELEASE);
	if (fresh)
		__atomic_store_n(&srq_list, r, __ATOMIC_RELEASE);
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	if (why)
		shiftu_info("srq %u on %s: %s: its QPs are not protected", srq->handle,
			    s->dev_name, why);
	else
		shiftu_dbg("srq %u on %s: %u receives, table %d", srq->handle, s->dev_name,
			   attr->attr.max_wr, no);
}

void shiftu_srq_resize(struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	struct shiftu_vqp **v = NULL;
	unsigned int i, n = 0;

	if (!r)
		return;
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	r->ring = NULL;
	/* its credits count the old ring's room */
	gate(r);
	if (r->n_qps && (v = malloc(r->n_qps * sizeof(*v)))) {
		n = r->n_qps;
		memcpy(v, r->qps, n * sizeof(*v));
	}
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	/* a record's QPs are destroyed only after its SRQ is resized: verbs rules */
	for (i = 0; i < n; i++)
		shiftu_unprotect(v[i], "its SRQ is resized");
	free(v);
}

void shiftu_srq_detach(struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	struct ibv_srq *bak;
	bool tabled;

	if (!r)
		return;
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	bak = r->bak;
	r->bak = NULL;
	r->bak_ring = NULL;
	r->ring = NULL;
	tabled = r->tabled;
	if (tabled) {
		__atomic_store_n(&shiftu_srq_by_table[r->tab.no], NULL, __ATOMIC_RELEASE);
		r->tabled = false;
		/* not reused before its table is gone */
		r->dying = true;
		__atomic_fetch_sub(&shiftu_srq_tables, 1, __ATOMIC_RELAXED);
	}
	r->n_qps = 0;
	gate(r);
	__atomic_store_n(&r->app, NULL, __ATOMIC_RELAXED);
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	/*
	 * A poller may still be renaming a completion of the SRQ's last QP
	 * (shiftu_srq_give_back()) in its window: the table goes once it is
	 * out.
	 */
	if (tabled) {
		if (shiftu_quiesce(SRQ_QUIESCE_NS, false)) {
			shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
			shiftu_srqtab_fini(&r->tab);
			r->dying = false;
			shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
		} else {
			shiftu_warn("srq %u: a thread stayed inside a verb: its table is kept",
				    r->id);
		}
	}
	/* its QPs are gone (the verbs refuse to destroy an SRQ in use), their twins with them */
	if (bak && shiftu_real.destroy_srq(bak))
		shiftu_warn("srq %u: cannot destroy its twin", r->id);
}

/*
 * Post the work request @w, whose keys are the application's, on @side's
 * SRQ.  Returns 0 or an errno: ENOENT when a key has no backup yet (an MR
 * the shadow thread has not mirrored).  srq_lock.
 */
static int side_post(struct shiftu_srq *r, enum shiftu_side side, struct ibv_recv_wr *w)
{
	struct ibv_recv_wr *bad;
	struct ibv_sge sge[MAX_SGE];
	struct shiftu_vqp *any;
	int i, ret;

	if (side == SHIFTU_SIDE_DEFAULT) {
		ret = r->sctx->post_srq_recv(r->app, w, &bad);
		/* counted where the common path's posts are not (wait_default()) */
		if (!ret)
			r->def_prod++;
		return ret;
	}
	if (!r->bak || !r->n_qps || w->num_sge > MAX_SGE)
		return EINVAL;
	/* the backup device's keys for the same memory */
	any = r->qps[0];
	for (i = 0; i < w->num_sge; i++) {
		sge[i] = w->sg_list[i];
		if (shiftu_backup_lkey(any, sge[i].lkey, &sge[i].lkey))
			return ENOENT;
	}
	w->sg_list = sge;
	return r->bak->context->ops.post_srq_recv(r->bak, w, &bad);
}

/*
 * Post @w, entry @id of the table, on @side; one whose memory has no key
 * on the backup device yet goes to the default SRQ instead (it waits
 * there, rather than fail).  Returns 0 or an errno.  srq_lock.
 */
static int post_entry(struct shiftu_srq *r, uint64_t id, enum shiftu_side side,
		      struct ibv_recv_wr *w)
{
	int ret = side_post(r, side, w);

	if (ret != ENOENT || side != SHIFTU_SIDE_TWIN)
		return ret;
	shiftu_srqtab_move(&r->tab, id, SHIFTU_SIDE_DEFAULT);
	if (!r->told_key++)
		shiftu_info("srq %u on %s: a receive's memory has no key on %s yet: posted on the default SRQ",
			    r->id, r->sctx->dev_name, r->sctx->bak_name);
	return side_post(r, SHIFTU_SIDE_DEFAULT, w);
}

/* Post entry @id again, on @side (a move).  srq_lock. */
static int repost(struct shiftu_srq *r, uint64_t id, enum shiftu_side side)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_recv_wr w;

	if (r->tab.max_sge > MAX_SGE || shiftu_srqtab_wr(&r->tab, id, &w, sg) ||
	    shiftu_srqtab_move(&r->tab, id, side))
		return EINVAL;
	return post_entry(r, id, side, &w);
}

int shiftu_srq_post(struct shiftu_srq *r, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr w;
	enum shiftu_side side;
	uint64_t id, app;
	int ret = 0;

	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	if (!r->tabled) {
		shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
		return shiftu_wrid_post_srq(r->sctx, r->post, r->app, wr, bad_wr);
	}
	for (; wr; wr = wr->next) {
		side = shiftu_srqtab_route(&r->tab);
		ret = -shiftu_srqtab_put(&r->tab, wr, side, &id);
		if (!ret) {
			w = (struct ibv_recv_wr){
				.wr_id = id, .sg_list = wr->sg_list, .num_sge = wr->num_sge,
			};
			ret = post_entry(r, id, side, &w);
			if (ret)
				shiftu_srqtab_take(&r->tab, id, &app);
		}
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	return ret;
}

static void settle(struct shiftu_srq *r);

const char *shiftu_srq_qp_attach(struct shiftu_vqp *vq, struct ibv_srq *srq)
{
	struct shiftu_srq *r = shiftu_srq_find(srq);
	const char *why = NULL;

	if (!r)
		return "its SRQ was not made by ibv_create_srq";
	/* its receive queue is the SRQ: the drain sizes by it */
	vq->init_attr.cap.max_recv_wr = r->attr.max_wr;
	vq->init_attr.cap.max_recv_sge = r->attr.max_sge;
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	if (!r->tabled) {
		why = "its SRQ's receives cannot be moved";
	} else if (r->n_qps == r->cap_qps) {
		unsigned int cap = r->cap_qps ? 2 * r->cap_qps : 4;
		struct shiftu_vqp **q = realloc(r->qps, cap * sizeof(*q));

		if (q) {
			r->qps = q;
			r->cap_qps = cap;
		} else {
			why = "out of memory";
		}
	}
	if (r->tabled) {
		if (!why)
			r->qps[r->n_qps++] = vq;
		/*
		 * Counted on the default side even when it cannot be protected
		 * (no room in the list): it consumes from the default SRQ all the
		 * same, which must not be emptied under it.
		 */
		vq->srq = r;
		vq->srq_side = SHIFTU_SIDE_DEFAULT;
		shiftu_srqtab_join(&r->tab, SHIFTU_SIDE_DEFAULT);
		/* receives a destroyed QP left on the twin come here */
		settle(r);
	}
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	return why;
}

/*
 * The default SRQ @q is about to be emptied: wait until its producer index
 * counts every receive the common path posted there.  Their claims are
 * all made (the path is shut and its windows were waited out, which the
 * twin side's QPs show), but a provider's post may still be on its way,
 * after its thread's window (a tail call).  Returns 0, or -EBUSY when one
 * is still missing after SRQ_QUIESCE_NS (its thread stopped in between:
 * the SRQ cannot be emptied under it).  srq_lock.
 */
static int wait_default(struct shiftu_srq *r, const struct rxe_queue_buf *q)
{
	uint32_t want = (r->def_prod + (uint32_t)shiftu_srqtab_fast_posts(&r->tab)) &
			q->index_mask;
	uint64_t t0 = 0, t;

	if (!r->slow)
		return -EBUSY;
	while (__atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE) != want) {
		t = shiftu_mono_ns();
		if (!t0)
			t0 = t;
		if (t - t0 > SRQ_QUIESCE_NS)
			return -EBUSY;
		shiftu_wait_step(t - t0);
	}
	return 0;
}

/*
 * No QP is left on @from: its SRQ is inert, and what it holds goes to
 * @to's, in its order.  The SRQ is then empty.  Returns how many moved,
 * or -errno.  srq_lock.
 */
static int empty_side(struct shiftu_srq *r, enum shiftu_side from, enum shiftu_side to)
{
	struct rxe_queue_buf *q = from == SHIFTU_SIDE_TWIN ? r->bak_ring : r->ring;
	uint32_t prod, cons, i;
	int n = 0, ret;

	if (!q)
		return -EPROTO;
	if (from == SHIFTU_SIDE_DEFAULT && wait_default(r, q)) {
		shiftu_warn("srq %u on %s: a post to its default SRQ did not arrive: it is not emptied",
			    r->id, r->sctx->dev_name);
		return -EBUSY;
	}
	prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);
	/* nothing takes from it now: back to where the NIC stopped */
	__atomic_store_n(&q->producer_index, cons, __ATOMIC_RELEASE);
	if (from == SHIFTU_SIDE_DEFAULT)
		r->def_prod += cons - prod;
	for (i = cons; i != prod; i = (i + 1) & q->index_mask) {
		uint64_t id = slot(q, i)->wr_id;

		if (!shiftu_srqtab_find(&r->tab, id))
			continue;	/* not the table's: none is posted otherwise */
		ret = repost(r, id, to);
		if (ret) {
			shiftu_warn("srq %u on %s: cannot post a receive on its %s: %s",
				    r->id, r->sctx->dev_name, side_name[to], strerror(ret));
			return -ret;
		}
		n++;
	}
	return n;
}

/*
 * A side with no QP that still holds receives, while the other has QPs:
 * they move there (its last QP was destroyed, say).  srq_lock.
 */
static void settle(struct shiftu_srq *r)
{
	enum shiftu_side s;
	int n;

	for (s = SHIFTU_SIDE_DEFAULT; s < SHIFTU_SIDES; s++) {
		if (r->tab.members[s] || !r->tab.members[!s] ||
		    !shiftu_srqtab_outstanding(&r->tab, s))
			continue;
		n = empty_side(r, s, !s);
		if (n > 0)
			shiftu_info("srq %u on %s: %d receives moved from its %s, which no QP uses now, to its %s",
				    r->id, r->sctx->dev_name, n, side_name[s], side_name[!s]);
	}
}

void shiftu_srq_qp_detach(struct shiftu_vqp *vq)
{
	struct shiftu_srq *r = vq->srq;
	unsigned int i;

	if (!r)
		return;
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	for (i = 0; i < r->n_qps; i++)
		if (r->qps[i] == vq) {
			r->qps[i] = r->qps[--r->n_qps];
			break;
		}
	/* not settled here: the QP is destroyed after this, and may still
	 * take a receive; the next QP to join or move settles the SRQ */
	if (r->tabled) {
		shiftu_srqtab_leave(&r->tab, vq->srq_side);
		gate(r);
	}
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	vq->srq = NULL;
}

struct ibv_srq *shiftu_srq_twin(struct shiftu_vqp *vq, struct ibv_pd *bak_pd)
{
	struct shiftu_srq *r = vq->srq;
	struct ibv_srq_init_attr a = { .attr = r->attr };
	struct rxe_queue_buf *ring;
	struct ibv_srq *bak;

	if (r->bak)
		return r->bak;
	if (!bak_pd)
		return NULL;
	/* as many entries: it may hold every receive */
	a.attr.srq_limit = 0;
	bak = shiftu_real.create_srq(bak_pd, &a);
	if (!bak) {
		shiftu_warn("srq %u on %s: cannot create its twin on %s: %s",
			    r->id, r->sctx->dev_name, r->sctx->bak_name, strerror(errno));
		return NULL;
	}
	if (shiftu_provq_find_srq(bak, &a.attr, &ring)) {
		shiftu_warn("srq %u on %s: its twin's ring is not one the library can empty",
			    r->id, r->sctx->dev_name);
		shiftu_real.destroy_srq(bak);
		return NULL;
	}
	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	r->bak = bak;
	r->bak_ring = ring;
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	shiftu_info("srq %u on %s: twin srq %u on %s (%u receives)", r->id,
		    r->sctx->dev_name, bak->handle, r->sctx->bak_name, a.attr.max_wr);
	return bak;
}

int shiftu_twin_post_recv(struct shiftu_vqp *vq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct ibv_qp *t = vq->bak_qp;

	/* the provider's own: the backup context's ops are not the library's */
	if (t->srq)
		return t->context->ops.post_srq_recv(t->srq, wr, bad_wr);
	return t->context->ops.post_recv(t, wr, bad_wr);
}

int shiftu_srq_move(struct shiftu_vqp *vq, bool from_twin, bool to_twin,
		    const uint64_t *ids, unsigned int n)
{
	enum shiftu_side from = from_twin ? SHIFTU_SIDE_TWIN : SHIFTU_SIDE_DEFAULT;
	enum shiftu_side to = to_twin ? SHIFTU_SIDE_TWIN : SHIFTU_SIDE_DEFAULT;
	struct shiftu_srq *r = vq->srq;
	unsigned int i;
	int ret = 0, moved = 0;

	shiftu_lock(&srq_lock, SHIFTU_LOCK_SRQ);
	/*
	 * The first QP for the twin side: posts must pick their side from now
	 * on, under the lock.  A post that got a credit before the path shut
	 * is still in its window, claiming: it goes to the default SRQ, which
	 * must not be emptied under it (nor before its provider's post, which
	 * follows the window: wait_default()).
	 */
	if (to == SHIFTU_SIDE_TWIN && !r->slow) {
		r->slow = true;
		shiftu_srqtab_shut(&r->tab, true);
		if (!shiftu_quiesce_srq(r, SRQ_QUIESCE_NS)) {
			ret = -EBUSY;
			shiftu_warn("qp %u on %s: a thread stayed inside its post to srq %u",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, r->id);
			goto out;
		}
	}
	for (i = 0; i < n && !ret; i++)
		ret = -repost(r, ids[i], to);
	if (ret) {
		shiftu_warn("qp %u on %s: the receive its NIC took from srq %u cannot be posted on its %s: %s",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, r->id, side_name[to],
			    strerror(-ret));
		goto out;
	}
	if (from != to) {
		shiftu_srqtab_join(&r->tab, to);
		vq->srq_side = to;
		if (shiftu_srqtab_leave(&r->tab, from) &&
		    shiftu_srqtab_outstanding(&r->tab, from)) {
			moved = empty_side(r, from, to);
			if (moved < 0) {
				ret = moved;
				shiftu_warn("qp %u on %s: the receives of srq %u on its %s cannot move: %s",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name, r->id,
					    side_name[from], strerror(-ret));
				goto out;
			}
		}
	}
	shiftu_info("qp %u on %s: srq %u: %d receives moved from its %s to its %s, %u taken by the NIC and flushed; %u QPs on the default SRQ, %u on the twin",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, r->id, moved, side_name[from],
		    side_name[to], n, r->tab.members[SHIFTU_SIDE_DEFAULT],
		    r->tab.members[SHIFTU_SIDE_TWIN]);
	/* the last QP back from the twin side opens the common path again */
	gate(r);
out:
	shiftu_unlock(&srq_lock, SHIFTU_LOCK_SRQ);
	return ret;
}
