// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_wridtab: the application's ids in the library's range, renamed and
 * given back (wridtab.h, rename.h).  The classifier tells every id the
 * library posts for what it is and nothing else; a renamed id is never one
 * of the library's own, and an application's id once renamed gets back
 * exactly itself, once.  A quiet send's good completion is the library's,
 * its failed one the application's; a refused post frees its slots; slots
 * are reused and a stale id is refused; a full table refuses the next
 * claim and takes claims again once a slot is free, and unsignaled sends
 * never leak a slot whatever their completions.  Then the post side's
 * rename and put back on a chain (the ids and flags the application gave,
 * after a refusal part way too) and the poll side's pass, each completion
 * classified once, with SRQ-looking ids among the application's.  Last,
 * the library's own data verbs on a fake QP and CQ: the provider sees only
 * renamed ids for ids in the range, on the common post path too, and the
 * application gets its own back from the poll, a quiet send's not at all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "interpose.h"
#include "log.h"
#include "posters.h"
#include "qp.h"
#include "rename.h"
#include "window.h"
#include "wrid.h"
#include "wridtab.h"

#include "kselftest_harness.h"

/* the library's tables share its wrid_lock; these theirs */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ids an application may use that start with "SHIFT": each of the library's */
static const uint64_t ranged[] = {
	MARKER_WR_ID, RMARKER_WR_ID, PROBE_WR_ID, SHIFTU_CTRL_SEND_ID, SHIFTU_CTRL_RECV_ID,
	SHIFTU_CTRL_DEF_ID(0), SHIFTU_CTRL_DEF_ID(0xffff), SHIFTU_BELL_ID,
	SHIFTU_SRQ_ID(0, 0), SHIFTU_SRQ_ID(31, 0xffff), SHIFTU_RENAMED_ID(0, 0),
	SHIFTU_RENAMED_ID(0x3ff, 0xfff), 0x5348494654000000ULL, 0x5348494654ffffffULL,
};

TEST(classifier)
{
	static const uint64_t app[] = {
		0, 1, 0x54440002, 0xffffffffULL, 0x00007f0012345678ULL, 0xffffffffffffffffULL,
		0x5348494600000000ULL, 0x5348494655000000ULL, 0x53ffffffffffffffULL,
	};
	struct ibv_wc wc = { 0 };
	unsigned int i, g, k;

	/* the renamed range is no other kind's, at every slot and generation */
	for (g = 0; g < 0x400; g++)
		for (k = 0; k < 0x1000; k += 0x3f) {
			uint64_t id = SHIFTU_RENAMED_ID(g, k);

			ASSERT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(id));
			EXPECT_EQ(k, shiftu_renamed_slot(id));
			EXPECT_EQ(g, shiftu_renamed_gen(id));
			EXPECT_TRUE(shiftu_wrid_app(id));
		}
	EXPECT_EQ(SHIFTU_WRID_MARKER, shiftu_wrid_kind(MARKER_WR_ID));
	EXPECT_EQ(SHIFTU_WRID_SRQ, shiftu_wrid_kind(SHIFTU_SRQ_ID(5, 7)));
	EXPECT_FALSE(shiftu_wrid_app(MARKER_WR_ID));
	EXPECT_FALSE(shiftu_wrid_app(SHIFTU_SRQ_ID(5, 7)));
	for (i = 0; i < SHIFTU_ARRAY_SIZE(app); i++) {
		EXPECT_EQ(SHIFTU_WRID_APP, shiftu_wrid_kind(app[i]));
		EXPECT_FALSE(shiftu_wrid_ranged(app[i]));
	}
	/* every id of the range is seen by the common paths' one-byte test */
	for (i = 0; i < SHIFTU_ARRAY_SIZE(ranged); i++) {
		EXPECT_TRUE(shiftu_wrid_ranged(ranged[i]));
		EXPECT_TRUE(shiftu_wrid_maybe(ranged[i]));
	}
	/* pointers and indices never are */
	EXPECT_FALSE(shiftu_wrid_maybe(0x00007f0012345678ULL));
	EXPECT_FALSE(shiftu_wrid_maybe(12345));
	EXPECT_TRUE(shiftu_wrid_maybe(0x53ffffffffffffffULL));
	/* the application's, renamed: a completion of it is not the library's */
	wc.wr_id = SHIFTU_RENAMED_ID(3, 9);
	EXPECT_FALSE(shiftu_wc_ours(&wc));
	wc.wr_id = MARKER_WR_ID;
	EXPECT_TRUE(shiftu_wc_ours(&wc));
}

TEST(give_back_once)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	uint64_t id[SHIFTU_ARRAY_SIZE(ranged)], app;
	unsigned int i, j;
	bool last;

	ASSERT_NE(NULL, t);
	shiftu_wridtab_init(t, &lock);
	for (i = 0; i < SHIFTU_ARRAY_SIZE(ranged); i++) {
		ASSERT_EQ(i == 0, shiftu_wridtab_claim(t, ranged[i], false, &id[i]));
		EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(id[i]));
		for (j = 0; j < i; j++)
			EXPECT_NE(id[j], id[i]);
	}
	EXPECT_EQ(SHIFTU_ARRAY_SIZE(ranged), shiftu_wridtab_used(t));
	/* good or not, a request the application signaled is its own */
	for (i = 0; i < SHIFTU_ARRAY_SIZE(ranged); i++) {
		ASSERT_EQ(1, shiftu_wridtab_take(t, id[i], i & 1, &app, &last));
		EXPECT_EQ(ranged[i], app);
		EXPECT_EQ(i == SHIFTU_ARRAY_SIZE(ranged) - 1, last);
		/* once: the same id again names nothing */
		EXPECT_EQ(-ENOENT, shiftu_wridtab_take(t, id[i], true, &app, &last));
		EXPECT_FALSE(last);
	}
	EXPECT_EQ(0U, shiftu_wridtab_used(t));
	EXPECT_EQ(SHIFTU_ARRAY_SIZE(ranged), t->renamed);
	/* ids the table never gave */
	EXPECT_EQ(-ENOENT, shiftu_wridtab_take(t, MARKER_WR_ID, true, &app, &last));
	EXPECT_EQ(-ENOENT, shiftu_wridtab_take(t, 42, true, &app, &last));
	free(t);
}

TEST(quiet_sends)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	uint64_t a, b, app;
	bool last;

	ASSERT_NE(NULL, t);
	shiftu_wridtab_init(t, &lock);
	/* an unsignaled send that succeeds: its completion is the library's */
	ASSERT_LE(0, shiftu_wridtab_claim(t, MARKER_WR_ID, true, &a));
	EXPECT_EQ(0, shiftu_wridtab_take(t, a, true, &app, &last));
	EXPECT_TRUE(last);
	/* one that fails (flushed): the application hears of it, as without us */
	ASSERT_LE(0, shiftu_wridtab_claim(t, PROBE_WR_ID, true, &b));
	EXPECT_EQ(1, shiftu_wridtab_take(t, b, false, &app, &last));
	EXPECT_EQ(PROBE_WR_ID, app);
	EXPECT_EQ(0U, shiftu_wridtab_used(t));
	free(t);
}

TEST(reuse_and_stale)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	uint64_t first, id, app;
	unsigned int i;
	bool last;

	ASSERT_NE(NULL, t);
	shiftu_wridtab_init(t, &lock);
	ASSERT_LE(0, shiftu_wridtab_claim(t, 1 | 0x5348494654000000ULL, false, &first));
	ASSERT_EQ(1, shiftu_wridtab_take(t, first, true, &app, &last));
	/* the cursor moves on: the slot comes back after the others, under
	 * another generation, and the old id stays stale */
	for (i = 1; i <= SHIFTU_WRIDTAB_SLOTS; i++) {
		ASSERT_LE(0, shiftu_wridtab_claim(t, i, false, &id));
		if (shiftu_renamed_slot(id) == shiftu_renamed_slot(first)) {
			EXPECT_EQ(SHIFTU_WRIDTAB_SLOTS, i);
			EXPECT_NE(first, id);
			EXPECT_EQ(-ENOENT, shiftu_wridtab_take(t, first, true, &app, &last));
		}
		ASSERT_EQ(1, shiftu_wridtab_take(t, id, true, &app, &last));
		EXPECT_EQ(i, app);
		EXPECT_TRUE(last);
	}
	/* a post the provider refused gives its slot back, and nothing more */
	ASSERT_EQ(1, shiftu_wridtab_claim(t, 7, false, &id));
	EXPECT_TRUE(shiftu_wridtab_unclaim(t, id));
	EXPECT_FALSE(shiftu_wridtab_unclaim(t, id));
	EXPECT_EQ(-ENOENT, shiftu_wridtab_take(t, id, true, &app, &last));
	EXPECT_EQ(0U, shiftu_wridtab_used(t));
	free(t);
}

TEST(full_table)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	uint64_t *ids = calloc(SHIFTU_WRIDTAB_SLOTS, sizeof(*ids)), id, app;
	unsigned int i;
	bool last;

	ASSERT_NE(NULL, t);
	ASSERT_NE(NULL, ids);
	shiftu_wridtab_init(t, &lock);
	for (i = 0; i < SHIFTU_WRIDTAB_SLOTS; i++)
		ASSERT_LE(0, shiftu_wridtab_claim(t, 0x5348494654000000ULL | i, i & 1, &ids[i]));
	/* full: refused, nothing taken */
	EXPECT_EQ(-ENOMEM, shiftu_wridtab_claim(t, 99, false, &id));
	EXPECT_EQ(SHIFTU_WRIDTAB_SLOTS, shiftu_wridtab_used(t));
	/* one completes: its slot, and only it, takes the next claim */
	ASSERT_EQ(0, shiftu_wridtab_take(t, ids[1001], true, &app, &last));
	ASSERT_EQ(0, shiftu_wridtab_claim(t, 99, false, &id));
	EXPECT_EQ(1001U, shiftu_renamed_slot(id));
	EXPECT_EQ(-ENOMEM, shiftu_wridtab_claim(t, 100, false, &id));
	free(ids);
	free(t);
}

/*
 * Unsignaled sends, posted signaled: whatever mix of good and flushed
 * completions comes back (every request completes once, as the NIC
 * completes a signaled one), no slot is left taken.
 */
TEST(unsignaled_no_leak)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	uint64_t out[64], app;
	unsigned int round, i, n, seen = 0;
	bool last;

	ASSERT_NE(NULL, t);
	shiftu_wridtab_init(t, &lock);
	srand(7);
	for (round = 0; round < 2000; round++) {
		n = 1 + rand() % 64;
		for (i = 0; i < n; i++)
			ASSERT_LE(0, shiftu_wridtab_claim(t, MARKER_WR_ID + i, rand() & 1,
							  &out[i]));
		for (i = 0; i < n; i++) {
			int r = shiftu_wridtab_take(t, out[i], rand() % 4 != 0, &app, &last);

			ASSERT_LE(0, r);
			seen += r;
			if (r)
				EXPECT_EQ(MARKER_WR_ID + i, app);
		}
		ASSERT_EQ(0U, shiftu_wridtab_used(t));
	}
	EXPECT_GT(seen, 0U);
	free(t);
}

/* Threads claiming and taking at once, as posts and polls do. */
struct mt_arg {
	struct shiftu_wridtab *t;
	unsigned int no;
	unsigned int bad;
};

static void *mt_run(void *p)
{
	struct mt_arg *a = p;
	uint64_t id[16], app;
	unsigned int r, i;
	bool last;

	for (r = 0; r < 20000; r++) {
		for (i = 0; i < 16; i++)
			if (shiftu_wridtab_claim(a->t, (uint64_t)a->no << 32 | r << 4 | i, false,
						 &id[i]) < 0)
				a->bad++;
		for (i = 0; i < 16; i++)
			if (shiftu_wridtab_take(a->t, id[i], true, &app, &last) != 1 ||
			    app != ((uint64_t)a->no << 32 | r << 4 | i))
				a->bad++;
	}
	return NULL;
}

TEST(threads)
{
	struct shiftu_wridtab *t = malloc(sizeof(*t));
	struct mt_arg a[4];
	pthread_t th[4];
	unsigned int i;

	ASSERT_NE(NULL, t);
	shiftu_wridtab_init(t, &lock);
	for (i = 0; i < 4; i++) {
		a[i] = (struct mt_arg){ .t = t, .no = i + 1 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, mt_run, &a[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0U, a[i].bad);
	}
	EXPECT_EQ(0U, shiftu_wridtab_used(t));
	free(t);
}

/*
 * The post side on a chain: only the ids in the range are renamed, an
 * unsignaled one goes signaled, and after the post each request has what
 * the application gave; a refusal part way frees the refused requests'
 * slots only.  Then the poll side: completions of the posted ids come back
 * with the application's, a quiet good one is taken out, and an
 * application id that looks like an SRQ table's or a renamed one (given
 * back) is not looked at again.
 */
TEST(chain_and_poll)
{
	struct shiftu_ctx *s = calloc(1, sizeof(*s));
	struct ibv_send_wr w[4], *bad = NULL;
	struct shiftu_wrid_saved sv;
	struct shiftu_wridtab *t;
	struct shiftu_wrids *r;
	uint64_t posted[4], id, app;
	bool last;
	struct ibv_wc wc[4];
	unsigned int i;
	int n;

	ASSERT_NE(NULL, s);
	shiftu_log_setup(SHIFTU_LOG_ERROR, NULL);
	memset(w, 0, sizeof(w));
	w[0].wr_id = 5;
	w[1].wr_id = SHIFTU_SRQ_ID(1, 2);		/* unsignaled */
	w[2].wr_id = SHIFTU_RENAMED_ID(1, 1);
	w[2].send_flags = IBV_SEND_SIGNALED;
	w[3].wr_id = MARKER_WR_ID;			/* unsignaled */
	for (i = 0; i < 3; i++)
		w[i].next = &w[i + 1];
	r = shiftu_wrids_get(&s->wrids, &s->slow_cqs, "dev");
	ASSERT_NE(NULL, r);
	EXPECT_EQ(r, shiftu_wrids_get(&s->wrids, &s->slow_cqs, "dev"));
	t = &r->tab;
	ASSERT_EQ(0, shiftu_wrid_send_in(r, w, false, &sv, &bad));
	EXPECT_EQ(3U, sv.n);
	/* the hold's first renames wait for the polls in flight */
	EXPECT_EQ(1U, sv.wait_gen);
	EXPECT_EQ(5U, w[0].wr_id);
	for (i = 1; i < 4; i++) {
		EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(w[i].wr_id));
		EXPECT_TRUE(w[i].send_flags & IBV_SEND_SIGNALED);
		posted[i] = w[i].wr_id;
	}
	/* the context's polls are held slow from the first rename on */
	EXPECT_EQ(1U, s->slow_cqs);
	/* the provider took the first three and refused the last */
	shiftu_wrid_send_out(r, w, &w[3], &sv);
	EXPECT_EQ(5U, w[0].wr_id);
	EXPECT_EQ(SHIFTU_SRQ_ID(1, 2), w[1].wr_id);
	EXPECT_EQ(0, w[1].send_flags);
	EXPECT_EQ(SHIFTU_RENAMED_ID(1, 1), w[2].wr_id);
	EXPECT_EQ(IBV_SEND_SIGNALED, w[2].send_flags);
	EXPECT_EQ(MARKER_WR_ID, w[3].wr_id);
	EXPECT_EQ(0, w[3].send_flags);
	EXPECT_EQ(2U, shiftu_wridtab_used(t));

	/* the quiet one succeeds (the library's), the other one too */
	memset(wc, 0, sizeof(wc));
	wc[0].wr_id = 5;
	wc[1].wr_id = posted[1];
	wc[2].wr_id = posted[2];
	wc[3].wr_id = 6;
	n = shiftu_wrid_out_all(s, wc, 4);
	ASSERT_EQ(3, n);
	EXPECT_EQ(5U, wc[0].wr_id);
	/* the application's own id, which looks renamed: given back, not again */
	EXPECT_EQ(SHIFTU_RENAMED_ID(1, 1), wc[1].wr_id);
	EXPECT_EQ(6U, wc[2].wr_id);
	EXPECT_EQ(0U, shiftu_wridtab_used(t));
	/* held until the table has been empty for a second */
	EXPECT_EQ(1U, s->slow_cqs);
	shiftu_wrid_armed(r, 1);
	ASSERT_EQ(1, shiftu_wridtab_claim(t, 9, false, &id));
	EXPECT_TRUE(shiftu_wridtab_unclaim(t, id));
	/* the poll's pass above found it empty: a second from then */
	shiftu_wrid_hold_end(r);
	EXPECT_EQ(1U, s->slow_cqs);
	usleep(1100 * 1000);
	shiftu_wrid_hold_end(r);
	EXPECT_EQ(0U, s->slow_cqs);
	/* the next rename holds again, and waits again */
	w[0].wr_id = PROBE_WR_ID;
	w[0].next = NULL;
	ASSERT_EQ(0, shiftu_wrid_send_in(r, w, false, &sv, &bad));
	EXPECT_EQ(2U, sv.wait_gen);
	EXPECT_EQ(1U, s->slow_cqs);
	shiftu_wrid_send_out(r, w, w, &sv);
	EXPECT_EQ(PROBE_WR_ID, w[0].wr_id);
	EXPECT_EQ(0U, shiftu_wridtab_used(t));

	/* the table full: the post fails whole with ENOMEM, nothing renamed */
	while (shiftu_wridtab_claim(t, 1, false, &id) >= 0)
		;
	w[0].wr_id = SHIFTU_BELL_ID;
	w[0].next = &w[1];
	w[1].wr_id = MARKER_WR_ID;
	w[1].next = NULL;
	bad = NULL;
	EXPECT_EQ(ENOMEM, shiftu_wrid_send_in(r, w, false, &sv, &bad));
	EXPECT_EQ(&w[0], bad);
	EXPECT_EQ(SHIFTU_BELL_ID, w[0].wr_id);
	EXPECT_EQ(0, w[0].send_flags);
	EXPECT_EQ(MARKER_WR_ID, w[1].wr_id);
	/* one slot free: the first is renamed, the second finds none, and
	 * the first gets its id and its slot back */
	ASSERT_EQ(1, shiftu_wridtab_take(t, SHIFTU_RENAMED_ID(0, 100), true, &app, &last));
	EXPECT_EQ(ENOMEM, shiftu_wrid_send_in(r, w, false, &sv, &bad));
	EXPECT_EQ(&w[0], bad);	/* none of the chain is posted */
	EXPECT_EQ(SHIFTU_BELL_ID, w[0].wr_id);
	EXPECT_EQ(0, w[0].send_flags);
	EXPECT_EQ(SHIFTU_WRIDTAB_SLOTS - 1, shiftu_wridtab_used(t));
}

/* Receives: never quiet; a chain longer than the saved ids' inline room. */
TEST(recv_chain)
{
	struct shiftu_ctx *s = calloc(1, sizeof(*s));
	struct ibv_recv_wr w[40], *bad = NULL;
	struct shiftu_wrid_saved sv;
	struct shiftu_wrids *r;
	struct ibv_wc wc[40];
	unsigned int i;

	ASSERT_NE(NULL, s);
	shiftu_log_setup(SHIFTU_LOG_ERROR, NULL);
	r = shiftu_wrids_get(&s->wrids, &s->slow_cqs, "dev");
	ASSERT_NE(NULL, r);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 40; i++) {
		w[i].wr_id = SHIFTU_CTRL_DEF_ID(i);
		w[i].next = i < 39 ? &w[i + 1] : NULL;
	}
	ASSERT_EQ(0, shiftu_wrid_recv_in(r, w, &sv, &bad));
	memset(wc, 0, sizeof(wc));
	for (i = 0; i < 40; i++) {
		ASSERT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(w[i].wr_id));
		wc[i].wr_id = w[i].wr_id;
		wc[i].opcode = IBV_WC_RECV;
	}
	shiftu_wrid_recv_out(r, w, NULL, &sv);
	for (i = 0; i < 40; i++)
		EXPECT_EQ(SHIFTU_CTRL_DEF_ID(i), w[i].wr_id);
	ASSERT_EQ(40, shiftu_wrid_out_all(s, wc, 40));
	for (i = 0; i < 40; i++)
		EXPECT_EQ(SHIFTU_CTRL_DEF_ID(i), wc[i].wr_id);
}

/*
 * The library's own ibv_post_send, ibv_post_recv and ibv_poll_cq
 * (post.c, poll.c) on a fake QP and CQ: the provider sees a renamed id where
 * the application gave one in the range, and the request signaled where
 * it was not; the application's work request has its id and flags back
 * when the post returns; its id comes back once through the poll (the
 * context's polls held slow meanwhile), and the good completion of a
 * quiet send does not come at all.  Ids outside the range reach the
 * provider and come back untouched, on the common paths.
 */
static uint64_t seen_id[16], seen_flags[16];
static unsigned int seen_n;
static struct ibv_wc cq_wc[16];
static int cq_n;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp, (void)bad;
	for (; wr && seen_n < 16; wr = wr->next) {
		seen_id[seen_n] = wr->wr_id;
		seen_flags[seen_n++] = wr->send_flags;
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp, (void)bad;
	for (; wr && seen_n < 16; wr = wr->next)
		seen_id[seen_n++] = wr->wr_id;
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = cq_n < num ? cq_n : num;

	(void)cq;
	memcpy(wc, cq_wc, n * sizeof(*wc));
	memmove(cq_wc, cq_wc + n, (cq_n - n) * sizeof(*wc));
	cq_n -= n;
	return n;
}

static struct ibv_context dp_ctx = {
	.ops = { .post_send = shiftu_post_send, .post_recv = shiftu_post_recv,
		 .poll_cq = shiftu_poll_cq },
};
static struct ibv_qp dp_qp = { .context = &dp_ctx, .qp_num = 0x77 };
static struct ibv_cq dp_cq = { .context = &dp_ctx };
static struct shiftu_ctx dp_sctx = { .ctx = &dp_ctx, .dev_name = "rxe0",
				     .poll_cq = fake_poll_cq };

/* the NIC completes what was posted, good, in order */
static void complete_all(enum ibv_wc_opcode op)
{
	unsigned int i;

	for (i = 0; i < seen_n; i++)
		cq_wc[cq_n++] = (struct ibv_wc){ .wr_id = seen_id[i], .opcode = op,
						 .qp_num = dp_qp.qp_num };
	seen_n = 0;
}

TEST(data_path)
{
	struct shiftu_vqp *v = calloc(1, sizeof(*v));
	struct ibv_send_wr w[2], *bad;
	struct ibv_recv_wr r, *rbad;
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, v);
	shiftu_log_setup(SHIFTU_LOG_ERROR, NULL);
	pthread_mutex_init(&v->fo_lock, NULL);
	pthread_mutex_init(&v->lock, NULL);
	v->sctx = &dp_sctx;
	v->reg.app_qp = &dp_qp;
	v->post_send = fake_post_send;
	v->post_recv = fake_post_recv;
	v->state = SHIFTU_SEND_DEFAULT;
	v->poster = v->poster_r = SHIFTU_POSTER_NONE;
	/* unprotected (SHIFTU_RINGS_NONE), its posts on the common path once
	 * the thread is each queue's poster */
	ASSERT_EQ(0, shiftu_qp_register(&v->reg));
	shiftu_ctx_list = &dp_sctx;

	/* outside the range: as it came, both ways */
	memset(w, 0, sizeof(w));
	w[0].wr_id = 0x7f0012345678ULL;
	w[0].opcode = IBV_WR_RDMA_WRITE;
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	ASSERT_EQ(1U, seen_n);
	EXPECT_EQ(0x7f0012345678ULL, seen_id[0]);
	complete_all(IBV_WC_RDMA_WRITE);
	ASSERT_EQ(1, ibv_poll_cq(&dp_cq, 8, wc));
	EXPECT_EQ(0x7f0012345678ULL, wc[0].wr_id);
	/* 'S' first, not "SHIFT": past the test, but not renamed, and the
	 * context gets no table for it */
	w[0].wr_id = 0x5348494655000000ULL;
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	EXPECT_EQ(0x5348494655000000ULL, seen_id[0]);
	seen_n = 0;
	EXPECT_EQ(NULL, dp_sctx.wrids);

	/* a control message's id, unsignaled, then a marker's, signaled */
	w[0].wr_id = SHIFTU_CTRL_SEND_ID;
	w[0].next = &w[1];
	w[1].wr_id = MARKER_WR_ID;
	w[1].opcode = IBV_WR_RDMA_WRITE;
	w[1].send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	ASSERT_EQ(2U, seen_n);
	EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(seen_id[0]));
	EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(seen_id[1]));
	EXPECT_TRUE(seen_flags[0] & IBV_SEND_SIGNALED);
	EXPECT_EQ(SHIFTU_CTRL_SEND_ID, w[0].wr_id);
	EXPECT_EQ(0, w[0].send_flags);
	EXPECT_EQ(MARKER_WR_ID, w[1].wr_id);
	EXPECT_EQ(IBV_SEND_SIGNALED, w[1].send_flags);
	EXPECT_NE(0U, dp_sctx.slow_cqs);
	/* and a receive with a bell's id */
	memset(&r, 0, sizeof(r));
	r.wr_id = SHIFTU_BELL_ID;
	ASSERT_EQ(0, ibv_post_recv(&dp_qp, &r, &rbad));
	EXPECT_EQ(SHIFTU_BELL_ID, r.wr_id);
	EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(seen_id[2]));
	EXPECT_EQ(3U, shiftu_wridtab_used(&dp_sctx.wrids->tab));

	/* the unsignaled send's good completion is the library's */
	complete_all(IBV_WC_RDMA_WRITE);
	cq_wc[2].opcode = IBV_WC_RECV;
	ASSERT_EQ(2, ibv_poll_cq(&dp_cq, 8, wc));
	EXPECT_EQ(MARKER_WR_ID, wc[0].wr_id);
	EXPECT_EQ(SHIFTU_BELL_ID, wc[1].wr_id);
	EXPECT_EQ(0U, shiftu_wridtab_used(&dp_sctx.wrids->tab));
	EXPECT_EQ(0, ibv_poll_cq(&dp_cq, 8, wc));
	EXPECT_EQ(3U, shiftu_wrid_renamed());

	/* one request, the thread the queue's poster: the common path's
	 * test sends it to the rename all the same */
	ASSERT_EQ(v->poster, (uint16_t)(shiftu_window.tag >> SHIFTU_POSTER_SHIFT));
	w[0].wr_id = SHIFTU_SRQ_ID(3, 4);
	w[0].next = NULL;
	w[0].send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	ASSERT_EQ(1U, seen_n);
	EXPECT_EQ(SHIFTU_WRID_RENAMED, shiftu_wrid_kind(seen_id[0]));
	EXPECT_EQ(SHIFTU_SRQ_ID(3, 4), w[0].wr_id);
	complete_all(IBV_WC_RDMA_WRITE);
	ASSERT_EQ(1, ibv_poll_cq(&dp_cq, 8, wc));
	EXPECT_EQ(SHIFTU_SRQ_ID(3, 4), wc[0].wr_id);
	/* and one outside the range, on the common path */
	w[0].wr_id = 0x5300000000000001ULL;	/* 'S', not "SHIFT" */
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	EXPECT_EQ(0x5300000000000001ULL, seen_id[0]);
	w[0].wr_id = 9;
	seen_n = 0;
	ASSERT_EQ(0, ibv_post_send(&dp_qp, w, &bad));
	EXPECT_EQ(9U, seen_id[0]);
	EXPECT_EQ(4U, shiftu_wrid_renamed());
}

TEST_HARNESS_MAIN
