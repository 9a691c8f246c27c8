// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lockcheck.c: the test build's check of the lock order (lock.h,
 * lockorder.h), never linked into libshiftu.so.  Each thread keeps the
 * classes of the locks it holds, in the order it took them; a take that
 * lockorder.h does not allow (a class before one held, a leaf held, a third
 * CQ) is logged as an error with the whole list (where the log goes:
 * stderr by default) and aborts the process.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lock.h"
#include "log.h"

#ifndef SHIFTU_TEST_BUILD
#error "lockcheck.c belongs to the test build only (-DSHIFTU_TEST_BUILD)"
#endif

/* more than any path holds: the deepest is SERVE SHADOW VQ FO CQ_LIST CQ CQ SRQ leaf */
#define HELD_MAX	16

static const char *const class_name[SHIFTU_LOCK_CLASSES] = {
	[SHIFTU_LOCK_SERVE]	= "serve_lock",
	[SHIFTU_LOCK_SHADOW]	= "shadow_lock",
	[SHIFTU_LOCK_VQ]	= "a QP's lock",
	[SHIFTU_LOCK_FO]	= "a QP's fo_lock",
	[SHIFTU_LOCK_CQ_LIST]	= "cq_lock",
	[SHIFTU_LOCK_CQ]	= "a CQ's lock",
	[SHIFTU_LOCK_SRQ]	= "srq_lock",
	[SHIFTU_LOCK_MR]	= "mr_lock",
	[SHIFTU_LOCK_FORGET]	= "forget_lock",
	[SHIFTU_LOCK_BACKER]	= "backer_lock",
	[SHIFTU_LOCK_NL]	= "nl_lock",
	[SHIFTU_LOCK_VQP]	= "vqp_lock",
	[SHIFTU_LOCK_CTX]	= "ctx_lock",
	[SHIFTU_LOCK_CQX]	= "cqx_lock",
	[SHIFTU_LOCK_BOX]	= "box_lock",
	[SHIFTU_LOCK_REG]	= "reg_lock",
	[SHIFTU_LOCK_HEALTH]	= "health_lock",
	[SHIFTU_LOCK_WINDOWS]	= "windows_lock",
	[SHIFTU_LOCK_CH]	= "ch_lock",
	[SHIFTU_LOCK_CB]	= "cb_lock",
	[SHIFTU_LOCK_CONFIG]	= "config_lock",
};

static __thread struct {
	unsigned char cls[HELD_MAX];
	unsigned int n;
} held __attribute__((tls_model("initial-exec")));

static __attribute__((noreturn, cold)) void order_broken(enum shiftu_lock_class c,
							 const char *why)
{
	char list[HELD_MAX * 24] = "";
	size_t off = 0;
	unsigned int i;

	for (i = 0; i < held.n && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "",
				class_name[held.cls[i]]);
	shiftu_log_line(SHIFTU_LOG_ERROR, "lock order: taking %s while holding %s (%s): lockorder.h",
			class_name[c], list, why);
	abort();
}

void shiftu_lock_check(enum shiftu_lock_class c)
{
	unsigned int i, same = 0;

	for (i = 0; i < held.n; i++) {
		if (held.cls[i] >= SHIFTU_LOCK_LEAF)
			order_broken(c, "a leaf is held");
		if (held.cls[i] > c)
			order_broken(c, "a later lock is held");
		same += held.cls[i] == c;
	}
	if (same && (c != SHIFTU_LOCK_CQ || same > 1))
		order_broken(c, "one of its class is held");
	if (held.n == HELD_MAX)
		order_broken(c, "too many held");
}

void shiftu_lock_held(enum shiftu_lock_class c)
{
	if (held.n < HELD_MAX)
		held.cls[held.n++] = c;
}

/* the last taken of class @c goes: locks are not always let go in order */
void shiftu_lock_gone(enum shiftu_lock_class c)
{
	unsigned int i = held.n;

	while (i > 0 && held.cls[i - 1] != c)
		i--;
	if (!i) {
		shiftu_log_line(SHIFTU_LOG_ERROR, "lock order: letting go of %s, which this thread does not hold",
				class_name[c]);
		abort();
	}
	for (; i < held.n; i++)
		held.cls[i - 1] = held.cls[i];
	held.n--;
}
