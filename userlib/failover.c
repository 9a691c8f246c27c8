// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * failover.c: moving a QP's traffic to its twin on the backup port (SHIFT
 * paper 4.3.2), and the slow paths of its posts meanwhile (its CQs': cq.c).
 *
 * A failover starts on the thread that notices: a poster or poller that
 * reads the health page, a poller that takes an error completion, or the
 * watcher that hears the peer's control message (handshake.h).  It stops
 * the default QP (modify to ERR), which flushes every work request the NIC
 * still holds, in order, with an error completion each, even the
 * unsignaled ones (IBA 10.7.3.1); markers posted after the stop are
 * flushed last.  Draining the CQs up to them counts the outstanding work:
 * the receives are those posted and not counted complete, the rest of the
 * flushed were sends, the last ones the ring recorded.  Completions of
 * other QPs, and good ones of this QP, met on the way are kept for the
 * application's next poll.
 *
 * The receives are reposted on the twin, the peer is told our receive
 * count, and the sends are replayed from the first one the peer had not
 * received.  An atomic outstanding is never replayed: the flushed work
 * requests go back to the application as the errors they are, and
 * SHIFTU_EV_ATOMIC_ERROR is raised.  Going back to the default QP when the
 * peer and we are both on our twins is the same move in reverse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cq.h"
#include "cqex.h"
#include "event.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "log.h"
#include "posters.h"
#include "proto.h"
#include "provq.h"
#include "quiesce.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "testbuild.h"
#include "util.h"
#include "wrapi.h"

/*
 * How long a drain waits for the QP's flushes before it leaves the QP
 * unprotected: DRAIN_NS since it last took one (or since its markers were
 * posted), and DRAIN_KICKS kicks at least in that time.  A NIC flushes in
 * microseconds; Soft-RoCE flushes in its tasklets, which a guest CPU that
 * 64 polling threads keep busy runs late: the lab saw a twin's drain take
 * 5.8 s as 64 QPs went back together.  The drain's own thread waits for
 * that CPU too: one stalled 13 s before its first look, which found the
 * send marker; its next look, 64 us and one kick later, found the
 * receive marker not yet flushed, and a deadline counted from the start
 * gave the QP up there, with its failback granted (many_gen.sh).
 */
#define DRAIN_NS	(10ULL * 1000 * 1000 * 1000)
#define DRAIN_KICKS	10
#define KICK_NS		(100ULL * 1000 * 1000)
#define SLOW_DRAIN_NS	(500ULL * 1000 * 1000)	/* a drain this long says why */
#define QUIESCE_NS	(200ULL * 1000 * 1000)
#define QUIESCE_MAX_S	5
#define TWIN_WAIT_NS	(2000ULL * 1000 * 1000)
/* receives of its SRQ a drain of one QP may meet flushed (Soft-RoCE: 1) */
#define SRQ_FLUSHED	8

/* ---- failover --------------------------------------------------------- */

static int lkey_of(struct shiftu_vqp *vq, uint32_t lkey, uint32_t *out)
{
	unsigned int i;
	int ret;

	for (i = 0; i < vq->n_lkeys; i++)
		if (vq->lkeys[i][0] == lkey) {
			*out = vq->lkeys[i][1];
			return 0;
		}
	ret = shiftu_backup_lkey(vq, lkey, out);
	if (!ret && vq->n_lkeys < SHIFTU_ARRAY_SIZE(vq->lkeys)) {
		vq->lkeys[vq->n_lkeys][0] = lkey;
		vq->lkeys[vq->n_lkeys][1] = *out;
		vq->n_lkeys++;
	}
	return ret;
}

#define MAX_SGE		16

/*
 * A copy of @wr in @w with its list in @sge (MAX_SGE entries), not linked;
 * with @twin, as the twin takes it: keys translated.  Returns 0 or an
 * errno: EAGAIN for a peer's key the look ahead has not fetched yet (now
 * asked for: keys_wait()).  Context: fo_lock.
 */
static int copy_wr(struct shiftu_vqp *vq, const struct ibv_send_wr *wr, bool twin,
		   struct ibv_send_wr *w, struct ibv_sge *sge)
{
	int i, ret = 0;

	if (wr->num_sge > MAX_SGE)
		return EINVAL;
	*w = *wr;
	w->next = NULL;
	w->sg_list = sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i] = wr->sg_list[i];
		if (twin && !(wr->send_flags & IBV_SEND_INLINE) &&
		    lkey_of(vq, sge[i].lkey, &sge[i].lkey))
			return EINVAL;
	}
	if (!twin)
		return 0;
	if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ ||
	    wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		ret = shiftu_backup_rkey(vq, wr->wr.rdma.rkey, &w->wr.rdma.rkey);
	/* an atomic posted after the failover is new work, not a replay */
	if (shiftu_op_atomic(wr->opcode))
		ret = shiftu_backup_rkey(vq, wr->wr.atomic.rkey, &w->wr.atomic.rkey);
	if (ret)
		return ret == -EAGAIN ? EAGAIN : EINVAL;
	return 0;
}

/*
 * Post one work request on the twin, keys translated.  Context: fo_lock.
 * Returns 0 or an errno (the verbs convention).
 */
static int post_twin(struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr w, *bad;
	int ret;

	ret = copy_wr(vq, wr, true, &w, sge);
	if (ret)
		return ret;
	return vq->bak_qp->context->ops.post_send(vq->bak_qp, &w, &bad);
}

/* Post the recorded receive @e on the twin, keys translated.  fo_lock. */
static int post_twin_recv(struct shiftu_vqp *vq, const struct shiftu_rwqe *e)
{
	struct ibv_recv_wr w = { .wr_id = e->wr_id, .num_sge = e->num_sge }, *bad;
	struct ibv_sge sge[MAX_SGE];
	unsigned int i;
	int ret;

	if (e->num_sge > SHIFTU_ARRAY_SIZE(sge))
		return EINVAL;
	for (i = 0; i < e->num_sge; i++) {
		sge[i] = e->sge[i];
		if (lkey_of(vq, sge[i].lkey, &sge[i].lkey))
			return EINVAL;
	}
	w.sg_list = sge;
	ret = shiftu_twin_post_recv(vq, &w, &bad);
	if (!ret)
		vq->twin_recvs++;
	return ret;
}

static bool signaled(const struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	return vq->init_attr.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
}

/* The good completion a recorded request would have had. */
static void swqe_wc(const struct shiftu_vqp *vq, const struct shiftu_swqe *e,
		    struct ibv_wc *wc)
{
	unsigned int i;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = IBV_WC_SUCCESS;
	wc->qp_num = vq->reg.app_qp->qp_num;
	switch (e->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wc->opcode = IBV_WC_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_READ:
		wc->opcode = IBV_WC_RDMA_READ;
		break;
	default:
		wc->opcode = IBV_WC_SEND;
		break;
	}
	if (e->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || e->opcode == IBV_WR_SEND_WITH_IMM)
		wc->wc_flags = IBV_WC_WITH_IMM;
	for (i = 0; i < e->num_sge; i++)
		wc->byte_len += e->sge[i].length;
}

/* @e completes flushed, as on a QP in error.  Context: the send CQ's lock. */
static void swqe_flush(struct shiftu_vqp *vq, const struct shiftu_swqe *e)
{
	struct ibv_wc wc;

	swqe_wc(vq, e, &wc);
	wc.status = IBV_WC_WR_FLUSH_ERR;
	shiftu_stash_push(vq->scq, &wc);
}

/* A flushed completion a drain took, and whether the receive CQ had it. */
struct drained_wc {
	struct ibv_wc wc;
	bool rcq;
	bool srq;		/* a receive its SRQ's table names (srq.h) */
};

/*
 * What a drain has collected so far (drain()): with separate send and
 * receive CQs, @n_recv of the @n flushed came from the receive CQ.
 */
struct drain_state {
	struct drained_wc *flushed;
	unsigned int n, max, n_recv;
	bool smark, rmark, stuck;
	/* completions another drain handed over (twin_handover()), and what
	 * drain_take() said of them */
	unsigned int handed;
	int err;
	/* for a slow drain's line: when each marker came, since the start */
	uint64_t t0, smark_ns, rmark_ns;
	unsigned int kicks, polls;
	/* kicks since the drain last took a completion of the QP's */
	unsigned int idle_kicks;
};

/* What the drain has taken so far: it moves while the QP flushes. */
static unsigned int drain_taken(const struct drain_state *d)
{
	return d->n + d->smark + d->rmark + d->handed;
}

/*
 * Whether the drain gives up: the QP has flushed nothing for DRAIN_NS,
 * and it was kicked DRAIN_KICKS times meanwhile.  A drain whose thread
 * did not run (a starved CPU) has not waited, however late it is.
 * *@deadline and *@taken move on with each completion it took.
 */
static bool drain_expired(struct drain_state *d, uint64_t *deadline, unsigned int *taken)
{
	uint64_t now = shiftu_mono_ns();

	if (drain_taken(d) != *taken) {
		*taken = drain_taken(d);
		*deadline = now + DRAIN_NS;
		d->idle_kicks = 0;
		return false;
	}
	return now > *deadline && d->idle_kicks >= DRAIN_KICKS;
}

/*
 * An error completion of the QP being drained: one of the library's
 * markers, a control message of its own, or a flushed request of the
 * application's.  Returns 0 or -EOVERFLOW.
 */
static int drain_take(struct shiftu_vqp *vq, bool twin, struct drain_state *d,
		      const struct shiftu_cq *c, const struct ibv_wc *wc)
{
	bool rcq = c == vq->rcq && c != vq->scq;

	switch (shiftu_wrid_kind(wc->wr_id)) {
	case SHIFTU_WRID_MARKER:
		d->smark = true;
		d->smark_ns = shiftu_mono_ns() - d->t0;
		break;
	case SHIFTU_WRID_RMARKER:
		d->rmark = true;
		d->rmark_ns = shiftu_mono_ns() - d->t0;
		break;
	case SHIFTU_WRID_CTRL_RECV:
	case SHIFTU_WRID_CTRL_DEF:
		shiftu_ctrl_recv_check(wc);
		if (twin)
			vq->ctrl_rq = 0;
		break;
	case SHIFTU_WRID_APP:
	case SHIFTU_WRID_RENAMED:	/* the application's, under our id (rename.h) */
		if (d->n == d->max)
			return -EOVERFLOW;
		d->flushed[d->n++] = (struct drained_wc){ .wc = *wc, .rcq = rcq };
		d->n_recv += rcq;
		break;
	case SHIFTU_WRID_SRQ:
		/* the receive the NIC took from the SRQ for a message cut short */
		if (d->n == d->max)
			return -EOVERFLOW;
		d->flushed[d->n++] = (struct drained_wc){ .wc = *wc, .rcq = rcq, .srq = true };
		break;
	case SHIFTU_WRID_CTRL_SEND:
		if (!twin)
			shiftu_ctrl_send_done(vq, false);
		break;
	default:
		/* a probe of ours: no request of the application's */
		break;
	}
	return 0;
}

/*
 * A twin's error completion @wc met on @c by the drain of another twin:
 * when it is of a third QP whose twin's drain is under way too (two QPs
 * that share a CQ going back side by side: each drain drops the CQs'
 * locks now and then, and the other polls meanwhile), it is that drain's
 * (a marker, a flush), handed to it; true then.  Context: @c's lock.
 */
static bool twin_handover(struct shiftu_cq *c, const struct ibv_wc *wc)
{
	struct shiftu_vqp *o;
	unsigned int j;
	int ret;

	for (j = 0; j < c->n_twins; j++) {
		o = c->twins[j];
		if (o->bak_qp->qp_num != wc->qp_num)
			continue;
		if (!o->twin_drain)
			return false;
		o->twin_drain->handed++;
		ret = drain_take(o, true, o->twin_drain, c, wc);
		if (ret && !o->twin_drain->err)
			o->twin_drain->err = ret;
		return true;
	}
	return false;
}

/*
 * Move the default QP's error completions out of its CQs' stashes, where a
 * poller put them, through drain_take(), keeping everything else in order.
 * Returns 0 or -EOVERFLOW.
 */
static int unstash_errors(struct shiftu_vqp *vq, struct drain_state *d)
{
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq }, *c;
	uint32_t qp_num = vq->reg.app_qp->qp_num;
	unsigned int i, j, kept, total;
	struct ibv_wc w;
	int ret = 0;

	for (j = 0; j < 2 && !(j && cqs[1] == cqs[0]); j++) {
		c = cqs[j];
		total = c->stash_n;
		for (i = 0, kept = 0; i < total; i++) {
			w = c->stash[(c->stash_head + i) % c->stash_cap];
			if (!ret && w.qp_num == qp_num && w.status != IBV_WC_SUCCESS)
				ret = drain_take(vq, false, d, c, &w);
			else
				c->stash[(c->stash_head + kept++) % c->stash_cap] = w;
		}
		c->stash_n = kept;
	}
	return ret;
}

/*
 * Wait out the threads a move of @vq overtook inside a data verb
 * (quiesce.h): usually at once, else up to QUIESCE_MAX_S with a line
 * saying so.  A thread held longer (stopped, or starved of CPU) leaves the
 * move nothing it can trust: a post may yet land behind the drain's
 * marker, a poll may hold completions the count lacks.  Then false, with
 * a line saying so, and the QP is left unprotected, its errors going to
 * the application, rather than have its work lost or done twice.  (While
 * that thread stays where it is, the next move gives up at once:
 * shiftu_quiesce() remembers it.)  Context: fo_lock, no CQ lock.
 */
static bool fo_quiesce(struct shiftu_vqp *vq)
{
	if (shiftu_quiesce(QUIESCE_NS, false))
		return true;
	shiftu_info("qp %u on %s: a thread is still inside a data verb the move overtook: waiting for it",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
	if (shiftu_quiesce(QUIESCE_MAX_S * 1000000000ULL, true))
		return true;
	shiftu_warn("qp %u on %s: a thread stayed inside a data verb for %d s or more: its work cannot be moved safely: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, QUIESCE_MAX_S);
	return false;
}

/* The QP a move leaves or goes to: the application's, or its twin. */
static struct ibv_qp *side_qp(const struct shiftu_vqp *vq, bool twin)
{
	return twin ? vq->bak_qp : vq->reg.app_qp;
}

static int side_poll(struct shiftu_vqp *vq, struct shiftu_cq *c, bool twin, int n,
		     struct ibv_wc *wc)
{
	return twin ? c->bak->context->ops.poll_cq(c->bak, n, wc) :
		      vq->sctx->poll_cq(c->app, n, wc);
}

/*
 * Stop the QP a move leaves (the default one, or the twin when going back)
 * and collect its error completions: every send and receive work request
 * it still held is flushed, in order, each queue up to a marker the
 * library posts behind them.  The flushed completions of the two queues
 * cannot be told apart (their opcode is undefined), but their numbers can:
 * the receives outstanding are those posted and not completed, which the
 * library counts (@vq->consumed); the rest were sends.  @flushed gets the
 * error completions and *@got their number, also when the drain fails, so
 * that none is lost; the library's control messages are not among them.
 * Good completions met on the way are kept for the application (a twin's
 * renamed); control messages of other QPs go to @msgs; another twin's
 * error completions, while its own drain is under way too, go to that
 * drain (twin_handover()).  Returns 0 or -errno.  Context: fo_lock and
 * both CQs' locks held; the CQs are marked draining (their slow polls
 * leave the application's CQ alone), and their locks are dropped now and
 * then: a poller that took some of the QP's completions before the move
 * began must be let stash them.
 */
static int drain_locked(struct shiftu_vqp *vq, bool twin, struct drain_state *d,
			struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct ibv_qp *qp = side_qp(vq, twin);
	struct shiftu_cq *cqs[2] = { vq->scq, vq->rcq };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr m = { .wr_id = MARKER_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rm = { .wr_id = RMARKER_WR_ID }, *rbad;
	uint64_t t0 = d->t0, deadline, kick;
	struct ibv_wc wc[16];
	unsigned int j, taken;
	int k, i, kept, ret;

	/*
	 * On an error completion the NIC has stopped the QP already; the
	 * modify then only confirms it.  Error completions of the QP that a
	 * poller stashed (the first error and those after it, or ones a
	 * poller met while another thread started this move) are part of
	 * the count.
	 */
	ret = twin ? 0 : unstash_errors(vq, d);
	if (ret < 0)
		return ret;
	ret = shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return -ret;
	/*
	 * SHIFTU_TEST_DRAIN_STALL_MS: as a thread that waits for the CPU
	 * here, while Soft-RoCE's tasklets that the stop scheduled run (a
	 * receive marker posted after them waits for the next kick)
	 */
	if (twin && shiftu_test_drain_stall_ms())
		usleep(shiftu_test_drain_stall_ms() * 1000U);
	/* where the application's requests end in the provider's rings */
	if (!twin && vq->rings == SHIFTU_RINGS_PROVIDER)
		shiftu_provq_mark(vq);
	/* the provider's own: the application's context's ops are ours */
	ret = twin ? qp->context->ops.post_send(qp, &m, &bad) : vq->post_send(qp, &m, &bad);
	if (ret)
		return -ret;
	if (!d->rmark) {
		ret = twin ? qp->context->ops.post_recv(qp, &rm, &rbad) :
			     vq->post_recv(qp, &rm, &rbad);
		if (ret)
			return -ret;
	}
	/* counted from here: stopping the QP and posting may have stalled */
	kick = shiftu_mono_ns();
	deadline = kick + DRAIN_NS;
	taken = drain_taken(d);
	while (!d->smark || !d->rmark) {
		bool none = true;

		if (d->err)
			return d->err;

		/*
		 * A receive posted to a QP in error is only flushed when the
		 * responder runs, and a userspace post does not wake it
		 * (Soft-RoCE): the move to ERR, again, does, and wakes the
		 * requester and completer too.
		 */
		if (shiftu_mono_ns() >= kick) {
			shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
			kick = shiftu_mono_ns() + KICK_NS;
			d->kicks++;
			d->idle_kicks++;
		}
		d->polls++;
		for (j = 0; j < 2; j++) {
			struct shiftu_cq *c = cqs[j];

			if (j && cqs[1] == cqs[0])
				break;
			k = side_poll(vq, c, twin, SHIFTU_ARRAY_SIZE(wc), wc);
			if (k < 0)
				return -EIO;
			none &= !k;
			if (!twin) {
				/* a peer's message, a probe: not the application's */
				k = shiftu_app_own(c, wc, k, msgs, n_msgs);
				shiftu_took(vq->sctx, wc, k);
			}
			for (i = 0, kept = 0; i < k; i++) {
				if (wc[i].status == IBV_WC_SUCCESS) {
					wc[kept++] = wc[i];
					continue;
				}
				if (wc[i].qp_num != qp->qp_num) {
					if (!twin || !twin_handover(c, &wc[i]))
						wc[kept++] = wc[i];
					continue;
				}
				ret = drain_take(vq, twin, d, c, &wc[i]);
				if (ret)
					return ret;
			}
			if (twin)
				kept = shiftu_twin_take(c, wc, kept, msgs, n_msgs);
			for (i = 0; i < kept; i++)
				if (shiftu_stash_push(c, &wc[i]))
					return -ENOMEM;
		}
		if (none) {
			if (drain_expired(d, &deadline, &taken))
				return -ETIMEDOUT;
			/* a poller waiting to stash what it took from us */
			shiftu_unlock_cqs(cqs[0], cqs[1]);
			shiftu_wait_step(shiftu_mono_ns() - t0);
			shiftu_lock_cqs(cqs[0], cqs[1]);
			ret = twin ? 0 : unstash_errors(vq, d);
			if (ret < 0)
				return ret;
		}
	}
	/*
	 * A poller of the application's may have taken some of the QP's
	 * flushes ahead of our markers and still be on its way to stash
	 * them (it waits for these locks): it is inside its window
	 * (quiesce.h), and what it stashes is counted instead of reaching
	 * the application as errors once the move is done.  (Only the
	 * application polls the default QP's CQs; a twin's are the
	 * library's.)
	 */
	if (!twin) {
		shiftu_unlock_cqs(cqs[0], cqs[1]);
		d->stuck = !fo_quiesce(vq);
		shiftu_lock_cqs(cqs[0], cqs[1]);
		if (d->stuck)
			return -EBUSY;
		ret = unstash_errors(vq, d);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * *@n_recv: how many of the *@got flushed were receives, when the QP's two
 * CQs tell them apart (else -1); *@stuck: it failed because a thread
 * stayed inside a data verb (fo_quiesce() said so).
 */
static int drain(struct shiftu_vqp *vq, bool twin, struct drained_wc *flushed,
		 unsigned int max, int *got, int *n_recv, bool *stuck,
		 struct shiftu_hs_msg *msgs, int *n_msgs)
{
	struct drain_state d = {
		.flushed = flushed, .max = max, .t0 = shiftu_mono_ns(),
		/* an SRQ's receives are not flushed: no marker behind them */
		.rmark = !vq->init_attr.cap.max_recv_wr || vq->init_attr.srq,
	};
	int ret;

	vq->scq->draining++;
	vq->rcq->draining++;
	if (twin)
		vq->twin_drain = &d;
	ret = drain_locked(vq, twin, &d, msgs, n_msgs);
	vq->twin_drain = NULL;
	vq->scq->draining--;
	vq->rcq->draining--;
	if (shiftu_mono_ns() - d.t0 > SLOW_DRAIN_NS)
		shiftu_info("qp %u on %s: a slow drain of its %s QP: %.3f ms, send marker after %.3f ms, receive marker after %.3f ms, %u polls, %u kicks, %u completions from another drain",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, twin ? "backup" : "default",
			    (shiftu_mono_ns() - d.t0) / 1e6, d.smark_ns / 1e6, d.rmark_ns / 1e6,
			    d.polls, d.kicks, d.handed);
	else if (d.handed)
		shiftu_dbg("qp %u on %s: its backup QP's drain: %u completions from another drain",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name, d.handed);
	*got = (int)d.n;
	*n_recv = vq->scq != vq->rcq ? (int)d.n_recv : -1;
	*stuck = d.stuck;
	return ret;
}

/*
 * Recorded sends on their way to the QP the work goes to now, posted as
 * chains: a provider may ring its doorbell once per call (Soft-RoCE: a
 * system call), and a failover replays up to a queue's worth.
 */
#define REPLAY_CHAIN	32

struct replay_chain {
	struct ibv_send_wr w[REPLAY_CHAIN];
	struct ibv_sge sge[REPLAY_CHAIN][MAX_SGE];
	uint64_t at[REPLAY_CHAIN];	/* each one's place in vq->sq */
	unsigned int n;
};

/*
 * The provider's post of @b's chain, which SHIFTU_TEST_REPLAY_FAIL may cut
 * short: the replay's posts from that one on fail with EIO.
 */
static int chain_post_send(struct shiftu_vqp *vq, struct ibv_qp *qp, struct replay_chain *b,
			   uint64_t posted, struct ibv_send_wr **bad)
{
	uint32_t fail = shiftu_test_replay_fail();
	unsigned int k = b->n;
	int ret = 0;

	if (fail && posted + b->n >= fail)
		k = posted + 1 >= fail ? 0 : fail - 1 - posted;
	if (k && k < b->n)
		b->w[k - 1].next = NULL;
	if (k)
		ret = vq->on_twin ? qp->context->ops.post_send(qp, b->w, bad) :
				    vq->post_send(qp, b->w, bad);
	if (!ret && k < b->n) {
		*bad = &b->w[k];
		ret = EIO;
	}
	return ret;
}

/*
 * Post what @b holds; *@posted gets how many went.  Returns 0, or an errno
 * and in *@stop the place in vq->sq of the first that did not go.
 */
static int chain_post(struct shiftu_vqp *vq, struct replay_chain *b, uint64_t *posted,
		      uint64_t *stop)
{
	struct ibv_send_wr *bad = NULL, *w;
	struct ibv_qp *qp = vq->on_twin ? vq->bak_qp : vq->reg.app_qp;
	unsigned int k = 0;
	int ret;

	if (!b->n)
		return 0;
	ret = chain_post_send(vq, qp, b, *posted, &bad);
	for (w = b->w; w && w != bad; w = w->next)
		k++;
	*posted += k;
	if (ret)
		*stop = k < b->n ? b->at[k] : b->at[b->n - 1] + 1;
	b->n = 0;
	return ret;
}

/*
 * Add the recorded send @e, vq->sq's entry @at, to @b (posting @b first
 * when it is full).  Returns 0, or an errno and *@stop as chain_post().
 */
static int chain_add(struct shiftu_vqp *vq, struct replay_chain *b,
		     const struct ibv_send_wr *e, uint64_t at, uint64_t *posted,
		     uint64_t *stop)
{
	unsigned int k;
	int ret;

	if (b->n == REPLAY_CHAIN) {
		ret = chain_post(vq, b, posted, stop);
		if (ret)
			return ret;
	}
	k = b->n;
	ret = copy_wr(vq, e, vq->on_twin, &b->w[k], b->sge[k]);
	if (ret) {
		*stop = k ? b->at[0] : at;
		return ret;
	}
	if (k)
		b->w[k - 1].next = &b->w[k];
	b->at[k] = at;
	b->n++;
	return 0;
}

/* Post a recorded receive on the QP the work goes to now.  fo_lock. */
static int post_recv_on(struct shiftu_vqp *vq, const struct shiftu_rwqe *e)
{
	struct ibv_recv_wr w = { .wr_id = e->wr_id, .num_sge = e->num_sge,
				 .sg_list = (struct ibv_sge *)e->sge }, *bad;

	return vq->on_twin ? post_twin_recv(vq, e) : vq->post_recv(vq->reg.app_qp, &w, &bad);
}

/* Where the sends posted on the QP a move leaves end: held ones follow. */
static uint64_t posted_end(const struct shiftu_vqp *vq)
{
	if (vq->state == SHIFTU_SEND_HANDSHAKE)
		return vq->replay_start;
	if (vq->state == SHIFTU_SEND_WAIT_DRAINED)
		return vq->held_start;
	return vq->sq.head;
}

/*
 * Whether the peer's backup rkeys that the replay of the sends from @from
 * on needs are known (as replay() would post them: those the peer
 * executed need none).  Returns 0; -EAGAIN when the look ahead has not
 * fetched one yet, *@rkey the first (all of them are now asked for:
 * shiftu_backup_rkey()); -ENOENT when the store had none, which the
 * replay then fails on, as it always did.  Context: fo_lock.
 */
static int keys_ready(struct shiftu_vqp *vq, uint64_t from, uint32_t *rkey)
{
	const struct shiftu_swqe *e;
	struct shiftu_send_plan p;
	uint32_t bak;
	int ret = 0, r;
	uint64_t i;

	if (!vq->on_twin)
		return 0;
	shiftu_plan_sends(&p, &vq->sq, from, posted_end(vq), &vq->sq_gap, vq->sent2, vq->hs_got,
			  vq->hs_peer);
	if (p.count_bad)
		return 0;	/* nothing is posted */
	for (i = from; i < vq->sq.head; i++) {
		e = shiftu_swqe_at(&vq->sq, i);
		if (shiftu_plan_done(&p, i, e->opcode) || !shiftu_plan_replays(&p, i, e->opcode))
			continue;
		if (e->opcode != IBV_WR_RDMA_WRITE && e->opcode != IBV_WR_RDMA_READ &&
		    e->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && !shiftu_op_atomic(e->opcode))
			continue;
		r = shiftu_backup_rkey(vq, e->rkey, &bak);
		if (r == -ENOENT)
			return r;
		if (r && !ret) {
			ret = r;
			*rkey = e->rkey;
		}
	}
	return ret;
}

/*
 * The sends from @from on cannot go to the twin yet: a peer's key they
 * name was not looked up ahead (the QP failed soon after its first posts,
 * or posts to memory it never named before).  Looking it up here would
 * wait for the store on an application's thread, under fo_lock; failing
 * the replay gave the application errors for a key the store has.  So
 * they are held, with the posts after them, as for the peer's count
 * (SHIFTU_SEND_HANDSHAKE), until the shadow thread has the key
 * (shiftu_keys_came()), HS_TIMEOUT_NS at most (shiftu_hs_timeout()).
 * Returns true when they are held.  Context: fo_lock.
 */
static bool keys_wait(struct shiftu_vqp *vq, uint64_t from)
{
	uint32_t rkey = 0;

	if (keys_ready(vq, from, &rkey) != -EAGAIN)
		return false;
	if (vq->state != SHIFTU_SEND_HANDSHAKE) {
		vq->state = SHIFTU_SEND_HANDSHAKE;
		vq->replay_start = from;
	}
	if (!vq->keys_held) {
		/* the store's deadline runs from here */
		vq->hs_since_ns = shiftu_mono_ns();
		vq->keys_held = 1;
		shiftu_info("qp %u on %s: the peer's rkey %#x not looked up ahead yet: sends held until the store has it",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, rkey);
	}
	return true;
}

/* The held sends carry a message, and the peer's count has not come. */
static bool count_due(struct shiftu_vqp *vq)
{
	uint64_t i;

	if (vq->hs_got)
		return false;
	for (i = vq->replay_start; i < vq->sq.head; i++)
		if (shiftu_op_two_sided(shiftu_swqe_at(&vq->sq, i)->opcode))
			return true;
	return false;
}

/*
 * The outstanding sends from @from on go to the QP the work moved to, but
 * for those the peer's receive count shows it had already received (RC
 * executes in order: a request before a message the peer received has
 * executed too): their signaled ones complete good now, as the NIC would
 * have reported.  RDMA READs are replayed either way (their response may
 * be what was lost).  Returns 0 or an errno; *@replayed gets the number
 * posted.  When posting fails part way, those not posted complete flushed
 * at once, as on a QP in error (the QP is then given up), ahead of what
 * the posted ones have yet to complete: nothing is lost.
 * Context: fo_lock and the send CQ's lock held.
 */
static int replay(struct shiftu_vqp *vq, uint64_t from, uint64_t *replayed)
{
	struct shiftu_cq *c = vq->scq;
	struct shiftu_send_plan p;
	struct replay_chain *b;
	uint64_t i, stop = from;
	struct ibv_send_wr w;
	struct ibv_wc wc;
	int ret = 0;

	*replayed = 0;
	shiftu_plan_sends(&p, &vq->sq, from, posted_end(vq), &vq->sq_gap, vq->sent2, vq->hs_got,
			  vq->hs_peer);
	if (p.count_bad)
		shiftu_warn("qp %u: the peer says it has received %" PRIu64 " messages, but we sent %" PRIu64 ": nothing replayed",
			    vq->reg.app_qp->qp_num, vq->hs_peer, vq->sent2);
	vq->twin_signaled = vq->twin_done = 0;
	/* with a bad count nothing is posted: all complete flushed below */
	b = p.count_bad ? NULL : malloc(sizeof(*b));
	if (!b)
		ret = p.count_bad ? EPROTO : ENOMEM;
	else
		b->n = 0;
	for (i = from; i < vq->sq.head && !ret; i++) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&vq->sq, i);

		/* completed by an earlier replay: on no QP */
		if (shiftu_plan_done(&p, i, e->opcode))
			continue;
		shiftu_swqe_wr(e, &w);
		if (!shiftu_plan_replays(&p, i, e->opcode)) {
			if (signaled(vq, &w)) {
				swqe_wc(vq, e, &wc);
				if (shiftu_stash_push(c, &wc)) {
					ret = ENOMEM;
					stop = b->n ? b->at[0] : i + 1;
				}
			}
			continue;
		}
		/* counted like later posts: the fence waits for these too */
		vq->twin_signaled += signaled(vq, &w);
		ret = chain_add(vq, b, &w, i, replayed, &stop);
	}
	if (!ret)
		ret = chain_post(vq, b, replayed, &stop);
	free(b);
	if (ret) {
		/* those completed good above excepted */
		for (; stop < vq->sq.head; stop++) {
			const struct shiftu_swqe *e = shiftu_swqe_at(&vq->sq, stop);

			if (shiftu_plan_done(&p, stop, e->opcode))
				continue;
			if (stop >= i || shiftu_plan_replays(&p, stop, e->opcode))
				swqe_flush(vq, e);
		}
		return ret;
	}
	/* the READs before the cut went again, the rest of it did not */
	vq->sq_gap = p.next;
	if (p.cut != from)
		shiftu_info("qp %u: the peer had received %" PRIu64 " of the outstanding requests: not replayed",
			    vq->reg.app_qp->qp_num, p.cut - from);
	return 0;
}

/* What a move leaves to report once its locks are dropped. */
enum fo_result { FO_NONE, FO_DONE, FO_BACK, FO_DEAD, FO_DEAD_ATOMIC };

static void fo_report(struct shiftu_vqp *vq, enum fo_result r)
{
	/* the callback may call verbs: no library lock held */
	switch (r) {
	case FO_DONE:
		shiftu_event_emit(SHIFTU_EV_FAILOVER, vq->reg.app_qp, vq->sctx->dev_name,
				  vq->port_num, vq->sctx->bak_name, vq->sctx->bak_port, 0);
		break;
	case FO_BACK:
		shiftu_event_emit(SHIFTU_EV_FAILBACK, vq->reg.app_qp, vq->sctx->bak_name,
				  vq->sctx->bak_port, vq->sctx->dev_name, vq->port_num, 0);
		break;
	case FO_DEAD_ATOMIC:
		shiftu_event_emit(SHIFTU_EV_ATOMIC_ERROR, vq->reg.app_qp,
				  vq->sctx->dev_name, vq->port_num, NULL, 0, -EIO);
		/* fall through */
	case FO_DEAD:
		shiftu_event_emit(SHIFTU_EV_UNPROTECTED, vq->reg.app_qp, vq->sctx->dev_name,
				  vq->port_num, NULL, 0, -EIO);
		break;
	default:
		break;
	}
}

/*
 * Back on its default QP, @vq gives up the slow polls its failover took,
 * unless the library still holds completions for its CQs: then each CQ
 * with a stash keeps a count of its own (slow_leftover), dropped by the
 * slow poll that finds that stash empty.  A count left on the send CQ for
 * the receive CQ's stash was dropped by a poll of the send CQ, and the
 * receive CQ's next polls took the common path past its stash: a receive
 * completion the drain had kept reached the application a failover later
 * (torture: a notification late and out of order).  Context: both CQs'
 * locks held.
 */
static void slow_handover(struct shiftu_vqp *vq)
{
	struct shiftu_cq *s = vq->scq, *r = vq->rcq;

	if (!s->stash_n && !r->stash_n) {
		shiftu_cq_slow(vq, false);
		return;
	}
	if (s->stash_n)
		s->slow_leftover++;
	if (r != s && r->stash_n) {
		if (s->stash_n)
			shiftu_cq_slow(vq, true);	/* a count for each */
		r->slow_leftover++;
	}
}

/*
 * @vq's work is no longer on its twin, nor will come from it: its CQs stop
 * matching the twin's completions to it and give back the slow polls its
 * failover took (slow_handover()).  Nothing to do for a QP not there: the
 * slow polls stay counted once.  Context: both CQs' locks held.
 */
static void twins_leave(struct shiftu_vqp *vq)
{
	if (!shiftu_twins_has(vq->scq, vq) && !shiftu_twins_has(vq->rcq, vq))
		return;
	shiftu_twins_del(vq->scq, vq);
	shiftu_twins_del(vq->rcq, vq);
	slow_handover(vq);
}

/*
 * The sends from @from on that @vq holds and never posted (a handshake's,
 * a fence's) complete flushed, as on a QP in error.  Context: fo_lock and
 * both CQs' locks held.
 */
static void flush_held(struct shiftu_vqp *vq, uint64_t from)
{
	const struct shiftu_swqe *e;
	uint64_t i;

	for (i = from; i < vq->sq.head; i++) {
		e = shiftu_swqe_at(&vq->sq, i);
		/* completed by a replay already */
		if (!shiftu_gap_holds(&vq->sq_gap, i, e->opcode))
			swqe_flush(vq, e);
	}
}

/*
 * @flushed[0..n) without the receives its SRQ's table names, which a move
 * posted again.  Returns how many are left.
 */
static int drop_srq(struct drained_wc *flushed, int n)
{
	int i, j;

	for (i = 0, j = 0; i < n; i++)
		if (!flushed[i].srq)
			flushed[j++] = flushed[i];
	return j;
}

/*
 * Give up on @vq: the application gets the errors, the @n the NIC flushed
 * and then the sends from @held on it held back.  A QP whose work is not
 * on its twin gives up the twin's place on its CQs and their slow polls,
 * as a failback does: nothing of it comes from the twin any more.
 * Context: fo_lock and both CQs' locks held.
 */
static void go_dead(struct shiftu_vqp *vq, const struct drained_wc *flushed, int n,
		    uint64_t held)
{
	struct ibv_wc wc;
	int i;

	/* what the NIC flushed goes to the application, as without shift,
	 * as its own QP's (a drain of the twin took the twin's) */
	for (i = 0; i < n; i++) {
		wc = flushed[i].wc;
		wc.qp_num = vq->reg.app_qp->qp_num;
		shiftu_stash_push(flushed[i].rcq ? vq->rcq : vq->scq, &wc);
	}
	flush_held(vq, held);
	if (!vq->on_twin)
		twins_leave(vq);
	vq->state = SHIFTU_SEND_DEAD;
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
}

/*
 * A failback (ours, or the peer's we follow) given up before we spoke on
 * the default QP: that QP is connected to the peer's, whose receive queue
 * a control receive heads, posted for the count we never sent.  Left
 * connected, the application's next message, which now goes straight to
 * the default QP, lands in that receive and is taken for the count: in
 * many_gen.sh a WRITE_WITH_IMM's immediate, 574, was read as "the peer
 * has received 574 messages" by a peer that had sent none, which gave its
 * QP up too, the message lost with it.  The default QP is stopped instead:
 * what the application posts there completes flushed, as on the QP that
 * failed; the peer, which never hears, is left to its own errors.  No
 * answer of the peer's is awaited there any more (the backup thread's
 * looks at the application's CQ for it end).  Context: fo_lock and both
 * CQs' locks held.
 */
static void back_abandon(struct shiftu_vqp *vq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	ret = shiftu_real.modify_qp(vq->reg.app_qp, &a, IBV_QP_STATE);
	if (ret)
		shiftu_warn("qp %u on %s: cannot stop its default QP: %s: the peer may take its next message for a failback's count",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
}

/*
 * @vq->down once it is back on its default QP: the probe proved the path,
 * so a path the page may still show down (a peer's cable relayed late by
 * the agents) does not count, its next move tells again; the local port
 * the page shows down does (it may have gone again since the probe).
 */
static uint8_t port_down_now(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 1 && path != SHIFT_FT_PATH_DOWN;
}

/*
 * The sends are replayed where the work went: on the twin, the QP is in
 * Fallback; back on the default QP, it is in Default again, and the twin
 * is reset (by the shadow thread) for the next failover.  Context: fo_lock
 * and both CQs' locks held.
 */
static enum fo_result moved(struct shiftu_vqp *vq, uint64_t replayed)
{
	__atomic_fetch_add(&vq->reg.replayed_wrs, replayed, __ATOMIC_RELAXED);
	shiftu_stat_add(SHIFTU_STAT_REPLAYED_WRS, replayed);
	vq->keys_held = 0;
	if (vq->on_twin) {
		vq->state = SHIFTU_SEND_FALLBACK;
		shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_FALLBACK);
		return FO_DONE;
	}
	twins_leave(vq);
	vq->state = SHIFTU_SEND_DEFAULT;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_DEFAULT);
	__atomic_store_n(&vq->back_ns, shiftu_mono_ns(), __ATOMIC_RELAXED);
	vq->hs_sent = vq->hs_got = 0;
	vq->rejoin_want = 0;
	/* drained and not renewed (a test's delay): no failover to it until
	 * the shadow thread has reset it */
	if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) {
		vq->twin_stale = 1;
		shiftu_shadow_poke();
	}
	vq->fb_wait_ns = 0;
	vq->down = port_down_now(vq);
	vq->down_path = 0;
	shiftu_vqp_set_slow(vq, vq->down, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->reg.failbacks, 1, __ATOMIC_RELAXED);
	shiftu_info("qp %u on %s: failed back from %s, %" PRIu64 " requests replayed",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->sctx->bak_name, replayed);
	return FO_BACK;
}

/*
 * The moves of a QP's work (move_locked()): to its twin (a failover); back
 * to the default QP (a two-sided failback, 4.3.3 done as a failover in
 * reverse); or, when a failback is cut short, onto the twin renewed
 * (shiftu_rejoin()), from whichever QP holds the work.
 */
enum move_kind { MOVE_OVER, MOVE_BACK, MOVE_REJOIN };

/*
 * A batch of the extended send API open on @vq's default QP in the
 * provider's builders (wrapi.c) holds the provider's send queue until its
 * poster completes it: the drain's marker would wait for it, for ever if
 * the poster is this thread.  The posts' gate is closed first, so that no
 * batch opens after this look; then, if one is open, the move is left to
 * its poster, with @why.  The poster's stores of its batch and the look at
 * @move_deferred after them are ordered against ours by the quiesce's
 * barrier: either we see the batch closed, or it sees the move left to it
 * (or both, and its move finds ours made).  Returns 1 if the move is left
 * to the poster, 0 if none is open, or -EBUSY when fo_quiesce() gave up.
 * Context: fo_lock, no CQ lock.
 */
static int batch_open(struct shiftu_vqp *vq, const char *why)
{
	bool ok;

	if (!shiftu_wr_can_direct(vq))
		return 0;
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vq->move_deferred, why, __ATOMIC_SEQ_CST);
	ok = fo_quiesce(vq);
	if (!ok || !shiftu_wr_direct_open(vq)) {
		__atomic_store_n(&vq->move_deferred, NULL, __ATOMIC_RELAXED);
		return ok ? 0 : -EBUSY;
	}
	shiftu_info("qp %u on %s: %s during a batch of the extended send API: failing over once it is posted",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
	return 1;
}

/*
 * A direct polling session of an extended CQ (cqex.c) holds the provider's
 * CQ until its thread ends it: the drain would wait for it, for ever if
 * the session's thread is this one, or waits for this move (a post on the
 * QP).  As for a batch (batch_open()): the context's polls are made slow,
 * under which no session starts direct, the move left to the sessions of
 * @vq's CQs (with a hold of the slow polls, @vq->poll_hold) and the verbs
 * in flight waited out; then, if a direct session is still open on one of
 * them, its end makes the move.  Otherwise the move is ours, and the polls
 * stay slow (*@held) until the caller's move holds them itself.  Returns 1
 * if the move is left to a session, 0 if not, or -EBUSY when fo_quiesce()
 * gave up.  Context: fo_lock, no CQ lock.
 */
static int polls_open(struct shiftu_vqp *vq, const char *why, bool *held)
{
	const struct ibv_cq *a = vq->scq->app, *b = vq->rcq->app;
	bool ok;

	*held = false;
	if (!shiftu_cqx_mark(a, b))
		return 0;
	shiftu_cq_slow(vq, true);		/* ours, for the move */
	shiftu_cq_slow(vq, true);		/* the session's, if it is left to one */
	__atomic_store_n(&vq->poll_hold, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vq->move_deferred, why, __ATOMIC_SEQ_CST);
	ok = fo_quiesce(vq);
	if (ok && shiftu_cqx_direct(a, b)) {
		shiftu_cq_slow(vq, false);
		shiftu_info("qp %u on %s: %s during a polling session of its extended CQ: failing over once it ends",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		return 1;
	}
	/* taken back, unless a session's end took it (it then finds us done) */
	if (__atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL))
		shiftu_cq_slow(vq, false);
	__atomic_compare_exchange_n(&vq->move_deferred, &why, NULL, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (!ok) {
		shiftu_cq_slow(vq, false);
		return -EBUSY;
	}
	*held = true;
	return 0;
}

/*
 * Move @vq's work as @kind says: stop and drain the QP it leaves, repost
 * the receives it held on the other, tell the peer our receive count there,
 * and replay the sends, now or, if which of them arrived matters and the
 * peer has not told us yet, when it does (SHIFTU_SEND_HANDSHAKE).  Going
 * back always waits for the peer's count: its receives must be on its
 * default QP before ours go.  A rejoin the peer must be asked for
 * (@asking) sends nothing and waits: the peer's twin may not be renewed
 * yet, and the peer speaks first once it is.
 * Context: fo_lock held; the caller delivers @msgs once it is dropped.
 */
/*
 * Debug: the receives a move posted, @n from @from, by their length: a
 * receive too short for the peer's messages fails the QP (the NIC answers
 * "invalid request") as many messages later as receives lay before it.
 */
static void rx_moved_dbg(struct shiftu_vqp *vq, uint64_t from, uint64_t n, bool to_twin)
{
	uint64_t i, len, lo = UINT64_MAX, hi = 0;
	const struct shiftu_rwqe *e;
	uint32_t s;

	if (!n || !shiftu_log_enabled(SHIFTU_LOG_DEBUG))
		return;
	for (i = from; i != from + n; i++) {
		e = shiftu_rwqe_at(&vq->rq, i);
		for (len = 0, s = 0; s < e->num_sge; s++)
			len += e->sge[s].length;
		lo = len < lo ? len : lo;
		hi = len > hi ? len : hi;
	}
	shiftu_dbg("qp %u: %" PRIu64 " receives posted on its %s, %" PRIu64 " to %" PRIu64 " bytes each",
		   vq->reg.app_qp->qp_num, n, to_twin ? "twin" : "default QP", lo, hi);
}

static enum fo_result move_locked(struct shiftu_vqp *vq, enum move_kind kind, bool asking,
				  const char *why, struct shiftu_hs_msg *msgs, int *n_msgs)
{
	static const char *const done[] = {
		[MOVE_OVER] = "failed over to", [MOVE_BACK] = "going back from",
		[MOVE_REJOIN] = "back on",
	};
	struct shiftu_cq *c = vq->scq, *rc = vq->rcq;
	struct drained_wc *flushed = NULL;
	uint64_t t0 = shiftu_mono_ns(), start, end, i, n_r, replayed = 0;
	uint64_t t_q = 0, t_d = 0;		/* quiesced, drained: for the log */
	uint64_t consumed, srq_ids[SRQ_FLUSHED];
	struct shiftu_send_plan plan;
	unsigned int n_srq = 0;
	int n = 0, nr, n_s, ret;
	bool atomic = false, from_twin, to_twin = kind != MOVE_BACK;
	bool stuck = false, unposted = true, polls_held = false;
	enum fo_result r;

	/* the application tears its QP down: its errors are its own */
	if (__atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		return FO_NONE;
	switch (kind) {
	case MOVE_OVER:
		if (vq->state != SHIFTU_SEND_DEFAULT)
			return FO_NONE;
		break;
	case MOVE_BACK:
		if (vq->state != SHIFTU_SEND_FALLBACK || !vq->on_twin)
			return FO_NONE;
		break;
	case MOVE_REJOIN:
		if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD)
			return FO_NONE;
		break;
	}
	/* a going back still due is this one, or one a move overtook */
	__atomic_store_n(&vq->back_due_ns, 0, __ATOMIC_RELAXED);
	/* a cancel asked for is the going back's this move ends, if any */
	vq->fb_cancel = 0;
	from_twin = kind == MOVE_BACK || (kind == MOVE_REJOIN && vq->on_twin);
	/* leaving the default QP for a twin a failback drained: renew it */
	if (kind == MOVE_REJOIN && !from_twin &&
	    !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) {
		ret = shiftu_twin_renew(vq);
		if (ret) {
			shiftu_warn("qp %u on %s: %s, but its twin cannot be renewed: %s",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why, strerror(-ret));
			return FO_NONE;
		}
	}
	if ((kind != MOVE_REJOIN && !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE)) ||
	    !c || !rc) {
		/* the next post asks again; so does the shadow thread once it
		 * has reset a twin a failback stopped (a moment) */
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
		if (shiftu_twin_coming(vq))
			shiftu_dbg("qp %u on %s: %s: its twin is being reset, failing over in a moment",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		else if (!vq->told_waiting++)
			/* a stall, as without the library, until the shadow
			 * thread has the twin ready (it then moves the QP) */
			shiftu_info("qp %u on %s: %s, but its twin is not ready yet: staying until it is",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		return FO_NONE;
	}
	if (kind == MOVE_OVER) {
		ret = batch_open(vq, why);
		if (ret == 0)
			ret = polls_open(vq, why, &polls_held);
		if (ret > 0)
			return FO_NONE;
		if (ret < 0) {
			shiftu_lock_cqs(c, rc);
			goto dead;
		}
	}
	flushed = malloc((vq->sq.mask + vq->rq.mask + 3) * sizeof(*flushed));
	if (!flushed) {
		if (polls_held)
			shiftu_cq_slow(vq, false);
		return FO_NONE;
	}

	shiftu_lock_cqs(c, rc);
	if (kind == MOVE_OVER && (c->n_twins == SHIFTU_ARRAY_SIZE(c->twins) ||
				  rc->n_twins == SHIFTU_ARRAY_SIZE(rc->twins))) {
		shiftu_unlock_cqs(c, rc);
		free(flushed);
		if (polls_held)
			shiftu_cq_slow(vq, false);
		shiftu_warn("qp %u: its CQ has too many failed-over QPs: staying",
			    vq->reg.app_qp->qp_num);
		return FO_NONE;
	}
	if (kind == MOVE_OVER) {
		shiftu_cq_slow(vq, true);
		shiftu_twins_add(c, vq);
		shiftu_twins_add(rc, vq);
	}
	if (polls_held)
		shiftu_cq_slow(vq, false);	/* the move's own holds them now */
	/*
	 * From here the application's posts and polls take the slow paths,
	 * which wait for us.  One already past that check (the watcher's
	 * move, or a poller's, while the application posts) is inside its
	 * thread's window (quiesce.h) and is let finish first: otherwise its
	 * request could reach the QP after the drain's marker, and be lost.
	 */
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_SEQ_CST);
	shiftu_unlock_cqs(c, rc);
	/*
	 * Leaving the twin, no thread can be inside a verb of this QP: its
	 * posts took the slow path all along, and its CQs' polls too.
	 */
	stuck = !from_twin && !fo_quiesce(vq);
	shiftu_lock_cqs(c, rc);
	if (stuck)
		goto dead;
	t_q = shiftu_mono_ns();
	end = posted_end(vq);
	ret = drain(vq, from_twin, flushed, vq->sq.mask + vq->rq.mask + 2, &n, &nr,
		    &stuck, msgs, n_msgs);
	t_d = shiftu_mono_ns();
	if (ret < 0) {
		if (!stuck)
			shiftu_warn("qp %u on %s: cannot drain it: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    strerror(-ret));
		goto dead;
	}
	/*
	 * The receives still outstanding: those flushed from the receive CQ
	 * when it is not the send CQ, else those posted and not counted
	 * complete.  The others were consumed: while pollers do not count
	 * receives (shiftu_wc_look), that is the count.  When they do, one
	 * may hold receive completions it took from the default QP before
	 * this move and has not counted yet (preempted): the flushes tell,
	 * and what it counts later is already paid.
	 */
	consumed = __atomic_load_n(&vq->consumed, __ATOMIC_RELAXED);
	n_r = nr >= 0 ? (uint64_t)nr : vq->rq.head - consumed;
	if (vq->app_srq) {
		/*
		 * Its receives are its SRQ's table's, not its own: the one the
		 * NIC took for a message cut short, if any, completed flushed
		 * under the table's id, and is posted again where the QP goes
		 * (srq.c).  Its receive completions were counted as polled.
		 */
		n_r = 0;
		for (i = 0; i < (uint64_t)n; i++) {
			if (!flushed[i].srq)
				continue;
			if (n_srq == SRQ_FLUSHED) {
				shiftu_warn("qp %u on %s: more than %d receives of its SRQ flushed: unprotected",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name, SRQ_FLUSHED);
				goto dead;
			}
			srq_ids[n_srq++] = flushed[i].wc.wr_id;
		}
	} else if (nr >= 0 && __atomic_load_n(&shiftu_wc_look, __ATOMIC_RELAXED) ==
		       SHIFTU_WC_LOOK_ERRORS) {
		__atomic_store_n(&vq->consumed, vq->rq.head - n_r, __ATOMIC_RELAXED);
	} else if (nr >= 0 && !from_twin && shiftu_seq64_lt(consumed, vq->rq.head - n_r)) {
		uint64_t owed = vq->rq.head - n_r - consumed;

		shiftu_recv_owe(vq, owed);
		shiftu_dbg("qp %u: %" PRIu64 " receive completions not counted yet",
			   vq->reg.app_qp->qp_num, owed);
	}
	/* an SRQ's: the flushed were sends but for the receives its table names */
	n_s = n - (int)(vq->app_srq ? n_srq : n_r);
	/* the flushed sends are the last n_s posted (a replay's gap left out) */
	if (n_r > vq->rq.mask + 1 || n_s < 0 || (uint64_t)n_s > vq->sq.mask + 1 ||
	    !shiftu_posted_from(&vq->sq, &vq->sq_gap, end, n_s, &start)) {
		shiftu_warn("qp %u on %s: %d flushed, %" PRIu64 " receives outstanding: the count does not add up: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, n, n_r);
		goto dead;
	}
	/* a QP that only counted its requests has them in the provider's rings */
	if (!from_twin && vq->rings == SHIFTU_RINGS_PROVIDER) {
		ret = shiftu_provq_take(vq, n_s, n_r);
		if (ret) {
			shiftu_warn("qp %u on %s: %d sends and %" PRIu64 " receives outstanding: cannot read them from the provider's rings: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, n_s, n_r,
				    strerror(-ret));
			goto dead;
		}
	}
	/* an atomic held, never posted, is no atomic in flight */
	shiftu_plan_sends(&plan, &vq->sq, start, end, &vq->sq_gap, vq->sent2, vq->hs_got,
			  vq->hs_peer);
	atomic = plan.atomic;
	if (atomic) {
		shiftu_warn("qp %u on %s: %s with an atomic outstanding: not replayed, the application gets the errors",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		goto dead;
	}
	/*
	 * A twin left is renewed at once (reset, and joined to the peer's
	 * with the PSNs both published), so that the peer can reach it again
	 * whatever becomes of this move; a test may put that off to the
	 * shadow thread (SHIFTU_TEST_TWIN_RESET_MS).
	 */
	if (from_twin) {
		/* drained: the shadow thread must not connect it as it is */
		vq->twin_stale = 1;
		__atomic_store_n(&vq->bak_ready, 0, __ATOMIC_RELEASE);
		if (kind == MOVE_REJOIN || !shiftu_test_twin_reset_ms()) {
			ret = shiftu_twin_renew(vq);
			if (ret && kind == MOVE_REJOIN) {
				shiftu_warn("qp %u on %s: cannot renew its twin: %s: unprotected",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
					    strerror(-ret));
				goto dead;
			}
		}
	}
	/*
	 * The receives first: the peer may send as soon as it hears from us.
	 * An SRQ's: the one the NIC flushed goes where the QP goes, and the
	 * side it leaves is emptied if no QP is left there (srq.c).
	 */
	if (vq->app_srq && shiftu_srq_move(vq, from_twin, to_twin, srq_ids, n_srq)) {
		shiftu_warn("qp %u on %s: its SRQ's receives cannot move: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		goto dead;
	}
	/* they are posted: the drain's flushes of them are not the application's */
	if (n_srq)
		n = drop_srq(flushed, n);
	vq->on_twin = to_twin;
	unposted = false;
	for (i = vq->rq.head - n_r; i != vq->rq.head; i++) {
		ret = post_recv_on(vq, shiftu_rwqe_at(&vq->rq, i));
		if (ret) {
			shiftu_warn("qp %u on %s: cannot repost a receive: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			goto dead;
		}
	}
	rx_moved_dbg(vq, vq->rq.head - n_r, n_r, to_twin);
	vq->rx_moved = to_twin;
	shiftu_qp_set_recv_state(&vq->reg, to_twin ? SHIFTU_RECV_FALLBACK : SHIFTU_RECV_DEFAULT);
	if (!vq->hs_sent && !asking) {
		/* an answer if the peer spoke first */
		ret = shiftu_ctrl_send(vq, vq->hs_got);
		if (ret) {
			shiftu_warn("qp %u on %s: cannot tell the peer: %s: unprotected",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			goto dead;
		}
	}
	shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
	vq->stayed = 0;
	if (kind == MOVE_OVER)
		__atomic_fetch_add(&vq->reg.failovers, 1, __ATOMIC_RELAXED);
	if (shiftu_plan_next(&plan, asking, kind == MOVE_BACK) == SHIFTU_SENDS_HOLD) {
		/* which of them arrived only the peer knows: wait for its count */
		vq->state = SHIFTU_SEND_HANDSHAKE;
		vq->replay_start = start;
		vq->hs_since_ns = t0;
		vq->hs_told_ns = shiftu_mono_ns();
		vq->keys_held = 0;
		r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else if (keys_wait(vq, start)) {
		vq->hs_told_ns = shiftu_mono_ns();
		r = kind == MOVE_OVER ? FO_DONE : FO_NONE;
	} else {
		ret = replay(vq, start, &replayed);
		if (ret) {
			shiftu_warn("qp %u on %s: replay failed: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			n = 0;	/* the replayed part completes where it went */
			goto dead;
		}
		r = moved(vq, replayed);
		/* a rejoin goes on with the failover reported already */
		if (kind == MOVE_REJOIN && r == FO_DONE)
			r = FO_NONE;
	}
	shiftu_unlock_cqs(c, rc);
	shiftu_info("qp %u on %s: %s: %s qp %u on %s port %u, %d sends and %" PRIu64 " receives outstanding, %s, %.3f ms (%.3f ms to quiesce, %.3f ms to drain)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why, done[kind],
		    vq->bak_qp->qp_num, vq->sctx->bak_name, vq->sctx->bak_port, n_s, n_r,
		    vq->state != SHIFTU_SEND_HANDSHAKE ? "replayed" :
		    asking ? "sends held until the peer joins" :
		    vq->keys_held ? "sends held for the peer's rkeys" : "sends held for the peer's count",
		    (shiftu_mono_ns() - t0) / 1e6, (t_q - t0) / 1e6, (t_d - t_q) / 1e6);
	free(flushed);
	return r;

dead:
	/* before the receives moved, the held sends were posted nowhere */
	go_dead(vq, flushed, n, unposted ? posted_end(vq) : vq->sq.head);
	if (kind == MOVE_BACK && !vq->hs_sent)
		back_abandon(vq);
	shiftu_unlock_cqs(c, rc);
	free(flushed);
	return atomic ? FO_DEAD_ATOMIC : FO_DEAD;
}

void shiftu_unprotect(struct shiftu_vqp *vq, const char *why)
{
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* its SRQ's receives are posted as the application posts them */
	__atomic_store_n(&vq->app_srq, NULL, __ATOMIC_RELAXED);
	if (vq->state == SHIFTU_SEND_DEFAULT) {
		vq->state = SHIFTU_SEND_DEAD;
		shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
		shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
		shiftu_info("qp %u on %s: %s: unprotected", vq->reg.app_qp->qp_num,
			    vq->sctx->dev_name, why);
	} else if (vq->state != SHIFTU_SEND_DEAD) {
		shiftu_warn("qp %u on %s: %s while its work is on its twin: it stays there",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

/*
 * The peer's count did not come (its process or its library is gone):
 * nothing is replayed, since what arrived is not known; the held requests
 * complete flushed, as on a QP in error, and the QP is left unprotected.
 * Context: the shadow thread, no library lock held.
 */
void shiftu_hs_timeout(struct shiftu_vqp *vq, uint64_t after_ns)
{
	uint64_t n;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/*
	 * Again under the lock: a post that starts a handshake sets the state
	 * before its start time, and the shadow thread, which reads both
	 * without the lock, could see the new state with an old time (an
	 * ibv_rc_pingpong client was given up "in 0.0 s").
	 */
	if (vq->state != SHIFTU_SEND_HANDSHAKE || shiftu_mono_ns() - vq->hs_since_ns <= after_ns) {
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		return;
	}
	shiftu_lock_cqs(vq->scq, vq->rcq);
	n = vq->sq.head - vq->replay_start;
	go_dead(vq, NULL, 0, vq->replay_start);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_warn("qp %u on %s: %s in %.1f s: %" PRIu64 " requests flushed, unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
		    vq->keys_held && vq->rkeys_wanted ? "the store gave no backup for the peer's rkeys" :
		    "no word from the peer", (shiftu_mono_ns() - vq->hs_since_ns) / 1e9, n);
	fo_report(vq, FO_DEAD);
}

void shiftu_failover_qp_gone(struct shiftu_vqp *vq)
{
	if (!vq->scq || !vq->rcq)
		return;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	twins_leave(vq);
	/* messages for it that wait in a park would outlive it */
	shiftu_hs_park_forget(vq->scq, vq);
	shiftu_hs_park_forget(vq->rcq, vq);
	/* a control message's completion that never came is nobody's now */
	shiftu_ctrl_send_done(vq, true);
	/* no move starts after this one: each wants another state */
	vq->state = SHIFTU_SEND_DEAD;
	/* a move left to a polling session is nobody's now: its hold goes */
	if (__atomic_exchange_n(&vq->poll_hold, 0, __ATOMIC_ACQ_REL))
		shiftu_cq_slow(vq, false);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

void shiftu_failover_app_stop(struct shiftu_vqp *vq, enum ibv_qp_state to)
{
	struct ibv_qp_attr a = { .qp_state = to };
	bool twin;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	twin = vq->on_twin;
	if (vq->state == SHIFTU_SEND_DEAD || !vq->scq || !vq->rcq) {
		vq->state = SHIFTU_SEND_DEAD;
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		return;
	}
	shiftu_lock_cqs(vq->scq, vq->rcq);
	if (twin)
		/* its work is there: it stops as the default QP did; the
		 * twin's completions stay renamed (it keeps its CQs' place) */
		shiftu_real.modify_qp(vq->bak_qp, &a, IBV_QP_STATE);
	else
		twins_leave(vq);
	if (to == IBV_QPS_ERR)
		flush_held(vq, posted_end(vq));
	else
		shiftu_ctrl_send_done(vq, true);	/* a reset drops it */
	vq->state = SHIFTU_SEND_DEAD;
	/* no failback's message to wait for on the default QP */
	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	shiftu_info("qp %u on %s: the application moved it to %s%s: its errors are its own, not protected any more",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, to == IBV_QPS_ERR ? "ERR" : "RESET",
		    twin ? " while its work was on its twin" : "");
}

/*
 * After a move of @vq: the peers' messages its drain took, then those it
 * parked on @vq's CQs (the drain polls no other), and the fences of other
 * QPs whose completions it took from their twin CQs.  Context: no lock held.
 */
static void moved_deliver(struct shiftu_vqp *vq, struct shiftu_hs_msg *msgs, int n_msgs)
{
	shiftu_hs_deliver(msgs, n_msgs);
	if (vq->scq) {
		shiftu_hs_unpark(vq->scq);
		shiftu_cq_fences(vq->scq);
	}
	if (vq->rcq && vq->rcq != vq->scq) {
		shiftu_hs_unpark(vq->rcq);
		shiftu_cq_fences(vq->rcq);
	}
}

bool shiftu_failover(struct shiftu_vqp *vq, const char *why)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	r = move_locked(vq, MOVE_OVER, false, why, msgs, &n_msgs);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
	return r != FO_NONE;
}

bool shiftu_twin_coming(const struct shiftu_vqp *vq)
{
	return !__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) &&
	       (__atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED) & SHIFTU_QP_F_PROTECTED) &&
	       __atomic_load_n(&vq->published, __ATOMIC_RELAXED) != 2;
}

/*
 * A twin a failback left to the shadow thread (SHIFTU_TEST_TWIN_RESET_MS)
 * is stale until that thread has reset it, and the default QP may fail at
 * once: Soft-RoCE completes a request it cannot route (`ip link set down`
 * took the route) with IBV_WC_LOC_QP_OP_ERR and stops the QP by itself.
 * Its flushed receives must wait for the twin, not reach the application;
 * so must those of a QP going back (shiftu_rejoin()).
 */
bool shiftu_failover_on_error(struct shiftu_vqp *vq, const char *why, bool wait)
{
	uint64_t until = shiftu_mono_ns() + TWIN_WAIT_NS;

	if (shiftu_going_back(vq)) {
		/* the shadow thread moves it (shiftu_rejoin()): its drain
		 * takes these errors out of the stash */
		__atomic_store_n(&vq->rejoin_want, 1, __ATOMIC_RELEASE);
		shiftu_shadow_poke();
		while (wait && shiftu_going_back(vq) && shiftu_mono_ns() < until)
			usleep(100);
		return true;
	}
	if (!wait)
		return shiftu_failover(vq, why);
	if (shiftu_twin_coming(vq)) {
		shiftu_info("qp %u on %s: %s while its twin is being reset: waiting for it",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		shiftu_shadow_poke();
		while (shiftu_twin_coming(vq) && shiftu_mono_ns() < until)
			usleep(100);
	}
	return shiftu_failover(vq, why);
}

const char *shiftu_down_why(const struct shiftu_vqp *vq)
{
	/* read as vq->down is: a stale value costs only the word */
	return vq->down_path ? "path down" : "port down";
}

bool shiftu_going_back(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->state, __ATOMIC_RELAXED) == SHIFTU_SEND_HANDSHAKE &&
	       !__atomic_load_n(&vq->on_twin, __ATOMIC_RELAXED);
}

bool shiftu_awaits_default(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->ctrl_default, __ATOMIC_RELAXED) &&
	       (__atomic_load_n(&vq->on_twin, __ATOMIC_RELAXED) ||
		__atomic_load_n(&vq->state, __ATOMIC_RELAXED) == SHIFTU_SEND_HANDSHAKE);
}

/*
 * A failback cut short: we went back, and the default QP failed before
 * the peer's count came (our own may never have reached it).  The peer
 * may still be on its twin as it was, or back on its default QP, or on its
 * renewed twin: the work goes onto our twin, renewed when we left it, and
 * waits there for the peer's count.  The shadow thread asks the peer to
 * join (rejoin_ask): the peer renews its twin if it is the old one, and
 * speaks first.  Context: the shadow thread, vq->lock held.
 */
void shiftu_rejoin(struct shiftu_vqp *vq, const char *why)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (shiftu_going_back(vq)) {
		r = move_locked(vq, MOVE_REJOIN, true, why, msgs, &n_msgs);
		if (!shiftu_going_back(vq) && vq->state == SHIFTU_SEND_HANDSHAKE) {
			/* nothing said on the twin: the peer's count is answered */
			vq->hs_sent = 0;
			vq->ctrl_default = 0;
			vq->rejoin_ask = 1;
		}
	}
	__atomic_store_n(&vq->rejoin_want, 0, __ATOMIC_RELAXED);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
}

/*
 * The peer asks us to join its renewed twin (shiftu_rejoin()).  Our twin
 * may still be joined to the peer's old one (a failback we granted, and
 * whose message never came): the work on it moves onto it renewed, and we
 * speak first.  Back on our default QP, we fail over as if the peer had
 * told us on its twin.  Already on a renewed twin, we have spoken, or
 * will: nothing to do.  Context: the shadow thread, vq->lock held.
 */
void shiftu_rejoin_serve(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_DEFAULT) {
		if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE))
			shiftu_twin_renew(vq);
		r = move_locked(vq, MOVE_OVER, false, "the peer went back to its twin",
				msgs, &n_msgs);
	} else if (vq->on_twin && vq->tw_old) {
		vq->hs_sent = vq->hs_got = 0;
		vq->ctrl_default = 0;
		vq->fb_grant_open = 0;
		r = move_locked(vq, MOVE_REJOIN, false, "the peer renewed its twin", msgs, &n_msgs);
	} else {
		shiftu_dbg("qp %u: the peer asks to join its renewed twin: joined already",
			   vq->reg.app_qp->qp_num);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
}

/*
 * The peer, going back by the failback we granted (its request
 * @granted), has not heard from us, and asks us through the store to
 * cancel it.  The cancel wins over a grant not acted on yet: our default
 * QP stops waiting for the peer's message (one already come, or polled
 * and waiting for fo_lock, is dropped as stale), and the work on our twin,
 * still joined to the peer's old one, moves onto it renewed, where we speak
 * first; the peer, still going back, takes that for a failover and
 * follows us onto the twins (SHIFTU_HS_REJOIN).  A grant we followed
 * already is not undone: our answer is on its way to the peer's default
 * QP, where the peer still listens.  A cancel of another failback than
 * the one open (an older one, taken late from the store) changes nothing.
 * Context: the shadow thread, vq->lock held.
 */
void shiftu_cancel_serve(struct shiftu_vqp *vq, uint32_t granted)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_fb_cancel_in in;
	enum fo_result r = FO_NONE;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	in = (struct shiftu_fb_cancel_in){
		.state = vq->state,
		.on_twin = vq->on_twin,
		.tw_old = vq->tw_old,
		.expected = vq->ctrl_default,
		.open = vq->fb_grant_open,
		.same = vq->fb_granted == granted,
	};
	if (shiftu_fb_cancel_wins(&in)) {
		shiftu_info("qp %u on %s: the peer cancels its failback (its request %u): joining its renewed twin",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, granted);
		vq->fb_grant_open = 0;
		vq->hs_sent = vq->hs_got = 0;
		vq->ctrl_default = 0;
		r = move_locked(vq, MOVE_REJOIN, false, "the peer cancelled its failback", msgs,
				&n_msgs);
	} else {
		shiftu_dbg("qp %u: the peer cancels its failback (its request %u): %s",
			   vq->reg.app_qp->qp_num, granted,
			   in.same && !in.open ?
				   "followed already, our answer is on its way" :
				   "not the one open: nothing to do");
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
}

void shiftu_switch_back(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	enum fo_result r;
	int n_msgs = 0;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	vq->hs_sent = vq->hs_got = 0;		/* a new exchange */
	r = move_locked(vq, MOVE_BACK, false, "its port is back", msgs, &n_msgs);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
}

/*
 * The peer's control message: its receive count, whether it answers ours,
 * and on which QP it came (a message on the default QP is a two-sided
 * failback's).  Context: any thread, no library lock held.
 */
/*
 * The peer's count our held sends waited for has come: answer if we have
 * not spoken yet, and replay.  Context: fo_lock held.
 */
static enum fo_result replay_held(struct shiftu_vqp *vq)
{
	bool keys = vq->keys_held;
	enum fo_result r;
	uint64_t replayed;
	int ret;

	shiftu_lock_cqs(vq->scq, vq->rcq);
	/* a rejoin we asked for: the peer spoke first, we answer */
	ret = vq->hs_sent ? 0 : shiftu_ctrl_send(vq, true);
	if (!ret && keys_wait(vq, vq->replay_start)) {
		shiftu_unlock_cqs(vq->scq, vq->rcq);
		return FO_NONE;
	}
	if (!ret)
		ret = replay(vq, vq->replay_start, &replayed);
	if (ret) {
		shiftu_warn("qp %u on %s: %s, but answering or replaying failed: %s: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			    keys ? "the look ahead answered" : "the peer's count came", strerror(ret));
		go_dead(vq, NULL, 0, vq->sq.head);
		r = FO_DEAD;
	} else {
		shiftu_info("qp %u on %s: the peer's %s came after %.3f ms: %" PRIu64 " requests replayed",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, keys ? "rkeys" : "count",
			    (shiftu_mono_ns() - vq->hs_since_ns) / 1e6, replayed);
		r = moved(vq, replayed);
		if (r == FO_DONE)
			r = FO_NONE;	/* reported when it started */
		/* a rejoin the peer joined before we could ask */
		vq->rejoin_ask = 0;
	}
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	return r;
}

void shiftu_keys_came(struct shiftu_vqp *vq)
{
	enum fo_result r = FO_NONE;
	uint32_t rkey;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* a key still unanswered waits; one the store had none of fails
	 * the replay (as it always did) */
	if (vq->state == SHIFTU_SEND_HANDSHAKE && vq->keys_held && vq->on_twin &&
	    !count_due(vq) && keys_ready(vq, vq->replay_start, &rkey) != -EAGAIN)
		r = replay_held(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
}

/*
 * A control receive took a message of the peer's application (a
 * WRITE_WITH_IMM) instead of its library's: the peer is not where the
 * protocol has it, its immediate is no count, and the message cannot
 * reach the application's receive.  The QP is given up, its errors going
 * to the application, rather than replay by a count that is not one (in
 * many_gen.sh an immediate of 574 was taken for "574 received").
 * Context: fo_lock held.
 */
static enum fo_result hs_foreign(struct shiftu_vqp *vq, const struct shiftu_hs_msg *m)
{
	if (vq->state == SHIFTU_SEND_DEAD)
		return FO_NONE;
	shiftu_warn("qp %u on %s: a message of the peer's application (WRITE_WITH_IMM, immediate %u) took the control receive on its %s, where the peer's count was due: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, m->imm,
		    m->on_default ? "default QP" : "backup QP");
	/* nothing more is awaited on the default QP */
	__atomic_store_n(&vq->ctrl_default, 0, __ATOMIC_RELAXED);
	shiftu_lock_cqs(vq->scq, vq->rcq);
	go_dead(vq, NULL, 0, posted_end(vq));
	shiftu_unlock_cqs(vq->scq, vq->rcq);
	return FO_DEAD;
}

/* SHIFTU_TEST_FOLLOW_DELAY_MS has delayed a follow (the test build's) */
static uint8_t follow_delayed;

void shiftu_hs_message(const struct shiftu_hs_msg *m)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_vqp *vq = m->vq;
	struct shiftu_hs_in in = {
		.ack = m->imm & SHIFTU_HS_ACK,
		.on_default = m->on_default,
	};
	enum fo_result r = FO_NONE;
	enum shiftu_hs_act act;
	int ret, n_msgs = 0;
	uint64_t peer;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (m->foreign) {
		r = hs_foreign(vq, m);
		goto out;
	}
	/*
	 * The peer's receive count, 31 bits of it: it counts our two-sided
	 * sends, so it lies at most the work outstanding below our own
	 * count, whichever wrap of the 31 bits lies between.
	 */
	peer = shiftu_hs_count_get(m->imm, vq->sent2);
	in.state = vq->state;
	in.on_twin = vq->on_twin;
	in.old_gen = m->gen != (uint16_t)vq->ctrl_gen;
	in.expected = vq->ctrl_default;
	in.busy = vq->sq.head || vq->rq.head != shiftu_count_start();
	act = shiftu_hs_decide(&in);
	if (act == SHIFTU_HS_OLD) {
		shiftu_dbg("qp %u: a message on the default QP from before its reset (generation %u, now %u): dropped",
			   vq->reg.app_qp->qp_num, m->gen, (uint16_t)vq->ctrl_gen);
		goto out;
	}
	/*
	 * A message on the twin took its control receive, unless the twin
	 * was renewed since: a move's drain took it from the old twin and
	 * hands it over now, and the renewed twin's receive is still there
	 * (counted gone, a second would be posted behind it, and the peer's
	 * first SEND after its next failover's message would land in that).
	 */
	if (!in.on_default && vq->ctrl_rq && m->gen == (uint16_t)vq->reconnects)
		vq->ctrl_rq--;
	/* the message a failback we granted awaited has come */
	if (in.on_default)
		vq->ctrl_default = 0;
	shiftu_dbg("qp %u: the peer's %s on its %s QP: it has received %" PRIu64 " messages, we sent %" PRIu64,
		   vq->reg.app_qp->qp_num, in.ack ? "answer" : "move",
		   in.on_default ? "default" : "backup", peer, vq->sent2);
	if (act == SHIFTU_HS_STALE)
		goto out;
	vq->hs_peer = peer;
	vq->hs_got = 1;
	switch (act) {
	case SHIFTU_HS_FOLLOW_BACK:
		/*
		 * SHIFTU_TEST_FOLLOW_DELAY_MS: late, as a side starved of the
		 * CPU is, past the asker's wait for our answer (REJOIN_NS);
		 * fo_lock held, so that the shadow thread's look at the
		 * peer's requests waits too.  The process's first follow
		 * only: the failback tried again must go back.
		 */
		if (shiftu_test_follow_delay_ms() && !__atomic_exchange_n(&follow_delayed, 1,
									 __ATOMIC_RELAXED)) {
			shiftu_info("qp %u on %s: following the peer back in %u ms (a test setting)",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
				    shiftu_test_follow_delay_ms());
			usleep(shiftu_test_follow_delay_ms() * 1000U);
		}
		/* acted on: a cancel of it that comes now is too late */
		vq->fb_grant_open = 0;
		vq->hs_sent = 0;
		r = move_locked(vq, MOVE_BACK, false, "the peer fails back", msgs, &n_msgs);
		break;
	case SHIFTU_HS_REJOIN:
		vq->hs_sent = 0;
		vq->ctrl_default = 0;
		r = move_locked(vq, MOVE_REJOIN, false, "the peer failed over while we went back",
				msgs, &n_msgs);
		break;
	case SHIFTU_HS_FOLLOW_OVER:
		r = move_locked(vq, MOVE_OVER, false, "the peer failed over", msgs, &n_msgs);
		break;
	case SHIFTU_HS_ANSWER:
		vq->on_twin = 1;
		ret = shiftu_ctrl_send(vq, true);
		vq->on_twin = 0;
		if (ret) {
			shiftu_warn("qp %u: cannot answer the peer: %s",
				    vq->reg.app_qp->qp_num, strerror(ret));
			vq->hs_got = 0;
			vq->hs_sent = 0;
			break;
		}
		/*
		 * The exchange is over: the peer has our count, we have its.
		 * Its default QP was drained before it spoke, so nothing we
		 * post here from now on reaches it: our first post goes over
		 * (the slow paths), replaying all of it by the peer's count,
		 * and says nothing, since our answer took the one control
		 * receive on the peer's twin (model/shift.pml).
		 */
		vq->stayed = 1;
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
		shiftu_info("qp %u on %s: the peer failed over; nothing posted here: answered, staying until this QP posts",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		break;
	case SHIFTU_HS_DONE:
		vq->hs_got = 0;
		break;
	case SHIFTU_HS_REPLAY:
		r = replay_held(vq);
		break;
	default:
		break;
	}
out:
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	fo_report(vq, r);
	moved_deliver(vq, msgs, n_msgs);
}

/* ---- failing back (4.3.3) -------------------------------------------- */

/*
 * The twin has completed everything it was given: ring the default QP's
 * doorbell for the requests held since the fence, and go back to it.
 * Returns true when it did (the caller emits SHIFTU_EV_FAILBACK once it has
 * dropped fo_lock: the callback may call verbs).  Context: fo_lock held.
 */
static bool release_held(struct shiftu_vqp *vq)
{
	struct shiftu_cq *c = vq->scq;
	struct ibv_send_wr w, *bad;
	uint64_t i, held = vq->sq.head - vq->held_start;
	int ret = 0;

	for (i = vq->held_start; i < vq->sq.head && !ret; i++) {
		shiftu_swqe_wr(shiftu_swqe_at(&vq->sq, i), &w);
		ret = vq->post_send(vq->reg.app_qp, &w, &bad);
	}
	shiftu_lock_cqs(c, vq->rcq);
	twins_leave(vq);
	shiftu_unlock_cqs(c, vq->rcq);
	vq->state = ret ? SHIFTU_SEND_DEAD : SHIFTU_SEND_DEFAULT;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_DEFAULT);
	shiftu_qp_set_recv_state(&vq->reg, SHIFTU_RECV_DEFAULT);
	/*
	 * The next failover is a new exchange: the twin needs a control
	 * receive at its head again (it holds no receive of the
	 * application's: a QP with receives on its twin does not fail back).
	 */
	vq->rx_moved = 0;
	vq->on_twin = 0;
	vq->hs_sent = vq->hs_got = 0;
	/* the twin completed everything before the fence: a gap's READs too */
	vq->sq_gap.lo = vq->sq_gap.hi = vq->held_start;
	if (!vq->ctrl_rq && !shiftu_ctrl_recv(vq, true))
		vq->ctrl_rq = 1;
	__atomic_store_n(&vq->back_ns, shiftu_mono_ns(), __ATOMIC_RELAXED);
	vq->down = port_down_now(vq);
	vq->down_path = 0;
	shiftu_vqp_set_slow(vq, vq->down, __ATOMIC_RELAXED);
	if (ret) {
		shiftu_warn("qp %u on %s: cannot post the held requests after failing back: %s",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
		return false;
	}
	__atomic_fetch_add(&vq->reg.failbacks, 1, __ATOMIC_RELAXED);
	shiftu_info("qp %u on %s: failed back from %s, %" PRIu64 " held requests released",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->sctx->bak_name, held);
	return true;
}

static void failback_event(struct shiftu_vqp *vq)
{
	shiftu_event_emit(SHIFTU_EV_FAILBACK, vq->reg.app_qp, vq->sctx->bak_name,
			  vq->sctx->bak_port, vq->sctx->dev_name, vq->port_num, 0);
}

/* Release the held requests if the twin has drained.  Context: fo_lock not held. */
static bool drain_done(struct shiftu_vqp *vq)
{
	return vq->state == SHIFTU_SEND_WAIT_DRAINED &&
	       shiftu_seq64_le(vq->twin_signaled, __atomic_load_n(&vq->twin_done, __ATOMIC_RELAXED));
}

void shiftu_try_drain(struct shiftu_vqp *vq)
{
	bool back;

	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	back = drain_done(vq) && release_held(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (back)
		failback_event(vq);
}

/*
 * Aim the empty probe @p at memory the application writes to, with its
 * key, so that the responder takes its ordinary path (nothing is written:
 * the length is zero).  A QP that reads probes with an empty READ instead
 * (its peer grants remote reads): Soft-RoCE 6.1 keeps its completer's last
 * READ-response opcode across a reset, so after a failover in the middle
 * of a multi-packet READ response it takes the next ACK as out of sequence
 * (a WARN at rxe_comp.c:756, and the QP fails again), while a READ's
 * single response is accepted in any state and clears it.  Returns false
 * when the ring holds neither: the peer may grant no remote access at all
 * (ibv_rc_pingpong), and Soft-RoCE refuses even an empty WRITE then (it
 * checks the QP's access flags before the length).  A peer on an SRQ has
 * a mailbox, which its reset QP grants remote writes to (box.c): the probe
 * is aimed there.
 */
static bool probe_aim(struct shiftu_vqp *vq, struct ibv_send_wr *p)
{
	uint64_t i0;

	/* a peer on an SRQ grants remote writes to its mailbox (box.c) */
	if (vq->peer.box_rkey[SHIFTU_BOX_DEFAULT]) {
		p->opcode = IBV_WR_RDMA_WRITE;
		p->wr.rdma.remote_addr = vq->peer.box_addr[SHIFTU_BOX_DEFAULT];
		p->wr.rdma.rkey = vq->peer.box_rkey[SHIFTU_BOX_DEFAULT];
		return true;
	}

	for (i0 = vq->sq.head; i0 > vq->sq.head - vq->sq.mask - 1 && i0 > 0; i0--) {
		const struct shiftu_swqe *e = shiftu_swqe_at(&vq->sq, i0 - 1);

		if (e->opcode == IBV_WR_RDMA_WRITE || e->opcode == IBV_WR_RDMA_READ) {
			p->opcode = e->opcode;
			p->wr.rdma.remote_addr = e->remote_addr;
			p->wr.rdma.rkey = e->rkey;
			return true;
		}
	}
	return false;
}

bool shiftu_probe_by_send(struct shiftu_vqp *vq)
{
	struct ibv_send_wr p = { .opcode = IBV_WR_RDMA_WRITE };

	return !probe_aim(vq, &p);
}

/*
 * The default QP was reconnected: send an empty WRITE (or READ) through
 * it, or with @by_send an empty SEND into the control receive the peer
 * posted for it (handshake.h).  Only a working path in both directions
 * completes it; shiftu_probe_step() looks for that.  Returns false when
 * it could not be posted.  Context: the shadow thread.
 */
bool shiftu_probe(struct shiftu_vqp *vq, bool by_send)
{
	struct ibv_send_wr p = { .wr_id = PROBE_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (by_send)
		p.opcode = IBV_WR_SEND;
	else
		probe_aim(vq, &p);
	vq->probe_state = 1;
	if (vq->post_send(vq->reg.app_qp, &p, &bad))
		return false;
	shiftu_dbg("qp %u: probe posted (%s)", vq->reg.app_qp->qp_num,
		   by_send ? "an empty SEND" : p.opcode == IBV_WR_RDMA_READ ? "an empty READ" :
		   "an empty WRITE");
	return true;
}

/*
 * Whether @vq's probe has completed: the application's slow polls take its
 * completion (shiftu_app_own()); so does one poll of the send CQ here, for
 * an application that polls nothing.  Returns the probe's state.  It does
 * not wait: the shadow thread probes every QP that is ready at once, and
 * one slow probe (a second beside 64 polling threads on the lab's one
 * CPU) no longer holds up the others.  Context: the shadow thread.
 */
int shiftu_probe_step(struct shiftu_vqp *vq)
{
	struct shiftu_hs_msg msgs[SHIFTU_HS_BATCH];
	struct shiftu_cq *c = vq->scq;
	struct ibv_wc wc[16];
	int k, i, n_msgs = 0;

	if (vq->probe_state != 1)
		return vq->probe_state;
	shiftu_cq_lock_quiet(c);
	k = vq->sctx->poll_cq(c->app, SHIFTU_ARRAY_SIZE(wc), wc);
	if (k > 0) {
		/* the probe's completion, and a peer's message, taken out */
		k = shiftu_app_own(c, wc, k, msgs, &n_msgs);
		shiftu_took(vq->sctx, wc, k);
	}
	for (i = 0; i < k; i++)
		shiftu_stash_push(c, &wc[i]);
	shiftu_unlock(&c->lock, SHIFTU_LOCK_CQ);
	shiftu_hs_deliver(msgs, n_msgs);
	shiftu_hs_unpark(c);
	return vq->probe_state;
}

void shiftu_probe_fence(struct shiftu_vqp *vq)
{
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_FALLBACK) {
		vq->state = SHIFTU_SEND_WAIT_SIGNALED;
		shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_WAIT_SIGNALED);
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

void shiftu_back_due(struct shiftu_vqp *vq)
{
	__atomic_store_n(&vq->back_due_ns, shiftu_mono_ns(), __ATOMIC_RELEASE);
	__atomic_store_n(&vq->scq->back_due, true, __ATOMIC_RELEASE);
	__atomic_store_n(&vq->rcq->back_due, true, __ATOMIC_RELEASE);
}

bool shiftu_take_back(struct shiftu_vqp *vq)
{
	uint8_t none = 0;

	if (!__atomic_compare_exchange_n(&vq->back_taken, &none, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	/* taken before it stops being due: shiftu_back_pending() sees one */
	if (!__atomic_exchange_n(&vq->back_due_ns, 0, __ATOMIC_ACQ_REL)) {
		__atomic_store_n(&vq->back_taken, 0, __ATOMIC_RELEASE);
		return false;
	}
	shiftu_switch_back(vq);
	/* back (its state says so), or not going: either way no longer taken */
	__atomic_store_n(&vq->back_taken, 0, __ATOMIC_RELEASE);
	return true;
}

bool shiftu_back_pending(const struct shiftu_vqp *vq)
{
	return __atomic_load_n(&vq->back_due_ns, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&vq->back_taken, __ATOMIC_ACQUIRE);
}

/* ---- slow paths ------------------------------------------------------- */

/* Why a QP that answered the peer's failover and stayed moves now. */
#define STAYED_WHY	"it posts, and the peer is on its twin"

/*
 * A QP at rest on its default QP with its port up takes the fast paths
 * again.  Only here, under fo_lock: no move is under way.
 */
static void slow_settle(struct shiftu_vqp *vq)
{
	if (vq->state == SHIFTU_SEND_DEFAULT && !vq->down && !vq->rx_moved && !vq->stayed)
		shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
}

int shiftu_post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool back;
	int ret = 0;

	if (vq->state == SHIFTU_SEND_DEFAULT && (vq->down || vq->stayed))
		shiftu_failover(vq, vq->down ? shiftu_down_why(vq) : STAYED_WHY);
	/*
	 * Under fo_lock: a move another thread is making (the state still
	 * reads Default until it is done) must not see a request reach the
	 * QP it is draining.
	 */
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD) {
		/* it counts: this thread must be the send queue's poster */
		bool kept = shiftu_poster_take(vq, false);

		slow_settle(vq);
		ret = shiftu_post_send_default(vq, qp, wr, bad_wr);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		if (!kept)
			fo_report(vq, FO_DEAD);
		return ret;
	}
	for (; wr; wr = wr->next) {
		if (vq->state == SHIFTU_SEND_FALLBACK && shiftu_op_two_sided(wr->opcode) &&
		    !vq->hs_got) {
			/* the peer may not have its receives on its twin yet */
			vq->state = SHIFTU_SEND_HANDSHAKE;
			vq->replay_start = vq->sq.head;
			vq->hs_since_ns = shiftu_mono_ns();
		}
		if (vq->state == SHIFTU_SEND_WAIT_DRAINED ||
		    vq->state == SHIFTU_SEND_HANDSHAKE) {
			/* recorded, doorbell withheld */
			shiftu_record_send(vq, wr);
			continue;
		}
		/* recorded: a two-sided failback replays what the twin held */
		shiftu_record_send(vq, wr);
		ret = post_twin(vq, wr);
		/* held with those after it until the key is fetched; a failback
		 * under way (its fence) is not held: it fails as it did */
		if (ret == EAGAIN && vq->state == SHIFTU_SEND_FALLBACK &&
		    keys_wait(vq, vq->sq.head - 1)) {
			ret = 0;
			continue;
		}
		if (ret == EAGAIN)
			ret = EINVAL;
		if (ret) {
			vq->sq.head--;
			vq->sent2 -= shiftu_op_two_sided(wr->opcode);
			*bad_wr = wr;
			break;
		}
		if (signaled(vq, wr)) {
			vq->twin_signaled++;
			if (vq->state == SHIFTU_SEND_WAIT_SIGNALED) {
				/* this one is the fence */
				vq->state = SHIFTU_SEND_WAIT_DRAINED;
				shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_WAIT_DRAINED);
				vq->held_start = vq->sq.head;
				shiftu_dbg("qp %u: fence posted on the twin (%" PRIu64 " of %" PRIu64 " signaled done)",
					   qp->qp_num, vq->twin_done, vq->twin_signaled);
			}
		}
	}
	back = drain_done(vq) && release_held(vq);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (back)
		failback_event(vq);
	return ret;
}

int shiftu_post_recv_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret = 0;

	/* the peer is on its twin, where its messages wait for receives */
	if (vq->state == SHIFTU_SEND_DEFAULT && vq->stayed)
		shiftu_failover(vq, STAYED_WHY);
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (!vq->rx_moved) {
		/* it counts: this thread must be the receive queue's poster */
		bool kept = shiftu_poster_take(vq, true);

		slow_settle(vq);
		ret = shiftu_post_recv_default(vq, qp, wr, bad_wr);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		if (!kept)
			fo_report(vq, FO_DEAD);
		return ret;
	}
	for (; wr; wr = wr->next) {
		shiftu_record_recv(vq, wr);
		ret = post_twin_recv(vq, shiftu_rwqe_at(&vq->rq, vq->rq.head - 1));
		if (ret) {
			vq->rq.head--;
			*bad_wr = wr;
			break;
		}
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	return ret;
}
