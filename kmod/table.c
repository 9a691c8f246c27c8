// SPDX-License-Identifier: GPL-2.0
/*
 * The health table and the page that carries it.
 *
 * Rows live in a vmalloc_user() area that /dev/shift_ft maps read-only.
 * Only this file writes it, always under tbl.lock and inside a seqcount
 * write section (change_begin/change_end), so a reader following the loop
 * documented in uapi/shift_ft.h never sees a torn row.  Each write section
 * bumps the generation once and ends by multicasting one message per row
 * it changed, then waking poll().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/topology.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <net/sock.h>

#include "table.h"
#include "netlink.h"

struct sft_pair_cfg {
	struct list_head list;
	char dev[SHIFT_FT_DEV_NAME_LEN];
	u32 port;
	char bdev[SHIFT_FT_DEV_NAME_LEN];
	u32 bport;
};

static struct {
	struct mutex lock;		/* serialises all writers */
	void *page;
	size_t map_size;
	struct shift_ft_page_hdr *hdr;
	struct shift_ft_page_port *ports;
	struct shift_ft_page_path *paths;
	u32 port_max;
	u32 path_max;
	/* free rows only F_WITHDRAW reports may take (reserved_paths) */
	u32 path_reserved;
	u64 gen;			/* mirrors hdr->generation */
	wait_queue_head_t wq;		/* poll() on /dev/shift_ft */

	/* rows changed by the current write section, announced at its end */
	unsigned long *port_dirty;
	unsigned long *pair_dirty;
	unsigned long *path_dirty;
	u32 cause;			/* enum shift_ft_event of the section */
	struct sk_buff_head deleted;	/* DEL messages built before the rows went */

	struct list_head pair_cfg;
	unsigned int n_pair_cfg;

	/*
	 * Events per port and cause, for netlink only (the page has no room
	 * for them): reset when a slot gets a new row, so a removed row's
	 * DEL message still carries its final counts.
	 */
	u64 (*ev_counts)[__SHIFT_FT_EV_MAX];

	/*
	 * The netlink port a SHIFT_FT_REPORT_F_WITHDRAW report on each path
	 * row came from (0: none): the report is withdrawn when that socket
	 * goes (sft_path_reporter_gone()).  Written under tbl.lock.
	 */
	u32 *report_portid;
	/*
	 * Netlink port -> struct sft_owner, an entry only while it owns a
	 * row.  Written under tbl.lock (owner_hold(), owner_put()); looked up
	 * without it by sft_path_reporter_gone(), so that closing one of the
	 * many sockets that own no row costs one RCU lookup, not the table
	 * lock and a scan of the path table.
	 */
	struct xarray owners;
} tbl;

/*
 * The socket a netlink port's WITHDRAW reports came on, held while it owns
 * rows.  A port names a socket only until it is released: netlink frees
 * the port (netlink_remove()) before it tells the release
 * (NETLINK_URELEASE), and another socket, of the same process most often,
 * may bind it in between and report.  The release is told only the port,
 * so the socket tells whose it is: the one released is already orphaned
 * (SOCK_DEAD) when it is told.
 */
struct sft_owner {
	struct sock *sk;
	unsigned long rows;
};

static bool row_valid(u32 flags)
{
	return flags & SHIFT_FT_ROW_VALID;
}

/*
 * Context: process, tbl.lock held.  Opens the seqcount write section: the
 * odd count is visible before any row store (pairs with the reader's
 * acquire load of seq, then its fence and re-check).
 */
static void change_begin(u32 cause)
{
	lockdep_assert_held(&tbl.lock);
	tbl.cause = cause;
	WRITE_ONCE(tbl.hdr->seq, tbl.hdr->seq + 1);
	/* odd count before rows: pairs with the reader's re-check of seq */
	smp_wmb();
}

/*
 * Context: process, tbl.lock held.  Publishes the new generation, closes
 * the section (row stores are visible before the even count: pairs with the
 * reader's acquire fence), then announces what changed.
 */
static void change_end(void)
{
	struct shift_ft_page_hdr *hdr = tbl.hdr;
	u32 i;

	WRITE_ONCE(hdr->generation, ++tbl.gen);
	/* rows before even count: pairs with the reader's acquire of seq */
	smp_wmb();
	WRITE_ONCE(hdr->seq, hdr->seq + 1);

	/* listeners hear of a change only once the page shows it */
	sft_nl_send_all(&tbl.deleted);
	for_each_set_bit(i, tbl.port_dirty, tbl.port_max)
		sft_nl_notify_port(NULL, SHIFT_FT_CMD_PORT_NEW, i,
				   &tbl.ports[i], tbl.cause, tbl.gen);
	for_each_set_bit(i, tbl.pair_dirty, tbl.port_max)
		sft_nl_notify_pair(i, tbl.cause, tbl.gen);
	for_each_set_bit(i, tbl.path_dirty, tbl.path_max)
		sft_nl_notify_path(NULL, SHIFT_FT_CMD_PATH_NEW, i,
				   &tbl.paths[i], tbl.cause, tbl.gen);
	bitmap_zero(tbl.port_dirty, tbl.port_max);
	bitmap_zero(tbl.pair_dirty, tbl.port_max);
	bitmap_zero(tbl.path_dirty, tbl.path_max);

	wake_up_interruptible_all(&tbl.wq);
}

/* Context: inside a write section.  Records @event as the latest on @slot. */
static void port_event(u32 slot, u32 event)
{
	tbl.ports[slot].last_event = event;
	tbl.ports[slot].event_count++;
	if (event < __SHIFT_FT_EV_MAX)
		tbl.ev_counts[slot][event]++;
}

static bool port_up(u32 slot)
{
	return slot != SHIFT_FT_NO_PORT &&
	       tbl.ports[slot].state == SHIFT_FT_PORT_ACTIVE;
}

static u8 pair_state(u32 slot, u32 backup)
{
	bool p = port_up(slot), b = port_up(backup);

	if (backup == SHIFT_FT_NO_PORT)
		return SHIFT_FT_PAIR_NONE;
	if (p && b)
		return SHIFT_FT_PAIR_BOTH_UP;
	if (b)
		return SHIFT_FT_PAIR_PRIMARY_DOWN;
	if (p)
		return SHIFT_FT_PAIR_BACKUP_DOWN;
	return SHIFT_FT_PAIR_BOTH_DOWN;
}

static int numa_cost(s32 a, s32 b)
{
	if (a == b)
		return 0;
	if (a < 0 || b < 0)
		return LOCAL_DISTANCE;
	return node_distance(a, b);
}

/*
 * The automatic backup of @slot: a port of another device with the same
 * link layer, nearest NUMA node first, then the next slot after @slot
 * cyclically, so that with several NICs each backs up the next one and no
 * single NIC takes everybody's traffic.
 */
static u32 auto_backup(u32 slot)
{
	const struct shift_ft_page_port *p = &tbl.ports[slot];
	u32 best = SHIFT_FT_NO_PORT;
	int best_cost = INT_MAX;
	u32 k;

	for (k = 1; k < tbl.port_max; k++) {
		u32 j = (slot + k) % tbl.port_max;
		const struct shift_ft_page_port *q = &tbl.ports[j];
		int cost;

		if (!row_valid(q->flags) || q->dev_index == p->dev_index ||
		    q->link_layer != p->link_layer)
			continue;
		cost = numa_cost(p->numa_node, q->numa_node);
		if (cost < best_cost) {
			best = j;
			best_cost = cost;
		}
	}
	return best;
}

static struct sft_pair_cfg *pair_cfg_find(const char *dev, u32 port)
{
	struct sft_pair_cfg *c;

	list_for_each_entry(c, &tbl.pair_cfg, list)
		if (c->port == port && !strcmp(c->dev, dev))
			return c;
	return NULL;
}

/* Context: tbl.lock held.  Finds a valid row by device name and port. */
int sft_port_lookup(const char *dev_name, u32 port_num)
{
	u32 i;

	lockdep_assert_held(&tbl.lock);
	for (i = 0; i < tbl.port_max; i++) {
		const struct shift_ft_page_port *p = &tbl.ports[i];

		if (row_valid(p->flags) && p->port_num == port_num &&
		    !strcmp(p->dev_name, dev_name))
			return i;
	}
	return -ENODEV;
}

/*
 * Context: inside a write section.  Re-derives every pair (backup choice and
 * state) and marks the ones that changed.  O(ports^2), which is fine for the
 * tens of ports a host has and runs only on changes.
 */
static void pairs_refresh(void)
{
	u32 i;

	for (i = 0; i < tbl.port_max; i++) {
		struct shift_ft_page_port *p = &tbl.ports[i];
		struct sft_pair_cfg *c;
		u32 backup, flags = 0;
		u8 state;

		if (!row_valid(p->flags))
			continue;
		c = pair_cfg_find(p->dev_name, p->port_num);
		if (c) {
			int b = sft_port_lookup(c->bdev, c->bport);

			backup = b < 0 ? SHIFT_FT_NO_PORT : b;
			flags |= SHIFT_FT_PAIR_F_CONFIGURED;
		} else {
			backup = auto_backup(i);
		}
		state = pair_state(i, backup);
		if (backup == p->backup_index && state == p->pair_state &&
		    flags == p->pair_flags)
			continue;
		p->backup_index = backup;
		p->pair_state = state;
		p->pair_flags = flags;
		set_bit(i, tbl.pair_dirty);
		set_bit(i, tbl.port_dirty);
	}
}

static u8 path_effective(const struct shift_ft_page_path *r)
{
	if (!port_up(r->port_index))
		return SHIFT_FT_PATH_DOWN;
	return r->report_state;
}

/* Context: inside a write section.  Sets a path's effective state. */
static void path_set_state(u32 idx, u8 state)
{
	struct shift_ft_page_path *r = &tbl.paths[idx];

	if (r->state == state)
		return;
	if (state == SHIFT_FT_PATH_DOWN)
		r->down_count++;
	r->state = state;
	r->last_change_ns = ktime_get_ns();
	set_bit(idx, tbl.path_dirty);
}

/* Context: inside a write section.  Paths follow their local port. */
static void paths_follow_port(u32 slot)
{
	u32 i;

	for (i = 0; i < tbl.path_max; i++) {
		struct shift_ft_page_path *r = &tbl.paths[i];

		if (row_valid(r->flags) && r->port_index == slot)
			path_set_state(i, path_effective(r));
	}
}

static void reporter_withdraw(u32 portid, unsigned long n);

/*
 * Context: tbl.lock held, before the write section that gives a row to
 * @portid, whose request came on socket @sk (it may allocate, and fail
 * with -ENOMEM).  Counts one more row owned by @portid; path_report_owner()
 * hands it to the row.  Rows the port's earlier socket still owns go
 * first: that socket is being released (the port was free to bind), and
 * its release, told later, finds this one alive and leaves it.
 */
static int owner_hold(u32 portid, struct sock *sk)
{
	struct sft_owner *o = xa_load(&tbl.owners, portid);
	int err;

	lockdep_assert_held(&tbl.lock);
	if (o && o->sk != sk) {
		reporter_withdraw(portid, o->rows);
		o = NULL;
	}
	if (!o) {
		o = kzalloc(sizeof(*o), GFP_KERNEL);
		if (!o)
			return -ENOMEM;
		err = xa_err(xa_store(&tbl.owners, portid, o, GFP_KERNEL));
		if (err) {
			kfree(o);
			return err;
		}
		sock_hold(sk);
		o->sk = sk;
	}
	o->rows++;
	return 0;
}

/* Context: tbl.lock held.  Cannot fail: the entry exists or goes. */
static void owner_put(u32 portid)
{
	struct sft_owner *o = xa_load(&tbl.owners, portid);

	lockdep_assert_held(&tbl.lock);
	if (--o->rows)
		return;
	xa_erase(&tbl.owners, portid);
	sock_put(o->sk);
	kfree(o);
}

/*
 * Context: inside a write section.  Row @idx's report now goes with
 * netlink port @portid's socket (0: with none); a non-zero @portid was
 * counted by owner_hold() beforehand.
 */
static void path_report_owner(u32 idx, u32 portid)
{
	if (tbl.report_portid[idx])
		owner_put(tbl.report_portid[idx]);
	tbl.report_portid[idx] = portid;
}

/*
 * Context: inside a write section.  Forgets row @idx, announcing a
 * PATH_DEL caused by @event once the section ends.
 */
static void path_forget(u32 idx, u32 event)
{
	struct shift_ft_page_path *r = &tbl.paths[idx];

	sft_nl_notify_path(&tbl.deleted, SHIFT_FT_CMD_PATH_DEL, idx, r, event,
			   tbl.gen + 1);
	/* the reporter's socket no longer owns the row it may outlive */
	path_report_owner(idx, 0);
	memset(r, 0, sizeof(*r));
	tbl.hdr->path_count--;
	clear_bit(idx, tbl.path_dirty);
}

/*
 * Everything but the device name, which only sft_port_add() and
 * sft_port_rename() write: see sft_port_update().
 */
static void copy_attrs(struct shift_ft_page_port *p,
		       const struct sft_port_attrs *a)
{
	p->dev_index = a->dev_index;
	p->port_num = a->port_num;
	p->ifindex = a->ifindex;
	p->node_guid = a->node_guid;
	memcpy(p->netdev, a->netdev, sizeof(p->netdev));
	p->link_layer = a->link_layer;
	p->phys_state = a->phys_state;
	p->width = a->width;
	p->speed = a->speed;
	p->mtu = a->mtu;
	p->numa_node = a->numa_node;
}

/*
 * Context: process (the ib client's add path).  Returns the slot of the new
 * row, or -ENOSPC when every slot is taken; the caller says so in the log.
 */
int sft_port_add(const struct sft_port_attrs *a)
{
	struct shift_ft_page_port *p;
	u32 slot;

	mutex_lock(&tbl.lock);
	for (slot = 0; slot < tbl.port_max; slot++)
		if (!row_valid(tbl.ports[slot].flags))
			break;
	if (slot == tbl.port_max) {
		mutex_unlock(&tbl.lock);
		return -ENOSPC;
	}

	change_begin(SHIFT_FT_EV_DEVICE_ADD);
	p = &tbl.ports[slot];
	memset(p, 0, sizeof(*p));
	copy_attrs(p, a);
	memcpy(p->dev_name, a->dev_name, sizeof(p->dev_name));
	p->state = a->state;
	p->last_change_ns = ktime_get_ns();
	memset(tbl.ev_counts[slot], 0, sizeof(tbl.ev_counts[slot]));
	port_event(slot, SHIFT_FT_EV_DEVICE_ADD);
	p->backup_index = SHIFT_FT_NO_PORT;
	p->pair_state = SHIFT_FT_PAIR_NONE;
	p->flags = SHIFT_FT_ROW_VALID;
	tbl.hdr->port_count++;
	set_bit(slot, tbl.port_dirty);
	pairs_refresh();
	change_end();
	mutex_unlock(&tbl.lock);
	return slot;
}

/*
 * Context: process (the ib client's worker).  Records the port's queried
 * attributes and the event that led to the query.
 *
 * @a->dev_name is ignored: the worker cannot read the device's name safely
 * (device_rename() replaces it under the core's devices_rwsem, which the
 * worker cannot take), and a name it read just before a rename would undo
 * sft_port_rename() here.  The row's name is written only by
 * sft_port_add() and sft_port_rename(), which the core calls with
 * devices_rwsem held, serialised with renames.
 */
void sft_port_update(u32 slot, const struct sft_port_attrs *a, u32 event)
{
	struct shift_ft_page_port *p = &tbl.ports[slot];

	mutex_lock(&tbl.lock);
	if (WARN_ON_ONCE(!row_valid(p->flags)))
		goto out_unlock;

	change_begin(event);
	if (p->state != a->state) {
		if (p->state == SHIFT_FT_PORT_ACTIVE)
			p->down_count++;
		p->state = a->state;
		p->last_change_ns = ktime_get_ns();
	}
	copy_attrs(p, a);
	port_event(slot, event);
	set_bit(slot, tbl.port_dirty);
	pairs_refresh();
	paths_follow_port(slot);
	change_end();
out_unlock:
	mutex_unlock(&tbl.lock);
}

/*
 * Context: process (the ib client's rename callback, devices_rwsem held by
 * the core).  The only writer of a row's name after sft_port_add().
 */
void sft_port_rename(u32 slot, const char *name)
{
	struct shift_ft_page_port *p = &tbl.ports[slot];

	mutex_lock(&tbl.lock);
	if (row_valid(p->flags)) {
		change_begin(SHIFT_FT_EV_DEVICE_RENAME);
		strscpy(p->dev_name, name, sizeof(p->dev_name));
		port_event(slot, SHIFT_FT_EV_DEVICE_RENAME);
		set_bit(slot, tbl.port_dirty);
		/* overrides are by name: the rename may bind or unbind one */
		pairs_refresh();
		change_end();
	}
	mutex_unlock(&tbl.lock);
}

/*
 * Context: process (device removal or module unload).  The row's paths go
 * with it, so that a later device reusing the slot starts clean.
 */
void sft_port_remove(u32 slot)
{
	struct shift_ft_page_port *p = &tbl.ports[slot];
	struct shift_ft_page_port gone;
	u32 i;

	mutex_lock(&tbl.lock);
	if (!row_valid(p->flags))
		goto out_unlock;

	change_begin(SHIFT_FT_EV_DEVICE_REMOVE);
	gone = *p;
	gone.last_event = SHIFT_FT_EV_DEVICE_REMOVE;
	for (i = 0; i < tbl.path_max; i++) {
		struct shift_ft_page_path *r = &tbl.paths[i];

		if (row_valid(r->flags) && r->port_index == slot)
			path_forget(i, SHIFT_FT_EV_DEVICE_REMOVE);
	}
	memset(p, 0, sizeof(*p));
	p->backup_index = SHIFT_FT_NO_PORT;
	tbl.hdr->port_count--;
	clear_bit(slot, tbl.port_dirty);
	sft_nl_notify_port(&tbl.deleted, SHIFT_FT_CMD_PORT_DEL, slot, &gone,
			   SHIFT_FT_EV_DEVICE_REMOVE, tbl.gen + 1);
	pairs_refresh();
	change_end();
out_unlock:
	mutex_unlock(&tbl.lock);
}

int sft_pair_set(const char *dev, u32 port, const char *bdev, u32 bport,
		 struct netlink_ext_ack *extack)
{
	struct sft_pair_cfg *c;
	int err = 0;

	if (port == bport && !strcmp(dev, bdev)) {
		NL_SET_ERR_MSG(extack, "A port cannot be its own backup");
		return -EINVAL;
	}

	mutex_lock(&tbl.lock);
	c = pair_cfg_find(dev, port);
	if (!c) {
		if (tbl.n_pair_cfg >= SHIFT_FT_MAX_PAIR_CONFIG) {
			NL_SET_ERR_MSG(extack, "Too many pair overrides");
			err = -ENOSPC;
			goto out_unlock;
		}
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			err = -ENOMEM;
			goto out_unlock;
		}
		strscpy(c->dev, dev, sizeof(c->dev));
		c->port = port;
		list_add_tail(&c->list, &tbl.pair_cfg);
		tbl.n_pair_cfg++;
	}
	strscpy(c->bdev, bdev, sizeof(c->bdev));
	c->bport = bport;

	change_begin(SHIFT_FT_EV_PAIR_CONFIG);
	pairs_refresh();
	change_end();
out_unlock:
	mutex_unlock(&tbl.lock);
	return err;
}

int sft_pair_clear(const char *dev, u32 port, struct netlink_ext_ack *extack)
{
	struct sft_pair_cfg *c;
	int err = 0;

	mutex_lock(&tbl.lock);
	c = pair_cfg_find(dev, port);
	if (!c) {
		NL_SET_ERR_MSG(extack, "No pair override for this port");
		err = -ENOENT;
		goto out_unlock;
	}
	list_del(&c->list);
	tbl.n_pair_cfg--;
	kfree(c);

	change_begin(SHIFT_FT_EV_PAIR_CONFIG);
	pairs_refresh();
	change_end();
out_unlock:
	mutex_unlock(&tbl.lock);
	return err;
}

/* Context: tbl.lock held. */
int sft_path_lookup(u32 slot, const u8 *gid)
{
	u32 i;

	lockdep_assert_held(&tbl.lock);
	for (i = 0; i < tbl.path_max; i++) {
		const struct shift_ft_page_path *r = &tbl.paths[i];

		if (row_valid(r->flags) && r->port_index == slot &&
		    !memcmp(r->remote_gid, gid, SHIFT_FT_GID_LEN))
			return i;
	}
	return -ENOENT;
}

/* A row whose report was withdrawn: it tells nothing a missing row would not. */
static bool path_idle(const struct shift_ft_page_path *r)
{
	return row_valid(r->flags) && r->report_source == SHIFT_FT_SRC_NONE;
}

/* A row whose report was made without F_WITHDRAW (an agent's): it stays. */
static bool path_kept(u32 idx)
{
	const struct shift_ft_page_path *r = &tbl.paths[idx];

	return row_valid(r->flags) && r->report_source != SHIFT_FT_SRC_NONE &&
	       !tbl.report_portid[idx];
}

/*
 * Context: tbl.lock held.  The slot of a report that needs a row (@idx < 0:
 * none exists yet; else row @idx, which a report without F_WITHDRAW is to
 * take over).  Rows of reports without F_WITHDRAW may not number more than
 * path_max - path_reserved, so that whatever the agents report, the host's
 * own applications (whose reports are F_WITHDRAW) can hold path_reserved
 * rows.  A new row takes a free slot, else the slot of the row idle the
 * longest (*@recycle).
 */
static int path_slot_for(int idx, bool withdraw, bool *recycle,
			 struct netlink_ext_ack *extack)
{
	int free_idx = -1, idle_idx = -1;
	u32 i, kept = 0;

	*recycle = false;
	for (i = 0; i < tbl.path_max; i++) {
		const struct shift_ft_page_path *r = &tbl.paths[i];

		if (!row_valid(r->flags)) {
			if (free_idx < 0)
				free_idx = i;
		} else if (path_idle(r)) {
			if (idle_idx < 0 ||
			    r->report_ns < tbl.paths[idle_idx].report_ns)
				idle_idx = i;
		} else if (!tbl.report_portid[i]) {
			kept++;
		}
	}
	if (idx < 0 && free_idx < 0 && idle_idx < 0) {
		NL_SET_ERR_MSG_MOD(extack, "path table full (see max_paths)");
		return -ENOSPC;
	}
	if (!withdraw && kept >= tbl.path_max - tbl.path_reserved) {
		NL_SET_ERR_MSG_MOD(extack,
				   "path table full for reports without F_WITHDRAW (see reserved_paths)");
		return -ENOSPC;
	}
	if (idx >= 0)
		return idx;
	if (free_idx >= 0)
		return free_idx;
	*recycle = true;
	return idle_idx;
}

/* Context: process (netlink), tbl.lock held by the caller. */
int sft_path_report(u32 slot, const u8 *gid, u8 state, u8 source, u32 pid,
		    u32 portid, struct sock *sk, u32 flags,
		    struct netlink_ext_ack *extack)
{
	u32 owner = flags & SHIFT_FT_REPORT_F_WITHDRAW ? portid : 0;
	struct shift_ft_page_path *r;
	bool recycle = false;
	int idx, err;

	lockdep_assert_held(&tbl.lock);
	idx = sft_path_lookup(slot, gid);
	if (idx < 0 && (flags & SHIFT_FT_REPORT_F_NOCREATE)) {
		NL_SET_ERR_MSG(extack, "No such path");
		return -ENOENT;
	}
	if (idx < 0 || (!owner && !path_kept(idx))) {
		idx = path_slot_for(idx, owner, &recycle, extack);
		if (idx < 0)
			return idx;
	}
	if (owner) {
		err = owner_hold(owner, sk);
		if (err)
			return err;
	}

	change_begin(SHIFT_FT_EV_PATH_REPORT);
	if (recycle)
		path_forget(idx, SHIFT_FT_EV_PATH_REPORT);
	r = &tbl.paths[idx];
	if (!row_valid(r->flags)) {
		memset(r, 0, sizeof(*r));
		r->port_index = slot;
		memcpy(r->remote_gid, gid, SHIFT_FT_GID_LEN);
		r->state = SHIFT_FT_PATH_UNKNOWN;
		r->last_change_ns = ktime_get_ns();
		r->flags = SHIFT_FT_ROW_VALID;
		tbl.hdr->path_count++;
	}
	r->report_state = state;
	r->report_source = source;
	r->report_pid = pid;
	r->report_ns = ktime_get_ns();
	path_report_owner(idx, owner);
	set_bit(idx, tbl.path_dirty);
	path_set_state(idx, path_effective(r));
	change_end();
	return 0;
}

/*
 * Context: inside tbl.lock, outside a write section.  The @n rows netlink
 * port @portid owns lose their reports, and the port its entry.
 */
static void reporter_withdraw(u32 portid, unsigned long n)
{
	u32 i;

	change_begin(SHIFT_FT_EV_REPORTER_GONE);
	for (i = 0; n && i < tbl.path_max; i++) {
		struct shift_ft_page_path *r = &tbl.paths[i];

		if (tbl.report_portid[i] != portid)
			continue;
		n--;
		r->report_state = SHIFT_FT_PATH_UNKNOWN;
		r->report_source = SHIFT_FT_SRC_NONE;
		r->report_pid = 0;
		r->report_ns = ktime_get_ns();
		/* the last one frees the entry */
		path_report_owner(i, 0);
		set_bit(i, tbl.path_dirty);
		path_set_state(i, path_effective(r));
	}
	change_end();
}

/*
 * Context: process (the release of any netlink socket, whoever owns it),
 * may sleep.  The SHIFT_FT_REPORT_F_WITHDRAW reports that came on netlink
 * port @portid are withdrawn, unless the port now names another socket,
 * alive (struct sft_owner): its earlier one's reports went already.
 *
 * Most sockets never made such a report: the lookup tells so without
 * tbl.lock.  One that did has its entry until it is withdrawn here or by
 * owner_hold().
 */
void sft_path_reporter_gone(u32 portid)
{
	struct sft_owner *o;

	if (!xa_load(&tbl.owners, portid))
		return;

	mutex_lock(&tbl.lock);
	o = xa_load(&tbl.owners, portid);
	if (o && sock_flag(o->sk, SOCK_DEAD))
		reporter_withdraw(portid, o->rows);
	mutex_unlock(&tbl.lock);
}

/*
 * Context: process (netlink), tbl.lock held by the caller.  With @source
 * (not SHIFT_FT_SRC_NONE), only a row whose last report came from that
 * source goes: an agent forgets its own rows, never an application's
 * report that came after its own.
 */
int sft_path_delete(u32 slot, const u8 *gid, u8 source,
		    struct netlink_ext_ack *extack)
{
	int idx;

	lockdep_assert_held(&tbl.lock);
	idx = sft_path_lookup(slot, gid);
	if (idx < 0) {
		NL_SET_ERR_MSG(extack, "No such path");
		return idx;
	}
	if (source != SHIFT_FT_SRC_NONE &&
	    tbl.paths[idx].report_source != source) {
		NL_SET_ERR_MSG(extack, "The path's last report is another source's");
		return -EBUSY;
	}

	change_begin(SHIFT_FT_EV_PATH_DELETE);
	path_forget(idx, SHIFT_FT_EV_PATH_DELETE);
	change_end();
	return 0;
}

void sft_table_lock(void)
{
	mutex_lock(&tbl.lock);
}

void sft_table_unlock(void)
{
	mutex_unlock(&tbl.lock);
}

u64 sft_table_gen_locked(void)
{
	lockdep_assert_held(&tbl.lock);
	return tbl.gen;
}

u32 sft_table_port_max(void)
{
	return tbl.port_max;
}

u32 sft_table_path_max(void)
{
	return tbl.path_max;
}

/* Context: tbl.lock held.  NULL for an unused slot or one out of range. */
const struct shift_ft_page_port *sft_port_row(u32 slot)
{
	lockdep_assert_held(&tbl.lock);
	if (slot >= tbl.port_max || !row_valid(tbl.ports[slot].flags))
		return NULL;
	return &tbl.ports[slot];
}

/* Context: tbl.lock held.  Events of @slot by cause, __SHIFT_FT_EV_MAX of them. */
const u64 *sft_port_ev_counts(u32 slot)
{
	lockdep_assert_held(&tbl.lock);
	return slot < tbl.port_max ? tbl.ev_counts[slot] : NULL;
}

const struct shift_ft_page_path *sft_path_row(u32 idx)
{
	lockdep_assert_held(&tbl.lock);
	if (idx >= tbl.path_max || !row_valid(tbl.paths[idx].flags))
		return NULL;
	return &tbl.paths[idx];
}

void *sft_table_page(void)
{
	return tbl.page;
}

size_t sft_table_map_size(void)
{
	return tbl.map_size;
}

/* Any context: a racy snapshot is all poll() and read() need. */
u64 sft_table_generation(void)
{
	return READ_ONCE(tbl.hdr->generation);
}

wait_queue_head_t *sft_table_waitq(void)
{
	return &tbl.wq;
}

int sft_table_init(u32 port_max, u32 path_max, u32 path_reserved)
{
	struct shift_ft_page_hdr *hdr;
	size_t port_off, path_off, size;
	u32 i;

	port_off = ALIGN(sizeof(*hdr), 64);
	path_off = ALIGN(port_off + (size_t)port_max * sizeof(*tbl.ports), 64);
	size = PAGE_ALIGN(path_off + (size_t)path_max * sizeof(*tbl.paths));

	mutex_init(&tbl.lock);
	init_waitqueue_head(&tbl.wq);
	skb_queue_head_init(&tbl.deleted);
	INIT_LIST_HEAD(&tbl.pair_cfg);
	xa_init(&tbl.owners);
	tbl.port_max = port_max;
	tbl.path_max = path_max;
	tbl.path_reserved = path_reserved;

	tbl.port_dirty = bitmap_zalloc(port_max, GFP_KERNEL);
	if (!tbl.port_dirty)
		goto err_port_dirty;
	tbl.pair_dirty = bitmap_zalloc(port_max, GFP_KERNEL);
	if (!tbl.pair_dirty)
		goto err_pair_dirty;
	tbl.path_dirty = bitmap_zalloc(path_max, GFP_KERNEL);
	if (!tbl.path_dirty)
		goto err_path_dirty;
	tbl.ev_counts = kcalloc(port_max, sizeof(*tbl.ev_counts), GFP_KERNEL);
	if (!tbl.ev_counts)
		goto err_ev_counts;
	tbl.report_portid = kcalloc(path_max, sizeof(*tbl.report_portid), GFP_KERNEL);
	if (!tbl.report_portid)
		goto err_report_portid;

	/* zeroed, and allowed to be remapped to userspace */
	tbl.page = vmalloc_user(size);
	if (!tbl.page)
		goto err_page;
	tbl.map_size = size;

	hdr = tbl.page;
	tbl.hdr = hdr;
	tbl.ports = tbl.page + port_off;
	tbl.paths = tbl.page + path_off;
	for (i = 0; i < port_max; i++)
		tbl.ports[i].backup_index = SHIFT_FT_NO_PORT;

	hdr->magic = SHIFT_FT_PAGE_MAGIC;
	hdr->version = SHIFT_FT_PAGE_VERSION;
	hdr->compat_version = SHIFT_FT_PAGE_COMPAT_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->features = SHIFT_FT_FEAT_PAIRS | SHIFT_FT_FEAT_PATHS;
	hdr->port_offset = port_off;
	hdr->port_entry_size = sizeof(*tbl.ports);
	hdr->port_max = port_max;
	hdr->path_offset = path_off;
	hdr->path_entry_size = sizeof(*tbl.paths);
	hdr->path_max = path_max;
	hdr->map_size = size;
	return 0;

err_page:
	kfree(tbl.report_portid);
err_report_portid:
	kfree(tbl.ev_counts);
err_ev_counts:
	bitmap_free(tbl.path_dirty);
err_path_dirty:
	bitmap_free(tbl.pair_dirty);
err_pair_dirty:
	bitmap_free(tbl.port_dirty);
err_port_dirty:
	return -ENOMEM;
}

/*
 * Context: module exit, after every device is gone and netlink and the
 * char device are unregistered.  Mappings that outlive the module cannot
 * exist: an open file or mapping of /dev/shift_ft pins the module.
 */
void sft_table_exit(void)
{
	struct sft_pair_cfg *c, *tmp;

	list_for_each_entry_safe(c, tmp, &tbl.pair_cfg, list)
		kfree(c);
	vfree(tbl.page);
	/* empty: every owned row went with its port (sft_port_remove()) */
	xa_destroy(&tbl.owners);
	kfree(tbl.report_portid);
	kfree(tbl.ev_counts);
	bitmap_free(tbl.path_dirty);
	bitmap_free(tbl.pair_dirty);
	bitmap_free(tbl.port_dirty);
}
