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
 * claimed with an atomic test-and-set of its header at a cursor that only
 * grows, and freed with a release store.  The table has at least twice as
 * many entries as the SRQ has receives, so the entry under the cursor is
 * nearly always free (a side consumes in the order it was posted).  The
 * counts are atomic.  Everything else (moving an entry, reading its
 * scatter list back, joining and leaving) is serialised by the caller, on
 * an entry that cannot complete meanwhile (one flushed, or one in an SRQ
 * no QP consumes from).
 *
 * The common path (srqpost.c) posts an entry's own request to the
 * default SRQ with a tail call: nothing of the library's runs after the
 * provider's post, so the post must not fail.  It cannot: the entry is
 * claimed only with a credit of the default side, whose count of credits
 * (@room) is the receives its SRQ holds at most less those posted on it
 * and not yet completed or moved off; a receive the SRQ still holds is
 * one of those.  The same count, less SHIFTU_SRQTAB_SHUT, shuts the
 * common path for a move (shiftu_srqtab_shut()).
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
	 * The request the common path posts for a receive of one scatter
	 * entry, made once (shiftu_srqtab_init()): the library's id, no next,
	 * @sge, one entry.  Other posts make their own.
	 */
	struct ibv_recv_wr wr;
	/*
	 * 0: free.  Posted: bit 0, its side and its number of entries (xor 1,
	 * so that a receive of one entry on the default side is the bit
	 * alone, as the common path's test-and-set leaves it), in one word:
	 * claimed atomically, freed with a release store.
	 */
	uint64_t hdr;
	uint64_t wr_id;			/* the application's */
	struct ibv_sge sge[];		/* max_sge of them (one at least) */
};

#define SHIFTU_SRQENT_HDR(side, num_sge) \
	(1ULL | (uint64_t)(side) << 8 | (uint64_t)(uint16_t)((num_sge) ^ 1) << 16)

static inline enum shiftu_side shiftu_srqent_side(const struct shiftu_srqent *e)
{
	return (enum shiftu_side)(e->hdr >> 8 & 0xff);
}

static inline unsigned int shiftu_srqent_num_sge(const struct shiftu_srqent *e)
{
	return (unsigned int)(e->hdr >> 16 & 0xffff) ^ 1;
}

/* Taken from a side's credits while the common path is shut. */
#define SHIFTU_SRQTAB_SHUT	(1 << 30)

struct shiftu_srqtab {
	/* read by every post and completion */
	unsigned char *ents;
	uint64_t id_base;		/* SHIFTU_SRQ_ID(no, 0) */
	/*
	 * Bytes past the first entry of the next entry to claim, unmasked:
	 * it only grows, by @stride a claim tried.  Atomic.
	 */
	uint64_t cursor;
	uint32_t bytes_mask;		/* the table's bytes - 1 */
	uint32_t mask;			/* entries - 1: a power of two */
	uint32_t stride;		/* bytes an entry takes: a power of two */
	uint32_t max_sge;
	/*
	 * Each side's credits: @cap less the entries posted on it and not
	 * yet completed or moved off it; for the default side, less
	 * SHIFTU_SRQTAB_SHUT while @shut.  Atomic.
	 */
	int32_t room[SHIFTU_SIDES];
	/*
	 * Claims tried that put nothing on the default SRQ from the common
	 * path (shiftu_srqtab_put()'s, and the common path's that found the
	 * entry posted): the others each post one (shiftu_srqtab_fast_posts()).
	 * Atomic.
	 */
	uint64_t skips;
	/* the caller's */
	int32_t cap[SHIFTU_SIDES];	/* @room with nothing posted */
	bool shut;
	uint32_t no;			/* its number in the ids (wrid.h) */
	uint32_t members[SHIFTU_SIDES];	/* QPs on each side */
};

/*
 * Table @no (under SHIFTU_SRQ_TABLES, named in its ids) for an SRQ of
 * @size receives of at most @max_sge entries each: the default side's
 * SRQ holds @size, and the common path is shut.  Returns 0, -EINVAL
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
 * @side: one try, which the caller counts in @skips.  Returns true with
 * its index in *@i, or false when that entry is still posted.  Any thread.
 */
static inline bool shiftu_srqtab_claim(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
				       int num_sge, enum shiftu_side side, uint32_t *i)
{
	uint64_t at = __atomic_fetch_add(&t->cursor, t->stride, __ATOMIC_RELAXED);
	struct shiftu_srqent *e;
	uint64_t free_ = 0;
	int k;

	*i = (uint32_t)(at & t->bytes_mask) / t->stride;
	e = shiftu_srqtab_ent(t, *i);
	if (!__atomic_compare_exchange_n(&e->hdr, &free_, SHIFTU_SRQENT_HDR(side, num_sge),
					 false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	e->wr_id = wr->wr_id;
	for (k = 0; k < num_sge; k++)
		e->sge[k] = wr->sg_list[k];
	__atomic_fetch_sub(&t->room[side], 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * The common path's credit: true if the default side's SRQ has room for
 * one more receive and the path is open; the credit is then taken, for
 * shiftu_srqtab_claim_fast().  False: given back with
 * shiftu_srqtab_uncredit().  One locked subtract.  Any thread.
 */
static inline bool shiftu_srqtab_credit(struct shiftu_srqtab *t)
{
	return __atomic_sub_fetch(&t->room[SHIFTU_SIDE_DEFAULT], 1, __ATOMIC_ACQUIRE) >= 0;
}

static inline void shiftu_srqtab_uncredit(struct shiftu_srqtab *t)
{
	__atomic_fetch_add(&t->room[SHIFTU_SIDE_DEFAULT], 1, __ATOMIC_RELAXED);
}

/*
 * The common path's claim, with its credit taken: the entry under the
 * cursor in *@e, posted on the default side with one scatter entry (the
 * header's bit alone), for the caller to fill (wr_id, sge[0]) and post
 * (its wr).  Returns false when that entry is still posted: the caller
 * then counts the skip and gives the credit back.  A locked add and a
 * locked bit test-and-set.  Any thread.
 */
static inline bool shiftu_srqtab_claim_fast(struct shiftu_srqtab *t, struct shiftu_srqent **e)
{
	uint64_t at = __atomic_fetch_add(&t->cursor, t->stride, __ATOMIC_RELAXED);

	_Static_assert(SHIFTU_SRQENT_HDR(SHIFTU_SIDE_DEFAULT, 1) == 1,
		       "the common path's header is the bit alone");
	*e = (struct shiftu_srqent *)(t->ents + (at & t->bytes_mask));
	return !(__atomic_fetch_or(&(*e)->hdr, 1, __ATOMIC_ACQUIRE) & 1);
}

/* A claim tried that posts nothing from the common path (see @skips). */
static inline void shiftu_srqtab_skip(struct shiftu_srqtab *t, uint64_t n)
{
	__atomic_fetch_add(&t->skips, n, __ATOMIC_RELAXED);
}

/*
 * Receives the common path has posted on the default SRQ, or will once
 * the claims under way are done: the claims tried less the skips, modulo
 * 2^64 / stride.  Context: the common path shut, and waited out.
 */
static inline uint64_t shiftu_srqtab_fast_posts(const struct shiftu_srqtab *t)
{
	return __atomic_load_n(&t->cursor, __ATOMIC_ACQUIRE) / t->stride -
	       __atomic_load_n(&t->skips, __ATOMIC_ACQUIRE);
}

/*
 * Shut the common path (@shut), or open it again.  A shut path takes no
 * credit, hence claims nothing, once the caller has waited out the posts
 * that got one before (quiesce.h).  Caller serialised.
 */
void shiftu_srqtab_shut(struct shiftu_srqtab *t, bool shut);

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
	__atomic_fetch_add(&t->room[hdr >> 8 & 0xff], 1, __ATOMIC_RELEASE);
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
