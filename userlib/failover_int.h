/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failover_int.h: what the failover files share among themselves
 * (failover.h is what the rest of the library calls).
 *
 *   failover.c   the entry points: a failover started, the peer's control
 *                message and the held sends it releases, a QP given up,
 *                stopped or destroyed by the application, the slow paths
 *                of the posting verbs
 *   goback.c     going back to the default QP: probes, a one-sided
 *                failback's fence and release, the two-sided failback
 *                started, cut short (rejoin) or cancelled
 *   move.c       the move of a QP's work from one of its QPs to the other,
 *                step by step, and what it leaves done or given up
 *   drain.c      stopping the QP a move leaves and draining it, or leaving
 *                the move to a batch or a polling session that holds it
 *   replay.c     the work a move carries over, put on the QP it goes to:
 *                receives reposted, sends replayed by the plan (proto.h)
 *                or held until the peer's keys are looked up
 *
 * A file calls only those listed below it (drain.c and replay.c call
 * neither each other nor any file above them).  The decisions are
 * proto.c's; these files carry them out.  Each function's comment is with
 * its definition.  Context, unless a comment says otherwise: fo_lock held.
 * The types keep the short names they had in failover.c: they have no
 * linkage, and no file outside these five includes this header.
 */
#ifndef _SHIFTU_FAILOVER_INT_H
#define _SHIFTU_FAILOVER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "util.h"

struct shiftu_hs_msg;
struct shiftu_rwqe;
struct shiftu_vqp;

/* ---- move.c ---------------------------------------------------------- */

/* What a move leaves to report once its locks are dropped. */
enum fo_result { FO_NONE, FO_DONE, FO_BACK, FO_DEAD, FO_DEAD_ATOMIC };

/*
 * The moves of a QP's work (shiftu_move_locked()): to its twin (a
 * failover); back to the default QP (a two-sided failback, 4.3.3 done as
 * a failover in reverse); or, when a failback is cut short, onto the twin
 * renewed (shiftu_rejoin()), from whichever QP holds the work.
 */
enum move_kind { MOVE_OVER, MOVE_BACK, MOVE_REJOIN };

/* A flushed completion a drain took, and whether the receive CQ had it. */
struct drained_wc {
	struct ibv_wc wc;
	bool rcq;
	bool srq;		/* a receive its SRQ's table names (srq.h) */
};

/* a move of @vq as @kind says; the caller reports and delivers after */
enum fo_result shiftu_move_locked(struct shiftu_vqp *vq, enum move_kind kind, bool asking,
				  const char *why, struct shiftu_hs_msg *msgs,
				  int *n_msgs) SHIFTU_HIDDEN;
/* the sends replayed where the work went: the QP's new state */
enum fo_result shiftu_moved(struct shiftu_vqp *vq, uint64_t replayed) SHIFTU_HIDDEN;
/* give up on @vq: what the NIC flushed, then the held sends, to the application */
void shiftu_go_dead(struct shiftu_vqp *vq, const struct drained_wc *flushed, int n,
		    uint64_t held) SHIFTU_HIDDEN;
/* @vq's CQs stop matching its twin's completions, give back its slow polls */
void shiftu_twins_leave(struct shiftu_vqp *vq) SHIFTU_HIDDEN;
/* @vq->down once back on the default QP */
uint8_t shiftu_port_down_now(struct shiftu_vqp *vq) SHIFTU_HIDDEN;
/* the event a move's result calls for; no library lock held */
void shiftu_fo_report(struct shiftu_vqp *vq, enum fo_result r) SHIFTU_HIDDEN;
/* the peers' messages and fences a move took; no lock held */
void shiftu_moved_deliver(struct shiftu_vqp *vq, struct shiftu_hs_msg *msgs,
			  int n_msgs) SHIFTU_HIDDEN;

/* ---- goback.c -------------------------------------------------------- */

/* a one-sided failback's twin drained: release the held sends, go back */
bool shiftu_release_drained(struct shiftu_vqp *vq) SHIFTU_HIDDEN;

/* ---- drain.c --------------------------------------------------------- */

/* stop the QP a move leaves and collect its flushed completions */
int shiftu_drain(struct shiftu_vqp *vq, bool twin, struct drained_wc *flushed,
		 unsigned int max, int *got, int *n_recv, bool *stuck,
		 struct shiftu_hs_msg *msgs, int *n_msgs) SHIFTU_HIDDEN;
/* wait out the threads a move overtook inside a data verb; no CQ lock */
bool shiftu_fo_quiesce(struct shiftu_vqp *vq) SHIFTU_HIDDEN;
/* a batch of the extended send API, or a direct polling session of an
 * extended CQ, that would hold the drain: 1 if the move is left to it */
int shiftu_batch_open(struct shiftu_vqp *vq, const char *why) SHIFTU_HIDDEN;
int shiftu_polls_open(struct shiftu_vqp *vq, const char *why, bool *held) SHIFTU_HIDDEN;

/* ---- replay.c -------------------------------------------------------- */

/* where the sends posted on the QP a move leaves end */
uint64_t shiftu_posted_end(const struct shiftu_vqp *vq) SHIFTU_HIDDEN;
/* replay the outstanding sends from @from on, by the peer's count */
int shiftu_replay(struct shiftu_vqp *vq, uint64_t from, uint64_t *replayed) SHIFTU_HIDDEN;
/* the peer's backup rkeys the replay from @from on needs: known? */
int shiftu_keys_ready(struct shiftu_vqp *vq, uint64_t from, uint32_t *rkey) SHIFTU_HIDDEN;
/* hold the sends from @from on until the look ahead has their keys */
bool shiftu_keys_wait(struct shiftu_vqp *vq, uint64_t from) SHIFTU_HIDDEN;
/* the held sends from @from on complete flushed; both CQs' locks held */
void shiftu_flush_held(struct shiftu_vqp *vq, uint64_t from) SHIFTU_HIDDEN;
/* post a send, or a recorded receive, on the twin, keys translated */
int shiftu_post_twin(struct shiftu_vqp *vq, const struct ibv_send_wr *wr) SHIFTU_HIDDEN;
int shiftu_post_twin_rwqe(struct shiftu_vqp *vq, const struct shiftu_rwqe *e) SHIFTU_HIDDEN;
/* post a recorded receive on the QP the work goes to now */
int shiftu_post_recv_on(struct shiftu_vqp *vq, const struct shiftu_rwqe *e) SHIFTU_HIDDEN;
/* @wr completes signaled on @vq */
bool shiftu_wr_signaled(const struct shiftu_vqp *vq, const struct ibv_send_wr *wr) SHIFTU_HIDDEN;

#endif /* _SHIFTU_FAILOVER_INT_H */
