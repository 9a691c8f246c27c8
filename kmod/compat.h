/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel versions differ.  compat_gen.h is written at
 * build time by compat-probe.sh from the target tree's own headers.
 */
#ifndef _SFT_COMPAT_H
#define _SFT_COMPAT_H

#include <linux/mm.h>
#include <net/genetlink.h>
#include "compat_gen.h"

struct ib_device;

/*
 * ib_client.add returned void before it could fail a device (v5.8): wrap
 * an int-returning @fn into whichever the core expects.
 */
#ifdef SFT_HAVE_CLIENT_ADD_INT
#define SFT_DEFINE_CLIENT_ADD(name, fn)				\
	static int name(struct ib_device *ibdev)		\
	{							\
		return fn(ibdev);				\
	}
#else
#define SFT_DEFINE_CLIENT_ADD(name, fn)				\
	static void name(struct ib_device *ibdev)		\
	{							\
		fn(ibdev);					\
	}
#endif

/*
 * Commands from resv_start_op on get the checks of new families (the
 * generic header's reserved byte must be 0, an op without a policy takes
 * no attribute); before the field existed every command was legacy.
 * Ours are all new: @n is the first.
 */
#ifdef SFT_HAVE_GENL_RESV_START_OP
#define SFT_GENL_RESV_START_OP(n)	.resv_start_op = (n),
#else
#define SFT_GENL_RESV_START_OP(n)
#endif

/*
 * A dump's request attributes, parsed by the core against the op's
 * policy: in the dump's genl_info since v6.2 (genl_info_dump()), in the
 * dump info itself before.
 */
static inline struct nlattr **sft_dump_attrs(struct netlink_callback *cb)
{
#ifdef SFT_HAVE_GENL_INFO_DUMP
	return genl_info_dump(cb)->attrs;
#else
	return genl_dumpit_info(cb)->attrs;
#endif
}

/* vm_flags became read-only behind accessors in v6.3. */
static inline void sft_vma_clear_flags(struct vm_area_struct *vma,
				       unsigned long flags)
{
#ifdef SFT_HAVE_VM_FLAGS_CLEAR
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* _SFT_COMPAT_H */
