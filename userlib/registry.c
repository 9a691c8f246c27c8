// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * registry.c: the records of the application's objects (shadow.h).
 *
 * The application's verbs record what they create (contexts, PDs, MRs,
 * CQs and QPs) and drop what they destroy; the shadow thread (shadow.c)
 * makes the twins of what is recorded.  PDs and QPs are listed under
 * shadow_lock, MRs and CQs under leaf locks of their own, which the data
 * paths take (a backup lkey, a CQ's record in the slow poll) and which no
 * pass holds while the store is asked.  A recording thread only records
 * and wakes the shadow thread: a key to delete from the store is queued
 * for it (shiftu_kv_forget(), storepass.c).  Here too: the room the CQs
 * keep for a failover's completions, and the records across fork(2).  The
 * lists themselves, their leaf locks and the lookups the data paths make
 * are reclist.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bell.h"
#include "cq.h"
#include "handshake.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "real.h"
#include "shadow_int.h"
#include "srq.h"
#include "util.h"

static unsigned int cap_vqps;

/* ---- recording (the application's threads) ------------------------------- */

void shiftu_shadow_ctx(struct shiftu_ctx *sctx)
{
	shiftu_shadow_start();
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	sctx->shadowed = true;
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

/*
 * The backup context goes with its application context, and its channel
 * with it: the node is reused by the next context opened, whose twin CQs
 * could not take a channel of a closed context (EBADF).
 */
void shiftu_shadow_ctx_gone(struct shiftu_ctx *sctx)
{
	struct ibv_comp_channel *ch;
	struct ibv_context *bak;

	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	sctx->shadowed = false;
	bak = sctx->bak_ctx;
	ch = sctx->bak_channel;
	sctx->bak_ctx = NULL;
	sctx->bak_channel = NULL;
	sctx->bak_name[0] = '\0';
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	if (ch)
		shiftu_hs_channel_gone(ch);
	if (bak)
		shiftu_real.close_device(bak);
}

void shiftu_shadow_pd(struct ibv_pd *pd)
{
	struct shiftu_ctx *sctx = shiftu_ctx_find(pd->context);
	struct shiftu_pd *p;

	if (!sctx || !(p = calloc(1, sizeof(*p))))
		return;
	p->app = pd;
	p->sctx = sctx;
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	p->next = pds;
	pds = p;
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

void shiftu_shadow_pd_gone(struct ibv_pd *pd)
{
	struct shiftu_pd **pp, *p;

	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	for (pp = &pds; (p = *pp); pp = &p->next)
		if (p->app == pd) {
			*pp = p->next;
			if (p->bak)
				shiftu_real.dealloc_pd(p->bak);
			free(p);
			break;
		}
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

/* Add a copy of @rec unless its MR is known (one reg verb called another);
 * false if it was not added. */
static bool mr_add(const struct shiftu_mr *rec)
{
	struct shiftu_mr *m;
	bool added = false;

	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (m = mrs; m && m->app != rec->app; m = m->next)
		;
	if (!m && (m = malloc(sizeof(*m)))) {
		*m = *rec;
		m->next = mrs;
		mrs = m;
		added = true;
	}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	return added;
}

void shiftu_shadow_mr(struct ibv_mr *mr, void *addr, size_t length,
		      uint64_t iova, unsigned int access)
{
	struct shiftu_mr rec = {
		.app = mr, .addr = addr, .length = length, .iova = iova,
		.access = access, .dmabuf_fd = -1,
	};

	mr_add(&rec);
}

void shiftu_shadow_dmabuf_mr(struct ibv_mr *mr, uint64_t offset, size_t length,
			     uint64_t iova, int fd, unsigned int access)
{
	/* NCCL closes its fd as soon as the MR is registered */
	struct shiftu_mr rec = {
		.app = mr, .length = length, .iova = iova, .access = access,
		.dmabuf_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0), .dmabuf_offset = offset,
	};

	if (rec.dmabuf_fd < 0) {
		shiftu_warn("mr %#x: cannot keep its dma-buf (fd %d): %s: unprotected",
			    mr->lkey, fd, strerror(errno));
		return;
	}
	if (!mr_add(&rec))
		close(rec.dmabuf_fd);
}

/*
 * @m's twin and its store key go.  Context: mr_lock held; the key to
 * forget (after the lock is dropped) is written to @key: with a twin, a
 * publish of it may be in a pass's batch, answered or not yet, so the key
 * is forgotten whether or not the pass has marked it published.
 */
static void mr_twin_drop(struct shiftu_mr *m, char *key, size_t size)
{
	if (m->bak && m->pd)
		snprintf(key, size, "mr:%016" PRIx64 ":%u", m->pd->sctx->node_guid,
			 m->app->rkey);
	if (m->bak)
		shiftu_real.dereg_mr(m->bak);
	m->bak = NULL;
	m->published = false;
	m->failed = false;
}

/* Take @mr's record out of the list, its twin gone; NULL if none. */
static struct shiftu_mr *mr_take(struct ibv_mr *mr)
{
	struct shiftu_mr **pp, *m;
	char key[64] = "";

	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (pp = &mrs; (m = *pp); pp = &m->next)
		if (m->app == mr) {
			*pp = m->next;
			mr_twin_drop(m, key, sizeof(key));
			break;
		}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
	if (key[0])
		shiftu_kv_forget(key);
	return m;
}

void shiftu_shadow_mr_gone(struct ibv_mr *mr)
{
	struct shiftu_mr *m = mr_take(mr);

	if (!m)
		return;
	if (m->dmabuf_fd >= 0)
		close(m->dmabuf_fd);
	free(m);
}

void shiftu_shadow_mr_rereg(struct ibv_mr *mr, struct shiftu_mr **rec)
{
	*rec = mr_take(mr);
}

void shiftu_shadow_mr_rereg_done(struct shiftu_mr *m, int ret, int flags,
				 void *addr, size_t length, int access)
{
	if (!m)
		return;
	if (!ret) {
		if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
			/* the memory is the process's now, at @addr */
			if (m->dmabuf_fd >= 0)
				close(m->dmabuf_fd);
			m->dmabuf_fd = -1;
			m->addr = addr;
			m->length = length;
			m->iova = (uintptr_t)addr;
		}
		if (flags & IBV_REREG_MR_CHANGE_ACCESS)
			m->access = access;
		/* the PD is looked up again from the MR (shadow_pass()) */
		m->pd = NULL;
	}
	if (!mr_add(m)) {
		if (m->dmabuf_fd >= 0)
			close(m->dmabuf_fd);
	}
	free(m);
}

void shiftu_shadow_cq(struct ibv_cq *cq, int asked)
{
	struct shiftu_ctx *sctx = shiftu_ctx_find(cq->context);
	struct shiftu_cq *c;

	if (!sctx || !(c = calloc(1, sizeof(*c))))
		return;
	c->app = cq;
	c->sctx = sctx;
	c->asked = asked;
	pthread_mutex_init(&c->lock, NULL);
	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	c->next = cqs;
	cqs = c;
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

void shiftu_shadow_cq_gone(struct ibv_cq *cq)
{
	struct shiftu_cq **pp, *c;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	for (pp = &cqs; (c = *pp); pp = &c->next)
		if (c->app == cq) {
			*pp = c->next;
			if (c->bak)
				shiftu_real.destroy_cq(c->bak);
			shiftu_bell_destroy(c);
			free(c->stash);
			free(c->park);
			pthread_mutex_destroy(&c->lock);
			free(c);
			break;
		}
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
}

/* The entries @c needs for the application's and @qps QPs' room. */
static long long cq_need(const struct shiftu_cq *c, long long qps)
{
	return (long long)c->asked + SHIFTU_CQ_PER_QP * qps;
}

/*
 * Room for one more QP on @c.  A CQ whose room is taken grows to twice the
 * QPs it holds room for (so that many QPs cost a few resizes, not one
 * each), or to the device's max_cqe, and refuses when even that is short:
 * a CQ never overflows for the library's completions.  Context: cq_lock.
 */
static int cq_room_take(struct shiftu_cq *c)
{
	long long need = cq_need(c, c->room_qps + 1LL);
	long long want = cq_need(c, 2 * (c->room_qps + 1LL));
	int ret;

	if (need <= c->app->cqe) {
		c->room_qps++;
		return 0;
	}
	if (c->sctx->max_cqe && want > c->sctx->max_cqe)
		want = c->sctx->max_cqe;
	if (want < need || want > INT32_MAX)
		return -ENOSPC;
	ret = shiftu_real.resize_cq(c->app, (int)want);
	if (ret)
		return ret > 0 ? -ret : ret;
	if (c->app->cqe < need)
		return -ENOSPC;
	c->room_qps++;
	return 0;
}

int shiftu_cq_hold(struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct shiftu_cq *s, *r;
	int ret = -ENOENT;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	s = cq_find_locked(scq);
	r = cq_find_locked(rcq);
	if (s && r) {
		ret = cq_room_take(s);
		if (!ret && r != s && (ret = cq_room_take(r)))
			s->room_qps--;
	}
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return ret;
}

void shiftu_cq_release(struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct shiftu_cq *s, *r;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	s = cq_find_locked(scq);
	r = cq_find_locked(rcq);
	if (s && s->room_qps)
		s->room_qps--;
	if (r && r != s && r->room_qps)
		r->room_qps--;
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
}

int shiftu_cq_resize(struct ibv_cq *cq, int cqe)
{
	struct shiftu_cq *c;
	long long want;
	int ret, max;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	c = cq_find_locked(cq);
	if (!c || cqe <= 0) {
		shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
		return shiftu_real.resize_cq(cq, cqe);
	}
	/* the room of its QPs, and at least what a new CQ gets */
	want = (long long)cqe + SHIFTU_CQ_PER_QP *
	       (c->room_qps > SHIFTU_CQ_EXTRA / SHIFTU_CQ_PER_QP ?
		c->room_qps : SHIFTU_CQ_EXTRA / SHIFTU_CQ_PER_QP);
	max = c->sctx->max_cqe;
	/* past the device's limit only when the application asks so */
	if (max && want > max)
		want = cqe > max ? cqe : max;
	if (want > INT32_MAX)
		want = cqe;
	ret = shiftu_real.resize_cq(cq, (int)want);
	if (!ret) {
		c->asked = cqe;
		if (cq->cqe < cq_need(c, c->room_qps))
			shiftu_warn("cq on %s: resized to %d entries at the device's max_cqe: short of the room a failover of its %u protected QPs takes",
				    c->sctx->dev_name, cq->cqe, c->room_qps);
	}
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return ret;
}

void shiftu_shadow_qp(struct shiftu_vqp *vq, const struct ibv_qp_init_attr *attr)
{
	struct shiftu_vqp **v;

	vq->init_attr = *attr;
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	if (n_vqps == cap_vqps) {
		v = realloc(vqps, (cap_vqps ? 2 * cap_vqps : 16) * sizeof(*v));
		if (!v) {
			shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
			shiftu_warn("qp %u: out of memory: unprotected",
				    vq->reg.app_qp->qp_num);
			return;
		}
		vqps = v;
		cap_vqps = cap_vqps ? 2 * cap_vqps : 16;
	}
	vqps[n_vqps++] = vq;
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

void shiftu_shadow_qp_modified(struct shiftu_vqp *vq, const struct ibv_qp_attr *attr,
			       int mask)
{
	struct shiftu_qp_steps *st = &vq->steps;

	if (!(mask & IBV_QP_STATE))
		return;
	shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		st->init = *attr;
		st->init_mask = mask;
		break;
	case IBV_QPS_RTR:
		st->rtr = *attr;
		st->rtr_mask = mask;
		break;
	case IBV_QPS_RTS:
		st->rts = *attr;
		st->rts_mask = mask;
		shiftu_dbg("qp %u: RTS", vq->reg.app_qp->qp_num);
		break;
	default:
		break;
	}
	shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	shiftu_shadow_kick();
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
}

void shiftu_shadow_qp_gone(struct shiftu_vqp *vq)
{
	static const uint8_t zero[16];
	struct shiftu_rkey_map *r, *next;
	char key[96], g[33];
	unsigned int i;

	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	for (i = 0; i < n_vqps; i++)
		if (vqps[i] == vq) {
			vqps[i] = vqps[--n_vqps];
			break;
		}
	/* a pass waiting for the store has it too: it skips it after */
	for (i = 0; i < n_pass; i++)
		if (pass_vqs[i] == vq)
			pass_vqs[i] = NULL;
	/*
	 * Its record was asked for once its GID was known (qp_publish_req(),
	 * under shadow_lock): published, or perhaps in a batch under way, so
	 * it is forgotten either way.
	 */
	if (memcmp(vq->sgid, zero, sizeof(zero))) {
		shiftu_gid_hex(vq->sgid, g);
		snprintf(key, sizeof(key), "qp:%s:%u", g, vq->reg.app_qp->qp_num);
		shiftu_kv_forget(key);
	}
	if (vq->bak_qp)
		shiftu_real.destroy_qp(vq->bak_qp);
	vq->bak_qp = NULL;
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	shiftu_box_close(vq);
	for (r = vq->rkeys; r; r = next) {
		next = r->next;
		free(r);
	}
	vq->rkeys = NULL;
}

/* ---- fork(2) (fork.c) ------------------------------------------------- */

/*
 * The records' locks, in the order of lockorder.h: every recorded QP's
 * lock, then every one's fo_lock (no thread holds two QPs' at once), the
 * CQ list's lock, and every CQ's lock in address order, as
 * shiftu_lock_cqs() takes a QP's two.  The QPs are those of vqps, which
 * cannot change while shadow_lock is held; the CQs those of cqs, under
 * cq_lock.  A QP the library does not protect is not among them: its
 * locks are made again in the child (vqp.c).
 */
static void shiftu_shadow_fork_lock(void)
{
	struct shiftu_cq *c, *next;
	uintptr_t last = 0;
	unsigned int i;

	for (i = 0; i < n_vqps; i++)
		pthread_mutex_lock(&vqps[i]->lock);
	for (i = 0; i < n_vqps; i++)
		pthread_mutex_lock(&vqps[i]->fo_lock);
	pthread_mutex_lock(&cq_lock);
	/* the next higher address each time: a fork is rare, the CQs few */
	for (;;) {
		next = NULL;
		for (c = cqs; c; c = c->next)
			if ((uintptr_t)c > last && (!next || (uintptr_t)c < (uintptr_t)next))
				next = c;
		if (!next)
			break;
		pthread_mutex_lock(&next->lock);
		last = (uintptr_t)next;
	}
}

static void shiftu_shadow_fork_unlock(void)
{
	struct shiftu_cq *c;
	unsigned int i;

	for (c = cqs; c; c = c->next)
		pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&cq_lock);
	for (i = 0; i < n_vqps; i++) {
		pthread_mutex_unlock(&vqps[i]->fo_lock);
		pthread_mutex_unlock(&vqps[i]->lock);
	}
}

SHIFTU_FORK_HOOK(records, .rank = SHIFTU_RANK_RECORDS, .name = "records",
		 .take = shiftu_shadow_fork_lock, .release = shiftu_shadow_fork_unlock);

/*
 * The records are the parent's: the child must not make twins for its
 * objects, nor destroy its twins or forget its keys when the child's copy
 * of a QP goes (the uverbs files are shared: a twin destroyed here is the
 * parent's).  They are left as the parent's copy, unreachable, not freed
 * (a QP's record still points at its CQs').  The store handles are
 * closed without a command (a connection's socket is the parent's too),
 * and the thread, which the child does not have, starts again with the
 * child's first device.
 */
static void shiftu_shadow_fork_child(void)
{
	struct shiftu_ctx *s;
	unsigned int i;

	for (i = 0; i < n_vqps; i++) {
		vqps[i]->published = 0;
		vqps[i]->bak_qp = NULL;
	}
	n_vqps = 0;
	for (s = shiftu_ctx_list; s; s = s->next)
		s->shadowed = false;
	pds = NULL;
	mrs = NULL;
	cqs = NULL;
	shiftu_storepass_fork_child();
	shiftu_shadow_thread_fork_child();
}

SHIFTU_FORK_HOOK(shadow, .rank = SHIFTU_RANK_SHADOW, .name = "shadow_lock",
		 .lock = &shadow_lock, .child = shiftu_shadow_fork_child);
