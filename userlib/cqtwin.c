// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cqtwin.c: the twin CQ's completions (cq.h, cq_int.h).
 *
 * While a QP is on its twin, its completions come to its twin's CQ: the
 * application's slow poll of its CQ takes them after what the CQ itself
 * holds (cq.c).  The library's own are taken out on the way (a peer's
 * control message goes to the handshake), the application's get the
 * application's QP number (shiftu_twin_take()).  The watcher serves a
 * twin CQ that had an event, which the application may not be polling
 * (shiftu_twin_serve()), and a twin whose fence has completed releases
 * its held requests (shiftu_cq_fences()).
 */
#include <endian.h>
#include <stdlib.h>

#include "cq.h"
#include "cq_int.h"
#include "failover.h"
#include "handshake.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "shadow.h"
#include "util.h"

/* a statistic of the process's: the child's starts at zero */
static void twin_wcs_fork_child(void)
{
	shiftu_twin_wcs = 0;
}
SHIFTU_FORK_HOOK(twin_wcs, .rank = SHIFTU_RANK_NONE, .name = "twin_wcs",
		 .child = twin_wcs_fork_child);

bool shiftu_twins_has(const struct shiftu_cq *c, const struct shiftu_vqp *vq)
{
	unsigned int j;

	for (j = 0; j < c->n_twins; j++)
		if (c->twins[j] == vq)
			return true;
	return false;
}

void shiftu_twins_add(struct shiftu_cq *c, struct shiftu_vqp *vq)
{
	if (!shiftu_twins_has(c, vq))
		c->twins[c->n_twins++] = vq;
}

void shiftu_twins_del(struct shiftu_cq *c, struct shiftu_vqp *vq)
{
	unsigned int j;

	for (j = 0; j < c->n_twins; j++)
		if (c->twins[j] == vq) {
			c->twins[j] = c->twins[--c->n_twins];
			break;
		}
}

/*
 * Room in a twin's hold beyond its two queues: the receives of its SRQ a
 * drain may meet flushed (move.c: SRQ_FLUSHED).
 */
#define TW_HELD_SLACK	8

/*
 * The error completion @wc of @vq's twin, polled from @c, while the QP's
 * work is on it (Fallback): the twin failed under it (in the 1000-fault
 * soak, Soft-RoCE's responder lost its place on the backup rail, and both
 * twins stopped).  Nothing backs a twin, but the default QP may be good
 * again: the error, and the twin's flushes after it, wait in @vq's hold
 * for the failback that goes back (the drain counts them, and the sends
 * among them are replayed), and the shadow thread is told to ask for that
 * failback at once.  Returns false, the completion left to the
 * application, when the work is elsewhere (a move under way drains the
 * twin itself) or the hold has no room.  Context: c->lock held.
 */
static bool twin_hold(struct shiftu_cq *c, struct shiftu_vqp *vq, const struct ibv_wc *wc)
{
	unsigned int side = c == vq->rcq && c != vq->scq;
	unsigned int cap = vq->sq.mask + vq->rq.mask + 2 + TW_HELD_SLACK;

	if (__atomic_load_n(&vq->state, __ATOMIC_RELAXED) != SHIFTU_SEND_FALLBACK ||
	    !vq->on_twin || vq->twin_drain || __atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		return false;
	if (!vq->tw_held[side]) {
		vq->tw_held[side] = malloc(cap * sizeof(*wc));
		if (!vq->tw_held[side])
			return false;
	}
	if (vq->tw_held_n[side] == cap) {
		/* more than the QP can have outstanding: not its twin's */
		shiftu_warn("qp %u on its twin: more error completions than requests outstanding: the application gets them",
			    vq->reg.app_qp->qp_num);
		return false;
	}
	vq->tw_held[side][vq->tw_held_n[side]++] = *wc;
	if (!__atomic_load_n(&vq->twin_dead_ns, __ATOMIC_RELAXED)) {
		__atomic_store_n(&vq->twin_dead_ns, shiftu_mono_ns(), __ATOMIC_RELEASE);
		shiftu_info("qp %u on its twin, qp %u on %s: %s: its twin failed: going back to %s once its path is up, its errors held until then",
			    vq->reg.app_qp->qp_num, wc->qp_num, vq->sctx->bak_name,
			    shiftu_wc_status_word(wc->status), vq->sctx->dev_name);
		shiftu_shadow_poke();
	}
	return true;
}

/*
 * Completions @wc[0..k) polled from @c's twin CQ: the library's own are
 * taken out (a peer's control message goes to @msgs, or @c's park:
 * shiftu_hs_keep()), the application's get their QP's number.  Returns how
 * many are left.  Context: c->lock held.
 */
int shiftu_twin_take(struct shiftu_cq *c, struct ibv_wc *wc, int k,
		    struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct shiftu_vqp *t;
	int i, j, kept = 0;

	for (i = 0; i < k; i++) {
		t = NULL;
		for (j = 0; j < (int)c->n_twins; j++)
			if (c->twins[j]->bak_qp->qp_num == wc[i].qp_num) {
				t = c->twins[j];
				break;
			}
		switch (shiftu_wrid_kind(wc[i].wr_id)) {
		case SHIFTU_WRID_APP:
		case SHIFTU_WRID_SRQ:		/* renamed on its way out (srq.h) */
		case SHIFTU_WRID_RENAMED:	/* ... (rename.h) */
			break;
		case SHIFTU_WRID_CTRL_RECV:
			/* a peer's control message; flushed, nobody's */
			shiftu_ctrl_recv_check(&wc[i]);
			if (!t)
				t = shiftu_vqp_by_twin(c->sctx, wc[i].qp_num);
			if (t && wc[i].status == IBV_WC_SUCCESS) {
				struct shiftu_hs_msg m = {
					.vq = t, .imm = be32toh(wc[i].imm_data),
					.foreign = wc[i].opcode != IBV_WC_RECV,
					.gen = __atomic_load_n(&t->reconnects,
							       __ATOMIC_RELAXED),
				};

				shiftu_hs_keep(c, msgs, n_msgs, &m);
			}
			continue;
		case SHIFTU_WRID_CTRL_SEND:
			/*
			 * Ours (sq_sig_all, or an error): one that failed
			 * never reached the peer, which then cannot answer
			 * (a side that holds its sends for the answer waits
			 * out its 10 s); the log says so now.
			 */
			if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR)
				shiftu_warn("twin qp %u on %s: our control message to the peer failed: %s: it cannot answer",
					    wc[i].qp_num, c->sctx->bak_name,
					    shiftu_wc_status_word(wc[i].status));
			continue;
		default:
			/* a marker a drain gave up on: never the application's */
			continue;
		}
		if (t && wc[i].status != IBV_WC_SUCCESS && twin_hold(c, t, &wc[i]))
			continue;
		if (t) {
			/*
			 * A twin that failed where its work cannot go back:
			 * its failure is the application's to see, and the
			 * log says whose it was (the flushes behind it say
			 * nothing new).
			 */
			if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR)
				shiftu_warn("qp %u on its twin, qp %u on %s: %s: its work cannot go back: the application gets its errors",
					    t->reg.app_qp->qp_num, wc[i].qp_num,
					    t->sctx->bak_name,
					    shiftu_wc_status_word(wc[i].status));
			wc[i].qp_num = t->reg.app_qp->qp_num;
			if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & IBV_WC_RECV))
				__atomic_fetch_add(&t->consumed, 1, __ATOMIC_RELAXED);
			else if (!(wc[i].opcode & IBV_WC_RECV))
				t->twin_done++;	/* send completions are the signaled ones */
			/* its fence may be this one, or posted as we look */
			if (t->state == SHIFTU_SEND_WAIT_DRAINED ||
			    t->state == SHIFTU_SEND_WAIT_SIGNALED)
				__atomic_store_n(&c->fence_due, true, __ATOMIC_RELAXED);
		}
		wc[kept++] = wc[i];
	}
	if (kept)
		__atomic_fetch_add(&shiftu_twin_wcs, kept, __ATOMIC_RELAXED);
	return kept;
}

void shiftu_cq_fences(struct shiftu_cq *c)
{
	struct shiftu_vqp *v[SHIFTU_ARRAY_SIZE(c->twins)];
	unsigned int i, n = 0;

	if (!__atomic_load_n(&c->fence_due, __ATOMIC_RELAXED))
		return;
	/*
	 * Every twin waiting for its fence, not only the last one seen: one
	 * poll may complete the fences of several (16 QPs on one CQ).  The
	 * state is a hint here; shiftu_try_drain() reads it under fo_lock.
	 */
	cq_lock_urgent(c);
	__atomic_store_n(&c->fence_due, false, __ATOMIC_RELAXED);
	for (i = 0; i < c->n_twins; i++)
		if (c->twins[i]->state == SHIFTU_SEND_WAIT_DRAINED)
			v[n++] = c->twins[i];
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	for (i = 0; i < n; i++)
		shiftu_try_drain(v[i]);
}

/*
 * The watcher's turn (watcher.c): @c's twin CQ had an event.  What it
 * holds goes to the stash, for the application's next poll; the CQ is
 * armed again.  Context: the watcher thread, no lock held.
 */
void shiftu_twin_serve(struct shiftu_cq *c)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct ibv_wc wc[16];
	int k, i, kept, n_msgs = 0, pass;
	bool any = false;

	shiftu_cq_lock_quiet(c);
	for (pass = 0; pass < 2; pass++) {
		/* poll, arm, poll: nothing that came in between is missed */
		do {
			k = c->bak->context->ops.poll_cq(c->bak, SHIFTU_ARRAY_SIZE(wc), wc);
			kept = k > 0 ? shiftu_twin_take(c, wc, k, msgs, &n_msgs) : 0;
			for (i = 0; i < kept; i++)
				shiftu_stash_push(c, &wc[i]);
			any |= kept > 0;
		} while (k == (int)SHIFTU_ARRAY_SIZE(wc));
		if (!pass)
			c->bak->context->ops.req_notify_cq(c->bak, 0);
	}
	if (any) {
		/* the stash must be served: slow until it is empty */
		cq_slow_ctx(c->sctx, true);
		c->slow_leftover++;
	}
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	shiftu_hs_deliver(msgs, n_msgs);
	shiftu_hs_unpark(c);
	shiftu_cq_fences(c);
}
