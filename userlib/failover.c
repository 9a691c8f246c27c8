// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * failover.c: moving a QP's traffic to its twin on the backup port (SHIFT
 * paper 4.3.2), and the slow paths that serve a QP and its CQs meanwhile.
 *
 * A failover starts on the posting thread when the health page shows the
 * QP's port or path down.  It stops the default QP (modify to ERR), which
 * flushes every send work request the NIC still holds, in order, with an
 * error completion each, even the unsignaled ones (IBA 10.7.3.1); a marker
 * posted after the stop is flushed last.  Draining the send CQ up to the
 * marker therefore counts the outstanding work requests: they are the last
 * ones the ring recorded.  Completions of other QPs, and good ones of this
 * QP, met on the way are kept for the application's next poll.
 *
 * What is replayed is what is idempotent without the peer's help: RDMA
 * WRITE and READ.  If a SEND, WRITE_WITH_IMM or atomic is outstanding, or
 * the QP has receives posted, the two sides would have to agree on what
 * arrived (the two-way handshake, not implemented yet): the flushed work
 * requests then go back to the application as the errors they are, and an
 * atomic raises SHIFTU_EV_ATOMIC_ERROR.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "failover.h"
#include "interpose.h"
#include "log.h"
#include "shadow.h"
#include "util.h"

uint64_t shiftu_twin_wcs;

/* wr_ids of the library's own requests: "SHIFTMRK", "SHIFTPRB" */
#define MARKER_WR_ID	0x5348494654de4b52ULL
#define PROBE_WR_ID	0x5348494654505242ULL
#define DRAIN_NS	(2ULL * 1000 * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* ---- the CQ stash (cq->lock held) ------------------------------------- */

static int stash_push(struct shiftu_cq *c, const struct ibv_wc *wc)
{
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

static int stash_pop(struct shiftu_cq *c, struct ibv_wc *wc, int num)
{
	int n = 0;

	while (n < num && c->stash_n) {
		wc[n++] = c->stash[c->stash_head];
		c->stash_head = (c->stash_head + 1) % c->stash_cap;
		c->stash_n--;
	}
	return n;
}

/* The CQs of context @s take the slow poll while @on (cq->lock held). */
static void cq_slow_ctx(struct shiftu_ctx *s, bool on)
{
	__atomic_fetch_add(&s->slow_cqs, on ? 1 : -1, __ATOMIC_RELAXED);
}

static void cq_slow(struct shiftu_vqp *vq, bool on)
{
	cq_slow_ctx(vq->sctx, on);
}

/* A completion status as a word for the log (ibv_wc_status_str is in
 * libibverbs, which the library does not link). */
static const char *wc_status_word(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:	return "transport retry counter exceeded";
	case IBV_WC_RNR_RETRY_EXC_ERR:	return "RNR retry counter exceeded";
	case IBV_WC_WR_FLUSH_ERR:	return "work request flushed";
	case IBV_WC_REM_ACCESS_ERR:	return "remote access error";
	case IBV_WC_LOC_QP_OP_ERR:	return "local QP operation error";
	default:			return "error completion";
	}
}

/* ---- failover --------------------------------------------------------- */

static struct shiftu_swqe *swqe_at(struct shiftu_ring *r, uint64_t i)
{
	return (struct shiftu_swqe *)((char *)r->slots + (i & r->mask) * r->stride);
}

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

/*
 * Post one work request on the twin, keys translated.  Context: fo_lock.
 * Returns 0 or an errno (the verbs convention).
 */
static int post_twin(struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	struct ibv_sge sge[16];
	struct ibv_send_wr w = *wr, *bad;
	int i, ret;

	if (wr->num_sge > (int)SHIFTU_ARRAY_SIZE(sge))
		return EINVAL;
	w.next = NULL;
	w.sg_list = sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i] = wr->sg_list[i];
		if (!(wr->send_flags & IBV_SEND_INLINE) &&
		    lkey_of(vq, sge[i].lkey, &sge[i].lkey))
			return EINVAL;
	}
	if ((wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ ||
	     wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) &&
	    shiftu_backup_rkey(vq, wr->wr.rdma.rkey, &w.wr.rdma.rkey))
		return EINVAL;
	/* an atomic posted after the failover is new work, not a replay */
	if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	     wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
	    shiftu_backup_rkey(vq, wr->wr.atomic.rkey, &w.wr.atomic.rkey))
		return EINVAL;
	ret = vq->bak_qp->context->ops.post_send(vq->bak_qp, &w, &bad);
	return ret;
}

/* The recorded work request @e as a send_wr on the stack. */
static void swqe_wr(const struct shiftu_swqe *e, struct ibv_send_wr *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = e->wr_id;
	w->sg_list = (struct ibv_sge *)e->sge;
	w->num_sge = e->num_sge;
	w->opcode = e->opcode;
	w->send_flags = e->send_flags;
	w->imm_data = e->imm_data;
	w->wr.rdma.remote_addr = e->remote_addr;
	w->wr.rdma.rkey = e->rkey;
}

static bool signaled(const struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
{
	return vq->init_attr.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
}

static bool replayable(uint32_t opcode)
{
	return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_READ;
}

/*
 * Stop the default QP and count its outstanding sends.  @flushed gets the
 * flushed completions (ring order) and *@got their number, also when the
 * drain fails, so that none is lost.  Returns 0 or -errno.
 * Context: fo_lock and the send CQ's lock held.
 */
/*
 * Move @qp's error completions out of the stash into @flushed (after the
 * @n already there), keeping everything else in order.  Returns the new n,
 * or -EOVERFLOW.
 */
static int unstash_errors(struct shiftu_cq *c, uint32_t qp_num, struct ibv_wc *flushed,
			  unsigned int n, unsigned int max)
{
	unsigned int i, kept = 0, total = c->stash_n;
	struct ibv_wc w;

	for (i = 0; i < total; i++) {
		w = c->stash[(c->stash_head + i) % c->stash_cap];
		if (w.qp_num == qp_num && w.status != IBV_WC_SUCCESS) {
			if (n == max)
				return -EOVERFLOW;
			flushed[n++] = w;
		} else {
			c->stash[(c->stash_head + kept++) % c->stash_cap] = w;
		}
	}
	c->stash_n = kept;
	return n;
}

static int drain(struct shiftu_vqp *vq, struct shiftu_cq *c, struct ibv_wc *flushed,
		 unsigned int max, const struct ibv_wc *first, int *got)
{
	struct ibv_qp *qp = vq->reg.app_qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr m = { .wr_id = MARKER_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint64_t deadline = now_ns() + DRAIN_NS;
	struct ibv_wc wc[16];
	unsigned int n = 0;
	int k, i, ret;

	/*
	 * On an error completion the NIC has stopped the QP already; the
	 * modify then only confirms it.  The completions polled with the
	 * first error (stashed by the caller) are part of the count.
	 */
	*got = 0;
	if (first) {
		flushed[n++] = *first;
		*got = n;
		ret = unstash_errors(c, qp->qp_num, flushed, n, max);
		if (ret < 0)
			return ret;
		*got = n = ret;
	}
	ret = shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return -ret;
	ret = vq->post_send(qp, &m, &bad);
	if (ret)
		return -ret;
	for (;;) {
		k = vq->sctx->poll_cq(c->app, SHIFTU_ARRAY_SIZE(wc), wc);
		if (k < 0)
			return -EIO;
		for (i = 0; i < k; i++) {
			if (wc[i].qp_num != qp->qp_num || wc[i].status == IBV_WC_SUCCESS) {
				if (stash_push(c, &wc[i]))
					return -ENOMEM;
				continue;
			}
			if (wc[i].wr_id == MARKER_WR_ID)
				return 0;
			if (n == max)
				return -EOVERFLOW;
			flushed[n++] = wc[i];
			*got = n;
		}
		if (!k) {
			if (now_ns() > deadline)
				return -ETIMEDOUT;
			sched_yield();
		}
	}
}

void shiftu_failover(struct shiftu_vqp *vq, const char *why, const struct ibv_wc *first)
{
	struct shiftu_cq *c = vq->scq;
	struct ibv_wc *flushed = NULL;
	struct ibv_send_wr w;
	uint64_t t0 = now_ns(), start, i;
	int n = 0, ret, atomic = 0, other = 0;

	pthread_mutex_lock(&vq->fo_lock);
	if (vq->state != SHIFTU_SEND_DEFAULT)
		goto out_unlock;
	if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) || !c) {
		/* the next post asks again */
		__atomic_store_n(&vq->slow, 1, __ATOMIC_RELAXED);
		if (!vq->told_waiting++)
			shiftu_warn("qp %u on %s: %s, but its twin is not ready: staying",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		goto out_unlock;
	}
	if (vq->rq.head) {
		if (!vq->told_waiting++)
			shiftu_warn("qp %u on %s: %s; it has receives posted, and two-sided failover is not implemented: staying",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
		goto out_unlock;
	}
	flushed = malloc((vq->sq.mask + 2) * sizeof(*flushed));
	if (!flushed)
		goto out_unlock;

	pthread_mutex_lock(&c->lock);
	if (c->n_twins == SHIFTU_ARRAY_SIZE(c->twins)) {
		pthread_mutex_unlock(&c->lock);
		shiftu_warn("qp %u: its CQ has too many failed-over QPs: staying",
			    vq->reg.app_qp->qp_num);
		goto out_unlock;
	}
	cq_slow(vq, true);
	ret = drain(vq, c, flushed, vq->sq.mask + 1, first, &n);
	if (ret < 0) {
		shiftu_warn("qp %u on %s: cannot drain it: %s: unprotected",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(-ret));
		goto out_dead;
	}
	start = vq->sq.head - n;
	for (i = start; i < vq->sq.head; i++) {
		uint32_t op = swqe_at(&vq->sq, i)->opcode;

		atomic |= op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
		other |= !replayable(op);
	}
	if (other) {
		shiftu_warn("qp %u on %s: %s with %s outstanding: not replayed, the application gets the errors",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why,
			    atomic ? "an atomic" : "a SEND or WRITE_WITH_IMM");
		goto out_dead;
	}
	vq->twin_signaled = vq->twin_done = 0;
	for (i = start; i < vq->sq.head; i++) {
		swqe_wr(swqe_at(&vq->sq, i), &w);
		/* counted like later posts: the fence waits for these too */
		vq->twin_signaled += signaled(vq, &w);
		ret = post_twin(vq, &w);
		if (ret) {
			shiftu_warn("qp %u on %s: replay on the twin failed: %s: the application gets the errors",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(ret));
			goto out_dead;
		}
	}
	c->twins[c->n_twins++] = vq;
	vq->state = SHIFTU_SEND_FALLBACK;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_FALLBACK);
	__atomic_store_n(&vq->slow, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->reg.failovers, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&vq->reg.replayed_wrs, n, __ATOMIC_RELAXED);
	shiftu_stat_add(SHIFTU_STAT_REPLAYED_WRS, n);
	pthread_mutex_unlock(&c->lock);
	shiftu_info("qp %u on %s: %s: failed over to qp %u on %s port %u, %d work requests replayed, %.3f ms",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why, vq->bak_qp->qp_num,
		    vq->sctx->bak_name, vq->sctx->bak_port, n, (now_ns() - t0) / 1e6);
	pthread_mutex_unlock(&vq->fo_lock);
	free(flushed);
	shiftu_event_emit(SHIFTU_EV_FAILOVER, vq->reg.app_qp, vq->sctx->dev_name,
			  vq->port_num, vq->sctx->bak_name, vq->sctx->bak_port, 0);
	return;

out_dead:
	/* what the NIC flushed goes to the application, as without shift */
	for (i = 0; n > 0 && i < (uint64_t)n; i++)
		stash_push(c, &flushed[i]);
	vq->state = SHIFTU_SEND_DEAD;
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	__atomic_store_n(&vq->slow, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&vq->fo_lock);
	free(flushed);
	/* the callback may call verbs: no library lock held */
	if (atomic)
		shiftu_event_emit(SHIFTU_EV_ATOMIC_ERROR, vq->reg.app_qp,
				  vq->sctx->dev_name, vq->port_num, NULL, 0, EIO);
	shiftu_event_emit(SHIFTU_EV_UNPROTECTED, vq->reg.app_qp, vq->sctx->dev_name,
			  vq->port_num, NULL, 0, EIO);
	return;
out_unlock:
	pthread_mutex_unlock(&vq->fo_lock);
	free(flushed);
}

/* ---- slow paths ------------------------------------------------------- */

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
	unsigned int j;
	int ret = 0;

	for (i = vq->held_start; i < vq->sq.head && !ret; i++) {
		swqe_wr(swqe_at(&vq->sq, i), &w);
		ret = vq->post_send(vq->reg.app_qp, &w, &bad);
	}
	pthread_mutex_lock(&c->lock);
	for (j = 0; j < c->n_twins; j++)
		if (c->twins[j] == vq) {
			c->twins[j] = c->twins[--c->n_twins];
			break;
		}
	/* the CQ stays slow while the library still holds completions */
	if (!c->stash_n)
		cq_slow(vq, false);
	else
		c->slow_leftover++;
	pthread_mutex_unlock(&c->lock);
	vq->state = ret ? SHIFTU_SEND_DEAD : SHIFTU_SEND_DEFAULT;
	shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_DEFAULT);
	__atomic_store_n(&vq->slow, vq->down, __ATOMIC_RELAXED);
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
	       __atomic_load_n(&vq->twin_done, __ATOMIC_RELAXED) >= vq->twin_signaled;
}

void shiftu_try_drain(struct shiftu_vqp *vq)
{
	bool back;

	pthread_mutex_lock(&vq->fo_lock);
	back = drain_done(vq) && release_held(vq);
	pthread_mutex_unlock(&vq->fo_lock);
	if (back)
		failback_event(vq);
}

/*
 * The default QP was reconnected: send an empty WRITE through it, and wait
 * (1 s) for its completion, which only a working path in both directions
 * gives.  Returns true when it came back good.  Context: the shadow thread.
 */
bool shiftu_probe(struct shiftu_vqp *vq)
{
	struct ibv_send_wr p = { .wr_id = PROBE_WR_ID, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct shiftu_cq *c = vq->scq;
	uint64_t deadline = now_ns() + DRAIN_NS / 2, i0;
	struct ibv_wc wc[16];
	int k, i;

	/*
	 * Aim the empty WRITE at memory the application writes to, with its
	 * key, so that the responder takes its ordinary path (nothing is
	 * written: the length is zero).
	 */
	for (i0 = vq->sq.head; i0 > vq->sq.head - vq->sq.mask - 1 && i0 > 0; i0--) {
		const struct shiftu_swqe *e = swqe_at(&vq->sq, i0 - 1);

		if (replayable(e->opcode)) {
			p.wr.rdma.remote_addr = e->remote_addr;
			p.wr.rdma.rkey = e->rkey;
			break;
		}
	}
	vq->probe_state = 1;
	if (vq->post_send(vq->reg.app_qp, &p, &bad))
		return false;
	shiftu_dbg("qp %u: probe posted", vq->reg.app_qp->qp_num);
	while (vq->probe_state == 1 && now_ns() < deadline) {
		pthread_mutex_lock(&c->lock);
		k = vq->sctx->poll_cq(c->app, SHIFTU_ARRAY_SIZE(wc), wc);
		for (i = 0; i < k; i++) {
			if (wc[i].wr_id == PROBE_WR_ID &&
			    wc[i].qp_num == vq->reg.app_qp->qp_num)
				vq->probe_state = wc[i].status == IBV_WC_SUCCESS ? 2 : 3;
			else
				stash_push(c, &wc[i]);
		}
		pthread_mutex_unlock(&c->lock);
		if (k <= 0)
			sched_yield();
	}
	shiftu_dbg("qp %u: probe %s", vq->reg.app_qp->qp_num,
		   vq->probe_state == 2 ? "good" : vq->probe_state == 3 ? "failed" : "timed out");
	if (vq->probe_state != 2)
		return false;
	pthread_mutex_lock(&vq->fo_lock);
	if (vq->state == SHIFTU_SEND_FALLBACK) {
		vq->state = SHIFTU_SEND_WAIT_SIGNALED;
		shiftu_qp_set_send_state(&vq->reg, SHIFTU_SEND_WAIT_SIGNALED);
	}
	pthread_mutex_unlock(&vq->fo_lock);
	return true;
}

/*
 * A probe completion the application's poll met: the shadow thread's, not
 * the application's.  Returns the number of completions left in @wc.
 */
static int drop_probes(struct shiftu_ctx *s, struct ibv_wc *wc, int n)
{
	struct shiftu_vqp *vq;
	int i, k = 0;

	for (i = 0; i < n; i++) {
		if (wc[i].wr_id == PROBE_WR_ID &&
		    (vq = shiftu_vqp_by_num(s, wc[i].qp_num))) {
			vq->probe_state = wc[i].status == IBV_WC_SUCCESS ? 2 : 3;
			continue;
		}
		wc[k++] = wc[i];
	}
	return k;
}

/* ---- slow paths ------------------------------------------------------- */

int shiftu_post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool back;
	int ret = 0;

	if (vq->state == SHIFTU_SEND_DEFAULT && vq->down)
		shiftu_failover(vq, "port or path down", NULL);
	if (vq->state == SHIFTU_SEND_DEFAULT || vq->state == SHIFTU_SEND_DEAD)
		return shiftu_post_send_default(vq, qp, wr, bad_wr);
	pthread_mutex_lock(&vq->fo_lock);
	for (; wr; wr = wr->next) {
		if (vq->state == SHIFTU_SEND_WAIT_DRAINED) {
			/* after the fence: recorded, doorbell withheld */
			shiftu_record_send(vq, wr);
			continue;
		}
		ret = post_twin(vq, wr);
		if (ret) {
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
	pthread_mutex_unlock(&vq->fo_lock);
	if (back)
		failback_event(vq);
	return ret;
}

/*
 * An error completion in what the provider returned.  If it is the first
 * error of a QP the library can fail over, everything from it on is
 * stashed, the QP fails over (which takes its other flushed completions
 * out of the stash), and the application gets what came before it now and
 * the rest from the slow poll.  Other errors (unprotected QPs, or a QP
 * already on its twin) go to the application unchanged.  Context: the
 * polling thread.  Cold.
 */
int shiftu_poll_error(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
		      struct ibv_wc *wc, int n)
{
	struct shiftu_vqp *vq = NULL;
	struct shiftu_cq *c;
	int i, j;

	for (i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_SUCCESS)
			continue;
		vq = shiftu_vqp_by_num(s, wc[i].qp_num);
		/* what shiftu_failover() would refuse is left to the application */
		if (vq && vq->state == SHIFTU_SEND_DEFAULT && vq->rings && !vq->rq.head &&
		    __atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) &&
		    vq->scq && vq->scq->app == cq &&
		    vq->scq->n_twins < SHIFTU_ARRAY_SIZE(vq->scq->twins))
			break;
	}
	if (i == n)
		return n;
	c = vq->scq;
	pthread_mutex_lock(&c->lock);
	for (j = i + 1; j < n; j++)
		if (stash_push(c, &wc[j])) {
			/* no memory to hold them: hand everything over as it is */
			pthread_mutex_unlock(&c->lock);
			return n;
		}
	/* the stash must be served: slow until it is empty */
	cq_slow_ctx(s, true);
	c->slow_leftover++;
	pthread_mutex_unlock(&c->lock);
	shiftu_failover(vq, wc_status_word(wc[i].status), &wc[i]);
	if (i)
		return i;
	return shiftu_poll_cq_slow(s, cq, num, wc);
}

int shiftu_poll_cq_slow(struct shiftu_ctx *s, struct ibv_cq *cq, int num,
			struct ibv_wc *wc)
{
	struct shiftu_cq *c = shiftu_cq_find(cq);
	struct shiftu_vqp *drained = NULL;
	int n, k, i, j;

	if (!c)
		return s->poll_cq(cq, num, wc);
	pthread_mutex_lock(&c->lock);
	n = stash_pop(c, wc, num);
	if (n < num) {
		k = s->poll_cq(cq, num - n, wc + n);
		if (k < 0 && !n)
			n = k;
		else if (k > 0)
			n += drop_probes(s, wc + n, k);
	}
	if (n >= 0 && n < num && c->bak && c->n_twins) {
		k = c->bak->context->ops.poll_cq(c->bak, num - n, wc + n);
		for (i = 0; i < k; i++)
			for (j = 0; j < (int)c->n_twins; j++) {
				struct shiftu_vqp *t = c->twins[j];

				if (wc[n + i].qp_num != t->bak_qp->qp_num)
					continue;
				wc[n + i].qp_num = t->reg.app_qp->qp_num;
				/* send completions are the signaled ones */
				if (!(wc[n + i].opcode & IBV_WC_RECV))
					t->twin_done++;
				if (t->state == SHIFTU_SEND_WAIT_DRAINED)
					drained = t;
				break;
			}
		if (k > 0) {
			n += k;
			__atomic_fetch_add(&shiftu_twin_wcs, k, __ATOMIC_RELAXED);
		}
	}
	if (c->slow_leftover && !c->stash_n) {
		/* a failed-back QP left completions here: served now */
		c->slow_leftover--;
		cq_slow_ctx(s, false);
	}
	pthread_mutex_unlock(&c->lock);
	if (drained)
		shiftu_try_drain(drained);
	return n;
}
