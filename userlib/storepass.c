// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * storepass.c: what the shadow thread asks the store, and how the thread
 * is woken (shadow_int.h).
 *
 * The store is the shadow thread's alone.  A pass gathers its requests
 * here (shiftu_req_add()), every record's at a time, and sends them in one
 * pipelined batch with no lock held (shiftu_batch_send()); a store that
 * does not answer is backed off, so that asking whether it may be asked
 * (shiftu_kv_up()) never waits; the keys of what the application destroyed
 * are queued by its threads (shiftu_kv_forget()) and deleted at the head
 * of the next batch.  shadow_lock and the thread's wake-up are here too,
 * at the bottom of the shadow files: the store's I/O drops the lock, and a
 * queued key wakes the thread.  Nothing here calls into the failover side
 * of the library, nor into the other shadow files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "shadow_int.h"
#include "store.h"
#include "util.h"

pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;

pthread_cond_t shadow_wake = PTHREAD_COND_INITIALIZER;
bool shadow_started;
unsigned int shadow_gen;		/* bumped by every record: wakes */
int shadow_poked;			/* shiftu_shadow_poke(), lock-free */

/*
 * The QPs of the pass under way, vqps[] as it began: the pass drops
 * shadow_lock while it waits for the store, and a QP destroyed meanwhile
 * is set NULL here (shiftu_shadow_qp_gone()), so that the pass skips it
 * after.  Under shadow_lock; n_pass is 0 between passes.
 */
struct shiftu_vqp **pass_vqs;
unsigned int n_pass;
static unsigned int cap_pass;

/*
 * The store is the shadow thread's alone, and it talks to it holding no
 * lock (shiftu_batch_send()).  A store that does not answer is remembered
 * (kv_down()): no connect and no command before kv_retry_ns, a wait that
 * doubles with each failure from KV_BACKOFF_MIN_MS to KV_BACKOFF_MAX_MS, so
 * that a pass costs nothing while the store is down, and the question "may
 * the store be asked" (shiftu_kv_up()) never waits.  Without it, every pass
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
 * application's thread queues them (shiftu_kv_forget()); the shadow thread
 * deletes them at the head of its next batch (shiftu_forget_take()), before any
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

/* The pass's requests (shadow_int.h); shadow thread only. */
struct pass_req *reqs;
unsigned int n_reqs;
static unsigned int cap_reqs;
struct pass_qp *pqs;			/* one per pass_vqs[] entry */
static unsigned int cap_pqs;

/* the longest batch of late, decaying by an eighth a batch (shiftu_batch_send()) */
uint64_t store_ns;

void shiftu_gid_hex(const uint8_t *gid, char *buf)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(buf + 2 * i, "%02x", gid[i]);
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
void shiftu_kv_forget(const char *key)
{
	if (!forget_add(key)) {
		if (!__atomic_exchange_n(&forget_full_said, true, __ATOMIC_RELAXED))
			shiftu_info("store: %u keys wait to be deleted already: %s stays in the store, as later ones may",
				    FORGET_MAX, key);
		return;
	}
	shiftu_shadow_poke();
}

/* Context: shadow_lock held.  Tell the thread there is work. */
void shiftu_shadow_kick(void)
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

/* The store may be asked now: open, and not backed off.  Never waits. */
bool shiftu_kv_up(void)
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
void shiftu_kv_open_step(void)
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
 * The pass's QPs: pass_vqs[] a copy of @vqs (vqps[] as the pass begins),
 * and a pass_qp for each in pqs[].  False without memory: the next pass
 * tries again.  Context: the shadow thread, shadow_lock held.
 */
bool shiftu_pass_begin(struct shiftu_vqp *const *vqs, unsigned int n)
{
	struct pass_qp *pq;

	if (cap_pqs < n) {
		pq = realloc(pqs, n * sizeof(*pq));
		if (!pq)
			return false;
		pqs = pq;
		cap_pqs = n;
	}
	if (cap_pass < n) {
		struct shiftu_vqp **v = realloc(pass_vqs, n * sizeof(*v));

		if (!v)
			return false;
		pass_vqs = v;
		cap_pass = n;
	}
	if (n)
		memcpy(pass_vqs, vqs, n * sizeof(*pass_vqs));
	n_pass = n;
	return true;
}

/* A new request of the pass, or -1 (no memory: asked in a later pass). */
int shiftu_req_add(enum shiftu_kv_op op, size_t len)
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

/*
 * The pass's store requests @from on, in one batch.  Returns 0, or the
 * -errno of a batch that did not go (every request's answer then).
 * Context: the shadow thread, shadow_lock held, and dropped while the
 * store is asked: neither an application's verb that records something
 * nor one that waits for a QP's lock or mr_lock waits for the store.  The
 * records may change meanwhile: the caller applies the answers to those
 * still there (pass_vqs[]).  A store backed off (shiftu_kv_up()) is not asked.
 */
static void forget_done(unsigned int from, int err);

int shiftu_batch_send(unsigned int from)
{
	unsigned int i, n = n_reqs - from;
	struct shiftu_kv_req *kr;
	uint64_t t0;
	int err;

	if (!n)
		return 0;
	err = shiftu_kv_up() ? 0 : -ENOTCONN;
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
void shiftu_forget_take(void)
{
	struct forget *f;
	int i;

	if (!shiftu_kv_up())
		return;
	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	while ((f = forget_head)) {
		i = shiftu_req_add(SHIFTU_KV_DEL, 0);
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

/* Deletes wait: the store is backed off, or they came late. */
bool shiftu_forget_waits(void)
{
	bool waits;

	shiftu_lock(&forget_lock, SHIFTU_LOCK_FORGET);
	waits = n_forget;
	shiftu_unlock(&forget_lock, SHIFTU_LOCK_FORGET);
	return waits;
}

/*
 * The child of a fork(2) (registry.c: shiftu_shadow_fork_child()): the
 * store handle, the queued keys and the wake-up are the parent's.
 */
void shiftu_storepass_fork_child(void)
{
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
	shadow_started = false;
	shadow_gen = 0;
	shadow_poked = 0;
	pthread_cond_init(&shadow_wake, NULL);
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
