// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cq.c: the CQ side of a failover (cq.h): the slow polls of the
 * application's CQs.
 *
 * While a QP is on its twin, or the library holds completions for the
 * application, the application's polls of its CQs take the slow path here:
 * first what the library holds (the stash, in the order the NIC produced
 * it), then the application's CQ, then the twin CQ, whose completions get
 * the application's QP number (cqtwin.c).  The library's own completions
 * (markers, probes, control messages, a bell's) are taken out on the way;
 * a peer's control message is handed to the handshake, through its CQ's
 * park beyond a poll's batch (cqpark.c).  An error completion the fast
 * poll meets may start a failover (shiftu_poll_error(), cqerr.c).  The
 * watcher (cqtwin.c) and the shadow thread serve the CQs the application
 * may not be polling.  cq_int.h says what these files share.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "bell.h"
#include "cq.h"
#include "cq_int.h"
#include "cqex.h"
#include "failover.h"
#include "handshake.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "shadow.h"
#include "testbuild.h"
#include "util.h"

bool shiftu_recv_owed_pay(struct shiftu_vqp *vq)
{
	uint64_t owed = __atomic_load_n(&vq->recv_owed, __ATOMIC_RELAXED);

	while (owed)
		if (__atomic_compare_exchange_n(&vq->recv_owed, &owed, owed - 1, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	return false;
}

/*
 * Count the receive completions among @k just taken from a CQ of @s, if
 * pollers count them (shiftu_wc_look).
 */
void shiftu_took(struct shiftu_ctx *s, const struct ibv_wc *wc, int k)
{
	uint32_t look = __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED) >> 32;
	int i;

	for (i = 0; i < k; i++)
		if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & look))
			shiftu_count_recv(s, wc[i].qp_num);
}

int shiftu_stash_push(struct shiftu_cq *c, const struct ibv_wc *wc)
{
	if (shiftu_bell_is(c, wc))
		return 0;	/* the library's wake-up: never the application's */
	/* a sleeping application must hear of it: the stash raises no event */
	shiftu_bell_ring(c, wc);
	if (c->stash_n == c->stash_cap) {
		unsigned int cap = c->stash_cap ? 2 * c->stash_cap : 64, i;
		struct ibv_wc *s = malloc(cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (i = 0; i < c->stash_n; i++)
			s[i] = c->stash[(c->stash_head + i) % c->stash_cap];
		free(c->stash);
		c->stash = s;
		c->stash_cap = cap;
		c->stash_head = 0;
	}
	c->stash[(c->stash_head + c->stash_n) % c->stash_cap] = *wc;
	c->stash_n++;
	return 0;
}

/*
 * An error of a QP whose failover waits for a batch its poster has open
 * (wrapi.c), or for the peer's verdict on a refused receive (cqerr.c):
 * the failover takes it from the stash, with what follows it.
 */
static bool stash_held(struct shiftu_cq *c, const struct ibv_wc *wc)
{
	struct shiftu_vqp *vq;

	if (wc->status == IBV_WC_SUCCESS)
		return false;
	vq = shiftu_vqp_by_num(c->sctx, wc->qp_num);
	/* a QP its application stopped meanwhile waits for no verdict */
	return vq && (__atomic_load_n(&vq->move_deferred, __ATOMIC_RELAXED) ||
		      (__atomic_load_n(&vq->refused_ns, __ATOMIC_RELAXED) &&
		       !__atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED)));
}

void shiftu_ctrl_sent(struct shiftu_vqp *vq)
{
	__atomic_fetch_add(&vq->ctrl_due, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->sctx->slow_cqs, 1, __ATOMIC_RELAXED);
}

void shiftu_ctrl_send_done(struct shiftu_vqp *vq, bool all)
{
	uint32_t due = __atomic_load_n(&vq->ctrl_due, __ATOMIC_RELAXED), n;

	do {
		if (!due)
			return;
		n = all ? due : 1;
	} while (!__atomic_compare_exchange_n(&vq->ctrl_due, &due, due - n, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	__atomic_fetch_sub(&vq->sctx->slow_cqs, n, __ATOMIC_RELAXED);
}

/* The library's own completion @wc, taken from an application's CQ of
 * context @s, is dropped: a control message's gives its slow poll back. */
static void own_dropped(struct shiftu_ctx *s, const struct ibv_wc *wc)
{
	struct shiftu_vqp *vq;

	shiftu_ctrl_recv_check(wc);
	if (shiftu_wrid_kind(wc->wr_id) == SHIFTU_WRID_CTRL_SEND &&
	    (vq = shiftu_vqp_by_num(s, wc->qp_num)))
		shiftu_ctrl_send_done(vq, false);
}

/* Takes the library's own completions out of @wc[0..n), taken from an
 * application's CQ of @s; returns how many are left. */
int shiftu_drop_ours(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	int i, j;

	for (i = 0, j = 0; i < n; i++)
		if (!shiftu_wc_ours(&wc[i]))
			wc[j++] = wc[i];
		else
			own_dropped(s, &wc[i]);
	return j;
}

/*
 * What the stash holds for the application, in order.  The library's own
 * completions a poller stashed with a QP's errors (a drain's markers, a
 * control receive flushed) are the drain's to count; what is left of them
 * once no drain is under way (the caller waited for that) is dropped here.
 */
static int stash_pop(struct shiftu_cq *c, struct ibv_wc *wc, int num)
{
	int n = 0;

	while (n < num && c->stash_n && !stash_held(c, &c->stash[c->stash_head])) {
		if (!shiftu_wc_ours(&c->stash[c->stash_head]))
			wc[n++] = c->stash[c->stash_head];
		else
			own_dropped(c->sctx, &c->stash[c->stash_head]);
		c->stash_head = (c->stash_head + 1) % c->stash_cap;
		c->stash_n--;
	}
	return n;
}

void shiftu_cq_slow(struct shiftu_vqp *vq, bool on)
{
	cq_slow_ctx(vq->sctx, on);
}

/*
 * The application's slow poll waits while a library thread waits for
 * @c's lock, up to GIVE_WAY_NS: a bound, so that no wait of the library's
 * can hang on a poll that gives way (the lock is an ordinary mutex after
 * it).  The first millisecond yields, which on one CPU runs the waiter.
 */
#define GIVE_WAY_NS	(50 * 1000 * 1000ULL)

static void cq_give_way(struct shiftu_cq *c)
{
	uint64_t t0;

	if (!__atomic_load_n(&c->urgent, __ATOMIC_RELAXED))
		return;
	t0 = shiftu_mono_ns();
	while (__atomic_load_n(&c->urgent, __ATOMIC_RELAXED) &&
	       shiftu_mono_ns() - t0 < GIVE_WAY_NS)
		shiftu_wait_step(shiftu_mono_ns() - t0);
}

/*
 * @c's lock, once no drain is under way on it: a drain drops its CQs'
 * locks now and then (for a poller to stash what it took), and nothing but
 * that poller may take completions from the CQs meanwhile.  @urgent: for a
 * library thread (cq_take()), not the application's poll.
 */
static void cq_lock_quiet(struct shiftu_cq *c, bool urgent)
{
	uint64_t t0 = 0;

	cq_take(c, urgent);
	while (c->draining) {
		shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
		/* out of the drain's way: it may need this CPU */
		if (!t0)
			t0 = shiftu_mono_ns();
		shiftu_wait_step(shiftu_mono_ns() - t0);
		cq_take(c, urgent);
	}
}

void shiftu_cq_lock_quiet(struct shiftu_cq *c)
{
	cq_lock_quiet(c, true);
}

/* Both CQs of a QP, locked in address order (one lock if they are one). */
void shiftu_lock_cqs(struct shiftu_cq *a, struct shiftu_cq *b)
{
	if (a == b) {
		cq_lock_urgent(a);
	} else if (a < b) {
		cq_lock_urgent(a);
		cq_lock_urgent(b);
	} else {
		cq_lock_urgent(b);
		cq_lock_urgent(a);
	}
}

void shiftu_unlock_cqs(struct shiftu_cq *a, struct shiftu_cq *b)
{
	shiftu_unlock(&a->lock, SHIFTU_LOCK_CQ);
	if (b != a)
		shiftu_unlock(&b->lock, SHIFTU_LOCK_CQ);
}

int shiftu_app_own(struct shiftu_cq *c, struct ibv_wc *wc, int k,
		   struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct shiftu_ctx *s = c->sctx;
	struct shiftu_vqp *vq;
	int i, kept = 0;

	for (i = 0; i < k; i++) {
		enum shiftu_wrid kind = shiftu_wrid_kind(wc[i].wr_id);

		if (kind == SHIFTU_WRID_CTRL_DEF && (wc[i].opcode & IBV_WC_RECV) &&
		    wc[i].status == IBV_WC_SUCCESS && (vq = shiftu_vqp_by_num(s, wc[i].qp_num))) {
			/* no immediate: the peer's probe, which only had to
			 * arrive (shiftu_probe()); its message comes next */
			if (wc[i].wc_flags & IBV_WC_WITH_IMM) {
				struct shiftu_hs_msg m = {
					.vq = vq, .imm = be32toh(wc[i].imm_data),
					.on_default = true,
					.foreign = wc[i].opcode != IBV_WC_RECV,
					.gen = shiftu_ctrl_def_gen(wc[i].wr_id),
				};

				shiftu_hs_keep(c, msgs, n_msgs, &m);
			}
			continue;
		}
		if (kind == SHIFTU_WRID_CTRL_SEND && (vq = shiftu_vqp_by_num(s, wc[i].qp_num))) {
			shiftu_ctrl_send_done(vq, false);
			continue;
		}
		if (kind == SHIFTU_WRID_PROBE && (vq = shiftu_vqp_by_num(s, wc[i].qp_num))) {
			vq->probe_state = wc[i].status == IBV_WC_SUCCESS ? 2 : 3;
			continue;
		}
		wc[kept++] = wc[i];
	}
	return kept;
}

/*
 * What an application's poll took: the library's own completions taken
 * out (shiftu_app_own(), and its flushed requests).  Returns how many are
 * left.
 */
static int app_ctrl(struct shiftu_cq *c, struct ibv_wc *wc, int k,
		    struct shiftu_hs_msg *msgs, int *n_msgs)
{
	k = shiftu_app_own(c, wc, k, msgs, n_msgs);
	return shiftu_drop_ours(c->sctx, wc, k);
}

/*
 * SHIFTU_TEST_SERVE_DELAY_MS: shiftu_app_serve() is held before its look
 * until the message came to the application's poll, for half a second at
 * most (so that the turn right after a good probe, which a leader's
 * failback starts from, finds it taken, whichever thread went back and
 * however long the peer took); and for that long before it keeps what it
 * found, so that a poll of the application's on the common path, were it
 * let run meanwhile, would overtake it.
 */
#define SERVE_TEST_WAIT_NS	(500ULL * 1000 * 1000)

static void serve_test_wait(const struct shiftu_vqp *vq)
{
	uint64_t until;

	if (!shiftu_test_serve_delay_ms())
		return;
	until = shiftu_mono_ns() + SERVE_TEST_WAIT_NS;
	/* not shiftu_awaits_default(): false for a moment in a going back */
	while (__atomic_load_n(&vq->ctrl_default, __ATOMIC_RELAXED) &&
	       shiftu_mono_ns() < until)
		usleep(1000);
}

static void serve_test_delay(void)
{
	uint32_t ms = shiftu_test_serve_delay_ms();

	if (ms)
		usleep(ms * 1000U);
}

/*
 * The shadow thread's turn while a two-sided failback waits for the
 * peer's message on @vq's default QP: the application may not poll the CQ
 * it comes to.  What else is there is kept for the application.
 *
 * The wait is looked at again under the CQ's lock: the message may have
 * come to the application's poll meanwhile, and the QP gone back with it
 * (shiftu_moved(), move.c, holds this lock).  Its CQs then leave the slow poll, and the
 * application's polls on the common path would race this one: completions
 * it stashed would reach the application after later ones (a SEND pair's
 * server would see a message late, with the peer's replay streaming in).
 */
void shiftu_app_serve(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_vqp *fo = NULL, *v;
	struct shiftu_cq *c = vq->rcq;
	struct ibv_wc wc[16], first;
	int k, i, n_msgs = 0;

	serve_test_wait(vq);
	shiftu_cq_lock_quiet(c);
	if (!shiftu_awaits_default(vq)) {
		shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
		shiftu_dbg("qp %u: the failback's message came to the application's poll meanwhile: its CQ left alone",
			   vq->reg.app_qp->qp_num);
		return;
	}
	k = c->sctx->poll_cq(c->app, SHIFTU_ARRAY_SIZE(wc), wc);
	if (k > 0) {
		k = app_ctrl(c, wc, k, msgs, &n_msgs);
		shiftu_took(c->sctx, wc, k);
		if (k)
			serve_test_delay();
		for (i = 0; i < k; i++) {
			/* a QP's first error: the move counts it in the stash */
			if (!fo && wc[i].status != IBV_WC_SUCCESS &&
			    (v = shiftu_error_vq(c->sctx, c->app, &wc[i]))) {
				fo = v;
				first = wc[i];
			}
			shiftu_stash_push(c, &wc[i]);
		}
		if (k) {
			cq_slow_ctx(c->sctx, true);
			c->slow_leftover++;
		}
	}
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	shiftu_hs_deliver(msgs, n_msgs);
	shiftu_hs_unpark(c);
	/* this is the shadow thread, which resets twins: no waiting */
	if (fo)
		shiftu_error_failover(fo, &first, false);
}

void shiftu_hs_deliver(struct shiftu_hs_msg *msgs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		shiftu_hs_message(&msgs[i]);
}

void shiftu_cq_backs(struct shiftu_cq *c)
{
	struct shiftu_vqp *v[SHIFTU_ARRAY_SIZE(c->twins)];
	unsigned int i, n = 0;

	if (!__atomic_load_n(&c->back_due, __ATOMIC_ACQUIRE))
		return;
	cq_lock_urgent(c);
	__atomic_store_n(&c->back_due, false, __ATOMIC_RELAXED);
	for (i = 0; i < c->n_twins; i++)
		if (__atomic_load_n(&c->twins[i]->back_due_ns, __ATOMIC_ACQUIRE))
			v[n++] = c->twins[i];
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	for (i = 0; i < n; i++)
		shiftu_take_back(v[i]);
}

int shiftu_poll_cq_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
			struct ibv_wc *wc)
{
	int n = shiftu_poll_slow(s, cq, num, wc);

	/* receives posted through an SRQ's table, requests renamed: the
	 * application's ids back, once (rename.h) */
	return shiftu_wrid_out_all(s, wc, n);
}

int shiftu_poll_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct shiftu_cq *c = shiftu_cq_find(cq);
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_vqp *fo = NULL;
	struct ibv_wc first;
	int n, k, n_msgs = 0;

	if (!c)
		return s->poll_cq(cq, num, wc);
	cq_give_way(c);
	cq_lock_quiet(c, false);
	/* held ones wait, and so does what came after them */
	n = stash_pop(c, wc, num);
	/* another thread's direct session of an extended CQ holds it (cqex.h) */
	if (n < num && !c->stash_n && !shiftu_cqx_busy(cq)) {
		k = s->poll_cq(cq, num - n, wc + n);
		if (k < 0 && !n) {
			n = k;
		} else if (k > 0) {
			k = app_ctrl(c, wc + n, k, msgs, &n_msgs);
			shiftu_took(s, wc + n, k);
			k = shiftu_hold_error(s, c, wc + n, k, &fo, &first);
			n += k;
		}
	}
	if (!fo && n >= 0 && n < num && !c->stash_n && c->bak && c->n_twins) {
		k = c->bak->context->ops.poll_cq(c->bak, num - n, wc + n);
		if (k > 0)
			n += shiftu_twin_take(c, wc + n, k, msgs, &n_msgs);
	}
	if (c->slow_leftover && !c->stash_n) {
		/* a failed-back QP left completions here: served now */
		c->slow_leftover--;
		cq_slow_ctx(s, false);
	}
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	shiftu_hs_deliver(msgs, n_msgs);
	shiftu_hs_unpark(c);
	shiftu_cq_fences(c);
	shiftu_cq_backs(c);
	if (fo) {
		shiftu_error_failover(fo, &first, true);
		if (!n)
			return shiftu_poll_slow(s, cq, num, wc);
	}
	return n;
}
