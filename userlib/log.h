/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log.h: the one logger of libshiftu.
 *
 * Lines look like "libshiftu[PID]: LEVEL: message" and go to SHIFTU_LOG_FILE
 * or stderr, one write(2) per line so that lines from several threads or
 * processes sharing the file do not interleave.  The level comes from
 * SHIFTU_LOG or shiftu_set_options().  Nothing else in the library
 * prints.  The logger never exits and never fails loudly: a line it cannot
 * write is dropped.
 */
#ifndef _SHIFTU_LOG_H
#define _SHIFTU_LOG_H

#include <stdbool.h>
#include "shiftu.h"

/*
 * Current level (SHIFTU_LOG_DEBUG until the logger is set up, so that early
 * lines reach shiftu_log_line(), which reads SHIFTU_LOG first).
 * Written by shiftu_log_setup()/shiftu_log_set_level()
 * (relaxed: a thread that sees the old level for a while logs one line more
 * or less); read relaxed by shiftu_log_enabled().
 */
extern int shiftu_log_level_cur;

static inline bool shiftu_log_enabled(enum shiftu_log_level lvl)
{
	return (int)lvl <= __atomic_load_n(&shiftu_log_level_cur, __ATOMIC_RELAXED);
}

/*
 * Point the logger at @path (NULL or "": stderr) with @lvl.  Called once by
 * the configuration (config.c) before anything else logs, and by tests.
 * Returns 0, or -errno when @path cannot be opened: the logger then writes
 * to stderr.  Not thread safe against itself.
 */
int shiftu_log_setup(enum shiftu_log_level lvl, const char *path);

/*
 * Set the logger up from the environment (SHIFTU_LOG, SHIFTU_LOG_FILE; a bad
 * level is taken as warn here, and config.c says so), once, unless
 * shiftu_log_setup() ran first.  The configuration calls it before it reads
 * the rest; a line logged before that calls it too.  Thread safe.
 */
void shiftu_log_from_env(void);

/* SHIFTU_LOG's names: "off", "error", "warn", "info", "debug"; 0 or -EINVAL. */
int shiftu_parse_log_level(const char *s, enum shiftu_log_level *out);
const char *shiftu_log_level_name(enum shiftu_log_level lvl);

/* Change the level only; thread safe. */
void shiftu_log_set_level(enum shiftu_log_level lvl);

/* Start every line with its UTC wall time (debug lines always have it);
 * thread safe. */
void shiftu_log_set_time(bool on);

/* Write one line at @lvl, unconditionally; callers use the macros below. */
void shiftu_log_line(enum shiftu_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));

#define shiftu_log(lvl, ...)						\
	do {								\
		if (__builtin_expect(shiftu_log_enabled(lvl), 0))	\
			shiftu_log_line(lvl, __VA_ARGS__);		\
	} while (0)

#define shiftu_err(...)		shiftu_log(SHIFTU_LOG_ERROR, __VA_ARGS__)
#define shiftu_warn(...)	shiftu_log(SHIFTU_LOG_WARN, __VA_ARGS__)
#define shiftu_info(...)	shiftu_log(SHIFTU_LOG_INFO, __VA_ARGS__)
#define shiftu_dbg(...)		shiftu_log(SHIFTU_LOG_DEBUG, __VA_ARGS__)

#endif /* _SHIFTU_LOG_H */
