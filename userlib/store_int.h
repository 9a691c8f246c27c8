/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_int.h: what the store's files share among themselves (store.h
 * is what the rest of the library calls): the handle, the checks of
 * keys and values, and the calls of one file into another.
 *
 *   store.c        the interface: keys and values checked, each call
 *                  passed to its backend, values signed on the way in
 *                  and checked on the way out when a key is set
 *   store_seal.c   the records' signatures (recsign.h): the key file,
 *                  values sealed and unsealed, replays refused, drops
 *                  counted and said once per source
 *   store_local.c  LOCAL: a directory, one file per key
 *   store_redis.c  REDIS, REDIS_UNIX: hiredis loaded at the first open,
 *                  credentials, reconnects at the server's pace, batches
 *                  pipelined; a refusal of us said once per process
 *
 * A file calls only those listed below it: the backends call neither
 * each other nor any file above them, and store_seal.c calls only
 * store_redis.c's shiftu_auth_refused(), so that a key file that cannot
 * be used is said as refused credentials are, once per process.  Each
 * function's comment is with its definition.  Context: the library's
 * background thread, which may block for a bounded time; a struct
 * shiftu_kv is used by one thread at a time (store.h).  No file outside
 * these four includes this header.
 */
#ifndef _SHIFTU_STORE_INT_H
#define _SHIFTU_STORE_INT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "recsign.h"
#include "store.h"
#include "storeauth.h"
#include "util.h"

#define PREFIX_LEN		(sizeof(SHIFTU_KV_PREFIX) - 1)
#define STORED_KEY_LEN		(PREFIX_LEN + SHIFTU_KV_KEY_MAX + 1)

/* hiredis.h's, which only store_redis.c includes */
struct redisContext;

struct shiftu_kv {
	enum shiftu_store_kind kind;
	bool failing;			/* REDIS: in a run of failures (logged) */
	uint64_t silent_ns;		/* REDIS: failing since, 0 when it answers */
	int dirfd;			/* LOCAL */
	struct redisContext *ctx;	/* REDIS: NULL while disconnected */
	uint32_t rcv_ms;		/* REDIS: ctx's read timeout */
	/* REDIS: the longest recent answer, halved for each second since
	 * @lat_at_ns (store_redis.c's kv_pace()) */
	uint64_t lat_ns, lat_at_ns;
	char host[256];			/* REDIS: name or address; UNIX: path */
	uint16_t port;			/* REDIS: 0 for a Unix socket */
	struct shift_auth auth;		/* REDIS: sent at every connect */
	struct shift_sign_key sign;	/* values signed and checked, when set */
	char desc[PATH_MAX + 16];
};

/* ---- keys and values ---- */

static inline bool valid_key(const char *key)
{
	size_t n;

	if (!key)
		return false;
	for (n = 0; key[n]; n++)
		if (key[n] < 0x21 || key[n] > 0x7e || n >= SHIFTU_KV_KEY_MAX)
			return false;
	return n > 0;
}

static inline bool valid_val(const char *val, size_t len)
{
	size_t i;

	if (len > SHIFTU_KV_VAL_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (val[i] < 0x20 || val[i] > 0x7e)
			return false;
	return true;
}

/* "shiftu:v1:" + key, into a STORED_KEY_LEN buffer; key already valid */
static inline void stored_key(const char *key, char *out)
{
	memcpy(out, SHIFTU_KV_PREFIX, PREFIX_LEN);
	strcpy(out + PREFIX_LEN, key);
}

/* Copy a value read from the store out to the caller (store.h's rules). */
static inline int copy_out(const char *v, size_t n, char *val, size_t len)
{
	if (!valid_val(v, n))
		return -EBADMSG;
	if (n >= len)
		return -ENOBUFS;
	memcpy(val, v, n);
	val[n] = '\0';
	return 0;
}

/* ---- store_seal.c ---------------------------------------------------- */

/* @cfg's key file into @kv: -EACCES when it cannot be used */
int shiftu_kv_key_read(struct shiftu_kv *kv, const struct shiftu_store *cfg) SHIFTU_HIDDEN;
/* @val signed as record @key into @out (SHIFTU_KV_VAL_MAX + 1 bytes) */
int shiftu_kv_seal(struct shiftu_kv *kv, const char *key, const char *val,
		   char *out) SHIFTU_HIDDEN;
/* the value @buf read for @key checked, then copied out: -EBADMSG when dropped */
int shiftu_kv_unseal(struct shiftu_kv *kv, const char *key, char *buf, char *val,
		     size_t len) SHIFTU_HIDDEN;

/* ---- store_local.c --------------------------------------------------- */

/* the directory (@cfg_dir, or the default) opened and checked */
int shiftu_local_open(struct shiftu_kv *kv, const char *cfg_dir) SHIFTU_HIDDEN;
/* a valid key's file written, read or removed */
int shiftu_local_put(struct shiftu_kv *kv, const char *key, const char *val) SHIFTU_HIDDEN;
int shiftu_local_get(struct shiftu_kv *kv, const char *key, char *val,
		     size_t len) SHIFTU_HIDDEN;
int shiftu_local_del(struct shiftu_kv *kv, const char *key) SHIFTU_HIDDEN;

/* ---- store_redis.c --------------------------------------------------- */

/* hiredis loaded, @cfg's credentials read, connected */
int shiftu_redis_open(struct shiftu_kv *kv, const struct shiftu_store *cfg) SHIFTU_HIDDEN;
/* SET, GET and DEL of a valid key, one command each */
int shiftu_redis_put(struct shiftu_kv *kv, const char *key, const char *val) SHIFTU_HIDDEN;
int shiftu_redis_get(struct shiftu_kv *kv, const char *key, char *val,
		     size_t len) SHIFTU_HIDDEN;
int shiftu_redis_del(struct shiftu_kv *kv, const char *key) SHIFTU_HIDDEN;
/* valid requests, pipelined in one round trip */
int shiftu_redis_batch(struct shiftu_kv *kv, struct shiftu_kv_req *reqs,
		       unsigned int n) SHIFTU_HIDDEN;
/* the connection, if any, closed */
void shiftu_redis_drop(struct shiftu_kv *kv) SHIFTU_HIDDEN;
/* the store refused us (or our key file): said once per process */
void shiftu_auth_refused(struct shiftu_kv *kv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3))) SHIFTU_HIDDEN;

#endif /* _SHIFTU_STORE_INT_H */
