// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork.c: the library's locks in their order, and the library across
 * fork(2) (fork.h).
 */
#include <pthread.h>

#include "fork.h"

const struct shiftu_lock_ref shiftu_lock_order[] = {
	{ "shadow_lock", &shadow_lock },
	{ "records", NULL },		/* QPs', fo_locks, cq_lock, CQs' */
	{ "mr_lock", &mr_lock },
	{ "kv_fast_lock", &kv_fast_lock },
	{ "nl_lock", &nl_lock },
	{ "vqp_lock", &vqp_lock },
	{ "ctx_lock", &ctx_lock },
	{ "reg_lock", &reg_lock },
	{ "health_lock", &health_lock },
	{ "windows_lock", &windows_lock },
	{ "ch_lock", &ch_lock },
	{ "cb_lock", &cb_lock },
	{ "config_lock", &config_lock },
	{ NULL, NULL },
};
