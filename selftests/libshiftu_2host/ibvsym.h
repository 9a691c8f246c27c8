/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ibvsym.h: build a verbs program so that it reaches libibverbs the way
 * NCCL's default build does (src/misc/ibvsymbols.cc): not linked against
 * it, but dlopen("libibverbs.so"), else "libibverbs.so.1", with RTLD_NOW,
 * and every verb looked up by that handle with dlvsym(handle, name,
 * "IBVERBS_1.1"), or the version that introduced it.  Given to the compiler
 * before the program's own source (shiftgen_dl.c), it turns each exported verb the program calls into a call
 * through the pointer ibvsym.c resolved before main().  The data verbs
 * (post, poll, the wr_* builders, ibv_create_qp_ex) are inlines through the
 * provider's pointers, as in NCCL: they stay as they are.
 */
#ifndef _IBVSYM_H
#define _IBVSYM_H

#include <infiniband/verbs.h>

struct ibvsym {
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
	int (*destroy_srq)(struct ibv_srq *srq);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *qp);
	const char *(*wc_status_str)(enum ibv_wc_status status);
	const char *(*port_state_str)(enum ibv_port_state state);
};

extern struct ibvsym ibvsym;

/* verbs.h makes these two macros around inlines; replace them outright */
#undef ibv_reg_mr
#undef ibv_query_port

#define ibv_get_device_list (*ibvsym.get_device_list)
#define ibv_free_device_list (*ibvsym.free_device_list)
#define ibv_get_device_name (*ibvsym.get_device_name)
#define ibv_open_device (*ibvsym.open_device)
#define ibv_close_device (*ibvsym.close_device)
#define ibv_query_device (*ibvsym.query_device)
#define ibv_query_port (*ibvsym.query_port)
#define ibv_query_gid (*ibvsym.query_gid)
#define ibv_alloc_pd (*ibvsym.alloc_pd)
#define ibv_dealloc_pd (*ibvsym.dealloc_pd)
#define ibv_reg_mr (*ibvsym.reg_mr)
#define ibv_dereg_mr (*ibvsym.dereg_mr)
#define ibv_create_comp_channel (*ibvsym.create_comp_channel)
#define ibv_destroy_comp_channel (*ibvsym.destroy_comp_channel)
#define ibv_create_cq (*ibvsym.create_cq)
#define ibv_destroy_cq (*ibvsym.destroy_cq)
#define ibv_get_cq_event (*ibvsym.get_cq_event)
#define ibv_ack_cq_events (*ibvsym.ack_cq_events)
#define ibv_create_qp (*ibvsym.create_qp)
#define ibv_modify_qp (*ibvsym.modify_qp)
#define ibv_destroy_qp (*ibvsym.destroy_qp)
#define ibv_create_srq (*ibvsym.create_srq)
#define ibv_destroy_srq (*ibvsym.destroy_srq)
#define ibv_qp_to_qp_ex (*ibvsym.qp_to_qp_ex)
#define ibv_wc_status_str (*ibvsym.wc_status_str)
#define ibv_port_state_str (*ibvsym.port_state_str)

#endif
