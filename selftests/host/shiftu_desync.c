// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_desync: a "remote invalid request" error completion is taken for
 * the transport's (the responder lost its place in a message) only when
 * the provider's send ring shows it on an RDMA WRITE or a SEND, behind a
 * request of the application's of the same kind, at least as long, that
 * completed on the same connection (shiftu_provq_desync(), provq.c); a
 * first WRITE's or SEND's, one longer than any before it, one behind only
 * requests of the other kind, one behind the QP's last reset, an atomic's
 * or a READ's, or one whose slot was written again, stays the
 * application's.  An error is a receive's when the receive ring's taken
 * slots hold its id and no request of the send ring completed with it
 * (shiftu_provq_recv_error()).
 *
 * The ring is a fake one in the format of <rdma/rdma_user_rxe.h>
 * (Soft-RoCE's, which the library reads in the lab): the completed
 * requests lie between the producer index's last lap and the consumer
 * index, each with the status the kernel wrote into its slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "fakering.h"
#include "provq.h"
#include "wrid.h"

#include "kselftest_harness.h"

/* slot @i: request @wr_id, @op of @len bytes, completed with @status */
static void put(struct rxe_queue_buf *q, uint32_t i, uint64_t wr_id, uint32_t op,
		uint32_t len, uint32_t status)
{
	struct rxe_send_wqe *w = at(q, i);

	w->wr.wr_id = wr_id;
	w->wr.opcode = op;
	w->dma.length = len;
	w->dma.num_sge = len ? 1 : 0;
	w->status = status;
}

/* what the soak saw: chunk 1 of a message refused, its chunk 0 completed */
TEST(write_behind_a_write)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, PROBE_WR_ID, IBV_WR_RDMA_WRITE, 0, IBV_WC_SUCCESS);
	put(q, 1, SHIFTU_CTRL_SEND_ID, IBV_WR_SEND_WITH_IMM, 0, IBV_WC_SUCCESS);
	put(q, 2, 0x10000000a3010000ULL, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	put(q, 3, 0x10000000a3010001ULL, IBV_WR_RDMA_WRITE, 4096, IBV_WC_REM_INV_REQ_ERR);
	put(q, 4, 0x10000000a3010002ULL, IBV_WR_RDMA_WRITE, 4096, IBV_WC_WR_FLUSH_ERR);
	put(q, 5, 0x20000000a3010003ULL, IBV_WR_RDMA_WRITE_WITH_IMM, 4096, IBV_WC_WR_FLUSH_ERR);
	q->producer_index = 6;
	q->consumer_index = 6;
	EXPECT_STREQ("an RDMA WRITE", shiftu_provq_desync(q, 0x10000000a3010001ULL));
	/* the error's id names it, not a flushed one */
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 0x10000000a3010002ULL));
	free(q);
}

/* a WRITE_WITH_IMM refused behind its message's data */
TEST(write_imm_behind_its_data)
{
	struct rxe_queue_buf *q = ring();

	put(q, 14, 1, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	put(q, 15, 2, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	put(q, 0, 3, IBV_WR_RDMA_WRITE_WITH_IMM, 4096, IBV_WC_REM_INV_REQ_ERR);
	put(q, 1, 4, IBV_WR_RDMA_WRITE, 4096, IBV_WC_WR_FLUSH_ERR);
	/* across the ring's end; one request still outstanding */
	q->producer_index = 3;
	q->consumer_index = 2;
	put(q, 2, 5, IBV_WR_RDMA_WRITE, 4096, 0);
	EXPECT_NE(NULL, shiftu_provq_desync(q, 3));
	free(q);
}

/* the peer may refuse every WRITE (no remote write granted): a first one
 * proves nothing, nor does the library's empty probe before it */
TEST(first_write)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, PROBE_WR_ID, IBV_WR_RDMA_WRITE, 0, IBV_WC_SUCCESS);
	put(q, 1, 7, IBV_WR_RDMA_WRITE, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 2;
	q->consumer_index = 2;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 7));
	free(q);
}

/* the path MTUs may differ: a shorter WRITE before it proves nothing */
TEST(longer_than_any_before)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_RDMA_WRITE, 512, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_RDMA_WRITE, 8192, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 2;
	q->consumer_index = 2;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	free(q);
}

/* the soak's send pair: a 4 KiB SEND refused behind one the peer's
 * receive took (and with immediate data behind one without) */
TEST(send_behind_a_send)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_SEND, 4096, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_SEND, 4096, IBV_WC_REM_INV_REQ_ERR);
	put(q, 2, 3, IBV_WR_SEND, 4096, IBV_WC_WR_FLUSH_ERR);
	q->producer_index = 3;
	q->consumer_index = 3;
	EXPECT_STREQ("a SEND", shiftu_provq_desync(q, 2));
	put(q, 1, 2, IBV_WR_SEND, 4096, IBV_WC_SUCCESS);
	put(q, 2, 3, IBV_WR_SEND_WITH_IMM, 2048, IBV_WC_REM_INV_REQ_ERR);
	EXPECT_NE(NULL, shiftu_provq_desync(q, 3));
	free(q);
}

/*
 * The receive too short is the classic refusal of a SEND: a first SEND, or
 * one longer than any the peer's receives took, stays the application's;
 * so does one behind only WRITEs, which say nothing of the receives
 */
TEST(send_stays_the_applications)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_SEND, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 1;
	q->consumer_index = 1;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 1));
	put(q, 0, 1, IBV_WR_SEND, 1024, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_SEND, 4096, IBV_WC_REM_INV_REQ_ERR);
	put(q, 2, 3, IBV_WR_RDMA_WRITE, 8192, IBV_WC_SUCCESS);
	put(q, 3, 4, IBV_WR_SEND, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 4;
	q->consumer_index = 4;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 4));
	free(q);
}

/* a WRITE behind only SENDs: the SENDs say nothing of its remote access */
TEST(write_behind_only_sends)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_SEND, 4096, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_RDMA_WRITE, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 2;
	q->consumer_index = 2;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	free(q);
}

/* an atomic or a READ refused is the application's, whatever came before */
TEST(atomic_and_read_stay_the_applications)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, IBV_WC_REM_INV_REQ_ERR);
	put(q, 2, 3, IBV_WR_RDMA_READ, 4096, IBV_WC_SUCCESS);
	put(q, 3, 4, IBV_WR_RDMA_READ, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 4;
	q->consumer_index = 4;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 4));
	free(q);
}

/* the zeroed slots of the QP's last reset end the search: what lies
 * before them was another connection's */
TEST(not_past_a_reset)
{
	struct rxe_queue_buf *q = ring();

	put(q, 8, 1, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	/* slot 9 zeroed */
	put(q, 10, PROBE_WR_ID, IBV_WR_RDMA_WRITE, 0, IBV_WC_SUCCESS);
	put(q, 11, 2, IBV_WR_RDMA_WRITE, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 12;
	q->consumer_index = 12;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	free(q);
}

/* no slot with that id and status (written again since): not known */
TEST(slot_gone)
{
	struct rxe_queue_buf *q = ring();

	put(q, 0, 1, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	put(q, 1, 2, IBV_WR_RDMA_WRITE, 4096, IBV_WC_SUCCESS);
	q->producer_index = 2;
	q->consumer_index = 2;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 2));
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 9));
	/* still outstanding: not a completion the kernel wrote yet */
	put(q, 2, 3, IBV_WR_RDMA_WRITE, 4096, IBV_WC_REM_INV_REQ_ERR);
	q->producer_index = 3;
	EXPECT_EQ(NULL, shiftu_provq_desync(q, 3));
	free(q);
}

/* receive ring slot @i: receive @wr_id */
static void put_recv(struct rxe_queue_buf *q, uint32_t i, uint64_t wr_id)
{
	struct rxe_recv_wqe *w = (void *)at(q, i);

	w->wr_id = wr_id;
	w->dma.length = 4096;
	w->dma.num_sge = 1;
}

/*
 * The receive side of a refused SEND (shiftu_provq_recv_error()): the
 * error's id is a receive the responder took, and no request of the send
 * ring completed with that status under it
 */
TEST(receive_refused)
{
	struct rxe_queue_buf *sq = ring(), *rq = ring();

	put(sq, 0, 7, IBV_WR_SEND, 64, IBV_WC_SUCCESS);
	sq->producer_index = 1;
	sq->consumer_index = 1;
	put_recv(rq, 0, 0x50);
	put_recv(rq, 1, 0x51);
	put_recv(rq, 2, 0x52);
	rq->producer_index = 3;
	/* 0x50 completed, 0x51 refused, 0x52 flushed after it */
	rq->consumer_index = 3;
	EXPECT_TRUE(shiftu_provq_recv_error(sq, rq, 0x51, IBV_WC_REM_INV_REQ_ERR));
	/* an id no receive had */
	EXPECT_FALSE(shiftu_provq_recv_error(sq, rq, 0x99, IBV_WC_REM_INV_REQ_ERR));
	/* still outstanding: the responder has not taken it */
	rq->consumer_index = 1;
	EXPECT_FALSE(shiftu_provq_recv_error(sq, rq, 0x52, IBV_WC_REM_INV_REQ_ERR));
	free(sq);
	free(rq);
}

/* the same id on a SEND of ours that was refused: the request's error */
TEST(send_refused_not_a_receive)
{
	struct rxe_queue_buf *sq = ring(), *rq = ring();

	put(sq, 0, 0x51, IBV_WR_SEND, 4096, IBV_WC_REM_INV_REQ_ERR);
	sq->producer_index = 1;
	sq->consumer_index = 1;
	put_recv(rq, 0, 0x51);
	rq->producer_index = 1;
	rq->consumer_index = 1;
	EXPECT_FALSE(shiftu_provq_recv_error(sq, rq, 0x51, IBV_WC_REM_INV_REQ_ERR));
	/* a SEND of that id that completed says nothing against it */
	put(sq, 0, 0x51, IBV_WR_SEND, 4096, IBV_WC_SUCCESS);
	EXPECT_TRUE(shiftu_provq_recv_error(sq, rq, 0x51, IBV_WC_REM_INV_REQ_ERR));
	/* nor one that failed otherwise: a packet it could not send (6.12) */
	put(sq, 0, 0x51, IBV_WR_SEND, 4096, IBV_WC_LOC_QP_OP_ERR);
	EXPECT_TRUE(shiftu_provq_recv_error(sq, rq, 0x51, IBV_WC_REM_INV_REQ_ERR));
	EXPECT_FALSE(shiftu_provq_recv_error(sq, rq, 0x51, IBV_WC_LOC_QP_OP_ERR));
	free(sq);
	free(rq);
}

TEST_HARNESS_MAIN
