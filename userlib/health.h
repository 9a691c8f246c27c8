/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * health.h: libshiftu's reader of the shift_ft health page (/dev/shift_ft,
 * layout and seqcount protocol in uapi/shift_ft.h).
 *
 * The data path asks one question per verbs call: "did the table change
 * since I last looked?"  shiftu_health_moved() answers it with one acquire
 * load and a compare, inline, with no branch for "no page": without a page
 * the sequence pointer aims at a private word that never changes.  Only when
 * the answer is yes does the caller take the cold path (shiftu_health_port(),
 * shiftu_health_path()) to copy the rows it depends on.
 *
 * The page is opened lazily, on the first slow-path call or
 * shiftu_health_open(); a host without the module simply has no page and
 * every query returns -ENODEV.
 */
#ifndef _SHIFTU_HEALTH_H
#define _SHIFTU_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shift_ft.h>

#include "util.h"

/*
 * The word the fast path loads: &hdr->seq of the mapped page, or
 * &shiftu_health_noseq.  Written once per attach with a release store after
 * the page is mapped and checked; the fast path's acquire load of this
 * pointer pairs with it, so the page behind it is seen mapped.  Never points
 * back at shiftu_health_noseq while the library runs (tests detach only with
 * no readers).
 */
extern const uint32_t *shiftu_health_seqp SHIFTU_HIDDEN;

/*
 * The private word behind shiftu_health_seqp while no page is mapped.  It
 * holds 1, an odd value a published page never rests at, so that a caller
 * whose cached value came from "no page" sees a move once the page appears.
 */
extern const uint32_t shiftu_health_noseq;

/*
 * shiftu_health_moved - has the table changed since *@seen was taken?
 *
 * Returns false when hdr->seq still equals *@seen.  Otherwise stores the
 * new value in *@seen and returns true; the caller then re-reads what it
 * needs through the slow path.  Because *@seen is updated before that
 * re-read, a change that lands during it shows as another move on the next
 * call: nothing is missed, at worst something is re-read once more.  An odd
 * value (writer inside) also counts as a move; the slow path waits it out.
 * Callers start with *@seen = 0.
 *
 * Ordering: the acquire load of hdr->seq pairs with the kernel's second
 * smp_wmb(); seq++ of its write section, so rows the slow path copies after
 * this are at least as new as the value seen here.
 *
 * Context: any thread, any time; no syscall, lock, allocation or store to
 * shared memory.  *@seen belongs to the caller (one per QP, say).
 */
static inline bool shiftu_health_moved(uint32_t *seen)
{
	const uint32_t *p = __atomic_load_n(&shiftu_health_seqp, __ATOMIC_ACQUIRE);
	uint32_t s = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	/* *seen may be shared by threads posting on one QP: relaxed, no RMW */
	if (__builtin_expect(s == __atomic_load_n(seen, __ATOMIC_RELAXED), 1))
		return false;
	__atomic_store_n(seen, s, __ATOMIC_RELAXED);
	return true;
}

/*
 * shiftu_health_seq - the page's sequence now, with the loads (and the
 * ordering) of shiftu_health_moved(), for a fast path that folds "has it
 * moved?" into a compare of its own word (a QP's or a context's,
 * interpose.h) and lets its cold path call shiftu_health_moved().
 */
static inline uint32_t shiftu_health_seq(void)
{
	const uint32_t *p = __atomic_load_n(&shiftu_health_seqp, __ATOMIC_ACQUIRE);

	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* One port row and its backup's, from one consistent snapshot. */
struct shiftu_port_health {
	uint32_t seq;			/* hdr.seq of the snapshot (even) */
	uint32_t port_index;		/* slot of the port row */
	uint64_t generation;		/* table generation of the snapshot */
	uint64_t down_count;
	uint8_t state;			/* enum shift_ft_port_state */
	uint8_t link_layer;		/* enum shift_ft_link_layer */
	uint8_t pair_state;		/* enum shift_ft_pair_state */
	uint8_t backup_state;		/* enum shift_ft_port_state, NOP: none */
	uint32_t pair_flags;		/* SHIFT_FT_PAIR_F_* */
	char dev_name[SHIFT_FT_DEV_NAME_LEN];
	/* backup_index is SHIFT_FT_NO_PORT and the rest zero with no backup */
	uint32_t backup_index;
	uint32_t backup_port_num;
	uint64_t backup_node_guid;
	char backup_dev_name[SHIFT_FT_DEV_NAME_LEN];
};

/*
 * shiftu_health_open - map the page now if not yet tried.
 *
 * Returns 0 when a page is attached, -ENODEV when there is none (device
 * absent: one info line; or refused: one warn line naming why, magic or
 * version).  Tried once per process; later calls return the first result.
 * Thread safe.  Context: may sleep (open, ioctl, mmap).
 */
int shiftu_health_open(void);

/*
 * shiftu_health_port - the row of local port (@node_guid, @port_num) and of
 * its backup.
 *
 * Returns 0 with *@out filled, -ENOENT when no valid row matches, -ENODEV
 * without a page, -ESTALE when the page stays inconsistent (a writer inside
 * for ~1 s: the module is wedged).  Thread safe, lock free; cold.
 */
int shiftu_health_port(uint64_t node_guid, uint32_t port_num,
		       struct shiftu_port_health *out);

/*
 * shiftu_health_path - the effective state of the path from port slot
 * @port_index to @gid (enum shift_ft_path_state in *@state) and, if @since
 * is not NULL, when the row last changed (CLOCK_MONOTONIC ns).
 *
 * Returns 0, -ENOENT when the table has no row for that path (nothing is
 * known: the caller treats it as UNKNOWN), -ENODEV, -ESTALE as above.
 * Thread safe, lock free; cold.
 */
int shiftu_health_path(uint32_t port_index, const uint8_t gid[SHIFT_FT_GID_LEN],
		       uint8_t *state, uint64_t *since);

/*
 * shiftu_health_fd - the descriptor of /dev/shift_ft for poll() (POLLIN when
 * the generation moved; read(2) 8 bytes to re-arm), or -ENODEV.  The fd
 * stays open for the life of the process; do not close it.  Thread safe.
 */
int shiftu_health_fd(void);

/* Table generation of the attached page (relaxed, for statistics), 0: none. */
uint64_t shiftu_health_generation(void);

/*
 * shiftu_health_attach_mem - use @len bytes at @mem as the page (tests,
 * and a future file-backed mode).  Same checks as the device: magic,
 * compat_version, sizes and bounds.  Returns 0 or -EPROTO (bad magic,
 * header too small, array outside @len, entry smaller than version 1's),
 * -EPROTONOSUPPORT (compat_version newer than SHIFT_FT_PAGE_VERSION),
 * -EBUSY (a page is already attached).  Internal: not exported.
 */
int shiftu_health_attach_mem(const void *mem, size_t len);

/*
 * shiftu_health_detach - forget the page (unmap and close when it came from
 * the device).  For tests and library teardown only: no reader may run
 * concurrently.
 */
void shiftu_health_detach(void);

#endif /* _SHIFTU_HEALTH_H */
