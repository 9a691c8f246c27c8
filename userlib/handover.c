// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * handover.c: handing a QP's queue from one posting thread to another
 * (posters.h): the new poster waits out the old one's post, or gives the
 * QP up.
 */
#include <stdint.h>

#include "ctxstate.h"
#include "log.h"
#include "posters.h"
#include "quiesce.h"
#include "vqpstate.h"
#include "window.h"

/*
 * How long a hand-over waits for a thread inside its post on the QP.  A
 * post takes microseconds; a thread preempted inside one on a loaded CPU,
 * milliseconds.  One stopped there, or waiting in the provider for a
 * lock the taker's thread holds (a batch of the extended send API it left
 * open), never leaves: the QP is given up instead.
 */
#define TAKE_NS		(1000ULL * 1000 * 1000)

/*
 * The QP's counts cannot be trusted: it runs as it would without the
 * library from now on.  Its work is on its default QP (the caller's
 * state is Default), where it stays; its twin is left to the shadow
 * thread as a dead QP's is.  Context: fo_lock.
 */
static void give_up(struct shiftu_vqp *vq, const char *why)
{
	vq->state = SHIFTU_SEND_DEAD;
	shiftu_qp_set_flags(&vq->reg, vq->reg.flags & ~SHIFTU_QP_F_PROTECTED);
	shiftu_vqp_set_slow(vq, 0, __ATOMIC_RELAXED);
	shiftu_warn("qp %u on %s: several threads post to it at once and %s: its counts cannot be trusted: unprotected",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, why);
}

bool shiftu_poster_take(struct shiftu_vqp *vq, bool recv)
{
	uint16_t *poster = recv ? &vq->poster_r : &vq->poster;
	uint16_t me = (uint16_t)(shiftu_window.tag >> SHIFTU_POSTER_SHIFT);
	uint16_t prev = __atomic_load_n(poster, __ATOMIC_RELAXED);

	/* a thread without a tag posts under fo_lock, as the slow path does */
	if (!me)
		me = SHIFTU_POSTER_NONE;
	if (prev == me && me != SHIFTU_POSTER_NONE)
		return true;
	__atomic_store_n(poster, me, __ATOMIC_SEQ_CST);
	/*
	 * No thread can be counting outside fo_lock: none had the queue, or
	 * the QP is on its slow paths since a move that waited for every
	 * post window (a move leaves the default QP only with its slow flags
	 * set), or its counts are read by no one.
	 */
	if (prev == SHIFTU_POSTER_NONE || vq->state != SHIFTU_SEND_DEFAULT || !vq->rings)
		return true;
	if (!vq->posters_told) {
		vq->posters_told = 1;
		shiftu_info("qp %u on %s: a second thread posts to its %s queue: each change of poster waits for the other's post",
			    vq->reg.app_qp->qp_num, vq->sctx->dev_name, recv ? "receive" : "send");
	}
	__atomic_fetch_add(&vq->poster_changes, 1, __ATOMIC_RELAXED);
	if (shiftu_quiesce_vq(vq, TAKE_NS))
		return true;
	give_up(vq, shiftu_quiesce_barrier() ?
		    "another stayed inside its post for a second" :
		    "without membarrier(2) the hand-over cannot be ordered");
	return false;
}
