/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ring.h: the library's record of a QP's outstanding work requests, as
 * the send and receive rings hold them (post.c records, provq.c fills
 * them from the provider's rings, replay.c replays them).  Types and
 * arithmetic only: no verbs are called here.
 */
#ifndef _SHIFTU_RING_H
#define _SHIFTU_RING_H

#include <stdint.h>

#include <infiniband/verbs.h>

/*
 * One outstanding send work request, as the library recorded it at post
 * time: the descriptor, never the payload (but for IBV_SEND_INLINE, whose
 * bytes the application may reuse as soon as the post returns).  The ring
 * has a slot for every send queue entry the provider can hold, so a slot is
 * only overwritten once the provider has freed the entry that used it.
 */
struct shiftu_swqe {
	uint64_t wr_id;
	uint64_t remote_addr;		/* wr.rdma's, or wr.atomic's */
	uint32_t rkey;			/* the same */
	uint32_t imm_data;		/* big endian, as posted */
	/* an atomic's operands: one held (never posted yet) is posted from here */
	uint64_t compare_add;
	uint64_t swap;
	uint32_t opcode;		/* enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t num_sge;		/* IBV_SEND_INLINE: 1, sge[0] -> inl */
	uint32_t inline_len;
	/* two-sided requests (SEND, WRITE_WITH_IMM) posted up to this one */
	uint64_t seq2;
	/* shiftu_swqe_sges() of them, then inline bytes */
	struct ibv_sge sge[];
};

/*
 * The scatter entries a send slot of a QP granted @max_sge holds: at least
 * one, since an inline request's descriptor (sge[0]) points at its bytes,
 * which follow the entries, even on a QP granted none (an inline-only QP).
 */
static inline uint32_t shiftu_swqe_sges(uint32_t max_sge)
{
	return max_sge ? max_sge : 1;
}

/* @opcode is an atomic's (its fields are wr.atomic's, not wr.rdma's). */
static inline int shiftu_wr_atomic(uint32_t opcode)
{
	return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * The recorded request @e as a work request in @w, not linked, its
 * scatter list the record's own: what a replay or a release of held
 * requests posts.
 */
static inline void shiftu_swqe_wr(const struct shiftu_swqe *e, struct ibv_send_wr *w)
{
	__builtin_memset(w, 0, sizeof(*w));
	w->wr_id = e->wr_id;
	w->sg_list = (struct ibv_sge *)e->sge;
	w->num_sge = e->num_sge;
	w->opcode = e->opcode;
	w->send_flags = e->send_flags;
	w->imm_data = e->imm_data;
	if (shiftu_wr_atomic(e->opcode)) {
		w->wr.atomic.remote_addr = e->remote_addr;
		w->wr.atomic.rkey = e->rkey;
		w->wr.atomic.compare_add = e->compare_add;
		w->wr.atomic.swap = e->swap;
	} else {
		w->wr.rdma.remote_addr = e->remote_addr;
		w->wr.rdma.rkey = e->rkey;
	}
}

/* Receive work requests likewise. */
struct shiftu_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct ibv_sge sge[];
};

struct shiftu_ring {
	void *slots;
	uint32_t mask;			/* slots - 1 (a power of two) */
	uint32_t stride;
	uint64_t head;			/* work requests recorded (posting thread) */
};

static inline struct shiftu_swqe *shiftu_swqe_at(struct shiftu_ring *r, uint64_t i)
{
	return (struct shiftu_swqe *)((char *)r->slots + (i & r->mask) * r->stride);
}

static inline struct shiftu_rwqe *shiftu_rwqe_at(struct shiftu_ring *r, uint64_t i)
{
	return (struct shiftu_rwqe *)((char *)r->slots + (i & r->mask) * r->stride);
}

/* Send opcodes that consume a receive at the peer, as a mask of 1 << opcode. */
#define SHIFTU_TWO_SIDED	((1U << IBV_WR_SEND) | (1U << IBV_WR_SEND_WITH_IMM) | \
				 (1U << IBV_WR_RDMA_WRITE_WITH_IMM) | \
				 (1U << IBV_WR_SEND_WITH_INV))

#endif /* _SHIFTU_RING_H */
