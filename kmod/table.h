/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The health table: port rows, pairs and path rows, kept directly in the
 * page that /dev/shift_ft maps, so that the page is the one copy of the
 * truth.  One mutex serialises every writer; every change is one seqcount
 * write section, one generation, and one multicast message per changed row.
 */
#ifndef _SFT_TABLE_H
#define _SFT_TABLE_H

#include <linux/types.h>
#include <linux/wait.h>
#include <linux/netlink.h>
#include <shift_ft.h>

struct sock;

/*
 * What the ib client learnt about a port, handed to the table in one piece.
 * dev_name is read by sft_port_add() only: later names come through
 * sft_port_rename(), never through sft_port_update().
 */
struct sft_port_attrs {
	u64 node_guid;
	u32 dev_index;
	u32 port_num;
	u32 ifindex;
	char dev_name[SHIFT_FT_DEV_NAME_LEN];
	char netdev[SHIFT_FT_NETDEV_NAME_LEN];
	u8 link_layer;
	u8 state;
	u8 phys_state;
	u8 width;
	u32 speed;
	u32 mtu;
	s32 numa_node;
};

int sft_table_init(u32 port_max, u32 path_max, u32 path_reserved);
void sft_table_exit(void);

/* For the char device: the page, its size, and the waitqueue of poll(). */
void *sft_table_page(void);
size_t sft_table_map_size(void);
u64 sft_table_generation(void);
wait_queue_head_t *sft_table_waitq(void);

/* Writers from the ib client (process context, may sleep). */
int sft_port_add(const struct sft_port_attrs *a);
void sft_port_update(u32 slot, const struct sft_port_attrs *a, u32 event);
void sft_port_rename(u32 slot, const char *name);
void sft_port_remove(u32 slot);

/* Readers and writers from netlink: take the lock around row accesses. */
void sft_table_lock(void);
void sft_table_unlock(void);
u64 sft_table_gen_locked(void);
u32 sft_table_port_max(void);
u32 sft_table_path_max(void);
const struct shift_ft_page_port *sft_port_row(u32 slot);
const u64 *sft_port_ev_counts(u32 slot);
const struct shift_ft_page_path *sft_path_row(u32 idx);
int sft_port_lookup(const char *dev_name, u32 port_num);
int sft_path_lookup(u32 slot, const u8 *gid);

/* Overrides are by name and need no row: these take the lock themselves. */
int sft_pair_set(const char *dev, u32 port, const char *bdev, u32 bport,
		 struct netlink_ext_ack *extack);
int sft_pair_clear(const char *dev, u32 port, struct netlink_ext_ack *extack);
/* Paths name a row the caller resolved: called with the lock held. */
int sft_path_report(u32 slot, const u8 *gid, u8 state, u8 source, u32 pid,
		    u32 portid, struct sock *sk, u32 flags,
		    struct netlink_ext_ack *extack);
/* A netlink socket went: withdraw the F_WITHDRAW reports it made. */
void sft_path_reporter_gone(u32 portid);
int sft_path_delete(u32 slot, const u8 *gid, u8 source,
		    struct netlink_ext_ack *extack);

#endif /* _SFT_TABLE_H */
