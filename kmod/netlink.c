// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "shift_ft".
 *
 * Requests are validated strictly against their command's policy; what a
 * command does not accept is refused with an extended ack naming the
 * attribute.  Every
 * state-changing command is GENL_ADMIN_PERM (CAP_NET_ADMIN): reading the
 * table is open to everyone, steering traffic is not.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/sched.h>
#include <net/genetlink.h>

#include "compat.h"
#include "netlink.h"
#include "table.h"

enum sft_mcgrp {
	SFT_MCGRP_EVENTS,
};

/*
 * One policy per command: an attribute the command does not take is
 * refused by the strict parse (NLA_UNSPEC), not ignored.
 */
#define SFT_POLICY_PORT							\
	[SHIFT_FT_A_PORT_INDEX]		= { .type = NLA_U32 },		\
	[SHIFT_FT_A_DEV_NAME]		= { .type = NLA_NUL_STRING,	\
					    .len = SHIFT_FT_DEV_NAME_LEN - 1 }, \
	[SHIFT_FT_A_PORT_NUM]		= NLA_POLICY_RANGE(NLA_U32, 1, 255)

/* PORT_GET, PAIR_GET: a port, by index or by name and number */
static const struct nla_policy sft_port_policy[SHIFT_FT_A_MAX + 1] = {
	SFT_POLICY_PORT,
};

/* PAIR_SET: a port and its backup, by name and number */
static const struct nla_policy sft_pair_set_policy[SHIFT_FT_A_MAX + 1] = {
	[SHIFT_FT_A_DEV_NAME]		= { .type = NLA_NUL_STRING,
					    .len = SHIFT_FT_DEV_NAME_LEN - 1 },
	[SHIFT_FT_A_PORT_NUM]		= NLA_POLICY_RANGE(NLA_U32, 1, 255),
	[SHIFT_FT_A_BACKUP_DEV_NAME]	= { .type = NLA_NUL_STRING,
					    .len = SHIFT_FT_DEV_NAME_LEN - 1 },
	[SHIFT_FT_A_BACKUP_PORT_NUM]	= NLA_POLICY_RANGE(NLA_U32, 1, 255),
};

/* PAIR_CLEAR: a port by name and number */
static const struct nla_policy sft_pair_clear_policy[SHIFT_FT_A_MAX + 1] = {
	[SHIFT_FT_A_DEV_NAME]		= { .type = NLA_NUL_STRING,
					    .len = SHIFT_FT_DEV_NAME_LEN - 1 },
	[SHIFT_FT_A_PORT_NUM]		= NLA_POLICY_RANGE(NLA_U32, 1, 255),
};

/* PATH_GET: a port and the remote GID */
static const struct nla_policy sft_path_policy[SHIFT_FT_A_MAX + 1] = {
	SFT_POLICY_PORT,
	[SHIFT_FT_A_REMOTE_GID]		= NLA_POLICY_EXACT_LEN(SHIFT_FT_GID_LEN),
};

/* PATH_DEL: a path, and whose report it must hold to go */
static const struct nla_policy sft_path_del_policy[SHIFT_FT_A_MAX + 1] = {
	SFT_POLICY_PORT,
	[SHIFT_FT_A_REMOTE_GID]		= NLA_POLICY_EXACT_LEN(SHIFT_FT_GID_LEN),
	[SHIFT_FT_A_REPORT_SOURCE]	= NLA_POLICY_RANGE(NLA_U8,
							   SHIFT_FT_SRC_APP,
							   SHIFT_FT_SRC_AGENT),
};

/* PATH_REPORT: a path, its state, who says so, and the report's flags */
static const struct nla_policy sft_path_report_policy[SHIFT_FT_A_MAX + 1] = {
	SFT_POLICY_PORT,
	[SHIFT_FT_A_REMOTE_GID]		= NLA_POLICY_EXACT_LEN(SHIFT_FT_GID_LEN),
	[SHIFT_FT_A_REPORT_STATE]	= NLA_POLICY_RANGE(NLA_U8,
							   SHIFT_FT_PATH_UP,
							   SHIFT_FT_PATH_DOWN),
	[SHIFT_FT_A_REPORT_SOURCE]	= NLA_POLICY_RANGE(NLA_U8,
							   SHIFT_FT_SRC_APP,
							   SHIFT_FT_SRC_AGENT),
	[SHIFT_FT_A_FLAGS]		= { .type = NLA_U32 },
};

static struct genl_family sft_family;

/* ---- message building ---------------------------------------------------- */

/* Context: table lock held.  The nest of the port's events by cause. */
static int fill_ev_counts(struct sk_buff *skb, u32 slot)
{
	const u64 *c = sft_port_ev_counts(slot);
	struct nlattr *nest;
	u32 ev;

	nest = nla_nest_start(skb, SHIFT_FT_A_EVENT_COUNTS);
	if (!nest)
		return -EMSGSIZE;
	/* inside the nest, type 0 (EV_NONE, never counted) is the padding */
	for (ev = 1; c && ev < __SHIFT_FT_EV_MAX; ev++)
		if (c[ev] && nla_put_u64_64bit(skb, ev, c[ev], SHIFT_FT_EV_NONE)) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	nla_nest_end(skb, nest);
	return 0;
}

/* Context: table lock held. */
static int fill_port(struct sk_buff *skb, u32 slot,
		     const struct shift_ft_page_port *p, u64 gen)
{
	if (nla_put_u64_64bit(skb, SHIFT_FT_A_GENERATION, gen, SHIFT_FT_A_PAD) ||
	    nla_put_u32(skb, SHIFT_FT_A_PORT_INDEX, slot) ||
	    nla_put_string(skb, SHIFT_FT_A_DEV_NAME, p->dev_name) ||
	    nla_put_u32(skb, SHIFT_FT_A_DEV_INDEX, p->dev_index) ||
	    nla_put_u32(skb, SHIFT_FT_A_PORT_NUM, p->port_num) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_NODE_GUID, p->node_guid,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u8(skb, SHIFT_FT_A_LINK_LAYER, p->link_layer) ||
	    nla_put_s32(skb, SHIFT_FT_A_NUMA_NODE, p->numa_node) ||
	    nla_put_u8(skb, SHIFT_FT_A_STATE, p->state) ||
	    nla_put_u8(skb, SHIFT_FT_A_PHYS_STATE, p->phys_state) ||
	    nla_put_u32(skb, SHIFT_FT_A_SPEED, p->speed) ||
	    nla_put_u8(skb, SHIFT_FT_A_WIDTH, p->width) ||
	    nla_put_u32(skb, SHIFT_FT_A_MTU, p->mtu) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_LAST_CHANGE, p->last_change_ns,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_DOWN_COUNT, p->down_count,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u32(skb, SHIFT_FT_A_LAST_EVENT, p->last_event) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_EVENT_COUNT, p->event_count,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u8(skb, SHIFT_FT_A_PAIR_STATE, p->pair_state) ||
	    nla_put_u32(skb, SHIFT_FT_A_PAIR_FLAGS, p->pair_flags) ||
	    fill_ev_counts(skb, slot))
		return -EMSGSIZE;
	if (p->netdev[0] &&
	    (nla_put_string(skb, SHIFT_FT_A_NETDEV, p->netdev) ||
	     nla_put_u32(skb, SHIFT_FT_A_IFINDEX, p->ifindex)))
		return -EMSGSIZE;
	if (p->backup_index != SHIFT_FT_NO_PORT &&
	    nla_put_u32(skb, SHIFT_FT_A_BACKUP_INDEX, p->backup_index))
		return -EMSGSIZE;
	return 0;
}

/* Context: table lock held (reads the backup's row). */
static int fill_pair(struct sk_buff *skb, u32 slot, u64 gen)
{
	const struct shift_ft_page_port *p = sft_port_row(slot), *b;

	if (!p)
		return -ENODEV;
	if (nla_put_u64_64bit(skb, SHIFT_FT_A_GENERATION, gen, SHIFT_FT_A_PAD) ||
	    nla_put_u32(skb, SHIFT_FT_A_PORT_INDEX, slot) ||
	    nla_put_string(skb, SHIFT_FT_A_DEV_NAME, p->dev_name) ||
	    nla_put_u32(skb, SHIFT_FT_A_PORT_NUM, p->port_num) ||
	    nla_put_u8(skb, SHIFT_FT_A_STATE, p->state) ||
	    nla_put_u8(skb, SHIFT_FT_A_PAIR_STATE, p->pair_state) ||
	    nla_put_u32(skb, SHIFT_FT_A_PAIR_FLAGS, p->pair_flags))
		return -EMSGSIZE;
	b = p->backup_index == SHIFT_FT_NO_PORT ? NULL :
	    sft_port_row(p->backup_index);
	if (b &&
	    (nla_put_u32(skb, SHIFT_FT_A_BACKUP_INDEX, p->backup_index) ||
	     nla_put_string(skb, SHIFT_FT_A_BACKUP_DEV_NAME, b->dev_name) ||
	     nla_put_u32(skb, SHIFT_FT_A_BACKUP_PORT_NUM, b->port_num) ||
	     nla_put_u8(skb, SHIFT_FT_A_BACKUP_STATE, b->state)))
		return -EMSGSIZE;
	return 0;
}

/* Context: table lock held (reads the local port's row). */
static int fill_path(struct sk_buff *skb, u32 idx,
		     const struct shift_ft_page_path *r, u64 gen)
{
	const struct shift_ft_page_port *p = sft_port_row(r->port_index);

	if (nla_put_u64_64bit(skb, SHIFT_FT_A_GENERATION, gen, SHIFT_FT_A_PAD) ||
	    nla_put_u32(skb, SHIFT_FT_A_PATH_INDEX, idx) ||
	    nla_put_u32(skb, SHIFT_FT_A_PORT_INDEX, r->port_index) ||
	    nla_put(skb, SHIFT_FT_A_REMOTE_GID, SHIFT_FT_GID_LEN,
		    r->remote_gid) ||
	    nla_put_u8(skb, SHIFT_FT_A_PATH_STATE, r->state) ||
	    nla_put_u8(skb, SHIFT_FT_A_REPORT_STATE, r->report_state) ||
	    nla_put_u8(skb, SHIFT_FT_A_REPORT_SOURCE, r->report_source) ||
	    nla_put_u32(skb, SHIFT_FT_A_REPORT_PID, r->report_pid) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_REPORT_TIME, r->report_ns,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_LAST_CHANGE, r->last_change_ns,
			      SHIFT_FT_A_PAD) ||
	    nla_put_u64_64bit(skb, SHIFT_FT_A_DOWN_COUNT, r->down_count,
			      SHIFT_FT_A_PAD))
		return -EMSGSIZE;
	if (p && (nla_put_string(skb, SHIFT_FT_A_DEV_NAME, p->dev_name) ||
		  nla_put_u32(skb, SHIFT_FT_A_PORT_NUM, p->port_num)))
		return -EMSGSIZE;
	return 0;
}

/* ---- announcements ------------------------------------------------------- */

static bool sft_nl_listened(void)
{
	return genl_has_listeners(&sft_family, &init_net, SFT_MCGRP_EVENTS);
}

static struct sk_buff *event_new(u8 cmd, void **hdr)
{
	struct sk_buff *skb = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);

	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &sft_family, 0, cmd);
	if (!*hdr) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

/* Finishes @skb and sends it now, or queues it on @q. */
static void event_send(struct sk_buff_head *q, struct sk_buff *skb, void *hdr,
		       int err, u32 event)
{
	if (err || nla_put_u32(skb, SHIFT_FT_A_EVENT, event)) {
		pr_warn_ratelimited("event message too large, dropped\n");
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	if (q)
		skb_queue_tail(q, skb);
	else
		genlmsg_multicast(&sft_family, skb, 0, SFT_MCGRP_EVENTS,
				  GFP_KERNEL);
}

void sft_nl_send_all(struct sk_buff_head *q)
{
	struct sk_buff *skb;

	while ((skb = skb_dequeue(q)))
		genlmsg_multicast(&sft_family, skb, 0, SFT_MCGRP_EVENTS,
				  GFP_KERNEL);
}

void sft_nl_notify_port(struct sk_buff_head *q, u8 cmd, u32 slot,
			const struct shift_ft_page_port *p, u32 event, u64 gen)
{
	struct sk_buff *skb;
	void *hdr;

	if (!sft_nl_listened())
		return;
	skb = event_new(cmd, &hdr);
	if (skb)
		event_send(q, skb, hdr, fill_port(skb, slot, p, gen), event);
}

void sft_nl_notify_pair(u32 slot, u32 event, u64 gen)
{
	struct sk_buff *skb;
	void *hdr;

	if (!sft_nl_listened())
		return;
	skb = event_new(SHIFT_FT_CMD_PAIR_NEW, &hdr);
	if (skb)
		event_send(NULL, skb, hdr, fill_pair(skb, slot, gen), event);
}

void sft_nl_notify_path(struct sk_buff_head *q, u8 cmd, u32 idx,
			const struct shift_ft_page_path *r, u32 event, u64 gen)
{
	struct sk_buff *skb;
	void *hdr;

	if (!sft_nl_listened())
		return;
	skb = event_new(cmd, &hdr);
	if (skb)
		event_send(q, skb, hdr, fill_path(skb, idx, r, gen), event);
}

/* ---- requests ------------------------------------------------------------ */

/*
 * Context: table lock held.  Resolves the port a request names, by index
 * or by device name and port number, to a slot.
 */
static int port_from_attrs(struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	int slot;

	if (a[SHIFT_FT_A_PORT_INDEX]) {
		slot = nla_get_u32(a[SHIFT_FT_A_PORT_INDEX]);
		if (!sft_port_row(slot)) {
			NL_SET_ERR_MSG_ATTR(info->extack,
					    a[SHIFT_FT_A_PORT_INDEX],
					    "No port with this index");
			return -ENODEV;
		}
		return slot;
	}
	if (!a[SHIFT_FT_A_DEV_NAME]) {
		NL_SET_ERR_MSG(info->extack,
			       "Missing port: give PORT_INDEX, or DEV_NAME and PORT_NUM");
		return -EINVAL;
	}
	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_PORT_NUM))
		return -EINVAL;
	slot = sft_port_lookup(nla_data(a[SHIFT_FT_A_DEV_NAME]),
			       nla_get_u32(a[SHIFT_FT_A_PORT_NUM]));
	if (slot < 0)
		NL_SET_ERR_MSG_ATTR(info->extack, a[SHIFT_FT_A_DEV_NAME],
				    "No such device or port");
	return slot;
}

static int flags_from_attrs(struct genl_info *info, u32 known, u32 *flags)
{
	struct nlattr *attr = info->attrs[SHIFT_FT_A_FLAGS];

	*flags = attr ? nla_get_u32(attr) : 0;
	if (*flags & ~known) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr, "Unknown flags");
		return -EOPNOTSUPP;
	}
	return 0;
}

typedef int (*sft_fill_t)(struct sk_buff *skb, u32 idx, u64 gen);

static int fill_port_idx(struct sk_buff *skb, u32 slot, u64 gen)
{
	return fill_port(skb, slot, sft_port_row(slot), gen);
}

static int fill_path_idx(struct sk_buff *skb, u32 idx, u64 gen)
{
	return fill_path(skb, idx, sft_path_row(idx), gen);
}

/* Context: table lock held.  Replies to a doit GET with one row. */
static int reply_row(struct genl_info *info, u8 cmd, sft_fill_t fill, u32 idx)
{
	struct sk_buff *msg;
	void *hdr;
	int err;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &sft_family, 0, cmd);
	if (!hdr) {
		err = -EMSGSIZE;
		goto err_free;
	}
	err = fill(msg, idx, sft_table_gen_locked());
	if (err)
		goto err_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free:
	nlmsg_free(msg);
	return err;
}

/*
 * Dumps walk slots from cb->args[0] under the table lock, and send the
 * rows that match every attribute of the request (uapi).  cb->seq carries
 * the generation, so a dump that spans a change is flagged NLM_F_DUMP_INTR.
 */
static int dump_rows(struct sk_buff *skb, struct netlink_callback *cb, u8 cmd,
		     sft_fill_t fill, bool (*match)(struct nlattr **, u32), u32 max)
{
	struct nlattr **a = sft_dump_attrs(cb);
	u32 idx = cb->args[0];

	sft_table_lock();
	cb->seq = (u32)sft_table_gen_locked() ?: 1;
	for (; idx < max; idx++) {
		void *hdr;

		if (!match(a, idx))
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &sft_family, NLM_F_MULTI,
				  cmd);
		if (!hdr)
			break;
		genl_dump_check_consistent(cb, hdr);
		if (fill(skb, idx, sft_table_gen_locked())) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	sft_table_unlock();
	cb->args[0] = idx;
	return skb->len;
}

/* Port row @slot, if it exists and matches the port a dump names, if any. */
static bool port_match(struct nlattr **a, u32 slot)
{
	const struct shift_ft_page_port *p = sft_port_row(slot);

	return p &&
	       (!a[SHIFT_FT_A_PORT_INDEX] || nla_get_u32(a[SHIFT_FT_A_PORT_INDEX]) == slot) &&
	       (!a[SHIFT_FT_A_DEV_NAME] || !strcmp(nla_data(a[SHIFT_FT_A_DEV_NAME]), p->dev_name)) &&
	       (!a[SHIFT_FT_A_PORT_NUM] || nla_get_u32(a[SHIFT_FT_A_PORT_NUM]) == p->port_num);
}

/* Path row @idx, likewise: its port, and the remote GID a dump names. */
static bool path_match(struct nlattr **a, u32 idx)
{
	const struct shift_ft_page_path *r = sft_path_row(idx);

	return r &&
	       (!a[SHIFT_FT_A_REMOTE_GID] ||
		!memcmp(nla_data(a[SHIFT_FT_A_REMOTE_GID]), r->remote_gid, SHIFT_FT_GID_LEN)) &&
	       port_match(a, r->port_index);
}

/* A doit GET of the row a port names: the port itself, or its pair. */
static int get_port_doit(struct genl_info *info, u8 cmd, sft_fill_t fill)
{
	int slot, err;

	sft_table_lock();
	slot = port_from_attrs(info);
	err = slot < 0 ? slot : reply_row(info, cmd, fill, slot);
	sft_table_unlock();
	return err;
}

static int sft_nl_port_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return get_port_doit(info, SHIFT_FT_CMD_PORT_NEW, fill_port_idx);
}

static int sft_nl_port_get_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	return dump_rows(skb, cb, SHIFT_FT_CMD_PORT_NEW, fill_port_idx,
			 port_match, sft_table_port_max());
}

static int sft_nl_pair_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return get_port_doit(info, SHIFT_FT_CMD_PAIR_NEW, fill_pair);
}

static int sft_nl_pair_get_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	return dump_rows(skb, cb, SHIFT_FT_CMD_PAIR_NEW, fill_pair,
			 port_match, sft_table_port_max());
}

static int sft_nl_pair_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;

	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_DEV_NAME) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_PORT_NUM) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_BACKUP_DEV_NAME) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_BACKUP_PORT_NUM))
		return -EINVAL;
	return sft_pair_set(nla_data(a[SHIFT_FT_A_DEV_NAME]),
			    nla_get_u32(a[SHIFT_FT_A_PORT_NUM]),
			    nla_data(a[SHIFT_FT_A_BACKUP_DEV_NAME]),
			    nla_get_u32(a[SHIFT_FT_A_BACKUP_PORT_NUM]),
			    info->extack);
}

static int sft_nl_pair_clear_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;

	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_DEV_NAME) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_PORT_NUM))
		return -EINVAL;
	return sft_pair_clear(nla_data(a[SHIFT_FT_A_DEV_NAME]),
			      nla_get_u32(a[SHIFT_FT_A_PORT_NUM]),
			      info->extack);
}

static int sft_nl_path_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	int slot, idx;

	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_REMOTE_GID))
		return -EINVAL;
	sft_table_lock();
	slot = port_from_attrs(info);
	if (slot < 0) {
		idx = slot;
		goto out_unlock;
	}
	idx = sft_path_lookup(slot, nla_data(info->attrs[SHIFT_FT_A_REMOTE_GID]));
	if (idx < 0) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[SHIFT_FT_A_REMOTE_GID],
				    "No such path");
		goto out_unlock;
	}
	idx = reply_row(info, SHIFT_FT_CMD_PATH_NEW, fill_path_idx, idx);
out_unlock:
	sft_table_unlock();
	return idx;
}

static int sft_nl_path_get_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	return dump_rows(skb, cb, SHIFT_FT_CMD_PATH_NEW, fill_path_idx,
			 path_match, sft_table_path_max());
}

static int sft_nl_path_report_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	u32 flags;
	int slot, err;

	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_REMOTE_GID) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_REPORT_STATE) ||
	    GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_REPORT_SOURCE))
		return -EINVAL;
	err = flags_from_attrs(info, SHIFT_FT_REPORT_F_ALL, &flags);
	if (err)
		return err;

	sft_table_lock();
	slot = port_from_attrs(info);
	err = slot < 0 ? slot :
	      sft_path_report(slot, nla_data(a[SHIFT_FT_A_REMOTE_GID]),
			      nla_get_u8(a[SHIFT_FT_A_REPORT_STATE]),
			      nla_get_u8(a[SHIFT_FT_A_REPORT_SOURCE]),
			      task_tgid_nr(current), info->snd_portid,
			      NETLINK_CB(skb).sk, flags, info->extack);
	sft_table_unlock();
	return err;
}

static int sft_nl_path_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *src = info->attrs[SHIFT_FT_A_REPORT_SOURCE];
	int slot, err;

	if (GENL_REQ_ATTR_CHECK(info, SHIFT_FT_A_REMOTE_GID))
		return -EINVAL;
	sft_table_lock();
	slot = port_from_attrs(info);
	err = slot < 0 ? slot :
	      sft_path_delete(slot,
			      nla_data(info->attrs[SHIFT_FT_A_REMOTE_GID]),
			      src ? nla_get_u8(src) : SHIFT_FT_SRC_NONE,
			      info->extack);
	sft_table_unlock();
	return err;
}

static const struct genl_ops sft_ops[] = {
	{
		.cmd	= SHIFT_FT_CMD_PORT_GET,
		.policy	= sft_port_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_port_get_doit,
		.dumpit	= sft_nl_port_get_dumpit,
	},
	{
		.cmd	= SHIFT_FT_CMD_PAIR_GET,
		.policy	= sft_port_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_pair_get_doit,
		.dumpit	= sft_nl_pair_get_dumpit,
	},
	{
		.cmd	= SHIFT_FT_CMD_PAIR_SET,
		.policy	= sft_pair_set_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_pair_set_doit,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= SHIFT_FT_CMD_PAIR_CLEAR,
		.policy	= sft_pair_clear_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_pair_clear_doit,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= SHIFT_FT_CMD_PATH_GET,
		.policy	= sft_path_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_path_get_doit,
		.dumpit	= sft_nl_path_get_dumpit,
	},
	{
		.cmd	= SHIFT_FT_CMD_PATH_REPORT,
		.policy	= sft_path_report_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_path_report_doit,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= SHIFT_FT_CMD_PATH_DEL,
		.policy	= sft_path_del_policy,
		.maxattr = SHIFT_FT_A_MAX,
		.doit	= sft_nl_path_del_doit,
		.flags	= GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group sft_mcgrps[] = {
	[SFT_MCGRP_EVENTS] = { .name = SHIFT_FT_MCGRP_EVENTS },
};

static struct genl_family sft_family __ro_after_init = {
	.name		= SHIFT_FT_GENL_NAME,
	.version	= SHIFT_FT_GENL_VERSION,
	.maxattr	= SHIFT_FT_A_MAX,
	.netnsok	= false,
	.module		= THIS_MODULE,
	.ops		= sft_ops,
	.n_ops		= ARRAY_SIZE(sft_ops),
	.mcgrps		= sft_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(sft_mcgrps),
	SFT_GENL_RESV_START_OP(SHIFT_FT_CMD_PORT_GET)
};

/*
 * A SHIFT_FT_REPORT_F_WITHDRAW report lasts as long as the socket it came
 * on (uapi): told of every netlink socket released, in process context.
 */
static int sft_nl_release(struct notifier_block *nb, unsigned long event,
			  void *ptr)
{
	struct netlink_notify *n = ptr;

	if (event == NETLINK_URELEASE && n->protocol == NETLINK_GENERIC &&
	    n->portid && net_eq(n->net, &init_net))
		sft_path_reporter_gone(n->portid);
	return NOTIFY_DONE;
}

static struct notifier_block sft_nl_notifier = {
	.notifier_call = sft_nl_release,
};

int __init sft_nl_init(void)
{
	int err;

	err = netlink_register_notifier(&sft_nl_notifier);
	if (err)
		return err;
	err = genl_register_family(&sft_family);
	if (err)
		netlink_unregister_notifier(&sft_nl_notifier);
	return err;
}

void sft_nl_exit(void)
{
	genl_unregister_family(&sft_family);
	netlink_unregister_notifier(&sft_nl_notifier);
}

/* lets a "shift_ft" family lookup load the module */
MODULE_ALIAS_GENL_FAMILY(SHIFT_FT_GENL_NAME);
