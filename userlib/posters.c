// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * posters.c: the posters' tags (posters.h), which each thread's window
 * takes (quiesce.c); handing a QP's queue from one posting thread to
 * another is handover.c's.
 */
#include <stdint.h>

#include "posters.h"
#include "util.h"

/* Tags in use, bit i for tag i; 0 and SHIFTU_POSTER_NONE never are.
 * windows_lock (quiesce.c). */
static uint64_t tags_used[65536 / 64];
static uint32_t tags_next = 1;

uint64_t shiftu_poster_tag_get(void)
{
	uint32_t i, t;

	for (i = 0; i < SHIFTU_POSTER_NONE - 1; i++) {
		t = tags_next;
		tags_next = t + 1 < SHIFTU_POSTER_NONE ? t + 1 : 1;
		if (!(tags_used[t / 64] & (1ULL << (t % 64)))) {
			tags_used[t / 64] |= 1ULL << (t % 64);
			return (uint64_t)t << SHIFTU_POSTER_SHIFT;
		}
	}
	return 0;
}

void shiftu_poster_tag_put(uint64_t tag)
{
	uint32_t t = (uint32_t)(tag >> SHIFTU_POSTER_SHIFT);

	if (t && t < SHIFTU_POSTER_NONE)
		tags_used[t / 64] &= ~(1ULL << (t % 64));
}

void shiftu_poster_tags_fork_child(uint64_t tag)
{
	uint32_t t = (uint32_t)(tag >> SHIFTU_POSTER_SHIFT);
	uint32_t i;

	for (i = 0; i < SHIFTU_ARRAY_SIZE(tags_used); i++)
		tags_used[i] = 0;
	if (t && t < SHIFTU_POSTER_NONE)
		tags_used[t / 64] |= 1ULL << (t % 64);
}
