/* SPDX-License-Identifier: GPL-2.0 */
/* /dev/shift_ft: the read-only mapping of the table, poll() and one ioctl. */
#ifndef _SFT_CHARDEV_H
#define _SFT_CHARDEV_H

int sft_chardev_init(void);
void sft_chardev_exit(void);

#endif /* _SFT_CHARDEV_H */
