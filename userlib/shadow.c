// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shadow.c: the backup resources and the thread that makes them (shadow.h).
 *
 * The application's thread records what it created (a list entry, under
 * shadow_lock) and wakes the shadow thread.  The thread makes passes over
 * the records, doing every step whose inputs are there, until nothing is
 * pending; then it sleeps until woken, or for 100 ms while something
 * waits on a peer.  It holds shadow_lock for a pass's steps, which are
 * local verbs, but not while it waits for the store: a pass asks the
 * store once for every record at a time (pass_batch()), and once more for
 * what the answers made it say (late_batch(): failback requests and
 * answers), each time with no lock held (batch_send()), so that a store
 * that does not answer holds up no verb of the application's.  What the
 * application destroys meanwhile the pass skips after (pass_vqs[]).  No
 * application thread talks to the store: a key to delete is queued for
 * the thread (kv_forget()), and a replay finds the peer's keys in what
 * the thread looked up ahead (shiftu_backup_rkey()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bell.h"
#include "config.h"
#include "cq.h"
#include "event.h"
#include "failover.h"
#include "handshake.h"
#include "health.h"
#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "provq.h"
#include "report.h"
#include "serial.h"
#include "shadow.h"
#include "srq.h"
#include "store.h"
#include "testbuild.h"
#include "thread.h"
#include "util.h"

pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * The MR and CQ lists have locks of their own, leaves of the lock order,
 * because the data paths look them up (keys while on a twin, a CQ's
 * record in the slow poll) and must not wait for a shadow pass.
 */
static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(mr, .rank = SHIFTU_RANK_MR, .name = "mr_lock", .lock = &mr_lock);
pthread_mutex_t cq_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_cond_t shadow_wake = PTHREAD_COND_INITIALIZER;
static pthread_once_t shadow_once = PTHREAD_ONCE_INIT;
static bool shadow_started;
static unsigned int shadow_gen;		/* bumped by every record: wakes */
static int shadow_poked;		/* shiftu_shadow_poke(), lock-free */

/* The backers (going back for an application that does not poll). */
static pthread_mutex_t backer_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(backer, .rank = SHIFTU_RANK_BACKER, .name = "backer_lock", .lock = &backer_lock);
static pthread_cond_t backer_wake = PTHREAD_COND_INITIALIZER;
static struct shiftu_vqp *backer_head, **backer_tail = &backer_head;
static unsigned int n_backers, backers_idle;

static struct shiftu_pd *pds;
static struct shiftu_mr *mrs;
static struct shiftu_cq *cqs;
static struct shiftu_vqp **vqps;
static unsigned int n_vqps, cap_vqps;
/*
 * The QPs of the pass under way, vqps[] as it began: the pass drops
 * shadow_lock while it waits for the store, and a QP destroyed meanwhile
 * is set NULL here (shiftu_shadow_qp_gone()), so that the pass skips it
 * after.  Under shadow_lock; n_pass is 0 between passes.
 */
static struct shiftu_vqp **pass_vqs;
static unsigned int n_pass, cap_pass;

/*
 * The store is the shadow thread's alone, and it talks to it holding no
 * lock (batch_send()).  A store that does not answer is remembered
 * (kv_down()): no connect and no command before kv_retry_ns, a wait that
 * doubles with each failure from KV_BACKOFF_MIN_MS to KV_BACKOFF_MAX_MS, so
 * that a pass costs nothing while the store is down, and the question "may
 * the store be asked" (kv_up()) never waits.  Without it, every pass
 * connected again (1 s against a store that drops the packets), and every
 * verb of the application waited for a pass.
 */
#define KV_BACKOFF_MIN_MS	250
#define KV_BACKOFF_MAX_MS	4000

static struct shiftu_kv *kv;
static bool kv_failed;			/* logged */
static uint64_t kv_retry_ns;		/* no store I/O before (kv_down()) */
static uint32_t kv_backoff_ms;
/* the store's I/O is under way with shadow_lock dropped (fork: the
 * handle may be half way through a call) */
static bool kv_busy;
/* the last store I/O succeeded: the exit flush waits for the thread only
 * then (shiftu_shadow_exit(); relaxed, a hint) */
static bool kv_answering;

/*
 * Keys to forget: the application destroyed what they name, and a later
 * process reusing the QPN or key must find no stale record.  The
 * application's thread queues them (kv_forget()); the shadow thread
 * deletes them at the head of its next batch (forget_take()), before any
 * record that pass publishes, so that a QPN or rkey used again gets its
 * new record after the old one's delete.  At most FORGET_MAX wait: past
 * that, a key stays in the store, as a process that dies leaves its keys
 * (a peer tells such a record from a live one by its PSN, qp_peer()).
 */
#define FORGET_MAX	4096
#define FORGET_EXIT_MS	2000

struct forget {
	struct forget *next;
	char key[SHIFTU_KV_KEY_MAX + 1];
};

static pthread_mutex_t forget_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(forget, .rank = SHIFTU_RANK_FORGET, .name = "forget_lock",
		 .lock = &forget_lock);
static struct forget *forget_head, **forget_tail = &forget_head;
static unsigned int n_forget;		/* queued; forget_lock */
static unsigned int forget_sending;	/* taken by a pass, unanswered; forget_lock */
static bool forget_full_said;		/* atomic */

static void gid_hex(const uint8_t *gid, char *buf)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(buf + 2 * i, "%02x", gid[i]);
}

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

/* Queue @key to be forgotten (above); false when the queue is full. */
static bool forget_add(const char *key)
{
	struct forget *f = malloc(sizeof(*f));
	bool added = false;

	if (!f)
		return false;
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->next = NULL;
	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	if (n_forget < FORGET_MAX) {
		*forget_tail = f;
		forget_tail = &f->next;
		n_forget++;
		added = true;
	}
	shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
	if (!added)
		free(f);
	return added;
}

/*
 * Forget a key that may have been published: queued for the shadow
 * thread, which it wakes.  Context: any thread, any lock of the library's
 * but forget_lock held; never waits for the store.
 */
static void kv_forget(const char *key)
{
	if (!forget_add(key)) {
		if (!__atomic_exchange_n(&forget_full_said, true, __ATOMIC_RELAXED))
			shiftu_info("store: %u keys wait to be deleted already: %s stays in the store, as later ones may",
				    FORGET_MAX, key);
		return;
	}
	shiftu_shadow_poke();
}

/* ---- recording (the application's threads) ------------------------------- */

static void *shadow_thread(void *arg);

static void shadow_start(void)
{
	int err;

	err = shiftu_thread_start(shadow_thread, NULL);
	if (err)
		shiftu_warn("cannot start the backup thread: %s: QPs run unprotected",
			    strerror(err));
	else
		shadow_started = true;
}

/* Context: shadow_lock held.  Tell the thread there is work. */
static void kick(void)
{
	shadow_gen++;
	pthread_cond_signal(&shadow_wake);
}

void shiftu_shadow_poke(void)
{
	/*
	 * Without shadow_lock (the caller may hold locks taken under it): a
	 * signal that comes before the thread waits is lost, but the flag is
	 * not, and a thread with twins to watch never waits more than 100 ms.
	 */
	__atomic_store_n(&shadow_poked, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&shadow_wake);
}

void shiftu_shadow_ctx(struct shiftu_ctx *sctx)
{
	pthread_once(&shadow_once, shadow_start);
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	sctx->shadowed = true;
	kick();
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
	kick();
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

static struct shiftu_pd *pd_find(const struct ibv_pd *pd)
{
	struct shiftu_pd *p;

	for (p = pds; p && p->app != pd; p = p->next)
		;
	return p;
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
	kick();
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
		kv_forget(key);
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
	kick();
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

/* Context: cq_lock held. */
static struct shiftu_cq *cq_find_locked(const struct ibv_cq *cq)
{
	struct shiftu_cq *c;

	for (c = cqs; c && c->app != cq; c = c->next)
		;
	return c;
}

struct shiftu_cq *shiftu_cq_find(const struct ibv_cq *cq)
{
	struct shiftu_cq *c;

	shiftu_lock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	c = cq_find_locked(cq);
	shiftu_unlock(&cq_lock, SHIFTU_LOCK_CQ_LIST);
	return c;
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
	kick();
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
	kick();
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
		gid_hex(vq->sgid, g);
		snprintf(key, sizeof(key), "qp:%s:%u", g, vq->reg.app_qp->qp_num);
		kv_forget(key);
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
 * locks are made again in the child (interpose.c).
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
	/* a handle the parent's thread was using as it forked may be half
	 * way through a call: left as it is */
	if (!kv_busy)
		shiftu_kv_close(kv);
	kv = NULL;
	kv_failed = false;
	kv_busy = false;
	kv_answering = false;
	kv_retry_ns = 0;
	kv_backoff_ms = 0;
	/* the parent's keys, which the parent forgets */
	while (forget_head) {
		struct forget *f = forget_head;

		forget_head = f->next;
		free(f);
	}
	forget_tail = &forget_head;
	n_forget = 0;
	forget_sending = 0;
	n_pass = 0;
	shadow_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	shadow_started = false;
	shadow_gen = 0;
	shadow_poked = 0;
	pthread_cond_init(&shadow_wake, NULL);
	/* the backers are the parent's, and the QPs they had too */
	pthread_cond_init(&backer_wake, NULL);
	backer_head = NULL;
	backer_tail = &backer_head;
	n_backers = 0;
	backers_idle = 0;
}

SHIFTU_FORK_HOOK(shadow, .rank = SHIFTU_RANK_SHADOW, .name = "shadow_lock",
		 .lock = &shadow_lock, .child = shiftu_shadow_fork_child);

/* ---- going back for an application that does not poll ----------------- */

/*
 * A good probe makes a QP's going back due, and the application's next
 * slow poll of its CQs takes it (failover.c).  For an application that
 * has not polled for FB_BACK_WAIT_NS (it only posts, sleeps, or waits for
 * the CPU), a backer goes back: a thread of the library's, not the shadow
 * thread, because a going back drains the twin, which waits for the NIC's
 * flush (seconds a QP on a busy host), and the shadow thread meanwhile
 * probes and answers for every other QP.  Up to BACKERS run at once,
 * started as they are needed and kept; a QP handed to one is pinned
 * (interpose.h) until the backer is done with it.
 */
#define BACKERS		4

static void *backer(void *arg)
{
	struct shiftu_vqp *vq;

	(void)arg;
	pthread_setname_np(pthread_self(), SHIFTU_THREAD_NAME "-backer");
	shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
	for (;;) {
		while (!backer_head) {
			backers_idle++;
			pthread_cond_wait(&backer_wake, &backer_lock);
			backers_idle--;
		}
		vq = backer_head;
		backer_head = vq->backer_next;
		if (!backer_head)
			backer_tail = &backer_head;
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		/* taken by an application's poll meanwhile: nothing */
		shiftu_take_back(vq);
		shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
		vq->backer_handed = 0;
		/* last: ibv_destroy_qp() may free it at once */
		__atomic_fetch_sub(&vq->pins, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Context: the shadow thread, shadow_lock and vq->lock held. */
static void backer_hand(struct shiftu_vqp *vq)
{
	int err = 0;

	shiftu_lock(&backer_lock, SHIFTU_LOCK_BACKER);
	if (vq->backer_handed) {
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		return;
	}
	if (!backers_idle && n_backers < BACKERS) {
		err = shiftu_thread_start(backer, NULL);
		if (!err)
			n_backers++;
	}
	if (!n_backers) {
		shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
		shiftu_warn("qp %u on %s: cannot start a thread to go back: %s: going back in the backup thread",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, strerror(err));
		shiftu_take_back(vq);
		return;
	}
	vq->backer_handed = 1;
	__atomic_fetch_add(&vq->pins, 1, __ATOMIC_RELAXED);
	vq->backer_next = NULL;
	*backer_tail = vq;
	backer_tail = &vq->backer_next;
	pthread_cond_signal(&backer_wake);
	shiftu_unlock(&backer_lock, SHIFTU_LOCK_BACKER);
	/* under shadow_lock: the QP cannot go meanwhile */
	shiftu_info("qp %u on %s: no poll of the application's took its going back for a second: a backer goes back",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
}

/* ---- lookups for the failover path ----------------------------------- */

int shiftu_backup_lkey(struct shiftu_vqp *vq, uint32_t lkey, uint32_t *out)
{
	struct shiftu_mr *m;
	int ret = -ENOENT;

	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (m = mrs; m; m = m->next)
		if (m->app->lkey == lkey && m->pd && m->pd->sctx == vq->sctx &&
		    m->bak) {
			*out = m->bak->lkey;
			ret = 0;
			break;
		}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
	return ret;
}

int shiftu_backup_rkey(struct shiftu_vqp *vq, uint32_t rkey, uint32_t *out)
{
	struct shiftu_rkey_map *r;

	/*
	 * What the look ahead found (scout_apply()), and nothing else: this
	 * runs in a move or a post on the twin, on an application's thread
	 * and under fo_lock, where a store that does not answer would hold
	 * the application for seconds.  A key the QP's requests named only
	 * after the last look is wanted instead: the shadow thread asks the
	 * store for it at once, and the caller holds its sends until then
	 * (failover.c: keys_wait()).  A key the store did not have has none.
	 */
	for (r = vq->rkeys; r; r = r->next)
		if (r->rkey == rkey) {
			if (r->wanted)
				return -EAGAIN;
			if (r->miss_ns)
				break;
			*out = r->bak_rkey;
			return 0;
		}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (r) {
			r->rkey = rkey;
			r->wanted = 1;
			r->next = vq->rkeys;
			vq->rkeys = r;
			__atomic_store_n(&vq->rkeys_wanted, vq->rkeys_wanted + 1, __ATOMIC_RELAXED);
			shiftu_shadow_poke();
			return -EAGAIN;
		}
	}
	shiftu_warn("qp %u: no backup for the peer's rkey %#x (mr:%016" PRIx64 ":%u): %s",
		    vq->reg.app_qp->qp_num, rkey, vq->peer.node_guid, rkey,
		    r ? "the store had none when looked up ahead" : "out of memory");
	return -ENOENT;
}

/* ---- the shadow thread ------------------------------------------------ */

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

/* The store may be asked now: open, and not backed off.  Never waits. */
static bool kv_up(void)
{
	return kv && shiftu_mono_ns() >= kv_retry_ns;
}

/* Store I/O failed with @err: none again for a while (above). */
static void kv_down(int err)
{
	kv_backoff_ms = kv_backoff_ms ? 2 * kv_backoff_ms : KV_BACKOFF_MIN_MS;
	if (kv_backoff_ms > KV_BACKOFF_MAX_MS)
		kv_backoff_ms = KV_BACKOFF_MAX_MS;
	kv_retry_ns = shiftu_mono_ns() + kv_backoff_ms * 1000000ULL;
	__atomic_store_n(&kv_answering, false, __ATOMIC_RELAXED);
	shiftu_dbg("store: %s: asked again in %u ms", strerror(-err), kv_backoff_ms);
}

/* It answered: asked again at every pass. */
static void kv_good(void)
{
	kv_backoff_ms = 0;
	kv_retry_ns = 0;
	__atomic_store_n(&kv_answering, true, __ATOMIC_RELAXED);
}

/*
 * Connect to the store if there is no handle yet and the last try is far
 * enough behind.  Context: the shadow thread, shadow_lock held, dropped
 * meanwhile (a connect waits up to SHIFTU_KV_TIMEOUT_MS).
 */
static void kv_open_step(void)
{
	struct shiftu_kv *k = NULL;
	int ret;

	if (kv || shiftu_mono_ns() < kv_retry_ns)
		return;
	kv_busy = true;
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	ret = shiftu_kv_open(&shiftu_config()->store, &k);
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	kv_busy = false;
	if (ret && !kv_failed) {
		/* a refusal of our credentials: the store said why, once */
		if (ret == -EACCES)
			shiftu_info("store %s: refused: QPs stay unprotected until it accepts us",
				    shiftu_config()->store.url);
		else
			shiftu_warn("store %s: %s: QPs stay unprotected until it answers",
				    shiftu_config()->store.url[0] ?
				    shiftu_config()->store.url : "(none)", strerror(-ret));
		kv_failed = true;
	}
	if (ret) {
		kv_down(ret);
		return;
	}
	kv = k;
	if (kv_failed) {
		shiftu_info("store %s: connected", shiftu_kv_describe(kv));
		kv_failed = false;
	}
	kv_good();
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

/* Create @vq's twin QP on the backup context. */
static bool qp_create(struct shiftu_vqp *vq)
{
	struct ibv_qp_init_attr a = vq->init_attr;
	struct shiftu_pd *p = pd_find(vq->reg.app_qp->pd);

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
		struct shiftu_pd *sp = pd_find(a.srq->pd);

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
 * What one pass of the shadow thread asks the store, in one batch
 * (shiftu_kv_batch()): on a busy host each round trip costs the most, and
 * a pass that asked for each QP in turn took a round trip per QP, per step,
 * per pass (seconds, for tens of QPs on a guest's one CPU, before their
 * twins were ready).  The requests are made under the records' locks,
 * sent with none held (batch_send()), and their answers applied under
 * them again, to the records still there.
 */
enum pass_why {
	PASS_OTHER,
	PASS_SCOUT,	/* a look ahead's (scout_req()): @rkey the peer's key */
	PASS_FBREQ,	/* a failback request's (failback_step()): backed off
			 * if it failed */
	PASS_REJOIN,	/* a request to join our twin (rejoin_ask()) */
	PASS_CANCEL,	/* a request to cancel a granted failback
			 * (cancel_ask()) */
	PASS_FORGET,	/* a key to forget (forget_take()) */
};

struct pass_req {
	struct shiftu_kv_req kv;
	char key[96];
	char val[160];
	/* an MR's: its record, checked to be the same one afterwards */
	struct shiftu_mr *mr;
	struct ibv_mr *mr_app, *mr_bak;
	enum pass_why why;
	int qi;			/* the QP's place in pass_vqs[], -1 for none */
	uint32_t rkey;
	uint32_t seq;		/* PASS_REJOIN, PASS_CANCEL: its fb_seq */
};

/* A QP's requests in the pass: indices into the batch, -1 for none. */
struct pass_qp {
	int pub, peer, fbreq, fbrep;
};

static struct pass_req *reqs;		/* shadow thread only */
static unsigned int n_reqs, cap_reqs;
static struct pass_qp *pqs;		/* one per vqps[] entry */
static unsigned int cap_pqs;

/* A new request of the pass, or -1 (no memory: asked in a later pass). */
static int req_add(enum shiftu_kv_op op, size_t len)
{
	struct pass_req *r;

	if (n_reqs == cap_reqs) {
		unsigned int cap = cap_reqs ? 2 * cap_reqs : 64;

		r = realloc(reqs, cap * sizeof(*r));
		if (!r)
			return -1;
		reqs = r;
		cap_reqs = cap;
	}
	r = &reqs[n_reqs];
	memset(r, 0, sizeof(*r));
	r->qi = -1;
	/* the key and value pointers are set when the batch goes
	 * (pass_batch()): a later request may move the array */
	r->kv.op = op;
	r->kv.len = len;
	return (int)n_reqs++;
}

/* The answer to request @i of the pass: its -errno, or -EAGAIN if none. */
static int req_ret(int i)
{
	return i < 0 ? -EAGAIN : reqs[i].kv.ret;
}

/* The QP that made request @i for @why, NULL if none or gone since. */
static struct shiftu_vqp *req_vq(unsigned int i, enum pass_why why)
{
	return reqs[i].why == why && reqs[i].qi >= 0 ? pass_vqs[reqs[i].qi] : NULL;
}

/* @pq's place in pass_vqs[] (its pass_qp is at the same one in pqs[]). */
static int pass_index(const struct pass_qp *pq)
{
	return (int)(pq - pqs);
}

/* Where the peer writes to @vq on @side, if @vq is on an SRQ (box.c); else 0. */
static uint64_t box_addr(const struct shiftu_vqp *vq, enum shiftu_box_side side)
{
	return vq->app_srq && vq->mbox[side].mr ? (uint64_t)(uintptr_t)vq->mbox[side].slots : 0;
}

static uint32_t box_rkey(const struct shiftu_vqp *vq, enum shiftu_box_side side)
{
	return vq->app_srq && vq->mbox[side].mr ? vq->mbox[side].mr->rkey : 0;
}

/*
 * Publish the twin under our default GID and QPN, once the RTR step told
 * us the GID index: the request (*@pq).  Context: shadow thread,
 * vq->lock held.
 */
static void qp_publish_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	struct shiftu_ctx *s = vq->sctx;
	union ibv_gid sgid, bgid;
	char g1[33], g2[33];
	uint8_t idx = vq->steps.rtr.ah_attr.grh.sgid_index;
	int i;

	if (vq->published || !vq->steps.rtr_mask || !vq->port_num)
		return;
	if (shiftu_real.query_gid(vq->reg.app_qp->context, vq->port_num, idx, &sgid) ||
	    shiftu_real.query_gid(s->bak_ctx, s->bak_port, idx, &bgid))
		return;
	i = req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	/* the twin's connection needs the index even if the record has to
	 * be published again (twin_connect()) */
	memcpy(vq->sgid, sgid.raw, 16);
	vq->bak_sgid_index = idx;
	gid_hex(sgid.raw, g1);
	gid_hex(bgid.raw, g2);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "qp:%s:%u", g1, vq->reg.app_qp->qp_num);
	/* our default rq_psn lets the peer tell this record from a stale one
	 * left by an earlier process with the same GID and QPN */
	/* last, its mailboxes if its receives come from an SRQ (box.c):
	 * the default QP's, the twin's (0 0 for none) */
	snprintf(reqs[i].val, sizeof(reqs[i].val),
		 "%s %u %u %016" PRIx64 " %u %" PRIx64 " %u %" PRIx64 " %u",
		 g2, vq->bak_qp->qp_num, vq->bak_psn, s->node_guid, vq->steps.rtr.rq_psn,
		 box_addr(vq, SHIFTU_BOX_DEFAULT), box_rkey(vq, SHIFTU_BOX_DEFAULT),
		 box_addr(vq, SHIFTU_BOX_TWIN), box_rkey(vq, SHIFTU_BOX_TWIN));
	pq->pub = i;
}

/* Its answer.  Context: vq->lock held. */
static void qp_publish(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	if (vq->published || req_ret(pq->pub))
		return;
	vq->published = 1;
	shiftu_dbg("qp %u: published %s = %s", vq->reg.app_qp->qp_num, reqs[pq->pub].key,
		   reqs[pq->pub].val);
}

/* Read the peer's twin, published under the peer's default GID and QPN:
 * the request. */
static void qp_peer_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (vq->peer_known || !vq->has_dgid || !(vq->steps.rtr_mask & IBV_QP_DEST_QPN))
		return;
	i = req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	gid_hex(vq->dgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "qp:%s:%u", g, vq->steps.rtr.dest_qp_num);
	pq->peer = i;
}

/* Its answer: none yet (the next pass asks again), or the peer's twin. */
static void qp_peer(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int qpn, psn, rq_psn, rk[2] = { 0, 0 };
	uint64_t guid, ad[2] = { 0, 0 };
	const char *key, *val;
	char gs[40];
	int n;

	if (vq->peer_known || req_ret(pq->peer))
		return;
	key = reqs[pq->peer].key;
	val = reqs[pq->peer].val;
	n = sscanf(val, "%39s %u %u %" SCNx64 " %u %" SCNx64 " %u %" SCNx64 " %u", gs, &qpn,
		   &psn, &guid, &rq_psn, &ad[0], &rk[0], &ad[1], &rk[1]);
	if (n != 9 || gid_parse(gs, vq->peer.gid.raw)) {
		shiftu_warn("qp %u: bad peer record %s = %s", vq->reg.app_qp->qp_num,
			    key, val);
		vq->published = 2;
		return;
	}
	/* the peer expects our default sq_psn: if we sent one, it must match */
	if (vq->steps.rts_mask && rq_psn != vq->steps.rts.sq_psn)
		return;		/* an earlier process's record: wait for the new one */
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
}

/*
 * The RTS step to replay: the application's, or for a side that never
 * asked for RTS the usual RC values (the library's control messages need
 * a QP that can send).  Returns the attribute mask.
 */
static int rts_attr(const struct shiftu_qp_steps *st, struct ibv_qp_attr *a)
{
	if (st->rts_mask) {
		*a = st->rts;
		return st->rts_mask;
	}
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 1;
	return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	       IBV_QP_MAX_QP_RD_ATOMIC;
}

/*
 * Bring the twin as far as the application brought its QP, with the same
 * attributes re-aimed at the peer's twin: RTR (it can be written to and
 * read from), then RTS (it can post).  A passive side (perftest's server)
 * never goes past RTR.
 */
static void twin_connect(struct shiftu_vqp *vq)
{
	struct shiftu_qp_steps *st = &vq->steps;
	struct ibv_qp_attr a;
	struct ibv_port_attr pa;
	struct verbs_context *vctx;
	int ret;

	if (!vq->peer_known || !st->init_mask || !st->rtr_mask)
		return;
	if (vq->bak_rtr)
		goto rts;
	a = st->init;
	a.port_num = vq->sctx->bak_port;
	/* the peer writes its messages into a mailbox (box.c) */
	if (vq->mbox[SHIFTU_BOX_TWIN].mr && vq->app_srq)
		a.qp_access_flags |= IBV_ACCESS_REMOTE_WRITE;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, st->init_mask | IBV_QP_PORT |
				    (vq->app_srq ? IBV_QP_ACCESS_FLAGS : 0));
	if (ret)
		goto fail;
	/* at the head of the receive queue before the peer can reach it */
	ret = shiftu_ctrl_recv(vq, true);
	if (ret)
		goto fail;
	vq->ctrl_rq = 1;

	a = st->rtr;
	a.dest_qp_num = vq->peer.qpn;
	a.rq_psn = vq->peer.psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = vq->peer.gid;
	a.ah_attr.grh.sgid_index = vq->bak_sgid_index;
	a.ah_attr.port_num = vq->sctx->bak_port;
	a.ah_attr.dlid = 0;
	/* the backup port may have a smaller MTU than the primary */
	vctx = verbs_get_ctx_op(vq->sctx->bak_ctx, query_port);
	if (vctx && !vctx->query_port(vq->sctx->bak_ctx, vq->sctx->bak_port, &pa,
				      sizeof(pa)) && pa.active_mtu < a.path_mtu)
		a.path_mtu = pa.active_mtu;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, st->rtr_mask);
	if (ret)
		goto fail;
	vq->bak_rtr = 1;
	if (!vq->reconnects) {
		shiftu_qp_set_flags(&vq->reg, vq->reg.flags | SHIFTU_QP_F_PROTECTED);
		shiftu_stat_add(SHIFTU_STAT_QPS_PROTECTED, 1);
		shiftu_info("qp %u on %s: protected by qp %u on %s port %u (peer's twin: qp %u; requests %s)",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->bak_qp->qp_num,
			    vq->sctx->bak_name, vq->sctx->bak_port, vq->peer.qpn,
			    vq->rings == SHIFTU_RINGS_PROVIDER ? "in the provider's rings" :
								 "copied as posted");
	}
rts:
	/*
	 * A passive side (perftest's server) never asks for RTS; its twin
	 * still answers a peer's failover.
	 */
	ret = rts_attr(st, &a);
	a.sq_psn = vq->bak_psn;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, ret | IBV_QP_SQ_PSN);
	if (ret)
		goto fail;
	__atomic_store_n(&vq->bak_ready, 1, __ATOMIC_RELEASE);
	shiftu_dbg("qp %u: its twin can post", vq->reg.app_qp->qp_num);
	return;
fail:
	shiftu_warn("qp %u: cannot bring its twin to RTS: %s: unprotected",
		    vq->reg.app_qp->qp_num, strerror(ret));
	vq->published = 2;
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
	twin_connect(vq);
}

/*
 * A move drained the twin: reset it and bring it back with the PSNs both
 * sides published, so that no exchange is needed, and a control receive
 * at its head again.  The peer renews its own in the same move.
 */
int shiftu_twin_renew(struct shiftu_vqp *vq)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int ret;

	/* the shadow thread's qp_connect() keeps off meanwhile */
	vq->twin_stale = 1;
	__atomic_store_n(&vq->bak_ready, 0, __ATOMIC_RELEASE);
	vq->bak_rtr = 0;
	vq->ctrl_rq = 0;
	vq->twin_recvs = 0;
	vq->tw_old = 0;
	ret = shiftu_real.modify_qp(vq->bak_qp, &a, IBV_QP_STATE);
	if (ret) {
		shiftu_warn("qp %u: cannot reset its twin: %s: unprotected",
			    vq->reg.app_qp->qp_num, strerror(ret));
		vq->published = 2;
		vq->twin_stale = 0;
		return -ret;
	}
	/*
	 * A reset empties a receive queue, not an SRQ: the twin SRQ's
	 * receives are the application's, for every QP on it (srq.h).
	 */
	/* read by pollers of the twin's CQs without fo_lock */
	__atomic_store_n(&vq->reconnects, vq->reconnects + 1, __ATOMIC_RELAXED);
	twin_connect(vq);
	vq->twin_stale = 0;
	return __atomic_load_n(&vq->bak_ready, __ATOMIC_RELAXED) ? 0 : -EIO;
}

/* ---- failing back (4.3.3): the shadow threads of both sides ------------ */

/* Failback attempts back off up to these (fb_backoff()). */
#define FB_MAX_MS	5000
#define FB_BUSY_MS	1000

/* How long a QP holds its sends for the peer's count (handshake.h), on
 * its twin after a rejoin too. */
#define HS_TIMEOUT_NS	(10ULL * 1000 * 1000 * 1000)
/*
 * How long a failback that told the peer waits for its answer on the
 * default QP before it asks the peer to cancel (below; rejoin_ns()): the
 * answer comes from the peer's next poll or watcher round, which a busy
 * host makes late (64 QPs going back together in the lab: 2 s was too
 * short, and each cancel costs a whole new failback).  A failure it can
 * see (its port or path down, an error on the default QP) rejoins at once.
 */
#define REJOIN_NS	(5ULL * 1000 * 1000 * 1000)
/*
 * Silence alone does not make it leave the default QP, though: a peer
 * starved of the CPU (make check's two lanes: 5.7 s) is late, not gone,
 * and one that came after the rejoin went back all the same, its answer
 * lost in a default QP stopped, and joined the twins only once the
 * store had told it, which on such a host took longer than the asking
 * side's wait for it there (HS_TIMEOUT_NS): both gave the QP up.  So
 * past rejoin_ns() it asks the peer through the store to cancel the
 * failback it granted (cancel_ask()), and keeps listening: on the default
 * QP for a peer that followed, on the renewed twin for one that took the
 * cancel.  A peer that has done neither CANCEL_WAIT_NS after the store
 * took the cancel is taken for gone: the work goes onto the twin and
 * waits HS_TIMEOUT_NS more there (shiftu_rejoin()).  It granted the
 * failback moments before, so that is rare; a failure the side can see
 * still rejoins at once.
 */
#define CANCEL_WAIT_NS	(2 * HS_TIMEOUT_NS)

/*
 * How long a failback request waits for the peer's answer, from the
 * moment the store took it: the peer's next look (FB_POLL_NS at most),
 * then three store round trips (its GET, its PUT, our GET).  A round trip
 * is what the shadow thread's batches took lately (store_ns): on a host
 * whose CPU the application's pollers keep busy, Redis answers in
 * seconds (64 QPs going back in the lab: 1 to 5 s), and an answer that
 * comes after the wait is wasted, together with the reset the peer made
 * for it, since the next request is a new one (an old answer cannot be
 * taken safely: the peer may have granted another since).
 */
#define FB_ANSWER_NS	(2ULL * 1000 * 1000 * 1000)
#define FB_ANSWER_MAX_NS (30ULL * 1000 * 1000 * 1000)
#define FB_POLL_NS	(500ULL * 1000 * 1000)
/*
 * How long a probe may take; how long a due going back waits for the
 * application's poll before a backer takes it (shiftu_back_due()): long
 * enough for a poller that a busy CPU runs late, since the application's
 * threads go back side by side, the backers a few at a time.
 */
#define FB_PROBE_NS	(2000ULL * 1000 * 1000)
#define FB_BACK_WAIT_NS	(1000ULL * 1000 * 1000)

/* the longest batch of late, decaying by an eighth a batch (batch_send()) */
static uint64_t store_ns;

static uint64_t fb_answer_ns(void)
{
	uint64_t ns = FB_POLL_NS + 4 * store_ns;

	return ns < FB_ANSWER_NS ? FB_ANSWER_NS :
	       ns > FB_ANSWER_MAX_NS ? FB_ANSWER_MAX_NS : ns;
}

/*
 * How long a going back waits for the peer's answer before it asks the
 * peer to cancel: REJOIN_NS, or longer on a host whose store answers
 * slowly.  The answer does not come through the store, but from the
 * peer's poll or backup thread, which the same starved CPU makes late:
 * the store's round trips (store_ns) are what this side can measure of
 * that, as fb_answer_ns() does.  A cancel costs a whole failback.
 */
static uint64_t rejoin_ns(void)
{
	uint64_t ns = REJOIN_NS + 4 * store_ns;

	return ns > FB_ANSWER_MAX_NS ? FB_ANSWER_MAX_NS : ns;
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
 * Reset the application's QP and bring it back up with its own attributes
 * and the PSNs the two sides agreed on.  The QP carries nothing meanwhile:
 * its side is on the twin (the one that failed over) or passive (the peer).
 */
static int qp_reconnect(struct shiftu_vqp *vq, uint32_t rq_psn, uint32_t sq_psn,
			unsigned int ctrl)
{
	struct shiftu_qp_steps *st = &vq->steps;
	struct ibv_qp *qp = vq->reg.app_qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	unsigned int i;
	int ret;

	ret = shiftu_real.modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a = st->init;
	/* the peer writes its messages into our mailbox (box.c) */
	if (box_rkey(vq, SHIFTU_BOX_DEFAULT))
		a.qp_access_flags |= IBV_ACCESS_REMOTE_WRITE;
	ret = shiftu_real.modify_qp(qp, &a, st->init_mask |
				    (box_rkey(vq, SHIFTU_BOX_DEFAULT) ? IBV_QP_ACCESS_FLAGS : 0));
	if (ret)
		return ret;
	/*
	 * A two-sided failback (@ctrl control receives): the peer's message
	 * comes first (handshake.h), behind the peer's probe if it probes
	 * with a SEND (FB_PROBE_SEND): they come in that order, and each
	 * takes the first receive left.
	 */
	vq->ctrl_default = 0;		/* the reset dropped it */
	for (i = 0; i < ctrl; i++) {
		ret = shiftu_ctrl_recv(vq, false);
		if (ret)
			return ret;
		vq->ctrl_default = 1;
	}
	a = st->rtr;
	a.rq_psn = rq_psn;
	ret = shiftu_real.modify_qp(qp, &a, st->rtr_mask | IBV_QP_RQ_PSN);
	/* a passive side stays in RTR, unless it must answer (two-sided) */
	if (ret || (!st->rts_mask && !ctrl))
		return ret;
	ret = rts_attr(st, &a);
	a.sq_psn = sq_psn;
	return shiftu_real.modify_qp(qp, &a, ret | IBV_QP_SQ_PSN);
}

/*
 * SHIFTU_TEST_RESET_FILE (the test build): once the file is there, reset
 * @vq in place if it is a passive side on its default QP (it has posted
 * nothing, so nothing of its own is lost), with the PSNs its QP expects
 * and sends next: the peer sees nothing but a responder that forgot the
 * message it was in.  Context: the shadow thread, vq->lock held.
 */
static void test_reset_step(struct shiftu_vqp *vq, bool due)
{
#ifdef SHIFTU_TEST_BUILD
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	if (!due)
		return;
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
	if (vq->state != SHIFTU_SEND_DEFAULT || vq->sq.head ||
	    vq->rq.head != shiftu_count_start() || !vq->steps.rtr_mask ||
	    __atomic_load_n(&vq->app_stop, __ATOMIC_RELAXED))
		goto unlock;
	ret = shiftu_real.query_qp(vq->reg.app_qp, &a, IBV_QP_RQ_PSN | IBV_QP_SQ_PSN, &ia);
	if (!ret)
		ret = qp_reconnect(vq, a.rq_psn, a.sq_psn, 0);
	shiftu_info("qp %u on %s: reset in place, expecting PSN %u (a test setting): %s",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, a.rq_psn,
		    ret ? strerror(ret) : "done");
unlock:
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
#else
	(void)vq;
	(void)due;
#endif
}

/* SHIFTU_TEST_RESET_FILE is there: this pass resets (test_reset_step()). */
static bool test_reset_due(void)
{
	const char *f = shiftu_test_reset_file();

	return f && !access(f, F_OK);
}

/* The table shows @vq's port up and its path not down. */
static bool primary_ok(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 0;
}

/* The table shows @vq's own port down (not merely unknown). */
static bool port_down(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;

	return shiftu_vqp_primary(vq, &ph, &path) == 1 && path != SHIFT_FT_PATH_DOWN;
}

/*
 * Tell shift_ft what the transport told us (report.c): the path down after
 * a failover on a retry-exceeded completion, up again once the QP is back
 * on it.  A report the kernel refuses is not retried.  Context: vq->lock.
 */
static void report_step(struct shiftu_vqp *vq)
{
	bool back = vq->state == SHIFTU_SEND_DEFAULT;
	int ret;

	if (__atomic_load_n(&vq->report_down, __ATOMIC_RELAXED) && !vq->reported && !back) {
		__atomic_store_n(&vq->report_down, 0, __ATOMIC_RELAXED);
		/* before the page moves: our own report does not make us "down" */
		__atomic_store_n(&vq->reported, 1, __ATOMIC_RELAXED);
		ret = shiftu_report_path(vq->sctx->dev_name, vq->port_num, vq->dgid, true);
		if (!ret)
			shiftu_info("qp %u on %s port %u: reported its path down to shift_ft",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num);
		else if (ret != -EPERM && ret != -ENOENT)
			shiftu_warn("qp %u on %s port %u: cannot report its path down: %s",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
				    strerror(-ret));
		__atomic_store_n(&vq->reported, !ret, __ATOMIC_RELAXED);
	} else if (vq->reported && back) {
		ret = shiftu_report_path(vq->sctx->dev_name, vq->port_num, vq->dgid, false);
		__atomic_store_n(&vq->reported, 0, __ATOMIC_RELAXED);
		if (!ret)
			shiftu_info("qp %u on %s port %u: reported its path up to shift_ft",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num);
		else
			shiftu_warn("qp %u on %s port %u: cannot report its path up: %s (it stays down until this process exits)",
				    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
				    strerror(-ret));
	}
}

/*
 * The last word of a failback's request (fbreq): the asking side's
 * receives are on its twin (the failback is two-sided), and it would probe
 * with an empty SEND (shiftu_probe_by_send()).  The last word of the
 * answer (fbrep): the failback is two-sided (FB_TWIN_RECVS), and the peer
 * posted a second control receive for that SEND (FB_PROBE_SEND; not on an
 * SRQ, whose QP's peer probes its mailbox, box.c).
 */
#define FB_TWIN_RECVS	1U
#define FB_PROBE_SEND	2U

/*
 * Ask again later, up to @cap_ms later: backs off, never gives up.  A peer
 * that answered busy is there and will be ready soon (its own cable just
 * came back, say): it is asked again within a second.
 */
static void fb_backoff(struct shiftu_vqp *vq, uint32_t cap_ms)
{
	uint32_t ms = vq->fb_backoff_ms ? 2 * vq->fb_backoff_ms :
					  shiftu_config()->probe_ms;

	vq->fb_backoff_ms = ms > cap_ms ? cap_ms : ms;
	vq->fb_next_ns = shiftu_mono_ns() + vq->fb_backoff_ms * 1000000ULL;
	vq->fb_stage = 0;
}

/*
 * The probe failback_step() posted: the pass looks each time (it does
 * not wait, every QP's probe is under way at once), and once it is good,
 * a two-sided failback's going back is due (shiftu_back_due()), a
 * one-sided one waits for its fence.
 */
static void failback_probed(struct shiftu_vqp *vq)
{
	int st = shiftu_probe_step(vq);
	uint64_t now;

	if (st == 1 && shiftu_mono_ns() < vq->fb_probe_ns)
		return;
	if (st != 2) {
		shiftu_dbg("qp %u: probe of %s %s: trying again later",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			   st == 3 ? "failed" : "timed out");
		return fb_backoff(vq, FB_MAX_MS);
	}
	vq->fb_stage = 0;
	vq->fb_backoff_ms = 0;
	now = shiftu_mono_ns();
	if (!vq->fb_mode)
		shiftu_probe_fence(vq);
	shiftu_info("qp %u on %s: probe good%s: %s (request %u, asked %.3f s ago, probe posted %.3f s ago)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
		    vq->fb_by_send ? " (an empty SEND: the peer grants no remote access)" : "",
		    vq->fb_mode ? "going back with the peer" :
				  "failing back at the next signaled request",
		    vq->fb_seq, (now - vq->fb_asked_ns) / 1e9,
		    (now + FB_PROBE_NS - vq->fb_probe_ns) / 1e9);
	if (!vq->fb_mode)
		return;
	if (shiftu_test_failback_delay_ms()) {
		shiftu_info("qp %u on %s: going back in %u ms (a test setting)",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
			    shiftu_test_failback_delay_ms());
		usleep(shiftu_test_failback_delay_ms() * 1000U);
	}
	shiftu_back_due(vq);
}

/*
 * The side that failed over, once the table shows its primary good again:
 * ask the peer (through the store) to reset its QP for a new PSN, reset
 * ours with the peer's, probe, and hand over to the posting path (fence).
 */
static void failback_step(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int seq, psn, tq, tp, mode;
	char g[33], *val;
	char word[16];
	bool by_send;
	int i;

	if (vq->fb_stage == 2) {
		failback_probed(vq);
		return;
	}
	/* its probe was good: going back, not asking again */
	if (shiftu_mono_ns() < vq->fb_wait_ns || !kv_up() || shiftu_back_pending(vq))
		return;
	/*
	 * The pass read Fallback before the flags above: a going back that
	 * another thread finished in between has left Fallback, and its
	 * flags clear only after that (shiftu_take_back()), so the state
	 * read again tells.  Asking then would reset the peer's QP under the
	 * traffic that went back.
	 */
	if (__atomic_load_n(&vq->state, __ATOMIC_ACQUIRE) != SHIFTU_SEND_FALLBACK)
		return;
	if (vq->fb_stage == 0) {
		/*
		 * A passive side (no RTS of its own, nothing posted: perftest's
		 * server) does not lead: its peer, which sends, asks and probes
		 * with what it sends; this side answers.
		 */
		if (!vq->steps.rts_mask && !vq->sq.head)
			return;
		if (shiftu_mono_ns() < vq->fb_next_ns || !primary_ok(vq))
			return;
		/*
		 * Not before the peer's message of our failover is handled
		 * (a slow watcher, a message the NIC retries on a lossy
		 * path): taken after the failback, it would start a new
		 * failover, taken for a rejoin (the spin model's first
		 * finding on failback).  It comes: every failover's peer
		 * moves or answers.
		 */
		if (!__atomic_load_n(&vq->hs_got, __ATOMIC_RELAXED))
			return;

		/* the request goes in the pass's last batch (late_batch()),
		 * with every other QP's: a failed one backs this one off */
		i = req_add(SHIFTU_KV_PUT, 0);
		if (i < 0)
			return;
		vq->fb_seq++;
		vq->fb_psn = (uint32_t)random() & 0xffffff;
		gid_hex(vq->dgid, g);
		snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g,
			 vq->steps.rtr.dest_qp_num);
		/* the peer's twin names the peer process this is meant for; the
		 * last word: our receives are on the twin */
		vq->fb_by_send = shiftu_probe_by_send(vq);
		snprintf(reqs[i].val, sizeof(reqs[i].val), "%u %u %u %u %u", vq->fb_seq,
			 vq->fb_psn, vq->peer.qpn, vq->peer.psn,
			 (vq->twin_recvs ? FB_TWIN_RECVS : 0) |
			 (vq->fb_by_send ? FB_PROBE_SEND : 0));
		reqs[i].why = PASS_FBREQ;
		reqs[i].qi = pass_index(pq);
		vq->fb_stage = 1;
		vq->fb_asked_ns = shiftu_mono_ns();
		/* the wait for the answer starts again once the store has
		 * the request (late_batch()) */
		vq->fb_next_ns = shiftu_mono_ns() + fb_answer_ns();
		shiftu_dbg("qp %u: primary good again: asking the peer to reset (%s)",
			   vq->reg.app_qp->qp_num, reqs[i].key);
		return;
	}
	/* the peer's answer, asked for in this pass's batch (failback_req()) */
	if (pq->fbrep < 0)
		return;
	val = reqs[pq->fbrep].val;
	if (reqs[pq->fbrep].kv.ret ||
	    sscanf(val, "%u %15s %u %u %u", &seq, word, &tq, &tp, &mode) != 5 ||
	    seq != vq->fb_seq || tq != vq->bak_qp->qp_num || tp != vq->bak_psn) {
		if (shiftu_mono_ns() >= vq->fb_next_ns)
			fb_backoff(vq, FB_MAX_MS);	/* no answer: ask again later */
		return;
	}
	if (sscanf(word, "%u", &psn) != 1) {
		shiftu_dbg("qp %u: the peer cannot fail back yet (%s)",
			   vq->reg.app_qp->qp_num, word);
		return fb_backoff(vq, strcmp(word, "busy") ? FB_MAX_MS : FB_BUSY_MS);
	}
	shiftu_dbg("qp %u: the peer reset its QP: reconnecting and probing",
		   vq->reg.app_qp->qp_num);
	/* one-sided (mode 0): the peer posts no control receive, nor takes
	 * part; a QP whose peer grants no remote access cannot go back so */
	by_send = (mode & FB_PROBE_SEND) && vq->fb_by_send;
	vq->fb_by_send = by_send;
	vq->fb_mode = mode & FB_TWIN_RECVS;
	if (qp_reconnect(vq, psn, vq->fb_psn, vq->fb_mode) || !shiftu_probe(vq, by_send)) {
		shiftu_dbg("qp %u: probe of %s failed: trying again later",
			   vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		return fb_backoff(vq, FB_MAX_MS);
	}
	vq->fb_stage = 2;
	vq->fb_probe_ns = shiftu_mono_ns() + FB_PROBE_NS;
	/* the grant a cancel names, should the peer not answer (cancel_ask()) */
	vq->fb_going = seq;
}

/*
 * A request of ours to the peer through the store, "N WORD qpn psn LAST"
 * under its fbreq key, in the pass's last batch (late_batch()).
 * Context: vq->lock held.
 */
static void fbreq_put(struct shiftu_vqp *vq, const struct pass_qp *pq, const char *word,
		      uint32_t last, enum pass_why why)
{
	char g[33];
	int i;

	if (!kv_up())
		return;
	i = req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	gid_hex(vq->dgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g,
		 vq->steps.rtr.dest_qp_num);
	snprintf(reqs[i].val, sizeof(reqs[i].val), "%u %s %u %u %u", ++vq->fb_seq, word,
		 vq->peer.qpn, vq->peer.psn, last);
	reqs[i].why = why;
	reqs[i].qi = pass_index(pq);
	reqs[i].seq = vq->fb_seq;
}

/*
 * Our failback was cut short (shiftu_rejoin()): ask the peer, through the
 * store, to join our renewed twin, in the pass's last batch
 * (late_batch(), which says it was asked).  Its message on the twin
 * answers.  Context: vq->lock held.
 */
static void rejoin_ask(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	fbreq_put(vq, pq, "rejoin", 1, PASS_REJOIN);
}

/* Its answer.  Context: vq->lock held. */
static void rejoin_asked(struct shiftu_vqp *vq, const struct pass_req *r)
{
	if (r->kv.ret) {
		/* the next pass asks again, with the same number unless
		 * another request took one since */
		if (vq->fb_seq == r->seq)
			vq->fb_seq--;
		return;
	}
	if (!vq->rejoin_ask)
		return;		/* the peer joined meanwhile (failover.c) */
	vq->rejoin_ask = 0;
	shiftu_info("qp %u on %s: asked the peer to join its renewed twin",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
}

/*
 * Our going back heard nothing from the peer (rejoin_ns()): ask it,
 * through the store, to cancel the failback it granted (@vq->fb_going),
 * in the pass's last batch, as rejoin_ask() does.  The peer answers on one
 * of our QPs, not through the store (shiftu_cancel_serve()).  Context:
 * vq->lock held.
 */
static void cancel_ask(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	/* the last word names the grant: a late cancel of an older one
	 * finds another open, or none, and changes nothing */
	fbreq_put(vq, pq, "cancel", vq->fb_going, PASS_CANCEL);
}

/* Its answer: the wait for the peer counts from the store's.  vq->lock. */
static void cancel_asked(struct shiftu_vqp *vq, const struct pass_req *r)
{
	if (r->kv.ret) {
		/* asked again at the next pass, as a rejoin is */
		if (vq->fb_seq == r->seq)
			vq->fb_seq--;
		return;
	}
	if (vq->fb_cancel != 1 || !shiftu_going_back(vq))
		return;		/* the peer answered meanwhile, or a move came */
	vq->fb_cancel = 2;
	vq->fb_cancel_ns = shiftu_mono_ns();
	shiftu_info("qp %u on %s: asked the peer to cancel the failback it granted (request %u), listening on both QPs",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->fb_going);
}

/* Of two sides that both want to fail back, the one with the lower GID and
 * QPN asks, the other answers. */
static bool fb_leader(const struct shiftu_vqp *vq)
{
	int d = memcmp(vq->sgid, vq->dgid, 16);

	return d < 0 || (!d && vq->reg.app_qp->qp_num < vq->steps.rtr.dest_qp_num);
}

/*
 * The peer's side: a request to reset our QP for a new PSN.  Granted when
 * our QP carries no sends of its own (a passive side, or one on its twin).
 */
static void failback_answer_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (!vq->bak_rtr || shiftu_mono_ns() < vq->fb_poll_ns || vq->published != 1)
		return;
	i = req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	/* soon after a failback granted or done, the peer may ask us to join */
	vq->fb_poll_ns = shiftu_mono_ns() + (shiftu_mono_ns() < vq->fb_wait_ns ||
				      shiftu_mono_ns() - vq->back_ns < REJOIN_NS + 1000000000ULL ?
				      50000000ULL : FB_POLL_NS);
	gid_hex(vq->sgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbreq:%s:%u", g, vq->reg.app_qp->qp_num);
	pq->fbreq = i;
}

/* The answer to failback_answer_req(), if it asked in this pass. */
static void failback_answer(struct shiftu_vqp *vq, const struct pass_qp *pq)
{
	unsigned int seq, psn, tq, tp, tw, ctrl;
	char key[96], val[96], g[33], wkey[96], wval[96];
	enum shiftu_fb_reply reply;
	bool mode, withdraw = false;
	struct shiftu_fb_in in;
	char word[16];
	uint32_t ours;
	int i;

	if (req_ret(pq->fbreq) || vq->published != 1 || !kv_up())
		return;
	/*
	 * A request no newer than the last one answered is not answered
	 * again: a PUT of the peer's that a slow store took on a connection
	 * the peer had given up on can land after the peer's next request,
	 * and answering it would reset our QP again under the peer, which
	 * took the newer answer and reconnected (its WRITEs then met a QP
	 * expecting other PSNs: "remote invalid request", or a fence that
	 * never completes).
	 */
	if (sscanf(reqs[pq->fbreq].val, "%u %15s %u %u %u", &seq, word, &tq, &tp, &tw) != 5 ||
	    shiftu_seq32_le(seq, vq->fb_answered) || !vq->bak_qp ||
	    tq != vq->bak_qp->qp_num || tp != vq->bak_psn)
		return;		/* none, answered, or meant for an earlier process */
	vq->fb_answered = seq;
	if (!strcmp(word, "cancel")) {
		/* its last word: the request it went back by */
		shiftu_cancel_serve(vq, tw);
		return;
	}
	if (!strcmp(word, "rejoin")) {
		shiftu_info("qp %u on %s: the peer's failback was cut short: it asks us to join its renewed twin",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name);
		shiftu_rejoin_serve(vq);
		return;
	}
	/* "withdrawn": the peer granted ours and dropped its own */
	if (sscanf(word, "%u", &psn) != 1)
		return;
	gid_hex(vq->dgid, g);
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
	shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
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
	reply = shiftu_fb_answer(&in, &mode);
	ctrl = !mode ? 0 : (tw & FB_PROBE_SEND) && !vq->app_srq ? 2 : 1;
	if (reply != SHIFTU_FB_GRANT || qp_reconnect(vq, psn, ours, ctrl)) {
		snprintf(val, sizeof(val), "%u %s %u %u 0", seq,
			 reply == SHIFTU_FB_DOWN ? "down" : reply == SHIFTU_FB_LEADS ? "leads" : "busy",
			 vq->peer.qpn, vq->peer.psn);
	} else {
		snprintf(val, sizeof(val), "%u %u %u %u %u", seq, ours, vq->peer.qpn,
			 vq->peer.psn, mode | (ctrl == 2 ? FB_PROBE_SEND : 0));
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
				snprintf(wkey, sizeof(wkey), "fbreq:%s:%u", g,
					 vq->steps.rtr.dest_qp_num);
				snprintf(wval, sizeof(wval), "%u withdrawn %u %u 0", ++vq->fb_seq,
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
			if (!vq->ctrl_rq && !vq->twin_recvs && !shiftu_ctrl_recv(vq, true))
				vq->ctrl_rq = 1;
		}
	}
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	/* before the answer in the batch: the peer reads the store after it */
	if (withdraw) {
		i = req_add(SHIFTU_KV_PUT, 0);
		if (i < 0)
			return;
		snprintf(reqs[i].key, sizeof(reqs[i].key), "%s", wkey);
		snprintf(reqs[i].val, sizeof(reqs[i].val), "%s", wval);
	}
	/* in the pass's last batch, with the other QPs' answers: the peer
	 * asks again if it is lost */
	i = req_add(SHIFTU_KV_PUT, 0);
	if (i < 0)
		return;
	snprintf(reqs[i].key, sizeof(reqs[i].key), "%s", key);
	snprintf(reqs[i].val, sizeof(reqs[i].val), "%s", val);
}

/*
 * The peer's answer to our failback request (failback_step()), asked for
 * in the pass's batch while one is awaited.  Context: shadow thread,
 * vq->lock held.
 */
static void failback_req(struct shiftu_vqp *vq, struct pass_qp *pq)
{
	char g[33];
	int i;

	if (vq->state != SHIFTU_SEND_FALLBACK || vq->fb_stage != 1 ||
	    shiftu_mono_ns() < vq->fb_wait_ns)
		return;
	i = req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));
	if (i < 0)
		return;
	gid_hex(vq->sgid, g);
	snprintf(reqs[i].key, sizeof(reqs[i].key), "fbrep:%s:%u", g, vq->reg.app_qp->qp_num);
	pq->fbrep = i;
}

/*
 * The pass's store requests @from on, in one batch.  Returns 0, or the
 * -errno of a batch that did not go (every request's answer then).
 * Context: the shadow thread, shadow_lock held, and dropped while the
 * store is asked: neither an application's verb that records something
 * nor one that waits for a QP's lock or mr_lock waits for the store.  The
 * records may change meanwhile: the caller applies the answers to those
 * still there (pass_vqs[]).  A store backed off (kv_up()) is not asked.
 */
static void forget_done(unsigned int from, int err);

static int batch_send(unsigned int from)
{
	unsigned int i, n = n_reqs - from;
	struct shiftu_kv_req *kr;
	uint64_t t0;
	int err;

	if (!n)
		return 0;
	err = kv_up() ? 0 : -ENOTCONN;
	kr = err ? NULL : malloc(n * sizeof(*kr));
	if (!kr) {
		err = err ? err : -ENOMEM;
		for (i = from; i < n_reqs; i++)
			reqs[i].kv.ret = err;
		forget_done(from, err);
		return err;
	}
	/* reqs[] stays where it is: only this thread adds to it */
	for (i = 0; i < n; i++) {
		kr[i] = reqs[from + i].kv;
		kr[i].key = reqs[from + i].key;
		kr[i].val = reqs[from + i].val;
	}
	kv_busy = true;
	shiftu_unlock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	t0 = shiftu_mono_ns();
	err = shiftu_kv_batch(kv, kr, n);
	t0 = shiftu_mono_ns() - t0;
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	kv_busy = false;
	if (err)
		kv_down(err);
	else
		kv_good();
	store_ns -= store_ns / 8;
	if (t0 > store_ns)
		store_ns = t0;
	for (i = 0; i < n; i++)
		reqs[from + i].kv.ret = kr[i].ret;
	free(kr);
	forget_done(from, err);
	return err;
}

/*
 * The keys queued to be forgotten, as the pass's first requests (a DEL
 * each), if the store may be asked.  Context: the shadow thread,
 * shadow_lock held.
 */
static void forget_take(void)
{
	struct forget *f;
	int i;

	if (!kv_up())
		return;
	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	while ((f = forget_head)) {
		i = req_add(SHIFTU_KV_DEL, 0);
		if (i < 0)
			break;
		snprintf(reqs[i].key, sizeof(reqs[i].key), "%s", f->key);
		reqs[i].why = PASS_FORGET;
		forget_head = f->next;
		if (!forget_head)
			forget_tail = &forget_head;
		n_forget--;
		forget_sending++;
		free(f);
	}
	shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
}

/*
 * The DELs of the batch from @from on are answered, or the batch did not
 * go (@err): then they wait for the next one.  A key the store refused to
 * delete (a user without +del) is not asked again.
 */
static void forget_done(unsigned int from, int err)
{
	unsigned int i, n = 0;

	for (i = from; i < n_reqs; i++) {
		if (reqs[i].why != PASS_FORGET)
			continue;
		n++;
		if (err && !forget_add(reqs[i].key))
			shiftu_dbg("store: %s stays in the store (too many keys wait)",
				   reqs[i].key);
		if (!err && reqs[i].kv.ret && reqs[i].kv.ret != -ENOENT)
			shiftu_dbg("store: cannot delete %s: %s", reqs[i].key,
				   strerror(-reqs[i].kv.ret));
	}
	if (!n)
		return;
	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	forget_sending -= n;
	shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
}

static void pass_batch(void)
{
	struct shiftu_mr *m;
	unsigned int i;

	if (!n_reqs)
		return;
	batch_send(0);
	/* an MR deregistered or registered again meanwhile is not the one
	 * published: its record went, or its twin did */
	shiftu_lock(&mr_lock, SHIFTU_LOCK_MR);
	for (i = 0; i < n_reqs; i++) {
		if (!reqs[i].mr || reqs[i].kv.ret)
			continue;
		for (m = mrs; m && m != reqs[i].mr; m = m->next)
			;
		if (m && m->app == reqs[i].mr_app && m->bak == reqs[i].mr_bak)
			m->published = true;
	}
	shiftu_unlock(&mr_lock, SHIFTU_LOCK_MR);
}

/*
 * The pass's last batch: what its records' steps had to say once the
 * first one was answered (failback requests and answers), requests
 * @from on.  A failback request that did not go backs its QP off; one
 * that did starts its wait for the answer (fb_answer_ns()).
 * A request to join our twin that went is said; one that did not is made
 * again at the next pass.  Context: shadow_lock, no other lock; the QPs
 * destroyed while the store was asked are skipped (pass_vqs[]).
 */
static void late_batch(unsigned int from)
{
	struct shiftu_vqp *vq;
	unsigned int i;

	batch_send(from);
	for (i = from; i < n_reqs; i++) {
		vq = req_vq(i, PASS_REJOIN);
		if (vq) {
			shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
			rejoin_asked(vq, &reqs[i]);
			shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
			continue;
		}
		vq = req_vq(i, PASS_CANCEL);
		if (vq) {
			shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
			cancel_asked(vq, &reqs[i]);
			shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
			continue;
		}
		vq = req_vq(i, PASS_FBREQ);
		if (!vq)
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (vq->state == SHIFTU_SEND_FALLBACK && vq->fb_stage == 1) {
			if (reqs[i].kv.ret)
				fb_backoff(vq, FB_MAX_MS);
			else
				vq->fb_next_ns = shiftu_mono_ns() + fb_answer_ns();
		}
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
}

/*
 * The look ahead: the backup keys of the peer's memory that a QP's
 * requests name, fetched before a failure needs them: a replay never asks
 * the store (shiftu_backup_rkey()).  A key not looked up yet when a move
 * needs it (a failure soon after the QP's first posts, on a loaded host:
 * many_procs.sh) is wanted: the move holds its sends, the next pass asks
 * for it, and the move goes on once the answer is in
 * (shiftu_keys_came()); a key the store did not have fails it.
 * (Looked up by the replay, one round trip each on the thread that moves
 * the QP, a peer with 64 QPs heard 64 failovers one after the other, and
 * with the store on a loaded host its answers came after the 10 s a side
 * waits for them.)  Each protected QP's send ring is read every 100 ms
 * until 2 s after its first post (SCOUT_FIRST looks: an application names
 * its peer's memory as soon as it runs, which may be long after its QPs
 * are connected), then once a second (SCOUT_NS), while its poster may be
 * writing it (a torn
 * key costs a lookup that finds nothing), and the keys not known yet are
 * asked for in the pass's batch.  A key the store does not have is asked
 * again after SCOUT_MISS_NS.
 */
#define SCOUT_NS	(1000ULL * 1000 * 1000)
#define SCOUT_FIRST	20
#define SCOUT_MISS_NS	(10ULL * 1000 * 1000 * 1000)
#define SCOUT_MAX	16		/* keys a QP's ring is read for */

static uint64_t scout_due;		/* the next look ahead; 0: none */

/* @rkey's entry in @vq's map, answer or miss; NULL if none.  fo_lock. */
static struct shiftu_rkey_map *rkey_find(struct shiftu_vqp *vq, uint32_t rkey)
{
	struct shiftu_rkey_map *r;

	for (r = vq->rkeys; r; r = r->next)
		if (r->rkey == rkey)
			return r;
	return NULL;
}

/*
 * The keys @vq's requests name: from the provider's ring, or the
 * library's copies (the last mask + 1 of them).  Racy, as said above.
 */
static unsigned int scout_keys(struct shiftu_vqp *vq, uint32_t *out)
{
	uint64_t head, i, from;
	unsigned int n = 0;
	uint32_t op;

	if (vq->rings == SHIFTU_RINGS_PROVIDER && vq->psq)
		return shiftu_provq_rkeys(vq->psq, out, 0, SCOUT_MAX);
	if (vq->rings != SHIFTU_RINGS_COPY || !vq->sq.slots)
		return 0;
	head = __atomic_load_n(&vq->sq.head, __ATOMIC_ACQUIRE);
	from = head > (uint64_t)vq->sq.mask + 1 ? head - vq->sq.mask - 1 : 0;
	for (i = from; i < head && n < SCOUT_MAX; i++) {
		struct shiftu_swqe *e = shiftu_swqe_at(&vq->sq, i);

		op = __atomic_load_n(&e->opcode, __ATOMIC_RELAXED);
		if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		    op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			n = shiftu_rkey_note(out, n, SCOUT_MAX,
					     __atomic_load_n(&e->rkey, __ATOMIC_RELAXED));
	}
	return n;
}

/*
 * SHIFTU_TEST_SCOUT_DELAY_MS: no ring is read until that long after the
 * first QP could have been (the test build; never in production, where
 * the knob reads 0).  Shadow thread.
 */
static bool scout_held(uint64_t now)
{
	static uint64_t from;
	uint32_t ms = shiftu_test_scout_delay_ms();

	if (!ms)
		return false;
	if (!from)
		from = now;
	return now - from < ms * 1000000ULL;
}

/* A GET of the peer's backup key of @rkey for @vq, in the pass's batch. */
static void scout_get(struct shiftu_vqp *vq, const struct pass_qp *pq, uint32_t rkey)
{
	int r = req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));

	if (r < 0)
		return;		/* asked at a later pass */
	snprintf(reqs[r].key, sizeof(reqs[r].key), "mr:%016" PRIx64 ":%u",
		 vq->peer.node_guid, rkey);
	reqs[r].why = PASS_SCOUT;
	reqs[r].qi = pass_index(pq);
	reqs[r].rkey = rkey;
}

/*
 * @vq's look ahead, if due: a GET for each key its ring names that its map
 * does not answer yet.  Context: shadow thread, vq->lock held (fo_lock
 * only tried: a move holds it for long, and the next look comes soon).
 */
static void scout_req(struct shiftu_vqp *vq, const struct pass_qp *pq, uint64_t now)
{
	uint32_t keys[SCOUT_MAX];
	struct shiftu_rkey_map *m;
	unsigned int n, i;

	if (!__atomic_load_n(&vq->bak_ready, __ATOMIC_ACQUIRE) || !vq->peer_known ||
	    vq->state == SHIFTU_SEND_DEAD)
		return;
	if (now >= vq->scout_ns) {
		vq->scout_ns = now + (vq->scouts < SCOUT_FIRST ? SCOUT_NS / 10 : SCOUT_NS);
		/* the quick looks count from the first post (an empty ring
		 * costs nothing to read) */
		if (__atomic_load_n(&vq->sq.head, __ATOMIC_RELAXED))
			vq->scouts++;
		n = scout_held(now) ? 0 : scout_keys(vq, keys);
	} else {
		n = 0;
	}
	if (!scout_due || vq->scout_ns < scout_due)
		scout_due = vq->scout_ns;
	/* keys a held move waits for are asked at every pass, due or not */
	if ((!n && !__atomic_load_n(&vq->rkeys_wanted, __ATOMIC_RELAXED)) ||
	    shiftu_trylock(&vq->fo_lock, SHIFTU_LOCK_FO))
		return;
	for (i = 0; i < n; i++) {
		m = rkey_find(vq, keys[i]);
		if (m && (!m->miss_ns || now - m->miss_ns < SCOUT_MISS_NS))
			continue;
		scout_get(vq, pq, keys[i]);
	}
	for (m = vq->rkeys; m && vq->rkeys_wanted; m = m->next)
		if (m->wanted)
			scout_get(vq, pq, m->rkey);
	shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
}

/*
 * The look aheads' answers, into their QPs' maps.  Context: shadow
 * thread, shadow_lock held (a QP destroyed since the requests is skipped).
 */
static void scout_apply(uint64_t now)
{
	struct shiftu_rkey_map *m;
	struct shiftu_vqp *vq;
	unsigned long v = 0;
	unsigned int i;
	char *end;

	for (i = 0; i < n_reqs; i++) {
		vq = req_vq(i, PASS_SCOUT);
		if (!vq || (reqs[i].kv.ret && reqs[i].kv.ret != -ENOENT))
			continue;
		if (!reqs[i].kv.ret) {
			errno = 0;
			v = strtoul(reqs[i].val, &end, 10);
			if (errno || *end || v > UINT32_MAX)
				continue;
		}
		if (shiftu_trylock(&vq->fo_lock, SHIFTU_LOCK_FO))
			continue;
		m = rkey_find(vq, reqs[i].rkey);
		if (!m && (m = malloc(sizeof(*m)))) {
			m->rkey = reqs[i].rkey;
			m->next = vq->rkeys;
			vq->rkeys = m;
		}
		if (m) {
			m->bak_rkey = reqs[i].kv.ret ? 0 : (uint32_t)v;
			m->miss_ns = reqs[i].kv.ret ? now : 0;
			/* answered: its move goes on (shiftu_keys_came()) */
			if (m->wanted) {
				m->wanted = 0;
				__atomic_store_n(&vq->rkeys_wanted, vq->rkeys_wanted - 1,
						 __ATOMIC_RELAXED);
			}
			if (!reqs[i].kv.ret)
				shiftu_dbg("qp %u: the peer's rkey %#x is %#x on its backup (looked up ahead)",
					   vq->reg.app_qp->qp_num, m->rkey, m->bak_rkey);
		}
		shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
	}
}

/*
 * A two-sided failback waits for the peer's message on the default QP,
 * whose CQ the application may not poll (a side that only writes): the
 * pass serves it at the QP's turn, and between the turns of others as
 * well.  A pass that moves many QPs back takes seconds (64 in the lab: a
 * quarter of a second each), and the messages of the first ones waited
 * for the next pass, past REJOIN_NS: they rejoined, or went back at the
 * end of the run.  Context: shadow_lock, no other lock.
 */
#define SERVE_NS	(100ULL * 1000 * 1000)

static void serve_awaiting(void)
{
	struct shiftu_vqp *vq;
	unsigned int i;

	for (i = 0; i < n_vqps; i++) {
		vq = vqps[i];
		if (!shiftu_awaits_default(vq))
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (shiftu_awaits_default(vq))
			shiftu_app_serve(vq);
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
}

/* One step of every record; returns true while something is still pending. */
static bool shadow_pass(void)
{
	uint64_t now = shiftu_mono_ns(), served, due;
	bool pending = false, reset = test_reset_due();
	unsigned int first_late;
	struct shiftu_ctx *s;
	struct shiftu_pd *p;
	struct shiftu_mr *m;
	struct shiftu_cq *c;
	struct pass_qp *pq;
	unsigned int i;
	int r;

	n_reqs = 0;
	scout_due = 0;
	/* first: it drops shadow_lock while it connects */
	kv_open_step();
	if (cap_pqs < n_vqps) {
		pq = realloc(pqs, n_vqps * sizeof(*pq));
		if (!pq)
			return true;	/* the next pass tries again */
		pqs = pq;
		cap_pqs = n_vqps;
	}
	if (cap_pass < n_vqps) {
		struct shiftu_vqp **v = realloc(pass_vqs, n_vqps * sizeof(*v));

		if (!v)
			return true;
		pass_vqs = v;
		cap_pass = n_vqps;
	}
	if (n_vqps)
		memcpy(pass_vqs, vqps, n_vqps * sizeof(*pass_vqs));
	n_pass = n_vqps;
	/* the deletes before any record the pass publishes */
	forget_take();
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
			m->pd = pd_find(m->app->pd);
		if (!mr_step(m))
			continue;
		pending = true;
		r = req_add(SHIFTU_KV_PUT, 0);
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
	/* what every QP asks the store */
	for (i = 0; i < n_pass; i++) {
		struct shiftu_vqp *vq = pass_vqs[i];

		pq = &pqs[i];
		pq->pub = pq->peer = pq->fbreq = pq->fbrep = -1;
		if (!vq->sctx->bak_ctx || vq->published == 2)
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
		if (qp_create(vq)) {
			qp_publish_req(vq, pq);
			qp_peer_req(vq, pq);
			failback_answer_req(vq, pq);
			failback_req(vq, pq);
			scout_req(vq, pq, now);
		}
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
	pass_batch();
	scout_apply(now);
	first_late = n_reqs;
	served = shiftu_mono_ns();
	/* the QPs still there once the store answered */
	for (i = 0; i < n_pass; i++) {
		struct shiftu_vqp *vq = pass_vqs[i];

		if (shiftu_mono_ns() - served > SERVE_NS) {
			serve_awaiting();
			served = shiftu_mono_ns();
		}
		pq = &pqs[i];
		if (!vq || !vq->sctx->bak_ctx || vq->published == 2)
			continue;
		shiftu_lock(&vq->lock, SHIFTU_LOCK_VQ);
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
		    !twin_reset_later(vq, &pending)) {
			/* still stale once no move is under way */
			shiftu_lock(&vq->fo_lock, SHIFTU_LOCK_FO);
			if (vq->twin_stale && vq->state == SHIFTU_SEND_DEFAULT)
				shiftu_twin_renew(vq);
			shiftu_unlock(&vq->fo_lock, SHIFTU_LOCK_FO);
			/* the port failed again while the twin was stale */
			if (vq->bak_ready && vq->down)
				shiftu_failover(vq, shiftu_down_why(vq));
		}
		if (shiftu_going_back(vq)) {
			if (__atomic_load_n(&vq->rejoin_want, __ATOMIC_ACQUIRE))
				shiftu_rejoin(vq, "its default QP failed while it went back");
			else if (!primary_ok(vq))
				shiftu_rejoin(vq, "its port or path went down while it went back");
			else if (vq->fb_cancel == 2 &&
				 shiftu_mono_ns() - vq->fb_cancel_ns > CANCEL_WAIT_NS)
				shiftu_rejoin(vq, "no word from the peer on either QP since it was asked to cancel");
			else if (!vq->fb_cancel && shiftu_mono_ns() - vq->hs_told_ns > rejoin_ns()) {
				shiftu_info("qp %u on %s: no word from the peer on its default QP in %.1f s: asking it to cancel the failback",
					    vq->reg.app_qp->qp_num, vq->sctx->dev_name,
					    (shiftu_mono_ns() - vq->hs_told_ns) / 1e9);
				vq->fb_cancel = 1;
			}
			pending = true;
		} else if (vq->state == SHIFTU_SEND_HANDSHAKE) {
			/* the keys its held sends wait for are answered */
			if (vq->keys_held && !__atomic_load_n(&vq->rkeys_wanted, __ATOMIC_RELAXED))
				shiftu_keys_came(vq);
			/* the store's answers are bounded as the peer's count is */
			if (vq->state == SHIFTU_SEND_HANDSHAKE &&
			    shiftu_mono_ns() - vq->hs_since_ns > HS_TIMEOUT_NS)
				shiftu_hs_timeout(vq, HS_TIMEOUT_NS);
			pending = true;
		}
		if (vq->rejoin_ask)
			rejoin_ask(vq, pq);
		else if (vq->fb_cancel == 1 && shiftu_going_back(vq))
			cancel_ask(vq, pq);
		if (vq->state == SHIFTU_SEND_FALLBACK)
			failback_step(vq, pq);
		else if (vq->fb_stage == 2)
			vq->fb_stage = 0;	/* back by the peer's word */
		if (vq->fb_stage == 2)
			pending = true;		/* its probe: look again soon */
		due = __atomic_load_n(&vq->back_due_ns, __ATOMIC_ACQUIRE);
		if (due) {
			/* the application does not poll its CQs: a backer goes */
			if (shiftu_mono_ns() - due > FB_BACK_WAIT_NS)
				backer_hand(vq);
			pending = true;
		}
		report_step(vq);
		test_reset_step(vq, reset);
		if (vq->bak_rtr) {
			failback_answer(vq, pq);
			pending = true;		/* keep listening for requests */
		}
		/* a two-sided failback's message may come to a CQ the
		 * application does not poll: listen while one can */
		if (shiftu_awaits_default(vq)) {
			shiftu_app_serve(vq);
			pending = true;
		}
		/* a passive QP (no RTS step) is done once its twin is in RTR */
		if (!vq->bak_ready && vq->published != 2 &&
		    !(vq->bak_rtr && !vq->steps.rts_mask))
			pending = true;
		shiftu_unlock(&vq->lock, SHIFTU_LOCK_VQ);
	}
	late_batch(first_late);
	n_pass = 0;
	/* done: the test sees the file gone */
	if (reset)
		unlink(shiftu_test_reset_file());
	/* deletes that wait: the store is backed off, or they came late */
	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	if (n_forget)
		pending = true;
	shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
	return pending;
}

/*
 * At exit, the keys still to be forgotten go while the store answers,
 * FORGET_EXIT_MS at most: a program that destroys its QPs and MRs and
 * exits at once leaves no record of them behind (as when the application
 * deleted them itself).  The shadow thread sends them; a store that did
 * not answer its last request is not waited for.
 */
static void __attribute__((destructor)) shiftu_shadow_exit(void)
{
	uint64_t end = shiftu_mono_ns() + FORGET_EXIT_MS * 1000000ULL;
	unsigned int left;

	if (!__atomic_load_n(&shadow_started, __ATOMIC_RELAXED))
		return;
	for (;;) {
		shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
		left = n_forget + forget_sending;
		shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
		if (!left || !__atomic_load_n(&kv_answering, __ATOMIC_RELAXED) ||
		    shiftu_mono_ns() >= end)
			break;
		shiftu_shadow_poke();
		usleep(2000);
	}
	if (left)
		shiftu_dbg("exit: %u keys not deleted from the store", left);
}

static void *shadow_thread(void *arg)
{
	unsigned int seen;
	struct timespec t;
	uint64_t t0, wait;
	bool pending;

	(void)arg;
	pthread_setname_np(pthread_self(), SHIFTU_THREAD_NAME "-shadow");
	srandom((unsigned int)getpid() ^ (unsigned int)time(NULL));
	shiftu_lock(&shadow_lock, SHIFTU_LOCK_SHADOW);
	for (;;) {
		seen = shadow_gen;
		t0 = shiftu_mono_ns();
		pending = shadow_pass();
		if (shiftu_mono_ns() - t0 > 200000000ULL)
			shiftu_dbg("shadow pass: %llu ms", (unsigned long long)((shiftu_mono_ns() - t0) / 1000000));
		if (seen != shadow_gen ||
		    __atomic_exchange_n(&shadow_poked, 0, __ATOMIC_ACQUIRE))
			continue;
		if (pending || scout_due) {
			/* waiting on a peer or the store: again soon; or
			 * until the next look ahead (scout_req()) */
			wait = 100 * 1000 * 1000;
			if (!pending)
				wait = scout_due > shiftu_mono_ns() ? scout_due - shiftu_mono_ns() : 0;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += wait / 1000000000;
			t.tv_nsec += wait % 1000000000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&shadow_wake, &shadow_lock, &t);
		} else {
			pthread_cond_wait(&shadow_wake, &shadow_lock);
		}
	}
	return NULL;
}
