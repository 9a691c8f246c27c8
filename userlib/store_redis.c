// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * store_redis.c: the store's REDIS and REDIS_UNIX backend (store.h):
 * hiredis, loaded at the first open; AUTH on every new connection;
 * a command, or a batch pipelined, reconnected once under it and
 * given as long as the server's recent pace asks for.
 *
 * Context: the library's background thread, which may block for a bounded
 * time.  Nothing here runs on the verbs fast path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* types and constants only: the functions come from dlsym() (redis_lib) */
#include <hiredis/hiredis.h>

#include "log.h"
#include "store_int.h"
#include "storeauth.h"
#include "testbuild.h"
#include "util.h"

/*
 * hiredis 1.x (a fallback "libhiredis.so" may be one) inserted fields in
 * redisReply; redisContext still starts with err and errstr[], the only
 * fields of it read here.  This is 1.x's reply, as far as it is read.
 */
struct redis_reply_v1 {
	int type;
	long long integer;
	double dval;
	size_t len;
	char *str;
};

static struct {
	void *handle;
	bool v1;			/* the reply layout above */
	redisContext *(*connect_tcp)(const char *ip, int port, const struct timeval tv);
	redisContext *(*connect_unix)(const char *path, const struct timeval tv);
	int (*set_timeout)(redisContext *c, const struct timeval tv);
	void *(*command_argv)(redisContext *c, int argc, const char **argv,
			      const size_t *argvlen);
	int (*append_argv)(redisContext *c, int argc, const char **argv,
			   const size_t *argvlen);
	int (*get_reply)(redisContext *c, void **reply);
	void (*free_reply)(void *reply);
	void (*free_ctx)(redisContext *c);
} redis_lib;				/* written once, in redis_lib_once */
static pthread_once_t redis_lib_once = PTHREAD_ONCE_INIT;
static int redis_lib_err;		/* after redis_lib_once */

static void redis_lib_load(void)
{
	static const char *const names[] = { "libhiredis.so.0.14", "libhiredis.so" };
	void *h = NULL;
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		shiftu_warn("store: cannot load hiredis: %s", dlerror());
		redis_lib_err = -ELIBACC;
		return;
	}
	redis_lib.connect_tcp = dlsym(h, "redisConnectWithTimeout");
	redis_lib.connect_unix = dlsym(h, "redisConnectUnixWithTimeout");
	redis_lib.set_timeout = dlsym(h, "redisSetTimeout");
	redis_lib.command_argv = dlsym(h, "redisCommandArgv");
	redis_lib.append_argv = dlsym(h, "redisAppendCommandArgv");
	redis_lib.get_reply = dlsym(h, "redisGetReply");
	redis_lib.free_reply = dlsym(h, "freeReplyObject");
	redis_lib.free_ctx = dlsym(h, "redisFree");
	if (!redis_lib.connect_tcp || !redis_lib.connect_unix ||
	    !redis_lib.set_timeout || !redis_lib.command_argv ||
	    !redis_lib.append_argv || !redis_lib.get_reply ||
	    !redis_lib.free_reply || !redis_lib.free_ctx) {
		shiftu_warn("store: hiredis lacks a function this library needs");
		dlclose(h);
		memset(&redis_lib, 0, sizeof(redis_lib));
		redis_lib_err = -ELIBACC;
		return;
	}
	/* first in hiredis 1.0 */
	redis_lib.v1 = dlsym(h, "redisConnectWithOptions") != NULL;
	redis_lib.handle = h;	/* never closed: handles may outlive anything */
	shiftu_dbg("store: hiredis loaded (%s reply layout)", redis_lib.v1 ? "1.x" : "0.14");
}

static int reply_type(const void *r)
{
	return *(const int *)r;	/* the first field in every version */
}

static const char *reply_str(const void *r, size_t *len)
{
	if (redis_lib.v1) {
		*len = ((const struct redis_reply_v1 *)r)->len;
		return ((const struct redis_reply_v1 *)r)->str;
	}
	*len = ((const redisReply *)r)->len;
	return ((const redisReply *)r)->str;
}

static long long reply_int(const void *r)
{
	return redis_lib.v1 ? ((const struct redis_reply_v1 *)r)->integer
			    : ((const redisReply *)r)->integer;
}

/*
 * hiredis writes with write(2): a server that went away raises SIGPIPE,
 * which would kill the application.  Keep it blocked on this thread around
 * each call and discard one that the call raised.
 */
struct sigpipe_guard {
	sigset_t old;
	bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE);
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
	static const struct timespec zero;
	sigset_t set, pending;
	int saved = errno;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigpending(&pending);
	if (!g->was_pending && sigismember(&pending, SIGPIPE))
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	errno = saved;
}

/*
 * The errno behind a hiredis failure.  REDIS_ERR_IO keeps it in errstr as
 * strerror text; errno itself usually survives, but check it against the
 * text rather than trust it.
 */
static int ctx_errno(const redisContext *c, int saved_errno)
{
	char buf[128];
	int e;

	if (!c)
		return -ENOMEM;
	switch (c->err) {
	case REDIS_ERR_IO:
		if (saved_errno > 0 &&
		    !strcmp(strerror_r(saved_errno, buf, sizeof(buf)), c->errstr))
			e = saved_errno;
		else
			for (e = 1; e < 200; e++)
				if (!strcmp(strerror_r(e, buf, sizeof(buf)), c->errstr))
					break;
		if (e >= 200)
			return -EIO;
		/* blocking socket, SO_RCVTIMEO expired */
		return e == EAGAIN ? -ETIMEDOUT : -e;
	case REDIS_ERR_EOF:
		return -ECONNRESET;
	case REDIS_ERR_PROTOCOL:
		return -EPROTO;
	case REDIS_ERR_OOM:
		return -ENOMEM;
	case REDIS_ERR_OTHER:	/* connect: e.g. the name does not resolve */
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
}

/*
 * The store refused us (our credentials, the file they are in, or the ACL
 * user's rights): one warning per process, naming the store and the
 * reason, for every handle and every try would say it again; debug after.
 * A store that accepts us again re-arms it.
 */
static bool auth_warned;	/* atomic */

static void redis_failed(struct shiftu_kv *kv, const char *what, int err,
			 const char *detail);

void __attribute__((format(printf, 2, 3)))
shiftu_auth_refused(struct shiftu_kv *kv, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!__atomic_exchange_n(&auth_warned, true, __ATOMIC_RELAXED))
		shiftu_warn("store %s: %s", kv->desc, line);
	else
		shiftu_dbg("store %s: %s", kv->desc, line);
	kv->failing = true;
}

static void auth_accepted(struct shiftu_kv *kv)
{
	if (__atomic_exchange_n(&auth_warned, false, __ATOMIC_RELAXED))
		shiftu_info("store %s: accepted as user %s", kv->desc,
			    kv->auth.set ? kv->auth.user : SHIFT_AUTH_DEFAULT_USER);
}

/*
 * A command the server refused: -EACCES for a refusal of us (NOAUTH: no
 * or no longer valid credentials; NOPERM: the ACL user may not do it),
 * logged by shiftu_auth_refused(); -EIO for anything else (OOM, READONLY...),
 * logged as a failure.
 */
static int redis_refused(struct shiftu_kv *kv, const char *what, const char *msg)
{
	if (!strncmp(msg, "NOAUTH", 6)) {
		shiftu_auth_refused(kv, "%s refused: %s%s", what, msg, kv->auth.set ? "" :
				    " (no credentials given: redis://USER:PASSWORD@... or SHIFTU_STORE_AUTH_FILE)");
		return -EACCES;
	}
	if (!strncmp(msg, "NOPERM", 6)) {
		shiftu_auth_refused(kv, "%s refused to user %s: %s", what,
				    kv->auth.set ? kv->auth.user : SHIFT_AUTH_DEFAULT_USER, msg);
		return -EACCES;
	}
	redis_failed(kv, what, -EIO, msg);
	return -EIO;
}

/*
 * Log a failure: warn at the first of a run, debug for the rest.  A
 * timeout is a server slow to answer, not one gone, until it has not
 * answered for SHIFTU_KV_SLOW_MS: on a host whose CPUs the application's
 * pollers keep busy, Redis may take a second or two to answer.  The
 * caller's step is tried again at the next pass either way; such a call
 * says so at info, and only a server silent for SHIFTU_KV_SLOW_MS, or one
 * that refuses or drops the connection, warns.
 */
static void redis_failed(struct shiftu_kv *kv, const char *what, int err,
			 const char *detail)
{
	uint64_t now = shiftu_mono_ns();

	if (!kv->silent_ns)
		kv->silent_ns = now;
	if (err == -ETIMEDOUT && !kv->failing &&
	    now - kv->silent_ns < SHIFTU_KV_SLOW_MS * 1000000ULL) {
		shiftu_info("store %s: %s: %s (slow: no answer for %llu ms)", kv->desc,
			    what, strerror(-err),
			    (unsigned long long)((now - kv->silent_ns) / 1000000));
		return;
	}
	if (!kv->failing)
		shiftu_warn("store %s: %s: %s", kv->desc, what,
			    detail ? detail : strerror(-err));
	else
		shiftu_dbg("store %s: %s: %s", kv->desc, what,
			   detail ? detail : strerror(-err));
	kv->failing = true;
}

/*
 * A command failed on a connection that is then replaced and the command
 * sent again: not a failure of the call yet.  A server slow to answer (a
 * busy host: its answer came after SHIFTU_KV_TIMEOUT_MS) usually answers
 * on the new connection; only a call that fails as a whole warns.
 */
static void redis_retrying(struct shiftu_kv *kv, const char *what, int err)
{
	if (!kv->silent_ns)
		kv->silent_ns = shiftu_mono_ns();
	shiftu_info("store %s: %s: %s: trying again on a new connection", kv->desc, what,
		    strerror(-err));
}

/* The server's recent pace: its longest answer, halved each second since. */
static uint64_t kv_pace(const struct shiftu_kv *kv, uint64_t now)
{
	uint64_t s = (now - kv->lat_at_ns) / 1000000000ULL;

	return s >= 64 ? 0 : kv->lat_ns >> s;
}

/* A command (or a batch) answered @ns after it was sent. */
static void kv_answered(struct shiftu_kv *kv, uint64_t ns)
{
	uint64_t now = shiftu_mono_ns();

	if (ns >= kv_pace(kv, now)) {
		kv->lat_ns = ns;
		kv->lat_at_ns = now;
	}
}

/*
 * The read timeout for the next command: SHIFTU_KV_TIMEOUT_MS, or three
 * times the server's recent pace when it has been answering that slowly
 * (a busy host's Redis keeps its pace, and a command that times out is
 * sent again on a new connection, where it waits behind the first one),
 * SHIFTU_KV_TIMEOUT_MAX_MS at most.  A server that stops answering after
 * answering quickly costs SHIFTU_KV_TIMEOUT_MS a try, as ever.  A
 * failure to set it leaves the one set.  The test build's
 * SHIFTU_TEST_KV_TIMEOUT_MS is then both bounds (testbuild.h).
 */
static uint64_t kv_least_ms(void)
{
	return shiftu_test_kv_timeout_ms() ?: SHIFTU_KV_TIMEOUT_MS;
}

static void kv_set_timeout(struct shiftu_kv *kv)
{
	uint64_t ms = 3 * kv_pace(kv, shiftu_mono_ns()) / 1000000;
	uint64_t most = shiftu_test_kv_timeout_ms() ?: SHIFTU_KV_TIMEOUT_MAX_MS;
	struct timeval tv;

	if (ms < kv_least_ms())
		ms = kv_least_ms();
	if (ms > most)
		ms = most;
	if (ms == kv->rcv_ms)
		return;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if (redis_lib.set_timeout(kv->ctx, tv) == REDIS_OK) {
		shiftu_dbg("store %s: commands wait %llu ms for an answer", kv->desc,
			   (unsigned long long)ms);
		kv->rcv_ms = ms;
	}
}

void shiftu_redis_drop(struct shiftu_kv *kv)
{
	if (kv->ctx)
		redis_lib.free_ctx(kv->ctx);
	kv->ctx = NULL;
}

/*
 * AUTH USER PASSWORD (Redis 6+ ACL) on the new connection @c, before it
 * carries anything: every connection, the reconnects too, since the
 * server forgets who a connection was when it closes.  0, -EACCES (the
 * server said no: WRONGPASS, or an error of a server without ACLs), or the
 * transport's -errno.  The password is never logged.
 */
static int redis_auth(struct shiftu_kv *kv, redisContext *c)
{
	const char *argv[] = { "AUTH", kv->auth.user, kv->auth.pass };
	size_t len;
	void *r;
	int err;

	errno = 0;
	r = redis_lib.command_argv(c, 3, argv, NULL);
	if (!r) {
		err = ctx_errno(c, errno);
		redis_failed(kv, "AUTH", err, NULL);
		return err;
	}
	if (reply_type(r) == REDIS_REPLY_ERROR) {
		shiftu_auth_refused(kv, "AUTH as user %s refused: %s", kv->auth.user,
				    reply_str(r, &len));
		redis_lib.free_reply(r);
		return -EACCES;
	}
	redis_lib.free_reply(r);
	auth_accepted(kv);
	return 0;
}

static int redis_connect(struct shiftu_kv *kv)
{
	const struct timeval tv = { .tv_sec = kv_least_ms() / 1000,
				    .tv_usec = (kv_least_ms() % 1000) * 1000 };
	redisContext *c;
	int err;

	errno = 0;
	c = kv->port ? redis_lib.connect_tcp(kv->host, kv->port, tv)
		     : redis_lib.connect_unix(kv->host, tv);
	if (!c || c->err) {
		err = ctx_errno(c, errno);
		redis_failed(kv, "connect", err, c && c->err == REDIS_ERR_OTHER ?
			     c->errstr : NULL);
		if (c)
			redis_lib.free_ctx(c);
		return err;
	}
	if (redis_lib.set_timeout(c, tv) != REDIS_OK) {
		err = ctx_errno(c, errno);
		redis_failed(kv, "set timeout", err, NULL);
		redis_lib.free_ctx(c);
		return err;
	}
	if (kv->auth.set) {
		err = redis_auth(kv, c);
		if (err) {
			redis_lib.free_ctx(c);
			return err;
		}
	}
	kv->ctx = c;
	kv->rcv_ms = kv_least_ms();
	return 0;
}

/*
 * One command, on the connection or a new one; a connection that fails
 * under the command is dropped and replaced once (SET, GET and DEL may be
 * repeated).  Returns the reply (the caller frees it), or -errno.
 */
static int redis_cmd(struct shiftu_kv *kv, int argc, const char **argv,
		     void **reply)
{
	struct sigpipe_guard g;
	bool retried = false;
	uint64_t t0 = shiftu_mono_ns(), t_try;
	int err;
	void *r;

	sigpipe_block(&g);
	for (;;) {
		if (!kv->ctx) {
			shiftu_dbg("store %s: reconnecting", kv->desc);
			err = redis_connect(kv);
			if (err)
				goto out;
			retried = true;	/* a fresh connection is not retried */
		}
		kv_set_timeout(kv);
		t_try = shiftu_mono_ns();
		errno = 0;
		r = redis_lib.command_argv(kv->ctx, argc, argv, NULL);
		if (r) {
			kv_answered(kv, shiftu_mono_ns() - t_try);
			break;
		}
		err = ctx_errno(kv->ctx, errno);
		shiftu_redis_drop(kv);
		if (retried) {
			redis_failed(kv, argv[0], err, NULL);
			goto out;
		}
		redis_retrying(kv, argv[0], err);
		retried = true;
	}
	if (reply_type(r) == REDIS_REPLY_ERROR) {
		size_t len;

		/* the server refused (NOAUTH, OOM, READONLY...): the
		 * connection itself is fine */
		err = redis_refused(kv, argv[0], reply_str(r, &len));
		redis_lib.free_reply(r);
		goto out;
	}
	if (kv->failing)
		shiftu_info("store %s: working again", kv->desc);
	kv->failing = false;
	kv->silent_ns = 0;
	*reply = r;
	err = 0;
out:
	if (shiftu_mono_ns() - t0 > 50000000ULL)
		shiftu_dbg("store %s: %s %s took %llu ms: %s", kv->desc, argv[0],
			   argc > 1 ? argv[1] : "", (unsigned long long)((shiftu_mono_ns() - t0) / 1000000),
			   err ? strerror(-err) : "ok");
	sigpipe_restore(&g);
	return err;
}

int shiftu_redis_open(struct shiftu_kv *kv, const struct shiftu_store *cfg)
{
	struct sigpipe_guard g;
	int err;

	pthread_once(&redis_lib_once, redis_lib_load);
	if (redis_lib_err)
		return redis_lib_err;
	snprintf(kv->host, sizeof(kv->host), "%s", cfg->host);
	if (cfg->kind == SHIFTU_STORE_REDIS) {
		kv->port = cfg->port;
		snprintf(kv->desc, sizeof(kv->desc),
			 strchr(cfg->host, ':') ? "redis://[%s]:%u" : "redis://%s:%u",
			 cfg->host, (unsigned int)cfg->port);
	} else {
		kv->port = 0;
		snprintf(kv->desc, sizeof(kv->desc), "unix:%s", cfg->host);
	}
	if (cfg->auth.set) {
		kv->auth = cfg->auth;
	} else if (cfg->auth_file[0]) {
		/* read at each open: a file fixed, or rotated, is taken at the
		 * next try */
		char why[192];

		err = shift_auth_read_file(cfg->auth_file, &kv->auth, why, sizeof(why));
		if (err) {
			shiftu_auth_refused(kv, "credentials file %s: %s", cfg->auth_file, why);
			return -EACCES;
		}
	}
	sigpipe_block(&g);
	err = redis_connect(kv);
	sigpipe_restore(&g);
	return err;
}

int shiftu_redis_put(struct shiftu_kv *kv, const char *key, const char *val)
{
	char sk[STORED_KEY_LEN];
	const char *argv[] = { "SET", sk, val };
	void *r;
	int err;

	stored_key(key, sk);
	err = redis_cmd(kv, 3, argv, &r);
	if (err)
		return err;
	redis_lib.free_reply(r);
	return 0;
}

int shiftu_redis_get(struct shiftu_kv *kv, const char *key, char *val, size_t len)
{
	char sk[STORED_KEY_LEN];
	const char *argv[] = { "GET", sk };
	const char *s;
	size_t n;
	void *r;
	int err;

	stored_key(key, sk);
	err = redis_cmd(kv, 2, argv, &r);
	if (err)
		return err;
	if (reply_type(r) == REDIS_REPLY_NIL) {
		err = -ENOENT;
	} else if (reply_type(r) == REDIS_REPLY_STRING) {
		s = reply_str(r, &n);
		err = memchr(s, '\0', n) ? -EBADMSG : copy_out(s, n, val, len);
	} else {
		err = -EBADMSG;
	}
	redis_lib.free_reply(r);
	return err;
}

int shiftu_redis_del(struct shiftu_kv *kv, const char *key)
{
	char sk[STORED_KEY_LEN];
	const char *argv[] = { "DEL", sk };
	void *r;
	int err;

	stored_key(key, sk);
	err = redis_cmd(kv, 2, argv, &r);
	if (err)
		return err;
	if (reply_type(r) != REDIS_REPLY_INTEGER)
		err = -EBADMSG;
	else if (!reply_int(r))
		err = -ENOENT;
	redis_lib.free_reply(r);
	return err;
}

/* A GET's reply into its request (shiftu_redis_get()'s rules). */
static int get_reply_val(const void *r, char *val, size_t len)
{
	const char *s;
	size_t n;

	if (reply_type(r) == REDIS_REPLY_NIL)
		return -ENOENT;
	if (reply_type(r) != REDIS_REPLY_STRING)
		return -EBADMSG;
	s = reply_str(r, &n);
	return memchr(s, '\0', n) ? -EBADMSG : copy_out(s, n, val, len);
}

static const char *op_cmd(enum shiftu_kv_op op)
{
	return op == SHIFTU_KV_PUT ? "SET" : op == SHIFTU_KV_DEL ? "DEL" : "GET";
}

/*
 * Send the batch and read its replies on the connection as it is.
 * Returns 0 or the transport's -errno (the connection is then unusable).
 */
static int redis_pipeline(struct shiftu_kv *kv, struct shiftu_kv_req *reqs, unsigned int n)
{
	char sk[STORED_KEY_LEN];
	const char *argv[3];
	unsigned int i;
	size_t len;
	void *r;

	for (i = 0; i < n; i++) {
		stored_key(reqs[i].key, sk);
		argv[0] = op_cmd(reqs[i].op);
		argv[1] = sk;
		argv[2] = reqs[i].val;
		/* copies the arguments into the output buffer */
		if (redis_lib.append_argv(kv->ctx, reqs[i].op == SHIFTU_KV_PUT ? 3 : 2,
					  argv, NULL) != REDIS_OK)
			return ctx_errno(kv->ctx, errno);
	}
	for (i = 0; i < n; i++) {
		errno = 0;
		/* the first call writes the whole buffer out */
		if (redis_lib.get_reply(kv->ctx, &r) != REDIS_OK || !r)
			return ctx_errno(kv->ctx, errno);
		if (reply_type(r) == REDIS_REPLY_ERROR)
			reqs[i].ret = redis_refused(kv, op_cmd(reqs[i].op), reply_str(r, &len));
		else if (reqs[i].op == SHIFTU_KV_GET)
			reqs[i].ret = get_reply_val(r, reqs[i].val, reqs[i].len);
		else if (reqs[i].op == SHIFTU_KV_DEL)
			reqs[i].ret = reply_type(r) != REDIS_REPLY_INTEGER ? -EBADMSG :
				      reply_int(r) ? 0 : -ENOENT;
		else
			reqs[i].ret = 0;
		redis_lib.free_reply(r);
	}
	return 0;
}

int shiftu_redis_batch(struct shiftu_kv *kv, struct shiftu_kv_req *reqs, unsigned int n)
{
	struct sigpipe_guard g;
	bool retried = false, refused = false;
	uint64_t t0 = shiftu_mono_ns(), t_try;
	unsigned int i;
	int err;

	sigpipe_block(&g);
	for (;;) {
		if (!kv->ctx) {
			shiftu_dbg("store %s: reconnecting", kv->desc);
			err = redis_connect(kv);
			if (err)
				goto out;
			retried = true;	/* a fresh connection is not retried */
		}
		kv_set_timeout(kv);
		t_try = shiftu_mono_ns();
		errno = 0;
		err = redis_pipeline(kv, reqs, n);
		if (!err) {
			kv_answered(kv, shiftu_mono_ns() - t_try);
			break;
		}
		shiftu_redis_drop(kv);
		if (retried) {
			redis_failed(kv, "pipeline", err, NULL);
			goto out;
		}
		redis_retrying(kv, "pipeline", err);
		retried = true;
	}
	for (i = 0; i < n; i++)
		refused |= reqs[i].ret == -EACCES || reqs[i].ret == -EIO;
	if (kv->failing && !refused)
		shiftu_info("store %s: working again", kv->desc);
	kv->failing = refused;
	kv->silent_ns = 0;
out:
	if (err)
		for (i = 0; i < n; i++)
			reqs[i].ret = err;
	if (shiftu_mono_ns() - t0 > 50000000ULL)
		shiftu_dbg("store %s: %u requests in one batch took %llu ms: %s", kv->desc, n,
			   (unsigned long long)((shiftu_mono_ns() - t0) / 1000000),
			   err ? strerror(-err) : "ok");
	sigpipe_restore(&g);
	return err;
}
