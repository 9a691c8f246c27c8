/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failover.h: moving a QP to its twin, and the slow paths of the posting
 * verbs while it is there (failover.c, goback.c, move.c, drain.c,
 * replay.c: failover_int.h says which does what; the CQ side is cq.h).
 */
#ifndef _SHIFTU_FAILOVER_H
#define _SHIFTU_FAILOVER_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct shiftu_ctx;
struct shiftu_hs_msg;
struct shiftu_vqp;

/*
 * Fail @vq over to its twin (@why names the cause in the log).  Does
 * nothing unless the QP is on its default port; leaves it there, to be
 * asked again at the next post, or by the shadow thread once the twin is
 * ready, while the twin is not ready.  An error
 * completion that started it is put in its CQ's stash by the poller
 * first, where the failover counts it.  Returns true when something
 * moved.  Context: any thread but the shadow thread's.  Cold.
 */
bool shiftu_failover(struct shiftu_vqp *vq, const char *why);

/*
 * @vq's twin is being reset (by the shadow thread, after a failback that
 * left it there), or is in RTS and waits for the peer's to join it (the
 * store to say so): the QP will be able to fail over in a moment.
 * Relaxed reads.
 */
bool shiftu_twin_coming(const struct shiftu_vqp *vq);

/*
 * shiftu_failover() for a poller that met @vq's error completions (already
 * in the stash): if the twin is being reset, wait for it first (at most
 * 2 s), rather than leave the flushed requests to the application.  A QP
 * going back (a two-sided failback waiting for the peer's count) is left
 * to the shadow thread (shiftu_rejoin()), waited for the same way.
 * Without @wait (the shadow thread itself), nothing is waited for.
 * Context: no library lock held, the poller's window closed.  Cold.
 */
bool shiftu_failover_on_error(struct shiftu_vqp *vq, const char *why, bool wait);

/* @vq went back to its default QP and waits for the peer's count there.
 * Relaxed reads. */
bool shiftu_going_back(const struct shiftu_vqp *vq);

/* Why @vq is down (vq->down set): the words a failover logs for it. */
const char *shiftu_down_why(const struct shiftu_vqp *vq);

/*
 * A two-sided failback's message may come to @vq's default QP, whose CQ
 * the application may then not poll: true while @vq is on its twin or
 * going back, which keeps its CQs on the slow poll.  The shadow thread
 * reads it without a lock, and again under the receive CQ's lock, which
 * the move back to the default QP holds (shiftu_app_serve()).
 */
bool shiftu_awaits_default(const struct shiftu_vqp *vq);

/*
 * A two-sided failback cut short (its default QP failed while it waited
 * for the peer's count): the work goes onto the renewed twin, and the
 * peer is asked to join it (@vq->rejoin_ask).  Context: the shadow thread,
 * vq->lock held.
 */
void shiftu_rejoin(struct shiftu_vqp *vq, const char *why);

/* The peer asks us to join its renewed twin.  Context: as above. */
void shiftu_rejoin_serve(struct shiftu_vqp *vq);

/*
 * The peer asks us to cancel the two-sided failback we granted it (its
 * request @granted), which it went back by and heard nothing of: if we
 * have not followed it yet, we join its renewed twin and speak first.
 * Context: the shadow thread, vq->lock held.
 */
void shiftu_cancel_serve(struct shiftu_vqp *vq, uint32_t granted);

/*
 * @vq's twin failed under its work, and no failback began in time
 * (failback.c): the twin's errors it held go to the application, with
 * @why, and the QP is unprotected.  Context: the shadow thread, vq->lock
 * held.
 */
void shiftu_twin_dead_give_up(struct shiftu_vqp *vq, const char *why);

/*
 * Failing back: after the shadow thread reconnected the default QP with the
 * peer, probe it (false: it could not be posted), @by_send with an empty
 * SEND that a control receive of the peer's takes; shiftu_probe_step()
 * says how it went (1 under way, 2 good, 3 failed) without waiting.  A
 * one-sided failback's good probe makes the QP wait for its fence
 * (shiftu_probe_fence()), and the held requests are released once the
 * twin has drained.
 */
bool shiftu_probe(struct shiftu_vqp *vq, bool by_send);
int shiftu_probe_step(struct shiftu_vqp *vq);
void shiftu_probe_fence(struct shiftu_vqp *vq);
/*
 * @vq's requests give an empty WRITE or READ nothing to aim at: the peer
 * may grant no remote access, and refuse it.  A two-sided failback then
 * probes with a SEND (the peer posts a control receive for it).
 */
bool shiftu_probe_by_send(struct shiftu_vqp *vq);
/* A two-sided failback, once the probe was good. */
void shiftu_switch_back(struct shiftu_vqp *vq);
/*
 * A two-sided failback's probe was good: going back is due.  The thread
 * that goes back drains the twin, which beside a busy application takes
 * seconds (the NIC's flush of the twin's requests waits for the CPU, on
 * Soft-RoCE): the application's next slow poll of one of @vq's CQs takes
 * it (shiftu_cq_backs()), so that the QPs of a process with one polling
 * thread each go back side by side; the shadow thread takes it if none
 * has after a moment.  shiftu_take_back() goes back if it is still due
 * (true), once.  shiftu_back_pending(): due, or a thread is going back
 * (its drain takes seconds, and the shadow thread must not grant the
 * peer's own request meanwhile: that resets the default QP under the
 * move).  Context: no CQ lock held.
 */
void shiftu_back_due(struct shiftu_vqp *vq);
bool shiftu_take_back(struct shiftu_vqp *vq);
bool shiftu_back_pending(const struct shiftu_vqp *vq);
void shiftu_try_drain(struct shiftu_vqp *vq);

/* Record a send request in @vq's ring without posting it (post.c). */
void shiftu_record_send(struct shiftu_vqp *vq, const struct ibv_send_wr *wr);

/* post_send while @vq->slow is set. */
int shiftu_post_send_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* post_send on the default QP, recording each work request (post.c). */
int shiftu_post_send_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			     struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* post_recv while @vq->slow is set, and on the default QP (post.c). */
int shiftu_post_recv_slow(struct shiftu_vqp *vq, struct ibv_qp *qp,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int shiftu_post_recv_default(struct shiftu_vqp *vq, struct ibv_qp *qp,
			     struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
void shiftu_record_recv(struct shiftu_vqp *vq, const struct ibv_recv_wr *wr);

/*
 * @vq cannot be protected any more (@why, said once): it runs as it would
 * without the library.  Only a QP on its default QP is left so (one on its
 * twin stays there, with a warning).  Context: no library lock held.
 */
void shiftu_unprotect(struct shiftu_vqp *vq, const char *why);

/*
 * The peer's count did not come within @after_ns of the handshake's start:
 * give up on @vq (shadow thread, which looked without fo_lock; this looks
 * again under it).
 */
void shiftu_hs_timeout(struct shiftu_vqp *vq, uint64_t after_ns);

/*
 * The application destroys @vq's QP: its CQs stop matching its twin's
 * completions to it (the twin goes next, shiftu_shadow_qp_gone()) and give
 * up the slow polls it held.  What they stashed for it stays, as a NIC's
 * CQ keeps a destroyed QP's completions.  Context: the destroying thread,
 * no library lock held.
 */
void shiftu_failover_qp_gone(struct shiftu_vqp *vq);

/*
 * The application moved @vq's QP to @to, ERR or RESET (@vq->app_stop set
 * before the provider's modify): it tears the QP down, or resets it to
 * use again.  Its flushes are its own, never a failure: the QP is left
 * unprotected, never to move again.  Work of the application's on the
 * twin stops there too (@to: flushed, renamed, as the default QP's would
 * be; RESET: dropped, as a reset drops it); sends the library held
 * complete flushed (ERR) or are dropped (RESET).  Context: the
 * application's thread, no library lock held.
 */
void shiftu_failover_app_stop(struct shiftu_vqp *vq, enum ibv_qp_state to);

/*
 * The look ahead answered the backup rkeys of the peer's that @vq's held
 * sends wait for (@vq->keys_held): they are replayed, unless the peer's
 * count is still awaited too; a key the store had none of gives the QP
 * up, its errors to the application.  Context: the shadow thread, vq->lock
 * held.
 */
void shiftu_keys_came(struct shiftu_vqp *vq);

/* The peer's control message @m arrived (handshake.h).  No lock held. */
void shiftu_hs_message(const struct shiftu_hs_msg *m);

#endif /* _SHIFTU_FAILOVER_H */
