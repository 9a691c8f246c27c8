// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qphealth.c: what the health table says of a QP's primary, its port and
 * its path to the peer (interpose.h), read again when the page moved: a
 * QP whose primary went down is failed over.  Cold; any thread.
 */
#include <errno.h>
#include <stdint.h>

#include "event.h"
#include "failover.h"
#include "health.h"
#include "interpose.h"
#include "log.h"
#include "qp.h"

int shiftu_vqp_primary(struct shiftu_vqp *vq, struct shiftu_port_health *ph,
		       uint8_t *path)
{
	uint64_t since;
	int err;

	*path = SHIFT_FT_PATH_UNKNOWN;
	if (!vq->port_num)
		return -ENOENT;
	err = shiftu_health_port(vq->sctx->node_guid, vq->port_num, ph);
	if (err)
		return err;
	if (ph->state != SHIFT_FT_PORT_ACTIVE)
		return 1;
	/*
	 * A path down by this QP's own report: its probe tells when it is
	 * back.  A path down since before the QP last came back to it: the
	 * probe (ours or the peer's) proved it since; the table has not
	 * heard yet (the agents relay a remote port late).
	 */
	if (vq->has_dgid && !shiftu_health_path(ph->port_index, vq->dgid, path, &since))
		return *path == SHIFT_FT_PATH_DOWN &&
		       !__atomic_load_n(&vq->reported, __ATOMIC_RELAXED) &&
		       since > __atomic_load_n(&vq->back_ns, __ATOMIC_RELAXED);
	return 0;
}

void shiftu_vqp_health(struct shiftu_vqp *vq)
{
	struct shiftu_port_health ph;
	uint8_t path;
	uint32_t flags;
	int down;

	down = shiftu_vqp_primary(vq, &ph, &path);
	shiftu_stat_add(SHIFTU_STAT_HEALTH_READS, 1);
	if (down == -ESTALE) {
		/*
		 * The page stayed mid-write for SEQ_WAIT_NS.  Its sequence
		 * has moved since our callers took it, so they would not look
		 * again before the next change, which may be the port's
		 * return: make their next post and poll look again.
		 */
		shiftu_stat_add(SHIFTU_STAT_HEALTH_STALE, 1);
		__atomic_store_n(&vq->health_seen, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&vq->health_seen_r, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&vq->sctx->health_seen, 0, __ATOMIC_RELAXED);
		return;
	}
	if (down < 0)
		return;		/* unbound, no page, or no row for the port: unknown */
	if (down == vq->down)
		return;
	/* which, for a failover another thread starts on seeing @down */
	vq->down_path = path == SHIFT_FT_PATH_DOWN;
	vq->down = down;
	/*
	 * Set here, cleared only by the slow paths under fo_lock: a move
	 * another thread is making still reads Default until it is done.
	 */
	if (down)
		shiftu_vqp_set_slow(vq, 1, __ATOMIC_RELAXED);
	flags = __atomic_load_n(&vq->reg.flags, __ATOMIC_RELAXED);
	shiftu_qp_set_flags(&vq->reg, down ? flags | SHIFTU_QP_F_PRIMARY_DOWN :
					     flags & ~SHIFTU_QP_F_PRIMARY_DOWN);
	shiftu_info("qp %u on %s port %u: %s %s (backup: %s port %u)",
		    vq->reg.app_qp->qp_num, vq->sctx->dev_name, vq->port_num,
		    path == SHIFT_FT_PATH_DOWN ? "path" : "port",
		    down ? "down" : "up",
		    ph.backup_index == SHIFT_FT_NO_PORT ? "none" : ph.backup_dev_name,
		    ph.backup_port_num);
	if (down)
		shiftu_failover(vq, path == SHIFT_FT_PATH_DOWN ? "path down" : "port down");
}
