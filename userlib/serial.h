/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * serial.h: serial-number arithmetic (RFC 1982) for the counts libshiftu
 * compares, and the handshake's count on the wire.
 *
 * A count that runs for days wraps: the handshake's receive count at 2^31
 * (31 bits of an immediate, handshake.h), a 32-bit word at 2^32, and a
 * test build may start the 64-bit ones anywhere (SHIFTU_TEST_COUNT_START,
 * below).  Two counts are compared by the sign of their difference, never
 * with < on their values: a before b when b - a, taken modulo 2^bits, is
 * in (0, 2^(bits-1)).  That holds while the two are less than 2^(bits-1)
 * apart, which the counts compared here always are: they differ by the
 * work outstanding on one QP, a queue's worth (far below 2^30).
 *
 * Which counts are what (vqpstate.h, struct shiftu_vqp):
 *   sent2, consumed, a send's seq2, rq.head   64 bits, compared here
 *   hs_peer: the peer's consumed, 31 bits on the wire, extended to 64
 *            bits near our own sent2 (shiftu_hs_count_get())
 *   fb_seq and fb_answered (32 bits): a failback request newer than
 *            the last answered, compared here (fbanswer.c)
 *   ctrl_gen (16 bits), the health page's seq and the windows' seq
 *            (32 bits): compared for equality only, which a wrap does
 *            not disturb
 *   rxe ring indices (32 bits): only differences, masked to the ring
 */
#ifndef _SHIFTU_SERIAL_H
#define _SHIFTU_SERIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* a before b, a before or equal to b: 64-bit counts */
static inline bool shiftu_seq64_lt(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static inline bool shiftu_seq64_le(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) <= 0;
}

/* the same for 32-bit counts */
static inline bool shiftu_seq32_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline bool shiftu_seq32_le(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}

/* The handshake's receive count: the low 31 bits of the immediate. */
#define SHIFTU_HS_COUNT_BITS	31
#define SHIFTU_HS_COUNT_MASK	((1U << SHIFTU_HS_COUNT_BITS) - 1)

/* the same for the wire's 31-bit counts (bits above the 31st ignored) */
static inline int32_t shiftu_seq31_diff(uint32_t a, uint32_t b)
{
	/* a - b in 31 bits, sign-extended from its bit 30 */
	return (int32_t)((a - b) << 1) >> 1;
}

static inline bool shiftu_seq31_lt(uint32_t a, uint32_t b)
{
	return shiftu_seq31_diff(a, b) < 0;
}

static inline bool shiftu_seq31_le(uint32_t a, uint32_t b)
{
	return shiftu_seq31_diff(a, b) <= 0;
}

/* @count as the handshake carries it */
static inline uint32_t shiftu_hs_count_put(uint64_t count)
{
	return (uint32_t)count & SHIFTU_HS_COUNT_MASK;
}

/*
 * The 64-bit count the 31 bits @wire stand for: the one nearest @near,
 * a 64-bit count of ours it is known to be within 2^30 of, either way
 * (the peer's receive count lies a queue's worth below our send count at
 * most).  Exact on both sides of each wrap, 2^31, 2^32 or 2^64 alike.
 */
static inline uint64_t shiftu_hs_count_get(uint32_t wire, uint64_t near)
{
	return near + (uint64_t)(int64_t)shiftu_seq31_diff(wire, (uint32_t)near);
}

/*
 * Where a QP's two-sided counts start (sent2, consumed and rq.head, which
 * consumed is counted against): 0, but in the test build
 * (libshiftu-test.so, -DSHIFTU_TEST_BUILD), which takes it from
 * SHIFTU_TEST_COUNT_START so that a lab test can start them just below a
 * wrap (testbuild.c).  The production library has no such knob.
 */
#ifdef SHIFTU_TEST_BUILD
uint64_t shiftu_count_start(void) SHIFTU_HIDDEN;
#else
static inline uint64_t shiftu_count_start(void)
{
	return 0;
}
#endif

#endif /* _SHIFTU_SERIAL_H */
