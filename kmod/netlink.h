/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The generic netlink family "shift_ft": queries, administrative changes,
 * and the "events" multicast group (see uapi/shift_ft.h for the trees).
 */
#ifndef _SFT_NETLINK_H
#define _SFT_NETLINK_H

#include <linux/skbuff.h>
#include <shift_ft.h>

int sft_nl_init(void);
void sft_nl_exit(void);

/*
 * Announcements, called by the table with its lock held.  With @q NULL the
 * message goes out at once; otherwise it waits on @q for sft_nl_send_all(),
 * so that rows about to be erased can be described after the page changed.
 */
void sft_nl_notify_port(struct sk_buff_head *q, u8 cmd, u32 slot,
			const struct shift_ft_page_port *p, u32 event, u64 gen);
void sft_nl_notify_pair(u32 slot, u32 event, u64 gen);
void sft_nl_notify_path(struct sk_buff_head *q, u8 cmd, u32 idx,
			const struct shift_ft_page_path *r, u32 event, u64 gen);
void sft_nl_send_all(struct sk_buff_head *q);

#endif /* _SFT_NETLINK_H */
