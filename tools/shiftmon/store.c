// SPDX-License-Identifier: GPL-2.0
/*
 * store.c: the cluster store (Redis, through hiredis' synchronous API):
 * the URL, the port record format, a command connection and a subscriber
 * connection.  The layout of the store is documented in store.h.
 *
 * Every call that fails closes both connections and says why in s->err;
 * the caller (the agent) decides when to try again.  Both connections
 * have a receive timeout, so a store that hangs costs a bounded wait, never
 * the agent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "shiftmon.h"
#include "store.h"

#define SM_STORE_TIMEOUT_MS	1000

/* ---- record ---- */

/* Names as names.c has them: the store speaks the dump's vocabulary. */
static const char *known_name(const struct sm_names *t, unsigned int v,
			      const char *dflt)
{
	return v < t->n && t->names[v] ? t->names[v] : dflt;
}

const char *sm_rec_state_name(uint8_t state)
{
	if (state == SM_REC_REMOVED)
		return "REMOVED";
	return known_name(&sm_port_state_names, state, "NOP");
}

const char *sm_rec_link_name(uint8_t link)
{
	return known_name(&sm_link_names, link, "UNSPEC");
}

int sm_rec_format(const struct sm_rec *r, char *buf, size_t len)
{
	char gids[SM_REC_MAX_GIDS * (INET6_ADDRSTRLEN + 1) + 2] = "";
	size_t off = 0;
	unsigned int i;
	int n;

	for (i = 0; i < r->ngid && i < SM_REC_MAX_GIDS; i++) {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, r->gid[i], a, sizeof(a));
		off += snprintf(gids + off, sizeof(gids) - off, "%s%s",
				i ? "," : "", a);
	}
	n = snprintf(buf, len, "%s\t%s\t%s\t%s\t%" PRIu64 "\t%" PRIu64
		     "\t%016" PRIx64 "\t%" PRIu64,
		     sm_rec_state_name(r->state), sm_rec_link_name(r->link_layer),
		     r->netdev[0] ? r->netdev : "-", r->ngid ? gids : "-",
		     r->down_count, r->last_change_ms, r->instance, r->seq);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int parse_u64(const char *s, int base, uint64_t *v)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*v = strtoull(s, &end, base);
	return errno || *end ? -1 : 0;
}

int sm_rec_parse(const char *text, const char *port, struct sm_rec *r)
{
	char copy[SM_REC_LEN], *f[8], *save = NULL, *g;
	unsigned int n = 0;
	int v;

	memset(r, 0, sizeof(*r));
	if (strlen(port) >= sizeof(r->port) || strlen(text) >= sizeof(copy))
		return -1;
	strcpy(r->port, port);
	strcpy(copy, text);
	/* strsep, not strtok: no field may be empty, and none is skipped */
	for (g = copy; g && n < 8; n++)
		f[n] = strsep(&g, "\t");
	if (n < 8)
		return -1;	/* later versions may append fields: g != NULL */
	if (!strcmp(f[0], "REMOVED"))
		r->state = SM_REC_REMOVED;
	else if ((v = sm_value(&sm_port_state_names, f[0])) >= 0)
		r->state = v;
	else
		return -1;
	v = sm_value(&sm_link_names, f[1]);
	r->link_layer = v < 0 ? SHIFT_FT_LINK_UNSPEC : v;
	if (strcmp(f[2], "-")) {
		if (strlen(f[2]) >= sizeof(r->netdev))
			return -1;
		strcpy(r->netdev, f[2]);
	}
	if (strcmp(f[3], "-")) {
		for (g = strtok_r(f[3], ",", &save); g;
		     g = strtok_r(NULL, ",", &save)) {
			if (r->ngid == SM_REC_MAX_GIDS)
				break;
			if (inet_pton(AF_INET6, g, r->gid[r->ngid]) != 1)
				return -1;
			r->ngid++;
		}
	}
	if (parse_u64(f[4], 10, &r->down_count) ||
	    parse_u64(f[5], 10, &r->last_change_ms) ||
	    parse_u64(f[6], 16, &r->instance) || parse_u64(f[7], 10, &r->seq))
		return -1;
	return 0;
}

/* ---- connections ---- */

int sm_store_init(struct sm_store *s, const char *given)
{
	char url[sizeof(s->url)], why[128];
	const char *p, *ui, *at;
	char *colon, *end;
	long port = 6379;
	size_t uilen;

	memset(s, 0, sizeof(*s));
	if (!given || !*given)
		given = getenv(SM_STORE_ENV);
	if (!given || !*given)
		given = SM_STORE_DEFAULT;
	/* from here on, messages name the URL without its password */
	shift_auth_redact(given, s->url, sizeof(s->url));
	if (strlen(given) >= sizeof(url)) {
		snprintf(s->err, sizeof(s->err), "'%s': longer than %zu bytes", s->url,
			 sizeof(url) - 1);
		return -1;
	}
	strcpy(url, given);
	if (shift_auth_in_url(given, &ui, &uilen, &at)) {
		if (shift_auth_parse_userinfo(ui, uilen, &s->auth, why, sizeof(why))) {
			snprintf(s->err, sizeof(s->err), "'%s': %s", s->url, why);
			return -1;
		}
		/* the address alone: "redis://" or "unix://" and what follows '@' */
		snprintf(url, sizeof(url), "%.*s%s", (int)(ui - given), given, at);
	}
	if (!strncmp(url, "unix:", 5)) {
		p = url + 5;
		if (!strncmp(p, "//", 2))
			p += 2;
		if (*p != '/' || strlen(p) >= 108) {
			snprintf(s->err, sizeof(s->err),
				 "'%s': expected unix:/PATH", s->url);
			goto wipe;
		}
		snprintf(s->addr, sizeof(s->addr), "%s", p);
		s->port = 0;
		return 0;
	}
	if (strncmp(url, "redis://", 8) || !url[8]) {
		snprintf(s->err, sizeof(s->err),
			 "'%s': expected redis://[USER:PASSWORD@]HOST[:PORT] or unix:/PATH",
			 s->url);
		goto wipe;
	}
	snprintf(s->addr, sizeof(s->addr), "%s", url + 8);
	/* a trailing "/" or "/DB" is not ours: one database, number 0 */
	if ((end = strchr(s->addr, '/')))
		*end = '\0';
	if (s->addr[0] == '[') {	/* [v6addr]:port */
		end = strchr(s->addr, ']');
		if (!end) {
			snprintf(s->err, sizeof(s->err), "'%s': unterminated '['", s->url);
			goto wipe;
		}
		*end = '\0';
		if (end[1] == ':') {
			port = strtol(end + 2, &colon, 10);
			if (*colon || port < 1 || port > 65535)
				goto bad_port;
		} else if (end[1]) {
			goto bad_port;
		}
		memmove(s->addr, s->addr + 1, strlen(s->addr + 1) + 1);
	} else if ((colon = strrchr(s->addr, ':'))) {
		*colon = '\0';
		port = strtol(colon + 1, &end, 10);
		if (*end || port < 1 || port > 65535)
			goto bad_port;
	}
	if (!s->addr[0]) {
		snprintf(s->err, sizeof(s->err), "'%s': no host", s->url);
		goto wipe;
	}
	s->port = port;
	return 0;
bad_port:
	snprintf(s->err, sizeof(s->err), "'%s': invalid port", s->url);
wipe:
	shift_auth_clear(&s->auth);
	return -1;
}

int sm_store_auth_file(struct sm_store *s, const char *path)
{
	char why[160];

	if (!path || !*path)
		path = getenv(SM_STORE_AUTH_ENV);
	if (!path || !*path || s->auth.set)
		return 0;
	if (shift_auth_read_file(path, &s->auth, why, sizeof(why))) {
		snprintf(s->err, sizeof(s->err), "credentials file %s: %s", path, why);
		return -1;
	}
	return 0;
}

/*
 * AUTH USER PASSWORD (Redis 6+ ACL) on a new connection, before anything
 * else: each connection, the reconnects too.  0, or -1 with s->err (never
 * the password).
 */
static int auth(struct sm_store *s, redisContext *c)
{
	const char *argv[] = { "AUTH", s->auth.user, s->auth.pass };
	redisReply *r;

	r = redisCommandArgv(c, 3, argv, NULL);
	if (!r) {
		snprintf(s->err, sizeof(s->err), "AUTH: %s",
			 c->err == REDIS_ERR_EOF ? "connection closed by the server" : c->errstr);
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(s->err, sizeof(s->err), "AUTH as user %s refused: %s",
			 s->auth.user, r->str);
		freeReplyObject(r);
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

static redisContext *open_one(struct sm_store *s)
{
	struct timeval tv = { .tv_sec = SM_STORE_TIMEOUT_MS / 1000,
			      .tv_usec = (SM_STORE_TIMEOUT_MS % 1000) * 1000 };
	redisContext *c;

	c = s->port ? redisConnectWithTimeout(s->addr, s->port, tv)
		    : redisConnectUnixWithTimeout(s->addr, tv);
	if (!c) {
		snprintf(s->err, sizeof(s->err), "%s", strerror(ENOMEM));
		return NULL;
	}
	if (c->err) {
		snprintf(s->err, sizeof(s->err), "%s", c->errstr);
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(s->err, sizeof(s->err), "set timeout: %s", c->errstr);
		redisFree(c);
		return NULL;
	}
	if (s->auth.set && auth(s, c)) {
		redisFree(c);
		return NULL;
	}
	return c;
}

/* Closes the connections; the credentials stay, for the next connect. */
void sm_store_close(struct sm_store *s)
{
	if (s->cmd)
		redisFree(s->cmd);
	if (s->sub)
		redisFree(s->sub);
	s->cmd = s->sub = NULL;
}

static void lost(struct sm_store *s, redisContext *c, const char *what)
{
	if (c && c->err)
		snprintf(s->err, sizeof(s->err), "%s: %s", what,
			 c->err == REDIS_ERR_EOF ? "connection closed by the server"
						 : c->errstr);
	else
		snprintf(s->err, sizeof(s->err), "%s: %s", what, strerror(EIO));
	sm_store_close(s);
}

int sm_store_connect(struct sm_store *s, bool subscribe)
{
	redisReply *r;

	sm_store_close(s);
	s->cmd = open_one(s);
	if (!s->cmd)
		return -1;
	r = redisCommand(s->cmd, "PING");
	if (!r) {
		lost(s, s->cmd, "ping");
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		/* e.g. NOAUTH, or a protected-mode refusal */
		snprintf(s->err, sizeof(s->err), "ping: %s%s", r->str,
			 !strncmp(r->str, "NOAUTH", 6) && !s->auth.set ?
			 " (no credentials given: redis://USER:PASSWORD@... or --store-auth-file)" :
			 "");
		freeReplyObject(r);
		sm_store_close(s);
		return -1;
	}
	freeReplyObject(r);
	if (!subscribe)
		return 0;
	s->sub = open_one(s);
	if (!s->sub) {
		sm_store_close(s);
		return -1;
	}
	/* the confirmation is the first reply: once read, we are subscribed */
	r = redisCommand(s->sub, "SUBSCRIBE %s", SM_STORE_CHANNEL);
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		if (r) {
			snprintf(s->err, sizeof(s->err), "subscribe: %s",
				 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
			freeReplyObject(r);
			sm_store_close(s);
		} else {
			lost(s, s->sub, "subscribe");
		}
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

redisReply *sm_store_cmd(struct sm_store *s, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	if (!s->cmd) {
		snprintf(s->err, sizeof(s->err), "not connected");
		return NULL;
	}
	va_start(ap, fmt);
	r = redisvCommand(s->cmd, fmt, ap);
	va_end(ap);
	if (!r)
		lost(s, s->cmd, "command");
	return r;
}

int sm_store_append(struct sm_store *s, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!s->cmd) {
		snprintf(s->err, sizeof(s->err), "not connected");
		return -1;
	}
	va_start(ap, fmt);
	r = redisvAppendCommand(s->cmd, fmt, ap);
	va_end(ap);
	if (r != REDIS_OK) {
		lost(s, s->cmd, "command");
		return -1;
	}
	return 0;
}

int sm_store_flush(struct sm_store *s, unsigned int n)
{
	int bad = 0;

	while (n--) {
		void *r;

		if (!s->cmd || redisGetReply(s->cmd, &r) != REDIS_OK) {
			lost(s, s->cmd, "command");
			return -1;
		}
		if (((redisReply *)r)->type == REDIS_REPLY_ERROR && !bad) {
			snprintf(s->err, sizeof(s->err), "%s", ((redisReply *)r)->str);
			bad = 1;
		}
		freeReplyObject(r);
	}
	/* a refused command (say, out of memory) is not a lost connection */
	return bad ? -2 : 0;
}

int sm_store_sub_fd(const struct sm_store *s)
{
	return s->sub ? s->sub->fd : -1;
}

int sm_store_sub_read(struct sm_store *s, bool do_read,
		      void (*fn)(const char *msg, size_t len, void *arg),
		      void *arg)
{
	void *v;

	if (!s->sub)
		return -1;
	if (do_read && redisBufferRead(s->sub) != REDIS_OK) {
		lost(s, s->sub, "subscriber");
		return -1;
	}
	for (;;) {
		redisReply *r;

		if (redisGetReplyFromReader(s->sub, &v) != REDIS_OK) {
			lost(s, s->sub, "subscriber");
			return -1;
		}
		if (!v)
			return 0;
		r = v;
		/* ["message", channel, payload]; the rest (confirmations) is not ours */
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    !strcmp(r->element[0]->str, "message") &&
		    r->element[2]->type == REDIS_REPLY_STRING)
			fn(r->element[2]->str, r->element[2]->len, arg);
		freeReplyObject(r);
	}
}
