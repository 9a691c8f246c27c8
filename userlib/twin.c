// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * twin.c: the twins on the backup port (shadow.h).
 *
 * The backup context, then the twins of the recorded PDs, MRs and CQs,
 * and each RC QP's twin: created with the QP's attributes, published in
 * the store under the QP's default GID and QPN, joined to the peer's twin
 * (read from the store) as far as the application took its QP, and
 * renewed once a move has drained it; the connection itself, and the
 * reset of an application's QP with new PSNs which a failback makes, are
 * qpconn.c's.  The shadow thread's pass (shadow.c) runs these steps under
 * the records' locks; what they ask the store goes in the pass's batch
 * (storepass.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bell.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "mailbox.h"
#include "real.h"
#include "shadow_int.h"
#include "srq.h"
#include "store.h"
#include "testbuild.h"
#include "util.h"

static int gid_parse(const char *s, uint8_t *gid)
{
	unsigned int b;
	int i;

	if (strlen(s) != 32)
		return -EINVAL;
	for (i = 0; i < 16; i++) {
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		gid[i] = b;
	}
	return 0;
}

/* Open the backup device of @s's port 1.  Returns true when it is open. */
static bool ctx_backup(struct shiftu_ctx *s)
{
	struct shiftu_port_health ph;
	struct ibv_device **list;
	int n, i, ret;

	if (s->bak_ctx)
		return true;
	ret = shiftu_health_port(s->node_guid, 1, &ph);
	if (ret || ph.backup_index == SHIFT_FT_NO_PORT) {
		if (!s->bak_name[0]) {
			shiftu_warn("context %s: %s: its QPs run unprotected",
				    s->dev_name, ret ? "not in the health table" :
				    "no backup port in the pair table");
			snprintf(s->bak_name, sizeof(s->bak_name), "-");
		}
		return false;
	}
	list = shiftu_real.get_device_list(&n);
	if (!list)
		return false;
	for (i = 0; i < n; i++)
		if (!strcmp(shiftu_real.get_device_name(list[i]), ph.backup_dev_name))
			break;
	if (i < n)
		s->bak_ctx = shiftu_real.open_device(list[i]);
	shiftu_real.free_device_list(list);
	if (!s->bak_ctx) {
		shiftu_warn("context %s: cannot open its backup %s: %s",
			    s->dev_name, ph.backup_dev_name, strerror(errno));
		return false;
	}
	s->bak_port = ph.backup_port_num;
	snprintf(s->bak_name, sizeof(s->bak_name), "%s", ph.backup_dev_name);
	shiftu_info("context %s: backup %s port %u", s->dev_name, s->bak_name,
		    s->bak_port);
	return true;
}

/*
 * Register @m's twin; true when its key is then still to publish (the
 * caller batches that, shadow_pass()).  Context: mr_lock.
 */
static bool mr_step(struct shiftu_mr *m)
{
	if (m->failed || !m->pd || !m->pd->bak)
		return false;
	if (!m->bak) {
		errno = EOPNOTSUPP;
		if (m->dmabuf_fd >= 0 && shiftu_real.reg_dmabuf_mr)
			m->bak = shiftu_real.reg_dmabuf_mr(m->pd->bak, m->dmabuf_offset,
							   m->length, m->iova,
							   m->dmabuf_fd, m->access);
		else if (m->dmabuf_fd < 0)
			m->bak = shiftu_real.reg_mr_iova2(m->pd->bak, m->addr, m->length,
							  m->iova, m->access);
		if (!m->bak) {
			shiftu_warn("mr %#x: cannot register on %s: %s",
				    m->app->lkey, m->pd->sctx->bak_name,
				    strerror(errno));
			m->failed = true;
			return false;
		}
	}
	return !m->published;
}

static void cq_step(struct shiftu_cq *c)
{
	if (c->bak || !c->sctx->bak_ctx)
		return;
	/* its events wake the watcher (handshake.c), which finds @c by them */
	c->bak = shiftu_real.create_cq(c->sctx->bak_ctx, c->app->cqe, c,
				       shiftu_hs_channel(c->sctx), 0);
	if (!c->bak)
		shiftu_warn("cq on %s: cannot create its twin on %s: %s",
			    c->sctx->dev_name, c->sctx->bak_name, strerror(errno));
	else if (c->sctx->bak_channel)
		c->bak->context->ops.req_notify_cq(c->bak, 0);
	if (c->bak)
		shiftu_bell_create(c);
}

static struct shiftu_cq *cq_rec(const struct ibv_cq *cq)
{
	return shiftu_cq_find(cq);
}

/*
 * @c's twin as large as @c, which grows with the QPs on it
 * (shiftu_cq_hold()): a QP moved there brings its completions and the
 * library's.  Returns 0 or the provider's error.
 */
static int twin_cq_fit(struct shiftu_cq *c)
{
	int ret = 0;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	if (c->bak->cqe < c->app->cqe)
		ret = shiftu_real.resize_cq(c->bak, c->app->cqe);
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return ret;
}

/*
 * The backup contexts, and the twins of the PDs, MRs and CQs: the records'
 * step of a pass, an MR's key to publish in its batch.  Returns true while
 * something waits (a backup context, an MR's key).  Context: the shadow
 * thread, shadow_lock held.
 */
bool shiftu_twins_make(void)
{
	bool pending = false;
	struct shiftu_ctx *s;
	struct shiftu_pd *p;
	struct shiftu_mr *m;
	struct shiftu_cq *c;
	int r;

	/* the list only grows, and a node is whole before it is linked */
	for (s = __atomic_load_n(&shiftu_ctx_list, __ATOMIC_ACQUIRE); s; s = s->next)
		if (s->shadowed && !ctx_backup(s) && s->bak_name[0] != '-')
			pending = true;
	for (p = pds; p; p = p->next)
		if (!p->bak && p->sctx->bak_ctx) {
			p->bak = shiftu_real.alloc_pd(p->sctx->bak_ctx);
			if (!p->bak)
				shiftu_warn("pd on %s: cannot allocate its twin: %s",
					    p->sctx->dev_name, strerror(errno));
		}
	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (m = mrs; m; m = m->next) {
		if (!m->pd)
			m->pd = shiftu_pd_find(m->app->pd);
		if (!mr_step(m))
			continue;
		pending = true;
		r = shiftu_req_add(SHIFTU_KV_PUT, 0);
		if (r < 0)
			continue;
		snprintf(reqs[r].key, sizeof(reqs[r].key), "mr:%016" PRIx64 ":%u",
			 m->pd->sctx->node_guid, m->app->rkey);
		snprintf(reqs[r].val, sizeof(reqs[r].val), "%u", m->bak->rkey);
		reqs[r].mr = m;
		reqs[r].mr_app = m->app;
		reqs[r].mr_bak = m->bak;
	}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	for (c = cqs; c; c = c->next)
		cq_step(c);
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return pending;
}

/* Create @vq's twin QP on the backup context. */
static bool qp_create(struct shiftu_vqp *vq)
{
	struct ibv_qp_init_attr a = vq->init_attr;
	struct shiftu_pd *p = shiftu_pd_find(vq->reg.app_qp->pd);

	if (vq->bak_qp)
		return true;
	vq->scq = cq_rec(vq->init_attr.send_cq);
	vq->rcq = cq_rec(vq->init_attr.recv_cq);
	if (!p || !p->bak || !vq->scq || !vq->scq->bak || !vq->rcq || !vq->rcq->bak)
		return false;
	if (a.qp_type != IBV_QPT_RC || (a.srq && !vq->app_srq)) {
		/* a QP on a shared SRQ said why when it was created (srq.c) */
		if (!a.srq)
			shiftu_info("qp %u: not an RC QP: unprotected", vq->reg.app_qp->qp_num);
		vq->published = 2;	/* nothing more to do */
		return false;
	}
	if (a.srq) {
		/* the twin's receives come from the SRQ's twin */
		struct shiftu_pd *sp = shiftu_pd_find(a.srq->pd);

		a.srq = shiftu_srq_twin(vq, sp ? sp->bak : NULL);
		if (!a.srq && sp && sp->bak) {
			shiftu_unprotect(vq, "its SRQ has no twin");
			vq->published = 2;
			return false;
		}
		if (!a.srq)
			return false;	/* the SRQ's PD has no twin yet: next pass */
	}
	if (twin_cq_fit(vq->scq) || twin_cq_fit(vq->rcq)) {
		shiftu_unprotect(vq, "a twin of its CQs cannot grow as large as its CQ");
		vq->published = 2;
		return false;
	}
	a.qp_context = NULL;
	a.cap.max_recv_wr++;		/* the control receive (handshake.h) */
	a.send_cq = vq->scq->bak;
	a.recv_cq = vq->rcq->bak;
	/* the peer's messages to a QP on an SRQ come to its mailboxes */
	if (a.srq && (shiftu_box_open(vq, SHIFTU_BOX_DEFAULT, vq->reg.app_qp->pd) ||
		      shiftu_box_open(vq, SHIFTU_BOX_TWIN, p->bak))) {
		shiftu_unprotect(vq, "its mailboxes cannot be registered");
		vq->published = 2;
		return false;
	}
	vq->bak_qp = shiftu_real.create_qp(p->bak, &a);
	if (!vq->bak_qp) {
		shiftu_warn("qp %u: cannot create its twin on %s: %s",
			    vq->reg.app_qp->qp_num, vq->sctx->bak_name,
			    strerror(errno));
		vq->published = 2;
		return false;
	}
	vq->bak_psn = (uint32_t)random() & 0xffffff;
	return true;
}

/*
 * Publish the twin under our default GID and QPN, once the RTR step told
 * us the GID index, and again once it has joined the peer's twin (its
 * last field 1): the request (*@pq).  Context: shadow thread, vq->lock
 * held.
 */
static void qp_publish_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	struct shiftu_ctx *s = vq->sctx;
	union ibv_gid sgid, bgid;
	char g1[33], g2[33];
	uint8_t idx = vq->steps.rtr.ah_attr.grh.sgid_index;
	int i;

	if (vq->published == 2 || (vq->published && (vq->joined_pub || !vq->bak_rts)) ||
	    !vq->steps.rtr_mask || !vq->port_num)
		return;
	if (shiftu_real.query_gid(vq->reg.app_qp->context, vq->port_num, idx, &sgid) ||
	    shiftu_real.query_gid(s->bak_ctx, s->bak_port, idx, &bgid))
		return;
	i = shiftu_req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	/* the twin's connection needs the index even if the record has to
	 * be published again (twin_connect()) */
	memcpy(vq->sgid, sgid.raw, 16);
	vq->bak_sgid_index = idx;
	shiftu_gid_hex(sgid.raw, g1);
	shiftu_gid_hex(bgid.raw, g2);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "qp:%s:%u", g1, vq->reg.app_qp->qp_num);
	/* our default rq_psn lets the peer tell this record from a stale one
	 * left by an earlier process with the same GID and QPN */
	/* then its mailboxes if its receives come from an SRQ (box.c):
	 * the default QP's, the twin's (0 0 for none); last, 1 once the
	 * twin has joined the peer's and can take its messages */
	snprintf(reqs[i].val, sizeof(reqs[i].val),
		 "%s %u %u %016" PRIx64 " %u %" PRIx64 " %u %" PRIx64 " %u %u",
		 g2, vq->bak_qp->qp_num, vq->bak_psn, s->node_guid, vq->steps.rtr.rq_psn,
		 box_addr(vq, SHIFTU_BOX_DEFAULT), box_rkey(vq, SHIFTU_BOX_DEFAULT),
		 box_addr(vq, SHIFTU_BOX_TWIN), box_rkey(vq, SHIFTU_BOX_TWIN), vq->bak_rts);
	pq->pub = i;
}

/* Its answer.  Context: vq->lock held. */
static void qp_publish(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	const char *val;

	if (vq->published == 2 || req_ret(pq->pub))
		return;
	val = reqs[pq->pub].val;
	vq->published = 1;
	if (val[strlen(val) - 1] == '1')
		vq->joined_pub = 1;
	shiftu_dbg("qp %u: published %s = %s", vq->reg.app_qp->qp_num, reqs[pq->pub].key, val);
}

/* Read the peer's twin, published under the peer's default GID and QPN:
 * the request. */
static void qp_peer_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (vq->peer_joined || !vq->has_dgid || !(vq->steps.rtr_mask & IBV_QP_DEST_QPN))
		return;
	i = shiftu_req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	shiftu_gid_hex(vq->dgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "qp:%s:%u", g, vq->steps.rtr.dest_qp_num);
	pq->peer = i;
}

/*
 * Its answer: none yet (the next pass asks again), or the peer's twin, and
 * later whether that has joined ours (then ours can take the QP's work).
 */
static void qp_peer(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int qpn, psn, rq_psn, rk[2] = { 0, 0 }, joined;
	uint64_t guid, ad[2] = { 0, 0 };
	union ibv_gid gid;
	const char *key, *val;
	char gs[40];
	int n;

	if (vq->peer_joined || req_ret(pq->peer))
		return;
	key = reqs[pq->peer].key;
	val = reqs[pq->peer].val;
	n = sscanf(val, "%39s %u %u %" SCNx64 " %u %" SCNx64 " %u %" SCNx64 " %u %u", gs, &qpn,
		   &psn, &guid, &rq_psn, &ad[0], &rk[0], &ad[1], &rk[1], &joined);
	if (n != 10 || joined > 1 || gid_parse(gs, gid.raw)) {
		shiftu_warn("qp %u: bad peer record %s = %s", vq->reg.app_qp->qp_num,
			    key, val);
		vq->published = 2;
		return;
	}
	/* the peer expects our default sq_psn: if we sent one, it must match */
	if (vq->steps.rts_mask && rq_psn != vq->steps.rts.sq_psn)
		return;		/* an earlier process's record: wait for the new one */
	if (vq->peer_known) {
		/* the same twin, joined to ours now? */
		if (joined && qpn == vq->peer.qpn && psn == vq->peer.psn &&
		    !memcmp(gid.raw, vq->peer.gid.raw, sizeof(gid.raw)))
			vq->peer_joined = 1;
		return;
	}
	vq->peer.gid = gid;
	vq->peer.qpn = qpn;
	vq->peer.psn = psn;
	vq->peer.node_guid = guid;
	/*
	 * A peer on an SRQ hears us in its mailboxes: ours send from
	 * registered memory.  Without them we cannot tell it anything.
	 */
	if ((rk[0] || rk[1]) &&
	    (shiftu_box_open(vq, SHIFTU_BOX_DEFAULT, vq->reg.app_qp->pd) ||
	     (vq->bak_qp && shiftu_box_open(vq, SHIFTU_BOX_TWIN, vq->bak_qp->pd)))) {
		shiftu_warn("qp %u: cannot register the memory its messages to the peer's mailboxes leave from: unprotected",
			    vq->reg.app_qp->qp_num);
		vq->published = 2;
		return;
	}
	memcpy(vq->peer.box_addr, ad, sizeof(ad));
	memcpy(vq->peer.box_rkey, rk, sizeof(rk));
	vq->peer_known = 1;
	vq->peer_joined = joined;
}

/*
 * twin_connect() for the shadow thread's passes.  A twin a move has
 * drained (twin_stale, set before bak_ready is cleared) is left alone: it
 * is reset first, by shiftu_twin_renew(), which may be running on another
 * thread under fo_lock.
 */
static void qp_connect(struct shiftu_vqp *vq)
{
	if (__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) || vq->twin_stale)
		return;
	/* SHIFTU_TEST_JOIN_DELAY_MS: a twin that waits in RTR */
	if (vq->bak_rtr && !vq->bak_rts && shiftu_test_join_delay_ms() &&
	    shiftu_mono_ns() - vq->bak_rtr_ns < shiftu_test_join_delay_ms() * 1000000ULL)
		return;
	twin_connect(vq);
}

/*
 * @vq's twin made if it can be, and its requests of the pass: its record
 * to publish, the peer's to read.  Returns true once the twin is there.
 * Context: the shadow thread, vq->lock held.
 */
bool shiftu_twin_asks(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	if (!qp_create(vq))
		return false;
	qp_publish_req(vq, pq);
	qp_peer_req(vq, pq);
	return true;
}

/*
 * SHIFTU_TEST_TWIN_RESET_MS: a test holds a stale twin back for a while
 * after the failback (the QP cannot fail over meanwhile), to reach what
 * happens in that moment.  True while it waits; *@pending is set.
 */
static bool twin_reset_later(struct shiftu_vqp *vq, bool *pending)
{
	uint32_t ms = shiftu_test_twin_reset_ms();
	uint64_t at = __atomic_load_n(&vq->back_ns, __ATOMIC_RELAXED) + ms * 1000000ULL;

	/* without the knob back_ns, a moment past, is due at once */
	if (!ms || shiftu_mono_ns() >= at)
		return false;
	*pending = true;
	return true;
}

/*
 * @vq's twin once the pass's batch is answered: published, joined to the
 * peer's, and renewed once a move has drained it (twin_stale).  *@pending
 * is set while a test holds the renewal back.  Context: the shadow
 * thread, shadow_lock and vq->lock held.
 */
void shiftu_twin_step(struct shiftu_vqp *vq, const struct pass_qp *pq, bool *pending)
{
	if (qp_create(vq)) {
		bool was_ready = vq->bak_ready;

		qp_publish(vq, pq);
		qp_peer(vq, pq);
		qp_connect(vq);
		/*
		 * Its port went down before its twin was ready (many
		 * QPs set up under load): it stayed, and an
		 * application that only polls it now (its send queue
		 * full, waiting on completions the dead port never
		 * gives) would not ask again.  It moves now.
		 */
		if (!was_ready && vq->bak_ready && vq->down &&
		    vq->state == SHIFTU_SEND_DEFAULT)
			shiftu_failover(vq, vq->down_path ?
					"path down (its twin is ready now)" :
					"port down (its twin is ready now)");
	}
	if (vq->twin_stale && vq->state == SHIFTU_SEND_DEFAULT &&
	    !twin_reset_later(vq, pending)) {
		/* still stale once no move is under way */
		shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
		if (vq->twin_stale && vq->state == SHIFTU_SEND_DEFAULT)
			shiftu_twin_renew(vq);
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
		/* the port failed again while the twin was stale */
		if (vq->bak_ready && vq->down)
			shiftu_failover(vq, shiftu_down_why(vq));
	}
}

