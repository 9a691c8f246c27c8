/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.h: libshiftu's configuration: the SHIFTU_* environment, read once
 * and lazily, overridden by shiftu_set_options() until the library starts.
 *
 *   SHIFTU_LOG		off|error|warn|info|debug		(warn)
 *   SHIFTU_LOG_FILE	path					(stderr)
 *   SHIFTU_STORE	none|local|redis://[USER:PASSWORD@]HOST[:PORT][/]|
 *			unix:/PATH|unix://USER:PASSWORD@/PATH		(local)
 *   SHIFTU_STORE_AUTH_FILE absolute path: USER:PASSWORD (storeauth.h) (none)
 *   SHIFTU_STORE_KEY_FILE absolute path: the cluster key records are signed
 *                       and checked with (recsign.h) (none: unsigned)
 *   SHIFTU_STORE_DIR	absolute path			(/dev/shm/shiftu-EUID)
 *   SHIFTU_DISABLE	0|1					(0)
 *   SHIFTU_PROBE_MS	1..3600000				(100)
 *   SHIFTU_HEALTH_DEV	path					(/dev/shift_ft)
 *   SHIFTU_RECORD	auto|copy				(auto)
 *
 * The test build (libshiftu-test.so.0) reads its knobs too (testbuild.h).
 *
 * A value that does not parse is logged once (warn: variable and value) and
 * the default is used instead.
 */
#ifndef _SHIFTU_CONFIG_H
#define _SHIFTU_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <limits.h>

#include "shiftu.h"
#include "storeauth.h"

#define SHIFTU_PROBE_MS_DEFAULT		100
#define SHIFTU_PROBE_MS_MAX		3600000
#define SHIFTU_HEALTH_DEV_DEFAULT	"/dev/shift_ft"	/* SHIFT_FT_DEVICE_PATH */

enum shiftu_store_kind {
	SHIFTU_STORE_UNSPEC,
	SHIFTU_STORE_NONE,		/* no cluster information at all */
	SHIFTU_STORE_LOCAL,		/* processes on this host only: a
					 * directory (dir; store.h) */
	SHIFTU_STORE_REDIS,		/* TCP: host, port */
	SHIFTU_STORE_REDIS_UNIX,	/* Unix socket: path in host */
};

/* The same forms shiftmon's --store / SHIFT_STORE accept, plus none/local. */
struct shiftu_store {
	enum shiftu_store_kind kind;
	uint16_t port;			/* REDIS: 1..65535 (default 6379) */
	char host[256];			/* REDIS: name or address (no []);
					 * REDIS_UNIX: the socket path */
	char url[512];			/* as given, but for the password
					 * (storeauth.h): for log lines */
	struct shift_auth auth;		/* REDIS*: from the URL; else unset */
	char auth_file[PATH_MAX];	/* REDIS*: SHIFTU_STORE_AUTH_FILE, read
					 * at each open when the URL has no
					 * credentials; kept when the URL
					 * changes */
	char key_file[PATH_MAX];	/* SHIFTU_STORE_KEY_FILE, read at each
					 * open, "": records unsigned; kept
					 * when the URL changes */
	char dir[PATH_MAX];		/* LOCAL: SHIFTU_STORE_DIR, "": the
					 * default (store.h); kept when the
					 * URL changes */
};

struct shiftu_config {
	enum shiftu_log_level log_level;
	char log_file[PATH_MAX];	/* "": stderr */
	bool log_time;			/* SHIFTU_LOG_TIME=1: every line timed */
	struct shiftu_store store;
	bool disabled;			/* SHIFTU_DISABLE=1 or backup OFF */
	uint32_t probe_ms;
	char health_dev[PATH_MAX];
	bool record_copy;		/* SHIFTU_RECORD=copy: never read the
					 * provider's rings (provq.c) */
#ifdef SHIFTU_TEST_BUILD
	/* the test build's knobs (testbuild.h): read through its accessors */
	struct {
		uint32_t twin_reset_ms;	/* a stale twin's reset waits */
		uint32_t failback_delay_ms; /* going back waits after the probe */
		uint32_t serve_delay_ms; /* shiftu_app_serve() waits first;
					  * answers leave late */
		uint32_t watch_delay_ms; /* the watcher waits before serving
					  * twin CQs */
		uint32_t replay_fail;	/* a replay's post this far on fails */
		uint32_t drain_stall_ms; /* a twin's drain stalls first */
		uint32_t follow_delay_ms; /* following the peer back waits */
		uint32_t scout_delay_ms; /* the look ahead reads no ring */
		uint32_t join_delay_ms;	/* a twin waits in RTR */
		uint32_t kv_timeout_ms;	/* the store's wait for an answer */
	} test;
#endif
};

/*
 * The configuration: reads the environment on the first call (pthread_once)
 * and sets up the logger from it.  The result is read-only for callers.
 * Fields may still change through shiftu_set_options() until
 * shiftu_config_start(); code that runs after start may read it without a
 * lock.  Thread safe.
 */
const struct shiftu_config *shiftu_config(void);

/*
 * Mark the library started (the interposer calls it at the first device
 * open): from now on shiftu_set_options() returns -EBUSY and the
 * configuration never changes.  Returns the configuration.  Thread safe,
 * idempotent.
 */
const struct shiftu_config *shiftu_config_start(void);

/* ---- parsers, exposed for the unit tests; each returns 0 or -EINVAL ---- */

int shiftu_parse_bool(const char *s, bool *out);
int shiftu_parse_probe_ms(const char *s, uint32_t *out);
/* A decimal number of milliseconds in [@min, @max]. */
int shiftu_parse_ms(const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* "auto" (false) or "copy" (true). */
int shiftu_parse_record(const char *s, bool *copy);
int shiftu_parse_store(const char *s, struct shiftu_store *out);
/* The same, and what was wrong in @why (@whylen bytes, no password). */
int shiftu_parse_store_why(const char *s, struct shiftu_store *out, char *why,
			   size_t whylen);
/* An absolute path shorter than PATH_MAX, copied into @dir. */
int shiftu_parse_store_dir(const char *s, char dir[PATH_MAX]);

/*
 * Fill @cfg from the variables @get returns (getenv, or a test's table),
 * logging each bad value and using its default.  Does not touch the logger.
 * Returns the number of bad values.
 */
int shiftu_config_from_env(struct shiftu_config *cfg, char *(*get)(const char *));

#endif /* _SHIFTU_CONFIG_H */
