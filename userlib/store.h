/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store.h: the key-value store through which libshiftu exchanges backup QP
 * and MR attributes with its peers (SHIFT section 4.2, "out-of-band KV
 * transfer").  Internal: nothing here is exported.
 *
 * The library's background thread calls it, never the application's
 * threads: every call may block, but for a bounded time (SHIFTU_KV_TIMEOUT_MS
 * per connection attempt and per command; a call makes at most one command,
 * one reconnect and one more command, so about 3 s in the worst case).  A
 * server that has been answering slowly (a busy host's) is given three
 * times its recent pace per command, SHIFTU_KV_TIMEOUT_MAX_MS at most.
 *
 * Backends (struct shiftu_store, config.h):
 *
 *   NONE	no store: shiftu_kv_open() says -ENOTCONN, the caller runs
 *		unprotected.
 *   LOCAL	processes on one host: a directory (SHIFTU_STORE_DIR, default
 *		/dev/shm/shiftu-<euid>), mode 0700 and ours, one file per key.
 *		A value is written to a temporary file and renamed over the
 *		key's file, so a reader sees the old value or the new one,
 *		never part of one.  Not synced to disk: the store lives as long
 *		as the processes that use it.
 *   REDIS, REDIS_UNIX
 *		a Redis server: SET (no expiry), GET, DEL.  hiredis is
 *		dlopen()ed at the first open, so that a program that never
 *		opens a store never loads it.  With credentials (storeauth.h)
 *		every new connection sends AUTH USER PASSWORD first; the ACL
 *		user needs "+get +set +del ~shiftu:v1:*" (Documentation/trust.rst).
 *
 * Layout, version 1: the caller's key K is stored as "shiftu:v1:K" (a Redis
 * key; in LOCAL, the name of the file is that string with every byte but
 * [A-Za-z0-9._-] written %XX).  shiftmon's agent keeps its keys under
 * "shift:v1:" in the same Redis (tools/shiftmon/store.h): the two never
 * collide, and a later layout can live next to this one during an upgrade.
 *
 * Keys: 1 to SHIFTU_KV_KEY_MAX bytes of printable ASCII without space
 * (0x21-0x7e), e.g. "qp:fe80::1:17".  Values: 0 to SHIFTU_KV_VAL_MAX bytes of
 * printable ASCII, space included (0x20-0x7e).  Anything else is -EINVAL.
 *
 * Signed values: with a key file (SHIFTU_STORE_KEY_FILE, read at each
 * open like the credentials, -EACCES when it cannot be used) every value
 * is stored signed as record KEY (recsign.h: a space and its token, so a
 * value may be up to SHIFTU_KV_VAL_MAX less that token; a longer one is
 * -EINVAL), and a value read back, single or batched, on any backend,
 * must carry a good signature no more than SHIFT_SIGN_FUTURE_US ahead:
 * else it is -EBADMSG, counted and logged once per source.  Callers see
 * the values as they wrote them.  Without a key nothing changes, and a
 * REDIS store that is not on a loopback address says once that its
 * records are unauthenticated.
 *
 * Thread safety: a struct shiftu_kv is used by one thread at a time (the
 * caller serialises); different handles are independent and may be used
 * concurrently, in one process or several.  All functions return 0 or a
 * negative errno and never print except through the logger (log.h).  They
 * keep SIGPIPE from reaching the process when the server goes away.
 */
#ifndef _SHIFTU_STORE_H
#define _SHIFTU_STORE_H

#include <stddef.h>

#include "config.h"

#define SHIFTU_KV_PREFIX	"shiftu:v1:"
/* the LOCAL file name, fully escaped, still fits NAME_MAX */
#define SHIFTU_KV_KEY_MAX	80
#define SHIFTU_KV_VAL_MAX	1023
#define SHIFTU_KV_TIMEOUT_MS	1000
#define SHIFTU_KV_TIMEOUT_MAX_MS	4000
/* a server that times out is slow, not gone, until silent this long (store_redis.c) */
#define SHIFTU_KV_SLOW_MS	10000

/* One connection (REDIS) or one open directory (LOCAL). */
struct shiftu_kv;

/*
 * Open a handle on the store @cfg names and return it in *@out.
 *   NONE: -ENOTCONN.
 *   LOCAL: creates the directory (0700) if needed; -EPERM (one warn line)
 *     when it is not a directory we own that only we can write, or is a
 *     symbolic link; other -errno from mkdir/open.
 *   REDIS, REDIS_UNIX: connects, SHIFTU_KV_TIMEOUT_MS at most:
 *     -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH (includes a name that does
 *     not resolve), -ENOENT (no socket file), ...; -ELIBACC when hiredis
 *     cannot be loaded (logged once); -EACCES when the store refuses the
 *     credentials (AUTH USER PASSWORD, sent on every new connection when
 *     @cfg has them from the URL or from its credentials file) or that
 *     file cannot be used (storeauth.h's reasons): logged once per
 *     process, naming the store and the reason, never the password.
 *   -ENOMEM; -EINVAL for an unknown kind.
 * Thread safe.
 */
int shiftu_kv_open(const struct shiftu_store *cfg, struct shiftu_kv **out);

/*
 * Set @key to @val, replacing any value.  0, -EINVAL (bad key or value),
 * -errno of the transport or the file system, -EACCES when the server
 * refuses us (NOAUTH: no credentials; NOPERM: the ACL user may not; logged
 * as shiftu_kv_open() says), -EIO when it refuses the command for another
 * reason.  A REDIS handle whose
 * connection fails is reconnected once within the call; if that fails too
 * the call fails and the next call tries again.
 */
int shiftu_kv_put(struct shiftu_kv *kv, const char *key, const char *val);

/*
 * Copy the value of @key, NUL-terminated, into @val (@len bytes).
 * 0; -ENOENT: no such key; -ENOBUFS: the value needs more than @len - 1
 * bytes (@val is then left unspecified); -EBADMSG: the stored value is not
 * a valid value (someone else wrote it); -EINVAL: bad key; transport errors
 * as shiftu_kv_put().
 */
int shiftu_kv_get(struct shiftu_kv *kv, const char *key, char *val, size_t len);

/*
 * Remove @key.  0, -ENOENT when there was no such key (nothing changed),
 * -EINVAL: bad key; transport errors as shiftu_kv_put().
 */
int shiftu_kv_del(struct shiftu_kv *kv, const char *key);

/*
 * One request of a batch (shiftu_kv_batch()): a GET of @key into @val
 * (@len bytes), a PUT of @val (@len unused), or a DEL of @key (@val and
 * @len unused).  @ret gets what the single call would have returned.
 */
enum shiftu_kv_op { SHIFTU_KV_GET, SHIFTU_KV_PUT, SHIFTU_KV_DEL };

struct shiftu_kv_req {
	enum shiftu_kv_op op;
	const char *key;
	char *val;
	size_t len;
	int ret;
};

/*
 * Run @n requests in order, in one round trip to a REDIS store (pipelined:
 * a pass of the shadow thread asks for many QPs at once, and each round
 * trip costs the most on a busy host).  A connection that fails under the
 * batch is replaced once and the whole batch sent again (GET and SET may
 * be repeated: a DEL repeated finds nothing, and says -ENOENT).  Returns
 * 0 when every request has its answer in its @ret;
 * else the transport's -errno, which every @ret also holds.  Bounded as
 * the single calls, per read of the answers.
 */
int shiftu_kv_batch(struct shiftu_kv *kv, struct shiftu_kv_req *reqs, unsigned int n);

/* Close the connection or directory and free @kv (NULL is allowed). */
void shiftu_kv_close(struct shiftu_kv *kv);

/*
 * The store, for log lines: "redis://10.0.2.1:6379", "redis://[fd00::1]:6379",
 * "unix:/run/redis.sock" or "local:/dev/shm/shiftu-0".  Valid until
 * shiftu_kv_close().
 */
const char *shiftu_kv_describe(const struct shiftu_kv *kv);

#endif /* _SHIFTU_STORE_H */
