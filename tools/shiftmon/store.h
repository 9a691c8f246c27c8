/* SPDX-License-Identifier: GPL-2.0 */
/*
 * store.h: the cluster store (Redis) of `shiftmon agent` and
 * `shiftmon show --cluster`.
 *
 * Where: --store URL, else the environment variable SHIFT_STORE, else
 * redis://127.0.0.1:6379.  URL is redis://[USER:PASSWORD@]HOST[:PORT] or
 * unix:/PATH or unix://USER:PASSWORD@/PATH (libshiftu's SHIFTU_STORE
 * forms).  Credentials (a Redis 6+ ACL user, sent as AUTH USER PASSWORD on
 * every new connection) come from the URL, else from the file that
 * --store-auth-file or SHIFT_STORE_AUTH_FILE names (userlib/storeauth.h:
 * one USER:PASSWORD line, the file only its owner's to read).  Messages
 * show the URL with its password as "***".
 *
 * What, version 1 (every name starts with "shift:v1:" so that a later
 * layout can live next to this one during an upgrade):
 *
 *	shift:v1:hosts		set: the host names that have published
 *	shift:v1:host:<host>	hash: field "<dev>/<port>" -> a port record
 *	shift:v1:events		channel: "<host>\t<dev>/<port>\t<record>"
 *
 * A port record is one line of tab-separated fields, in this order:
 *
 *	state		DOWN INIT ARMED ACTIVE ACTIVE_DEFER NOP, or REMOVED
 *			(channel only: the device went away; its field is
 *			deleted from the hash)
 *	link_layer	ETHERNET INFINIBAND UNSPEC
 *	netdev		"-" when none
 *	gids		the port's GIDs others reach it by, inet_ntop form,
 *			comma-separated, "-" when none (RoCE v2 GIDs on
 *			Ethernet, every GID on InfiniBand)
 *	down_count	transitions from ACTIVE, as the host's kernel counts
 *	last_change	Unix time in ms of the last state change
 *	instance	16 hex digits: the publishing agent's run
 *	seq		decimal: the publishing agent's CLOCK_REALTIME in
 *			microseconds, increasing per instance even when the
 *			clock stands still or steps back (recsign.h's
 *			shift_sign_seq_next()); compared with serial-number
 *			arithmetic, so that no value is a maximum that pins
 *			the port
 *	signature	with a cluster key (--store-key-file): recsign.h's
 *			token "s1/HOST/SEQ/MAC", signed as record
 *			"port:<dev>/<port>" from sender <host> with the
 *			sequence seq; absent without a key
 *
 * Readers ignore fields after the ones they know (additive changes only):
 * an agent without a key applies a signed record as an unsigned one.
 *
 * A reader without a key applies a record only if it comes from another
 * instance than the last one it applied for the port, or has a later seq.
 * A reader with a key applies only signed records whose signature is good
 * and whose signer is the host that the hash or the message names, whose
 * seq is later than the last one applied for the port whatever the
 * instance (an earlier run's records replayed are older), and at most
 * SHIFT_SIGN_FUTURE_US ahead of its own clock; it drops the others,
 * counts them and says so once per host (the agent's metrics file below).
 */
#ifndef SHIFTMON_STORE_H
#define SHIFTMON_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <shift_ft.h>

#include "storeauth.h"	/* userlib's, shared */

#define SM_STORE_ENV		"SHIFT_STORE"
#define SM_STORE_AUTH_ENV	"SHIFT_STORE_AUTH_FILE"
#define SM_STORE_DEFAULT	"redis://127.0.0.1:6379"
#define SM_STORE_HOSTS		"shift:v1:hosts"
#define SM_STORE_HOST_FMT	"shift:v1:host:%s"
#define SM_STORE_CHANNEL	"shift:v1:events"
#define SM_STORE_KEY_ENV	"SHIFT_STORE_KEY_FILE"
#define SM_HOST_KEY_ENV		"SHIFT_HOST_KEY_FILE"
#define SM_HOSTS_FILE_ENV	"SHIFT_HOSTS_FILE"

/*
 * The agent's counters, for `shiftmon metrics`: a file the agent rewrites
 * (a new file renamed over the old) when they change, at most once a
 * second, and at its exit; one "name value" line each.
 * $SHIFT_AGENT_STATS overrides the path, for both.
 */
#define SM_AGENT_STATS_ENV	"SHIFT_AGENT_STATS"
#define SM_AGENT_STATS		"/run/shiftmon/agent.stats"

#define SM_REC_MAX_GIDS		8
#define SM_REC_PORT_LEN		(SHIFT_FT_DEV_NAME_LEN + 8)	/* "dev/255" */
/* a record with eight GIDs and its signature (recsign.h) */
#define SM_REC_LEN		1024
#define SM_HOST_LEN		256

/* state of a record that announces a port's removal */
#define SM_REC_REMOVED		0xff

struct sm_rec {
	char port[SM_REC_PORT_LEN];	/* "<dev>/<port>" */
	uint8_t state;			/* enum shift_ft_port_state, SM_REC_REMOVED */
	uint8_t link_layer;		/* enum shift_ft_link_layer */
	char netdev[SHIFT_FT_NETDEV_NAME_LEN];	/* "" when none */
	unsigned int ngid;
	uint8_t gid[SM_REC_MAX_GIDS][SHIFT_FT_GID_LEN];
	uint64_t down_count;
	uint64_t last_change_ms;	/* Unix time */
	uint64_t instance;
	uint64_t seq;
};

/* Record text (no port) into @buf; -1 if it does not fit. */
int sm_rec_format(const struct sm_rec *r, char *buf, size_t len);
/* Parse record text; @port is copied in.  -1 if malformed. */
int sm_rec_parse(const char *text, const char *port, struct sm_rec *r);
const char *sm_rec_state_name(uint8_t state);
const char *sm_rec_link_name(uint8_t link);
/* The store treats ACTIVE and ACTIVE_DEFER as up, everything else down. */
static inline bool sm_rec_up(const struct sm_rec *r)
{
	return r->state == SHIFT_FT_PORT_ACTIVE ||
	       r->state == SHIFT_FT_PORT_ACTIVE_DEFER;
}

/* ---- connections ---- */

struct redisContext;
struct redisReply;

struct sm_store {
	char url[256];			/* as configured, but for the
					 * password: for messages */
	struct shift_auth auth;		/* sent on each new connection */
	char addr[256];			/* host name or socket path */
	int port;			/* 0: unix socket */
	struct redisContext *cmd;	/* commands */
	struct redisContext *sub;	/* subscribed to SM_STORE_CHANNEL */
	char err[512];			/* why the last call failed */
};

/*
 * Resolve @url (NULL: $SHIFT_STORE, then the default).  -1 with a message
 * in s->err on a malformed URL.
 */
int sm_store_init(struct sm_store *s, const char *url);
/*
 * Take the credentials from the file @path (NULL: $SHIFT_STORE_AUTH_FILE;
 * neither: none), unless the URL had some (they win).  0, or -1 with
 * s->err naming the file and what is wrong with it (its mode or owner, its
 * content); the password is never in a message.
 */
int sm_store_auth_file(struct sm_store *s, const char *path);
/*
 * Connect the command connection, and the subscriber too if @subscribe
 * (returning once the subscription is confirmed, so that nothing published
 * after this call is missed).  0, or -1 with s->err and both closed.
 */
int sm_store_connect(struct sm_store *s, bool subscribe);
void sm_store_close(struct sm_store *s);
static inline bool sm_store_connected(const struct sm_store *s)
{
	return s->cmd != NULL;
}

/*
 * One command (redisCommand's format).  Returns the reply (free with
 * freeReplyObject), or NULL with s->err set: the connection is then
 * closed and the caller reconnects later.  An error reply from the server
 * is returned as a reply, not as a failure.
 */
struct redisReply *sm_store_cmd(struct sm_store *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Pipelining: queue with sm_store_append, then sm_store_flush(n) reads
 * the n replies; -1 (closed, s->err) if the connection failed. */
int sm_store_append(struct sm_store *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sm_store_flush(struct sm_store *s, unsigned int n);

/* The subscriber's descriptor, -1 when not connected. */
int sm_store_sub_fd(const struct sm_store *s);
/*
 * Read what the subscriber has (call on POLLIN, and once after connecting:
 * messages may already be buffered) and call @fn for each message on the
 * channel.  -1 (closed, s->err) if the connection was lost.
 */
int sm_store_sub_read(struct sm_store *s, bool do_read,
		      void (*fn)(const char *msg, size_t len, void *arg),
		      void *arg);

#endif /* SHIFTMON_STORE_H */
