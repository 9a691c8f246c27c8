/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shadow.h: the backup resources ("shadow control verbs", SHIFT paper 4.2).
 *
 * For every PD, MR, CQ and QP the application creates on a device, the
 * library creates the same on the backup port that the kernel's pair table
 * names, with the same attributes, and publishes what a peer needs to reach
 * them (QP number, GID, PSN; MR keys) in the key-value store:
 *
 *   qp:<default GID>:<default QPN>  ->  "<backup GID> <backup QPN> <backup PSN> <node GUID>
 *                                        <default RQ PSN> <mailbox addr> <mailbox rkey>
 *                                        <backup mailbox addr> <backup mailbox rkey> <joined>"
 *   mr:<node GUID>:<default rkey>   ->  "<backup rkey>"
 *
 * <joined> is 0, then 1 once the backup QP has joined the peer's (RTS); a
 * QP is protected once both have (qpconn.c).
 *
 * GIDs are 32 hex digits, numbers decimal, the node GUID 16 hex digits (the
 * default device's, as the health page has it).
 *
 * The application's thread only records; one background thread per process
 * does the work, best effort: a step whose input is not there yet (the
 * peer's backup QP not published) is skipped and retried on the next pass,
 * so that no order of setup between hosts can deadlock (paper B.1).  If a
 * backup cannot be made (no backup port, no store), the QP runs unprotected
 * after one log line: nothing the application calls fails because of it.
 *
 * The thread and its pass are shadow.c; the records registry.c; the twins
 * twin.c; failing back failback.c (asking) and fbanswer.c (answering); a
 * QP's connection from its recorded steps qpconn.c; the look ahead for the
 * peer's keys scout.c; the store's connection and batch storepass.c.
 * What these share among themselves is in shadow_int.h.
 */
#ifndef _SHIFTU_SHADOW_H
#define _SHIFTU_SHADOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct shiftu_ctx;
struct shiftu_hs_msg;
struct shiftu_vqp;

/* A PD and its twin on the backup context.  Under shadow_lock. */
struct shiftu_pd {
	struct ibv_pd *app;
	struct ibv_pd *bak;
	struct shiftu_ctx *sctx;
	struct shiftu_pd *next;
};

/* An MR and its twin.  Under mr_lock (reclist.c); lookups copy out. */
struct shiftu_mr {
	struct ibv_mr *app;
	struct ibv_mr *bak;
	struct shiftu_pd *pd;
	void *addr;
	size_t length;
	uint64_t iova;
	unsigned int access;
	int dmabuf_fd;			/* the library's own dup, or -1 */
	uint64_t dmabuf_offset;
	bool published;
	bool failed;			/* no twin possible: not tried again */
	struct shiftu_mr *next;
};

/*
 * A CQ and its twin.  The twin receives the backup QPs' completions; while
 * any QP of the CQ is on its backup, or completions wait in @stash, the
 * application's poll_cq takes the slow path (failover.c), which serves the
 * stash first, then the CQ, then the twin.  @lock serialises that path
 * with a failover draining the CQ from a posting thread.
 */
struct shiftu_cq {
	struct ibv_cq *app;
	struct ibv_cq *bak;
	struct shiftu_ctx *sctx;
	/*
	 * Under cq_lock: the entries the application asked for (at create,
	 * or its last resize), and the protected QPs that hold room for a
	 * failover's completions beside them (shiftu_cq_hold()).
	 */
	int asked;
	unsigned int room_qps;
	pthread_mutex_t lock;
	struct ibv_wc *stash;		/* completions polled by the library */
	unsigned int stash_n, stash_head, stash_cap;
	/* this CQ's QPs that post on their twins: matched by the twin's QPN */
	struct shiftu_vqp *twins[64];
	unsigned int n_twins;
	unsigned int slow_leftover;	/* slow polls owed to failed-back QPs */
	unsigned int draining;		/* drains under way on it (drain.c) */
	/* library threads waiting for the lock: the application's slow
	 * polls give way to them (cq.c); atomic */
	unsigned int urgent;
	/* a twin's send completed while its QP waits for its fence
	 * (shiftu_cq_fences()); atomic */
	bool fence_due;
	/* one of its twins' QPs may go back now (shiftu_back_due()); atomic */
	bool back_due;
	/* the peers' control messages a poll took beyond its caller's
	 * SHIFTU_HS_BATCH, oldest first, until shiftu_hs_unpark() */
	struct shiftu_hs_msg *park;
	unsigned int park_n, park_cap;
	bool unparking;			/* one thread hands them over at a time */
	/* the application's channel's bell (bell.c): set once, then read-only */
	struct ibv_qp *bell;
	struct ibv_pd *bell_pd;
	int armed;			/* SHIFTU_ARM_*: since the bell last rang (atomic) */
	struct shiftu_cq *next;
};

/* PDs and QPs are under shadow_lock, MRs and CQs under leaf locks of their
 * own (reclist.c); cq_lock is the CQ records' list's (lockorder.h). */
extern pthread_mutex_t shadow_lock;
extern pthread_mutex_t cq_lock SHIFTU_HIDDEN;

void shiftu_shadow_ctx(struct shiftu_ctx *sctx);
void shiftu_shadow_ctx_gone(struct shiftu_ctx *sctx);
void shiftu_shadow_pd(struct ibv_pd *pd);
void shiftu_shadow_pd_gone(struct ibv_pd *pd);
void shiftu_shadow_mr(struct ibv_mr *mr, void *addr, size_t length,
		      uint64_t iova, unsigned int access);
/* @mr registers @length bytes at @offset of the dma-buf @fd: its twin is
 * registered from the same dma-buf (the library keeps a dup of @fd). */
void shiftu_shadow_dmabuf_mr(struct ibv_mr *mr, uint64_t offset, size_t length,
			     uint64_t iova, int fd, unsigned int access);
void shiftu_shadow_mr_gone(struct ibv_mr *mr);
/*
 * ibv_rereg_mr(@mr, @flags, @pd, @addr, @length, @access) is about to run:
 * the twin goes (its key too, as the rkey may change); then, with the call's
 * result @ret, shiftu_shadow_mr_rereg_done() records what @mr now is and
 * makes a new twin.  *@rec holds the record in between (NULL: not ours).
 */
void shiftu_shadow_mr_rereg(struct ibv_mr *mr, struct shiftu_mr **rec);
void shiftu_shadow_mr_rereg_done(struct shiftu_mr *rec, int ret, int flags,
				 void *addr, size_t length, int access);
/* A CQ was made for the application's @asked entries (and ours beside). */
void shiftu_shadow_cq(struct ibv_cq *cq, int asked);
void shiftu_shadow_cq_gone(struct ibv_cq *cq);
/*
 * Room on CQs @scq and @rcq (one, or two) for a failover's completions of
 * one more protected QP (SHIFTU_CQ_PER_QP on each): a CQ whose room is
 * taken grows (ibv_resize_cq), never past the device's max_cqe.  Returns
 * 0, or -ENOSPC (at the device's limit), -ENOENT (not recorded) or the
 * provider's error: the QP then goes unprotected.  shiftu_cq_release()
 * gives the room back when the QP goes (the CQ keeps its size, for the
 * next one).  Context: the create and destroy verbs; takes cq_lock.
 */
int shiftu_cq_hold(struct ibv_cq *scq, struct ibv_cq *rcq);
void shiftu_cq_release(struct ibv_cq *scq, struct ibv_cq *rcq);
/*
 * ibv_resize_cq(@cq, @cqe) of the application: @cqe entries and the room
 * its protected QPs hold beside them, as far as the device goes.
 */
int shiftu_cq_resize(struct ibv_cq *cq, int cqe);
/* A QP was created (@attr as the application gave it) or modified. */
void shiftu_shadow_qp(struct shiftu_vqp *vq, const struct ibv_qp_init_attr *attr);
void shiftu_shadow_qp_modified(struct shiftu_vqp *vq, const struct ibv_qp_attr *attr,
			       int mask);
void shiftu_shadow_qp_gone(struct shiftu_vqp *vq);

/* Ask the shadow thread for a pass soon (a twin to reset).  Any context. */
void shiftu_shadow_poke(void);

/* The CQ record of @cq, NULL if none.  Takes the CQ list's lock. */
struct shiftu_cq *shiftu_cq_find(const struct ibv_cq *cq);

/*
 * Reset @vq's twin, which a move has drained, and join it again to the
 * peer's with the PSNs both sides published, a control receive at its
 * head.  Returns 0 or -errno (then the QP is left unprotected).  Context:
 * fo_lock held (the QP's connection steps are settled by then).
 */
int shiftu_twin_renew(struct shiftu_vqp *vq);

/*
 * A control message of the peer's came to @vq's twin: the peer's twin has
 * joined ours, whether or not the store has said so yet, and ours is
 * ready if it is in RTS (the first join only).  Context: fo_lock held.
 */
void shiftu_twin_heard(struct shiftu_vqp *vq);

/*
 * The backup lkey of local @lkey on @vq's device, and the peer's backup
 * rkey of @rkey (as the shadow thread's look ahead fetched it from the
 * store).  Return 0 or -ENOENT; shiftu_backup_rkey() -EAGAIN for a key
 * not looked up yet, which it asks the shadow thread for (the caller
 * waits: shiftu_keys_came()).  Cold; any thread; fo_lock for the rkey.
 */
int shiftu_backup_lkey(struct shiftu_vqp *vq, uint32_t lkey, uint32_t *out);
int shiftu_backup_rkey(struct shiftu_vqp *vq, uint32_t rkey, uint32_t *out);

#endif /* _SHIFTU_SHADOW_H */
