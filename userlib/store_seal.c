// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * store_seal.c: the store's records sealed and unsealed under the
 * cluster key (recsign.h), on every backend: the key file read at each
 * open, values signed on the way in, checked on the way out, replays
 * refused, drops counted and said once per source.
 *
 * Context: the library's background thread, which may block for a bounded
 * time.  Nothing here runs on the verbs fast path.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "log.h"
#include "recsign.h"
#include "store_int.h"

/*
 * With a key every value goes out signed, as record KEY, from this host
 * (its name is the sender: libshiftu's records do not name a host of
 * their own), with this process's sequence; every value read must carry
 * a good signature, else it is dropped: -EBADMSG, as for a value someone
 * else wrote, counted (shiftu_stats()'s records_dropped) and logged once
 * per source.  Shared by the single calls and the batches, on every
 * backend.
 */
static uint64_t sign_last;		/* atomic: this process's last sequence */
static pthread_once_t sender_once = PTHREAD_ONCE_INIT;
static char sender[SHIFT_SIGN_SENDER_MAX];	/* written once */
/* the sources a drop was logged for: once each, a bounded table */
#define DROP_SOURCES		32
static struct {
	/* a leaf, only tried: a child forked while another thread held it
	 * must not wait for it (fork.c does not take it) */
	pthread_mutex_t lock;
	unsigned int n;
	bool full_logged;
	char src[DROP_SOURCES][SHIFT_SIGN_SENDER_MAX + 48];
} drops = { .lock = PTHREAD_MUTEX_INITIALIZER };
static bool unsigned_warned;		/* atomic */
/*
 * The newest sequence read for each key, so that an older signed value put
 * back in the store (a replay: a QP that had the same GID and number
 * before, a failback request already answered) is dropped.  A bounded
 * table, by a hash of the key: a key whose slot another key took is then
 * checked for its signature and age only, never dropped for another's.
 */
#define SEEN_SLOTS		1024
#define SEEN_TRIES		64
static struct {
	/* a leaf, only tried, as drops.lock: a forked child may find it held */
	pthread_mutex_t lock;
	struct {
		uint64_t hash;		/* 0: free */
		uint64_t seq;
	} slot[SEEN_SLOTS];
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The host name, as a SENDER: other bytes become '-'. */
static void sender_init(void)
{
	char h[256] = "";
	size_t i;

	if (gethostname(h, sizeof(h) - 1) || !h[0])
		snprintf(h, sizeof(h), "localhost");
	for (i = 0; h[i] && i < sizeof(sender) - 1; i++) {
		char c = h[i];

		sender[i] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '.' || c == '_' ? c : '-';
	}
	sender[i] = '\0';
}

/* A record dropped: counted, and said once for @source. */
static void __attribute__((format(printf, 4, 5)))
kv_dropped(struct shiftu_kv *kv, const char *key, const char *source, const char *fmt, ...)
{
	bool say = true;
	char why[160];
	unsigned int i;
	va_list ap;

	shiftu_stat_add(SHIFTU_STAT_RECORDS_DROPPED, 1);
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (pthread_mutex_trylock(&drops.lock)) {
		say = false;	/* another thread is saying one: counted all the same */
		goto log;
	}
	for (i = 0; i < drops.n; i++)
		if (!strcmp(drops.src[i], source))
			say = false;
	if (say && drops.n < DROP_SOURCES) {
		snprintf(drops.src[drops.n++], sizeof(drops.src[0]), "%s", source);
	} else if (say) {
		if (!drops.full_logged)
			shiftu_warn("store %s: records from more than %d sources dropped: the others are not named",
				    kv->desc, DROP_SOURCES);
		drops.full_logged = true;
		say = false;
	}
	pthread_mutex_unlock(&drops.lock);
log:
	if (say)
		shiftu_warn("store %s: dropped %s from %s: %s (said once per source; shiftu_stats() counts them)",
			    kv->desc, key, source, why);
	else
		shiftu_dbg("store %s: dropped %s from %s: %s", kv->desc, key, source, why);
}

/* FNV-1a of @key, never 0 (a free slot). */
static uint64_t key_hash(const char *key)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *key; key++)
		h = (h ^ (uint8_t)*key) * 0x100000001b3ULL;
	return h ? h : 1;
}

/*
 * Is @seq, read for @key, older than a sequence read for it before?  The
 * newest is kept.  Under contention (or in a child forked while another
 * thread held the table) the check is skipped rather than waited for.
 */
static bool kv_replayed(const char *key, uint64_t seq)
{
	uint64_t h = key_hash(key);
	unsigned int i;
	bool old = false;
	__typeof__(seen.slot[0]) *sl = &seen.slot[h % SEEN_SLOTS];

	for (i = 0; pthread_mutex_trylock(&seen.lock); i++) {
		if (i == SEEN_TRIES)
			return false;
		sched_yield();
	}
	if (sl->hash == h && shift_seq_after(sl->seq, seq))
		old = true;
	else if (sl->hash != h || shift_seq_after(seq, sl->seq))
		sl->hash = h, sl->seq = seq;
	pthread_mutex_unlock(&seen.lock);
	return old;
}

/* Is the REDIS store @cfg on this host (a loopback address or name)? */
static bool store_local(const struct shiftu_store *cfg)
{
	return !strncmp(cfg->host, "127.", 4) || !strcmp(cfg->host, "::1") ||
	       !strcmp(cfg->host, "localhost");
}

/* The key file of @cfg into @kv: -EACCES (said as for a refused store) when it cannot be used. */
int shiftu_kv_key_read(struct shiftu_kv *kv, const struct shiftu_store *cfg)
{
	char why[192];
	int err;

	if (!cfg->key_file[0]) {
		/*
		 * One host's store is the user's own (a 0700 directory, a
		 * socket, a loopback port); one on another host is shared by
		 * hosts that anything with a password can write for.  A
		 * tunnel's loopback end is not told apart: the agents say it.
		 */
		if (cfg->kind == SHIFTU_STORE_REDIS && !store_local(cfg) &&
		    !__atomic_exchange_n(&unsigned_warned, true, __ATOMIC_RELAXED))
			shiftu_warn("store %s: UNAUTHENTICATED records: no SHIFTU_STORE_KEY_FILE, so any client that can write shiftu:v1:* can point this job's twins at its own QPs and memory (Documentation/trust.rst)",
				    kv->desc);
		return 0;
	}
	err = shift_sign_key_read(cfg->key_file, &kv->sign, why, sizeof(why));
	if (err) {
		shiftu_auth_refused(kv, "key file %s: %s", cfg->key_file, why);
		return -EACCES;
	}
	pthread_once(&sender_once, sender_init);
	return 0;
}

/* @val signed as record @key into @out (SHIFTU_KV_VAL_MAX + 1 bytes). */
int shiftu_kv_seal(struct shiftu_kv *kv, const char *key, const char *val, char *out)
{
	size_t n = strnlen(val, SHIFTU_KV_VAL_MAX + 1);
	int err;

	if (n > SHIFTU_KV_VAL_MAX)
		return -EINVAL;
	memcpy(out, val, n + 1);
	err = shift_sign_append(&kv->sign, key, out, SHIFTU_KV_VAL_MAX + 1, ' ', sender,
				shift_sign_seq_next(&sign_last));
	/* a value that leaves no room for its signature is too long */
	return err == -ENOBUFS ? -EINVAL : err;
}

/*
 * The value @buf read for @key: its signature checked and cut off, then
 * copied out as the unsigned value would be.  -EBADMSG when dropped.
 */
int shiftu_kv_unseal(struct shiftu_kv *kv, const char *key, char *buf, char *val,
		     size_t len)
{
	char who[SHIFT_SIGN_SENDER_MAX], src[SHIFT_SIGN_SENDER_MAX + 48];
	const char *p;
	uint64_t seq;
	int err;

	err = shift_sign_check(&kv->sign, key, buf, ' ', who, sizeof(who), &seq);
	/* unsigned, the writer is not named: the key's owner is its source */
	p = strrchr(key, ':');
	snprintf(src, sizeof(src), "%s", who[0] ? who : "");
	if (!who[0])
		snprintf(src, sizeof(src), "%.*s (unsigned)", p ? (int)(p - key) : 40, key);
	if (err == -ENOMSG) {
		kv_dropped(kv, key, src, "not signed");
		return -EBADMSG;
	}
	if (err) {
		kv_dropped(kv, key, src, "%s", err == -EBADMSG ? "bad signature" : strerror(-err));
		return -EBADMSG;
	}
	if (shift_seq_after(seq, shift_sign_now_us() + SHIFT_SIGN_FUTURE_US)) {
		kv_dropped(kv, key, src, "sequence %016" PRIx64 " from the future", seq);
		return -EBADMSG;
	}
	if (kv_replayed(key, seq)) {
		kv_dropped(kv, key, src, "sequence %016" PRIx64 " older than one read before (a replay)",
			   seq);
		return -EBADMSG;
	}
	return copy_out(buf, strlen(buf), val, len);
}
