// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * config.c: the SHIFTU_* environment and shiftu_set_options() (config.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fork.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "testbuild.h"
#include "util.h"

static struct shiftu_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
/* serialises shiftu_set_options() with shiftu_config_start() */
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(config, .rank = SHIFTU_RANK_CONFIG, .name = "config_lock", .lock = &config_lock);
static bool config_started;		/* under config_lock */

int shiftu_parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

int shiftu_parse_ms(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')	/* strtoul takes "-1" and " 1" */
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int shiftu_parse_probe_ms(const char *s, uint32_t *out)
{
	return shiftu_parse_ms(s, 1, SHIFTU_PROBE_MS_MAX, out);
}

int shiftu_parse_record(const char *s, bool *copy)
{
	if (strcmp(s, "auto") && strcmp(s, "copy"))
		return -EINVAL;
	*copy = !strcmp(s, "copy");
	return 0;
}

static int parse_port(const char *s, uint16_t *port)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

/*
 * none | local | unix:/PATH | unix:///PATH | unix://USER:PASSWORD@/PATH |
 * redis://[USER:PASSWORD@]HOST[:PORT][/...] |
 * redis://[USER:PASSWORD@][V6ADDR][:PORT][/...]: what shiftmon's --store
 * accepts (a trailing "/DB" is ignored there too), plus none and local.
 * The credentials' own rules are storeauth.h's.
 */
int shiftu_parse_store_why(const char *s, struct shiftu_store *out, char *why,
			   size_t whylen)
{
	struct shiftu_store st = { .port = 6379 };
	char addr[sizeof(st.url)];
	const char *p, *ui, *at;
	char *slash, *colon, *close;
	size_t uilen;
	int err;

	if (strlen(s) >= sizeof(st.url))
		return WHY("longer than %zu bytes", sizeof(st.url) - 1);
	shift_auth_redact(s, st.url, sizeof(st.url));
	/* the address without the credentials: "redis://" or "unix://" + rest */
	snprintf(addr, sizeof(addr), "%s", s);
	if (shift_auth_in_url(s, &ui, &uilen, &at)) {
		err = shift_auth_parse_userinfo(ui, uilen, &st.auth, why, whylen);
		if (err)
			return err;
		snprintf(addr, sizeof(addr), "%.*s%s", (int)(ui - s), s, at);
	}
	if (!strcmp(addr, "none")) {
		st.kind = SHIFTU_STORE_NONE;
		st.port = 0;
	} else if (!strcmp(addr, "local")) {
		st.kind = SHIFTU_STORE_LOCAL;
		st.port = 0;
	} else if (!strncmp(addr, "unix:", 5)) {
		p = addr + 5;
		if (!strncmp(p, "//", 2))
			p += 2;
		/* sun_path is 108 bytes with its NUL */
		if (*p != '/' || strlen(p) >= 108) {
			err = WHY("not unix:/PATH (an absolute path shorter than 108 bytes)");
			goto wipe;
		}
		st.kind = SHIFTU_STORE_REDIS_UNIX;
		st.port = 0;
		strcpy(st.host, p);
	} else if (!strncmp(addr, "redis://", 8)) {
		if (strlen(addr + 8) >= sizeof(st.host)) {
			err = WHY("the host is longer than %zu bytes", sizeof(st.host) - 1);
			goto wipe;
		}
		strcpy(st.host, addr + 8);
		slash = strchr(st.host, '/');
		if (slash)
			*slash = '\0';
		if (st.host[0] == '[') {
			close = strchr(st.host, ']');
			if (!close) {
				err = WHY("an unterminated '['");
				goto wipe;
			}
			*close = '\0';
			if (close[1] == ':') {
				if (parse_port(close + 2, &st.port))
					goto bad_port;
			} else if (close[1]) {
				goto bad_port;
			}
			memmove(st.host, st.host + 1, strlen(st.host + 1) + 1);
		} else if ((colon = strrchr(st.host, ':'))) {
			*colon = '\0';
			if (parse_port(colon + 1, &st.port))
				goto bad_port;
		}
		if (!st.host[0]) {
			err = WHY("no host");
			goto wipe;
		}
		st.kind = SHIFTU_STORE_REDIS;
	} else {
		err = WHY("not none, local, unix:/PATH or redis://HOST[:PORT]");
		goto wipe;
	}
	*out = st;
	shift_auth_clear(&st.auth);
	return 0;
bad_port:
	err = WHY("an invalid port (1 to 65535)");
wipe:
	shift_auth_clear(&st.auth);
	return err;
}

int shiftu_parse_store(const char *s, struct shiftu_store *out)
{
	char why[128];

	return shiftu_parse_store_why(s, out, why, sizeof(why));
}

int shiftu_parse_store_dir(const char *s, char dir[PATH_MAX])
{
	/* relative would depend on the cwd of whichever thread opens first */
	if (*s != '/' || strlen(s) >= PATH_MAX)
		return -EINVAL;
	strcpy(dir, s);
	return 0;
}

static void config_defaults(struct shiftu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = SHIFTU_LOG_WARN;
	shiftu_parse_store("local", &cfg->store);
	cfg->probe_ms = SHIFTU_PROBE_MS_DEFAULT;
	strcpy(cfg->health_dev, SHIFTU_HEALTH_DEV_DEFAULT);
}

static int bad(const char *var, const char *val, const char *dflt)
{
	shiftu_warn("%s=%s: invalid value, using %s", var, val, dflt);
	return 1;
}

static int copy_path(const char *var, const char *val, char *dst, size_t len,
		     const char *dflt)
{
	if (!*val || strlen(val) >= len)
		return bad(var, val, dflt);
	strcpy(dst, val);
	return 0;
}

int shiftu_config_from_env(struct shiftu_config *cfg, char *(*get)(const char *))
{
	const char *v;
	int nbad = 0;

	config_defaults(cfg);
	if ((v = get("SHIFTU_LOG")) && shiftu_parse_log_level(v, &cfg->log_level))
		nbad += bad("SHIFTU_LOG", v, "warn");
	if ((v = get("SHIFTU_LOG_FILE")))
		nbad += copy_path("SHIFTU_LOG_FILE", v, cfg->log_file,
				  sizeof(cfg->log_file), "stderr");
	if ((v = get("SHIFTU_LOG_TIME")) && shiftu_parse_bool(v, &cfg->log_time))
		nbad += bad("SHIFTU_LOG_TIME", v, "0");
	if ((v = get("SHIFTU_STORE"))) {
		char why[128], shown[sizeof(cfg->store.url)];

		if (shiftu_parse_store_why(v, &cfg->store, why, sizeof(why))) {
			/* never the password, even of a URL that does not parse */
			shift_auth_redact(v, shown, sizeof(shown));
			shiftu_warn("SHIFTU_STORE=%s: invalid value (%s), using local",
				    shown, why);
			nbad++;
		}
	}
	if ((v = get("SHIFTU_STORE_AUTH_FILE")) &&
	    shiftu_parse_store_dir(v, cfg->store.auth_file))
		nbad += bad("SHIFTU_STORE_AUTH_FILE", v, "none");
	if ((v = get("SHIFTU_STORE_KEY_FILE")) &&
	    shiftu_parse_store_dir(v, cfg->store.key_file))
		nbad += bad("SHIFTU_STORE_KEY_FILE", v, "none");
	if ((v = get("SHIFTU_STORE_DIR")) &&
	    shiftu_parse_store_dir(v, cfg->store.dir))
		nbad += bad("SHIFTU_STORE_DIR", v, "/dev/shm/shiftu-EUID");
	if ((v = get("SHIFTU_DISABLE")) && shiftu_parse_bool(v, &cfg->disabled))
		nbad += bad("SHIFTU_DISABLE", v, "0");
	if ((v = get("SHIFTU_PROBE_MS")) && shiftu_parse_probe_ms(v, &cfg->probe_ms))
		nbad += bad("SHIFTU_PROBE_MS", v, "100");
	if ((v = get("SHIFTU_HEALTH_DEV")))
		nbad += copy_path("SHIFTU_HEALTH_DEV", v, cfg->health_dev,
				  sizeof(cfg->health_dev), SHIFTU_HEALTH_DEV_DEFAULT);
	if ((v = get("SHIFTU_RECORD")) && shiftu_parse_record(v, &cfg->record_copy))
		nbad += bad("SHIFTU_RECORD", v, "auto");
	nbad += shiftu_test_knobs_from_env(cfg, get);
	return nbad;
}

static char *env_get(const char *name)
{
	/* secure_getenv: a preloaded library must not take a log file path
	 * from the environment of a setuid program */
	return secure_getenv(name);
}

static void config_read(void)
{
	/* The logger first, so that complaints about the other variables
	 * (and about its own) go where the user asked. */
	shiftu_log_from_env();
	shiftu_config_from_env(&config, env_get);
	shiftu_log_set_time(config.log_time);
	shiftu_dbg("config: log %s store %s auth %s key %s dir %s disabled %d probe %u ms health %s record %s",
		   shiftu_log_level_name(config.log_level), config.store.url,
		   config.store.auth.set ? "(in the URL)" :
		   config.store.auth_file[0] ? config.store.auth_file : "(none)",
		   config.store.key_file[0] ? config.store.key_file : "(none)",
		   config.store.dir[0] ? config.store.dir : "(default)", config.disabled,
		   config.probe_ms, config.health_dev, config.record_copy ? "copy" : "auto");
	shiftu_test_knobs_log(&config);
	/* the library is in use from here: its locks must survive a fork */
	shiftu_fork_init();
}

const struct shiftu_config *shiftu_config(void)
{
	pthread_once(&config_once, config_read);
	return &config;
}

const struct shiftu_config *shiftu_config_start(void)
{
	shiftu_config();
	shiftu_lock(&config_lock, SHIFTU_LOCK_CONFIG);
	config_started = true;
	shiftu_unlock(&config_lock, SHIFTU_LOCK_CONFIG);
	return &config;
}

/* The caller's bytes past what this library knows must be zero. */
static bool tail_is_zero(const void *p, size_t known, size_t size)
{
	const unsigned char *c = p;

	for (; known < size; known++)
		if (c[known])
			return false;
	return true;
}

SHIFTU_EXPORT int shiftu_set_options(const struct shiftu_options *user)
{
	struct shiftu_options o = { 0 };
	struct shiftu_store store;
	int err = 0;

	if (!user || user->size < SHIFTU_OPTIONS_SIZE_VER0)
		return -EINVAL;
	if (user->size > sizeof(o) && !tail_is_zero(user, sizeof(o), user->size))
		return -E2BIG;
	memcpy(&o, user, user->size < sizeof(o) ? user->size : sizeof(o));
	if (o.mask & ~SHIFTU_OPT_ALL)
		return -EOPNOTSUPP;
	if ((o.mask & SHIFTU_OPT_LOG_LEVEL) &&
	    (o.log_level < SHIFTU_LOG_OFF || o.log_level > SHIFTU_LOG_MAX))
		return -EINVAL;
	if ((o.mask & SHIFTU_OPT_BACKUP) &&
	    o.backup != SHIFTU_BACKUP_ON && o.backup != SHIFTU_BACKUP_OFF)
		return -EINVAL;
	if ((o.mask & SHIFTU_OPT_PROBE_MS) &&
	    (o.probe_ms < 1 || o.probe_ms > SHIFTU_PROBE_MS_MAX))
		return -EINVAL;
	if ((o.mask & SHIFTU_OPT_STORE_URL) &&
	    (!o.store_url || shiftu_parse_store(o.store_url, &store)))
		return -EINVAL;

	shiftu_config();	/* the environment first: options override it */
	shiftu_lock(&config_lock, SHIFTU_LOCK_CONFIG);
	if (config_started) {
		err = -EBUSY;
		goto unlock;
	}
	if (o.mask & SHIFTU_OPT_LOG_LEVEL) {
		config.log_level = o.log_level;
		shiftu_log_set_level(o.log_level);
	}
	if (o.mask & SHIFTU_OPT_BACKUP)
		config.disabled = o.backup == SHIFTU_BACKUP_OFF;
	if (o.mask & SHIFTU_OPT_PROBE_MS)
		config.probe_ms = o.probe_ms;
	if (o.mask & SHIFTU_OPT_STORE_URL) {
		/* the URL only: SHIFTU_STORE_DIR, _AUTH_FILE and _KEY_FILE stay */
		strcpy(store.dir, config.store.dir);
		strcpy(store.auth_file, config.store.auth_file);
		strcpy(store.key_file, config.store.key_file);
		config.store = store;
		shift_auth_clear(&store.auth);
	}
unlock:
	shiftu_unlock(&config_lock, SHIFTU_LOCK_CONFIG);
	return err;
}
