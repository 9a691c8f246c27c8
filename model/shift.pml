/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shift.pml: the two peers of one RC QP, their NICs and the failover
 * protocol, over and back (SHIFT sections 4.3.2 and 4.3.3,
 * Documentation/libshiftu.rst), for spin.
 *
 * How the model and the C stay one: the model decides nothing itself.
 * Every decision the library takes is the library's own code, called from
 * the verifier through c_code (model/glue.c, linked with userlib/proto.c):
 *   - what a move does with its outstanding sends: shiftu_plan_sends(),
 *     shiftu_plan_next(), and shiftu_plan_replays() for each of them;
 *   - the peer's count on the wire and back: shiftu_hs_count_put(),
 *     shiftu_hs_count_get() (serial.h), 31 bits;
 *   - what a control message calls for: shiftu_hs_decide(), on the twin
 *     or on the default QP;
 *   - the answer to a peer's failback request: shiftu_fb_answer().
 * glue.c checks at compile time that the codes the model branches on are
 * proto.h's.  What the model writes out by hand is what calls them: the
 * sequence of shiftu_failover() and shiftu_move_locked() (move.c: its
 * steps rx_move(), move_tell(), tx_move()), shiftu_hs_message() and
 * replay_held() (failover.c) (receives first, then the control message,
 * then replay or hold), and the world around them: the applications, the
 * NICs and the paths.  A change to proto.c is checked here as it is; a
 * change to the order of those steps must be made here too.
 *
 * Counts: the two-sided counts and ring places are small offsets here
 * (a script is M_L requests), and glue.c adds them to a start just below
 * a wrap (0, 2^31 - 1, 2^32 - 1, 2^64 - 1: start_i, chosen by init), so
 * that the first message crosses each wrap of the 31-bit count on the
 * wire and of the 64-bit counts.
 *
 * The world:
 *   - each side's application posts a script of up to M_L requests
 *     (WRITE: data; WRITE_WITH_IMM or SEND: a notification, which takes
 *     a receive; READ; FETCH_AND_ADD), chosen by init, every combination;
 *     each side posted enough receives for its peer's notifications;
 *   - the default path carries each side's requests in order; the
 *     peer's NIC executes them in order (exec), and acks come back in
 *     order (acked <= exec).  A request retried by the NIC after a lost
 *     ack is one the responder already executed (its PSN is behind the
 *     expected one): the responder acks it again and does not execute it
 *     again, which is what exec and acked say: exec only grows, an ack
 *     only covers what executed;
 *   - once, the default path fails (down): what was not executed is
 *     dropped, acks not yet back are lost.  The requester's NIC then
 *     flushes what is outstanding (an error completion starts a move), or
 *     drops it silently: the side learns of the failure from its port's
 *     event, or from its peer's control message, or not at all if it has
 *     nothing outstanding;
 *   - the twins' path (the backup NICs) does not fail; it executes in
 *     order, and a notification waits for a receive (RNR) until its
 *     side has moved its receives to the twin.  Each twin holds one
 *     control receive;
 *   - the store is where a side finds its peer's twin and keys: the
 *     twins are connected before the failure (the shadow thread's work),
 *     so it is always there when a move asks.  The library makes that
 *     so: a QP is protected, and can move, only once both twins have
 *     joined each other (twin.c, the record's <joined>); before that
 *     rule a failover could tell its count to a twin of the peer's in
 *     RTR whose side could not follow yet (failover_late_join.sh).
 *
 * Checked (assert), with every interleaving:
 *   - a notification is executed at most once, and when it is, every
 *     request posted before it has executed (its data is there);
 *   - a WRITE never executes after a later notification was delivered
 *     (what is replayed is idempotent up to the notification);
 *   - an atomic executes at most once, and is never replayed: its side
 *     gives up and the application gets the errors;
 *   - every request gets exactly one completion; a good one only if it
 *     executed;
 *   - once nothing can move (timeout): no side waits for a count
 *     (SHIFTU_SEND_HANDSHAKE), and unless a side gave up for an atomic,
 *     every request completed good and every notification was delivered
 *     exactly once: none lost;
 *   - no control message lands where the twin has no control receive.
 * pan also reports invalid end states: every process's waiting places
 * are end labels, so a quiescent state is judged by check's assertions.
 *
 * A side with nothing posted answers a failover and stays on its default
 * QP (SHIFTU_HS_ANSWER).  The exchange is then over on both sides: its
 * answer took the one control receive on the peer's twin, and the peer's
 * default QP, drained before it spoke, executes nothing more.  So when the
 * side that stayed moves later (its application posts, which moves it at
 * once, or its port's event, or an error completion), it says nothing and
 * replays by the count it has.  This model found the library sending a
 * second control message there (the answer cleared hs_sent): it took one
 * of the application's receives on the peer's twin, or waited in RNR in
 * front of everything else.  -DSEED_STAY_SPEAKS puts that back, and
 * selftests/model/spin_model.sh checks that it is caught.
 *
 * Failing back (M_FB, the default): once it failed, the default path can
 * come back (up).  A side on its twin then asks its peer through the
 * store (failback_step()), at most M_TRIES times; the peer answers
 * (shiftu_fb_answer()), resetting its default QP if it grants; the asking
 * side resets its own and probes, which is good at once (the path does not
 * fail again).  One-sided: the next request is the fence on the twin, the
 * later ones are held until everything up to the fence completed, then
 * go to the default QP (release_held(), goback.c).  Two-sided: the failover in
 * reverse (move_back()), the peer following on the asking side's message
 * on the default QP.  The reset default QPs are queues like the twins',
 * and once the path is back a queue's requests are executed and acked in
 * two steps, so that a drain flushes requests the peer executed.  Checked
 * too, over the whole cycle: no default QP is reset under the peer's
 * traffic; once quiescent, no fence waits, nothing of a side back on its
 * default QP is left on its twin or on the way, no side waits for the
 * message of a failback it granted.
 *
 * Four findings on failback are fixed.  First, a failback asked for or
 * granted before the peer's failover message was handled (a slow
 * watcher, a message retried on a lossy path) took that message, after
 * the failback, for a new failover; SEED_ASK_UNHEARD puts it back.
 * Second, a failback request left in the store by a side that granted the
 * peer's was taken up, once both were back, by a peer that posted
 * nothing, which reset its default QP under the traffic: the side that
 * grants withdraws its own request (answer()); SEED_KEEP_REQ puts it
 * back.  Third, a side that granted a one-sided failback posts on its
 * reset default QP at once, and the NIC's retries may run out before the
 * asking side has reset and connected its own (a slow store, a slow
 * shadow thread: PEER_GONE): it fails over again, and its message must
 * find a control receive on the asking side's twin, whose last one the
 * answer to the first failover took; the asking side posts one as it
 * asks, unless the application's receives are on its twin (the failback
 * is two-sided then); SEED_ASKER_NO_CTRL leaves it out.  Fourth, a
 * failback draining a twin while a READ a failover replayed before its
 * cut is outstanding (the replay's gap, glo and ghi; SEED_GAP_WALK).
 *
 * A twin failing under the work (M_TD): once, while both sides' work is
 * on their twins, their exchanges are over and the default path is still
 * down (a bound on the state space), the twins' path fails (in
 * the 1000-fault soak, Soft-RoCE's responder lost its place on the backup
 * rail and both twins stopped): nothing on it executes or is acked any
 * more.  Each side learns it from its twin's error completions, which the
 * library holds (cqtwin.c: twin_hold()), and asks for its failback at
 * once, two-sided (failback.c: twin_dead_step(), failback_ask()); the
 * drain back counts what the twin held, and the sends are replayed on the
 * default QP by the peer's count.  Checked as above: nothing lost, none
 * twice.  SEED_TWIN_ERRORS gives the twin's errors to the application
 * instead, as the library did before.  Not modelled there: a twin failing
 * while a failover's exchange or a failback is under way, or under a side
 * that stayed on its default QP (the library gives the errors to the
 * application then, or after 10 s without a failback: a matter of time,
 * which the model has none of).
 *
 * Not modelled: a failback cut short by a second failure (a rejoin: the
 * model asserts none happens), a failover after a two-sided failback (the
 * renewed twins), backoff and timeouts other than the handshake's, an
 * empty SEND as the probe, unsignaled requests, SRQs, the drain's
 * mechanics, a peer process that dies (only its library giving up, which
 * the handshake's timeout covers).  Nor, so, a going back the peer does
 * not answer in time (failback.c: rejoin_ns()): the side asks the peer
 * through the store to cancel the failback (cancel_ask()), and the peer
 * either joins its renewed twin or has followed (shiftu_cancel_serve()).
 * What went wrong before (the side left its default QP at once, and a
 * peer that followed late could learn of it only from the store, later
 * than the side's wait on its twin) is a matter of time, which the model
 * has none of: with no time, that peer always came, so the model would
 * have passed it; failback_late_peer.sh is its check.  Modelling the
 * cancel needs the twins' generations (a renewed twin's message to an old
 * one is acked as a duplicate and lost), which the model lacks too.
 *
 * Build with a seeded defect (glue.c): make -C model SEED=SEED_31BIT.
 */
#include "shift_model.h"

/* the scripts' lengths at most (M_L); the state space is their product */
#ifndef M_L0
#define M_L0	M_L
#endif
#ifndef M_L1
#define M_L1	1
#endif
/* M_FB: the default path comes back and the QPs fail back (0: never) */
#ifndef M_FB
#define M_FB	1
#endif
/* failback requests a side makes at most (each answer may be "busy") */
#ifndef M_TRIES
#define M_TRIES	1
#endif
/* M_TD: the twins' path fails once under the work (0: never) */
#ifndef M_TD
#define M_TD	0
#endif

c_decl {
	extern int model_wire(int start, int consumed);
	extern unsigned long long model_peer(int start, int wire, const unsigned char *ops,
					     int head);
	extern int model_plan(int start, const unsigned char *ops, int from, int posted, int head,
			      int lo, int hi, int known, unsigned long long peer, int back);
	extern int model_from(int start, const unsigned char *ops, int head, int n, int lo,
			      int hi);
	extern int model_hs_decide(int state, int on_twin, int on_default, int ack,
				   int expected, int busy);
	extern int model_opts(void);
	extern int model_fb_answer(int state, int on_twin, int posted, int going, int asking,
				   int leader, int peer_twin_recvs, int unheard);
}

/* the peer's count as shiftu_hs_message() read it, 64 bits (vq->hs_peer) */
c_state "unsigned long long hs_peer[2]" "Global"

byte start_i;			/* glue.c's starts[] */
byte opts;			/* O_*: glue.c's seeded defects and open findings */
byte op[2 * M_L];		/* side s's request k: op[s * M_L + k] */
byte slen[2];			/* the scripts' lengths */
bool rx_posted[2];		/* receives posted for the peer's notifications */
byte ntwo[2];			/* the notifications in side s's script */

/* the library's record of each side (struct shiftu_vqp) */
byte nxt[2];			/* requests recorded: sq.head, as an offset */
byte state[2];			/* S_*: vq->state */
bool on_twin[2];
bool rx_twin[2];		/* its receives are on the twin (vq->rx_moved) */
bool twrx[2];			/* receives of the application's went to the twin
				 * (vq->twin_recvs) */
bool hs_got[2], hs_sent[2];
byte rstart[2];			/* replay_start, while S_HANDSHAKE */
byte held[2];			/* held_start, while S_WAIT_DRAINED */
byte consumed[2];		/* notifications received */
bool portev[2];			/* the watcher saw the port down */
bool stayed[2];			/* answered the peer's failover and stayed */

/* failing back (failback.c: failback_step(); fbanswer.c: failback_answer()) */
bool req[2];			/* side s's fbreq: in the store, not answered */
byte fbrep[2];			/* the answer to it: 0 none, 1 busy or leads,
				 * 2 granted one-sided, 3 two-sided */
bool fbst[2];			/* side s awaits that answer (fb_stage 1) */
byte tries[2];			/* requests made */
bool granted[2];		/* it granted the peer a two-sided failback
				 * (fb_wait_ns) */
bool backdue[2];		/* its probe was good: going back is due */
bool expect[2];			/* vq->ctrl_default: a message on the default
				 * QP is expected */
bool cdr[2];			/* the control receive on the default QP */
byte glo[2], ghi[2];		/* vq->sq_gap: requests [glo, ghi) but READs
				 * a replay completed good and posted nowhere */

/* the twins' path failed under the work (M_TD) */
bool tdown;
bool tdead[2];			/* side s held its twin's errors (vq->twin_dead_ns) */

/* the default path, as the applications connected it (generation 1) */
bool down;			/* it failed */
bool up;			/* and came back (M_FB) */
byte defhead[2];		/* requests posted on the default QP */
byte exec[2];			/* of those, executed by the peer's NIC */
byte acked[2];			/* of those, completed good */

/*
 * The queues a side sends on, in order, q = 2 * path + side: its twin
 * (path 0), its default QP once reset for a failback (path 1, generation
 * 2).  Each holds the side's requests k and control messages 8 + i; the
 * peer's NIC executes the head (thd), and its ack comes back later (tak),
 * so that a QP stopped in between has executed a request it flushes.  A
 * request a dead peer answered with an error is 7 from then on.
 */
#define NQ	4
byte tq[NQ * M_Q];
byte thd[NQ], tak[NQ], ttl[NQ];
bool qup[NQ];			/* that QP of the side works (reset: stopped) */
bool qgone[2];			/* side s's default QP, reset for a failback, was
				 * stopped again by a move */
int cw[2 * M_C];		/* side s's control message i: wire count, answer */
bool ca[2 * M_C];
byte nctl[2];
byte cwire[2];			/* side s's control messages on the wire */
bool ctrl_rq[2];		/* the twin's control receive is there */
/* control messages received, for the watcher: count, answer, on the default QP */
chan inbox[2] = [3] of { int, bool, bool };

/* what the applications saw */
byte nexec[2 * M_L];		/* executions of side s's request k at the peer */
byte comp[2 * M_L];		/* its completion: 0 none yet, 1 good, 2 error */
byte ncomp[2];			/* completions of side s's requests */
byte hi[2];			/* side s's last notification delivered, + 1 */
bool gave_up;			/* a side gave its QP up for an atomic */

/* a decision, for the atomic step that asked for it (0 between steps) */
int plan;
byte act;

#define IDX(s, k)	((s) * M_L + (k))
#define TWO(o)		((o) == OP_WIMM || (o) == OP_SEND)
#define SND(q)		((q) % 2)
#define RCV(q)		(1 - (q) % 2)
#define QAT(q, i)	tq[(q) * M_Q + (i)]
#define HEAD(q)		QAT(q, thd[q])
/* the receiving side's receives are on the path of queue q */
#define RXON(r, q)	(((q) < 2) == rx_twin[r])
/* the head of queue q can go: a notification needs a receive */
#define READY(q)	(HEAD(q) >= 8 || state[RCV(q)] == S_DEAD || \
			 !TWO(op[IDX(SND(q), HEAD(q))]) || RXON(RCV(q), q))

inline comp_good(s, k)
{
	assert(comp[IDX(s, k)] == 0);		/* one completion each */
	assert(nexec[IDX(s, k)] > 0);		/* good only if it executed */
	comp[IDX(s, k)] = 1;
	ncomp[s]++
}

inline comp_err(s, k)
{
	assert(comp[IDX(s, k)] == 0);
	comp[IDX(s, k)] = 2;
	ncomp[s]++
}

/* The peer's NIC executes side s's request k (local j of the caller). */
inline execute(s, k)
{
	/* RC: everything posted before it has executed: its data is there */
	j = 0;
	do
	:: j < k -> assert(nexec[IDX(s, j)] > 0); j++
	:: else -> break
	od;
	j = 0;
	if
	:: op[IDX(s, k)] == OP_WRITE ->
		/* not after a later notification: the receiver uses the data */
		assert(hi[s] <= k)
	:: TWO(op[IDX(s, k)]) ->
		assert(nexec[IDX(s, k)] == 0);	/* never twice */
		consumed[1 - s]++;
		hi[s] = k + 1
	:: op[IDX(s, k)] == OP_FADD ->
		assert(nexec[IDX(s, k)] == 0)
	:: op[IDX(s, k)] == OP_READ
	fi;
	nexec[IDX(s, k)]++
}

inline tq_put(q, item)
{
	assert(ttl[q] < M_Q);
	QAT(q, ttl[q]) = item;
	ttl[q]++
}

/*
 * The drain of queue q (shiftu_drain(), drain.c: its QP stopped, what it
 * holds flushed):
 * n_s the side's requests flushed, fl which (locals of peer).
 */
inline q_drain(q)
{
	i = tak[q];
	do
	:: i < ttl[q] ->
		if
		:: QAT(q, i) < 7 -> n_s++; fl = fl | (1 << QAT(q, i))
		:: QAT(q, i) >= 8 && i >= thd[q] -> cwire[SND(q)]--
		:: else
		fi;
		QAT(q, i) = 0;
		i++
	:: else -> break
	od;
	i = 0;
	thd[q] = ttl[q];
	tak[q] = ttl[q];
	qup[q] = 0;
	if
	:: q >= 2 -> qgone[q - 2] = 1
	:: else
	fi
}

/* shiftu_ctrl_send(): our receive count, on the QP the work is on (locals of peer) */
inline send_ctrl(ack)
{
	assert(nctl[me] < M_C);
	c_code { now.cw[Ppeer->me * M_C + now.nctl[Ppeer->me]] =
			model_wire(now.start_i, now.consumed[Ppeer->me]); };
	ca[me * M_C + nctl[me]] = ack;
	if
	:: on_twin[me] -> tq_put(me, 8 + nctl[me])
	:: else -> tq_put(2 + me, 8 + nctl[me])
	fi;
	nctl[me]++;
	cwire[me]++;
	hs_sent[me] = 1
}

/*
 * The plan for the sends [k, nxt) outstanding (move.c's tx_outstanding(),
 * then shiftu_replay(), replay.c); bk: a failback.  Those held are posted
 * by no one yet (shiftu_posted_end()).
 */
inline do_plan()
{
	c_code { now.plan = model_plan(now.start_i, &now.op[Ppeer->me * M_L], Ppeer->k,
				       now.state[Ppeer->me] == S_HANDSHAKE ? now.rstart[Ppeer->me] :
				       now.state[Ppeer->me] == S_WAIT_DRAINED ? now.held[Ppeer->me] :
				       now.nxt[Ppeer->me],
				       now.nxt[Ppeer->me], now.glo[Ppeer->me], now.ghi[Ppeer->me],
				       now.hs_got[Ppeer->me], now.hs_peer[Ppeer->me], Ppeer->bk); }
}

/*
 * The first of the n_s sends a drain flushed, into k (tx_outstanding(),
 * move.c: shiftu_posted_from()): the last n_s posted on that QP, which are not the
 * last n_s recorded while a replay's READ before its cut is outstanding.
 */
inline flushed_from()
{
	c_code { Ppeer->k = model_from(now.start_i, &now.op[Ppeer->me * M_L],
				       now.nxt[Ppeer->me], Ppeer->n_s, now.glo[Ppeer->me],
				       now.ghi[Ppeer->me]); };
	assert(k < M_L + 1)	/* found (-1 is 255 in a byte) */
}

/*
 * go_dead() (shiftu_go_dead(), move.c): the sends [k, nxt) complete
 * flushed, the QP is given up
 */
inline go_dead()
{
	i = k;
	do
	:: i < nxt[me] && i >= glo[me] && i < ghi[me] && op[IDX(me, i)] != OP_READ ->
		i++	/* a replay completed it (shiftu_flush_held()) */
	:: i < nxt[me] && !(i >= glo[me] && i < ghi[me] && op[IDX(me, i)] != OP_READ) ->
		comp_err(me, i);
		i++
	:: else -> break
	od;
	i = 0;
	state[me] = S_DEAD
}

/* go_dead() after a drain: what the NIC flushed (fl) completes so */
inline go_dead_fl()
{
	i = 0;
	do
	:: i < nxt[me] && (fl & (1 << i)) -> comp_err(me, i); i++
	:: i < nxt[me] && !(fl & (1 << i)) -> i++
	:: else -> break
	od;
	i = 0;
	state[me] = S_DEAD
}

/*
 * replay() (shiftu_replay(), replay.c): the sends [k, nxt) go where the
 * work is now, but those the peer had; then shiftu_moved() (move.c):
 * Fallback on the twin, Default back on the
 * default QP (a new exchange next time, no failback awaited any more).
 */
inline replay()
{
	do_plan();
	/* a count beyond what we sent: the library gives up (EPROTO); only a
	 * broken count gets there */
	assert((plan & 8) == 0);
	i = k;
	do
	:: i < nxt[me] && (plan & (1 << (16 + i))) ->
		/* completed by the replay before: on no QP, left alone */
		i++
	:: i < nxt[me] && (plan & (1 << (8 + i))) ->
		/* an atomic that was on the default QP is never replayed (one
		 * posted while held goes for the first time) */
		assert(op[IDX(me, i)] != OP_FADD || i >= defhead[me]);
		if
		:: on_twin[me] -> tq_put(me, i)
		:: else -> tq_put(2 + me, i)
		fi;
		i++
	:: i < nxt[me] && !(plan & (257 << (8 + i))) ->
		/* it executed at the peer: completes good, as the NIC would have */
		comp_good(me, i);
		i++
	:: else -> break
	od;
	i = 0;
	/* what it completed, and READs before them it posted: the gap */
	glo[me] = k;
	ghi[me] = (plan >> 24) & 15;
	if
	:: on_twin[me] -> state[me] = S_FALLBACK
	:: else ->
		state[me] = S_DEFAULT;
		hs_sent[me] = 0;
		hs_got[me] = 0;
		granted[me] = 0
	fi
}

/*
 * shiftu_move_locked(MOVE_OVER), move.c: drain the default QP (what completed good is
 * done, the rest is outstanding), give up on an atomic, else the receives
 * to the twin, the control message unless one went, and the replay now
 * or once the peer's count comes.  A default QP reset for a failback
 * (generation 2) is drained like a twin: the outstanding are the last
 * n_s posted (flushed_from()).
 */
inline move()
{
	/* a failover after a two-sided failback (the twins renewed): not modelled */
	assert(qup[me]);
	if
	:: qup[2 + me] -> q_drain(2 + me); flushed_from()
	:: else -> k = acked[me]
	fi;
	bk = 0;
	do_plan();
	if
	:: (plan & 3) == N_GIVE_UP ->
		assert(plan & 4);	/* an atomic; a bad count is no plan's */
		gave_up = 1;
		go_dead()
	:: else ->
		twrx[me] = rx_posted[me] && consumed[me] < ntwo[1 - me];
		portev[me] = 0;		/* read only on the default QP */
		rx_twin[me] = 1;
		on_twin[me] = 1;
		stayed[me] = 0;
		if
		:: !hs_sent[me] -> send_ctrl(hs_got[me])
		:: else
		fi;
		if
		:: (plan & 3) == N_HOLD ->
			state[me] = S_HANDSHAKE;
			rstart[me] = k
		:: else ->
			replay()
		fi
	fi;
	plan = 0;
	k = 0;
	n_s = 0;
	fl = 0
}

/*
 * shiftu_move_locked(MOVE_BACK), move.c: a two-sided failback, the
 * failover in reverse.  The twin is stopped and drained; the sends
 * outstanding are the last n_s posted on it (flushed_from(), the
 * library's count); the receives go to the default QP,
 * then the control message there, and the sends wait for the peer's count
 * (shiftu_plan_next(..., back)) unless it came already (the side that
 * follows).  The twin is renewed (not modelled: no failover follows).
 */
inline move_back()
{
	q_drain(me);
	flushed_from();
	bk = 1;
	do_plan();
	if
	:: (plan & 3) == N_GIVE_UP ->
		assert(plan & 4);
		gave_up = 1;
		go_dead_fl()
	:: else ->
		rx_twin[me] = 0;
		on_twin[me] = 0;
		stayed[me] = 0;
		if
		:: !hs_sent[me] -> send_ctrl(hs_got[me])
		:: else
		fi;
		if
		:: (plan & 3) == N_HOLD ->
			state[me] = S_HANDSHAKE;
			rstart[me] = k
		:: else ->
			replay()
		fi
	fi;
	bk = 0;
	plan = 0;
	k = 0;
	n_s = 0;
	fl = 0
}

/*
 * release_held(), goback.c lines 172-214: a one-sided failback's twin
 * has completed everything up to its fence; the held requests go to the
 * default QP in order, and the QP is in Default again.
 */
inline release_held()
{
	i = held[me];
	do
	:: i < nxt[me] -> tq_put(2 + me, i); i++
	:: else -> break
	od;
	i = 0;
	/* the twin completed all before the fence, a gap's READs too */
	glo[me] = held[me];
	ghi[me] = held[me];
	state[me] = S_DEFAULT;
	rx_twin[me] = 0;
	on_twin[me] = 0;
	hs_sent[me] = 0;
	hs_got[me] = 0;
	ctrl_rq[me] = 1;
	held[me] = 0
}

/*
 * shiftu_qp_reconnect() (qpconn.c): side s's default QP reset and
 * connected again (generation 2), with a control receive at its head for
 * a two-sided failback (m).  Nothing of the peer's may be under way on
 * its own reset default QP to this one: the reset would lose it.
 */
inline reconnect(s, m)
{
	qup[2 + s] = 1;
	qgone[s] = 0;
	cdr[s] = m;
	expect[s] = m
}

/*
 * failback_answer() (fbanswer.c): the peer's request, under
 * fo_lock, answered by shiftu_fb_answer(): going back already is a move
 * back due or made and waiting for the count (the model's probe is good
 * at once); side 0 leads (fb_leader()).  Granted, our default QP is reset:
 * two-sided, we wait for the peer's message (fb_wait_ns); one-sided, the
 * peer's next failover is a new exchange, with a control receive on our
 * twin again.
 */
inline answer()
{
	req[1 - me] = 0;
	c_code { now.plan = model_fb_answer(now.state[Ppeer->me], now.on_twin[Ppeer->me],
					    now.nxt[Ppeer->me] > 0 || now.rx_posted[Ppeer->me],
					    now.backdue[Ppeer->me] ||
					    (now.state[Ppeer->me] == S_HANDSHAKE &&
					     !now.on_twin[Ppeer->me]),
					    now.fbst[Ppeer->me], Ppeer->me == 0,
					    now.twrx[1 - Ppeer->me] || now.tdead[1 - Ppeer->me],
					    !now.hs_got[Ppeer->me]); };
	a = (plan & 4) != 0;
	if
	:: (plan & 3) != F_GRANT -> fbrep[1 - me] = 1
	:: else ->
		/* the reset under traffic of the peer's on its default QP */
		assert(tak[3 - me] == ttl[3 - me]);
		reconnect(me, a);
		if
		:: a ->
			/* our own request is withdrawn, ahead of the answer */
			fbst[me] = 0;
			req[me] = req[me] && (opts & O_KEEP_REQ);
			granted[me] = 1
		:: else ->
			stayed[me] = 0;
			hs_sent[me] = 0;
			hs_got[me] = 0;
			ctrl_rq[me] = ctrl_rq[me] || !twrx[me]
		fi;
		fbrep[1 - me] = 2 + a
	fi;
	plan = 0;
	a = 0
}

/*
 * failback_step() with the answer, then failback_probed() (failback.c):
 * busy, ask again later; granted, reset our default QP with the
 * peer's PSN and probe it.  The path is up, so the probe is good: a
 * one-sided failback waits for its fence (shiftu_probe_fence()), a
 * two-sided one is due (shiftu_back_due()).
 */
inline got_answer()
{
	fbst[me] = 0;
	if
	:: fbrep[me] == 1
	:: fbrep[me] == 2 ->
		reconnect(me, 0);
		state[me] = S_WAIT_SIGNALED
	:: fbrep[me] == 3 ->
		reconnect(me, 1);
		backdue[me] = 1
	fi;
	fbrep[me] = 0
}

/* shiftu_hs_message(): the peer's control message (count w, answer a, on the default QP d) */
inline hs_message()
{
	c_code { now.act = model_hs_decide(now.state[Ppeer->me], now.on_twin[Ppeer->me],
					   Ppeer->d, Ppeer->a, now.expect[Ppeer->me],
					   now.nxt[Ppeer->me] > 0 || now.rx_posted[Ppeer->me]); };
	/* no default QP is reset twice: no message from an older generation */
	assert(act != A_OLD);
	if
	:: d -> expect[me] = 0
	:: else
	fi;
	if
	:: act == A_STALE
	:: else ->
		c_code { now.hs_peer[Ppeer->me] = model_peer(now.start_i, Ppeer->w,
							     &now.op[Ppeer->me * M_L],
							     now.nxt[Ppeer->me]); };
		hs_got[me] = 1;
		if
		:: act == A_FOLLOW_OVER ->
			move()
		:: act == A_FOLLOW_BACK ->
			hs_sent[me] = 0;
			move_back()
		:: act == A_ANSWER ->
			on_twin[me] = 1;
			send_ctrl(1);
			on_twin[me] = 0;
			if
			:: opts & O_STAY_SPEAKS ->
				/* the defect this model found (top) */
				hs_got[me] = 0;
				hs_sent[me] = 0
			:: else
			fi;
			/* the exchange is over (hs_sent, hs_got): a move says
			 * nothing */
			stayed[me] = 1
		:: act == A_DONE ->
			hs_got[me] = 0
		:: act == A_REPLAY ->
			/* replay_held() */
			if
			:: !hs_sent[me] -> send_ctrl(1)
			:: else
			fi;
			k = rstart[me];
			replay();
			rstart[me] = 0;
			plan = 0;
			k = 0
		:: act == A_NOTE
		:: else ->
			/* a rejoin: no failback is cut short here */
			assert(false)
		fi
	fi;
	act = 0;
	w = 0;
	a = 0;
	d = 0
}

/*
 * A side that granted a one-sided failback posts on its default QP at
 * once; the asking side resets and connects its own a few store round
 * trips later, and the retries of those posts may run out first: a peer
 * QP not connected yet fails them, as does one a move stopped.
 */
#define PEER_GONE(s)	(!qup[3 - (s)] || qgone[1 - (s)])

/*
 * The peer gave its QP up and stopped its end (a drain): what is left on
 * the queue runs out of retries and completes in error, which the library
 * leaves to the application (shiftu_error_vq() in cqerr.c: a twin's).
 */
inline q_fail(q)
{
	i = tak[q];
	do
	:: i < ttl[q] ->
		if
		:: QAT(q, i) < 7 -> comp_err(SND(q), QAT(q, i))
		:: QAT(q, i) >= 8 && i >= thd[q] -> cwire[SND(q)]--
		:: else
		fi;
		QAT(q, i) = 0;
		i++
	:: else -> break
	od;
	i = 0;
	thd[q] = ttl[q];
	tak[q] = ttl[q]
}

/* One side: its application's posts and its library's threads. */
proctype peer(byte me)
{
	byte k, i, n_s, fl;
	int w;
	bool a, d, bk;

end:
	do
	:: atomic {
		nxt[me] < slen[me] ->
		/* the application posts: where it goes is the library's state;
		 * a side that stayed moves first (shiftu_post_send_slow()) */
		if
		:: state[me] == S_DEFAULT && stayed[me] -> move()
		:: else
		fi;
		k = nxt[me];
		nxt[me]++;
		/* a message before the peer's count: the peer's receives may
		 * not be on its twin yet, held until the count comes */
		if
		:: state[me] == S_FALLBACK && TWO(op[IDX(me, k)]) && !hs_got[me] ->
			state[me] = S_HANDSHAKE;
			rstart[me] = k
		:: else
		fi;
		if
		:: state[me] == S_DEAD -> comp_err(me, k)	/* a QP in error */
		:: state[me] == S_HANDSHAKE || state[me] == S_WAIT_DRAINED
			/* held: the replay or the release posts it */
		:: state[me] == S_FALLBACK -> tq_put(me, k)
		:: state[me] == S_WAIT_SIGNALED ->
			/* every request is signaled: this one is the fence */
			tq_put(me, k);
			state[me] = S_WAIT_DRAINED;
			held[me] = k + 1
		:: state[me] == S_DEFAULT && qup[2 + me] -> tq_put(2 + me, k)
		:: state[me] == S_DEFAULT && !qup[2 + me] -> defhead[me]++
		fi;
		k = 0
	   }
	:: atomic {
		/* an error completion: a request on the dead path */
		down && state[me] == S_DEFAULT && !qup[2 + me] && acked[me] < defhead[me] ->
		move()
	   }
	:: atomic {
		/* an error completion on the default QP reset for a failback:
		 * the peer's end of it was stopped (drained by a move), or
		 * is not connected yet, and the NIC's retries of a request
		 * ran out */
		state[me] == S_DEFAULT && qup[2 + me] && PEER_GONE(me) && tak[2 + me] < ttl[2 + me] ->
		move()
	   }
	:: atomic {
		/* the watcher: the port's event, if this side's port went, while
		 * the table shows it down */
		down && !up && state[me] == S_DEFAULT && !qup[2 + me] && !portev[me] ->
		portev[me] = 1;
		move()
	   }
	:: atomic {
		/* the watcher: a control message on the twin or the default QP */
		inbox[me]?w, a, d -> hs_message()
	   }
	:: atomic {
		/* shiftu_hs_timeout(): the count never comes, the peer's QP is
		 * given up (the only case the timeout is for) */
		state[me] == S_HANDSHAKE && state[1 - me] == S_DEAD ->
		k = rstart[me];
		go_dead();
		k = 0
	   }
	:: atomic {
		/* failback_step(): the primary is good again: ask the peer,
		 * not before its failover message is handled (taken after
		 * the failback, it would start a new failover: the model's
		 * first finding on failback, fixed; SEED_ASK_UNHEARD) */
		up && state[me] == S_FALLBACK && on_twin[me] && !fbst[me] && !granted[me] &&
		!backdue[me] && tries[me] < M_TRIES && (hs_got[me] || (opts & O_ASK_UNHEARD)) ->
		/* the peer's next failover, which a one-sided grant's
		 * reconnect may bring before we are back, is a new
		 * exchange: a control receive on our twin first, unless
		 * the application's receives are there (the failback is
		 * two-sided then) */
		if
		:: opts & O_ASKER_NO_CTRL
		:: else -> ctrl_rq[me] = ctrl_rq[me] || !twrx[me]
		fi;
		req[me] = 1;
		fbst[me] = 1;
		fbrep[me] = 0;
		tries[me]++
	   }
	:: atomic {
		/* its twin's error completions: the twins' path failed */
		tdown && !tdead[me] && state[me] == S_FALLBACK && on_twin[me] ->
		if
		:: opts & O_TWIN_ERRORS ->
			/* given to the application (SEED_TWIN_ERRORS) */
			q_fail(me);
			state[me] = S_DEAD
		:: else ->
			/* held; the failback asked for at once (twin_dead_step()) */
			tdead[me] = 1;
			tries[me] = 0
		fi
	   }
	:: atomic {
		/* failback_answer(): the peer's request, from the store */
		req[1 - me] -> answer()
	   }
	:: atomic {
		/* failback_req(), failback_step(): our request's answer */
		fbst[me] && fbrep[me] != 0 && state[me] == S_FALLBACK && !granted[me] ->
		got_answer()
	   }
	:: atomic {
		/* shiftu_take_back(), shiftu_switch_back(): going back (a poll
		 * of the application's, or a backer) */
		backdue[me] ->
		backdue[me] = 0;
		if
		:: state[me] == S_FALLBACK && on_twin[me] ->
			hs_sent[me] = 0;
			hs_got[me] = 0;
			move_back()
		:: else
		fi
	   }
	:: atomic {
		/* shiftu_release_drained(): a poll took the fence's completion */
		state[me] == S_WAIT_DRAINED && (ncomp[me] >= held[me] || (opts & O_NO_DRAIN)) ->
		release_held()
	   }
	od
}

/* Its ack: the request completes good (locals of nics). */
inline q_ack(q)
{
	it = QAT(q, tak[q]);
	if
	:: it < 7 -> comp_good(SND(q), it)
	:: else
	fi;
	QAT(q, tak[q]) = 0;
	tak[q]++;
	it = 0
}

/* The NIC of the peer of queue q's side executes its head (nics' locals). */
inline q_exec(q)
{
	it = HEAD(q);
	thd[q]++;
	if
	:: it >= 8 ->
		cwire[SND(q)]--;
		/* a control message: the QP's control receive takes it; a
		 * second would take one of the application's receives */
		if
		:: q < 2 ->
			assert(ctrl_rq[RCV(q)]);
			ctrl_rq[RCV(q)] = 0
		:: else ->
			assert(cdr[RCV(q)]);
			cdr[RCV(q)] = 0
		fi;
		inbox[RCV(q)]!cw[SND(q) * M_C + it - 8], ca[SND(q) * M_C + it - 8], q >= 2;
		cw[SND(q) * M_C + it - 8] = 0;
		ca[SND(q) * M_C + it - 8] = 0
	:: it < 8 && state[RCV(q)] == S_DEAD ->
		/* the peer gave its QP up: nothing there answers */
		comp_err(SND(q), it);
		QAT(q, thd[q] - 1) = 7
	:: it < 8 && state[RCV(q)] != S_DEAD ->
		execute(SND(q), it);
		/* a twin's ack can be lost only to a failback's drain: before
		 * the repair, the ack comes with the execution (a bound on the
		 * state space: a request executed before the repair and still
		 * unacked at the drain is one executed after it) */
		if
		:: !up -> q_ack(q)
		:: else
		fi
	fi;
	it = 0
}


/* a twin's queue stops when the twins' path fails (M_TD) */
#define QGO(q)	(thd[q] < ttl[q] && qup[q] && qup[(q) + 1 - 2 * ((q) % 2)] && READY(q) && \
		 ((q) >= 2 || !tdown))
#define QACK(q)	(tak[q] < thd[q] && qup[q] && qup[(q) + 1 - 2 * ((q) % 2)] && \
		 ((q) >= 2 || !tdown))
#define QFAIL(q)	(tak[q] < ttl[q] && qup[q] && !qup[(q) + 1 - 2 * ((q) % 2)] && \
			 state[RCV(q)] == S_DEAD)

/* the twins' path may fail (M_TD): both sides on their twins, the
 * exchanges over, the default path still down */
#define TD_SIDE(s)	(state[s] == S_FALLBACK && on_twin[s] && hs_got[s] && cwire[s] == 0 && \
			 len(inbox[s]) == 0 && !fbst[s] && !req[s] && fbrep[s] == 0 && \
			 !granted[s] && !backdue[s])
#define TD_CAN		(!tdown && !up && TD_SIDE(0) && TD_SIDE(1))

/* The NICs and the paths between them. */
proctype nics()
{
	byte k, j, i, it;

end:
	do
	:: atomic { !down -> down = 1 }
#if M_FB
	:: atomic { down && !up -> up = 1 }
#endif
#if M_TD
	:: atomic { TD_CAN -> tdown = 1 }
#endif
	:: atomic { !down && exec[0] < defhead[0] -> k = exec[0]; execute(0, k); exec[0]++; k = 0 }
	:: atomic { !down && exec[1] < defhead[1] -> k = exec[1]; execute(1, k); exec[1]++; k = 0 }
	:: atomic { !down && acked[0] < exec[0] -> comp_good(0, acked[0]); acked[0]++ }
	:: atomic { !down && acked[1] < exec[1] -> comp_good(1, acked[1]); acked[1]++ }
	:: atomic { QGO(0) -> q_exec(0) }
	:: atomic { QGO(1) -> q_exec(1) }
	:: atomic { QGO(2) -> q_exec(2) }
	:: atomic { QGO(3) -> q_exec(3) }
	:: atomic { QACK(0) -> q_ack(0) }
	:: atomic { QACK(1) -> q_ack(1) }
	:: atomic { QACK(2) -> q_ack(2) }
	:: atomic { QACK(3) -> q_ack(3) }
	:: atomic { QFAIL(0) -> q_fail(0) }
	:: atomic { QFAIL(1) -> q_fail(1) }
	:: atomic { QFAIL(2) -> q_fail(2) }
	:: atomic { QFAIL(3) -> q_fail(3) }
	od
}

/* what the quiescent system must be */
proctype check()
{
	byte s, k;

	timeout ->
	atomic {
		do
		:: s < 2 ->
			/* the handshake did not deadlock: no count waited for,
			 * no fence waits for a drained twin */
			assert(state[s] != S_HANDSHAKE);
			assert(state[s] != S_WAIT_DRAINED);
			assert(nxt[s] == slen[s]);
			k = 0;
			do
			:: k < slen[s] ->
				assert(comp[IDX(s, k)] != 0);
				/* none lost: without an atomic, all good */
				assert(gave_up || comp[IDX(s, k)] == 1);
				k++
			:: else -> break
			od;
			/* back on the default QP: nothing of it is left on its
			 * twin, and nothing on the way on its default QP */
			if
			:: state[s] == S_DEFAULT && qup[2 + s] ->
				k = tak[s];
				do
				:: k < ttl[s] -> assert(QAT(s, k) >= 7); k++
				:: else -> break
				od
			:: else
			fi;
			assert(gave_up || tak[2 + s] == ttl[2 + s]);
			/* no side waits for a failback's message */
			assert(gave_up || !expect[s]);
			s++
		:: else -> break
		od
	}
}

/* a script of 0 to n requests for side s, each of the four given */
inline script(s, n, o1, o2, o3, o4)
{
	k = 0;
	do
	:: k < n ->
		if
		:: op[IDX(s, k)] = o1
		:: op[IDX(s, k)] = o2
		:: op[IDX(s, k)] = o3
		:: op[IDX(s, k)] = o4
		fi;
		ntwo[s] = ntwo[s] + TWO(op[IDX(s, k)]);
		k++
	:: break
	od;
	slen[s] = k
}

init
{
	byte k, s;

	atomic {
		c_code { now.opts = model_opts(); };
		if
		:: start_i = 0
		:: start_i = 1
		:: start_i = 2
		:: start_i = 3
		fi;
		script(0, M_L0, OP_WRITE, OP_WIMM, OP_READ, OP_FADD);
		script(1, M_L1, OP_WRITE, OP_SEND, OP_READ, OP_FADD);
		do
		:: s < 2 ->
			rx_posted[s] = ntwo[1 - s] > 0;
			state[s] = S_DEFAULT;
			ctrl_rq[s] = 1;
			qup[s] = 1;
			s++
		:: else -> break
		od;
		k = 0;
		s = 0;
		run peer(0);
		run peer(1);
		run nics();
		run check()
	}
}
