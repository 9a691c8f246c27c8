/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake Soft-RoCE send ring for the host tests of the library's ring
 * readers (provq.c): the layout of <rdma/rdma_user_rxe.h>, SLOTS slots of
 * ELEM bytes, zeroed as a QP's reset leaves them.
 */
#ifndef _SHIFTU_FAKERING_H
#define _SHIFTU_FAKERING_H

#include <stdlib.h>

#include <rdma/rdma_user_rxe.h>

#define SLOTS	16
#define ELEM	256		/* a send WQE with its sges fits */

static inline struct rxe_queue_buf *ring(void)
{
	struct rxe_queue_buf *q = calloc(1, sizeof(*q) + SLOTS * ELEM);

	q->index_mask = SLOTS - 1;
	q->log2_elem_size = 8;
	return q;
}

static inline struct rxe_send_wqe *at(struct rxe_queue_buf *q, uint32_t i)
{
	return (void *)(q->data + (size_t)(i & (SLOTS - 1)) * ELEM);
}

#endif /* _SHIFTU_FAKERING_H */
