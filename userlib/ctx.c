// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ctx.c: the contexts' list (interpose.h, interpose_int.h): the nodes
 * interpose.c attaches and detaches, the lock its writers take, the
 * lock-free lookup of a context's node, and what a poll looks at in each
 * completion (shiftu_wc_look).
 */
#include <pthread.h>
#include <stdint.h>

#include "interpose.h"
#include "interpose_int.h"
#include "lockorder.h"

/*
 * Contexts, newest first.  Nodes are never freed: a closed context's node
 * is kept (ctx NULL) and reused, so that a lock-free walker (poll_cq) never
 * reads freed memory.  Pushes publish with release; walkers load acquire.
 */
struct shiftu_ctx *shiftu_ctx_list;
uint64_t shiftu_wc_look = SHIFTU_WC_LOOK_ERRORS;
pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
SHIFTU_FORK_HOOK(ctx, .rank = SHIFTU_RANK_CTX, .name = "ctx_lock", .lock = &ctx_lock);

struct shiftu_ctx *shiftu_ctx_find(const struct ibv_context *ctx)
{
	/* pairs with the release in ctx_attach() */
	struct shiftu_ctx *s = __atomic_load_n(&shiftu_ctx_list, __ATOMIC_ACQUIRE);

	while (s && s->ctx != ctx)
		s = s->next;
	return s;
}
