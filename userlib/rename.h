/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rename.h: the application's requests whose ids are in the library's
 * range, posted under renamed ids and given theirs back (wridtab.h).
 *
 * Posts: the common paths test each request's top byte
 * (shiftu_wrid_maybe()) and leave to their cold paths a request that may
 * be in the range; those rename it in the application's own work request
 * (shiftu_wrid_send_in()), post it as any other (recorded, held, replayed
 * under the renamed id), and put the application's id and flags back once
 * the provider has it (shiftu_wrid_send_out()).  A renamed request the
 * provider refuses gives its slot back there.
 *
 * Completions: the renamed ids leave the library only through
 * shiftu_wrid_out_all() (poll.c), the last step of every poll that
 * hands completions to the application (the slow poll, and the common
 * poll's look at what it took), which gives an SRQ table's ids back in the
 * same pass: each completion is classified once, before any id in it is
 * the application's again.  The common poll takes its completions without
 * a look at their ids, so a context with renamed requests out holds its
 * polls on the slow path (struct shiftu_ctx's @slow_cqs) from its first
 * rename until its table has been empty for a second; the renames of a
 * hold that is not armed yet first wait out the polls that passed the
 * context's test before it (shiftu_quiesce()), so that none of them takes
 * a renamed completion past its look.  A hold costs the wait once, not
 * each rename: an application that uses such ids all the time has its
 * polls on the slow path all the time, one that uses them now and then
 * pays the wait at most once a second.
 *
 * This file is the table's bookkeeping only; the waits, the windows and
 * the context are the data path's.
 */
#ifndef _SHIFTU_RENAME_H
#define _SHIFTU_RENAME_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "wrid.h"
#include "wridtab.h"

/*
 * A context's renamed requests (struct shiftu_ctx's @wrids): its table and
 * its hold of the context's slow polls, made at the first rename and kept
 * as long as the context (whose node is never freed).  @slow: the count
 * the hold adds one to (the context's @slow_cqs); @held: it does; @gen:
 * the holds so far; @armed: the hold whose polls in flight were waited
 * out (a rename under an unarmed hold waits too).  @held and @gen under
 * the table's lock (rename.c's wrid_lock); @armed and @idle_ns relaxed.
 */
struct shiftu_wrids {
	struct shiftu_wridtab tab;
	uint32_t *slow;
	const char *name;		/* the device's, for the log */
	uint8_t held;
	uint8_t told_full;
	uint32_t gen;
	uint32_t armed;
	uint64_t idle_ns;		/* since when the table is empty, or 0 */
};

/* The requests a post renamed, to put back: their ids and signaling. */
struct shiftu_wrid_saved {
	unsigned int n;			/* requests renamed */
	unsigned int cap;		/* room in @ids */
	uint64_t *ids;			/* the application's, in chain order */
	uint64_t quiet;			/* bit i: the i-th was unsignaled */
	/* not 0: the hold whose polls in flight the poster must wait out
	 * before it posts (shiftu_wrid_armed()) */
	uint32_t wait_gen;
	uint64_t inline_ids[8];		/* @ids when that is enough */
};

/*
 * Any request of the chain @wr whose id is in the range: the cold paths'
 * look, before they make the context's table.
 */
static inline bool shiftu_wrid_send_ranged(const struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next)
		if (shiftu_wrid_ranged(wr->wr_id))
			return true;
	return false;
}

static inline bool shiftu_wrid_recv_ranged(const struct ibv_recv_wr *wr)
{
	for (; wr; wr = wr->next)
		if (shiftu_wrid_ranged(wr->wr_id))
			return true;
	return false;
}

/*
 * *@slot, the context's renamed requests, made if it is not there yet
 * (published with release); @slow and @name as struct shiftu_wrids has
 * them.  NULL without memory.
 */
struct shiftu_wrids *shiftu_wrids_get(struct shiftu_wrids **slot, uint32_t *slow,
				      const char *name);

/*
 * Rename, in place, each request of the chain @wr whose id is in the
 * range (@w: its context's), and post an unsignaled one signaled unless
 * @sig_all (the QP signals every send); what they were goes to @sv.
 * Returns 0, or ENOMEM (the table is full, or @w is NULL: no memory) with
 * nothing renamed and *@bad_wr set to @wr, none of the chain posted: the
 * post fails as a full queue's would, with a warning once per context.
 * With @sv->wait_gen set, the caller waits out the polls in flight, then
 * calls shiftu_wrid_armed(), before it posts.  No lock held.
 */
int shiftu_wrid_send_in(struct shiftu_wrids *w, struct ibv_send_wr *wr, bool sig_all,
			struct shiftu_wrid_saved *sv, struct ibv_send_wr **bad_wr);

/*
 * The post of @wr is over: those from @bad on (NULL: none) were refused
 * and give their slots back; every renamed request gets its id and flags
 * back.
 */
void shiftu_wrid_send_out(struct shiftu_wrids *w, struct ibv_send_wr *wr,
			  const struct ibv_send_wr *bad, struct shiftu_wrid_saved *sv);

/* The same for receives (never quiet: each completes). */
int shiftu_wrid_recv_in(struct shiftu_wrids *w, struct ibv_recv_wr *wr,
			struct shiftu_wrid_saved *sv, struct ibv_recv_wr **bad_wr);
void shiftu_wrid_recv_out(struct shiftu_wrids *w, struct ibv_recv_wr *wr,
			  const struct ibv_recv_wr *bad, struct shiftu_wrid_saved *sv);

/* The polls in flight when hold @gen began were waited out. */
void shiftu_wrid_armed(struct shiftu_wrids *w, uint32_t gen);

/*
 * Completion @wc with a renamed id on its way to the application: 1 when
 * the application gets it, with its own id back (or, for an id that names
 * no request out, a bug, as it came, with a warning); 0 when it is the
 * library's (a quiet send that succeeded), to be taken out.
 */
int shiftu_wrid_give_back(struct shiftu_wrids *w, struct ibv_wc *wc);

/*
 * After a poll's pass: the hold ends once the table has been empty for a
 * second, so that an application that renames now and then pays neither a
 * wait for each rename nor the slow poll for ever.
 */
void shiftu_wrid_hold_end(struct shiftu_wrids *w);

/* Requests renamed in the process so far (the exit line's renamed=). */
uint64_t shiftu_wrid_renamed(void);

#endif /* _SHIFTU_RENAME_H */
