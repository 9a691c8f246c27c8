/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wrapi.h: the extended send API on a protected QP (wrapi.c).
 */
#ifndef _SHIFTU_WRAPI_H
#define _SHIFTU_WRAPI_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct shiftu_vqp;

/* The operations a protected extended QP may ask for: those replayed. */
#define SHIFTU_WR_OPS	(IBV_QP_EX_WITH_RDMA_WRITE |			\
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |		\
			 IBV_QP_EX_WITH_SEND |				\
			 IBV_QP_EX_WITH_SEND_WITH_IMM |			\
			 IBV_QP_EX_WITH_RDMA_READ |			\
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		\
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* @send_ops_flags (ibv_qp_init_attr_ex) asks only for SHIFTU_WR_OPS. */
bool shiftu_wr_ops_covered(uint64_t send_ops_flags);

/*
 * Put the library's builders in @qpx, @vq's extended QP, with a batch sized
 * by @vq->init_attr.cap.  Context: the create verb, before the application
 * has the QP.  Returns 0 or -ENOMEM (then @qpx is untouched).
 */
int shiftu_wr_attach(struct shiftu_vqp *vq, struct ibv_qp_ex *qpx);

/*
 * @vq's batches may be direct (built by the provider's builders in its
 * ring, see wrapi.c), and one is open now: its poster holds the provider's
 * send queue.  Any thread; the second is read after shiftu_quiesce().
 */
bool shiftu_wr_can_direct(const struct shiftu_vqp *vq);
bool shiftu_wr_direct_open(const struct shiftu_vqp *vq);

/*
 * Hold @vq's batch of the extended send API, as its wr_start does, so that
 * no batch is open while its send queue changes poster (posters.h): true
 * if taken now (give it back with shiftu_wr_release()), false if the QP
 * has no batch or the calling thread holds it already (a batch of the
 * library's builders posting its chain).  Waits, yielding, for another
 * thread's batch.  Context: no lock of the library held, windows closed.
 */
bool shiftu_wr_hold(struct shiftu_vqp *vq);
void shiftu_wr_release(struct shiftu_vqp *vq);

/* Free @vq's batch.  Context: destroy, the QP no longer in use. */
void shiftu_wr_detach(struct shiftu_vqp *vq);

#endif /* _SHIFTU_WRAPI_H */
