/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vqpstate.h: the library's state of one application QP (struct
 * shiftu_vqp) and what it holds: how it keeps the work a failover must
 * move, the application's connection steps, what the peer published, the
 * peer's keys.  Types and one inline only; each member says who writes it
 * and under which lock (their order: lockorder.h).  interpose.h finds a
 * QP's state; qpverbs.c makes it.
 */
#ifndef _SHIFTU_VQPSTATE_H
#define _SHIFTU_VQPSTATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "mailbox.h"
#include "proto.h"
#include "qp.h"
#include "ring.h"

struct rxe_queue_buf;
struct drain_state;
struct shiftu_cq;
struct shiftu_ctx;
struct shiftu_srq;
struct shiftu_wrbatch;

/* How a QP keeps what a failover must move (struct shiftu_vqp.rings). */
enum {
	SHIFTU_RINGS_NONE,		/* nothing: the QP is not protected */
	SHIFTU_RINGS_COPY,		/* each request copied as it is posted */
	SHIFTU_RINGS_PROVIDER,		/* counted only: the provider's own
					 * rings are read at failover (provq.c);
					 * slow-path requests are copied */
};

/* Attributes of the application's modify_qp calls, to replay on the twin. */
struct shiftu_qp_steps {
	struct ibv_qp_attr init, rtr, rts;
	int init_mask, rtr_mask, rts_mask;
};

/* What the peer published about its backup QP (twin.c). */
struct shiftu_peer {
	union ibv_gid gid;
	uint32_t qpn;
	uint32_t psn;
	uint64_t node_guid;
	/* its mailboxes (mailbox.h), if its receives come from an SRQ */
	uint64_t box_addr[2];
	uint32_t box_rkey[2];
};

/*
 * The library's state of one application QP.  @reg is the registry entry
 * (qp.h) and comes first, so that a lookup's result is this struct.  The
 * fast path reads @reg.app_qp, a gate and the provider's pointers and
 * writes @sq.head (or @rq.head), all on the first two cache lines, which
 * no other QP's poster touches; the counters are written by the posting
 * thread with relaxed load and store (statistics: concurrent posters on
 * one QP may lose a count, never corrupt anything).
 */
struct shiftu_vqp {
	struct shiftu_qp reg;
	struct shiftu_ctx *sctx;
	/*
	 * The posts' common path serves a QP whose gate, @seen_gate for
	 * ibv_post_send and @seen_gate_r for ibv_post_recv, equals the health
	 * page's sequence, zero-extended, with the posting thread's tag
	 * (posters.h) in the top 16 bits: the page has not moved since the
	 * QP last looked, no flag of the gate is set, and the calling thread
	 * is the queue's poster, the one thread that may count its requests
	 * with plain stores.  One 64-bit compare; each member is written on
	 * its own, relaxed, and the poster reads the word in one aligned
	 * load, which sees each member whole.
	 *
	 * @health_seen: page seq the QP last acted on (health.h), written by
	 * its posters.  @slow: set while posts need the slow path (the QP is
	 * on its backup, or its port is down but it could not fail over yet),
	 * written by the thread that changes the state, in both gates at once
	 * (shiftu_vqp_set_slow()).  @copying: set for good when the QP does
	 * not keep its requests in the provider's rings (@rings is not
	 * SHIFTU_RINGS_PROVIDER).  @poster: the tag of the queue's poster,
	 * SHIFTU_POSTER_NONE until a thread takes it, written only under
	 * @fo_lock by shiftu_poster_take().
	 */
	union {
		struct {
			uint32_t health_seen;
			uint8_t slow;
			uint8_t copying;
			uint16_t poster;
		};
		uint64_t seen_gate;
	};
	union {
		struct {
			uint32_t health_seen_r;
			uint8_t slow_r;
			uint8_t copying_r;
			uint16_t poster_r;
		};
		uint64_t seen_gate_r;
	};
	uint8_t down;			/* the table shows our port or path down */
	uint8_t down_path;		/* @down is the path's (for the log) */
	uint8_t port_num;		/* from ibv_modify_qp(IBV_QP_PORT), 0: unset */
	uint8_t has_dgid;
	uint8_t state;			/* enum shiftu_send_state or DEAD; fo_lock */
	uint8_t rings;			/* SHIFTU_RINGS_* */
	uint8_t bak_ready;		/* both twins joined: it can take the work */
	/*
	 * The application moves or moved its QP to ERR or RESET itself
	 * (ibv_modify_qp, rdma_disconnect), or its own error completion (a
	 * bad key, length or opcode, a receiver not ready) stopped it: its
	 * errors are its own and the QP never moves again
	 * (shiftu_failover_app_stop()).  Set before the provider's modify,
	 * by the application's thread, or by the poller that took the
	 * error; read relaxed by pollers and under fo_lock by moves.
	 */
	uint8_t app_stop;
	/*
	 * Control messages of ours posted on the default QP whose completion
	 * is to come to the application's send CQ (sq_sig_all signals them):
	 * each holds its context on the slow poll, which takes it out, so
	 * that the common path never meets it (shiftu_ctrl_sent()).  Atomic.
	 */
	uint32_t ctrl_due;
	uint8_t dgid[16];		/* from ibv_modify_qp(IBV_QP_AV) */

	/* the provider's, copied here so the fast path touches one object */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	struct shiftu_wrbatch *wb;	/* the extended send API's batch (wrapi.c) */
	/*
	 * A failover that found a batch of the extended send API open on the
	 * default QP in the provider's builders (wrapi.c) leaves its reason
	 * here, and the slow flag set, for the batch's poster to fail over
	 * once it has completed or aborted it (fo_lock; any thread clears).
	 */
	const char *move_deferred;
	/*
	 * Set when the move was left to a direct polling session of one of
	 * the QP's extended CQs (cqex.c): the context's polls are held slow
	 * for it (one count) until the session's end takes both this and
	 * @move_deferred (shiftu_vqp_polls_done()).  Atomic; any thread.
	 */
	uint8_t poll_hold;

	struct shiftu_ring sq, rq;
	/* SHIFTU_RINGS_PROVIDER: the provider's send and receive rings */
	const struct rxe_queue_buf *psq, *prq;
	uint32_t psq_mark, prq_mark;	/* their producer indices at a drain */

	uint64_t wr_posts;		/* requests posted by ibv_wr_complete() */
	uint64_t wr_starts;
	uint64_t wr_completes;
	/*
	 * The two-way handshake's counters (handshake.c): two-sided requests
	 * posted (posting thread), and receives the NIC completed, whether
	 * the application polled them yet or not (pollers, atomic add).
	 */
	uint64_t sent2;
	uint64_t consumed;
	/*
	 * Receive completions a move counted for a poller that had taken
	 * them but not counted them yet: it pays them back, not counting
	 * them again (shiftu_count_recv()).
	 */
	uint64_t recv_owed;
	/*
	 * The application QP's number while it is managed, else UINT32_MAX
	 * (numbers have 24 bits): the receive cache's key, next to the count.
	 * A QP on an SRQ has SHIFTU_RC_SRQ or'ed in: the poll's common path
	 * does not match it, and its completions come to the look that gives
	 * the application its ids back (srq.h), which counts them from the
	 * cache all the same.
	 */
	uint32_t rc_qpn;
	/*
	 * The library's threads that hold this QP outside its locks: health
	 * sweeps (shiftu_ctx_health()) that collected it and have not looked
	 * at it yet, a backer that has it to go back (shadow.c).  Its
	 * ibv_destroy_qp() waits for them before the node's locks go and the
	 * node is reused.  Atomic.
	 */
	uint32_t pins;
	/*
	 * A QP on an SRQ (srq.h).  @srq: the SRQ's record, for any QP on an
	 * SRQ the library recorded; @app_srq: the SRQ, for one the library
	 * protects (NULL for any other QP).  Its receives are the SRQ's
	 * table's.  @srq_side: the side its receives come from (srq_lock).
	 */
	struct ibv_srq *app_srq;
	struct shiftu_srq *srq;
	uint8_t srq_side;
	/* its mailboxes (mailbox.h; box.c): default QP's, twin's */
	struct shiftu_mailbox mbox[2];
	uint8_t mboxed;			/* in the watcher's list */

	/*
	 * Cold.  @lock guards @steps (the application's modify_qp against the
	 * shadow thread); @fo_lock serialises failover and fallback posting
	 * (posting threads, and the shadow thread under @lock).  Both are
	 * taken after shadow_lock, never before it (the lock order above).
	 */
	pthread_mutex_t lock;
	pthread_mutex_t fo_lock;
	struct ibv_qp_init_attr init_attr;	/* as created (caps as granted) */
	/* it holds room on its CQs (shiftu_cq_hold()); set at create */
	uint8_t cq_room;
	struct shiftu_qp_steps steps;
	struct ibv_qp *bak_qp;
	struct shiftu_cq *scq, *rcq;
	uint32_t bak_psn;
	uint8_t bak_sgid_index;
	uint8_t published;
	uint8_t peer_known;
	uint8_t bak_rtr;		/* the twin is in RTR: peers can reach it */
	uint8_t bak_rts;		/* ... and in RTS: it can post */
	uint8_t joined_pub;		/* our record says our twin joined */
	uint8_t peer_joined;		/* the peer's twin joined ours */
	uint8_t joined_once;		/* both joined: the QP was protected */
	uint64_t bak_rtr_ns;		/* when (SHIFTU_TEST_JOIN_DELAY_MS) */
	uint8_t sgid[16];		/* our default GID (from the RTR step) */
	struct shiftu_peer peer;
	uint64_t peer_node_guid;	/* the peer's default device */
	struct shiftu_rkey_map *rkeys;	/* peer default rkey -> backup rkey */
	/* its map's entries a move or post waits for, not answered yet
	 * (fo_lock; the shadow thread reads it relaxed, as a hint) */
	unsigned int rkeys_wanted;
	uint64_t scout_ns;		/* its next look ahead (scout.c) */
	unsigned int scouts;		/* looks ahead so far */
	uint32_t lkeys[8][2];		/* default lkey -> backup lkey cache */
	unsigned int n_lkeys;
	unsigned int told_waiting;	/* "cannot fail over yet" said once */
	unsigned int reconnects;	/* twin renewals (shiftu_twin_renew()) */
	/* its queues changed poster (posters.c; fo_lock, read relaxed) */
	uint64_t poster_changes;
	uint8_t posters_told;		/* said once that several threads post */

	/*
	 * The two-way handshake (handshake.c; fo_lock).  Each side sends
	 * its peer one control message per failover, on the twin, before any
	 * of its own traffic there; it consumes the control receive at the
	 * head of the peer's twin.  @ctrl_rq: control receives on our twin
	 * not yet consumed.  @hs_peer: the peer's receive count, valid once
	 * @hs_got.  While @state is SHIFTU_SEND_HANDSHAKE the sends from
	 * @replay_start on are held until it arrives.  @stayed: we answered
	 * the peer's failover and stayed on the default QP, having nothing
	 * to move (SHIFTU_HS_ANSWER); the exchange is over on both sides
	 * (@hs_sent, @hs_got) and the peer's twin holds no control receive
	 * for a second message of ours.  Our next post, or a failure of our
	 * own, moves the QP over without a word (shiftu_failover()).
	 */
	uint8_t hs_sent;
	uint8_t hs_got;
	uint8_t stayed;
	uint8_t ctrl_rq;
	uint8_t rx_moved;		/* our receives live on the twin */
	uint8_t on_twin;		/* the work goes to the twin */
	uint8_t twin_stale;		/* a drained twin left to the shadow thread */
	/* its twin's drain, while one is under way (drain.c; the twin's
	 * CQs' locks): another drain on a CQ of its meets its markers and
	 * flushes, and hands them over */
	struct drain_state *twin_drain;
	/*
	 * Path reports (report.c): set by the poller that failed the QP over
	 * on a retry-exceeded completion; the shadow thread reports the path
	 * down (reported), and up once the QP is back on it.  A path down by
	 * the QP's own report does not count as down for it
	 * (shiftu_vqp_primary()): its probe tells when the path is back.
	 */
	uint8_t report_down;
	uint8_t reported;
	uint64_t fb_wait_ns;		/* until then, wait for the peer's move back */
	/* when the work last came back to the default QP (CLOCK_MONOTONIC
	 * ns; fo_lock; read relaxed by shiftu_vqp_primary()) */
	uint64_t back_ns;
	uint8_t ctrl_default;		/* a control receive waits on the default QP */
	uint16_t ctrl_gen;		/* its generation: SHIFTU_CTRL_DEF_ID() */
	/*
	 * A two-sided failback cut short (goback.c, shiftu_rejoin()): the
	 * side going back lost its default QP before the peer's count came.
	 * @tw_old: our twin is still joined to the peer's as it was before
	 * the peer renewed its own (we granted its failback).  @rejoin_want:
	 * a poller met the default QP's errors meanwhile (any thread; the
	 * shadow thread acts).  @rejoin_ask: ask the peer to join our
	 * renewed twin (the shadow thread, through the store).
	 */
	uint8_t tw_old;
	uint8_t rejoin_want;
	uint8_t rejoin_ask;
	/*
	 * A going back the peer does not answer (failback.c): rather than
	 * leave the default QP, where a peer late but alive still comes,
	 * the side going back asks the peer through the store to cancel the
	 * failback it granted, and listens on both QPs.  @fb_going: the
	 * request whose grant we go back by (the cancel names it: an
	 * epoch, so that a cancel of an older failback changes nothing);
	 * @fb_cancel: 0 none, 1 to be asked, 2 asked, since @fb_cancel_ns
	 * (shadow thread; reset by every move, fo_lock).  The peer's side:
	 * @fb_granted, the request of the two-sided failback it granted and
	 * has not followed yet, while @fb_grant_open (fo_lock).
	 */
	uint32_t fb_going;
	uint32_t fb_granted;
	uint8_t fb_cancel;
	uint8_t fb_grant_open;
	uint64_t fb_cancel_ns;
	uint64_t twin_recvs;		/* the application's receives posted there */
	/*
	 * Its twin failed under its work (cqtwin.c: shiftu_twin_hold()).
	 * Nothing backs a twin: the work goes back to the default QP, with
	 * the peer, once its path is up, a two-sided failback asked for at
	 * once (failback.c).  Until then the twin's error completions wait
	 * here for the drain that goes back to count them (drain.c), per
	 * CQ: @tw_held[0] the send CQ's, [1] the receive CQ's when it is
	 * another, each under its CQ's lock.  A failback that does not come
	 * in time gives them to the application (goback.c:
	 * shiftu_twin_dead_give_up()).  @twin_dead_ns: since when (atomic;
	 * 0, its twin is sound); @twin_dead_seen: the shadow thread asked
	 * for the failback (vq->lock).
	 */
	struct ibv_wc *tw_held[2];
	unsigned int tw_held_n[2];
	uint64_t twin_dead_ns;
	uint8_t twin_dead_seen;
	/*
	 * A receive of its default QP completed with "remote invalid
	 * request" (cqerr.c): Soft-RoCE's responder says so when it lost its
	 * place in the peer's message (the transport's error) as when a SEND
	 * with invalidate named a bad key (the sender's), and only the
	 * peer's library, which has the request, can tell them apart
	 * (provq.h).  The error and what follows it wait in the stash for
	 * its verdict: its failover, which this side follows (the drain
	 * counts the refused receive with the flushed ones), or none in
	 * time, and the application gets them.  Since when (atomic; 0: none
	 * waits).
	 */
	uint64_t refused_ns;
	uint64_t hs_peer;		/* 31 bits on the wire, extended (serial.h) */
	uint64_t replay_start;
	struct shiftu_sq_gap sq_gap;	/* sends on no QP (fo_lock; proto.h) */
	uint64_t hs_since_ns;		/* the move that waits began */
	/*
	 * The sends held from @replay_start on (SHIFTU_SEND_HANDSHAKE) wait
	 * for the peer's backup rkeys the look ahead has not fetched (too), not
	 * only for the peer's count: the shadow thread replays them once it
	 * has (shiftu_keys_came()).  fo_lock.
	 */
	uint8_t keys_held;
	uint64_t hs_told_ns;		/* it had told the peer */

	/*
	 * Failing back (goback.c, failback.c).  twin_signaled counts signaled
	 * requests posted on the twin (fo_lock), twin_done their completions
	 * (the CQ's lock); equal means the twin has drained.  Requests posted
	 * while waiting for that are recorded from held_start on and not
	 * posted: the withheld doorbell.
	 */
	uint64_t twin_signaled;
	uint64_t twin_done;
	uint64_t held_start;
	/* the side that failed over: its request to the peer (shadow thread) */
	uint32_t fb_seq;
	uint32_t fb_psn;
	uint64_t fb_next_ns;		/* next attempt (backoff) */
	uint64_t fb_asked_ns;		/* when the last request was made */
	uint32_t fb_backoff_ms;
	uint8_t fb_stage;		/* 0 idle, 1 asked the peer, 2 probing */
	uint8_t probe_state;		/* 0 none, 1 posted, 2 good, 3 failed */
	uint8_t fb_by_send;		/* our failback's probe is a SEND (failback.c) */
	uint8_t fb_mode;		/* the peer's answer's mode (failback.c) */
	uint64_t fb_probe_ns;		/* the probe's deadline */
	/* the probe came back good and the peer waits: going back is due
	 * since then (shiftu_back_due()), 0 once a thread took it; atomic */
	uint64_t back_due_ns;
	/* a thread took it and goes back (drains the twin, seconds on a busy
	 * CPU): still ours, not the peer's to grant; atomic */
	uint8_t back_taken;
	/* handed to a backer, which has not gone back yet (backer_lock) */
	uint8_t backer_handed;
	struct shiftu_vqp *backer_next;	/* the backers' queue (backer_lock) */
	/* the peer's side: the last request it answered */
	uint32_t fb_answered;
	uint64_t fb_poll_ns;
};

struct shiftu_rkey_map {
	uint32_t rkey, bak_rkey;
	uint64_t miss_ns;		/* not 0: the store had none then */
	/* a move or post waits for it: ask the store at the next pass */
	uint8_t wanted;
	struct shiftu_rkey_map *next;
};

/*
 * Set or clear the slow flag of both of @vq's gates, with @order (a move
 * that then waits for the posters stores with __ATOMIC_SEQ_CST).
 */
static inline void shiftu_vqp_set_slow(struct shiftu_vqp *vq, uint8_t on, int order)
{
	__atomic_store_n(&vq->slow, on, order);
	__atomic_store_n(&vq->slow_r, on, order);
}

#endif /* _SHIFTU_VQPSTATE_H */
