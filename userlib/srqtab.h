/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * srqtab.h: the receives of an SRQ whose QPs move one by one between two
 * sides, the application's NIC (the default side) and the backup NIC (the
 * twin side, whose SRQ is the twin SRQ).  Pure bookkeeping: no verbs, no
 * lock, no clock; the caller serialises the calls on one table.
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
 */
#ifndef _SHIFTU_SRQTAB_H
#define _SHIFTU_SRQTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

enum shiftu_side {
	SHIFTU_SIDE_DEFAULT,
	SHIFTU_SIDE_TWIN,
	SHIFTU_SIDES,
};

/* at most this many entries: an id holds 16 bits of index (wrid.h) */
#define SHIFTU_SRQTAB_MAX	65536U

/* One receive of the application's, posted on one side or free. */
struct shiftu_srqent {
	uint64_t wr_id;			/* the application's */
	uint32_t next_free;		/* the free list; SHIFTU_SRQTAB_MAX: end */
	uint16_t num_sge;
	uint8_t side;			/* enum shiftu_side, while posted */
	uint8_t posted;
	struct ibv_sge sge[];		/* max_sge of them */
};

struct shiftu_srqtab {
	uint32_t no;			/* its number in the ids (wrid.h) */
	uint32_t size;			/* entries */
	uint32_t max_sge;
	uint32_t free;			/* first free entry, or SHIFTU_SRQTAB_MAX */
	uint32_t n_free;
	size_t stride;			/* bytes an entry takes */
	unsigned char *ents;
	uint32_t members[SHIFTU_SIDES];	/* QPs on each side */
	uint64_t in[SHIFTU_SIDES];	/* entries posted on each side, ever */
	uint64_t out[SHIFTU_SIDES];	/* ... and that left it: completed or moved */
};

/*
 * Table @no (under SHIFTU_SRQ_TABLES, named in its ids) for an SRQ of
 * @size receives of at most @max_sge entries each.  Returns 0, -EINVAL
 * when @size is 0 or over SHIFTU_SRQTAB_MAX or @no out of range, or
 * -ENOMEM.
 */
int shiftu_srqtab_init(struct shiftu_srqtab *t, uint32_t no, uint32_t size, uint32_t max_sge);
void shiftu_srqtab_fini(struct shiftu_srqtab *t);

/* Receives posted on @side and not yet completed or moved off it. */
uint64_t shiftu_srqtab_outstanding(const struct shiftu_srqtab *t, enum shiftu_side side);

/*
 * The side a new receive goes to: the only side with QPs, the default side
 * when neither has any, else the one with fewer receives outstanding per
 * QP (the default side on a tie).
 */
enum shiftu_side shiftu_srqtab_route(const struct shiftu_srqtab *t);

/*
 * Enter the receive @wr (its id and scatter list; not its chain) as posted
 * on @side, and give the id to post it under in *@id.  Returns 0, -EINVAL
 * when it has more entries than the SRQ takes, or -ENOMEM when the table
 * is full (the SRQ would be too).
 */
int shiftu_srqtab_put(struct shiftu_srqtab *t, const struct ibv_recv_wr *wr,
		      enum shiftu_side side, uint64_t *id);

/* The entry @id names, posted; NULL if it names none of this table's. */
const struct shiftu_srqent *shiftu_srqtab_find(const struct shiftu_srqtab *t, uint64_t id);

/*
 * @id was consumed (a completion, good or flushed, handed on): the
 * application's id in *@wr_id, and the entry is free.  Also for a put
 * whose post failed.  Returns 0, or -ENOENT if @id names no posted entry.
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
