// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * store.c: the key-value store of the out-of-band exchange (store.h):
 * its interface, which checks keys and values and passes each call to
 * the backend, a directory for processes on one host (store_local.c)
 * or Redis through a hiredis that is loaded at the first open
 * (store_redis.c), values signed and checked on the way (store_seal.c)
 * when a key is set.  What they share is in store_int.h.
 *
 * Context: the library's background thread, which may block for a bounded
 * time.  Nothing here runs on the verbs fast path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"

/* ---- the raw calls: what the store holds, signed or not ---- */

int shiftu_kv_open(const struct shiftu_store *cfg, struct shiftu_kv **out)
{
	struct shiftu_kv *kv;
	int err;

	switch (cfg->kind) {
	case SHIFTU_STORE_NONE:
		return -ENOTCONN;
	case SHIFTU_STORE_LOCAL:
	case SHIFTU_STORE_REDIS:
	case SHIFTU_STORE_REDIS_UNIX:
		break;
	default:
		return -EINVAL;
	}
	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	kv->kind = cfg->kind;
	kv->dirfd = -1;
	if (cfg->kind == SHIFTU_STORE_LOCAL)
		snprintf(kv->desc, sizeof(kv->desc), "local:%s", cfg->dir[0] ? cfg->dir : "(default)");
	else
		snprintf(kv->desc, sizeof(kv->desc), "%s", cfg->url);
	/* read at each open, as the credentials are: a file fixed is taken
	 * at the next try */
	err = shiftu_kv_key_read(kv, cfg);
	if (!err)
		err = cfg->kind == SHIFTU_STORE_LOCAL ? shiftu_local_open(kv, cfg->dir)
						      : shiftu_redis_open(kv, cfg);
	if (err) {
		shift_auth_clear(&kv->auth);
		shift_sign_key_clear(&kv->sign);
		free(kv);
		return err;
	}
	shiftu_dbg("store %s: open%s%s", kv->desc, kv->auth.set ? " as user " : "",
		   kv->auth.set ? kv->auth.user : "");
	*out = kv;
	return 0;
}

static int kv_put_raw(struct shiftu_kv *kv, const char *key, const char *val)
{
	/* strnlen: one byte past the limit is enough to refuse */
	if (!valid_key(key) || !val ||
	    !valid_val(val, strnlen(val, SHIFTU_KV_VAL_MAX + 1)))
		return -EINVAL;
	return kv->kind == SHIFTU_STORE_LOCAL ? shiftu_local_put(kv, key, val)
					      : shiftu_redis_put(kv, key, val);
}

static int kv_get_raw(struct shiftu_kv *kv, const char *key, char *val, size_t len)
{
	if (!valid_key(key) || !val)
		return -EINVAL;
	return kv->kind == SHIFTU_STORE_LOCAL ? shiftu_local_get(kv, key, val, len)
					      : shiftu_redis_get(kv, key, val, len);
}

int shiftu_kv_del(struct shiftu_kv *kv, const char *key)
{
	if (!valid_key(key))
		return -EINVAL;
	return kv->kind == SHIFTU_STORE_LOCAL ? shiftu_local_del(kv, key)
					      : shiftu_redis_del(kv, key);
}

static int kv_batch_raw(struct shiftu_kv *kv, struct shiftu_kv_req *reqs, unsigned int n)
{
	unsigned int i, ok = 0;

	for (i = 0; i < n; i++) {
		reqs[i].ret = -EINVAL;
		if (!valid_key(reqs[i].key) ||
		    (reqs[i].op != SHIFTU_KV_DEL && !reqs[i].val) ||
		    (reqs[i].op == SHIFTU_KV_PUT &&
		     !valid_val(reqs[i].val, strnlen(reqs[i].val, SHIFTU_KV_VAL_MAX + 1))))
			continue;
		reqs[i].ret = 0;
		ok++;
	}
	if (!ok)
		return 0;
	if (kv->kind != SHIFTU_STORE_LOCAL) {
		/* the invalid ones are not sent: moved out of the way */
		if (ok < n) {
			struct shiftu_kv_req *v = malloc(ok * sizeof(*v));
			unsigned int j;
			int err;

			if (!v)
				return -ENOMEM;
			for (i = 0, j = 0; i < n; i++)
				if (!reqs[i].ret)
					v[j++] = reqs[i];
			err = shiftu_redis_batch(kv, v, ok);
			for (i = 0, j = 0; i < n; i++)
				if (!reqs[i].ret)
					reqs[i].ret = v[j++].ret;
			free(v);
			return err;
		}
		return shiftu_redis_batch(kv, reqs, n);
	}
	for (i = 0; i < n; i++) {
		if (reqs[i].ret)
			continue;
		if (reqs[i].op == SHIFTU_KV_PUT)
			reqs[i].ret = shiftu_local_put(kv, reqs[i].key, reqs[i].val);
		else if (reqs[i].op == SHIFTU_KV_DEL)
			reqs[i].ret = shiftu_local_del(kv, reqs[i].key);
		else
			reqs[i].ret = shiftu_local_get(kv, reqs[i].key, reqs[i].val, reqs[i].len);
	}
	return 0;
}

/* ---- the interface ---- */

int shiftu_kv_put(struct shiftu_kv *kv, const char *key, const char *val)
{
	char sealed[SHIFTU_KV_VAL_MAX + 1];
	int err;

	if (!kv->sign.set || !val)
		return kv_put_raw(kv, key, val);
	err = shiftu_kv_seal(kv, key, val, sealed);
	return err ? err : kv_put_raw(kv, key, sealed);
}

int shiftu_kv_get(struct shiftu_kv *kv, const char *key, char *val, size_t len)
{
	char buf[SHIFTU_KV_VAL_MAX + 1];
	int err;

	if (!kv->sign.set || !val)
		return kv_get_raw(kv, key, val, len);
	err = kv_get_raw(kv, key, buf, sizeof(buf));
	return err ? err : shiftu_kv_unseal(kv, key, buf, val, len);
}

int shiftu_kv_batch(struct shiftu_kv *kv, struct shiftu_kv_req *reqs, unsigned int n)
{
	struct shiftu_kv_req *v;
	char (*buf)[SHIFTU_KV_VAL_MAX + 1];
	unsigned int i;
	int err;

	if (!kv->sign.set || !n)
		return kv_batch_raw(kv, reqs, n);
	/* the values as the store holds them, signed, in buffers of their own */
	v = malloc(n * (sizeof(*v) + sizeof(*buf)));
	if (!v)
		return -ENOMEM;
	buf = (void *)(v + n);
	for (i = 0; i < n; i++) {
		v[i] = reqs[i];
		if (reqs[i].op == SHIFTU_KV_DEL)
			continue;	/* no value: as it is */
		v[i].val = buf[i];
		v[i].len = sizeof(buf[i]);
		/* a PUT that cannot be signed is left invalid: -EINVAL */
		if (!reqs[i].val ||
		    (reqs[i].op == SHIFTU_KV_PUT &&
		     (!valid_key(reqs[i].key) ||
		      shiftu_kv_seal(kv, reqs[i].key, reqs[i].val, buf[i]))))
			v[i].key = NULL;
	}
	err = kv_batch_raw(kv, v, n);
	for (i = 0; i < n; i++) {
		reqs[i].ret = v[i].ret;
		if (!reqs[i].ret && reqs[i].op == SHIFTU_KV_GET)
			reqs[i].ret = shiftu_kv_unseal(kv, reqs[i].key, buf[i], reqs[i].val,
						       reqs[i].len);
	}
	free(v);
	return err;
}

void shiftu_kv_close(struct shiftu_kv *kv)
{
	if (!kv)
		return;
	if (kv->dirfd >= 0)
		close(kv->dirfd);
	shiftu_redis_drop(kv);
	shiftu_dbg("store %s: closed", kv->desc);
	shift_auth_clear(&kv->auth);
	shift_sign_key_clear(&kv->sign);
	free(kv);
}

const char *shiftu_kv_describe(const struct shiftu_kv *kv)
{
	return kv->desc;
}
