/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctxstate.h: the library's state of one opened device context (struct
 * shiftu_ctx): the provider's data verbs it replaced, what a poll's
 * common path compares, the receive cache, and its backup.  Types only;
 * interpose.c attaches a context and finds it again (interpose.h).
 */
#ifndef _SHIFTU_CTXSTATE_H
#define _SHIFTU_CTXSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct shiftu_vqp;
struct shiftu_wrids;

/*
 * One per opened device context: the provider's function pointers that the
 * library replaced.  Written once at attach, before the context is handed to
 * the application (which is what orders it for the application's threads);
 * read-only after that.
 */
struct shiftu_ctx {
	struct ibv_context *ctx;
	struct shiftu_ctx *next;		/* shiftu_ctx_list, under ctx_lock */
	char dev_name[IBV_SYSFS_NAME_MAX];
	uint64_t node_guid;			/* host order, as the page has it */
	int max_cqe;				/* the device's, 0 if unknown */

	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*poll_cq)(struct ibv_cq *cq, int num, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *ctx,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *ctx,
					  struct ibv_cq_init_attr_ex *attr);

	/*
	 * What a poll's common path compares with the health page's sequence
	 * (zero-extended): one 64-bit word, so that a page that moved and a
	 * context that needs the slow poll are one test.  Each half is
	 * written on its own, relaxed; the poller reads the word in one
	 * aligned load, which sees each half whole.
	 *
	 * @health_seen: page seq the context's pollers last acted on (a
	 * sender whose send queue is full only polls, so the poll path must
	 * notice a failure too).  Written only when the page moved (rarely).
	 * @slow_cqs: non-zero while any of the context's CQs needs the slow
	 * poll: a QP on its backup, or completions the library holds.
	 * Written under the CQ's lock (atomic add).
	 */
	union {
		struct {
			uint32_t health_seen;
			uint32_t slow_cqs;
		};
		uint64_t seen_slow;
	};

	/*
	 * Receive completions are counted per QP when shiftu_wc_look says so
	 * (the two-way handshake, handshake.c): a direct-mapped cache from QP
	 * number to QP saves the registry walk.  A slot holds a QP whose
	 * receives the poll's common path may count as they come, or
	 * shiftu_vqp_none, whose number matches none: never NULL.  Filled by
	 * pollers and emptied when the QP goes or owes counts (@recv_owed),
	 * all under the registry's lock.
	 */
	struct shiftu_vqp *rcache[64];

	/* the application's ids renamed (rename.c): made at the first,
	 * published with release, kept with the context */
	struct shiftu_wrids *wrids;

	/* the shadow thread makes its backup (twin.c; shadow_lock) */
	bool shadowed;
	/* the backup: written by the shadow thread only (twin.c) */
	struct ibv_context *bak_ctx;
	struct ibv_comp_channel *bak_channel;	/* its twin CQs' events */
	uint8_t bak_port;
	char bak_name[IBV_SYSFS_NAME_MAX];
};

#endif /* _SHIFTU_CTXSTATE_H */
