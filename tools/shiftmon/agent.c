// SPDX-License-Identifier: GPL-2.0
/*
 * agent.c: `shiftmon agent [--store URL] [--host NAME] [-v]`, the host
 * agent.  It runs in the foreground until SIGINT or SIGTERM, logging one
 * line per action on stderr, and needs CAP_NET_ADMIN (path reports are an
 * administrative change).
 *
 * What it does.  It makes this host's port table known to the cluster, and
 * the cluster's to this host's path table, so that when a NIC fails on host
 * B every path of host A towards that NIC is DOWN in A's table and page
 * before any of A's queue pairs time out.
 *
 *  - Publish.  It listens to the module's "events" group.  When a local
 *    port's record (state, link layer, netdev, GIDs; store.h) changes, it
 *    writes the record to its hash shift:v1:host:<host> and publishes it on
 *    shift:v1:events.  Per port at most one publication per 200 ms: changes
 *    inside the window are coalesced and the latest record goes out when the
 *    window ends, so a flapping port costs the store five messages a second
 *    and the final state is never lost.  A port whose device goes away is
 *    published as REMOVED and its field deleted.
 *
 *  - Apply.  For another host's port that is not ACTIVE it reports DOWN,
 *    source AGENT, for the path from every local port of the same link
 *    layer to every GID of that port.  When the port is ACTIVE again, or
 *    gone (REMOVED), it deletes those rows (PATH_DEL with source AGENT:
 *    only rows whose last report is still an agent's, never an
 *    application's that came later), so that the rows it holds are those
 *    of remote ports down now, not of every port that was ever down.  The
 *    rows it holds towards one remote host stop at --host-rows (default
 *    128): beyond, DOWN is not recorded, logged once per host until it is
 *    under again.  When the table is full (-ENOSPC: max_paths, of which
 *    the agents may not take reserved_paths) it logs once per remote port
 *    and tries that port again only at its next change or resync, never in
 *    a loop.
 *
 *  - Bounded memory.  One entry per remote port heard of (its last record,
 *    for the ordering below), at most --remote-ports (default 16384, 528
 *    bytes each on x86-64: 8.3 MiB).  A REMOVED port's entry goes with its
 *    rows, and so does, at a resync, the entry of a port that its host's
 *    hash no longer has (removed while the agent was away from the store).
 *    When the entries are all taken, a new port takes the entry heard from
 *    the longest ago among those that hold no row; when every entry holds
 *    rows, the new port's record is dropped (logged once until an entry is
 *    free again).  An entry forgotten so loses its sequence number: a stale
 *    record of that port still in flight would be applied as new.
 *
 *  - Exactly once, in order.  Records carry the publishing agent's
 *    instance (random per run) and a sequence number increasing per
 *    instance.  A record for (host, port) is applied only if it comes from
 *    another instance than the last one applied for that port, or has a
 *    higher sequence number; and the kernel is asked only when the state a
 *    port implies (UP or DOWN, and its GIDs) differs from what was last
 *    applied.  Records from this host (by name) are never applied.
 *
 *  - Resync.  On connecting, and after every reconnect (the store
 *    restarted, or was unreachable), it subscribes first, then republishes
 *    its whole state (its hash rewritten in one MULTI, every port published
 *    again), then reads every other host's hash and applies it.  Subscribing
 *    first leaves no gap; the sequence numbers drop what the hash and the
 *    channel both carry.  A late agent therefore catches up, and a store
 *    that lost everything is repopulated by the agents.  While the store is
 *    away the agent keeps following the kernel and retries with a backoff
 *    from 100 ms to 5 s.
 *
 *  - The module unloaded and loaded again: the path table is empty, so the
 *    agent rereads its ports and applies every remote port again.
 */
#define _GNU_SOURCE		/* ppoll */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>

#include <hiredis/hiredis.h>

#include "recsign.h"	/* userlib's, shared */
#include "shiftmon.h"
#include "store.h"

#define AG_RATE_NS		(200 * 1000000ULL)	/* per port publication */
#define AG_BACKOFF_MIN_MS	100
#define AG_BACKOFF_MAX_MS	5000
#define AG_HOST_ROWS		128	/* --host-rows default */
#define AG_REMOTE_PORTS		16384	/* --remote-ports default */
#define AG_STATS_NS		1000000000ULL	/* the stats file, at most this often */
#define AG_DROP_SOURCES		64	/* hosts whose drops are named, at most */

/* Why a record of another host was dropped (with a key): the metrics' reasons. */
enum ag_drop {
	AG_DROP_UNSIGNED,		/* no signature */
	AG_DROP_BAD_SIGNATURE,		/* one that does not check under our key */
	AG_DROP_WRONG_SENDER,		/* good, but another host's: not its own port */
	AG_DROP_FUTURE,			/* seq ahead of our clock: a pin */
	AG_DROP_UNKNOWN_SENDER,		/* host keys: a sender the hosts file lacks */
	AG_DROP_FOREIGN_GID,		/* host keys: a GID its line does not give it */

	__AG_DROP_MAX
};

static const char *const ag_drop_names[__AG_DROP_MAX] = {
	[AG_DROP_UNSIGNED] = "unsigned",
	[AG_DROP_BAD_SIGNATURE] = "bad_signature",
	[AG_DROP_WRONG_SENDER] = "wrong_sender",
	[AG_DROP_FUTURE] = "future",
	[AG_DROP_UNKNOWN_SENDER] = "unknown_sender",
	[AG_DROP_FOREIGN_GID] = "foreign_gid",
};

/* A port of this host, as the kernel last announced it. */
struct lport {
	uint32_t port_index;
	char dev[SHIFT_FT_DEV_NAME_LEN];
	uint32_t port_num;
	char field[SM_REC_PORT_LEN];	/* "<dev>/<port>" last published */
	struct sm_rec rec;		/* current record (no instance, seq) */
	uint64_t last_change_mono;	/* converts to rec.last_change_ms */
	bool gids_read;
	bool gid_foreign_logged;	/* a GID of it the hosts file does not give us */
	char published[SM_REC_LEN];	/* record text last published, "" none */
	uint64_t pub_ns;		/* when, CLOCK_MONOTONIC */
	bool pending;			/* changed since: publish when allowed */
};

/* A port of another host, as the store last told us. */
struct rport {
	char host[SM_HOST_LEN];
	struct sm_rec rec;		/* the last record accepted */
	uint8_t applied;		/* SHIFT_FT_PATH_*: UNKNOWN = never */
	bool incomplete;		/* some report failed: retry at next record */
	bool enospc_logged;
	bool cap_logged;		/* --host-rows hit for this port's host */
	unsigned int nrows;		/* paths reported DOWN: rows it holds */
	uint64_t heard_ns;		/* last record, CLOCK_MONOTONIC */
};

struct agent {
	struct sm_store st;
	char host[SM_HOST_LEN];
	uint64_t instance;
	uint64_t seq;			/* the last published (recsign.h) */
	struct shift_sign_key key;	/* --store-key-file: set, records signed */
	struct shift_sign_hosts hosts;	/* --host-key-file: set, signed by host */
	bool signing;			/* one of the two */
	bool verbose;
	struct sm_listener l;
	struct lport *lp;
	size_t nlp;
	struct rport *rp;
	size_t nrp;
	unsigned int host_rows;		/* --host-rows */
	unsigned int remote_ports;	/* --remote-ports */
	bool full_logged;		/* every entry holds rows */
	/* store connection */
	uint64_t retry_ns;
	unsigned int backoff_ms;
	bool outage_logged;
	/* once-only messages */
	bool eperm_logged;
	bool unauth_logged;		/* no key, and another host heard */
	/* records dropped, and the hosts that were named for it */
	uint64_t drops[__AG_DROP_MAX];
	char (*drop_hosts)[SM_HOST_LEN];
	unsigned int ndrop_hosts;
	bool drop_hosts_full;
	/* the stats file (store.h) */
	char stats_path[256];
	bool stats_dirty, stats_failed;
	uint64_t stats_ns;		/* last written, CLOCK_MONOTONIC */
};

static volatile sig_atomic_t ag_stop;

static void on_signal(int sig)
{
	(void)sig;
	ag_stop = 1;
}

static void alog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void alog(const char *fmt, ...)
{
	va_list ap;

	fputs("agent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *gid_str(const uint8_t *gid, char *buf, size_t len)
{
	sm_gid_short(gid, buf, len);
	return buf;
}

/* ---- the kernel: path reports ---- */

struct qx {
	bool done;
	int err;		/* -errno, 0: acked */
};

static int q_err(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct qx *x = arg;

	(void)who;
	x->err = e->error;
	x->done = true;
	return NL_STOP;
}

static int q_ack(struct nl_msg *msg, void *arg)
{
	struct qx *x = arg;

	(void)msg;
	x->done = true;
	return NL_STOP;
}

/*
 * PATH_REPORT of DOWN from @lp to @gid (@state SHIFT_FT_PATH_DOWN), or
 * PATH_DEL of that path if its last report is an agent's (@state
 * SHIFT_FT_PATH_UP: the agent forgets what it reported).  Quiet: the
 * caller decides what is worth a line (ENOENT and EBUSY on a delete are
 * the normal case).  Returns -errno.
 */
static int report(struct agent *a, const struct lport *lp, const uint8_t *gid,
		  uint8_t state)
{
	bool del = state == SHIFT_FT_PATH_UP;
	struct nl_sock *sk = a->l.nl.sk;
	struct qx x = { 0 };
	struct nl_msg *msg;
	struct nl_cb *cb;
	int r;

	if (!a->l.present)
		return -ENOENT;
	msg = nlmsg_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb ||
	    !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, a->l.nl.family, 0,
			 NLM_F_REQUEST | NLM_F_ACK,
			 del ? SHIFT_FT_CMD_PATH_DEL : SHIFT_FT_CMD_PATH_REPORT,
			 SHIFT_FT_GENL_VERSION) ||
	    nla_put_u32(msg, SHIFT_FT_A_PORT_INDEX, lp->port_index) ||
	    nla_put(msg, SHIFT_FT_A_REMOTE_GID, SHIFT_FT_GID_LEN, gid) ||
	    (!del && nla_put_u8(msg, SHIFT_FT_A_REPORT_STATE, state)) ||
	    nla_put_u8(msg, SHIFT_FT_A_REPORT_SOURCE, SHIFT_FT_SRC_AGENT)) {
		x.err = -ENOMEM;
		goto out;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, q_err, &x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, q_ack, &x);
	r = nl_send_auto(sk, msg);
	if (r < 0) {
		x.err = -EIO;
		goto out;
	}
	while (!x.done) {
		r = nl_recvmsgs(sk, cb);
		if (r < 0 && !x.done) {
			x.err = -EIO;
			break;
		}
	}
out:
	nlmsg_free(msg);
	nl_cb_put(cb);
	return x.err;
}

/* ---- applying another host's port ---- */

static bool has_gid(const struct sm_rec *r, const uint8_t *gid)
{
	unsigned int i;

	for (i = 0; i < r->ngid; i++)
		if (!memcmp(r->gid[i], gid, SHIFT_FT_GID_LEN))
			return true;
	return false;
}

static bool same_gids(const struct sm_rec *x, const struct sm_rec *y)
{
	unsigned int i;

	if (x->ngid != y->ngid)
		return false;
	for (i = 0; i < x->ngid; i++)
		if (!has_gid(y, x->gid[i]))
			return false;
	return true;
}

static uint8_t wanted(const struct sm_rec *r)
{
	return r->state != SM_REC_REMOVED && sm_rec_up(r) ? SHIFT_FT_PATH_UP
							   : SHIFT_FT_PATH_DOWN;
}

/* The rows the agent holds towards @host: its DOWN reports standing. */
static unsigned int host_rows(const struct agent *a, const char *host)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < a->nrp; i++)
		if (!strcmp(a->rp[i].host, host))
			n += a->rp[i].nrows;
	return n;
}

/* Has the --host-rows cap of @host been logged (and not lifted since)? */
static bool host_cap_logged(const struct agent *a, const char *host)
{
	size_t i;

	for (i = 0; i < a->nrp; i++)
		if (a->rp[i].cap_logged && !strcmp(a->rp[i].host, host))
			return true;
	return false;
}

/*
 * Follow @rp's state on the paths from @only (NULL: every local port of
 * the same link layer) to its GIDs: DOWN reported, within the --host-rows
 * of its host; or, when it is up, the rows of the agent's own reports
 * deleted.  Returns the number of rows reported or deleted.
 */
static unsigned int apply_paths(struct agent *a, struct rport *rp,
				const struct lport *only)
{
	uint8_t state = wanted(&rp->rec);
	bool down = state == SHIFT_FT_PATH_DOWN;
	unsigned int n = 0, room = 0, held, i;
	size_t k;
	char g[INET6_ADDRSTRLEN];

	rp->incomplete = false;
	if (!only)
		rp->nrows = 0;	/* all reported again, or all deleted */
	if (down) {
		held = host_rows(a, rp->host);
		room = held < a->host_rows ? a->host_rows - held : 0;
	}
	for (k = 0; k < a->nlp; k++) {
		const struct lport *lp = &a->lp[k];

		if ((only && lp != only) || lp->rec.link_layer != rp->rec.link_layer)
			continue;
		for (i = 0; i < rp->rec.ngid; i++) {
			int r;

			if (down && !room) {
				rp->incomplete = true;
				if (!host_cap_logged(a, rp->host))
					alog("host %s: %u path rows, the most --host-rows allows: %s DOWN not recorded from %s/%u on",
					     rp->host, a->host_rows, rp->rec.port,
					     lp->dev, lp->port_num);
				rp->cap_logged = true;
				return n;
			}
			r = report(a, lp, rp->rec.gid[i], state);
			if (!r) {
				n++;
				if (down) {
					rp->nrows++;
					room--;
				}
				if (a->verbose)
					alog("%s %s/%u -> %s", down ? "report" : "delete",
					     lp->dev, lp->port_num,
					     gid_str(rp->rec.gid[i], g, sizeof(g)));
				continue;
			}
			if (!down && (r == -ENOENT || r == -EBUSY))
				continue;	/* no row, or not ours: fine */
			rp->incomplete = true;
			if (r == -EPERM || r == -EACCES) {
				if (!a->eperm_logged)
					alog("Unable to report path: %s (the agent needs CAP_NET_ADMIN)",
					     strerror(-r));
				a->eperm_logged = true;
				return n;
			}
			if (r == -ENOSPC) {
				if (!rp->enospc_logged)
					alog("Unable to report path: %s (the path table is full, see max_paths and reserved_paths): %s %s DOWN not recorded from %s/%u on",
					     strerror(-r), rp->host, rp->rec.port,
					     lp->dev, lp->port_num);
				rp->enospc_logged = true;
				return n;	/* the next report would fail too */
			}
			alog("Unable to %s path %s/%u -> %s: %s",
			     down ? "report" : "delete", lp->dev, lp->port_num,
			     gid_str(rp->rec.gid[i], g, sizeof(g)), strerror(-r));
		}
	}
	if (!rp->incomplete) {
		rp->enospc_logged = false;
		rp->cap_logged = false;
	}
	return n;
}

/* Delete the rows of @rp's DOWN reports, as if it were up again. */
static unsigned int forget_paths(struct agent *a, struct rport *rp)
{
	struct rport up = *rp;
	unsigned int n;

	up.rec.state = SHIFT_FT_PORT_ACTIVE;
	n = apply_paths(a, &up, NULL);
	rp->nrows = 0;
	rp->cap_logged = false;
	rp->incomplete = up.incomplete;
	return n;
}

static struct rport *rport_find(struct agent *a, const char *host,
				const char *port)
{
	size_t i;

	for (i = 0; i < a->nrp; i++)
		if (!strcmp(a->rp[i].host, host) && !strcmp(a->rp[i].rec.port, port))
			return &a->rp[i];
	return NULL;
}

/*
 * A new entry: a new slot while there are fewer than --remote-ports, else
 * the entry heard from the longest ago among those that hold no row.  NULL
 * when every entry holds rows (logged once until one is free) or memory
 * is short.
 */
static struct rport *rport_new(struct agent *a, const char *host,
			       const char *port)
{
	struct rport *rp = NULL;
	size_t i;

	if (a->nrp >= a->remote_ports) {
		for (i = 0; i < a->nrp; i++)
			if (!a->rp[i].nrows &&
			    (!rp || a->rp[i].heard_ns < rp->heard_ns))
				rp = &a->rp[i];
		if (!rp) {
			if (!a->full_logged)
				alog("Unable to track %s %s: each of the %u remote port entries holds path rows (see --remote-ports)",
				     host, port, a->remote_ports);
			a->full_logged = true;
			return NULL;
		}
		if (a->verbose)
			alog("forget %s %s: the entry heard from the longest ago, for %s %s",
			     rp->host, rp->rec.port, host, port);
	} else {
		rp = realloc(a->rp, (a->nrp + 1) * sizeof(*rp));
		if (!rp) {
			alog("Unable to track %s %s: %s", host, port, strerror(ENOMEM));
			return NULL;
		}
		a->rp = rp;
		rp = &a->rp[a->nrp++];
	}
	a->full_logged = false;
	memset(rp, 0, sizeof(*rp));
	strcpy(rp->host, host);
	strcpy(rp->rec.port, port);
	rp->applied = SHIFT_FT_PATH_UNKNOWN;
	return rp;
}

/* @rp is forgotten: its slot takes the last entry. */
static void rport_drop(struct agent *a, struct rport *rp)
{
	*rp = a->rp[--a->nrp];
}

/* A record of another host's port, from the channel or a hash. */
static void accept_rec(struct agent *a, const char *host,
		       const struct sm_rec *rec, const char *via)
{
	struct rport *rp;
	uint8_t state;
	bool gids_same;
	unsigned int n;

	if (!strcmp(host, a->host))
		return;		/* our own: never applied */
	rp = rport_find(a, host, rec->port);
	if (!rp && rec->state == SM_REC_REMOVED)
		return;		/* gone before we knew it: nothing to forget */
	if (!rp)
		rp = rport_new(a, host, rec->port);
	if (!rp)
		return;
	/*
	 * Signed, the sequence alone orders (an earlier run's records, replayed,
	 * are older); unsigned, as before keys: another run's record is new.
	 */
	if (rp->applied != SHIFT_FT_PATH_UNKNOWN &&
	    (a->signing || rp->rec.instance == rec->instance) &&
	    !shift_seq_after(rec->seq, rp->rec.seq)) {
		if (a->verbose)
			alog("skip %s %s seq %" PRIu64 " (%s): already have %" PRIu64,
			     host, rec->port, rec->seq, via, rp->rec.seq);
		return;
	}
	rp->heard_ns = sm_mono_ns();
	if (rec->state == SM_REC_REMOVED) {
		/* the rows of a port that is gone go with its entry */
		n = forget_paths(a, rp);
		alog("forget %s %s REMOVED (%s, seq %" PRIu64 "): %u path%s deleted%s",
		     host, rec->port, via, rec->seq, n, n == 1 ? "" : "s",
		     rp->incomplete ? " (incomplete)" : "");
		rport_drop(a, rp);
		return;
	}
	state = wanted(rec);
	gids_same = same_gids(&rp->rec, rec);
	if (rp->applied == state && gids_same && !rp->incomplete &&
	    rp->rec.link_layer == rec->link_layer) {
		rp->rec = *rec;
		if (a->verbose)
			alog("%s %s %s seq %" PRIu64 " (%s): unchanged", host,
			     rec->port, sm_rec_state_name(rec->state), rec->seq, via);
		return;
	}
	/*
	 * GIDs the port no longer has: forget their rows (the address moved
	 * on, the NIC did not fail) before following the new set.
	 */
	if (rp->applied == SHIFT_FT_PATH_DOWN && !gids_same) {
		struct rport old = *rp;
		unsigned int i, j = 0;

		for (i = 0; i < rp->rec.ngid; i++)
			if (!has_gid(rec, rp->rec.gid[i]))
				memcpy(old.rec.gid[j++], rp->rec.gid[i], SHIFT_FT_GID_LEN);
		old.rec.ngid = j;
		if (j)
			forget_paths(a, &old);
	}
	rp->rec = *rec;
	n = apply_paths(a, rp, NULL);
	rp->applied = state;
	alog("apply %s %s %s (%s, seq %" PRIu64 "): %u path%s %s%s", host,
	     rec->port, sm_rec_state_name(rec->state), via, rec->seq, n,
	     n == 1 ? "" : "s", state == SHIFT_FT_PATH_UP ? "deleted" : "DOWN",
	     rp->incomplete ? " (incomplete)" : "");
}

/* Everything applied again: the path table was emptied (module reload). */
static void reapply_all(struct agent *a)
{
	size_t i;

	for (i = 0; i < a->nrp; i++) {
		struct rport *rp = &a->rp[i];

		if (rp->applied == SHIFT_FT_PATH_DOWN)
			apply_paths(a, rp, NULL);
	}
}

/* ---- signatures and what was dropped ---- */

/* The counters into the stats file (store.h): a new file renamed over the old. */
static void stats_write(struct agent *a, uint64_t now)
{
	char tmp[sizeof(a->stats_path) + 16], dir[sizeof(a->stats_path)], *slash;
	unsigned int i;
	FILE *f;
	int fd;

	a->stats_ns = now;
	a->stats_dirty = false;
	snprintf(dir, sizeof(dir), "%s", a->stats_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);	/* the default's /run/shiftmon; EEXIST is fine */
	}
	snprintf(tmp, sizeof(tmp), "%s.%d", a->stats_path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f)
		goto failed;
	fprintf(f, "signing %d\n", a->signing);
	for (i = 0; i < __AG_DROP_MAX; i++)
		fprintf(f, "records_dropped_%s %" PRIu64 "\n", ag_drop_names[i], a->drops[i]);
	fd = -1;
	if (fclose(f) || rename(tmp, a->stats_path)) {
		unlink(tmp);
		goto failed;
	}
	a->stats_failed = false;
	return;
failed:
	if (fd >= 0)
		close(fd);
	if (!a->stats_failed)
		alog("Unable to write %s: %s (shiftmon metrics will not show the agent's counters)",
		     a->stats_path, strerror(errno));
	a->stats_failed = true;
}

/* A record of @host dropped for @why: counted; said once per host. */
static void dropped(struct agent *a, const char *host, const char *port,
		    enum ag_drop why, const char *via, const char *detail)
{
	unsigned int i;

	a->drops[why]++;
	a->stats_dirty = true;
	for (i = 0; i < a->ndrop_hosts; i++)
		if (!strcmp(a->drop_hosts[i], host))
			break;
	if (i < a->ndrop_hosts) {
		if (a->verbose)
			alog("drop %s %s (%s): %s", host, port, via, detail);
		return;
	}
	if (i == AG_DROP_SOURCES) {
		if (!a->drop_hosts_full)
			alog("dropping records of more than %d hosts: the others are counted, not named",
			     AG_DROP_SOURCES);
		a->drop_hosts_full = true;
		return;
	}
	if (!a->drop_hosts) {
		a->drop_hosts = calloc(AG_DROP_SOURCES, sizeof(*a->drop_hosts));
		if (!a->drop_hosts)
			return;
	}
	snprintf(a->drop_hosts[a->ndrop_hosts++], SM_HOST_LEN, "%s", host);
	alog("DROPPED a record of %s %s (%s): %s; said once per host, counted in shiftmon metrics",
	     host, port, via, detail);
}

/*
 * With host keys, a host names only GIDs its line of the hosts file gives
 * it (any, if it lists none): else its root could put another host's
 * NIC down for everyone under its own good signature.  0, or -1 (dropped).
 */
static int rec_gids_own(struct agent *a, const char *host, const char *port,
			const struct sm_rec *rec, const char *via)
{
	char g[INET6_ADDRSTRLEN], why[INET6_ADDRSTRLEN + 64];
	unsigned int i;

	for (i = 0; i < rec->ngid; i++) {
		if (shift_sign_host_gid_ok(&a->hosts, host, rec->gid[i]))
			continue;
		inet_ntop(AF_INET6, rec->gid[i], g, sizeof(g));
		snprintf(why, sizeof(why), "names GID %s, which the hosts file does not give it", g);
		dropped(a, host, port, AG_DROP_FOREIGN_GID, via, why);
		return -1;
	}
	return 0;
}

/*
 * @text, the record of @host's @port as the store gave it.  Without a key,
 * taken as it is.  With one, its signature must be good and @host's own,
 * and its seq no more than SHIFT_SIGN_FUTURE_US ahead of our clock; the
 * signature is cut off.  Then parsed into @rec; with host keys, the GIDs
 * it names must be @host's by the hosts file.  0, or -1 (dropped, or
 * malformed: said).
 */
static int rec_open(struct agent *a, const char *host, const char *port, char *text,
		    struct sm_rec *rec, const char *via)
{
	char name[SM_REC_PORT_LEN + 8], who[SHIFT_SIGN_SENDER_MAX], why[128];
	uint64_t seq;
	int r;

	if (!a->signing) {
		if (!a->unauth_logged)
			alog("UNAUTHENTICATED: applying the records of other hosts (%s first) without a signature: no --store-key-file, so any client that can write shift:v1:* moves this host's traffic (Documentation/trust.rst)",
			     host);
		a->unauth_logged = true;
		goto parse;
	}
	snprintf(name, sizeof(name), "port:%s", port);
	if (a->hosts.set)
		r = shift_sign_host_check(&a->hosts, name, text, '\t', who, sizeof(who), &seq);
	else
		r = shift_sign_check(&a->key, name, text, '\t', who, sizeof(who), &seq);
	if (r == -ENOMSG) {
		dropped(a, host, port, AG_DROP_UNSIGNED, via, "not signed");
		return -1;
	}
	if (r == -ENOKEY) {
		snprintf(why, sizeof(why), "signed by %s, whom the hosts file does not list",
			 who);
		dropped(a, host, port, AG_DROP_UNKNOWN_SENDER, via, why);
		return -1;
	}
	if (r) {
		dropped(a, host, port, AG_DROP_BAD_SIGNATURE, via,
			r == -EPROTO ? "signed with a cluster key, not its host's key" :
			r == -EBADMSG ? "bad signature" : strerror(-r));
		return -1;
	}
	if (strcmp(who, host)) {
		snprintf(why, sizeof(why), "signed by %s: a host speaks for its own ports only",
			 who);
		dropped(a, host, port, AG_DROP_WRONG_SENDER, via, why);
		return -1;
	}
	if (shift_seq_after(seq, shift_sign_now_us() + SHIFT_SIGN_FUTURE_US)) {
		snprintf(why, sizeof(why), "seq %" PRIu64 " is ahead of this host's clock",
			 seq);
		dropped(a, host, port, AG_DROP_FUTURE, via, why);
		return -1;
	}
parse:
	if (sm_rec_parse(text, port, rec) || (a->signing && rec->seq != seq)) {
		alog("ignoring a malformed record of %s %s (%s)", host, port, via);
		return -1;
	}
	return a->hosts.set ? rec_gids_own(a, host, port, rec, via) : 0;
}

/*
 * Our own port's GIDs that the hosts file does not give us: the other
 * agents drop its records (rec_gids_own()).  Said once until they fit.
 */
static void own_gids_check(struct agent *a, struct lport *lp, const struct sm_rec *r)
{
	char g[INET6_ADDRSTRLEN];
	unsigned int i;

	for (i = 0; i < r->ngid; i++)
		if (!shift_sign_host_gid_ok(&a->hosts, a->host, r->gid[i]))
			break;
	if (i == r->ngid) {
		lp->gid_foreign_logged = false;
		return;
	}
	if (lp->gid_foreign_logged)
		return;
	lp->gid_foreign_logged = true;
	inet_ntop(AF_INET6, r->gid[i], g, sizeof(g));
	alog("port %s has GID %s, which the hosts file does not give %s: the other agents drop its records until its line lists it",
	     lp->field, g, a->host);
}

/*
 * @lp's record @r, as published: this run's instance, the next sequence,
 * and signed when there is a key.  -1 if it does not fit.
 */
static int rec_seal(struct agent *a, const struct lport *lp, struct sm_rec *r,
		    char *text, size_t len)
{
	char name[SM_REC_PORT_LEN + 8];

	r->instance = a->instance;
	r->seq = shift_sign_seq_next(&a->seq);
	if (sm_rec_format(r, text, len))
		return -1;
	if (!a->signing)
		return 0;
	snprintf(name, sizeof(name), "port:%s", lp->field);
	if (a->hosts.set)
		return shift_sign_host_append(&a->hosts, name, text, len, '\t', a->host,
					      r->seq) ? -1 : 0;
	return shift_sign_append(&a->key, name, text, len, '\t', a->host, r->seq) ? -1 : 0;
}

/* ---- the store ---- */

static void store_lost(struct agent *a, uint64_t now)
{
	if (!a->outage_logged)
		alog("store %s: %s; retrying every %u..%u ms", a->st.url,
		     a->st.err, AG_BACKOFF_MIN_MS, AG_BACKOFF_MAX_MS);
	else if (a->verbose)
		alog("store %s: %s; next try in %u ms", a->st.url, a->st.err,
		     a->backoff_ms);
	a->outage_logged = true;
	sm_store_close(&a->st);
	a->retry_ns = now + (uint64_t)a->backoff_ms * 1000000ULL;
	a->backoff_ms = a->backoff_ms * 2 > AG_BACKOFF_MAX_MS ? AG_BACKOFF_MAX_MS
							     : a->backoff_ms * 2;
}

static void lport_field(struct lport *lp)
{
	snprintf(lp->field, sizeof(lp->field), "%s/%u", lp->dev, lp->port_num);
}

/* Queue HSET and PUBLISH of @lp's record; returns the number of replies. */
static int queue_publish(struct agent *a, struct lport *lp, bool publish,
			 char *text, size_t len)
{
	char key[SM_HOST_LEN + 32];
	struct sm_rec r = lp->rec;

	if (a->hosts.set)
		own_gids_check(a, lp, &r);
	if (rec_seal(a, lp, &r, text, len))
		return -1;
	snprintf(key, sizeof(key), SM_STORE_HOST_FMT, a->host);
	if (sm_store_append(&a->st, "HSET %s %s %s", key, lp->field, text))
		return -1;
	if (!publish)
		return 1;
	if (sm_store_append(&a->st, "PUBLISH %s %s\t%s\t%s", SM_STORE_CHANNEL,
			    a->host, lp->field, text))
		return -1;
	return 2;
}

static void mark_published(struct lport *lp, uint64_t now)
{
	struct sm_rec r = lp->rec;

	r.instance = r.seq = 0;
	sm_rec_format(&r, lp->published, sizeof(lp->published));
	lp->pub_ns = now;
	lp->pending = false;
}

static void publish(struct agent *a, struct lport *lp, uint64_t now)
{
	char text[SM_REC_LEN];
	int n;

	if (!sm_store_connected(&a->st))
		return;		/* stays pending: the reconnect republishes */
	n = queue_publish(a, lp, true, text, sizeof(text));
	if (n < 0 || sm_store_flush(&a->st, n) == -1) {
		store_lost(a, now);
		return;
	}
	mark_published(lp, now);
	alog("publish %s %s", lp->field, text);
}

/* A removed port: its field goes, the others hear REMOVED. */
static void publish_removed(struct agent *a, const struct lport *lp, uint64_t now)
{
	char key[SM_HOST_LEN + 32], text[SM_REC_LEN];
	struct sm_rec r = lp->rec;

	if (!sm_store_connected(&a->st) || !lp->published[0])
		return;		/* a reconnect rewrites the hash without it */
	r.state = SM_REC_REMOVED;
	snprintf(key, sizeof(key), SM_STORE_HOST_FMT, a->host);
	if (rec_seal(a, lp, &r, text, sizeof(text)) ||
	    sm_store_append(&a->st, "HDEL %s %s", key, lp->field) ||
	    sm_store_append(&a->st, "PUBLISH %s %s\t%s\t%s", SM_STORE_CHANNEL,
			    a->host, lp->field, text) ||
	    sm_store_flush(&a->st, 2) == -1) {
		store_lost(a, now);
		return;
	}
	alog("publish %s %s", lp->field, text);
}

static void on_message(const char *msg, size_t len, void *arg)
{
	char copy[SM_HOST_LEN + SM_REC_PORT_LEN + SM_REC_LEN], *port, *text = NULL;
	struct agent *a = arg;
	struct sm_rec rec;

	/* "<host>\t<dev>/<port>\t<record>" (store.h) */
	port = len < sizeof(copy) ? memchr(msg, '\t', len) : NULL;
	if (port) {
		memcpy(copy, msg, len);
		copy[len] = '\0';
		port = copy + (port - msg);
		*port++ = '\0';
		text = strchr(port, '\t');
		if (text)
			*text++ = '\0';
	}
	if (!port || !text || !copy[0] || strlen(copy) >= SM_HOST_LEN ||
	    strlen(port) >= SM_REC_PORT_LEN || memchr(msg, '\0', len)) {
		alog("ignoring a malformed message on %s: %.*s", SM_STORE_CHANNEL,
		     (int)(len > 200 ? 200 : len), msg);
		return;
	}
	if (!strcmp(copy, a->host))
		return;		/* our own: never applied */
	if (!rec_open(a, copy, port, text, &rec, "event"))
		accept_rec(a, copy, &rec, "event");
}

/*
 * After a resync read @host's hash (@h): its ports that the hash no longer
 * has were removed while this agent was away from the store (their
 * REMOVED went by on the channel unheard): they are forgotten with their
 * rows.  A host the store does not name (a store that restarted empty and
 * has not heard from it yet) is not read, so not pruned.
 */
static void prune_host(struct agent *a, const char *host, const redisReply *h)
{
	unsigned int n;
	size_t i, j;

	for (i = a->nrp; i-- > 0;) {
		struct rport *rp = &a->rp[i];

		if (strcmp(rp->host, host))
			continue;
		for (j = 0; j + 1 < h->elements; j += 2)
			if (h->element[j]->type == REDIS_REPLY_STRING &&
			    !strcmp(h->element[j]->str, rp->rec.port))
				break;
		if (j + 1 < h->elements)
			continue;
		n = forget_paths(a, rp);
		alog("forget %s %s: not in the store: %u path%s deleted%s", host,
		     rp->rec.port, n, n == 1 ? "" : "s",
		     rp->incomplete ? " (incomplete)" : "");
		rport_drop(a, rp);
	}
}

/*
 * The rows an agent's DOWN reports made that no DOWN record now explains:
 * an earlier agent's, for a port whose host left the store or whose
 * REMOVED or UP this agent never heard while it was not running, or this
 * agent's own for ports it forgot.  Deleted after each resync, when every
 * record in the store has been applied.  Returns the number deleted.
 */
static unsigned int sweep_orphans(struct agent *a)
{
	struct sm_rows rows = { 0 };
	unsigned int n = 0;
	size_t i, k;

	if (!a->l.present ||
	    sm_nl_dump(&a->l.nl, SHIFT_FT_CMD_PATH_GET, &rows, "read", "paths"))
		return 0;
	for (i = 0; i < rows.n; i++) {
		const struct sm_row *r = &rows.v[i];
		struct lport one = { 0 };
		bool held = false;

		if (!SM_HAS(r, SHIFT_FT_A_REPORT_SOURCE) ||
		    r->report_source != SHIFT_FT_SRC_AGENT ||
		    !SM_HAS(r, SHIFT_FT_A_REMOTE_GID) || !SM_HAS(r, SHIFT_FT_A_PORT_INDEX))
			continue;
		for (k = 0; k < a->nrp && !held; k++)
			held = a->rp[k].applied == SHIFT_FT_PATH_DOWN &&
			       has_gid(&a->rp[k].rec, r->remote_gid);
		if (held)
			continue;
		one.port_index = r->port_index;
		if (!report(a, &one, r->remote_gid, SHIFT_FT_PATH_UP))
			n++;
	}
	sm_rows_free(&rows);
	return n;
}

/* After (re)connecting: our state out, everybody else's in. */
static int resync(struct agent *a, uint64_t now)
{
	char key[SM_HOST_LEN + 32], text[SM_REC_LEN], swept[80] = "";
	unsigned int replies = 0, ports = 0, nhosts = 0, orphans;
	redisReply *hosts, *h;
	size_t i, j;
	int n;

	snprintf(key, sizeof(key), SM_STORE_HOST_FMT, a->host);
	/* the hash rewritten at once: a reader never sees it half done */
	if (sm_store_append(&a->st, "MULTI") ||
	    sm_store_append(&a->st, "DEL %s", key))
		return -1;
	replies = 2;
	for (i = 0; i < a->nlp; i++) {
		n = queue_publish(a, &a->lp[i], false, text, sizeof(text));
		if (n < 0)
			return -1;
		replies += n;
	}
	if (sm_store_append(&a->st, "SADD %s %s", SM_STORE_HOSTS, a->host) ||
	    sm_store_append(&a->st, "EXEC"))
		return -1;
	replies += 2;
	/* and announced, for the agents that resynced before we were back */
	for (i = 0; i < a->nlp; i++) {
		struct lport *lp = &a->lp[i];
		struct sm_rec r = lp->rec;

		if (rec_seal(a, lp, &r, text, sizeof(text)) ||
		    sm_store_append(&a->st, "PUBLISH %s %s\t%s\t%s",
				    SM_STORE_CHANNEL, a->host, lp->field, text))
			return -1;
		replies++;
	}
	if (sm_store_flush(&a->st, replies))
		return -1;
	for (i = 0; i < a->nlp; i++)
		mark_published(&a->lp[i], now);
	alog("republished %zu port%s as %s", a->nlp, a->nlp == 1 ? "" : "s",
	     a->host);

	hosts = sm_store_cmd(&a->st, "SMEMBERS %s", SM_STORE_HOSTS);
	if (!hosts)
		return -1;
	for (i = 0; hosts->type == REDIS_REPLY_ARRAY && i < hosts->elements; i++) {
		const char *name = hosts->element[i]->str;

		if (hosts->element[i]->type != REDIS_REPLY_STRING ||
		    !strcmp(name, a->host) || strlen(name) >= SM_HOST_LEN)
			continue;
		nhosts++;
		h = sm_store_cmd(&a->st, "HGETALL " SM_STORE_HOST_FMT, name);
		if (!h) {
			freeReplyObject(hosts);
			return -1;
		}
		for (j = 0; h->type == REDIS_REPLY_ARRAY && j + 1 < h->elements; j += 2) {
			struct sm_rec rec;

			if (h->element[j]->type != REDIS_REPLY_STRING ||
			    h->element[j + 1]->type != REDIS_REPLY_STRING ||
			    h->element[j + 1]->len >= sizeof(text) ||
			    strlen(h->element[j]->str) >= SM_REC_PORT_LEN) {
				alog("ignoring a malformed record of %s", name);
				continue;
			}
			/* checked and cut in a copy: the reply is freed as it came */
			strcpy(text, h->element[j + 1]->str);
			if (rec_open(a, name, h->element[j]->str, text, &rec, "resync"))
				continue;
			ports++;
			accept_rec(a, name, &rec, "resync");
		}
		if (h->type == REDIS_REPLY_ARRAY)
			prune_host(a, name, h);
		freeReplyObject(h);
	}
	freeReplyObject(hosts);
	orphans = sweep_orphans(a);
	if (orphans)
		snprintf(swept, sizeof(swept), "; %u path row%s that no DOWN record explains deleted",
			 orphans, orphans == 1 ? "" : "s");
	alog("resync: %u other host%s, %u port%s%s", nhosts, nhosts == 1 ? "" : "s",
	     ports, ports == 1 ? "" : "s", swept);
	return 0;
}

static void store_try(struct agent *a, uint64_t now)
{
	if (sm_store_connect(&a->st, true)) {
		store_lost(a, now);
		return;
	}
	alog("store %s: connected", a->st.url);
	if (resync(a, now)) {
		store_lost(a, now);
		return;
	}
	/* messages that arrived with the subscription confirmation */
	if (sm_store_sub_read(&a->st, false, on_message, a)) {
		store_lost(a, now);
		return;
	}
	a->backoff_ms = AG_BACKOFF_MIN_MS;
	a->outage_logged = false;
}

/* ---- local ports ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "fe80:0000:0000:0000:5054:00ff:fe12:3401" */
static int parse_sysfs_gid(const char *s, uint8_t *gid)
{
	int i, hi, lo;

	for (i = 0; i < SHIFT_FT_GID_LEN; i++) {
		if (i && !(i & 1) && *s++ != ':')
			return -1;
		hi = hexval(s[0]);
		lo = hi < 0 ? -1 : hexval(s[1]);
		if (lo < 0)
			return -1;
		gid[i] = hi << 4 | lo;
		s += 2;
	}
	return 0;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The GIDs other hosts reach @lp by: RoCE v2 on Ethernet, all on
 * InfiniBand; zero entries skipped, in table order.
 */
static void read_gids(struct lport *lp)
{
	char dir[256], path[320], buf[64];
	struct sm_rec *r = &lp->rec, tmp = { .ngid = 0 };
	unsigned int n = 0, i;
	struct dirent *d;
	DIR *dh;

	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u",
		 lp->dev, lp->port_num);
	snprintf(path, sizeof(path), "%s/gids", dir);
	dh = opendir(path);
	if (!dh)
		return;
	while ((d = readdir(dh)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dh);
	for (i = 0; i < n && tmp.ngid < SM_REC_MAX_GIDS; i++) {
		static const uint8_t zero[SHIFT_FT_GID_LEN];
		uint8_t gid[SHIFT_FT_GID_LEN];

		if (r->link_layer == SHIFT_FT_LINK_ETHERNET) {
			/* an unused entry has no type: the read fails */
			snprintf(path, sizeof(path), "%s/gid_attrs/types/%u", dir, i);
			if (read_line(path, buf, sizeof(buf)) || strcmp(buf, "RoCE v2"))
				continue;
		}
		snprintf(path, sizeof(path), "%s/gids/%u", dir, i);
		if (read_line(path, buf, sizeof(buf)) || parse_sysfs_gid(buf, gid) ||
		    !memcmp(gid, zero, sizeof(gid)) || has_gid(&tmp, gid))
			continue;
		memcpy(tmp.gid[tmp.ngid++], gid, SHIFT_FT_GID_LEN);
	}
	lp->gids_read = true;
	/*
	 * A port that lost its link may have lost its addresses too; the others
	 * must still hear which GIDs went down, so keep the last ones known.
	 */
	if (!tmp.ngid && r->ngid && !sm_rec_up(r))
		return;
	memcpy(r->gid, tmp.gid, sizeof(r->gid));
	r->ngid = tmp.ngid;
}

static struct lport *lport_find(struct agent *a, uint32_t port_index)
{
	size_t i;

	for (i = 0; i < a->nlp; i++)
		if (a->lp[i].port_index == port_index)
			return &a->lp[i];
	return NULL;
}

/*
 * Ports are known by name, the store's key: a module reload may give a
 * port another slot, and that is no reason to tell the cluster anything.
 */
static struct lport *lport_by_name(struct agent *a, const char *dev,
				   uint32_t port_num)
{
	size_t i;

	for (i = 0; i < a->nlp; i++)
		if (a->lp[i].port_num == port_num && !strcmp(a->lp[i].dev, dev))
			return &a->lp[i];
	return NULL;
}

/* Does @lp's record differ from what was last published? */
static bool lport_changed(const struct lport *lp)
{
	char text[SM_REC_LEN];
	struct sm_rec r = lp->rec;

	r.instance = r.seq = 0;
	if (sm_rec_format(&r, text, sizeof(text)))
		return false;
	return strcmp(text, lp->published) != 0;
}

/* Publish now, or when @lp's rate window ends. */
static void lport_touch(struct agent *a, struct lport *lp, uint64_t now)
{
	if (!lport_changed(lp)) {
		lp->pending = false;
		return;
	}
	lp->pending = true;
	if (!lp->published[0] || now >= lp->pub_ns + AG_RATE_NS)
		publish(a, lp, now);
	else if (a->verbose)
		alog("coalesce %s: next publication in %u ms", lp->field,
		     (unsigned int)((lp->pub_ns + AG_RATE_NS - now) / 1000000));
}

static void lport_remove(struct agent *a, struct lport *lp, uint64_t now)
{
	size_t i, k;

	publish_removed(a, lp, now);
	alog("port %s gone", lp->field);
	*lp = a->lp[--a->nlp];
	/* the kernel removed the port's rows: the agent holds no more than the rest */
	for (i = 0; i < a->nrp; i++) {
		struct rport *rp = &a->rp[i];
		unsigned int most = 0;

		for (k = 0; rp->nrows && k < a->nlp; k++)
			if (a->lp[k].rec.link_layer == rp->rec.link_layer)
				most += rp->rec.ngid;
		if (rp->nrows > most)
			rp->nrows = most;
	}
}

/* A port message: from the events group or a dump. */
static void lport_update(struct agent *a, const struct sm_row *row, uint64_t now)
{
	struct lport *lp;
	bool fresh, renamed = false, gids = false;

	if (!SM_HAS(row, SHIFT_FT_A_PORT_INDEX) || !SM_HAS(row, SHIFT_FT_A_DEV_NAME) ||
	    !SM_HAS(row, SHIFT_FT_A_PORT_NUM) || !SM_HAS(row, SHIFT_FT_A_STATE))
		return;
	lp = lport_by_name(a, row->dev_name, row->port_num);
	if (!lp)
		lp = lport_find(a, row->port_index);	/* renamed, or slot reused */
	fresh = !lp;
	if (fresh) {
		lp = realloc(a->lp, (a->nlp + 1) * sizeof(*lp));
		if (!lp) {
			alog("Unable to track port %s/%u: %s", row->dev_name,
			     row->port_num, strerror(ENOMEM));
			return;
		}
		a->lp = lp;
		lp = &a->lp[a->nlp++];
		memset(lp, 0, sizeof(*lp));
	} else if (strcmp(lp->dev, row->dev_name) || lp->port_num != row->port_num) {
		/* the slot now holds another port: the old one is gone */
		publish_removed(a, lp, now);
		renamed = true;
	}
	lp->port_index = row->port_index;
	snprintf(lp->dev, sizeof(lp->dev), "%s", row->dev_name);
	lp->port_num = row->port_num;
	lport_field(lp);
	snprintf(lp->rec.port, sizeof(lp->rec.port), "%s", lp->field);
	if (renamed)
		lp->published[0] = '\0';
	if (strcmp(lp->rec.netdev, row->netdev) ||
	    lp->rec.state != row->state ||
	    lp->rec.link_layer != row->link_layer)
		gids = true;
	lp->rec.state = row->state;
	lp->rec.link_layer = row->link_layer;
	snprintf(lp->rec.netdev, sizeof(lp->rec.netdev), "%s", row->netdev);
	lp->rec.down_count = row->down_count;
	if (row->last_change != lp->last_change_mono) {
		uint64_t mono = sm_mono_ns();

		lp->last_change_mono = row->last_change;
		lp->rec.last_change_ms = real_ms() -
			(mono > row->last_change ? (mono - row->last_change) / 1000000 : 0);
	}
	/*
	 * sysfs is read when the GIDs can have changed, not on every event:
	 * a link going down must reach the store without that delay.
	 */
	if (!lp->gids_read || (gids && sm_rec_up(&lp->rec)) ||
	    row->event == SHIFT_FT_EV_GID_CHANGE ||
	    row->event == SHIFT_FT_EV_DEVICE_ADD ||
	    row->event == SHIFT_FT_EV_DEVICE_RENAME)
		read_gids(lp);
	if (fresh || renamed) {
		size_t i;

		alog("port %s: %s, %s%s%s", lp->field,
		     sm_rec_state_name(lp->rec.state),
		     sm_rec_link_name(lp->rec.link_layer),
		     lp->rec.netdev[0] ? ", netdev " : "", lp->rec.netdev);
		/* remote ports already down: this port's paths to them too */
		for (i = 0; i < a->nrp; i++)
			if (a->rp[i].applied == SHIFT_FT_PATH_DOWN)
				apply_paths(a, &a->rp[i], lp);
	}
	lport_touch(a, lp, now);
}

/* All ports again, from a dump: after a lost event or a module reload. */
static int lports_refresh(struct agent *a, uint64_t now)
{
	struct sm_rows rows = { 0 };
	size_t i, k;

	if (!a->l.present)
		return 0;
	if (sm_nl_dump(&a->l.nl, SHIFT_FT_CMD_PORT_GET, &rows, "read", "ports"))
		return -1;
	for (i = 0; i < rows.n; i++)
		lport_update(a, &rows.v[i], now);
	/* ports the dump does not have went away unannounced */
	for (k = a->nlp; k-- > 0;) {
		for (i = 0; i < rows.n; i++)
			if (rows.v[i].port_num == a->lp[k].port_num &&
			    !strcmp(rows.v[i].dev_name, a->lp[k].dev))
				break;
		if (i == rows.n)
			lport_remove(a, &a->lp[k], now);
	}
	sm_rows_free(&rows);
	return 0;
}

static void on_event(enum sm_listen_what what, const struct sm_row *row,
		     void *arg)
{
	struct agent *a = arg;
	uint64_t now = sm_mono_ns();
	struct lport *lp;
	size_t i;

	switch (what) {
	case SM_LISTEN_EVENT:
		if (row->cmd == SHIFT_FT_CMD_PORT_NEW) {
			lport_update(a, row, now);
		} else if (row->cmd == SHIFT_FT_CMD_PORT_DEL &&
			   SM_HAS(row, SHIFT_FT_A_PORT_INDEX)) {
			lp = lport_find(a, row->port_index);
			if (lp)
				lport_remove(a, lp, now);
		}
		break;
	case SM_LISTEN_FAMILY_GONE:
		alog("module %s unloaded: waiting for it", SHIFT_FT_GENL_NAME);
		break;
	case SM_LISTEN_FAMILY_BACK:
		alog("module %s loaded: rereading ports, applying %zu remote port%s again",
		     SHIFT_FT_GENL_NAME, a->nrp, a->nrp == 1 ? "" : "s");
		lports_refresh(a, now);
		for (i = 0; i < a->nrp; i++)
			a->rp[i].enospc_logged = false;
		reapply_all(a);
		break;
	case SM_LISTEN_OVERRUN:
		alog("events lost (socket overrun): rereading ports");
		lports_refresh(a, now);
		break;
	case SM_LISTEN_FOREIGN:
		break;
	}
}

/*
 * The keys the agent signs and checks port records with: the cluster key
 * (--store-key-file), or this host's key and the hosts file (--host-key-file
 * and --hosts-file), not both; none is allowed.  0, or -1 (said).
 */
static int agent_keys(struct agent *a)
{
	const char *key, *hkey, *hosts;
	char why[320];
	int r;

	key = sm_opts.store_key ? sm_opts.store_key : getenv(SM_STORE_KEY_ENV);
	hkey = sm_opts.host_key ? sm_opts.host_key : getenv(SM_HOST_KEY_ENV);
	hosts = sm_opts.hosts_file ? sm_opts.hosts_file : getenv(SM_HOSTS_FILE_ENV);
	key = key && *key ? key : NULL;
	hkey = hkey && *hkey ? hkey : NULL;
	hosts = hosts && *hosts ? hosts : NULL;
	if (!key && !hkey && !hosts)
		return 0;
	/* the name others check our signature's sender against */
	if (!shift_sign_sender_ok(a->host)) {
		fprintf(stderr,
			"Unable to start agent: host name '%s' cannot sign records: 1 to %d of A-Z a-z 0-9 . _ - (see --host)\n",
			a->host, SHIFT_SIGN_SENDER_MAX - 1);
		return -1;
	}
	if (hkey || hosts) {
		if (!hkey || !hosts) {
			fprintf(stderr, "Unable to start agent: %s without %s: host keys need both\n",
				hkey ? "--host-key-file" : "--hosts-file",
				hkey ? "--hosts-file" : "--host-key-file");
			return -1;
		}
		if (key) {
			fprintf(stderr,
				"Unable to start agent: --store-key-file and --host-key-file: one or the other (host keys replace the cluster key for port records)\n");
			return -1;
		}
		r = shift_sign_hosts_read(hkey, hosts, a->host, &a->hosts, why, sizeof(why));
		if (r) {
			fprintf(stderr, "Unable to start agent: %s\n", why);
			return -1;
		}
	} else {
		r = shift_sign_key_read(key, &a->key, why, sizeof(why));
		if (r) {
			fprintf(stderr, "Unable to start agent: key file %s: %s\n", key, why);
			return -1;
		}
	}
	a->signing = true;
	return 0;
}
/* ---- the command ---- */

static bool have_net_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_ADMIN / 32].effective & (1U << (CAP_NET_ADMIN % 32));
}

static int agent_setup(struct agent *a)
{
	const char *host = sm_opts.host, *stats;

	if (!host || !*host) {
		if (gethostname(a->host, sizeof(a->host))) {
			fprintf(stderr, "Unable to start agent: hostname: %s\n",
				strerror(errno));
			return -1;
		}
		a->host[sizeof(a->host) - 1] = '\0';
	} else if (strlen(host) >= sizeof(a->host)) {
		fprintf(stderr, "%s: host name too long\n", sm_prog);
		return -2;
	} else {
		strcpy(a->host, host);
	}
	if (!a->host[0] || strpbrk(a->host, "\t\n\r ")) {
		fprintf(stderr, "%s: invalid host name '%s'\n", sm_prog, a->host);
		return -2;
	}
	if (sm_store_init(&a->st, sm_opts.store)) {
		fprintf(stderr, "%s: invalid store URL %s\n", sm_prog, a->st.err);
		return -2;
	}
	if (sm_store_auth_file(&a->st, sm_opts.store_auth)) {
		fprintf(stderr, "Unable to start agent: store %s: %s\n", a->st.url,
			a->st.err);
		return -1;
	}
	if (agent_keys(a))
		return -1;
	stats = getenv(SM_AGENT_STATS_ENV);
	snprintf(a->stats_path, sizeof(a->stats_path), "%s",
		 stats && *stats ? stats : SM_AGENT_STATS);
	if (getrandom(&a->instance, sizeof(a->instance), 0) != sizeof(a->instance))
		a->instance = (uint64_t)getpid() << 32 ^ real_ms();
	a->host_rows = AG_HOST_ROWS;
	if (sm_opts.host_rows &&
	    sm_parse_u32(sm_opts.host_rows, 1, UINT32_MAX, &a->host_rows)) {
		fprintf(stderr, "%s: invalid --host-rows '%s' (1 or more)\n", sm_prog,
			sm_opts.host_rows);
		return -2;
	}
	a->remote_ports = AG_REMOTE_PORTS;
	if (sm_opts.remote_ports &&
	    sm_parse_u32(sm_opts.remote_ports, 1, 1U << 24, &a->remote_ports)) {
		fprintf(stderr, "%s: invalid --remote-ports '%s' (1-%u)\n", sm_prog,
			sm_opts.remote_ports, 1U << 24);
		return -2;
	}
	a->verbose = sm_opts.verbose;
	a->backoff_ms = AG_BACKOFF_MIN_MS;
	return 0;
}

static uint64_t next_deadline(const struct agent *a)
{
	uint64_t t = UINT64_MAX;
	size_t i;

	if (!sm_store_connected(&a->st))
		t = a->retry_ns;
	else
		for (i = 0; i < a->nlp; i++)
			if (a->lp[i].pending && a->lp[i].pub_ns + AG_RATE_NS < t)
				t = a->lp[i].pub_ns + AG_RATE_NS;
	if (a->stats_dirty && a->stats_ns + AG_STATS_NS < t)
		t = a->stats_ns + AG_STATS_NS;
	return t;
}

int cmd_agent(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct agent a = { 0 };
	sigset_t block, empty;
	int r, rc = SM_EXIT_OK;
	size_t i;

	(void)argv;
	if (argc)
		return sm_usage("agent");
	r = agent_setup(&a);
	if (r)
		return r == -2 ? sm_usage("agent") : SM_EXIT_FAIL;
	if (!have_net_admin()) {
		fprintf(stderr,
			"Unable to start agent: %s (reporting paths needs CAP_NET_ADMIN)\n",
			strerror(EPERM));
		return SM_EXIT_FAIL;
	}

	/* the signals arrive only inside ppoll(): no lost wakeup */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigemptyset(&empty);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* subscribed before the dump: no change falls between the two */
	if (sm_listen_open(&a.l, on_event, &a))
		return SM_EXIT_FAIL;
	alog("host %s, instance %016" PRIx64 ", store %s%s%s, records %s, at most %u rows a remote host, %u remote ports",
	     a.host, a.instance, a.st.url, a.st.auth.set ? " as user " : "",
	     a.st.auth.set ? a.st.auth.user : "",
	     a.hosts.set ? "signed and checked with host keys" :
	     a.key.set ? "signed and checked" : "UNSIGNED (no --store-key-file)",
	     a.host_rows, a.remote_ports);
	stats_write(&a, sm_mono_ns());
	if (!a.l.present)
		alog("module %s not loaded: waiting for it", SHIFT_FT_GENL_NAME);
	else if (lports_refresh(&a, sm_mono_ns()))
		rc = SM_EXIT_FAIL;
	if (!rc)
		store_try(&a, sm_mono_ns());

	while (!rc && !ag_stop) {
		struct pollfd pf[2] = {
			{ .fd = sm_listen_fd(&a.l), .events = POLLIN },
			{ .fd = sm_store_sub_fd(&a.st), .events = POLLIN },
		};
		uint64_t now = sm_mono_ns(), dl = next_deadline(&a);
		struct timespec ts, *tsp = NULL;

		if (dl != UINT64_MAX) {
			uint64_t d = dl > now ? dl - now : 0;

			ts.tv_sec = d / 1000000000ULL;
			ts.tv_nsec = d % 1000000000ULL;
			tsp = &ts;
		}
		r = ppoll(pf, pf[1].fd >= 0 ? 2 : 1, tsp, &empty);
		if (r < 0 && errno != EINTR) {
			alog("Unable to poll: %s", strerror(errno));
			rc = SM_EXIT_FAIL;
			break;
		}
		now = sm_mono_ns();
		if (a.stats_dirty && now >= a.stats_ns + AG_STATS_NS)
			stats_write(&a, now);
		if (r > 0 && pf[0].revents && sm_listen_process(&a.l)) {
			rc = SM_EXIT_FAIL;
			break;
		}
		if (r > 0 && pf[1].fd >= 0 && pf[1].revents &&
		    sm_store_connected(&a.st) &&
		    sm_store_sub_read(&a.st, true, on_message, &a))
			store_lost(&a, now);
		if (!sm_store_connected(&a.st)) {
			if (now >= a.retry_ns)
				store_try(&a, now);
			continue;
		}
		for (i = 0; i < a.nlp; i++)
			if (a.lp[i].pending && now >= a.lp[i].pub_ns + AG_RATE_NS)
				publish(&a, &a.lp[i], now);
	}

	/* the final state is never dropped: what is pending goes out now */
	for (i = 0; i < a.nlp; i++)
		if (a.lp[i].pending)
			publish(&a, &a.lp[i], sm_mono_ns());
	if (ag_stop)
		alog("stopping on a signal");
	if (a.stats_dirty)
		stats_write(&a, sm_mono_ns());
	sm_store_close(&a.st);
	sm_listen_close(&a.l);
	shift_sign_key_clear(&a.key);
	shift_sign_hosts_clear(&a.hosts);
	free(a.drop_hosts);
	free(a.lp);
	free(a.rp);
	return rc;
}
