/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * real.h: the functions of the real libibverbs that the library calls,
 * found past its own definitions of the verbs (real.c; interpose.h says
 * why they are past them).
 */
#ifndef _SHIFTU_REAL_H
#define _SHIFTU_REAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/*
 * The real verbs, resolved once (real.c).  Every libibverbs function
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
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 int access);
	struct ibv_mr *(*reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length,
				      uint64_t iova, int access);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t length,
				       uint64_t iova, unsigned int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	int (*rereg_mr)(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			size_t length, int access);
	/* NULL in a libibverbs older than IBVERBS_1.12 */
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, int access);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int comp_vector);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index,
			 union ibv_gid *gid);
	const char *(*get_device_name)(struct ibv_device *dev);
	__be64 (*get_device_guid)(struct ibv_device *dev);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *qp);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *channel);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*get_cq_event)(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			    void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
#ifdef SHIFTU_TEST_BUILD
	/* SHIFTU_TEST_RESET_FILE's reset in place (shadow.c) */
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
#endif
};

extern struct shiftu_real shiftu_real;

/* Resolve shiftu_real once; false, with errno ENOSYS, if it cannot be. */
bool shiftu_real_verbs(void);

#endif /* _SHIFTU_REAL_H */
