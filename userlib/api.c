// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * api.c: shiftu_version() and shiftu_qp_state().  shiftu_set_options() is
 * in config.c, shiftu_stats() and shiftu_set_event_cb() in event.c.
 */
#include <errno.h>
#include <string.h>

#include "qp.h"
#include "util.h"
#include "shiftu.h"

SHIFTU_EXPORT const char *shiftu_version(void)
{
	return SHIFT_VERSION;
}

SHIFTU_EXPORT int shiftu_qp_state(struct ibv_qp *qp, struct shiftu_qp_info *user)
{
	struct shiftu_qp_info info;
	struct shiftu_qp *q;
	uint32_t size;

	if (!qp || !user || user->size < SHIFTU_QP_INFO_SIZE_VER0)
		return -EINVAL;
	q = shiftu_qp_lookup(qp);
	if (!q)
		return -ENOENT;
	size = user->size < sizeof(info) ? user->size : sizeof(info);
	memset(&info, 0, sizeof(info));
	info.size = size;
	/* relaxed: statistics written by the interposer (qp.h) */
	info.flags = __atomic_load_n(&q->flags, __ATOMIC_RELAXED) & SHIFTU_QP_F_ALL;
	info.send_state = __atomic_load_n(&q->send_state, __ATOMIC_RELAXED);
	info.recv_state = __atomic_load_n(&q->recv_state, __ATOMIC_RELAXED);
	info.failovers = __atomic_load_n(&q->failovers, __ATOMIC_RELAXED);
	info.failbacks = __atomic_load_n(&q->failbacks, __ATOMIC_RELAXED);
	info.replayed_wrs = __atomic_load_n(&q->replayed_wrs, __ATOMIC_RELAXED);
	memcpy(user, &info, size);
	return 0;
}
