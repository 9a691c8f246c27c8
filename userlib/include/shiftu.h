/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libshiftu: RDMA NIC failover for verbs applications.
 *
 * The library is either preloaded (LD_PRELOAD=libshiftu.so.0) under an
 * unmodified verbs application, or linked by a program that wants the small
 * explicit API below: options before first use, per-QP and global
 * statistics, and a callback on failover events.  See libshiftu(7).
 *
 * Conventions, for every function here:
 *  - Errors are returned as a negative errno value; 0 (or a documented
 *    non-negative value) is success.  errno itself is left alone.
 *  - Structures that cross this interface start with a size field.  The
 *    caller sets it to sizeof() the structure as it was compiled against; the
 *    library handles a smaller (older) size by filling or reading only that
 *    much, and on output sets size to the number of bytes it filled.  A size
 *    below the first released size (SHIFTU_*_SIZE_VER0) is -EINVAL.  A larger
 *    (newer) input structure is accepted when the bytes the library does not
 *    know are zero, else -E2BIG.
 *  - Enumerations start at 0 meaning "unset" or "unknown"; real values start
 *    at 1.  Flag sets come with an _ALL mask and unknown flags are refused
 *    with -EOPNOTSUPP.
 *  - The library never prints except through its logger (SHIFTU_LOG) and
 *    never exits the process.
 *
 * Released symbols are versioned (SHIFTU_0.1) and never change.
 */
#ifndef _SHIFTU_H
#define _SHIFTU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_qp;

/* ---------------------------------------------------------------------- */
/* Version                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * shiftu_version - the version of the library actually loaded, as
 * "MAJOR.MINOR.PATCH[-suffix]" (the shift project's one version string).
 *
 * Returns a static string; never NULL.  Thread safe, async-signal safe.
 */
const char *shiftu_version(void);

/* ---------------------------------------------------------------------- */
/* Options                                                                 */
/* ---------------------------------------------------------------------- */

enum shiftu_log_level {
	SHIFTU_LOG_UNSPEC,		/* keep SHIFTU_LOG / the default */
	SHIFTU_LOG_OFF,
	SHIFTU_LOG_ERROR,
	SHIFTU_LOG_WARN,		/* the default */
	SHIFTU_LOG_INFO,
	SHIFTU_LOG_DEBUG,

	__SHIFTU_LOG_MAX,
	SHIFTU_LOG_MAX = __SHIFTU_LOG_MAX - 1
};

enum shiftu_backup_policy {
	SHIFTU_BACKUP_UNSPEC,		/* keep SHIFTU_DISABLE / the default */
	SHIFTU_BACKUP_ON,		/* protect QPs with a backup NIC (default) */
	SHIFTU_BACKUP_OFF,		/* pass everything through untouched */
};

/* shiftu_options.mask: which fields the caller sets */
#define SHIFTU_OPT_LOG_LEVEL		(1U << 0)
#define SHIFTU_OPT_STORE_URL		(1U << 1)
#define SHIFTU_OPT_BACKUP		(1U << 2)
#define SHIFTU_OPT_PROBE_MS		(1U << 3)
#define SHIFTU_OPT_ALL			(SHIFTU_OPT_LOG_LEVEL | SHIFTU_OPT_STORE_URL | \
					 SHIFTU_OPT_BACKUP | SHIFTU_OPT_PROBE_MS)

struct shiftu_options {
	uint32_t size;			/* sizeof(struct shiftu_options) */
	uint32_t mask;			/* SHIFTU_OPT_*: fields that are set */
	uint32_t log_level;		/* enum shiftu_log_level */
	uint32_t backup;		/* enum shiftu_backup_policy */
	const char *store_url;		/* as SHIFTU_STORE; copied */
	uint32_t probe_ms;		/* as SHIFTU_PROBE_MS, 1..3600000 */
	uint32_t reserved;		/* zero */
};

#define SHIFTU_OPTIONS_SIZE_VER0	32

/*
 * shiftu_set_options - override the environment before the library starts.
 *
 * Fields whose bit is set in opts->mask replace what the SHIFTU_* environment
 * variables (libshiftu(7)) gave; the others are left alone.  The library
 * starts at the application's first RDMA device open; after that the options
 * are fixed.
 *
 * Returns 0, or -EINVAL (NULL opts, size below SHIFTU_OPTIONS_SIZE_VER0, a
 * value out of range, a malformed store URL), -E2BIG (unknown non-zero
 * trailing bytes), -EOPNOTSUPP (unknown mask bits), -EBUSY (the library has
 * started: nothing was changed).  On error nothing is changed.
 *
 * Thread safe; meant to be called once, early, from main().
 */
int shiftu_set_options(const struct shiftu_options *opts);

/* ---------------------------------------------------------------------- */
/* Per-QP state                                                            */
/* ---------------------------------------------------------------------- */

/* State of a QP's send side (0: unknown) */
enum shiftu_send_state {
	SHIFTU_SEND_DEFAULT = 1,	/* posting to the primary NIC */
	SHIFTU_SEND_FALLBACK = 2,	/* failed over: posting to the backup NIC */
	SHIFTU_SEND_WAIT_SIGNALED = 3,	/* failing back: waiting for a signaled
					 * completion on the backup */
	SHIFTU_SEND_WAIT_DRAINED = 4,	/* failing back: waiting for the backup's
					 * send queue to drain */
};

/* State of a QP's receive side (0: unknown) */
enum shiftu_recv_state {
	SHIFTU_RECV_DEFAULT = 1,
	SHIFTU_RECV_FALLBACK = 2,
};

/* shiftu_qp_info.flags */
#define SHIFTU_QP_F_PROTECTED		(1U << 0)	/* has a backup QP */
#define SHIFTU_QP_F_PRIMARY_DOWN	(1U << 1)	/* the health table shows
							 * the QP's port or path
							 * down */
#define SHIFTU_QP_F_ALL			(SHIFTU_QP_F_PROTECTED | \
					 SHIFTU_QP_F_PRIMARY_DOWN)

struct shiftu_qp_info {
	uint32_t size;			/* in: sizeof; out: bytes filled */
	uint32_t flags;			/* SHIFTU_QP_F_* */
	uint32_t send_state;		/* enum shiftu_send_state */
	uint32_t recv_state;		/* enum shiftu_recv_state */
	uint64_t failovers;		/* primary -> backup switches */
	uint64_t failbacks;		/* backup -> primary switches */
	uint64_t replayed_wrs;		/* work requests posted again */
	uint64_t reserved[4];
};

#define SHIFTU_QP_INFO_SIZE_VER0	40

/*
 * shiftu_qp_state - what the library knows about one of the application's
 * QPs.
 *
 * info->size must be set.  Returns 0 with *info filled; -ENOENT when the QP
 * is not known to the library (not created through it, already destroyed,
 * or the library is not interposing); -EINVAL for NULL arguments or a size
 * below SHIFTU_QP_INFO_SIZE_VER0.
 *
 * Thread safe and lock free; the counters are read one by one, so a snapshot
 * taken while the QP fails over may mix before and after.  The QP must not
 * be destroyed concurrently (the verbs rule for any call on a QP).
 */
int shiftu_qp_state(struct ibv_qp *qp, struct shiftu_qp_info *info);

/* ---------------------------------------------------------------------- */
/* Global statistics                                                       */
/* ---------------------------------------------------------------------- */

/* shiftu_stats.flags */
#define SHIFTU_STATS_F_HEALTH_PAGE	(1U << 0)	/* /dev/shift_ft mapped */
#define SHIFTU_STATS_F_DISABLED		(1U << 1)	/* backup policy off */
#define SHIFTU_STATS_F_ALL		(SHIFTU_STATS_F_HEALTH_PAGE | \
					 SHIFTU_STATS_F_DISABLED)

struct shiftu_stats {
	uint32_t size;			/* in: sizeof; out: bytes filled */
	uint32_t flags;			/* SHIFTU_STATS_F_* */
	uint64_t qps;			/* QPs known now */
	uint64_t qps_protected;		/* of which with a backup */
	uint64_t failovers;		/* totals since the library started */
	uint64_t failbacks;
	uint64_t replayed_wrs;
	uint64_t atomic_errors;		/* atomics failed back to the app */
	uint64_t unprotected;		/* QPs that lost their protection */
	uint64_t health_generation;	/* table generation last seen, 0: none */
	/* since SHIFTU_STATS_SIZE_VER1: records read from the store and
	 * dropped, unsigned or badly signed under SHIFTU_STORE_KEY_FILE */
	uint64_t records_dropped;
	uint64_t reserved[3];
};

#define SHIFTU_STATS_SIZE_VER0		72
#define SHIFTU_STATS_SIZE_VER1		80

/*
 * shiftu_stats - process-wide counters.
 *
 * st->size must be set.  Returns 0, or -EINVAL for NULL or a size below
 * SHIFTU_STATS_SIZE_VER0.  Thread safe and lock free; counters are read one
 * by one (not an atomic snapshot).
 */
int shiftu_stats(struct shiftu_stats *st);

/* ---------------------------------------------------------------------- */
/* Events                                                                  */
/* ---------------------------------------------------------------------- */

enum shiftu_event_type {
	SHIFTU_EV_UNSPEC,
	SHIFTU_EV_FAILOVER,		/* a QP moved to its backup port */
	SHIFTU_EV_FAILBACK,		/* a QP returned to its primary port */
	SHIFTU_EV_UNPROTECTED,		/* a QP has no usable backup any more */
	SHIFTU_EV_ATOMIC_ERROR,		/* an atomic could not be replayed and
					 * was failed back to the application */

	__SHIFTU_EV_MAX,
	SHIFTU_EV_MAX = __SHIFTU_EV_MAX - 1
};

struct shiftu_event {
	uint32_t size;			/* sizeof as the library has it */
	uint32_t type;			/* enum shiftu_event_type */
	struct ibv_qp *qp;		/* the application's QP, NULL: none */
	const char *from_dev;		/* port left: device name, "" none */
	uint32_t from_port;		/* port number, 0: none */
	uint32_t to_port;
	const char *to_dev;		/* port taken */
	uint64_t time_ns;		/* CLOCK_MONOTONIC */
	int32_t err;			/* -errno behind the event, 0: none */
	uint32_t reserved;
};

/*
 * The callback runs on whichever thread noticed the event: an application
 * thread inside a verbs call, or the library's background thread.  It must
 * return quickly, must not destroy the QP it is told about, and may call
 * shiftu_qp_state() and shiftu_stats().  The strings and *ev live only for
 * the duration of the call.
 */
typedef void (*shiftu_event_cb)(const struct shiftu_event *ev, void *arg);

/*
 * shiftu_set_event_cb - register (cb != NULL) or remove (cb == NULL) the one
 * event callback of the process, replacing any previous one.
 *
 * Returns 0.  Thread safe.  A call of the previous callback already under
 * way on another thread may still be running when this returns.
 */
int shiftu_set_event_cb(shiftu_event_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* _SHIFTU_H */
