// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_srqtab: the table of an SRQ whose QPs move one by one between two
 * sides (srqtab.h).  Ids name their entries and give the application's id
 * back once; a full table and an oversized scatter list are refused;
 * routing refills the side whose QPs consume.  Then a model of the two
 * SRQs (FIFOs, as a NIC hands receives out) and of QPs that consume, take
 * a receive for a message cut in the middle, move with it, and have one
 * posted again untouched, driven by a seeded random walk: every
 * application receive is delivered exactly once, none is ever on both
 * sides, a side without QPs holds nothing once it has been left, and the
 * table's counts match the FIFOs at every step.  The common path's
 * credits: never more receives on the default side than its SRQ holds,
 * none while shut, and every claim it made counted as a post.  Last,
 * threads entering receives (both ways) and taking them back at once, as
 * posts and completions do.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "srqtab.h"
#include "wrid.h"

#include "kselftest_harness.h"

static int put1(struct shiftu_srqtab *t, uint64_t app, enum shiftu_side side, uint64_t *id)
{
	struct ibv_sge sg = { .addr = 0x1000 + app, .length = 64, .lkey = 7 };
	struct ibv_recv_wr wr = { .wr_id = app, .sg_list = &sg, .num_sge = 1 };

	return shiftu_srqtab_put(t, &wr, side, id);
}

TEST(ids_name_their_entries)
{
	struct shiftu_srqtab t;
	struct ibv_recv_wr wr;
	struct ibv_sge sg[2];
	uint64_t id[4], extra[4], app;
	int i;

	ASSERT_EQ(0, shiftu_srqtab_init(&t, 3, 4, 2));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, put1(&t, 100 + i, SHIFTU_SIDE_DEFAULT, &id[i]));
		EXPECT_EQ(SHIFTU_WRID_SRQ, shiftu_wrid_kind(id[i]));
	}
	/* twice the SRQ's receives, then full */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, put1(&t, 200 + i, SHIFTU_SIDE_DEFAULT, &extra[i]));
	EXPECT_EQ(-ENOMEM, put1(&t, 300, SHIFTU_SIDE_DEFAULT, &app));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, shiftu_srqtab_take(&t, extra[i], &app));
	EXPECT_EQ(4, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	/* the work request to post one again: the library's id, the buffer */
	ASSERT_EQ(0, shiftu_srqtab_wr(&t, id[2], &wr, sg));
	EXPECT_EQ(id[2], wr.wr_id);
	EXPECT_EQ(1, wr.num_sge);
	EXPECT_EQ(0x1000 + 102, sg[0].addr);
	EXPECT_EQ(NULL, wr.next);
	ASSERT_EQ(0, shiftu_srqtab_take(&t, id[2], &app));
	EXPECT_EQ(102, app);
	/* once */
	EXPECT_EQ(-ENOENT, shiftu_srqtab_take(&t, id[2], &app));
	EXPECT_EQ(-ENOENT, shiftu_srqtab_move(&t, id[2], SHIFTU_SIDE_TWIN));
	EXPECT_EQ(-ENOENT, shiftu_srqtab_wr(&t, id[2], &wr, sg));
	EXPECT_EQ(NULL, shiftu_srqtab_find(&t, id[2]));
	/* not a table's id at all: the application's, another kind, out of range */
	EXPECT_EQ(-ENOENT, shiftu_srqtab_take(&t, 2, &app));
	EXPECT_EQ(-ENOENT, shiftu_srqtab_take(&t, SHIFTU_CTRL_RECV_ID, &app));
	EXPECT_EQ(-ENOENT, shiftu_srqtab_take(&t, SHIFTU_SRQ_ID(3, 9), &app));
	/* another table's */
	EXPECT_EQ(-ENOENT, shiftu_srqtab_take(&t, SHIFTU_SRQ_ID(4, 0), &app));
	EXPECT_EQ(3, shiftu_srq_id_table(id[0]));
	/* the cursor comes round to the freed entry: the others are posted */
	ASSERT_EQ(0, put1(&t, 300, SHIFTU_SIDE_TWIN, &app));
	EXPECT_EQ(id[2], app);
	EXPECT_EQ(3, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(1, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_TWIN));
	ASSERT_EQ(0, shiftu_srqtab_move(&t, id[0], SHIFTU_SIDE_TWIN));
	EXPECT_EQ(2, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(2, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_TWIN));
	EXPECT_EQ(SHIFTU_SIDE_TWIN, shiftu_srqent_side(shiftu_srqtab_find(&t, id[0])));
	EXPECT_EQ(1, shiftu_srqent_num_sge(shiftu_srqtab_find(&t, id[0])));
	shiftu_srqtab_fini(&t);
}

TEST(bad_tables_and_requests)
{
	struct shiftu_srqtab t;
	struct ibv_sge sg[3] = { 0 };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = sg, .num_sge = 3 };
	uint64_t id;

	EXPECT_EQ(-EINVAL, shiftu_srqtab_init(&t, 0, 0, 1));
	/* an id holds 16 bits of index, and the table is twice the SRQ */
	EXPECT_EQ(-EINVAL, shiftu_srqtab_init(&t, 0, SHIFTU_SRQTAB_MAX / 2 + 1, 1));
	EXPECT_EQ(-EINVAL, shiftu_srqtab_init(&t, SHIFTU_SRQ_TABLES, 8, 1));
	ASSERT_EQ(0, shiftu_srqtab_init(&t, SHIFTU_SRQ_TABLES - 1, SHIFTU_SRQTAB_MAX / 2, 1));
	/* more entries than the SRQ takes */
	EXPECT_EQ(-EINVAL, shiftu_srqtab_put(&t, &wr, SHIFTU_SIDE_DEFAULT, &id));
	wr.num_sge = -1;
	EXPECT_EQ(-EINVAL, shiftu_srqtab_put(&t, &wr, SHIFTU_SIDE_DEFAULT, &id));
	/* none: a receive of zero bytes */
	wr.num_sge = 0;
	ASSERT_EQ(0, shiftu_srqtab_put(&t, &wr, SHIFTU_SIDE_DEFAULT, &id));
	EXPECT_EQ(0, shiftu_srqent_num_sge(shiftu_srqtab_find(&t, id)));
	shiftu_srqtab_fini(&t);
}

TEST(routing)
{
	struct shiftu_srqtab t;
	uint64_t id;
	int i, twin = 0;

	ASSERT_EQ(0, shiftu_srqtab_init(&t, 0, 1024, 1));
	/* no QP yet: the default side, where QPs are created */
	EXPECT_EQ(SHIFTU_SIDE_DEFAULT, shiftu_srqtab_route(&t));
	for (i = 0; i < 16; i++)
		shiftu_srqtab_join(&t, SHIFTU_SIDE_DEFAULT);
	for (i = 0; i < 480; i++)
		ASSERT_EQ(0, put1(&t, i, shiftu_srqtab_route(&t), &id));
	EXPECT_EQ(480, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	/* one QP moves: the next receives are its, up to its share */
	EXPECT_FALSE(shiftu_srqtab_leave(&t, SHIFTU_SIDE_DEFAULT));
	shiftu_srqtab_join(&t, SHIFTU_SIDE_TWIN);
	for (i = 0; i < 32; i++) {
		EXPECT_EQ(SHIFTU_SIDE_TWIN, shiftu_srqtab_route(&t));
		ASSERT_EQ(0, put1(&t, 1000 + i, SHIFTU_SIDE_TWIN, &id));
	}
	/* 32 for one QP, 480 for 15: even (32 each), the default side next */
	EXPECT_EQ(SHIFTU_SIDE_DEFAULT, shiftu_srqtab_route(&t));
	/* from there on, in proportion: 1 of 16 to the twin side */
	for (i = 0; i < 320; i++) {
		enum shiftu_side s = shiftu_srqtab_route(&t);

		twin += s == SHIFTU_SIDE_TWIN;
		ASSERT_EQ(0, put1(&t, 2000 + i, s, &id));
	}
	EXPECT_EQ(20, twin);
	/* the last QP leaves the default side: the twin side only */
	for (i = 0; i < 14; i++)
		EXPECT_FALSE(shiftu_srqtab_leave(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_TRUE(shiftu_srqtab_leave(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(SHIFTU_SIDE_TWIN, shiftu_srqtab_route(&t));
	shiftu_srqtab_fini(&t);
}

/*
 * The common path (srqpost.c) claims an entry only with a credit of the
 * default side: with as many receives outstanding there as its SRQ holds,
 * or while shut, it gets none, so the provider's post it makes with no
 * way back cannot find the SRQ full.  Its entry is the header's bit alone
 * and names its own request; every claim it makes and does not skip is
 * one post on the default SRQ (shiftu_srqtab_fast_posts()).
 */
static struct shiftu_srqent *fast1(struct shiftu_srqtab *t, uint64_t app, uint64_t *id)
{
	struct shiftu_srqent *e;

	if (!shiftu_srqtab_credit(t)) {
		shiftu_srqtab_uncredit(t);
		return NULL;
	}
	if (!shiftu_srqtab_claim_fast(t, &e)) {
		shiftu_srqtab_skip(t, 1);
		shiftu_srqtab_uncredit(t);
		return NULL;
	}
	e->wr_id = app;
	e->sge[0] = (struct ibv_sge){ .addr = 0x1000 + app, .length = 64, .lkey = 7 };
	*id = e->wr.wr_id;
	return e;
}

TEST(common_path_credits)
{
	struct shiftu_srqtab t;
	struct ibv_recv_wr wr;
	struct ibv_sge sg[1];
	uint64_t id[4], app, slow;
	struct shiftu_srqent *e;
	int i;

	ASSERT_EQ(0, shiftu_srqtab_init(&t, 5, 4, 1));
	/* made shut */
	EXPECT_EQ(NULL, fast1(&t, 1, &id[0]));
	EXPECT_EQ(0, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	shiftu_srqtab_shut(&t, false);
	for (i = 0; i < 3; i++) {
		e = fast1(&t, 10 + i, &id[i]);
		ASSERT_NE(NULL, e);
		EXPECT_EQ(1, e->hdr);
		EXPECT_EQ(&e->wr, (struct ibv_recv_wr *)e);
		EXPECT_EQ(NULL, e->wr.next);
		EXPECT_EQ(&e->sge[0], e->wr.sg_list);
		EXPECT_EQ(1, e->wr.num_sge);
		EXPECT_EQ(SHIFTU_WRID_SRQ, shiftu_wrid_kind(id[i]));
		EXPECT_EQ(SHIFTU_SIDE_DEFAULT, shiftu_srqent_side(e));
		EXPECT_EQ(1, shiftu_srqent_num_sge(e));
	}
	/* one posted otherwise fills the SRQ: no credit left */
	ASSERT_EQ(0, put1(&t, 20, SHIFTU_SIDE_DEFAULT, &slow));
	EXPECT_EQ(4, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(NULL, fast1(&t, 21, &id[3]));
	EXPECT_EQ(4, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	/* one moved off makes room, one completed too */
	ASSERT_EQ(0, shiftu_srqtab_move(&t, slow, SHIFTU_SIDE_TWIN));
	EXPECT_EQ(1, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_TWIN));
	ASSERT_EQ(0, shiftu_srqtab_take(&t, id[1], &app));
	EXPECT_EQ(11, app);
	EXPECT_EQ(2, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	/* shut: the counts stay, the credits go */
	shiftu_srqtab_shut(&t, true);
	EXPECT_EQ(2, shiftu_srqtab_outstanding(&t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(NULL, fast1(&t, 22, &id[3]));
	shiftu_srqtab_shut(&t, false);
	ASSERT_NE(NULL, fast1(&t, 23, &id[3]));
	/* the posts it made: four claims, none skipped, put's not counted */
	EXPECT_EQ(4, shiftu_srqtab_fast_posts(&t));
	/* its entries post again as any other */
	ASSERT_EQ(0, shiftu_srqtab_wr(&t, id[3], &wr, sg));
	EXPECT_EQ(id[3], wr.wr_id);
	EXPECT_EQ(1, wr.num_sge);
	EXPECT_EQ(0x1000 + 23, sg[0].addr);
	shiftu_srqtab_fini(&t);
}

/*
 * The model.  Two SRQs as FIFOs of ids; QPs each on one side, with at
 * most one receive taken for a message in progress.
 */
#define QPS	6
#define SIZE	64
#define STEPS	200000

struct model {
	struct shiftu_srqtab t;
	uint64_t fifo[SHIFTU_SIDES][SIZE];
	unsigned int head[SHIFTU_SIDES], n[SHIFTU_SIDES];
	int side[QPS];
	uint64_t inflight[QPS];		/* an id, or 0 */
	uint64_t next_app;		/* the application's ids: 1, 2, ... */
	unsigned char *seen;		/* delivered */
	uint64_t delivered, ctrl, moved, emptied;
};

static void push(struct model *m, int s, uint64_t id)
{
	m->fifo[s][(m->head[s] + m->n[s]) % SIZE] = id;
	m->n[s]++;
}

static uint64_t pop(struct model *m, int s)
{
	uint64_t id = m->fifo[s][m->head[s]];

	m->head[s] = (m->head[s] + 1) % SIZE;
	m->n[s]--;
	return id;
}

/* A completion of @id handed on: the application's id, once. */
static int deliver(struct model *m, uint64_t id)
{
	uint64_t app;

	if (shiftu_srqtab_take(&m->t, id, &app))
		return -1;
	if (!app || app >= m->next_app || m->seen[app])
		return -1;
	m->seen[app] = 1;
	m->delivered++;
	return 0;
}

/* What the model holds against what the table counts; -1 if they differ. */
static int consistent(struct model *m)
{
	uint64_t held[SHIFTU_SIDES] = { m->n[0], m->n[1] };
	int s, q;

	for (q = 0; q < QPS; q++)
		if (m->inflight[q])
			held[m->side[q]]++;
	for (s = 0; s < SHIFTU_SIDES; s++) {
		unsigned int k, on = 0;

		if (held[s] != shiftu_srqtab_outstanding(&m->t, s))
			return -1;
		for (k = 0; k < m->n[s]; k++) {
			const struct shiftu_srqent *e =
				shiftu_srqtab_find(&m->t, m->fifo[s][(m->head[s] + k) % SIZE]);

			if (!e || shiftu_srqent_side(e) != s)
				return -1;
		}
		for (q = 0; q < QPS; q++)
			on += m->side[q] == s;
		if (on != m->t.members[s])
			return -1;
		/* a side left by its last QP holds nothing */
		if (!on && m->n[s] && m->t.members[!s])
			return -1;
	}
	return 0;
}

/*
 * QP @q moves to the other side: the receive its NIC took is flushed and
 * goes with it; if it was the side's last QP, the side's SRQ is inert and
 * what it holds follows, in its order.
 */
static int move_qp(struct model *m, int q)
{
	int from = m->side[q], to = !from;

	if (m->inflight[q]) {
		if (shiftu_srqtab_move(&m->t, m->inflight[q], to))
			return -1;
		push(m, to, m->inflight[q]);
		m->inflight[q] = 0;
	}
	m->side[q] = to;
	shiftu_srqtab_join(&m->t, to);
	if (shiftu_srqtab_leave(&m->t, from)) {
		m->emptied++;
		while (m->n[from]) {
			uint64_t id = pop(m, from);

			if (shiftu_srqtab_move(&m->t, id, to))
				return -1;
			push(m, to, id);
		}
	}
	m->moved++;
	return 0;
}

static int step(struct model *m)
{
	int q = rand() % QPS, s = m->side[q];
	uint64_t id;

	switch (rand() % 10) {
	case 0: case 1: case 2:
		/* the application posts, where the table says */
		s = shiftu_srqtab_route(&m->t);
		/* the SRQs hold SIZE at most, as the application's would */
		if (shiftu_srqtab_outstanding(&m->t, SHIFTU_SIDE_DEFAULT) +
		    shiftu_srqtab_outstanding(&m->t, SHIFTU_SIDE_TWIN) == SIZE)
			return 0;
		if (put1(&m->t, m->next_app, s, &id))
			return -1;
		m->next_app++;
		push(m, s, id);
		return 0;
	case 3: case 4:
		/* a whole message to @q */
		if (m->inflight[q]) {
			id = m->inflight[q];
			m->inflight[q] = 0;
			return deliver(m, id);
		}
		if (!m->n[s])
			return 0;	/* RNR: the peer retries */
		return deliver(m, pop(m, s));
	case 5:
		/* the first packets of a message: the NIC takes a receive */
		if (!m->inflight[q] && m->n[s])
			m->inflight[q] = pop(m, s);
		return 0;
	case 6:
		/* zero bytes into the next receive, which is posted again
		 * untouched on the same side (what a control message that
		 * took an application's receive would need) */
		if (m->inflight[q] || !m->n[s])
			return 0;
		id = pop(m, s);
		if (!shiftu_srqtab_find(&m->t, id) || shiftu_srqtab_move(&m->t, id, s))
			return -1;
		push(m, s, id);
		m->ctrl++;
		return 0;
	case 7:
		return rand() % 8 ? 0 : move_qp(m, q);
	default:
		return 0;
	}
}

TEST(model)
{
	struct model *m = calloc(1, sizeof(*m));
	int i, q;

	ASSERT_NE(NULL, m);
	m->seen = calloc(STEPS + 1, 1);
	ASSERT_NE(NULL, m->seen);
	srand(20261128);
	ASSERT_EQ(0, shiftu_srqtab_init(&m->t, 31, SIZE, 1));
	m->next_app = 1;
	for (q = 0; q < QPS; q++)
		shiftu_srqtab_join(&m->t, SHIFTU_SIDE_DEFAULT);
	for (i = 0; i < STEPS; i++) {
		ASSERT_EQ(0, step(m)) TH_LOG("step %d", i);
		ASSERT_EQ(0, consistent(m)) TH_LOG("step %d", i);
	}
	/* what is left is delivered: on each QP's side, then the rest */
	for (q = 0; q < QPS; q++)
		if (m->inflight[q])
			ASSERT_EQ(0, deliver(m, m->inflight[q]));
	for (i = 0; i < SHIFTU_SIDES; i++)
		while (m->n[i])
			ASSERT_EQ(0, deliver(m, pop(m, i)));
	EXPECT_EQ(m->next_app - 1, m->delivered);
	EXPECT_EQ(0, shiftu_srqtab_outstanding(&m->t, SHIFTU_SIDE_DEFAULT));
	EXPECT_EQ(0, shiftu_srqtab_outstanding(&m->t, SHIFTU_SIDE_TWIN));
	EXPECT_GT(m->moved, 1000);
	EXPECT_GT(m->emptied, 50);
	EXPECT_GT(m->ctrl, 1000);
	TH_LOG("%llu receives delivered once each, %llu moves (%llu sides emptied), %llu control messages",
	       (unsigned long long)m->delivered, (unsigned long long)m->moved,
	       (unsigned long long)m->emptied, (unsigned long long)m->ctrl);
	shiftu_srqtab_fini(&m->t);
	free(m->seen);
	free(m);
}

/*
 * Threads, as posts and completions run on the common path: each thread
 * enters a receive and puts its id on a shared pile, and takes back one
 * from the pile, most often another thread's (its poller), all on one
 * table of few entries, so that the cursor comes round every few claims
 * and claims meet entries still posted.  Every id must give back the
 * application's id it was entered with, once; half of them are entered as
 * the common path enters them (a credit, then a test-and-set), and each of
 * those is counted as its post.  (With the compare-and-swap of a claim
 * made a load and a store, this fails.)
 */
#define THREADS		4
#define PER_THREAD	100000
#define PILE		8

struct race {
	struct shiftu_srqtab t;
	pthread_mutex_t lock;		/* the pile's, not the table's */
	uint64_t id[PILE], app[PILE];
	unsigned int n, errors, full;
	uint64_t fast;			/* the common path's claims */
};

struct racer {
	struct race *r;
	unsigned int no;
};

/* Take one back from the pile, if it has any; count a wrong id. */
static void take_one(struct race *r, unsigned int pick)
{
	uint64_t id, want, app;

	pthread_mutex_lock(&r->lock);
	if (!r->n) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	pick %= r->n;
	id = r->id[pick];
	want = r->app[pick];
	r->n--;
	r->id[pick] = r->id[r->n];
	r->app[pick] = r->app[r->n];
	pthread_mutex_unlock(&r->lock);
	if (shiftu_srqtab_take(&r->t, id, &app) || app != want)
		__atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
}

static void *racer(void *arg)
{
	struct racer *me = arg;
	struct race *r = me->r;
	unsigned int i, seed = me->no;
	uint64_t id;

	for (i = 0; i < PER_THREAD; i++) {
		uint64_t app = (uint64_t)me->no << 32 | i;
		bool room;

		pthread_mutex_lock(&r->lock);
		room = r->n < PILE - THREADS;
		pthread_mutex_unlock(&r->lock);
		if (room && (i & 1)) {
			/* the common path: no credit is no room, not an error */
			if (fast1(&r->t, app, &id)) {
				__atomic_fetch_add(&r->fast, 1, __ATOMIC_RELAXED);
				pthread_mutex_lock(&r->lock);
				r->id[r->n] = id;
				r->app[r->n++] = app;
				pthread_mutex_unlock(&r->lock);
			}
		} else if (room) {
			if (put1(&r->t, app, SHIFTU_SIDE_DEFAULT, &id)) {
				__atomic_fetch_add(&r->full, 1, __ATOMIC_RELAXED);
			} else {
				/* the entry is filled before its id is handed on */
				pthread_mutex_lock(&r->lock);
				r->id[r->n] = id;
				r->app[r->n++] = app;
				pthread_mutex_unlock(&r->lock);
			}
		}
		take_one(r, (unsigned int)rand_r(&seed));
	}
	return NULL;
}

TEST(threads)
{
	struct race *r = calloc(1, sizeof(*r));
	struct racer who[THREADS];
	pthread_t th[THREADS];
	unsigned int i;

	ASSERT_NE(NULL, r);
	/* at most 8 posted (the pile), of 16 entries */
	ASSERT_EQ(0, shiftu_srqtab_init(&r->t, 1, PILE, 1));
	shiftu_srqtab_shut(&r->t, false);
	pthread_mutex_init(&r->lock, NULL);
	for (i = 0; i < THREADS; i++) {
		who[i] = (struct racer){ .r = r, .no = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, racer, &who[i]));
	}
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	while (r->n)
		take_one(r, 0);
	EXPECT_EQ(0, r->errors);
	EXPECT_EQ(0, r->full);
	EXPECT_EQ(0, shiftu_srqtab_outstanding(&r->t, SHIFTU_SIDE_DEFAULT));
	for (i = 0; i <= r->t.mask; i++)
		EXPECT_EQ(0, shiftu_srqtab_ent(&r->t, i)->hdr);
	EXPECT_GT(r->t.cursor / r->t.stride, THREADS * PER_THREAD / 2);
	EXPECT_GT(r->fast, THREADS * PER_THREAD / 8);
	/* every claim of the common path's is counted as its post */
	EXPECT_EQ(r->fast, shiftu_srqtab_fast_posts(&r->t));
	/* every credit back */
	EXPECT_EQ(r->t.cap[SHIFTU_SIDE_DEFAULT], r->t.room[SHIFTU_SIDE_DEFAULT]);
	TH_LOG("%u threads, %llu claims tried, %llu by the common path, %u wrong ids",
	       THREADS, (unsigned long long)(r->t.cursor / r->t.stride),
	       (unsigned long long)r->fast, r->errors);
	shiftu_srqtab_fini(&r->t);
	free(r);
}

TEST_HARNESS_MAIN
