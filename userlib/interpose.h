/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interpose.h: how libshiftu stands between an application and libibverbs.
 *
 * Control verbs are exported functions of libibverbs, so the library defines
 * the same symbols, with the same symbol version (IBVERBS_1.1, see
 * libshiftu.map); preloaded or linked ahead of libibverbs, its definitions
 * win, and it reaches the real ones with dlvsym(RTLD_NEXT).  Data verbs are
 * static inlines that jump through function pointers the provider filled in:
 * the context's ops (post_send, post_recv, poll_cq), the extended context's
 * create_qp_ex, and each extended QP's wr_* members.  When a device is
 * opened the library keeps the provider's pointers and puts its own in their
 * place; its versions look up their object, do the cheap check, and call
 * the provider's.
 *
 * Lifetimes follow the verbs rules: an object is not used concurrently with
 * or after its destroy call, and a context outlives its QPs and CQs.
 */
#ifndef _SHIFTU_INTERPOSE_H
#define _SHIFTU_INTERPOSE_H

#include <stdint.h>

#include <infiniband/verbs.h>

#include "qp.h"

/*
 * The real verbs, resolved once (interpose.c).  Every libibverbs function
 * the library calls is reached through here, so that the library does not
 * need libibverbs loaded: a preloaded program that never opens a device
 * loads nothing more.
 */
struct shiftu_real {
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	const char *(*get_device_name)(struct ibv_device *dev);
	__be64 (*get_device_guid)(struct ibv_device *dev);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *qp);
};

extern struct shiftu_real shiftu_real;

/*
 * One per opened device context: the provider's function pointers that the
 * library replaced.  Written once at attach, before the context is handed to
 * the application (which is what orders it for the application's threads);
 * read-only after that.  poll_cqs is statistics (a relaxed, unlocked count).
 */
struct shiftu_ctx {
	struct ibv_context *ctx;
	struct shiftu_ctx *next;		/* ctx_list, under ctx_lock */
	char dev_name[IBV_SYSFS_NAME_MAX];
	uint64_t node_guid;			/* host order, as the page has it */

	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*poll_cq)(struct ibv_cq *cq, int num, struct ibv_wc *wc);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *ctx,
				       struct ibv_qp_init_attr_ex *attr);

	uint64_t poll_cqs __attribute__((aligned(64)));
};

/*
 * The library's state of one application QP.  @reg is the registry entry
 * (qp.h) and comes first, so that a lookup's result is this struct.  The
 * fast path reads @reg.app_qp, @health_seen, @down and the provider's
 * pointers, all on the first two cache lines; the counters are written by
 * the posting thread with relaxed load and store (statistics: concurrent
 * posters on one QP may lose a count, never corrupt anything).
 */
struct shiftu_vqp {
	struct shiftu_qp reg;
	struct shiftu_ctx *sctx;
	uint32_t health_seen;		/* page seq last acted on (health.h) */
	uint8_t down;			/* the table shows our port or path down */
	uint8_t port_num;		/* from ibv_modify_qp(IBV_QP_PORT), 0: unset */
	uint8_t has_dgid;
	uint8_t pad;
	uint8_t dgid[16];		/* from ibv_modify_qp(IBV_QP_AV) */

	/* the provider's, copied here so the fast path touches one object */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	void (*wr_start)(struct ibv_qp_ex *qpx);
	int (*wr_complete)(struct ibv_qp_ex *qpx);

	uint64_t post_sends;
	uint64_t post_recvs;
	uint64_t wr_starts;
	uint64_t wr_completes;
};

/* The context's state, NULL if the library does not manage it.  Cold. */
struct shiftu_ctx *shiftu_ctx_find(const struct ibv_context *ctx);

/* Statistics counter bump: relaxed load and store, no locked instruction. */
static inline void shiftu_bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/* datapath.c: the replacements of the provider's data verbs. */
int shiftu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr);
int shiftu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
int shiftu_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
void shiftu_wr_start(struct ibv_qp_ex *qpx);
int shiftu_wr_complete(struct ibv_qp_ex *qpx);

/*
 * Re-read what the table says about @vq's port and path after the page
 * moved, and record it in @vq->down.  Cold; any thread posting on @vq.
 */
void shiftu_vqp_health(struct shiftu_vqp *vq);

#endif /* _SHIFTU_INTERPOSE_H */
