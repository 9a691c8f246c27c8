// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * scout.c: the look ahead for the peer's backup keys, and the lookup a
 * replay makes in what it found (shadow.h: shiftu_backup_rkey()).
 *
 * The shadow thread's pass reads each protected QP's send ring for the
 * peer's keys its requests name and asks the store for their twins in the
 * pass's batch (storepass.c); a replay, on an application's thread, only
 * reads the QP's map.  Nothing here calls into the failover side of the
 * library: this file is below it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpose.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "provq.h"
#include "shadow_int.h"
#include "store.h"
#include "testbuild.h"
#include "util.h"

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

uint64_t scout_due;			/* the next look ahead; 0: none */

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
	int r = shiftu_req_add(SHIFTU_KV_GET, sizeof(reqs[0].val));

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
void shiftu_scout_req(struct shiftu_vqp *vq, const struct pass_qp *pq, uint64_t now)
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
void shiftu_scout_apply(uint64_t now)
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


int shiftu_backup_rkey(struct shiftu_vqp *vq, uint32_t rkey, uint32_t *out)
{
	struct shiftu_rkey_map *r;

	/*
	 * What the look ahead found (shiftu_scout_apply()), and nothing else: this
	 * runs in a move or a post on the twin, on an application's thread
	 * and under fo_lock, where a store that does not answer would hold
	 * the application for seconds.  A key the QP's requests named only
	 * after the last look is wanted instead: the shadow thread asks the
	 * store for it at once, and the caller holds its sends until then
	 * (replay.c: shiftu_keys_wait()).  A key the store did not have has none.
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
