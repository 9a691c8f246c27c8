// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * replay.c: the work a move carries over, put on the QP the work goes to
 * (failover_int.h): the recorded requests copied with their keys
 * translated for the twin, the sends replayed by the plan (proto.h) in
 * chains, held until the look ahead has the peer's keys, or flushed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "failover_int.h"
#include "interpose.h"
#include "log.h"
#include "proto.h"
#include "shadow.h"
#include "srq.h"
#include "testbuild.h"
#include "util.h"

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
 * asked for: shiftu_keys_wait()).  Context: fo_lock.
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
int shiftu_post_twin(struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
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
int shiftu_post_twin_rwqe(struct shiftu_vqp *vq, const struct shiftu_rwqe *e)
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

bool shiftu_wr_signaled(const struct shiftu_vqp *vq, const struct ibv_send_wr *wr)
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
int shiftu_post_recv_on(struct shiftu_vqp *vq, const struct shiftu_rwqe *e)
{
	struct ibv_recv_wr w = { .wr_id = e->wr_id, .num_sge = e->num_sge,
				 .sg_list = (struct ibv_sge *)e->sge }, *bad;

	return vq->on_twin ? shiftu_post_twin_rwqe(vq, e) : vq->post_recv(vq->reg.app_qp, &w, &bad);
}

/* Where the sends posted on the QP a move leaves end: held ones follow. */
uint64_t shiftu_posted_end(const struct shiftu_vqp *vq)
{
	if (vq->state == SHIFTU_SEND_HANDSHAKE)
		return vq->replay_start;
	if (vq->state == SHIFTU_SEND_WAIT_DRAINED)
		return vq->held_start;
	return vq->sq.head;
}

/*
 * Whether the peer's backup rkeys that the replay of the sends from @from
 * on needs are known (as shiftu_replay() would post them: those the peer
 * executed need none).  Returns 0; -EAGAIN when the look ahead has not
 * fetched one yet, *@rkey the first (all of them are now asked for:
 * shiftu_backup_rkey()); -ENOENT when the store had none, which the
 * replay then fails on, as it always did.  Context: fo_lock.
 */
int shiftu_keys_ready(struct shiftu_vqp *vq, uint64_t from, uint32_t *rkey)
{
	const struct shiftu_swqe *e;
	struct shiftu_send_plan p;
	uint32_t bak;
	int ret = 0, r;
	uint64_t i;

	if (!vq->on_twin)
		return 0;
	shiftu_plan_sends(&p, &vq->sq, from, shiftu_posted_end(vq), &vq->sq_gap, vq->sent2,
			  vq->hs_got, vq->hs_peer);
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
bool shiftu_keys_wait(struct shiftu_vqp *vq, uint64_t from)
{
	uint32_t rkey = 0;

	if (shiftu_keys_ready(vq, from, &rkey) != -EAGAIN)
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
int shiftu_replay(struct shiftu_vqp *vq, uint64_t from, uint64_t *replayed)
{
	struct shiftu_cq *c = vq->scq;
	struct shiftu_send_plan p;
	struct replay_chain *b;
	uint64_t i, stop = from;
	struct ibv_send_wr w;
	struct ibv_wc wc;
	int ret = 0;

	*replayed = 0;
	shiftu_plan_sends(&p, &vq->sq, from, shiftu_posted_end(vq), &vq->sq_gap, vq->sent2,
			  vq->hs_got, vq->hs_peer);
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
			if (shiftu_wr_signaled(vq, &w)) {
				swqe_wc(vq, e, &wc);
				if (shiftu_stash_push(c, &wc)) {
					ret = ENOMEM;
					stop = b->n ? b->at[0] : i + 1;
				}
			}
			continue;
		}
		/* counted like later posts: the fence waits for these too */
		vq->twin_signaled += shiftu_wr_signaled(vq, &w);
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

/*
 * The sends from @from on that @vq holds and never posted (a handshake's,
 * a fence's) complete flushed, as on a QP in error.  Context: fo_lock and
 * both CQs' locks held.
 */
void shiftu_flush_held(struct shiftu_vqp *vq, uint64_t from)
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
