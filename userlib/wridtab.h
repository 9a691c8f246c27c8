/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wridtab.h: the application's work-request ids that fall in the
 * library's range (wrid.h), renamed while their requests are out.
 *
 * The library tells its own completions from the application's by their
 * ids, which start with "SHIFT" in ASCII.  The application may use any
 * 64-bit id, such ones included: a request whose id starts so is posted
 * under an id of the library's instead, SHIFTU_WRID_RENAMED (a slot of its
 * context's table, which keeps the application's id), and its completion
 * gets the application's id back on its way out of the library's poll
 * (shiftu_wrid_out()), and not before: on the way a drain counts it as the
 * application's, a replay posts it again under the same id, a stash keeps
 * it.  So one classifier, shiftu_wrid_kind(), is exact on every path, and
 * no range of the 64-bit space is the library's alone.
 *
 * An unsignaled send completes only when it fails (a flush included), and
 * then it must get its id back; when it succeeds nothing would ever free
 * its slot.  A renamed unsignaled send is therefore posted signaled, and
 * its slot is marked quiet: its good completion is the library's and is
 * taken out (the slot freed), a failed one is the application's, as the
 * NIC reports an unsignaled request that fails.  The completion takes a
 * CQ entry the application did not ask for, as the request's flush would.
 *
 * A renamed id carries its slot and the slot's generation, which moves
 * each time the slot is freed: an id whose slot was freed (a completion
 * seen twice, which would be a bug) is told from the slot's next use.
 *
 * The table is the context's (struct shiftu_ctx), made at its first
 * rename.  All of it is under the mutex it is given (the library's
 * wrid_lock, rename.c, which fork(2) takes): it is reached on cold paths
 * only (a post whose id is in the range, a slow poll that met a renamed
 * id).  The mutex is a leaf: nothing is taken under it.
 */
#ifndef _SHIFTU_WRIDTAB_H
#define _SHIFTU_WRIDTAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* slots of a context's table: renamed requests out at once */
#define SHIFTU_WRIDTAB_SLOTS	4096U

/* what a slot holds */
enum {
	SHIFTU_WRIDTAB_FREE,
	SHIFTU_WRIDTAB_TAKEN,		/* a request the application hears of */
	SHIFTU_WRIDTAB_QUIET,		/* an unsignaled send posted signaled */
};

struct shiftu_wridtab {
	pthread_mutex_t *lock;
	uint32_t used;			/* slots not free */
	uint32_t next;			/* where a claim looks first */
	uint64_t renamed;		/* requests renamed (statistics) */
	uint64_t app[SHIFTU_WRIDTAB_SLOTS];	/* the application's ids */
	uint16_t gen[SHIFTU_WRIDTAB_SLOTS];	/* moved at each free */
	uint8_t state[SHIFTU_WRIDTAB_SLOTS];
};

/* An empty table under @lock. */
void shiftu_wridtab_init(struct shiftu_wridtab *t, pthread_mutex_t *lock);

/*
 * A slot for the application's id @app (@quiet: an unsignaled send posted
 * signaled); the id to post under in *@id.  Returns 1 when the table was
 * empty before, 0 when not, -ENOMEM when it is full.
 */
int shiftu_wridtab_claim(struct shiftu_wridtab *t, uint64_t app, bool quiet, uint64_t *id);

/*
 * The completion of renamed id @id, @good or not, on its way to the
 * application.  Returns 1 and the application's id in *@app when the
 * application gets it, 0 when it is the library's (a quiet send that
 * succeeded), -ENOENT when @id names no slot taken (a stale id).  The slot
 * is free after 0 or 1; *@last says whether the table is empty now.
 */
int shiftu_wridtab_take(struct shiftu_wridtab *t, uint64_t id, bool good, uint64_t *app,
			bool *last);

/*
 * The provider refused the request posted under @id: its slot is free.
 * Returns true when the table is empty now.
 */
bool shiftu_wridtab_unclaim(struct shiftu_wridtab *t, uint64_t id);

/* Slots not free (relaxed; statistics and tests). */
uint32_t shiftu_wridtab_used(struct shiftu_wridtab *t);

#endif /* _SHIFTU_WRIDTAB_H */
