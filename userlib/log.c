// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * log.c: the one logger of libshiftu (see log.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/*
 * Until shiftu_log_setup() runs, every line reaches shiftu_log_line(), which
 * reads SHIFTU_LOG and SHIFTU_LOG_FILE first (shiftu_log_from_env()) and
 * filters again.  The logger reads its own variables: it is below the
 * configuration, which logs.
 */
int shiftu_log_level_cur = SHIFTU_LOG_DEBUG;

/* Set (release) at the top of shiftu_log_setup(); read acquire. */
static bool log_configured;

/*
 * The descriptor lines go to.  Written once by shiftu_log_setup() before
 * other threads log (config.c runs it inside its pthread_once); read relaxed.
 */
static int log_fd = STDERR_FILENO;
static bool log_time;	/* SHIFTU_LOG_TIME (relaxed) */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = {
	[SHIFTU_LOG_OFF] = "off",
	[SHIFTU_LOG_ERROR] = "error",
	[SHIFTU_LOG_WARN] = "warn",
	[SHIFTU_LOG_INFO] = "info",
	[SHIFTU_LOG_DEBUG] = "debug",
};

int shiftu_parse_log_level(const char *s, enum shiftu_log_level *out)
{
	int i;

	for (i = SHIFTU_LOG_OFF; i <= SHIFTU_LOG_MAX; i++) {
		if (!strcmp(s, level_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *shiftu_log_level_name(enum shiftu_log_level lvl)
{
	return lvl >= SHIFTU_LOG_OFF && lvl <= SHIFTU_LOG_MAX ? level_names[lvl] : "?";
}

void shiftu_log_set_level(enum shiftu_log_level lvl)
{
	if (lvl == SHIFTU_LOG_UNSPEC || lvl > SHIFTU_LOG_MAX)
		return;
	__atomic_store_n(&shiftu_log_level_cur, lvl, __ATOMIC_RELAXED);
}

void shiftu_log_set_time(bool on)
{
	__atomic_store_n(&log_time, on, __ATOMIC_RELAXED);
}

int shiftu_log_setup(enum shiftu_log_level lvl, const char *path)
{
	int fd, old, err = 0;

	/* first, so that the line below does not read the configuration */
	__atomic_store_n(&log_configured, true, __ATOMIC_RELEASE);
	shiftu_log_set_level(lvl);
	fd = STDERR_FILENO;
	if (path && *path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = -errno;
			fd = STDERR_FILENO;
		}
	}
	old = __atomic_exchange_n(&log_fd, fd, __ATOMIC_RELAXED);
	if (old != STDERR_FILENO && old != fd)
		close(old);
	if (err)
		shiftu_log_line(SHIFTU_LOG_WARN, "SHIFTU_LOG_FILE=%s: %s; logging to stderr",
				path, strerror(-err));
	return err;
}

static void env_setup(void)
{
	enum shiftu_log_level lvl = SHIFTU_LOG_WARN;
	const char *v;

	if (__atomic_load_n(&log_configured, __ATOMIC_ACQUIRE))
		return;		/* set up by hand (tests) */
	/* secure_getenv: a preloaded library must not take a log file path
	 * from the environment of a setuid program */
	v = secure_getenv("SHIFTU_LOG");
	if (v)
		shiftu_parse_log_level(v, &lvl);
	shiftu_log_setup(lvl, secure_getenv("SHIFTU_LOG_FILE"));
}

void shiftu_log_from_env(void)
{
	pthread_once(&env_once, env_setup);
}

void shiftu_log_line(enum shiftu_log_level lvl, const char *fmt, ...)
{
	char buf[1024];
	int saved_errno = errno;	/* callers log between a failure and its return */
	ssize_t wr;
	size_t n;
	va_list ap;
	int len;

	if (lvl < SHIFTU_LOG_ERROR || lvl > SHIFTU_LOG_MAX)
		lvl = SHIFTU_LOG_ERROR;
	/* a line before the logger was set up: from the environment */
	if (!__atomic_load_n(&log_configured, __ATOMIC_ACQUIRE)) {
		shiftu_log_from_env();
		if (!shiftu_log_enabled(lvl))
			goto out;
	}
	n = 0;
	/* at debug or when asked, UTC wall time first: lines of two hosts
	 * (and the application's own) can be merged */
	if (__atomic_load_n(&log_time, __ATOMIC_RELAXED) || shiftu_log_enabled(SHIFTU_LOG_DEBUG)) {
		struct timespec ts;
		unsigned int day;

		clock_gettime(CLOCK_REALTIME, &ts);
		day = (unsigned int)(ts.tv_sec % 86400);
		len = snprintf(buf, sizeof(buf), "%02u:%02u:%02u.%06ld ", day / 3600,
			       day / 60 % 60, day % 60, ts.tv_nsec / 1000);
		if (len < 0)
			goto out;
		n = len;
	}
	len = snprintf(buf + n, sizeof(buf) - n, "libshiftu[%d]: %s: ", (int)getpid(),
		       level_names[lvl]);
	if (len < 0)
		goto out;
	n += len;
	va_start(ap, fmt);
	len = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (len < 0)
		goto out;
	n += (size_t)len;
	if (n > sizeof(buf) - 2)	/* truncated: keep the newline */
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write per line; a short or failed write loses the line, no more */
	wr = write(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), buf, n);
	(void)wr;
out:
	errno = saved_errno;
}
