/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * srqtab.h: the receives of an SRQ whose QPs move one by one between two
 * sides, the application's NIC (the default side) and the backup NIC (the
 * twin side, whose SRQ is the twin SRQ).  Pure bookkeeping: no verbs, no
 * lock, no clock (see "Threads" below for who may call what at once).
 *
 * Why a table.  A receive posted to an SRQ is consumed by whichever QP on
 * it takes a message first, and cannot be recalled.  When the QPs of a
 * shared SRQ fail over one by one (a path down takes one, a port down
 * takes them all, each when its thread notices), each side's SRQ must
 * hold receives for the QPs on that side, and no buffer may ever be
 * posted on both.  So every receive the application posts is entered
 * here and posted on exactly one side, under a work-request id of the
 * library's (SHIFTU_SRQ_ID(), wrid.h) that names its entry; a completion
 * names the entry it consumed, whichever QP and side it came from, and
 * the application gets its own id back.  That also makes exact what the
 * SRQ's counts could not tell once several QPs consume from it:
 *
 * - the receive a moving QP's NIC had taken for a message cut in the
 *   middle completes flushed, and its id says which buffer to post again
 *   on the QP's new side (shiftu_srqtab_move());
 * - when the last QP leaves a side, that side's SRQ is inert: nothing can
 *   consume from it any more, and the receives it still holds (the
 *   provider's ring lists their ids) move to the other side.
 *
 * A side the QPs share with the other gets new receives by need:
 * shiftu_srqtab_route() picks the side with fewer receives outstanding
 * per QP on it, so that a side whose QPs consume is refilled as the
 * application refills the SRQ, and one whose QPs idle does not hoard.
 *
 * Each side's outstanding count is what was posted on it less what left
 * it (completed, or moved off): two counts that only grow, compared by
 * their difference (serial.h).
 *
 * Threads.  Entering a receive and taking one back are lock free, so that
 * posts and completions on the common path need no lock: an entry is
 * claimed with a compare-and-swap of its state at a cursor that only
 * grows, and freed with a release store.  The table has at least twice as
 * many entries as the SRQ has receives, so the entry under the cursor is
 * nearly always free (a side consumes in the order it was posted).  The
 * counts are atomic.  Everything else (moving an entry, reading its
 * scatter list back, joining and leaving) is serialised by the caller, on
 * an entry that cannot complete meanwhile (one flushed, or one in an SRQ
 * no QP consumes from).
 */
#ifndef _SHIFTU_SRQTAB_H
#define _SHIFTU_SRQTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "wrid.h"

enum shiftu_side {
	SHIFTU_SIDE_DEFAULT,
	SHIFTU_SIDE_TWIN,
	SHIFTU_SIDES,
};

/* at most this many entries: an id holds 16 bits of index (wrid.h) */
#define SHIFTU_SRQTAB_MAX	65536U

/* One receive of the application's, posted on one side or free. */
struct shiftu_srqent {
	/*
	 * 0: free.  Posted: SHIFTU_SRQENT_HDR() of its side and its number
	 * of entries, in one word: claimed by compare-and-swap, freed with a
	 * release store.
	 */
	uint64_t hdr;
	uint64_t wr_id;			/* the application's */
	struct ibv_sge sge[];		/* max_sge of them */
};

#define SHIFTU_SRQENT_HDR(side, num_sge) \
	(1ULL | (uint64_t)(side) << 8 | (uint64_t)(uint16_t)(num_sge) << 16)

static inline enum shiftu_side shiftu_srqent_side(const struct shiftu_srqent *e)
{
	return (enum shiftu_side)(e->hdr >> 8 & 0xff);
}

static inline unsigned int shiftu_srqent_num_sge(const struct shiftu_srqent *e)
{
	return (unsigned int)(e->hdr >> 16 & 0xffff);
}

struct shiftu_srqtab {
	/* read by every post and completion */
	unsigned char *ents;
	uint64_t id_base;		/* SHIFTU_SRQ_ID(no, 0) */
	uint32_t mask;			/* entries - 1: a power of two */
	uint32_t stride;		/* bytes an entry takes */
	uint32_t cursor;		/* the next entry to claim; atomic */
	uint32_t max_sge;
	uint64_t in[SHIFTU_SIDES];	/* entries posted on each side, ever; atomic */
	uint64_t out[SHIFTU_SIDES];	/* ... and that left it: completed or moved; atomic */
	/* the caller's */
	uint32_t no;			/* its number in the ids (wrid.h) */
	uint32_t members[SHIFTU_SIDES];	/* QPs on each side */
};

/*
 * Table @no (under SHIFTU_SRQ_TABLES, named in its ids) for an SRQ of
 * @size receives of at most @max_sge entries each.  Returns 0, -EINVAL
 * when @size is 0 or over SHIFTU_SRQTAB_MAX / 2, @max_sge over 65535 or
 * @no out of range, or -ENOMEM.
 */
int shiftu_srqtab_init(struct shiftu_srqtab *t, uint32_t no, uint32_t size, uint32_t max_sge);
void shiftu_srqtab_fini(struct shiftu_srqtab *t);

/* Receives posted on @side and not yet completed or moved off it. */
uint64_t shiftu_srqtab_outstanding(const struct shiftu_srqtab *t, enum shiftu_side side);

/*
 * The side a new receive goes to: the only side with QPs, the default side
 * when neither has any, else the one with fewer receives outstanding per
 * QP (the default side on a tie).  Caller serialised.
 */
enum shiftu_side shiftu_srqtab_route(const struct shiftu_srqtab *t);

static inline struct shiftu_srqent *shiftu_srqtab_ent(const struct shiftu_srqtab *t, uint32_t i)
{
	return (struct shiftu_srqent *)(t->ents + (size_t)i * t->stride);
}

/*
 * Claim the entry under the cursor for the receive @wr (its id and
 * scatter list: @num_sge entries, at most max_sge, the caller checked) on
 * @side: one try.  Returns true with its index in *@i, or false when that
 * entry is still posted.  Any thread.
 */
static inline bool shiftu_srqtab_claim(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
				       int num_sge, enum shiftu_side side, uint32_t *i)
{
	struct shiftu_srqent *e;
	uint64_t free_ = 0;
	int k;

	*i = __atomic_fetch_add(&t->cursor, 1, __ATOMIC_RELAXED) & t->mask;
	e = shiftu_srqtab_ent(t, *i);
	if (!__atomic_compare_exchange_n(&e->hdr, &free_, SHIFTU_SRQENT_HDR(side, num_sge),
					 false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	e->wr_id = wr->wr_id;
	for (k = 0; k < num_sge; k++)
		e->sge[k] = wr->sg_list[k];
	__atomic_fetch_add(&t->in[side], 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * Enter the receive @wr (its id and scatter list; not its chain) as posted
 * on @side, and give the id to post it under in *@id.  Returns 0, -EINVAL
 * when it has more entries than the SRQ takes, or -ENOMEM when no entry
 * is free (the SRQ would be full).  Any thread.
 */
int shiftu_srqtab_put(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
		      enum shiftu_side side, uint64_t *id);

/*
 * The completion of the entry *@wr_id names (an id of this table's: the
 * caller checked) was handed on: *@wr_id becomes the application's, and
 * the entry is free.  Returns false, leaving *@wr_id, if that entry is not
 * posted.  Any thread, once per posted entry.
 */
static inline bool shiftu_srqtab_give_back(struct shiftu_srqtab *t, uint64_t *wr_id)
{
	uint32_t i = shiftu_srq_id_index(*wr_id);
	struct shiftu_srqent *e;
	uint64_t hdr;

	if (i > t->mask)
		return false;
	e = shiftu_srqtab_ent(t, i);
	hdr = __atomic_load_n(&e->hdr, __ATOMIC_ACQUIRE);
	if (!hdr)
		return false;
	*wr_id = e->wr_id;
	__atomic_fetch_add(&t->out[hdr >> 8 & 0xff], 1, __ATOMIC_RELEASE);
	/* the entry is read out before another claim may fill it */
	__atomic_store_n(&e->hdr, 0, __ATOMIC_RELEASE);
	return true;
}

/* The entry @id names, posted; NULL if it names none of this table's. */
const struct shiftu_srqent *shiftu_srqtab_find(const struct shiftu_srqtab *t, uint64_t id);

/*
 * @id was consumed (a completion, good or flushed, handed on): the
 * application's id in *@wr_id, and the entry is free.  Also for a put
 * whose post failed.  Returns 0, or -ENOENT if @id names no posted entry.
 * Any thread, once per posted entry.
 */
int shiftu_srqtab_take(struct shiftu_srqtab *t, uint64_t id, uint64_t *wr_id);

/*
 * @id, posted, is posted again on @side (the other side, or the same one
 * after a control message consumed it).  Returns 0 or -ENOENT.
 */
int shiftu_srqtab_move(struct shiftu_srqtab *t, uint64_t id, enum shiftu_side side);

/*
 * The work request to post @id again with: its scatter list in @sg (room
 * for max_sge), @wr's id the library's.  Returns 0 or -ENOENT.
 */
int shiftu_srqtab_wr(const struct shiftu_srqtab *t, uint64_t id, struct ibv_recv_wr *wr,
		     struct ibv_sge *sg);

/*
 * A QP joins @side (it is created there, or its move reached it), or
 * leaves it.  shiftu_srqtab_leave() returns true when no QP is left on
 * @side: its SRQ is inert, and the caller moves what it holds.
 */
void shiftu_srqtab_join(struct shiftu_srqtab *t, enum shiftu_side side);
bool shiftu_srqtab_leave(struct shiftu_srqtab *t, enum shiftu_side side);

#endif /* _SHIFTU_SRQTAB_H */
