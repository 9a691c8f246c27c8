/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bell.h: waking an application that sleeps in its completion channel
 * while its completions come from a twin (bell.c).
 */
#ifndef _SHIFTU_BELL_H
#define _SHIFTU_BELL_H

#include <stdbool.h>

#include <infiniband/verbs.h>

#include "wrid.h"

struct shiftu_cq;

/* A bell's request is SHIFTU_BELL_ID (wrid.h): its flushed completion is
 * the library's. */

/* How the application armed a CQ since its bell last rang (shiftu_cq's @armed) */
enum {
	SHIFTU_ARM_NONE,
	SHIFTU_ARM_ANY,		/* ibv_req_notify_cq(cq, 0) */
	SHIFTU_ARM_SOLICITED,	/* ibv_req_notify_cq(cq, 1) */
};

/*
 * Give @c a bell if the application's CQ has a completion channel.
 * Context: the shadow thread, when it makes @c's twin.  On failure (logged)
 * the application is not woken by twin completions, nothing else changes.
 */
void shiftu_bell_create(struct shiftu_cq *c);

/* Before the application's CQ is destroyed (the bell's QP uses it). */
void shiftu_bell_destroy(struct shiftu_cq *c);

/*
 * The library put @wc in @c's stash: raise the application's event if it
 * armed the CQ since the last ring, for any completion or, if @wc may be
 * solicited, for solicited ones.  Any thread, any lock.
 */
void shiftu_bell_ring(struct shiftu_cq *c, const struct ibv_wc *wc);

/* @wc is the completion of @c's bell (to be taken out). */
bool shiftu_bell_is(const struct shiftu_cq *c, const struct ibv_wc *wc);

/* The context's req_notify_cq: the provider's, and the arm recorded. */
int shiftu_req_notify_cq(struct ibv_cq *cq, int solicited_only);

#endif /* _SHIFTU_BELL_H */
