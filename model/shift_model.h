/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shift_model.h: the codes model/shift.pml and model/glue.c share.  Spin
 * runs the model through cpp, so both include this one header; glue.c
 * checks at compile time that the send states and the handshake's
 * decisions are the values userlib/proto.h gives them, so that the model
 * branches on exactly what the C decided.
 */
#ifndef _SHIFT_MODEL_H
#define _SHIFT_MODEL_H

/*
 * Requests per side (the script an application posts), control messages
 * per side (a failover's, a failback's, and one to spare), and the slots
 * of a queue a side sends on (its twin, its default QP once reset).
 */
#define M_L		3
#define M_C		3
#define M_Q		(M_L + 2)

/* The model's opcodes (glue.c maps them to enum ibv_wr_opcode). */
#define OP_NONE		0	/* the script ended */
#define OP_WRITE	1	/* data: RDMA WRITE */
#define OP_WIMM		2	/* notification: RDMA WRITE_WITH_IMM */
#define OP_SEND		3	/* notification: SEND */
#define OP_READ		4	/* RDMA READ */
#define OP_FADD		5	/* atomic: FETCH_AND_ADD */

/* Send states: enum shiftu_send_state and proto.h's internal ones. */
#define S_DEFAULT	1
#define S_FALLBACK	2
#define S_WAIT_SIGNALED	3	/* a one-sided failback: the next signaled
				 * request on the twin is the fence */
#define S_WAIT_DRAINED	4	/* the fence posted, later requests held */
#define S_HANDSHAKE	64	/* 0x40: spin reads no hexadecimal */
#define S_DEAD		128	/* 0x80 */

/* enum shiftu_sends_next */
#define N_REPLAY	0
#define N_HOLD		1
#define N_GIVE_UP	2

/* enum shiftu_hs_act */
#define A_OLD		0
#define A_STALE		1
#define A_FOLLOW_BACK	2
#define A_REJOIN	3
#define A_FOLLOW_OVER	4
#define A_ANSWER	5
#define A_DONE		6
#define A_REPLAY	7
#define A_NOTE		8

/* enum shiftu_fb_reply */
#define F_GRANT		0
#define F_BUSY		1
#define F_LEADS		2
#define F_DOWN		3

/*
 * The model's switches (glue.c's model_opts(), chosen like its seeds:
 * make SEED=...): seeded defects the model must catch, and the open
 * findings, the conditions under which it shows the library's defects
 * (shift.pml says which).
 */
#define O_STAY_SPEAKS		1	/* SEED_STAY_SPEAKS */
#define O_NO_DRAIN		2	/* SEED_FAILBACK_NO_DRAIN */
#define O_ASKER_NO_CTRL	4	/* SEED_ASKER_NO_CTRL */
#define O_ASK_UNHEARD		8	/* SEED_ASK_UNHEARD */
#define O_KEEP_REQ		16	/* SEED_KEEP_REQ */
#define O_TWIN_ERRORS		32	/* SEED_TWIN_ERRORS */

/* Where the two-sided counts and ring places start (glue.c's starts[]). */
#define M_STARTS	4

#endif /* _SHIFT_MODEL_H */
