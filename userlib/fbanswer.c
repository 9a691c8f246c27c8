// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fbanswer.c: failing back (SHIFT 4.3.3), the answering side: the peer
 * that failed over asks through the store to have our QP reset for new
 * PSNs (failback.c); the shadow thread reads the request, lets proto.c
 * decide the answer (grant one-sided or two-sided, busy, leads, down),
 * resets the QP for a grant, and puts the answer in the pass's last
 * batch.  A cancel or a rejoin the peer asks for is served here too.
 * Context: the shadow thread's pass (shadow.c), vq->lock held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxstate.h"
#include "failback_int.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "proto.h"
#include "serial.h"
#include "store.h"
#include "util.h"

/* The table shows @vq's own port down (not merely unknown). */
static bool port_down(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 1 && path != SHIFT_FT_PATH_DOWN;
}

/* Of two sides that both want to fail back, the one with the lower GID and
 * QPN asks, the other answers. */
static bool fb_leader(const struct shiftu_vqp *vq)
{
	int d = memcmp(vq->sgid, vq->dgid, 16);

	return d < 0 || (!d && vq->reg.app_qp->qp_num < vq->steps.rtr.dest_qp_num);
}

void shiftu_failback_answer_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (!vq->bak_rtr || shiftu_mono_ns() < vq->fb_poll_ns || vq->published != 1)
		return;
	i = shiftu_req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	/* soon after a failback granted or done, the peer may ask us to join */
	vq->fb_poll_ns = shiftu_mono_ns() + (shiftu_mono_ns() < vq->fb_wait_ns ||
				      shiftu_mono_ns() - vq->back_ns < REJOIN_NS + 1000000000ULL ?
				      50000000ULL : FB_POLL_NS);
	shiftu_gid_hex(vq->sgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g, vq->reg.app_qp->qp_num);
	pq->fbreq = i;
}

/*
 * The peer's request that shiftu_failback_answer_req() read, if there is one to
 * answer: a cancel or a rejoin is served here; a request to reset returns
 * true, with its number in *@seq, the PSN the peer asks for in *@psn and
 * its last word in *@tw.  Context: vq->lock held.
 */
static bool failback_asked(struct shiftu_vqp *vq, const struct pass_qp *pq, unsigned int *seq,
			   unsigned int *psn, unsigned int *tw)
{
	unsigned int tq, tp;
	char word[16];

	if (req_ret(pq->fbreq) || vq->published != 1 || !shiftu_kv_up())
		return false;
	/*
	 * A request no newer than the last one answered is not answered
	 * again: a PUT of the peer's that a slow store took on a connection
	 * the peer had given up on can land after the peer's next request,
	 * and answering it would reset our QP again under the peer, which
	 * took the newer answer and reconnected (its WRITEs then met a QP
	 * expecting other PSNs: "remote invalid request", or a fence that
	 * never completes).
	 */
	if (sscanf(reqs[pq->fbreq].val, "%u %15s %u %u %u", seq, word, &tq, &tp, tw) != 5 ||
	    shiftu_seq32_le(*seq, vq->fb_answered) || !vq->bak_qp ||
	    tq != vq->bak_qp->qp_num || tp != vq->bak_psn)
		return false;		/* none, answered, or meant for an earlier process */
	vq->fb_answered = *seq;
	if (!strcmp(word, "cancel")) {
		/* its last word: the request it went back by */
		shiftu_cancel_serve(vq, *tw);
		return false;
	}
	if (!strcmp(word, "rejoin")) {
		shiftu_info("qp %u on %s: the peer's failback was cut short: it asks us to join its renewed twin",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		shiftu_rejoin_serve(vq);
		return false;
	}
	/* "withdrawn": the peer granted ours and dropped its own */
	return sscanf(word, "%u", psn) == 1;
}

/*
 * What to answer the peer's request to reset, whose last word is @tw;
 * *@mode says how a grant goes (proto.c: shiftu_fb_answer()).  Context:
 * fo_lock held.
 */
static enum shiftu_fb_reply failback_decide(struct shiftu_vqp *vq, unsigned int tw, bool *mode)
{
	struct shiftu_fb_in in;

	/*
	 * Busy asks the peer again within FB_BUSY_MS.  Two answers ask it
	 * again within FB_MAX_MS, where asking every second for each of
	 * its QPs would only load the store (64 QPs in the lab: the peer's
	 * asks outnumbered everything else the store did):
	 * - "leads": we ask ourselves (fb_leader()), or are going back
	 *   already; the peer follows by the handshake, and asks again only
	 *   if that fails;
	 * - "down": our own port is still down (the peer may not know it: a
	 *   remote port reaches its table only through the agents), and its
	 *   probe would fail, backing it off past our repair; we ask
	 *   ourselves once the port is back (unless we are passive).
	 * A one-sided failback's reset would drop the receives on our
	 * default QP, and it reposts none: a QP that posts receives follows
	 * the peer's failover, and goes back two-sided.  One on its default
	 * QP with receives (it has not followed yet, or went back before
	 * this request) stays so; the peer asks again (busy).
	 */
	in = (struct shiftu_fb_in){
		.state = vq->state,
		.on_twin = vq->on_twin,
		.posted = vq->sq.head != 0 || vq->rq.head != shiftu_count_start(),
		/* our own failback, once the peer granted it: probing, going
		 * back due or under way in another thread
		 * (shiftu_back_pending()), or gone back; it leads, whichever
		 * side asked */
		.going = vq->fb_stage == 2 || shiftu_back_pending(vq) || shiftu_going_back(vq),
		.asking = vq->fb_stage == 1,
		.leader = fb_leader(vq),
		.down = port_down(vq),
		.peer_twin_recvs = tw & FB_TWIN_RECVS,
		/* the peer failed over to ask this: its message is due */
		.unheard = !vq->hs_got,
	};
	return shiftu_fb_answer(&in, mode);
}

/*
 * Our QP was reset for the peer's failback, request @seq, granted in
 * @mode: what the grant changes.  A two-sided grant withdraws our own
 * request, if any: true, with its key and value in @wkey and @wval (@size
 * bytes each), for the batch.  Context: fo_lock held.
 */
static bool failback_granted(struct shiftu_vqp *vq, unsigned int seq, bool mode, const char *g,
			     char *wkey, char *wval, size_t size)
{
	bool withdraw = false;

	if (mode) {
		/*
		 * Our own request, if any, is dropped: the peer leads.
		 * It is withdrawn from the store too, ahead of this
		 * answer: left there, unanswered, the peer would take
		 * it up once both are back, and, sending nothing
		 * itself, grant it one-sided, resetting its default QP
		 * under our traffic (the spin model's second finding
		 * on failback).
		 */
		if (vq->fb_seq) {
			withdraw = true;
			snprintf(wkey, size, "fbreq:%s:%u", g,
				 vq->steps.rtr.dest_qp_num);
			snprintf(wval, size, "%u withdrawn %u %u 0", ++vq->fb_seq,
				 vq->peer.qpn, vq->peer.psn);
		}
		vq->fb_stage = 0;
		vq->fb_wait_ns = shiftu_mono_ns() + 10000000000ULL;
		/* open until its message comes (or a cancel of it) */
		vq->fb_granted = seq;
		vq->fb_grant_open = 1;
		/* the peer renews its twin as it goes back, ours waits
		 * for its message (or its request to join: rejoin) */
		vq->tw_old = 1;
	}
	shiftu_info("qp %u on %s: reset for the peer's failback (its request %u)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, seq);
	if (!mode) {
		/*
		 * One-sided: the peer's next failover is a new
		 * exchange, and finds a control receive on our twin
		 * again (it holds nothing else: we stayed).
		 */
		vq->stayed = vq->hs_sent = vq->hs_got = 0;
		shiftu_ctrl_rearm(vq);
	}
	return withdraw;
}

/* The answer to shiftu_failback_answer_req(), if it asked in this pass. */
static void failback_answer(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int seq, psn, tw, ctrl;
	char key[96], val[96], g[33], wkey[96], wval[96];
	enum shiftu_fb_reply reply;
	unsigned int answered = vq->fb_answered;
	bool mode, withdraw = false;
	uint32_t ours;
	int i;

	if (!failback_asked(vq, pq, &seq, &psn, &tw))
		return;
	/*
	 * A QP whose fo_lock another thread holds is answered at a later
	 * pass, its request read again then.  The holder may be off the CPU
	 * for seconds: an application's poster, on its twin, beside dozens
	 * of pollers on a loaded host (store_down.sh: held 5 s, by
	 * shiftu_post_send_slow()).  Waiting for it here held up the steps
	 * of every QP behind this one in the pass: 64 QPs failed back in
	 * minutes, not seconds.
	 */
	if (shiftu_trylock(&vq->fo_lock, SHIFTU_LOCK_FO)) {
		vq->fb_answered = answered;
		vq->fb_poll_ns = 0;
		return;
	}
	shiftu_gid_hex(vq->dgid, g);
	snprintf(key, sizeof(key), "fbrep:%s:%u", g, vq->steps.rtr.dest_qp_num);
	ours = (uint32_t)random() & 0xffffff;
	/*
	 * One-sided (mode 0): we never left the default QP and send nothing;
	 * the peer comes back behind its fence.  Two-sided (mode 1): we are on
	 * the twin too, or the peer's receives are on its twin; both sides go
	 * back by the handshake, the peer first.  Decided and done under
	 * fo_lock: a QP that answered the peer's failover and stayed
	 * (vq->stayed) moves over at its first post, and must not be reset
	 * under that move, nor left marked stayed by it.
	 */
	reply = failback_decide(vq, tw, &mode);
	ctrl = !mode ? 0 : (tw & FB_PROBE_SEND) && !vq->app_srq ? 2 : 1;
	if (reply != SHIFTU_FB_GRANT || shiftu_qp_reconnect(vq, psn, ours, ctrl)) {
		snprintf(val, sizeof(val), "%u %s %u %u 0", seq,
			 reply == SHIFTU_FB_DOWN ? "down" : reply == SHIFTU_FB_LEADS ? "leads" : "busy",
			 vq->peer.qpn, vq->peer.psn);
	} else {
		snprintf(val, sizeof(val), "%u %u %u %u %u", seq, ours, vq->peer.qpn,
			 vq->peer.psn, mode | (ctrl == 2 ? FB_PROBE_SEND : 0));
		withdraw = failback_granted(vq, seq, mode, g, wkey, wval, sizeof(wkey));
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* before the answer in the batch: the peer reads the store after it */
	if (withdraw) {
		i = shiftu_req_add(SHIFTU_KV_PUT, 0);
		if (i < 0)
			return;
		snprintf(reqs[i].key, sizeof(reqs[i].key), "%s", wkey);
		snprintf(reqs[i].val, sizeof(reqs[i].val), "%s", wval);
	}
	/* in the pass's last batch, with the other QPs' answers: the peer
	 * asks again if it is lost */
	i = shiftu_req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	snprintf(reqs[i].key, sizeof(reqs[i].key), "%s", key);
	snprintf(reqs[i].val, sizeof(reqs[i].val), "%s", val);
}

/*
 * The peer's failback requests, answered while @vq's twin is connected:
 * true, it keeps listening.  Context: the shadow thread, vq->lock held.
 */
bool shiftu_failback_listen(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	if (!vq->bak_rtr)
		return false;
	failback_answer(vq, pq);
	return true;
}
