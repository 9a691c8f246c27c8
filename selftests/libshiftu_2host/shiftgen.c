// SPDX-License-Identifier: GPL-2.0
/*
 * shiftgen: NCCL-like verbs traffic between two hosts, checked end to end.
 *
 *   shiftgen [-d DEV] [-i IBPORT] [-x GIDIDX] [-p TCPPORT] [-m MODE] [-s CHUNK]
 *            [-c CHUNKS] [-q DEPTH] [-n MESSAGES | -D SECONDS] [-r RETRY_CNT]
 *            [-t TIMEOUT] [-W SECONDS] [--expect-errors] [--wr-api [--poll-in-batch]]
 *            [--one-cq] [--cq-ex[=poll|linger|ibv]] [--spare-qp SECONDS] [--solicited]
 *            [--signal-all] [--srq] [--rate MSGS] [--reply] [-P CONNS] [-v]
 *            [SERVER_ADDR]
 *
 * Without SERVER_ADDR it is the server: it listens on TCPPORT, takes one
 * client and ends with it.  With -P CONNS (both sides, the same number),
 * the run is CONNS such connections at once, each with its own QP, CQs,
 * buffers and TCP channel, each in a thread of its own, all on one device
 * context, as the channels of an NCCL communicator are: the server takes
 * CONNS clients on TCPPORT.  The client's run parameters (mode, sizes, depth,
 * --expect-errors, --spare-qp, --solicited, watchdog) are authoritative; a
 * server given one of them explicitly refuses a client that disagrees.
 * Plain libibverbs only, so that libshiftu can be preloaded under it as
 * under any unmodified program.
 *
 * Out of band (TCP, like perftest): the client sends HELLO (its QP, GID, the
 * address and rkey of its credit word, the run parameters); the server makes
 * its resources, posts its receives, takes its QP to RTS and answers READY
 * (its QP, GID, address and rkey of its buffer or counter); the client then
 * takes its QP to RTS and starts.  So nothing reaches the server's QP before
 * it is ready.  At the end the client sends DONE (its totals), the server
 * finishes its checks and answers RESULT; either may send ABORT to stop the
 * other early.  All are one fixed-size big-endian struct wire.
 *
 * Modes, and what is checked (message k fills its slot, k mod DEPTH, with
 * word 0 = k and word i = pat(k, i), so a stale slot never passes):
 *   write_imm  (NCCL simple) CHUNKS RDMA WRITEs of CHUNK bytes into the
 *              server's slot, the last one a WRITE_WITH_IMM whose immediate is
 *              k.  The server takes k from the immediate: it must be exactly
 *              the next sequence number (else lost/dup/reorder), and the slot
 *              must hold message k (else corrupt): a notification that arrived
 *              before its data shows up as corrupt.
 *   send       SENDs of CHUNK bytes into receives the server posted, one per
 *              slot; sequence and content checked the same way.
 *   write      CHUNKS plain WRITEs per message, no notification.  At the end
 *              the server checks every slot holds the last message written to
 *              it and compares a checksum of its buffer with the client's.
 *   atomic     FETCH_AND_ADD 1 on the server's counter, one at a time; each
 *              returned value must be the previous one + 1, and at the end the
 *              counter must equal the client's count (or, after an error
 *              completion, lie between its successes and successes + errors:
 *              an atomic in flight may or may not have executed, never twice).
 *
 * Credits: in write_imm and send the server, having checked message k and
 * reposted its receive, RDMA WRITEs (inline, 8 bytes) the number of messages
 * it has consumed into the client's credit word, every max(1, DEPTH / 4)
 * messages.  The client posts message k only when k < credit + DEPTH, so a
 * slot is never overwritten before the server is done with it, and the send
 * mode never finds the receive queue empty.  It is one-sided, as NCCL's
 * clear-to-send FIFO is, and the client keeps the maximum it has seen, so a
 * stale credit write replayed after a failover cannot take credit back.
 * write mode reuses a slot only once the WRITEs of its previous message have
 * completed (a signaled WR every DEPTH / 2 messages guarantees one comes).
 *
 * Posting: ibv_post_send, or with --wr-api (either side, its own choice) the
 * extended send API: the QP is created with ibv_create_qp_ex and the
 * operations it uses in send_ops_flags, and every post is one
 * ibv_wr_start ... ibv_wr_complete batch; with --poll-in-batch the send CQ
 * is polled for a millisecond between a batch's last builder and its
 * ibv_wr_complete, which the verbs allow (a program may reap while it
 * builds), so that most of the run is spent inside batches, and SIGUSR2
 * keeps the next batch open until the next SIGUSR2, 10 s at most (a test
 * makes a failure meet it).
 *
 * --reply (write mode; the client's): the server, which posts nothing all
 * run, answers the client's DONE with one SEND of its buffer's checksum on
 * the QP, into the one receive the client posted before it started; the
 * client compares it with its own, and takes any other receive completion
 * for an error.  A peer that posts for the first time only after the other
 * side failed over (libshiftu's answer-and-stay, then its first post).
 *
 * Pace: as fast as credits allow, or with --rate (the client's) MSGS
 * messages a second on each connection at most, the thread polling its
 * send CQ while it waits for the next one's time, as a proxy thread spins;
 * with -P, the waits are idle rounds (conn_idle()), as waits for credits
 * are: on the lab's one guest CPU, which is also the NIC (Soft-RoCE), 64
 * threads spinning between their ten messages a second left the packets'
 * softirqs, and the library's own threads, a 65th of it.
 *
 * CQs: one for sends and one for receives, or with --one-cq (either side)
 * one for both, as NCCL has; its completions are told apart by wr_id.
 * With --cq-ex (either side) they are extended CQs (ibv_create_cq_ex, with
 * IBV_WC_STANDARD_FLAGS), polled with ibv_start_poll, ibv_next_poll and
 * ibv_end_poll, each completion read with the ibv_wc_read_* accessors
 * (--cq-ex=poll, the default; --cq-ex=linger takes one completion a
 * session and keeps the session open LINGER_US (100 ms) more, as a program
 * that does its work inside the session would), or polled with
 * ibv_poll_cq through ibv_cq_ex_to_cq (--cq-ex=ibv).  Either way every
 * completion's QP number must be the side's QP's (or its spare's), and a
 * received SEND's length what was sent (else corrupt).
 *
 * With --srq (either side) the QP's receives come from an SRQ of its own,
 * posted with ibv_post_srq_recv.
 *
 * A spare QP (--spare-qp SECONDS, a run parameter; a server given it only
 * refuses a client without one): each side makes a second RC QP on the
 * same CQs, connected to the other's and carrying nothing, and the client
 * destroys its own SECONDS into the run and says so on stderr ("destroyed
 * the spare QP"): a library under the program sees a QP of a shared CQ go
 * while the run goes on.
 *
 * Completion events (--solicited, a run parameter; write_imm and send): the
 * client marks each message's notification (the WRITE_WITH_IMM or SEND)
 * solicited, and the server, whenever its receive CQ is empty, arms it for
 * solicited completions only and sleeps in its completion channel, as an
 * event-driven receiver does, instead of polling.  A sleep that lasts its
 * full second although a message had come, with no event within 100 ms of
 * finding it, is a missed wake-up: the server prints it, counts it
 * (missed_wakes=N in its summary, with wakes=N) and fails the run.
 *
 * Send queues: unsignaled except every 16th WR, a WR that fills the queue,
 * and the last one (with --signal-all, either side, every WR is signaled);
 * a FIFO of the signaled WRs' positions tells how much of the queue a
 * completion frees (RC completes in order).  Both sides check
 * that order: a good send completion must be that of the oldest signaled
 * WR not yet completed (else corrupt: one reordered, repeated or made up).
 *
 * Ids in libshiftu's range (--shift-ids, either side, its own choice): every
 * wr_id the side posts starts with "SHIFT" in ASCII, the bytes of the
 * library's own requests' ids, and most are among the ids the library
 * names for itself (a control receive's on a default QP, an SRQ table's, a
 * drain's marker, a control message's, a bell's, a renamed request's: see
 * SHID_BYTE below); each names a slot of a table that keeps the real one,
 * and the side checks every id a completion brings back (else corrupt)
 * before it looks at it.  A library that takes any for its own swallows
 * the completion or counts it as its own.
 *
 * Every completion with an error status is printed (status string, wr_id)
 * and counted; the side then stops posting, drains, and still ends the TCP
 * exchange so both sides print their summary.  A watchdog (-W; default
 * -D + 30 s, else 60 s; a server adopts the client's + 5 s) ends a stalled run
 * with a message and exit 1, and alarm() backs it up should a verbs call
 * itself block.  SIGUSR1 ends a client's run at its next message, as if -D
 * had run out (a test that is done with it need not wait).
 *
 * Output: with -v, a progress line per 1000 messages; at the end one flushed
 * summary line per side, key=value pairs read by name (with -P, each
 * connection's own lines start "shiftgen[I]:" and the summary line below,
 * which adds conns=CONNS, has the sums of its counts, the longest elapsed
 * time and result=ok only if every connection's is; a client's connection
 * also prints "shiftgen[I]: role=client connected" once its QP is in RTS,
 * the server's being there already):
 *   shiftgen: role=client mode=M sent=N completions=N bytes=N errors=N
 *             corrupt=N setup_ms=N elapsed=S peer=ok|fail|none result=ok|fail
 *   shiftgen: role=server mode=M msgs=N bytes=N lost=N dup=N reorder=N
 *             corrupt=N errors=N peer_errors=N setup_ms=N elapsed=S result=ok|fail
 * setup_ms is the time the connection spent in its control verbs before it
 * ran (making its PD, CQs, MRs and QP, and taking the QP to RTS; not the
 * TCP exchange, nor the posts of receives); with -P the sum of all the
 * connections', and the summary line adds setup_max_ms, the longest one
 * connection spent, and teardown_ms and teardown_max_ms, the same of the
 * destroy verbs at the end.
 * (the atomic server adds counter=N; --solicited, wakes and missed_wakes;
 * --signal-all, unfinished=N on either side: its send WRs that got no
 * completion, good or error, negative if some got two, which fails the
 * run).  sent counts messages (atomics) posted, completions those whose
 * WRs are known to have completed successfully.
 *
 * Exit: 0 when every check passed and no completion had an error status
 * (both sides' checks, for the client: it reads the server's RESULT); with
 * --expect-errors (atomic mode only) error completions are allowed: the
 * client stops at the first, and exit 0 still requires every returned value
 * and the counter bound to hold.  1 on a failed check, an error completion,
 * a setup error or the watchdog; 2 on bad arguments (usage on stderr).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <infiniband/verbs.h>

#define SG_MAGIC	0x53474e31u	/* "SGN1" */
#define SIG_EVERY	16		/* signal at least every 16th send WR */
#define CLI_SQ		256
#define SRV_SQ		64
#define MAX_DEPTH	4096
#define MAX_CHUNKS	65535
#define MAX_BUF		(1ull << 30)
#define MAX_CONNS	256

#define ERR_PRINT_MAX	20
#define SEEN_BITS	4096		/* window of the dup/reorder detector */
#define LINGER_US	100000		/* --cq-ex=linger: a session's work */
#define NS		1000000000ull

/* SIGUSR1 came (finish()): the client's next message is its last */
static volatile sig_atomic_t finish_now;
/* SIGUSR2 came (hold()): the next batch stays open (1), and is (2),
 * until the next SIGUSR2 releases it (hold_release) */
static volatile sig_atomic_t hold_next, hold_release;

enum sg_mode { MODE_WRITE_IMM, MODE_SEND, MODE_WRITE, MODE_ATOMIC, MODE__MAX };
static const char *const mode_names[MODE__MAX] = {
	"write_imm", "send", "write", "atomic",
};

/* options given explicitly, so that a server can check them against the client */
enum { SET_MODE = 1, SET_CHUNK = 2, SET_CHUNKS = 4, SET_DEPTH = 8, SET_EXPECT = 16,
       SET_SPARE = 32, SET_SOLICITED = 64, SET_REPLY = 128 };

struct opts {
	const char *dev;
	const char *server;
	const char *port;
	unsigned int ib_port;
	unsigned int gid_idx;
	enum sg_mode mode;
	uint32_t chunk, chunks, depth;
	uint64_t msgs;
	uint32_t duration;
	uint32_t watchdog;
	uint32_t spare_secs;	/* --spare-qp, 0 without */
	uint32_t rate;		/* --rate: messages a second per connection, 0: no cap */
	uint8_t retry_cnt, timeout;
	bool verbose, expect_errors, wr_api, poll_in_batch, one_cq, solicited, signal_all;
	enum { CQX_NONE, CQX_POLL, CQX_LINGER, CQX_IBV } cq_ex;
	bool srq;		/* --srq: the QP's receives come from an SRQ of its own */
	bool reply;		/* --reply */
	bool shift_ids;		/* --shift-ids */
	unsigned int conns;	/* -P */
	unsigned int set;
};

/* the run's parameters: the client's, sent in HELLO */
struct run {
	enum sg_mode mode;
	uint32_t chunk, chunks, depth;
	bool expect_errors;
	bool spare;		/* both sides make a spare QP */
	bool solicited;		/* notifications solicited, the server sleeps for them */
	bool reply;		/* the server answers DONE with a SEND of its checksum */
	uint32_t watchdog;
	uint64_t slot;		/* bytes of one message's slot */
};

/* one message on the TCP channel */
enum msg_type { MSG_HELLO = 1, MSG_READY, MSG_DONE, MSG_RESULT, MSG_ABORT };
enum { W_QPN, W_PSN, W_LID, W_MTU, W_RKEY, W_ADDR, W_MODE, W_CHUNK, W_CHUNKS,
       W_DEPTH, W_FLAGS, W_WATCHDOG, W_STATUS, W_SPARE_QPN };		/* HELLO, READY */
enum { D_SENT, D_COMPLETED, D_ERRORS, D_CORRUPT, D_CSUM };		/* DONE */
enum { RS_OK, RS_MSGS, RS_LOST, RS_DUP, RS_REORDER, RS_CORRUPT, RS_ERRORS };	/* RESULT */
#define W_FIELDS 14
struct wire {
	uint32_t magic;
	uint32_t type;
	uint64_t f[W_FIELDS];
	uint8_t gid[16];
};
#define HELLO_EXPECT	1ull	/* W_FLAGS */
#define HELLO_SPARE	2ull
#define HELLO_SOLICITED	4ull
#define HELLO_REPLY	8ull

struct endpoint {
	uint32_t qpn, psn, lid, mtu, rkey;
	uint64_t addr;
	uint8_t gid[16];
};

/* send queue accounting (see the header) */
struct sq {
	uint32_t size;
	uint64_t posted;	/* WRs posted */
	uint64_t done;		/* WRs known complete */
	uint64_t *sig;		/* FIFO: value of posted after each signaled WR */
	uint64_t *sig_id;	/* FIFO: the wr_id of each signaled WR */
	uint32_t head, tail;
	uint32_t since_sig;
};

struct stats {
	uint64_t sent, completed, msgs, lost, dup, reorder, corrupt, errors;
	uint64_t peer_errors;
	uint64_t wakes, missed_wakes;	/* --solicited: the server's events */
	uint64_t send_errors;		/* error completions of send WRs */
	unsigned int err_printed, corrupt_printed;
};

struct sg {
	const struct opts *o;
	struct run run;
	const char *role;
	int idx;			/* -P: this connection's number, else -1 */
	bool is_server;
	bool ctx_shared;		/* -P: ctx is main()'s, not closed here */
	int sock;
	uint64_t deadline;		/* CLOCK_MONOTONIC ns */
	bool timed_out;
	bool stop;			/* peer aborted or local failure: post no more */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;	/* one CQ with --one-cq */
	struct ibv_cq_ex *scqx, *rcqx;	/* --cq-ex: the same CQs */
	struct ibv_comp_channel *ch;	/* --solicited, the server: the receive CQ's */
	struct ibv_srq *srq;		/* --srq */
	uint64_t rx_took;		/* receive completions taken */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;		/* --wr-api */
	struct ibv_qp *spare;		/* --spare-qp, till the client destroys its own */
	uint32_t spare_rqpn;		/* the peer's spare QP */
	uint64_t spare_at;		/* client: when to destroy it, CLOCK_MONOTONIC ns */
	struct ibv_mr *mr, *aux_mr;
	uint64_t *buf;			/* DEPTH slots */
	size_t buf_len;
	uint64_t *aux;			/* [0] credit word (client), counter (server); [1] fetched */
	struct ibv_port_attr port;
	struct endpoint local, remote;
	struct sq sq;
	struct stats st;
	uint64_t t0, t1;
	/* in control verbs (the header's setup_ms; -P's sums and maxima) */
	uint64_t setup_ns, setup_max_ns, teardown_ns, teardown_max_ns;
	/* client */
	uint64_t *msg_end;		/* sq.posted after message k's last WR, by k % sq.size */
	uint64_t credit;		/* the largest credit word seen */
	int atomic_pending;		/* the atomic in flight has not completed */
	bool atomic_ok;			/* ... and it completed successfully */
	/* server */
	uint64_t next;			/* the next expected sequence number */
	uint64_t credited;		/* the credit last written to the client */
	uint8_t seen[SEEN_BITS / 8];	/* server: sequence numbers seen, by k % SEEN_BITS */
	/* the summary's verdict, for -P's */
	bool passed;
	const char *peer;
};

/* wr_id: what a WR was, for the error report */
enum { WK_DATA = 1, WK_IMM, WK_CREDIT, WK_ATOMIC, WK_RECV, WK_REPLY };
static const char *const wk_names[] = { "?", "data", "imm", "credit", "atomic", "recv" };
#define WRID(kind, k, c)	((uint64_t)(kind) << 60 | ((uint64_t)(k) & 0xfffffffffffull) << 16 | (c))
#define WRID_KIND(id)		((unsigned int)((id) >> 60))
#define WRID_K(id)		(((id) >> 16) & 0xfffffffffffull)
#define WRID_C(id)		((unsigned int)((id) & 0xffff))

/*
 * --shift-ids: the id posted for the real id @id names slot i of
 * shid_real[], which keeps @id: "SHIFT", a sixth byte that depends on i
 * (SHID_BYTE), and i.  The sixth bytes are those of libshiftu's own ids
 * (wrid.h): 0x44 a control receive on a default QP (any i), 0xe0 and
 * 0xff an SRQ table's (any i), 0xde a drain's marker (i 0x4b52), 0x43 a
 * control message sent (i 0x5453), 0x42 a bell's receive (i 0x4c4c), and
 * 0x80 and 0xbf the ids the library renames such requests to.  The
 * slots are used in turn: far more of them than requests outstanding.
 */
#define SHID_PREFIX	0x5348494654000000ull
#define SHID_SLOTS	65536u
static const uint8_t shid_byte[8] = { 0x44, 0xe0, 0xde, 0x43, 0x42, 0xbf, 0xff, 0x80 };
static uint64_t shid_real[SHID_SLOTS];
static uint32_t shid_next;
static bool shid_on;

static uint64_t shid_post(uint64_t id)
{
	uint32_t i;

	if (!shid_on)
		return id;
	i = __atomic_fetch_add(&shid_next, 1, __ATOMIC_RELAXED) % SHID_SLOTS;
	shid_real[i] = id;
	return SHID_PREFIX | (uint64_t)shid_byte[i % 8] << 16 | i;
}

/* *@id, as a completion brought it, becomes the real id; false if it is
 * none that was posted */
static bool shid_back(uint64_t *id)
{
	uint32_t i = (uint32_t)(*id & 0xffff);

	if (!shid_on)
		return true;
	if ((*id & ~0xffffffull) != SHID_PREFIX || ((*id >> 16) & 0xff) != shid_byte[i % 8])
		return false;
	*id = shid_real[i];
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static void msg(struct sg *g, const char *fmt, ...)
{
	va_list ap;

	if (g->idx >= 0)
		fprintf(stderr, "shiftgen[%d]: role=%s: ", g->idx, g->role);
	else
		fprintf(stderr, "shiftgen: role=%s: ", g->role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* word i of message k: word 0 is k itself, for the diagnostics */
static inline uint64_t pat(uint64_t k, uint64_t i)
{
	uint64_t x;

	if (i == 0)
		return k;
	x = k * 0x9e3779b97f4a7c15ull + i;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

static void fill(uint64_t *p, uint64_t words, uint64_t k)
{
	uint64_t i;

	for (i = 0; i < words; i++)
		p[i] = pat(k, i);
}

/* true if p holds message k; else reports the first bad word (a few times) */
static bool check(struct sg *g, const uint64_t *p, uint64_t words, uint64_t k)
{
	uint64_t i;

	for (i = 0; i < words; i++) {
		if (p[i] == pat(k, i))
			continue;
		if (g->st.corrupt_printed++ < ERR_PRINT_MAX)
			msg(g, "corrupt: message %" PRIu64 " word %" PRIu64 " is 0x%016" PRIx64
			    ", expected 0x%016" PRIx64 " (the slot's word 0 says message %" PRIu64 ")",
			    k, i, p[i], pat(k, i), p[0]);
		return false;
	}
	return true;
}

static uint64_t checksum(const uint64_t *p, uint64_t words)
{
	uint64_t h = 0xcbf29ce484222325ull, i;

	for (i = 0; i < words; i++)
		h = (h ^ p[i] ^ i) * 0x100000001b3ull;
	return h;
}

/* ---- arguments ---- */

static void usage(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fputs("shiftgen: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fputs("usage: shiftgen [-d DEV] [-i IBPORT] [-x GIDIDX] [-p TCPPORT] [-m MODE] [-s CHUNK]\n"
	      "                [-c CHUNKS] [-q DEPTH] [-n MESSAGES | -D SECONDS] [-r RETRY_CNT]\n"
	      "                [-t TIMEOUT] [-W SECONDS] [--expect-errors] [--wr-api [--poll-in-batch]]\n"
	      "                [--one-cq] [--cq-ex[=poll|linger|ibv]] [--spare-qp SECONDS] [--solicited]\n"
	      "                [--signal-all] [--srq] [--rate MSGS] [--reply] [--shift-ids]\n"
	      "                [-P CONNS] [-v]\n"
	      "                [SERVER_ADDR]\n"
	      "  MODE: write_imm (default), send, write, atomic\n"
	      "  defaults: first device, port 1, GID 0, TCP 18515, -s 4096 -c 4 -q 16 -n 1000,\n"
	      "            -r 7 -t 14, watchdog -D + 30 s or 60 s, -P 1\n", stderr);
	exit(2);
}

static uint64_t num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		usage("%s: '%s' is not a number", opt, s);
	v = strtoull(s, &end, 0);
	if (errno || *end)
		usage("%s: '%s' is not a number", opt, s);
	if (v < min || v > max)
		usage("%s: %llu is out of range %" PRIu64 "..%" PRIu64, opt, v, min, max);
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "expect-errors", no_argument, NULL, 'E' },
		{ "wr-api", no_argument, NULL, 'X' },
		{ "one-cq", no_argument, NULL, 'O' },
		{ "cq-ex", optional_argument, NULL, 'C' },
		{ "poll-in-batch", no_argument, NULL, 'B' },
		{ "spare-qp", required_argument, NULL, 'S' },
		{ "solicited", no_argument, NULL, 'L' },
		{ "signal-all", no_argument, NULL, 'A' },
		{ "srq", no_argument, NULL, 'Q' },
		{ "rate", required_argument, NULL, 'R' },
		{ "reply", no_argument, NULL, 'Y' },
		{ "shift-ids", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_n = false;
	int c, m;

	*o = (struct opts){
		.port = "18515", .ib_port = 1, .mode = MODE_WRITE_IMM,
		.chunk = 4096, .chunks = 4, .depth = 16, .msgs = 1000,
		.retry_cnt = 7, .timeout = 14, .conns = 1,
	};
	while ((c = getopt_long(argc, argv, "d:i:x:p:m:s:c:q:n:D:r:t:W:P:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			o->ib_port = num("-i", optarg, 1, 255);
			break;
		case 'x':
			o->gid_idx = num("-x", optarg, 0, 255);
			break;
		case 'p':
			num("-p", optarg, 1, 65535);
			o->port = optarg;
			break;
		case 'm':
			for (m = 0; m < MODE__MAX; m++)
				if (!strcmp(optarg, mode_names[m]))
					break;
			if (m == MODE__MAX)
				usage("-m: unknown mode '%s'", optarg);
			o->mode = m;
			o->set |= SET_MODE;
			break;
		case 's':
			o->chunk = num("-s", optarg, 8, MAX_BUF);
			if (o->chunk % 8)
				usage("-s: %u is not a multiple of 8", o->chunk);
			o->set |= SET_CHUNK;
			break;
		case 'c':
			o->chunks = num("-c", optarg, 1, MAX_CHUNKS);
			o->set |= SET_CHUNKS;
			break;
		case 'q':
			o->depth = num("-q", optarg, 1, MAX_DEPTH);
			o->set |= SET_DEPTH;
			break;
		case 'n':
			o->msgs = num("-n", optarg, 1, 1ull << 40);
			have_n = true;
			break;
		case 'D':
			o->duration = num("-D", optarg, 1, 86400);
			break;
		case 'r':
			o->retry_cnt = num("-r", optarg, 0, 7);
			break;
		case 't':
			o->timeout = num("-t", optarg, 0, 31);
			break;
		case 'W':
			o->watchdog = num("-W", optarg, 1, 86400 + 30);
			break;
		case 'P':
			o->conns = num("-P", optarg, 1, MAX_CONNS);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'E':
			o->expect_errors = true;
			o->set |= SET_EXPECT;
			break;
		case 'X':
			o->wr_api = true;
			break;
		case 'O':
			o->one_cq = true;
			break;
		case 'C':
			if (!optarg || !strcmp(optarg, "poll"))
				o->cq_ex = CQX_POLL;
			else if (!strcmp(optarg, "linger"))
				o->cq_ex = CQX_LINGER;
			else if (!strcmp(optarg, "ibv"))
				o->cq_ex = CQX_IBV;
			else
				usage("--cq-ex: '%s' is none of poll, linger and ibv", optarg);
			break;
		case 'B':
			o->poll_in_batch = true;
			break;
		case 'S':
			o->spare_secs = num("--spare-qp", optarg, 1, 86400);
			o->set |= SET_SPARE;
			break;
		case 'A':
			o->signal_all = true;
			break;
		case 'R':
			o->rate = num("--rate", optarg, 1, 1000000);
			break;
		case 'Y':
			o->reply = true;
			o->set |= SET_REPLY;
			break;
		case 'Q':
			o->srq = true;
			break;
		case 'I':
			o->shift_ids = true;
			break;
		case 'L':
			o->solicited = true;
			o->set |= SET_SOLICITED;
			break;
		case 'h':
			usage(NULL);
			break;
		default:
			usage("bad option");
		}
	}
	if (optind < argc)
		o->server = argv[optind++];
	if (optind < argc)
		usage("unexpected argument '%s'", argv[optind]);
	if (have_n && o->duration)
		usage("-n and -D exclude each other");
	if (o->duration)
		o->msgs = 0;
	if (o->expect_errors && o->mode != MODE_ATOMIC)
		usage("--expect-errors is for -m atomic only");
	if (o->poll_in_batch && !o->wr_api)
		usage("--poll-in-batch is for --wr-api only");
	/* SIGUSR2 holds one batch open: of which connection would be a guess */
	if (o->poll_in_batch && o->conns > 1)
		usage("--poll-in-batch is for one connection only, not -P %u", o->conns);
	if (o->solicited && o->mode != MODE_WRITE_IMM && o->mode != MODE_SEND)
		usage("--solicited is for -m write_imm and send only");
	/* one table of ids for the process: a connection's outstanding ids fit */
	if (o->shift_ids && (o->reply || o->conns > 1))
		usage("--shift-ids is not for --reply or -P %u", o->conns);
	/* its receive is polled plainly, from a receive CQ of its own */
	if (o->reply && (o->mode != MODE_WRITE || o->one_cq || o->cq_ex || o->srq))
		usage("--reply is for -m write only, without --one-cq, --cq-ex and --srq");
	if (o->mode != MODE_SEND && o->mode != MODE_ATOMIC &&
	    (uint64_t)o->chunk * o->chunks > MAX_BUF)
		usage("-s %u -c %u: a message of more than %llu bytes", o->chunk, o->chunks, MAX_BUF);
	if ((uint64_t)o->chunk * (o->mode == MODE_SEND ? 1 : o->chunks) * o->depth > MAX_BUF)
		usage("-s %u -c %u -q %u: a buffer of more than %llu bytes",
		      o->chunk, o->chunks, o->depth, MAX_BUF);
	if (!o->watchdog)
		o->watchdog = o->duration ? o->duration + 30 : 60;
}

/* ---- the TCP channel ---- */

static int remaining_ms(const struct sg *g)
{
	uint64_t now = now_ns(), ms;

	if (now >= g->deadline)
		return 0;
	ms = (g->deadline - now) / 1000000 + 1;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* wait until fd is ready for events or the watchdog's deadline passes */
static int wait_fd(struct sg *g, int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ms, r;

	for (;;) {
		ms = remaining_ms(g);
		if (!ms) {
			g->timed_out = true;
			return -ETIMEDOUT;
		}
		r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* send one message; w's fields are given in host order and converted in place */
static int tcp_send(struct sg *g, uint32_t type, struct wire *w)
{
	size_t off = 0;
	ssize_t n;
	int i, ret;

	w->magic = htobe32(SG_MAGIC);
	w->type = htobe32(type);
	for (i = 0; i < W_FIELDS; i++)
		w->f[i] = htobe64(w->f[i]);
	while (off < sizeof(*w)) {
		n = send(g->sock, (char *)w + off, sizeof(*w) - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ret = wait_fd(g, g->sock, POLLOUT);
			if (ret)
				return ret;
		} else if (n < 0 && errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

/* receive one message (until the deadline); fields come back in host order */
static int tcp_recv(struct sg *g, struct wire *w)
{
	size_t off = 0;
	ssize_t n;
	int i, ret;

	while (off < sizeof(*w)) {
		n = recv(g->sock, (char *)w + off, sizeof(*w) - off, MSG_DONTWAIT);
		if (n > 0) {
			off += n;
		} else if (n == 0) {
			return -ECONNRESET;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			ret = wait_fd(g, g->sock, POLLIN);
			if (ret)
				return ret;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	if (be32toh(w->magic) != SG_MAGIC)
		return -EPROTO;
	w->type = be32toh(w->type);
	for (i = 0; i < W_FIELDS; i++)
		w->f[i] = be64toh(w->f[i]);
	return 0;
}

/* a message if one is waiting (1), none (0), or -errno (the peer went away) */
static int tcp_peek(struct sg *g, struct wire *w)
{
	struct pollfd p = { .fd = g->sock, .events = POLLIN };
	int ret;

	if (poll(&p, 1, 0) <= 0)
		return 0;
	ret = tcp_recv(g, w);
	return ret ? ret : 1;
}

static int tcp_connect(struct sg *g)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int fd = -1, ret, one = 1;

	ret = getaddrinfo(g->o->server, g->o->port, &hints, &res);
	if (ret) {
		msg(g, "Unable to resolve %s: %s", g->o->server, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	ret = -ENOENT;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		msg(g, "Unable to connect to %s port %s: %s", g->o->server, g->o->port, strerror(-ret));
		return ret;
	}
	/* small control messages: do not let Nagle hold DONE back */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	g->sock = fd;
	return 0;
}

/* a socket listening on the run's TCP port for @backlog clients, or -errno */
static int tcp_listen(struct sg *g, int backlog)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	int lfd = -1, ret, one = 1;

	ret = getaddrinfo(NULL, g->o->port, &hints, &res);
	if (ret) {
		msg(g, "Unable to resolve port %s: %s", g->o->port, gai_strerror(ret));
		return -EINVAL;
	}
	ret = -ENOENT;
	for (ai = res; ai; ai = ai->ai_next) {
		lfd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (lfd < 0) {
			ret = -errno;
			continue;
		}
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(lfd, ai->ai_addr, ai->ai_addrlen) && !listen(lfd, backlog))
			break;
		ret = -errno;
		close(lfd);
		lfd = -1;
	}
	freeaddrinfo(res);
	if (lfd < 0) {
		msg(g, "Unable to listen on port %s: %s", g->o->port, strerror(-ret));
		return ret;
	}
	return lfd;
}

/* the next client on @lfd, within the watchdog, as g->sock: 0 or -errno */
static int tcp_take(struct sg *g, int lfd)
{
	int fd, ret, one = 1;

	ret = wait_fd(g, lfd, POLLIN);
	if (ret) {
		msg(g, "Unable to accept a client on port %s: %s", g->o->port,
		    ret == -ETIMEDOUT ? "watchdog expired" : strerror(-ret));
		return ret;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		ret = -errno;
		msg(g, "Unable to accept a client on port %s: %s", g->o->port, strerror(errno));
		return ret;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	g->sock = fd;
	return 0;
}

/* ---- verbs resources ---- */

static int open_device(struct sg *g)
{
	const struct opts *o = g->o;
	struct ibv_device **list;
	union ibv_gid gid;
	int n, i, ret = 0;

	list = ibv_get_device_list(&n);
	if (!list) {
		ret = -errno;
		msg(g, "Unable to list RDMA devices: %s", strerror(errno));
		return ret;
	}
	for (i = 0; i < n; i++)
		if (!o->dev || !strcmp(ibv_get_device_name(list[i]), o->dev))
			break;
	if (i == n) {
		msg(g, "Unable to find RDMA device %s", o->dev ? o->dev : "(any)");
		ret = -ENODEV;
		goto out;
	}
	g->ctx = ibv_open_device(list[i]);
	if (!g->ctx) {
		ret = errno ? -errno : -ENODEV;
		msg(g, "Unable to open %s: %s", ibv_get_device_name(list[i]), strerror(-ret));
		goto out;
	}
	if (ibv_query_port(g->ctx, o->ib_port, &g->port)) {
		ret = errno ? -errno : -EINVAL;
		msg(g, "Unable to query port %u: %s", o->ib_port, strerror(-ret));
		goto err_close;
	}
	/* a QP on a port that is down cannot connect: say so now, like perftest */
	if (g->port.state != IBV_PORT_ACTIVE) {
		msg(g, "Unable to use port %u: it is %s", o->ib_port,
		    ibv_port_state_str(g->port.state));
		ret = -ENETDOWN;
		goto err_close;
	}
	if (ibv_query_gid(g->ctx, o->ib_port, o->gid_idx, &gid)) {
		ret = errno ? -errno : -EINVAL;
		msg(g, "Unable to query GID %u: %s", o->gid_idx, strerror(-ret));
		goto err_close;
	}
	memcpy(g->local.gid, gid.raw, sizeof(g->local.gid));
	g->local.lid = g->port.lid;
	g->local.mtu = g->port.active_mtu;
	goto out;

err_close:
	ibv_close_device(g->ctx);
	g->ctx = NULL;
out:
	ibv_free_device_list(list);
	return ret;
}

/* RESET -> INIT on the run's port; @what names the QP in the message */
static int qp_init(struct sg *g, struct ibv_qp *qp, const char *what)
{
	struct ibv_qp_attr qa = { 0 };
	int ret;

	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = g->o->ib_port;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	ret = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret)
		msg(g, "Unable to move %s to INIT: %s", what, strerror(ret));
	return -ret;
}

/* --spare-qp: a QP on the run's CQs that carries nothing, in INIT */
static int spare_create(struct sg *g)
{
	struct ibv_qp_init_attr qia = {
		.send_cq = g->scq, .recv_cq = g->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	int ret;

	g->spare = ibv_create_qp(g->pd, &qia);
	if (!g->spare) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to create the spare QP: %s", strerror(-ret));
		return ret;
	}
	ret = qp_init(g, g->spare, "the spare QP");
	if (ret) {
		ibv_destroy_qp(g->spare);
		g->spare = NULL;
	}
	return ret;
}

/* the client's spare QP, destroyed while the run goes on */
static void spare_destroy(struct sg *g)
{
	uint32_t qpn = g->spare->qp_num;
	int ret;

	g->spare_at = 0;
	ret = ibv_destroy_qp(g->spare);
	if (ret) {
		msg(g, "Unable to destroy the spare QP (qp %u): %s", qpn, strerror(ret));
		g->st.errors++;
		g->stop = true;
		return;
	}
	g->spare = NULL;
	msg(g, "destroyed the spare QP (qp %u) %.1f s into the run", qpn,
	    (now_ns() - g->t0) / 1e9);
}

static void *alloc_zeroed(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 64))
		return NULL;
	memset(p, 0, len ? len : 64);
	return p;
}

/*
 * PD, CQs, buffers, MRs and the QP, in INIT; the server also posts its
 * receives here, before its QP can receive anything.
 */
/* a CQ of @cqe entries on @ch, extended with --cq-ex (*@x gets it then) */
static struct ibv_cq *make_cq(struct sg *g, int cqe, struct ibv_comp_channel *ch,
			      struct ibv_cq_ex **x)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe, .channel = ch, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};

	*x = NULL;
	if (g->o->cq_ex == CQX_NONE)
		return ibv_create_cq(g->ctx, cqe, NULL, ch, 0);
	*x = ibv_create_cq_ex(g->ctx, &a);
	return *x ? ibv_cq_ex_to_cq(*x) : NULL;
}

static int create_resources(struct sg *g, bool server)
{
	const struct run *r = &g->run;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qia = { 0 };
	int access, ret;
	uint32_t sq, rq;

	if (ibv_query_device(g->ctx, &da)) {
		ret = errno ? -errno : -EIO;
		msg(g, "Unable to query the device: %s", strerror(-ret));
		return ret;
	}
	if (r->mode == MODE_ATOMIC && da.atomic_cap == IBV_ATOMIC_NONE) {
		msg(g, "Unable to run mode atomic: the device has no atomics");
		return -EOPNOTSUPP;
	}
	sq = server ? SRV_SQ : CLI_SQ;
	if (sq > (uint32_t)da.max_qp_wr)
		sq = da.max_qp_wr;
	rq = server && (r->mode == MODE_WRITE_IMM || r->mode == MODE_SEND) ? r->depth : 1;
	if (rq > (uint32_t)da.max_qp_wr || sq < 2 || (uint32_t)da.max_cqe < sq + rq) {
		msg(g, "Unable to size the queues: the device allows %d WRs and %d CQEs",
		    da.max_qp_wr, da.max_cqe);
		return -EINVAL;
	}

	g->pd = ibv_alloc_pd(g->ctx);
	if (!g->pd) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to allocate a PD: %s", strerror(-ret));
		return ret;
	}
	if (server && r->solicited) {
		g->ch = ibv_create_comp_channel(g->ctx);
		if (!g->ch) {
			ret = errno ? -errno : -ENOMEM;
			msg(g, "Unable to create a completion channel: %s", strerror(-ret));
			goto err_pd;
		}
	}
	g->scq = make_cq(g, g->o->one_cq ? sq + rq : sq, g->o->one_cq ? g->ch : NULL,
			 &g->scqx);
	if (!g->scq) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to create the send CQ: %s", strerror(-ret));
		goto err_ch;
	}
	g->rcqx = g->scqx;
	g->rcq = g->o->one_cq ? g->scq : make_cq(g, rq, g->ch, &g->rcqx);
	if (!g->rcq) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to create the receive CQ: %s", strerror(-ret));
		goto err_scq;
	}

	ret = -ENOMEM;
	g->sq.size = sq;
	g->sq.sig = calloc(sq, sizeof(*g->sq.sig));
	g->sq.sig_id = calloc(sq, sizeof(*g->sq.sig_id));
	/* msg_end (client): see update_completed() */
	g->msg_end = calloc(sq, sizeof(*g->msg_end));
	g->buf_len = r->mode == MODE_ATOMIC ? 0 : r->slot * r->depth;
	g->buf = alloc_zeroed(g->buf_len);
	g->aux = alloc_zeroed(64);
	if (!g->sq.sig || !g->sq.sig_id || !g->msg_end || !g->buf || !g->aux) {
		msg(g, "Unable to allocate %zu bytes of buffers", g->buf_len);
		goto err_mem;
	}
	if (g->buf_len) {
		g->mr = ibv_reg_mr(g->pd, g->buf, g->buf_len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!g->mr) {
			ret = errno ? -errno : -ENOMEM;
			msg(g, "Unable to register %zu bytes: %s", g->buf_len, strerror(-ret));
			goto err_mem;
		}
	}
	/* the credit word (client) or the counter (server) */
	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (server && r->mode == MODE_ATOMIC)
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	g->aux_mr = ibv_reg_mr(g->pd, g->aux, 64, access);
	if (!g->aux_mr) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to register the control word: %s", strerror(-ret));
		goto err_mr;
	}

	qia.send_cq = g->scq;
	qia.recv_cq = g->rcq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = sq;
	qia.cap.max_recv_wr = rq;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	/* the server's credits are 8-byte inline WRITEs: no source buffer to keep */
	qia.cap.max_inline_data = server ? sizeof(uint64_t) : 0;
	if (g->o->srq) {
		/* the receives go to an SRQ of the QP's own (ibv_post_srq_recv) */
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = rq, .max_sge = 1 } };

		g->srq = ibv_create_srq(g->pd, &sa);
		if (!g->srq) {
			ret = errno ? -errno : -ENOMEM;
			msg(g, "Unable to create the SRQ: %s", strerror(-ret));
			goto err_aux_mr;
		}
		qia.srq = g->srq;
	}
	if (g->o->wr_api) {
		struct ibv_qp_init_attr_ex qx = {
			.send_cq = qia.send_cq, .recv_cq = qia.recv_cq, .srq = qia.srq,
			.cap = qia.cap, .qp_type = qia.qp_type,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = g->pd,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
					  IBV_QP_EX_WITH_SEND |
					  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		};

		g->qp = ibv_create_qp_ex(g->ctx, &qx);
		g->qpx = g->qp ? ibv_qp_to_qp_ex(g->qp) : NULL;
		if (g->qp && !g->qpx) {
			ibv_destroy_qp(g->qp);
			g->qp = NULL;
			errno = EOPNOTSUPP;
		}
	} else {
		g->qp = ibv_create_qp(g->pd, &qia);
	}
	if (!g->qp) {
		ret = errno ? -errno : -ENOMEM;
		msg(g, "Unable to create the QP: %s", strerror(-ret));
		goto err_srq;
	}
	ret = qp_init(g, g->qp, "the QP");
	if (ret)
		goto err_qp;
	if (g->run.spare) {
		ret = spare_create(g);
		if (ret)
			goto err_qp;
	}
	g->local.qpn = g->qp->qp_num;
	g->local.psn = lrand48() & 0xffffff;
	return 0;

err_qp:
	ibv_destroy_qp(g->qp);
	g->qp = NULL;
err_srq:
	if (g->srq)
		ibv_destroy_srq(g->srq);
	g->srq = NULL;
err_aux_mr:
	ibv_dereg_mr(g->aux_mr);
	g->aux_mr = NULL;
err_mr:
	if (g->mr)
		ibv_dereg_mr(g->mr);
	g->mr = NULL;
err_mem:
	free(g->aux);
	free(g->buf);
	free(g->msg_end);
	free(g->sq.sig);
	free(g->sq.sig_id);
	g->aux = g->buf = NULL;
	g->msg_end = g->sq.sig = g->sq.sig_id = NULL;
	if (g->rcq != g->scq)
		ibv_destroy_cq(g->rcq);
	g->rcq = NULL;
err_scq:
	ibv_destroy_cq(g->scq);
	g->scq = NULL;
err_ch:
	if (g->ch)
		ibv_destroy_comp_channel(g->ch);
	g->ch = NULL;
err_pd:
	ibv_dealloc_pd(g->pd);
	g->pd = NULL;
	return ret;
}

/* in the reverse order of open_device() and create_resources() */
static void teardown(struct sg *g)
{
	uint64_t t = now_ns();

	if (g->spare && ibv_destroy_qp(g->spare))
		msg(g, "Unable to destroy the spare QP");
	if (g->qp && ibv_destroy_qp(g->qp))
		msg(g, "Unable to destroy the QP");
	if (g->srq && ibv_destroy_srq(g->srq))
		msg(g, "Unable to destroy the SRQ");
	if (g->aux_mr)
		ibv_dereg_mr(g->aux_mr);
	if (g->mr)
		ibv_dereg_mr(g->mr);
	free(g->aux);
	free(g->buf);
	free(g->msg_end);
	free(g->sq.sig);
	free(g->sq.sig_id);
	if (g->rcq && g->rcq != g->scq)
		ibv_destroy_cq(g->rcq);
	if (g->scq)
		ibv_destroy_cq(g->scq);
	if (g->ch)
		ibv_destroy_comp_channel(g->ch);
	if (g->pd)
		ibv_dealloc_pd(g->pd);
	if (g->ctx && !g->ctx_shared)
		ibv_close_device(g->ctx);
	g->teardown_ns = now_ns() - t;
	if (g->sock >= 0)
		close(g->sock);
}

static bool gid_is_zero(const uint8_t *gid)
{
	static const uint8_t zero[16];

	return !memcmp(gid, zero, sizeof(zero));
}

/* @qp (@what in messages): INIT -> RTR -> RTS towards the peer's @dest_qpn */
static int qp_connect_one(struct sg *g, struct ibv_qp *qp, uint32_t dest_qpn, const char *what)
{
	const struct opts *o = g->o;
	struct ibv_qp_attr a = { 0 };
	int ret;

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = g->local.mtu < g->remote.mtu ? g->local.mtu : g->remote.mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = g->remote.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = g->remote.lid;
	a.ah_attr.port_num = o->ib_port;
	/* RoCE always routes by GID; InfiniBand only when the peer has one */
	if (g->port.link_layer == IBV_LINK_LAYER_ETHERNET || !gid_is_zero(g->remote.gid)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, g->remote.gid, 16);
		a.ah_attr.grh.sgid_index = o->gid_idx;
		a.ah_attr.grh.hop_limit = 64;
	}
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret) {
		msg(g, "Unable to move %s to RTR: %s", what, strerror(ret));
		return -ret;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = 7;
	a.sq_psn = g->local.psn;
	a.max_rd_atomic = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret) {
		msg(g, "Unable to move %s to RTS: %s", what, strerror(ret));
		return -ret;
	}
	return 0;
}

/* the QP, and the spare if there is one, on both sides */
static int qp_connect(struct sg *g)
{
	int ret = qp_connect_one(g, g->qp, g->remote.qpn, "the QP");

	if (!ret && g->spare)
		ret = qp_connect_one(g, g->spare, g->spare_rqpn, "the spare QP");
	return ret;
}

/*
 * One line per connection once its QP is connected, with its QP's number
 * and the peer's: the libraries' logs name QPs by number, so that a
 * server's sequence error can be matched with its QP's moves.
 */
static void say_connected(const struct sg *g)
{
	printf("shiftgen[%d]: role=%s connected: qp %u, peer's qp %u\n", g->idx, g->role,
	       g->qp->qp_num, g->remote.qpn);
	fflush(stdout);
}

static void put_endpoint(struct wire *w, const struct endpoint *e)
{
	w->f[W_QPN] = e->qpn;
	w->f[W_PSN] = e->psn;
	w->f[W_LID] = e->lid;
	w->f[W_MTU] = e->mtu;
	w->f[W_RKEY] = e->rkey;
	w->f[W_ADDR] = e->addr;
	memcpy(w->gid, e->gid, 16);
}

static void get_endpoint(struct endpoint *e, const struct wire *w)
{
	e->qpn = w->f[W_QPN];
	e->psn = w->f[W_PSN];
	e->lid = w->f[W_LID];
	e->mtu = w->f[W_MTU];
	e->rkey = w->f[W_RKEY];
	e->addr = w->f[W_ADDR];
	memcpy(e->gid, w->gid, 16);
}

/* ---- completions and the send queue ---- */

static void wc_error(struct sg *g, const struct ibv_wc *wc)
{
	unsigned int kind = WRID_KIND(wc->wr_id);

	g->st.errors++;
	g->stop = true;
	if (g->st.err_printed++ < ERR_PRINT_MAX)
		msg(g, "completion error: %s (status %d, vendor_err 0x%x) wr_id=0x%" PRIx64
		    " (%s, message %" PRIu64 ", chunk %u)",
		    ibv_wc_status_str(wc->status), wc->status, wc->vendor_err, wc->wr_id,
		    kind <= WK_RECV ? wk_names[kind] : "?", WRID_K(wc->wr_id), WRID_C(wc->wr_id));
	else if (g->st.err_printed == ERR_PRINT_MAX + 1)
		msg(g, "further completion errors are counted, not printed");
}

/* whether the next WR must be signaled (see the header) */
static bool sq_want_signal(const struct sq *q, bool force)
{
	return force || q->since_sig + 1 >= SIG_EVERY || q->posted + 1 - q->done >= q->size;
}

static void sq_posted(struct sq *q, bool signaled, uint64_t wr_id)
{
	q->posted++;
	if (signaled) {
		q->sig_id[q->tail % q->size] = wr_id;
		q->sig[q->tail++ % q->size] = q->posted;
		q->since_sig = 0;
	} else {
		q->since_sig++;
	}
}

/*
 * A signaled WR completed: RC completes in order, so all before it did too.
 * False if it is not the oldest signaled WR outstanding.
 */
static bool sq_completed(struct sq *q, uint64_t wr_id)
{
	if (q->head == q->tail || q->sig_id[q->head % q->size] != wr_id)
		return false;
	q->done = q->sig[q->head++ % q->size];
	return true;
}

/*
 * Messages whose last WR is within sq.done have completed.  An incomplete
 * message has its last WR in (done, posted], at most sq.size of them, so a
 * ring of sq.size entries holds every incomplete message's end.
 */
static void update_completed(struct sg *g)
{
	while (g->st.completed < g->st.sent &&
	       g->msg_end[g->st.completed % g->sq.size] <= g->sq.done)
		g->st.completed++;
}

static void took_recv(struct sg *g, const struct ibv_wc *wc);

/* one completion of the send queue, or of either with --one-cq */
static void took(struct sg *g, const struct ibv_wc *wc)
{
	if (WRID_KIND(wc->wr_id) == WK_RECV) {
		took_recv(g, wc);
		return;
	}
	if (WRID_KIND(wc->wr_id) == WK_ATOMIC) {
		g->atomic_pending = 0;
		g->atomic_ok = wc->status == IBV_WC_SUCCESS;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		g->st.send_errors++;
		wc_error(g, wc);
		return;
	}
	if (!sq_completed(&g->sq, wc->wr_id)) {
		/* the queue's accounting is lost with it: stop, do not stall */
		g->st.corrupt++;
		g->stop = true;
		if (g->st.corrupt_printed++ < ERR_PRINT_MAX) {
			if (g->sq.head == g->sq.tail)
				msg(g, "corrupt: send completion wr_id 0x%" PRIx64 " with no signaled WR outstanding",
				    wc->wr_id);
			else
				msg(g, "corrupt: send completion wr_id 0x%" PRIx64 " out of order (expected 0x%" PRIx64 ")",
				    wc->wr_id, g->sq.sig_id[g->sq.head % g->sq.size]);
		}
	}
}

/* --cq-ex=poll: the current completion of @x, read with the accessors */
static void cqx_read(struct ibv_cq_ex *x, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = x->wr_id;
	wc->status = x->status;
	wc->opcode = ibv_wc_read_opcode(x);
	wc->vendor_err = ibv_wc_read_vendor_err(x);
	wc->byte_len = ibv_wc_read_byte_len(x);
	wc->imm_data = ibv_wc_read_imm_data(x);
	wc->qp_num = ibv_wc_read_qp_num(x);
	wc->src_qp = ibv_wc_read_src_qp(x);
	wc->wc_flags = ibv_wc_read_wc_flags(x);
	wc->slid = ibv_wc_read_slid(x);
	wc->sl = ibv_wc_read_sl(x);
	wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(x);
}

/*
 * --cq-ex: a completion of a QP that is not the side's (a library's own,
 * or one whose QP number was not made the application's), or a received
 * SEND of another length than sent, is corrupt: the run stops.
 */
static void cqx_check(struct sg *g, const struct ibv_wc *wc)
{
	bool bad = wc->qp_num != g->qp->qp_num && (!g->spare || wc->qp_num != g->spare->qp_num);

	if (!bad && wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    g->run.mode == MODE_SEND && wc->byte_len != g->run.chunk)
		bad = true;
	if (!bad)
		return;
	g->st.corrupt++;
	g->stop = true;
	if (g->st.corrupt_printed++ < ERR_PRINT_MAX)
		msg(g, "corrupt: completion wr_id 0x%" PRIx64 " status %d opcode %d of qp %u, %u bytes (the QP is %u)",
		    wc->wr_id, wc->status, wc->opcode, wc->qp_num, wc->byte_len, g->qp->qp_num);
}

/* @n completions just polled, each checked (cqx_check()) */
static int cqx_checked(struct sg *g, const struct ibv_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		cqx_check(g, &wc[i]);
	return n;
}

/*
 * Up to @num completions of @cq, as ibv_poll_cq() returns them: with
 * --cq-ex=poll one start_poll ... end_poll session, each completion read
 * with the accessors; with --cq-ex=ibv ibv_poll_cq() on the extended CQ.
 * Soft-RoCE's next_poll ends the session when it finds the CQ empty, and
 * its end_poll after that would consume an entry that is not there
 * (rdma-core 44, providers/rxe; mlx5's keeps the session for end_poll):
 * shiftgen, which runs on Soft-RoCE, ends it as that provider wants.
 */
static int cq_poll_ids(struct sg *g, struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct ibv_cq_ex *x = cq == g->scq ? g->scqx : g->rcqx;
	struct ibv_poll_cq_attr attr = { 0 };
	int n = 0, ret;

	if (g->o->cq_ex != CQX_POLL && g->o->cq_ex != CQX_LINGER) {
		n = ibv_poll_cq(cq, num, wc);
	} else {
		ret = ibv_start_poll(x, &attr);
		if (ret == ENOENT)
			return 0;
		if (ret)
			return -1;
		for (;;) {
			cqx_read(x, &wc[n++]);
			if (g->o->cq_ex == CQX_LINGER) {
				usleep(LINGER_US);
				break;
			}
			if (n == num)
				break;
			ret = ibv_next_poll(x);
			if (ret == ENOENT)
				return cqx_checked(g, wc, n);
			if (ret) {
				n = -1;
				break;
			}
		}
		ibv_end_poll(x);
	}
	return g->o->cq_ex != CQX_NONE ? cqx_checked(g, wc, n) : n;
}

/* cq_poll_ids(), with --shift-ids each completion's real id back first:
 * one the side did not post is corrupt, and the run stops */
static int cq_poll(struct sg *g, struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = cq_poll_ids(g, cq, num, wc), i;

	for (i = 0; i < n; i++) {
		if (shid_back(&wc[i].wr_id))
			continue;
		g->st.corrupt++;
		g->stop = true;
		if (g->st.corrupt_printed++ < ERR_PRINT_MAX)
			msg(g, "corrupt: completion wr_id 0x%" PRIx64 " status %d opcode %d of qp %u: not an id posted",
			    wc[i].wr_id, wc[i].status, wc[i].opcode, wc[i].qp_num);
		/* the real id of none: the checks after see it as made up */
		wc[i].wr_id = 0;
	}
	return n;
}

/* reap send completions: how many, or -EIO if the CQ cannot be polled */
static int poll_send(struct sg *g)
{
	struct ibv_wc wc[16];
	int n, i;

	if (g->spare_at && now_ns() >= g->spare_at)
		spare_destroy(g);
	n = cq_poll(g, g->scq, 16, wc);
	if (n < 0) {
		msg(g, "Unable to poll the send CQ");
		g->st.errors++;
		g->stop = true;
		return -EIO;
	}
	for (i = 0; i < n; i++)
		took(g, &wc[i]);
	/* the atomic loop counts its own completions, one at a time */
	if (n > 0 && !g->is_server && g->run.mode != MODE_ATOMIC)
		update_completed(g);
	return n;
}

/*
 * -P: the connections' threads share the CPUs with each other and with the
 * NIC's own work (Soft-RoCE's runs in softirqs and kernel threads, which
 * spinning threads would starve): one with nothing to do yields, and
 * once @idle, its empty rounds in a row, reaches 64, sleeps 5 ms a round.
 */
static void conn_idle(const struct sg *g, unsigned int idle)
{
	static const struct timespec nap = { .tv_nsec = 5000000 };

	if (g->idx < 0)
		return;
	if (idle < 64)
		sched_yield();
	else
		nanosleep(&nap, NULL);
}

/*
 * Between polls with nothing to do: every 256th idle round, the watchdog and
 * the peer (ABORT, or the connection gone).  -ETIMEDOUT, -ECONNRESET or 0.
 */
static int idle_check(struct sg *g, unsigned int *idle, struct wire *w, bool *got)
{
	int ret;

	*got = false;
	conn_idle(g, *idle);
	if ((++*idle & 255) != 0)
		return 0;
	if (now_ns() >= g->deadline) {
		g->timed_out = true;
		g->stop = true;
		msg(g, "watchdog: no end after %u s, giving up", g->run.watchdog);
		return -ETIMEDOUT;
	}
	ret = tcp_peek(g, w);
	if (ret < 0) {
		msg(g, "the peer went away: %s", strerror(-ret));
		g->stop = true;
		return ret;
	}
	*got = ret == 1;
	return 0;
}

/* the client's idle round: poll, then idle_check; an ABORT stops the run */
static int client_idle(struct sg *g, unsigned int *idle)
{
	struct wire w;
	bool got;
	int n, ret;

	n = poll_send(g);
	if (n < 0)
		return n;
	if (n > 0) {
		*idle = 0;
		return 0;
	}
	ret = idle_check(g, idle, &w, &got);
	if (ret)
		return ret;
	if (got) {
		if (w.type == MSG_ABORT)
			msg(g, "the server aborted the run");
		else
			msg(g, "unexpected message %u from the server", w.type);
		g->stop = true;
		return -ECONNABORTED;
	}
	return 0;
}

/* the chain @wr as one batch of the extended send API, all but its
 * ibv_wr_complete: 0, or EINVAL (aborted) */
static inline __attribute__((always_inline)) int wr_build(struct ibv_qp_ex *x,
							  const struct ibv_send_wr *wr)
{
	ibv_wr_start(x);
	for (; wr; wr = wr->next) {
		x->wr_id = shid_post(wr->wr_id);
		/*
		 * IBV_SEND_INLINE stays with ibv_wr_set_inline_data():
		 * Soft-RoCE's builder copies the bytes without marking the
		 * request inline, and its kernel side reads the flag.
		 */
		x->wr_flags = wr->send_flags;
		switch (wr->opcode) {
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
					      wr->imm_data);
			break;
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr,
						wr->wr.atomic.compare_add);
			break;
		default:
			ibv_wr_abort(x);
			return EINVAL;
		}
		if (wr->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)wr->sg_list[0].addr,
					       wr->sg_list[0].length);
		else if (wr->num_sge)
			ibv_wr_set_sge_list(x, wr->num_sge, wr->sg_list);
	}
	return 0;
}

/* post the chain @wr with the extended send API, as one batch (out of
 * line: the bench measures a batch by this function's name) */
static __attribute__((noinline)) int post_wr_api(struct ibv_qp_ex *x,
						 const struct ibv_send_wr *wr)
{
	int ret = wr_build(x, wr);

	return ret ? ret : ibv_wr_complete(x);
}

/* post_wr_api(), reaping send completions for 1 ms (after SIGUSR2: until
 * the next, 10 s at most) before ibv_wr_complete */
static int post_wr_polling(struct sg *g, const struct ibv_send_wr *wr)
{
	bool held = hold_next;
	uint64_t until = now_ns() + (held ? 10 * NS : NS / 1000);
	int ret;

	if (held)
		hold_next = 2;
	ret = wr_build(g->qpx, wr);
	if (!ret) {
		while (now_ns() < until && !hold_release && poll_send(g) >= 0)
			;
		ret = ibv_wr_complete(g->qpx);
	}
	/* a SIGUSR2 that came during an ordinary batch holds the next one */
	if (held) {
		hold_next = 0;
		hold_release = 0;
	}
	return ret;
}

/* ibv_post_send() of the chain @wr, with --shift-ids each request under the
 * id shid_post() gives it, and its real one back in @wr after */
static int post_send_ids(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	uint64_t real[64];
	struct ibv_send_wr *w;
	unsigned int n = 0;
	int ret;

	if (!shid_on)
		return ibv_post_send(qp, wr, bad);
	for (w = wr; w; w = w->next) {
		if (n == sizeof(real) / sizeof(real[0]))
			return ENOMEM;	/* no chain of shiftgen's is that long */
		real[n++] = w->wr_id;
		w->wr_id = shid_post(w->wr_id);
	}
	ret = ibv_post_send(qp, wr, bad);
	for (w = wr, n = 0; w; w = w->next)
		w->wr_id = real[n++];
	return ret;
}

/* post one send WR once the queue has room, signaled as sq_want_signal says */
static int post_send(struct sg *g, struct ibv_send_wr *wr, bool force, bool client)
{
	struct ibv_send_wr *bad;
	unsigned int idle = 0;
	bool sig;
	int ret;

	while (g->sq.posted - g->sq.done >= g->sq.size) {
		if (client) {
			ret = client_idle(g, &idle);
		} else {
			ret = poll_send(g);
			if (!ret && now_ns() >= g->deadline)
				ret = -ETIMEDOUT;
			ret = ret < 0 ? ret : 0;
		}
		if (ret)
			return ret;
		if (g->stop)
			return -ECANCELED;
	}
	sig = g->o->signal_all || sq_want_signal(&g->sq, force);
	wr->send_flags |= sig ? IBV_SEND_SIGNALED : 0;
	if (!g->qpx)
		ret = post_send_ids(g->qp, wr, &bad);
	else if (g->o->poll_in_batch)
		ret = post_wr_polling(g, wr);
	else
		ret = post_wr_api(g->qpx, wr);
	if (ret) {
		msg(g, "Unable to post a send WR (wr_id 0x%" PRIx64 "): %s", wr->wr_id, strerror(ret));
		g->st.errors++;
		g->stop = true;
		return -ret;
	}
	sq_posted(&g->sq, sig, wr->wr_id);
	return 0;
}

/*
 * After the last post: wait for every WR to complete, however long a
 * failover takes (up to the watchdog).  After an error or the peer's ABORT:
 * only until the CQ stays quiet for 1 s, since what was in flight may never
 * come back (retry_cnt 7 on rxe retries forever).
 */
static void drain(struct sg *g)
{
	uint64_t quiet = now_ns(), now;
	unsigned int idle = 0, empty = 0;
	struct wire w;
	int n;

	while (g->sq.done < g->sq.posted || g->stop) {
		n = poll_send(g);
		if (n < 0)
			return;
		now = now_ns();
		if (n > 0) {
			quiet = now;
			empty = 0;
			continue;
		}
		if (g->stop && now - quiet > NS)
			return;
		conn_idle(g, empty++);
		if (now >= g->deadline) {
			g->timed_out = true;
			msg(g, "watchdog: %" PRIu64 " send WRs still incomplete after %u s",
			    g->sq.posted - g->sq.done, g->run.watchdog);
			return;
		}
		/* the server may have given up: its ABORT (or its going away) stops us */
		if (!g->is_server && !g->stop && (++idle & 255) == 0 && tcp_peek(g, &w)) {
			msg(g, "the server aborted the run");
			g->stop = true;
			quiet = now;
		}
	}
}

static double elapsed(const struct sg *g)
{
	uint64_t t1 = g->t1 ? g->t1 : now_ns();

	return g->t0 ? (double)(t1 - g->t0) / NS : 0;
}

static void progress(struct sg *g, uint64_t n)
{
	if (!g->o->verbose || n % 1000)
		return;
	flockfile(stdout);
	if (g->idx >= 0)
		printf("shiftgen[%d]: ", g->idx);
	else
		fputs("shiftgen: ", stdout);
	if (g->is_server)
		printf("role=server progress msgs=%" PRIu64 " lost=%" PRIu64
		       " corrupt=%" PRIu64 " elapsed=%.3f\n", n, g->st.lost, g->st.corrupt,
		       elapsed(g));
	else
		printf("role=client progress sent=%" PRIu64 " completions=%" PRIu64
		       " credit=%" PRIu64 " elapsed=%.3f\n", n, g->st.completed, g->credit,
		       elapsed(g));
	fflush(stdout);
	funlockfile(stdout);
}

/* ---- client ---- */

/* the credit word, as the largest value seen: a replayed stale write cannot lower it */
static uint64_t credit(struct sg *g)
{
	uint64_t v = __atomic_load_n(&g->aux[0], __ATOMIC_ACQUIRE);

	if (v <= g->credit)
		return g->credit;
	if (v > g->st.sent) {
		if (!g->st.corrupt++)
			msg(g, "corrupt: credit %" PRIu64 " for only %" PRIu64 " messages sent",
			    v, g->st.sent);
		g->stop = true;
		return g->credit;
	}
	g->credit = v;
	return v;
}

/* may message k use its slot: the server is done with k - DEPTH (see the header) */
static bool slot_free(struct sg *g, uint64_t k)
{
	if (k < g->run.depth)
		return true;
	if (g->run.mode == MODE_WRITE)
		return g->st.completed > k - g->run.depth;
	return credit(g) > k - g->run.depth;
}

/* write_imm, send and write: message after message until -n or -D */
static void client_stream(struct sg *g)
{
	const struct run *r = &g->run;
	const struct opts *o = g->o;
	uint64_t words = r->slot / 8, end = o->duration ? g->t0 + o->duration * NS : 0;
	uint32_t nwr = r->mode == MODE_SEND ? 1 : r->chunks;
	uint32_t half = r->depth / 2 ? r->depth / 2 : 1, c;
	unsigned int idle = 0;
	uint64_t k, *slot;
	bool final = false;

	for (k = 0; !g->stop && !final; k++) {
		while (!slot_free(g, k) && !g->stop)
			if (client_idle(g, &idle))
				goto out;
		/* --rate: message k not before its time, polling meanwhile
		 * (idle rounds: with -P, the thread yields, then naps) */
		while (o->rate && now_ns() < g->t0 + k * NS / o->rate && !g->stop)
			if (client_idle(g, &idle))
				goto out;
		if (g->stop)
			break;
		/* decided before posting, so that the run's last WR is signaled */
		final = (o->msgs && k + 1 >= o->msgs) || (end && now_ns() >= end) ||
			finish_now;
		slot = g->buf + (k % r->depth) * words;
		fill(slot, words, k);
		for (c = 0; c < nwr; c++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)slot + (uint64_t)c * r->chunk,
				.length = r->chunk,
				.lkey = g->mr->lkey,
			};
			struct ibv_send_wr wr = {
				.wr_id = WRID(WK_DATA, k, c),
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
			};
			bool last = c == nwr - 1;

			if (r->mode == MODE_SEND) {
				wr.opcode = IBV_WR_SEND;
			} else {
				wr.wr.rdma.remote_addr = g->remote.addr + (k % r->depth) * r->slot +
							 (uint64_t)c * r->chunk;
				wr.wr.rdma.rkey = g->remote.rkey;
			}
			if (r->mode == MODE_WRITE_IMM && last) {
				wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				wr.wr_id = WRID(WK_IMM, k, c);
				wr.imm_data = htobe32((uint32_t)k);
			}
			if (r->solicited && last)
				wr.send_flags = IBV_SEND_SOLICITED;
			/* write mode: slot_free() waits on a completion within DEPTH messages */
			if (post_send(g, &wr, last && (final || (r->mode == MODE_WRITE &&
						       (k + 1) % half == 0)), true))
				goto out;
		}
		g->msg_end[k % g->sq.size] = g->sq.posted;
		g->st.sent++;
		progress(g, g->st.sent);
		if (poll_send(g) > 0)
			idle = 0;
	}
out:
	drain(g);
	update_completed(g);
}

/* atomic: one FETCH_AND_ADD at a time, each must return the previous value + 1 */
static void client_atomic(struct sg *g)
{
	const struct opts *o = g->o;
	uint64_t k, v, end = o->duration ? g->t0 + o->duration * NS : 0;
	unsigned int idle = 0;

	for (k = 0; !g->stop; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)&g->aux[1],
			.length = sizeof(uint64_t),
			.lkey = g->aux_mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = WRID(WK_ATOMIC, k, 0),
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		};

		if ((o->msgs && k >= o->msgs) || (end && now_ns() >= end) || finish_now)
			break;
		wr.wr.atomic.remote_addr = g->remote.addr;
		wr.wr.atomic.rkey = g->remote.rkey;
		wr.wr.atomic.compare_add = 1;
		g->aux[1] = ~0ull;
		g->atomic_pending = 1;
		if (post_send(g, &wr, true, true))
			break;
		g->st.sent++;
		while (g->atomic_pending && !g->stop)
			if (client_idle(g, &idle))
				break;
		if (g->atomic_pending || !g->atomic_ok)
			break;
		/* the counter starts at 0 and only this client adds to it */
		v = __atomic_load_n(&g->aux[1], __ATOMIC_ACQUIRE);
		if (v != g->st.completed) {
			g->st.corrupt++;
			msg(g, "corrupt: fetch-and-add %" PRIu64 " returned %" PRIu64 ", expected %" PRIu64,
			    k, v, g->st.completed);
			g->stop = true;
			break;
		}
		g->st.completed++;
		progress(g, g->st.sent);
	}
	drain(g);
}

/* ---- server ---- */

static int post_recv(struct sg *g, uint32_t s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(g->buf + s * (g->run.slot / 8)),
		.length = g->run.chunk,
		.lkey = g->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WRID(WK_RECV, 0, s), .sg_list = &sge }, *bad;
	int ret;

	/* a WRITE_WITH_IMM's data goes by RDMA: its receive needs no buffer */
	wr.num_sge = g->run.mode == MODE_SEND ? 1 : 0;
	wr.wr_id = shid_post(wr.wr_id);
	ret = g->srq ? ibv_post_srq_recv(g->srq, &wr, &bad) : ibv_post_recv(g->qp, &wr, &bad);
	if (ret) {
		msg(g, "Unable to post a receive: %s", strerror(ret));
		g->st.errors++;
		g->stop = true;
	}
	return -ret;
}

static bool seen_test(struct sg *g, uint64_t k)
{
	return g->seen[(k % SEEN_BITS) / 8] & (1u << (k % 8));
}

static void seen_set(struct sg *g, uint64_t k, bool on)
{
	uint8_t *b = &g->seen[(k % SEEN_BITS) / 8];

	*b = on ? *b | (1u << (k % 8)) : *b & ~(1u << (k % 8));
}

/*
 * UTC wall time of day into @buf, HH:MM:SS.uuuuuu as libshiftu's log
 * lines start: a sequence error is matched with the libraries' moves.
 */
static const char *tod(char *buf, size_t size)
{
	struct timespec ts;
	unsigned int day;

	clock_gettime(CLOCK_REALTIME, &ts);
	day = (unsigned int)(ts.tv_sec % 86400);
	snprintf(buf, size, "%02u:%02u:%02u.%06u", day / 3600, day / 60 % 60, day % 60,
		 (unsigned int)(ts.tv_nsec / 1000) % 1000000);
	return buf;
}

/*
 * Account for message k against the expected sequence: a gap counts its
 * messages lost; one of them arriving later turns a loss into a reorder; a
 * message seen before is a duplicate.  Returns false for a duplicate.
 */
static bool seq_account(struct sg *g, uint64_t k)
{
	char t[24];
	uint64_t j;

	if (k >= g->next) {
		if (k > g->next) {
			g->st.lost += k - g->next;
			msg(g, "sequence: expected message %" PRIu64 ", got %" PRIu64 " at %s", g->next,
			    k, tod(t, sizeof(t)));
			if (k - g->next >= SEEN_BITS)
				memset(g->seen, 0, sizeof(g->seen));
			else
				for (j = g->next; j < k; j++)
					seen_set(g, j, false);
		}
		seen_set(g, k, true);
		g->next = k + 1;
		return true;
	}
	if (g->next - k >= SEEN_BITS || seen_test(g, k)) {
		g->st.dup++;
		msg(g, "sequence: message %" PRIu64 " again (expected %" PRIu64 ") at %s", k, g->next,
		    tod(t, sizeof(t)));
		return false;
	}
	seen_set(g, k, true);
	g->st.lost--;
	g->st.reorder++;
	msg(g, "sequence: message %" PRIu64 " late (expected %" PRIu64 ") at %s", k, g->next,
	    tod(t, sizeof(t)));
	return true;
}

/* one receive completion of write_imm or send: check, repost, account */
static void consume(struct sg *g, const struct ibv_wc *wc)
{
	const struct run *r = &g->run;
	uint64_t words = r->slot / 8, k;
	uint32_t s = WRID_C(wc->wr_id);
	const uint64_t *slot;
	int64_t d;

	if (r->mode == MODE_WRITE_IMM) {
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM)) {
			g->st.corrupt++;
			msg(g, "corrupt: receive completion opcode %d flags 0x%x, not a WRITE_WITH_IMM",
			    wc->opcode, wc->wc_flags);
			post_recv(g, s);
			return;
		}
		/* the immediate holds k's low 32 bits: k is the nearest to next */
		d = (int32_t)(be32toh(wc->imm_data) - (uint32_t)g->next);
		k = g->next + d;
		if (d < 0 && (uint64_t)-d > g->next)
			k = UINT64_MAX;		/* before message 0: caught below */
		slot = g->buf + (k % r->depth) * words;
	} else {
		slot = g->buf + s * words;
		if (wc->opcode != IBV_WC_RECV || wc->byte_len != r->chunk) {
			g->st.corrupt++;
			msg(g, "corrupt: receive completion opcode %d flags 0x%x immediate 0x%x, %u bytes (expected a SEND of %u)%s",
			    wc->opcode, wc->wc_flags,
			    wc->wc_flags & IBV_WC_WITH_IMM ? be32toh(wc->imm_data) : 0,
			    wc->byte_len, r->chunk,
			    wc->byte_len ? "" :
			    " (Soft-RoCE's empty SEND after a retry? lab.sh scenario rxeretry)");
			post_recv(g, s);
			return;
		}
		k = slot[0];
	}
	/* credits let the client run at most DEPTH messages ahead of next */
	if (k >= g->next + r->depth) {
		g->st.corrupt++;
		msg(g, "corrupt: message %" PRIu64 " cannot be in flight (expected %" PRIu64
		    ", depth %u)", k, g->next, r->depth);
		post_recv(g, s);
		return;
	}
	if (seq_account(g, k)) {
		if (!check(g, slot, words, k))
			g->st.corrupt++;
		g->st.msgs++;
		progress(g, g->st.msgs);
	}
	post_recv(g, s);
}

/* one completion of the receive queue (write_imm and send servers) */
static void took_recv(struct sg *g, const struct ibv_wc *wc)
{
	g->rx_took++;
	if (wc->status != IBV_WC_SUCCESS)
		wc_error(g, wc);
	else if (!g->stop)
		consume(g, wc);
}

/* tell the client how many messages are consumed: an inline 8-byte WRITE */
static int post_credit(struct sg *g, bool force)
{
	uint64_t v = g->next;
	struct ibv_sge sge = { .addr = (uintptr_t)&v, .length = sizeof(v) };
	struct ibv_send_wr wr = {
		.wr_id = WRID(WK_CREDIT, v, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_INLINE,
	};
	int ret;

	wr.wr.rdma.remote_addr = g->remote.addr;
	wr.wr.rdma.rkey = g->remote.rkey;
	ret = post_send(g, &wr, force, false);
	if (!ret)
		g->credited = v;
	return ret;
}

/*
 * --solicited, the server with nothing received: arm the receive CQ for
 * solicited completions only and sleep in its channel for up to a second.
 * True when an event woke it; false after a quiet second, or when a
 * message was found without its event (a missed wake-up, counted).
 */
static bool wait_solicited(struct sg *g)
{
	struct pollfd p = { .fd = g->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *cq_ctx;
	int n;

	n = ibv_req_notify_cq(g->rcq, 1);
	if (n) {
		msg(g, "Unable to arm the receive CQ: %s", strerror(n));
		g->st.errors++;
		g->stop = true;
		return false;
	}
	/* what came before the arm raises no event: one more look */
	n = cq_poll(g, g->rcq, 1, &wc);
	if (n > 0) {
		took(g, &wc);
		return true;
	}
	n = poll(&p, 1, 1000);
	if (n == 0) {
		n = cq_poll(g, g->rcq, 1, &wc);
		if (n <= 0)
			return false;
		took(g, &wc);
		/* its event may trail the completion a little */
		n = poll(&p, 1, 100);
		if (n == 0) {
			g->st.missed_wakes++;
			msg(g, "a message came and no completion event woke the server for a second");
			return false;
		}
	}
	if (n < 0 || ibv_get_cq_event(g->ch, &cq, &cq_ctx))
		return false;
	ibv_ack_cq_events(cq, 1);
	g->st.wakes++;
	return true;
}

/*
 * write_imm and send: consume receives and return credits until the
 * client's DONE, then until every message it sent is in, or nothing came
 * for 3 s (what is missing then is lost; a completion the client saw has
 * its receive completion already made on this side).
 */
static void server_stream(struct sg *g, struct wire *done, bool *got_done)
{
	uint32_t batch = g->run.depth / 4 ? g->run.depth / 4 : 1;
	uint64_t last_rx = now_ns();
	unsigned int idle = 0;
	struct ibv_wc wc[16];
	struct wire w;
	uint64_t rx;
	bool got, rxd;
	int n, i;

	while (!*got_done || g->next < done->f[D_SENT]) {
		rx = g->rx_took;
		n = cq_poll(g, g->rcq, 16, wc);
		if (n < 0) {
			msg(g, "Unable to poll the receive CQ");
			g->st.errors++;
			g->stop = true;
		}
		for (i = 0; i < n; i++)
			took(g, &wc[i]);
		if (poll_send(g) > 0 || n > 0)
			idle = 0;
		rxd = g->rx_took != rx;
		if (rxd)
			last_rx = now_ns();
		if (g->stop)
			break;
		if (g->next - g->credited >= batch && post_credit(g, false))
			break;
		if (rxd)
			continue;
		if (*got_done && now_ns() - last_rx > 3 * NS)
			break;
		/* slept without an event: look at the peer and the watchdog now */
		if (g->ch && !wait_solicited(g))
			idle = 255;
		if (idle_check(g, &idle, &w, &got))
			break;
		if (got && w.type == MSG_DONE) {
			*done = w;
			*got_done = true;
			last_rx = now_ns();
		} else if (got) {
			msg(g, "unexpected message %u from the client", w.type);
			g->stop = true;
			break;
		}
	}
	g->t1 = now_ns();
	/* a last, signaled credit, so that drain() knows every credit landed */
	if (!g->stop && (g->sq.since_sig || g->next != g->credited))
		post_credit(g, true);
	if (g->stop && !g->timed_out) {
		/* the client may be waiting for credits: stop it rather than let it stall */
		memset(&w, 0, sizeof(w));
		tcp_send(g, MSG_ABORT, &w);
	}
	drain(g);
}

/* write: every slot holds the last message written to it, and the checksums agree */
static void server_check_write(struct sg *g, const struct wire *done)
{
	const struct run *r = &g->run;
	uint64_t words = r->slot / 8, n = done->f[D_SENT], s, k, i;
	const uint64_t *slot;

	g->st.msgs = n;
	for (s = 0; s < r->depth; s++) {
		slot = g->buf + s * words;
		if (s >= n) {
			for (i = 0; i < words && !slot[i]; i++)
				;
			if (i < words) {
				g->st.corrupt++;
				msg(g, "corrupt: slot %" PRIu64 " was never written but is not zero", s);
			}
			continue;
		}
		k = s + (n - 1 - s) / r->depth * r->depth;
		if (!check(g, slot, words, k))
			g->st.corrupt++;
	}
	if (checksum(g->buf, words * r->depth) != done->f[D_CSUM]) {
		msg(g, "corrupt: the buffer's checksum differs from the client's");
		if (!g->st.corrupt)
			g->st.corrupt++;
	}
}

/* atomic: the counter holds every successful add, and at most the ones in doubt */
static void server_check_atomic(struct sg *g, const struct wire *done)
{
	uint64_t c = __atomic_load_n(&g->aux[0], __ATOMIC_ACQUIRE);

	g->st.msgs = c;
	if (c < done->f[D_COMPLETED] || c > done->f[D_SENT]) {
		g->st.corrupt++;
		msg(g, "corrupt: the counter is %" PRIu64 " after %" PRIu64 " successful and %" PRIu64
		    " posted fetch-and-adds", c, done->f[D_COMPLETED], done->f[D_SENT]);
	}
}

/* ---- the two roles ---- */

/* --signal-all: send WRs with no completion yet, good or error */
static int64_t unfinished(const struct sg *g)
{
	return (int64_t)(g->sq.posted - g->sq.done - g->st.send_errors);
}

static void summary(struct sg *g, bool ok, const char *peer)
{
	const struct run *r = &g->run;
	uint64_t msg_bytes = r->mode == MODE_ATOMIC ? 8 : r->mode == MODE_SEND ? r->chunk : r->slot;

	g->passed = ok;
	g->peer = peer;
	flockfile(stdout);	/* -P: one line, whole */
	if (g->idx >= 0)
		printf("shiftgen[%d]: role=%s ", g->idx, g->role);
	else if (g->o->conns > 1)
		printf("shiftgen: role=%s conns=%u ", g->role, g->o->conns);
	else
		printf("shiftgen: role=%s ", g->role);
	if (g->is_server) {
		printf("mode=%s msgs=%" PRIu64 " bytes=%" PRIu64 " lost=%" PRIu64
		       " dup=%" PRIu64 " reorder=%" PRIu64 " corrupt=%" PRIu64 " errors=%" PRIu64
		       " peer_errors=%" PRIu64, mode_names[r->mode], g->st.msgs,
		       g->st.msgs * msg_bytes, g->st.lost, g->st.dup, g->st.reorder, g->st.corrupt,
		       g->st.errors, g->st.peer_errors);
		if (r->mode == MODE_ATOMIC)
			printf(" counter=%" PRIu64, g->st.msgs);
		if (r->solicited)
			printf(" wakes=%" PRIu64 " missed_wakes=%" PRIu64, g->st.wakes,
			       g->st.missed_wakes);
	} else {
		printf("mode=%s sent=%" PRIu64 " completions=%" PRIu64
		       " bytes=%" PRIu64 " errors=%" PRIu64 " corrupt=%" PRIu64,
		       mode_names[r->mode], g->st.sent, g->st.completed,
		       g->st.completed * msg_bytes, g->st.errors, g->st.corrupt);
	}
	if (g->o->signal_all)
		printf(" unfinished=%" PRId64, unfinished(g));
	printf(" setup_ms=%" PRIu64, g->setup_ns / 1000000);
	if (g->idx < 0 && g->o->conns > 1)
		printf(" setup_max_ms=%" PRIu64 " teardown_ms=%" PRIu64 " teardown_max_ms=%" PRIu64,
		       g->setup_max_ns / 1000000, g->teardown_ns / 1000000,
		       g->teardown_max_ns / 1000000);
	printf(" elapsed=%.3f%s%s result=%s\n", elapsed(g), peer ? " peer=" : "", peer ? peer : "",
	       ok ? "ok" : "fail");
	fflush(stdout);
	funlockfile(stdout);
}

static bool errors_allowed(const struct run *r)
{
	return r->mode == MODE_ATOMIC && r->expect_errors;
}

static void run_from_opts(struct run *r, const struct opts *o)
{
	r->mode = o->mode;
	r->chunk = o->chunk;
	r->chunks = o->chunks;
	r->depth = o->depth;
	r->expect_errors = o->expect_errors;
	r->spare = o->spare_secs;
	r->solicited = o->solicited;
	r->reply = o->reply;
	r->watchdog = o->watchdog;
	r->slot = r->mode == MODE_ATOMIC ? 0 :
		  (uint64_t)r->chunk * (r->mode == MODE_SEND ? 1 : r->chunks);
}

/* ---- --reply ---- */

/* The client's receive for the server's reply: aux[2]. */
static int reply_recv(struct sg *g)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&g->aux[2],
		.length = sizeof(g->aux[2]),
		.lkey = g->aux_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WRID(WK_REPLY, 0, 0), .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(g->qp, &wr, &bad);

	if (ret)
		msg(g, "Unable to post the reply's receive: %s", strerror(ret));
	return -ret;
}

/* One completion of @cq, by g->deadline: 1, or 0 at the deadline, or -errno. */
static int reply_poll(struct sg *g, struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n;

	while (!(n = ibv_poll_cq(cq, 1, wc)) && !finish_now && now_ns() < g->deadline)
		sched_yield();
	if (n < 0) {
		msg(g, "Unable to poll for the reply: %s", strerror(-n));
		return n;
	}
	return n;
}

/*
 * The server: its checksum, sent into the client's receive once the
 * client is DONE.  Returns true if it completed good.
 */
static bool reply_send(struct sg *g)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&g->aux[2],
		.length = sizeof(g->aux[2]),
		.lkey = g->aux_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WRID(WK_REPLY, 0, 0), .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	uint64_t t0 = now_ns();
	int ret;

	g->aux[2] = checksum(g->buf, g->buf_len / 8);
	ret = ibv_post_send(g->qp, &wr, &bad);
	if (ret) {
		msg(g, "Unable to post the reply: %s", strerror(ret));
		return false;
	}
	ret = reply_poll(g, g->scq, &wc);
	if (ret <= 0) {
		if (!ret)
			msg(g, "the reply did not complete");
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr.wr_id) {
		msg(g, "the reply completed with status %s (wr_id 0x%" PRIx64 ")",
		    ibv_wc_status_str(wc.status), wc.wr_id);
		return false;
	}
	printf("shiftgen: role=server reply sent in %.3f s\n", (now_ns() - t0) / 1e9);
	return true;
}

/* The client: the server's reply, its own checksum @csum. */
static bool reply_check(struct sg *g, uint64_t csum)
{
	struct ibv_wc wc;
	int ret = reply_poll(g, g->rcq, &wc);

	if (ret <= 0) {
		if (!ret)
			msg(g, "no reply from the server");
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != WRID(WK_REPLY, 0, 0) ||
	    wc.opcode != IBV_WC_RECV || (wc.wc_flags & IBV_WC_WITH_IMM) ||
	    wc.byte_len != sizeof(g->aux[2])) {
		msg(g, "the reply's receive completed with status %s, wr_id 0x%" PRIx64 ", opcode %d, %u bytes%s",
		    ibv_wc_status_str(wc.status), wc.wr_id, wc.opcode, wc.byte_len,
		    wc.wc_flags & IBV_WC_WITH_IMM ? ", with immediate data" : "");
		return false;
	}
	if (g->aux[2] != csum) {
		msg(g, "the reply says checksum 0x%" PRIx64 ", ours is 0x%" PRIx64, g->aux[2], csum);
		return false;
	}
	printf("shiftgen: role=client reply ok\n");
	return true;
}

/* the client's run on g->ctx, opened: 0 if it passed, else -errno */
static int client_run(struct sg *g)
{
	const char *peer = "none";
	struct wire w = { 0 };
	bool ok = false, replied = true;
	uint64_t csum = 0, t;
	int ret;

	t = now_ns();
	ret = create_resources(g, false);
	g->setup_ns += now_ns() - t;
	if (ret)
		goto out;
	ret = tcp_connect(g);
	if (ret)
		goto out;

	g->local.rkey = g->aux_mr->rkey;
	g->local.addr = (uintptr_t)&g->aux[0];
	put_endpoint(&w, &g->local);
	w.f[W_MODE] = g->run.mode;
	w.f[W_CHUNK] = g->run.chunk;
	w.f[W_CHUNKS] = g->run.chunks;
	w.f[W_DEPTH] = g->run.depth;
	w.f[W_FLAGS] = (g->run.expect_errors ? HELLO_EXPECT : 0) | (g->spare ? HELLO_SPARE : 0) |
		       (g->run.solicited ? HELLO_SOLICITED : 0) | (g->run.reply ? HELLO_REPLY : 0);
	w.f[W_SPARE_QPN] = g->spare ? g->spare->qp_num : 0;
	w.f[W_WATCHDOG] = g->run.watchdog;
	ret = tcp_send(g, MSG_HELLO, &w);
	if (!ret)
		ret = tcp_recv(g, &w);
	if (ret) {
		msg(g, "Unable to exchange QP attributes with the server: %s", strerror(-ret));
		goto out;
	}
	if (w.type != MSG_READY || w.f[W_STATUS]) {
		msg(g, "the server refused the run (message %u, status %" PRIu64 ")",
		    w.type, w.f[W_STATUS]);
		ret = -ECONNREFUSED;
		goto out;
	}
	get_endpoint(&g->remote, &w);
	g->spare_rqpn = w.f[W_SPARE_QPN];
	if (g->spare && !g->spare_rqpn) {
		msg(g, "the server made no spare QP: is it an older shiftgen?");
		ret = -EPROTO;
		goto out;
	}
	t = now_ns();
	ret = qp_connect(g);
	g->setup_ns += now_ns() - t;
	if (!ret && g->run.reply)
		ret = reply_recv(g);
	if (ret)
		goto out;
	if (g->idx >= 0)
		/* a test's cue that every connection is up */
		say_connected(g);

	g->t0 = now_ns();
	if (g->spare)
		g->spare_at = g->t0 + g->o->spare_secs * NS;
	if (g->run.mode == MODE_ATOMIC)
		client_atomic(g);
	else
		client_stream(g);
	g->t1 = now_ns();

	/* DONE and RESULT even after errors: the server's summary needs the totals */
	if (!g->timed_out) {
		memset(&w, 0, sizeof(w));
		w.f[D_SENT] = g->st.sent;
		w.f[D_COMPLETED] = g->st.completed;
		w.f[D_ERRORS] = g->st.errors;
		w.f[D_CORRUPT] = g->st.corrupt;
		if (g->run.mode == MODE_WRITE)
			w.f[D_CSUM] = csum = checksum(g->buf, g->buf_len / 8);
		ret = tcp_send(g, MSG_DONE, &w);
		/* the server's reply comes before its RESULT, if it does */
		if (!ret && g->run.reply)
			replied = reply_check(g, csum);
		/* an ABORT may still be queued ahead of the RESULT */
		while (!ret && !(ret = tcp_recv(g, &w)) && w.type == MSG_ABORT)
			;
		if (ret)
			msg(g, "Unable to get the server's result: %s", strerror(-ret));
		else if (w.type != MSG_RESULT)
			msg(g, "unexpected message %u instead of the server's result", w.type);
		else
			peer = w.f[RS_OK] ? "ok" : "fail";
		/* the server's verdict here too: a log cut to its tail (CI's) keeps it */
		if (!ret && w.type == MSG_RESULT && !w.f[RS_OK])
			msg(g, "the server failed the run: msgs=%" PRIu64 " lost=%" PRIu64
			    " dup=%" PRIu64 " reorder=%" PRIu64 " corrupt=%" PRIu64 " errors=%" PRIu64,
			    w.f[RS_MSGS], w.f[RS_LOST], w.f[RS_DUP], w.f[RS_REORDER],
			    w.f[RS_CORRUPT], w.f[RS_ERRORS]);
	}
	ok = !g->timed_out && !g->st.corrupt && !strcmp(peer, "ok") && replied &&
	     (!g->st.errors || errors_allowed(&g->run)) &&
	     !(g->o->signal_all && unfinished(g)) &&
	     (g->st.completed == g->st.sent || g->st.errors);
	summary(g, ok, peer);
	ret = ok ? 0 : -EIO;
out:
	teardown(g);
	return ret;
}

/* the client's HELLO against what this server was told: 0 or why not */
static const char *hello_refusal(const struct opts *o, const struct wire *w)
{
	uint64_t m = w->f[W_MODE], chunk = w->f[W_CHUNK], chunks = w->f[W_CHUNKS];
	uint64_t depth = w->f[W_DEPTH];

	if (m >= MODE__MAX || !chunk || chunk % 8 || chunk > MAX_BUF || !chunks ||
	    chunks > MAX_CHUNKS || !depth || depth > MAX_DEPTH ||
	    chunk * (m == MODE_SEND ? 1 : chunks) * depth > MAX_BUF || !w->f[W_WATCHDOG] ||
	    w->f[W_WATCHDOG] > 86400 + 30 || !(w->f[W_FLAGS] & HELLO_SPARE) != !w->f[W_SPARE_QPN] ||
	    ((w->f[W_FLAGS] & HELLO_SOLICITED) && m != MODE_WRITE_IMM && m != MODE_SEND) ||
	    ((w->f[W_FLAGS] & HELLO_REPLY) && (m != MODE_WRITE || o->one_cq || o->cq_ex || o->srq)))
		return "its parameters are out of range";
	if (((o->set & SET_MODE) && m != o->mode) ||
	    ((o->set & SET_CHUNK) && chunk != o->chunk) ||
	    ((o->set & SET_CHUNKS) && chunks != o->chunks) ||
	    ((o->set & SET_DEPTH) && depth != o->depth) ||
	    ((o->set & SET_EXPECT) && !(w->f[W_FLAGS] & HELLO_EXPECT)) ||
	    ((o->set & SET_SPARE) && !(w->f[W_FLAGS] & HELLO_SPARE)) ||
	    ((o->set & SET_SOLICITED) && !(w->f[W_FLAGS] & HELLO_SOLICITED)) ||
	    ((o->set & SET_REPLY) && !(w->f[W_FLAGS] & HELLO_REPLY)))
		return "its -m/-s/-c/-q/--expect-errors/--spare-qp/--solicited/--reply differ from the server's";
	return NULL;
}

/* the server's run with the client on g->sock, on g->ctx: 0 if it passed,
 * else -errno */
static int server_run(struct sg *g)
{
	const struct opts *o = g->o;
	struct wire w = { 0 }, done = { 0 };
	bool got_done = false, ok;
	const char *why;
	uint64_t t;
	int ret;
	uint32_t s;

	ret = tcp_recv(g, &w);
	if (!ret && w.type != MSG_HELLO)
		ret = -EPROTO;
	if (ret) {
		msg(g, "Unable to get the client's HELLO: %s", strerror(-ret));
		goto out;
	}
	why = hello_refusal(o, &w);
	if (why) {
		msg(g, "refusing the client: %s", why);
		memset(&w, 0, sizeof(w));
		w.f[W_STATUS] = 1;
		tcp_send(g, MSG_READY, &w);
		ret = -EINVAL;
		goto out;
	}
	/* the client's parameters rule; outlive its watchdog to hear its DONE */
	g->run.mode = w.f[W_MODE];
	g->run.chunk = w.f[W_CHUNK];
	g->run.chunks = w.f[W_CHUNKS];
	g->run.depth = w.f[W_DEPTH];
	g->run.expect_errors = w.f[W_FLAGS] & HELLO_EXPECT;
	g->run.spare = w.f[W_FLAGS] & HELLO_SPARE;
	g->run.solicited = w.f[W_FLAGS] & HELLO_SOLICITED;
	g->run.reply = w.f[W_FLAGS] & HELLO_REPLY;
	g->spare_rqpn = w.f[W_SPARE_QPN];
	g->run.watchdog = w.f[W_WATCHDOG] + 5;
	g->run.slot = g->run.mode == MODE_ATOMIC ? 0 :
		      (uint64_t)g->run.chunk * (g->run.mode == MODE_SEND ? 1 : g->run.chunks);
	g->deadline = now_ns() + g->run.watchdog * NS;
	alarm(g->run.watchdog + 5);
	get_endpoint(&g->remote, &w);

	t = now_ns();
	ret = create_resources(g, true);
	g->setup_ns += now_ns() - t;
	if (ret)
		goto out;
	if (g->run.mode == MODE_WRITE_IMM || g->run.mode == MODE_SEND)
		for (s = 0; s < g->run.depth; s++) {
			ret = post_recv(g, s);
			if (ret)
				goto out;
		}
	t = now_ns();
	ret = qp_connect(g);
	g->setup_ns += now_ns() - t;
	if (ret)
		goto out;
	if (g->idx >= 0)
		say_connected(g);
	memset(&w, 0, sizeof(w));
	if (g->run.mode == MODE_ATOMIC) {
		g->local.rkey = g->aux_mr->rkey;
		g->local.addr = (uintptr_t)&g->aux[0];
	} else {
		g->local.rkey = g->mr->rkey;
		g->local.addr = (uintptr_t)g->buf;
	}
	put_endpoint(&w, &g->local);
	w.f[W_SPARE_QPN] = g->spare ? g->spare->qp_num : 0;
	ret = tcp_send(g, MSG_READY, &w);
	if (ret) {
		msg(g, "Unable to answer the client: %s", strerror(-ret));
		goto out;
	}

	g->t0 = now_ns();
	if (g->run.mode == MODE_WRITE_IMM || g->run.mode == MODE_SEND)
		server_stream(g, &done, &got_done);
	/* write, atomic, or a stream that stopped early: wait for the client's DONE */
	while (!got_done && !g->timed_out) {
		ret = tcp_recv(g, &done);
		if (ret) {
			msg(g, "Unable to get the client's DONE: %s",
			    ret == -ETIMEDOUT ? "watchdog expired" : strerror(-ret));
			break;
		}
		got_done = done.type == MSG_DONE;
	}
	if (!g->t1)
		g->t1 = now_ns();

	if (got_done) {
		g->st.peer_errors = done.f[D_ERRORS];
		if (g->run.mode == MODE_WRITE && !done.f[D_ERRORS])
			server_check_write(g, &done);
		if (g->run.reply && !reply_send(g))
			g->st.errors++;
		else if (g->run.mode == MODE_WRITE)
			g->st.msgs = done.f[D_COMPLETED];	/* content unknown after errors */
		else if (g->run.mode == MODE_ATOMIC)
			server_check_atomic(g, &done);
		/* what the client knows completed must all be here */
		else if (g->next < done.f[D_COMPLETED])
			g->st.lost += done.f[D_COMPLETED] - g->next;
	}
	ok = got_done && !g->timed_out && !g->st.lost && !g->st.dup && !g->st.reorder &&
	     !g->st.corrupt && !g->st.errors && !g->st.missed_wakes &&
	     !(g->o->signal_all && unfinished(g)) &&
	     (!g->st.peer_errors || errors_allowed(&g->run));
	if (got_done) {
		memset(&w, 0, sizeof(w));
		w.f[RS_OK] = ok;
		w.f[RS_MSGS] = g->st.msgs;
		w.f[RS_LOST] = g->st.lost;
		w.f[RS_DUP] = g->st.dup;
		w.f[RS_REORDER] = g->st.reorder;
		w.f[RS_CORRUPT] = g->st.corrupt;
		w.f[RS_ERRORS] = g->st.errors;
		if (tcp_send(g, MSG_RESULT, &w))
			msg(g, "Unable to send the result to the client");
	}
	summary(g, ok, NULL);
	ret = ok ? 0 : -EIO;
out:
	teardown(g);
	return ret;
}

static int client(struct sg *g)
{
	int ret;

	ret = open_device(g);
	if (ret)
		return ret;
	return client_run(g);
}

static int server(struct sg *g)
{
	int lfd, ret;

	ret = open_device(g);
	if (ret)
		return ret;
	lfd = tcp_listen(g, 1);
	if (lfd < 0) {
		ret = lfd;
		goto out;
	}
	ret = tcp_take(g, lfd);
	close(lfd);
	if (ret)
		goto out;
	return server_run(g);
out:
	teardown(g);
	return ret;
}

/* -P: one connection of the run, in a thread of its own */
struct conn {
	pthread_t thread;
	struct sg g;
	int ret;
};

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	c->ret = c->g.is_server ? server_run(&c->g) : client_run(&c->g);
	return NULL;
}

/* @c's counts added to @t's, for the summary of all connections */
static void conn_add(struct sg *t, const struct sg *c)
{
	t->st.sent += c->st.sent;
	t->st.completed += c->st.completed;
	t->st.msgs += c->st.msgs;
	t->st.lost += c->st.lost;
	t->st.dup += c->st.dup;
	t->st.reorder += c->st.reorder;
	t->st.corrupt += c->st.corrupt;
	t->st.errors += c->st.errors;
	t->st.peer_errors += c->st.peer_errors;
	t->st.wakes += c->st.wakes;
	t->st.missed_wakes += c->st.missed_wakes;
	t->st.send_errors += c->st.send_errors;
	t->sq.posted += c->sq.posted;
	t->sq.done += c->sq.done;
	if (c->t0 && (!t->t0 || c->t0 < t->t0))
		t->t0 = c->t0;
	if (c->t1 > t->t1)
		t->t1 = c->t1;
	t->setup_ns += c->setup_ns;
	if (c->setup_ns > t->setup_max_ns)
		t->setup_max_ns = c->setup_ns;
	t->teardown_ns += c->teardown_ns;
	if (c->teardown_ns > t->teardown_max_ns)
		t->teardown_max_ns = c->teardown_ns;
}

/*
 * The -P run: CONNS connections on one context of @g's device, each in its
 * own thread (the server's as its clients arrive), then the summary of
 * all.  0 if every connection passed, else -errno.
 */
static int run_conns(struct sg *g)
{
	unsigned int n = g->o->conns, i, started = 0;
	bool ok = true, peer_ok = true;
	struct sg total;
	struct conn *c;
	int lfd = -1, ret;

	c = calloc(n, sizeof(*c));
	if (!c) {
		msg(g, "Unable to allocate %u connections", n);
		return -ENOMEM;
	}
	ret = open_device(g);
	if (ret)
		goto out_free;
	if (g->is_server) {
		lfd = tcp_listen(g, n);
		if (lfd < 0) {
			ret = lfd;
			goto out_close;
		}
	}
	for (i = 0; i < n; i++) {
		c[i].g = *g;
		c[i].g.idx = i;
		c[i].g.ctx_shared = true;
		if (g->is_server) {
			ret = tcp_take(&c[i].g, lfd);
			if (ret)
				break;
		}
		ret = -pthread_create(&c[i].thread, NULL, conn_main, &c[i]);
		if (ret) {
			msg(&c[i].g, "Unable to start its thread: %s", strerror(-ret));
			if (c[i].g.sock >= 0)
				close(c[i].g.sock);
			break;
		}
		started++;
	}
	if (lfd >= 0)
		close(lfd);

	total = *g;
	memset(&total.st, 0, sizeof(total.st));
	memset(&total.sq, 0, sizeof(total.sq));
	total.t0 = total.t1 = 0;
	total.setup_ns = total.setup_max_ns = total.teardown_ns = total.teardown_max_ns = 0;
	for (i = 0; i < started; i++) {
		pthread_join(c[i].thread, NULL);
		conn_add(&total, &c[i].g);
		ok = ok && !c[i].ret && c[i].g.passed;
		peer_ok = peer_ok && c[i].g.peer && !strcmp(c[i].g.peer, "ok");
	}
	if (started) {
		total.run = c[0].g.run;		/* the server's: the client's HELLO */
	} else {
		ok = false;
		peer_ok = false;
	}
	if (started < n) {
		msg(g, "only %u of %u connections ran", started, n);
		ok = false;
	}
	summary(&total, ok, g->is_server ? NULL : peer_ok ? "ok" : "fail");
	ret = ok ? 0 : -EIO;
out_close:
	ibv_close_device(g->ctx);
	g->ctx = NULL;
out_free:
	free(c);
	return ret;
}

/* SIGUSR1: the client's next message is its last */
static void finish(int sig)
{
	(void)sig;
	finish_now = 1;
}

/* SIGUSR2 (--poll-in-batch): the next batch stays open, or the batch held
 * open is let go */
static void hold(int sig)
{
	(void)sig;
	if (hold_next == 2)
		hold_release = 1;
	else
		hold_next = 1;
}

/* the last resort, should a verbs call itself block past the watchdog */
static void backstop(int sig)
{
	static const char m[] = "shiftgen: watchdog: still running well past the deadline, giving up\n";

	(void)sig;
	if (write(STDERR_FILENO, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sg g = { .sock = -1, .idx = -1 };
	int ret;

	parse_args(argc, argv, &o);
	shid_on = o.shift_ids;
	g.o = &o;
	g.is_server = !o.server;
	g.role = g.is_server ? "server" : "client";
	run_from_opts(&g.run, &o);
	g.deadline = now_ns() + o.watchdog * NS;
	signal(SIGALRM, backstop);
	signal(SIGUSR1, finish);
	if (o.poll_in_batch)
		signal(SIGUSR2, hold);
	alarm(o.watchdog + 5);
	srand48(now_ns() ^ getpid());

	if (o.conns > 1)
		ret = run_conns(&g);
	else
		ret = g.is_server ? server(&g) : client(&g);
	return ret ? 1 : 0;
}
