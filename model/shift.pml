/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shift.pml: the two peers of one RC QP, their NICs and the failover
 * protocol (SHIFT section 4.3.2, Documentation/libshiftu.rst), for spin.
 *
 * How the model and the C stay one: the model decides nothing itself.
 * Every decision the library takes is the library's own code, called from
 * the verifier through c_code (model/glue.c, linked with userlib/proto.c):
 *   - what a move does with its outstanding sends: shiftu_plan_sends(),
 *     shiftu_plan_next(), and shiftu_plan_replays() for each of them;
 *   - the peer's count on the wire and back: shiftu_hs_count_put(),
 *     shiftu_hs_count_get() (serial.h), 31 bits;
 *   - what a control message calls for: shiftu_hs_decide().
 * glue.c checks at compile time that the codes the model branches on are
 * proto.h's.  What the model writes out by hand is what calls them: the
 * sequence of shiftu_failover()/move_locked(), shiftu_hs_message() and
 * replay_held() in failover.c (receives first, then the control message,
 * then replay or hold), and the world around them: the applications, the
 * NICs and the paths.  A change to proto.c is checked here as it is; a
 * change to the order of failover.c's steps must be made here too.
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
 *     so it is always there when a move asks.
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
 * selftests/host/spin_model.sh checks that it is caught.
 *
 * Not modelled: failing back (probe, fence, withheld doorbell), a second
 * failure, a rejoin, SRQs, the drain's mechanics, a peer process that
 * dies (only its library giving up, which the handshake's timeout covers).
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

c_decl {
	extern int model_wire(int start, int consumed);
	extern unsigned long long model_peer(int start, int wire, const unsigned char *ops,
					     int head);
	extern int model_plan(int start, const unsigned char *ops, int from, int head,
			      int known, unsigned long long peer);
	extern int model_hs_decide(int state, int on_twin, int ack, int busy);
}

/* the peer's count as shiftu_hs_message() read it, 64 bits (vq->hs_peer) */
c_state "unsigned long long hs_peer[2]" "Global"

byte start_i;			/* glue.c's starts[] */
byte op[2 * M_L];		/* side s's request k: op[s * M_L + k] */
byte slen[2];			/* the scripts' lengths */
bool rx_posted[2];		/* receives posted for the peer's notifications */

/* the library's record of each side (struct shiftu_vqp) */
byte nxt[2];			/* requests recorded: sq.head, as an offset */
byte state[2];			/* S_*: vq->state */
bool on_twin[2];
bool rx_twin[2];		/* its receives are on the twin */
bool hs_got[2], hs_sent[2];
byte rstart[2];			/* replay_start, while S_HANDSHAKE */
byte consumed[2];		/* notifications received */
bool portev[2];			/* the watcher saw the port down */
bool stayed[2];			/* answered the peer's failover and stayed */

/* the default path */
bool down;
byte defhead[2];		/* requests posted on the default QP */
byte exec[2];			/* of those, executed by the peer's NIC */
byte acked[2];			/* of those, completed good */

/* the twins: per direction, the requests k and control messages 8 + i in order */
byte tq[2 * M_Q];
byte thd[2], ttl[2];
int cw[4];			/* side s's control message i: wire count, answer */
bool ca[4];
byte nctl[2];
bool ctrl_rq[2];		/* the twin's control receive is there */
chan inbox[2] = [2] of { int, bool };	/* control messages received, for the watcher */

/* what the applications saw */
byte nexec[2 * M_L];		/* executions of side s's request k at the peer */
byte comp[2 * M_L];		/* its completion: 0 none yet, 1 good, 2 error */
byte hi[2];			/* side s's last notification delivered, + 1 */
bool gave_up;			/* a side gave its QP up for an atomic */

/* a decision, for the atomic step that asked for it (0 between steps) */
int plan;
byte act;

#define IDX(s, k)	((s) * M_L + (k))
#define TWO(o)		((o) == OP_WIMM || (o) == OP_SEND)
#define HEAD(s)		tq[(s) * M_Q + thd[s]]
/* the head of side s's twin queue can go: a notification needs a receive */
#define READY(s)	(HEAD(s) >= 8 || state[1 - (s)] == S_DEAD || \
			 !TWO(op[IDX(s, HEAD(s))]) || rx_twin[1 - (s)])

inline comp_good(s, k)
{
	assert(comp[IDX(s, k)] == 0);		/* one completion each */
	assert(nexec[IDX(s, k)] > 0);		/* good only if it executed */
	comp[IDX(s, k)] = 1
}

inline comp_err(s, k)
{
	assert(comp[IDX(s, k)] == 0);
	comp[IDX(s, k)] = 2
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

inline tq_put(s, item)
{
	assert(ttl[s] < M_Q);
	tq[(s) * M_Q + ttl[s]] = item;
	ttl[s]++
}

/* shiftu_ctrl_send(): our receive count, on the twin (locals of peer) */
inline send_ctrl(ack)
{
	assert(nctl[me] < 2);
	c_code { now.cw[Ppeer->me * 2 + now.nctl[Ppeer->me]] =
			model_wire(now.start_i, now.consumed[Ppeer->me]); };
	ca[me * 2 + nctl[me]] = ack;
	tq_put(me, 8 + nctl[me]);
	nctl[me]++;
	hs_sent[me] = 1
}

/* the plan for the sends [k, nxt) outstanding (move_locked(), replay()) */
inline do_plan()
{
	c_code { now.plan = model_plan(now.start_i, &now.op[Ppeer->me * M_L], Ppeer->k,
				       now.nxt[Ppeer->me], now.hs_got[Ppeer->me],
				       now.hs_peer[Ppeer->me]); }
}

/* go_dead(): the sends [k, nxt) complete flushed, the QP is given up */
inline go_dead()
{
	i = k;
	do
	:: i < nxt[me] -> comp_err(me, i); i++
	:: else -> break
	od;
	i = 0;
	state[me] = S_DEAD
}

/* replay(): the sends [k, nxt) go to the twin, but those the peer had */
inline replay()
{
	do_plan();
	/* a count beyond what we sent: the library gives up (EPROTO); only a
	 * broken count gets there */
	assert((plan & 8) == 0);
	i = k;
	do
	:: i < nxt[me] && (plan & (1 << (8 + i))) ->
		/* an atomic that was on the default QP is never replayed (one
		 * posted while held goes for the first time) */
		assert(op[IDX(me, i)] != OP_FADD || i >= defhead[me]);
		tq_put(me, i);
		i++
	:: i < nxt[me] && !(plan & (1 << (8 + i))) ->
		/* it executed at the peer: completes good, as the NIC would have */
		comp_good(me, i);
		i++
	:: else -> break
	od;
	i = 0;
	state[me] = S_FALLBACK
}

/*
 * move_locked(MOVE_OVER): drain the default QP (what completed good is
 * done, the rest is outstanding), give up on an atomic, else the receives
 * to the twin, the control message unless one went, and the replay now
 * or once the peer's count comes.
 */
inline move()
{
	k = acked[me];
	do_plan();
	if
	:: (plan & 3) == N_GIVE_UP ->
		assert(plan & 4);	/* an atomic; a bad count is no plan's */
		gave_up = 1;
		go_dead()
	:: else ->
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
	k = 0
}

/* shiftu_hs_message(): the peer's control message (count w, answer a) */
inline hs_message()
{
	c_code { now.act = model_hs_decide(now.state[Ppeer->me], now.on_twin[Ppeer->me],
					   Ppeer->a,
					   now.nxt[Ppeer->me] > 0 || now.rx_posted[Ppeer->me]); };
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
		:: act == A_ANSWER ->
			on_twin[me] = 1;
			send_ctrl(1);
			on_twin[me] = 0;
#ifdef SEED_STAY_SPEAKS
			/* the defect this model found (top) */
			hs_got[me] = 0;
			hs_sent[me] = 0;
#endif
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
			k = 0
		:: act == A_NOTE
		:: else ->
			/* a failback's or a reset's decision: no such message here */
			assert(false)
		fi
	fi;
	act = 0;
	w = 0;
	a = 0
}

/* One side: its application's posts and its library's threads. */
proctype peer(byte me)
{
	byte k, i;
	int w;
	bool a;

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
		if
		:: state[me] == S_DEAD -> comp_err(me, k)	/* a QP in error */
		:: state[me] == S_HANDSHAKE			/* held: the replay posts it */
		:: state[me] == S_FALLBACK -> tq_put(me, k)
		:: state[me] == S_DEFAULT -> defhead[me]++
		fi;
		k = 0
	   }
	:: atomic {
		/* an error completion: a request on the dead path */
		down && state[me] == S_DEFAULT && acked[me] < defhead[me] -> move()
	   }
	:: atomic {
		/* the watcher: the port's event, if this side's port went */
		down && state[me] == S_DEFAULT && !portev[me] ->
		portev[me] = 1;
		move()
	   }
	:: atomic {
		/* the watcher: a control message on the twin */
		inbox[me]?w, a -> hs_message()
	   }
	:: atomic {
		/* shiftu_hs_timeout(): the count never comes, the peer's QP is
		 * given up (the only case the timeout is for) */
		state[me] == S_HANDSHAKE && state[1 - me] == S_DEAD ->
		k = rstart[me];
		go_dead();
		k = 0
	   }
	od
}

/* The twin's NIC at the peer takes the head of side s's queue (nics' locals). */
inline twin_take(s)
{
	it = HEAD(s);
	HEAD(s) = 0;
	thd[s]++;
	if
	:: it >= 8 ->
		/* a control message: the twin's control receive takes it; a
		 * second would take one of the application's receives */
		assert(ctrl_rq[1 - s]);
		ctrl_rq[1 - s] = 0;
		inbox[1 - s]!cw[s * 2 + it - 8], ca[s * 2 + it - 8]
	:: it < 8 && state[1 - s] == S_DEAD ->
		/* the peer gave its QP up: nothing there answers */
		comp_err(s, it)
	:: it < 8 && state[1 - s] != S_DEAD ->
		execute(s, it);
		comp_good(s, it)
	fi;
	it = 0
}

/* The NICs and the paths between them. */
proctype nics()
{
	byte k, j, it;

end:
	do
	:: atomic { !down -> down = 1 }
	:: atomic { !down && exec[0] < defhead[0] -> k = exec[0]; execute(0, k); exec[0]++; k = 0 }
	:: atomic { !down && exec[1] < defhead[1] -> k = exec[1]; execute(1, k); exec[1]++; k = 0 }
	:: atomic { !down && acked[0] < exec[0] -> comp_good(0, acked[0]); acked[0]++ }
	:: atomic { !down && acked[1] < exec[1] -> comp_good(1, acked[1]); acked[1]++ }
	:: atomic { thd[0] < ttl[0] && READY(0) -> twin_take(0) }
	:: atomic { thd[1] < ttl[1] && READY(1) -> twin_take(1) }
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
			/* the handshake did not deadlock: no count waited for */
			assert(state[s] != S_HANDSHAKE);
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
		k++
	:: break
	od;
	slen[s] = k
}

init
{
	byte k, s;

	atomic {
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
			k = 0;
			do
			:: k < slen[1 - s] -> rx_posted[s] = rx_posted[s] || TWO(op[IDX(1 - s, k)]); k++
			:: else -> break
			od;
			state[s] = S_DEFAULT;
			ctrl_rq[s] = 1;
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
