/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * box_int.h: what the mailboxes' file shares with the watcher that sweeps
 * them (handshake.h is what the rest of the library calls).
 *
 *   box.c      the mailboxes: opened, closed, reset, written; their list
 *   watcher.c  the sweep: every listed mailbox looked at, its new messages
 *              handed to the handshake (shiftu_box_sweep())
 *
 * The list and its lock were static in box.c, and slot_whole() a static
 * function inlined where it was called: hidden globals here, and a static
 * inline.  No file outside these two includes this header.
 */
#ifndef _SHIFTU_BOX_INT_H
#define _SHIFTU_BOX_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mailbox.h"
#include "util.h"

struct shiftu_vqp;

/* the QPs with mailboxes, n_boxes of them, under box_lock (box.c) */
extern pthread_mutex_t box_lock SHIFTU_HIDDEN;
extern struct shiftu_vqp **boxes SHIFTU_HIDDEN;
extern unsigned int n_boxes SHIFTU_HIDDEN;

/* Slot @b holds a whole message: true, its word in *@w. */
static inline bool slot_whole(const struct shiftu_box *b, uint64_t *w)
{
	uint64_t word = __atomic_load_n(&b->word, __ATOMIC_ACQUIRE);
	uint64_t check = __atomic_load_n(&b->check, __ATOMIC_ACQUIRE);

	*w = word;
	return (word ^ SHIFTU_BOX_KEY) == check;
}

#endif /* _SHIFTU_BOX_INT_H */
