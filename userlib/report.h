/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.h: path reports to shift_ft (report.c).
 */
#ifndef _SHIFTU_REPORT_H
#define _SHIFTU_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <shift_ft.h>

/*
 * Report the path from port @port_num of device @dev_name to @gid down or
 * up (source APP).  Returns 0 or -errno: -EPERM without CAP_NET_ADMIN and
 * -ENOENT without the module, both said once at info and not asked again.
 * Blocks up to 1 s.  Context: the shadow thread; thread safe.
 */
int shiftu_report_path(const char *dev_name, uint32_t port_num,
		       const uint8_t gid[SHIFT_FT_GID_LEN], bool down);

#endif /* _SHIFTU_REPORT_H */
