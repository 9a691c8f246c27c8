// SPDX-License-Identifier: GPL-2.0
/*
 * The ib_client: one sft_dev per RDMA device, one table row per port.
 *
 * Asynchronous events are recorded as bits per port and handed to a work
 * item; the worker queries the port (which may sleep) and updates the table.
 * Devices present at load, added later, renamed and removed are all seen
 * through the client callbacks.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "client.h"
#include "compat.h"
#include "table.h"

/* Pending bit 0 (SHIFT_FT_EV_NONE) asks the worker for a resynchronisation. */
#define SFT_RESYNC	SHIFT_FT_EV_NONE

struct sft_dev_port {
	u32 slot;			/* table row, SHIFT_FT_NO_PORT: untracked */
	unsigned long pending;		/* BIT(enum shift_ft_event), atomic */
	struct sft_port_attrs attrs;	/* last seen; worker and add only */
};

struct sft_dev {
	struct ib_device *ibdev;
	struct ib_event_handler eh;
	struct work_struct work;
	u32 first_port;
	u32 nports;
	struct sft_dev_port ports[];
};

static struct workqueue_struct *sft_wq;
static struct ib_client sft_client;

static u32 sft_event_code(enum ib_event_type t)
{
	switch (t) {
	case IB_EVENT_PORT_ACTIVE:	return SHIFT_FT_EV_PORT_ACTIVE;
	case IB_EVENT_PORT_ERR:		return SHIFT_FT_EV_PORT_ERR;
	case IB_EVENT_LID_CHANGE:	return SHIFT_FT_EV_LID_CHANGE;
	case IB_EVENT_PKEY_CHANGE:	return SHIFT_FT_EV_PKEY_CHANGE;
	case IB_EVENT_SM_CHANGE:	return SHIFT_FT_EV_SM_CHANGE;
	case IB_EVENT_CLIENT_REREGISTER: return SHIFT_FT_EV_CLIENT_REREGISTER;
	case IB_EVENT_GID_CHANGE:	return SHIFT_FT_EV_GID_CHANGE;
	case IB_EVENT_DEVICE_FATAL:	return SHIFT_FT_EV_DEVICE_FATAL;
	default:			return SHIFT_FT_EV_NONE;
	}
}

/*
 * Context: any, including atomic (6.1 calls handlers from ib_wq, but drivers
 * and older cores have dispatched from interrupt context).  Range-check,
 * record, defer; nothing here sleeps or takes a lock.
 */
static void sft_event(struct ib_event_handler *eh, struct ib_event *e)
{
	struct sft_dev *d = container_of(eh, struct sft_dev, eh);
	u32 ev = sft_event_code(e->event);
	u32 i;

	if (ev == SHIFT_FT_EV_NONE)
		return;
	if (ev == SHIFT_FT_EV_DEVICE_FATAL) {
		for (i = 0; i < d->nports; i++)
			set_bit(ev, &d->ports[i].pending);
	} else {
		i = e->element.port_num - d->first_port;
		if (e->element.port_num < d->first_port || i >= d->nports)
			return;
		set_bit(ev, &d->ports[i].pending);
	}
	queue_work(sft_wq, &d->work);
}

static u32 lane_mbps(u16 speed)
{
	switch (speed) {
	case IB_SPEED_SDR:	return 2500;
	case IB_SPEED_DDR:	return 5000;
	case IB_SPEED_QDR:	return 10000;
	case IB_SPEED_FDR10:	return 10000;
	case IB_SPEED_FDR:	return 14062;
	case IB_SPEED_EDR:	return 25781;
	case IB_SPEED_HDR:	return 53125;
	case IB_SPEED_NDR:	return 106250;
	default:		return 0;
	}
}

static s32 sft_numa_node(struct ib_device *ibdev)
{
	if (ibdev->dev.parent)
		return dev_to_node(ibdev->dev.parent);
	if (ibdev->dma_device)
		return dev_to_node(ibdev->dma_device);
	return NUMA_NO_NODE;
}

/* The netdev behind a RoCE port, from its default GID's attributes. */
static void sft_query_netdev(struct ib_device *ibdev, u32 port,
			     struct sft_port_attrs *a)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;

	attr = rdma_get_gid_attr(ibdev, port, 0);
	if (IS_ERR(attr))
		return;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR(ndev)) {
		strscpy(a->netdev, ndev->name, sizeof(a->netdev));
		a->ifindex = ndev->ifindex;
	}
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
}

/*
 * Context: process, may sleep.  Fills @a from the device; on a failed query
 * (a dead device) the port keeps what was known and reads as DOWN.
 *
 * Not the name: the worker calls this too, and only .add and .rename run
 * under the core's devices_rwsem, which keeps dev_name() stable.
 * sft_add_dev() reads it; sft_rename() hands renames to the table.
 */
static void sft_query(struct sft_dev *d, u32 i, struct sft_port_attrs *a)
{
	struct ib_device *ibdev = d->ibdev;
	u32 port = d->first_port + i;
	struct ib_port_attr pa;
	int width, mtu;

	*a = d->ports[i].attrs;
	a->dev_index = ibdev->index;
	a->port_num = port;
	a->node_guid = be64_to_cpu(ibdev->node_guid);
	a->numa_node = sft_numa_node(ibdev);
	a->link_layer = rdma_protocol_roce(ibdev, port) ||
			rdma_port_get_link_layer(ibdev, port) ==
			IB_LINK_LAYER_ETHERNET ?
			SHIFT_FT_LINK_ETHERNET : SHIFT_FT_LINK_INFINIBAND;

	if (ib_query_port(ibdev, port, &pa)) {
		a->state = SHIFT_FT_PORT_DOWN;
		return;
	}
	width = ib_width_enum_to_int(pa.active_width);
	mtu = ib_mtu_enum_to_int(pa.active_mtu);
	a->state = pa.state;
	a->phys_state = pa.phys_state;
	a->width = width > 0 ? width : 0;
	a->speed = a->width * lane_mbps(pa.active_speed);
	a->mtu = mtu > 0 ? mtu : 0;
	if (a->link_layer == SHIFT_FT_LINK_ETHERNET)
		sft_query_netdev(ibdev, port, a);
}

/*
 * The order in which coalesced events are applied: a down before anything
 * else, an up last, so that a flap shorter than the worker's latency still
 * shows as a down (and counts) followed by an up.
 */
static const u8 sft_event_order[] = {
	SHIFT_FT_EV_PORT_ERR,
	SHIFT_FT_EV_DEVICE_FATAL,
	SHIFT_FT_EV_LID_CHANGE,
	SHIFT_FT_EV_PKEY_CHANGE,
	SHIFT_FT_EV_SM_CHANGE,
	SHIFT_FT_EV_CLIENT_REREGISTER,
	SHIFT_FT_EV_GID_CHANGE,
	SHIFT_FT_EV_PORT_ACTIVE,
};

/* Context: process (sft_wq), one instance per device at a time. */
static void sft_port_work(struct sft_dev *d, u32 i)
{
	struct sft_dev_port *dp = &d->ports[i];
	struct sft_port_attrs a;
	unsigned long pending;
	bool applied = false;
	unsigned int k;

	pending = xchg(&dp->pending, 0);
	if (!pending)
		return;
	sft_query(d, i, &a);

	for (k = 0; k < ARRAY_SIZE(sft_event_order); k++) {
		u32 ev = sft_event_order[k];
		struct sft_port_attrs seen = a;

		if (!(pending & BIT(ev)))
			continue;
		if ((ev == SHIFT_FT_EV_PORT_ERR || ev == SHIFT_FT_EV_DEVICE_FATAL) &&
		    seen.state == SHIFT_FT_PORT_ACTIVE &&
		    dp->attrs.state == SHIFT_FT_PORT_ACTIVE)
			seen.state = SHIFT_FT_PORT_DOWN;
		sft_port_update(dp->slot, &seen, ev);
		dp->attrs = seen;
		applied = true;
	}
	if (applied)
		return;
	/* a resync: only a difference is worth a change */
	if (memcmp(&a, &dp->attrs, sizeof(a)))
		sft_port_update(dp->slot, &a, SHIFT_FT_EV_NONE);
	dp->attrs = a;
}

static void sft_dev_work(struct work_struct *work)
{
	struct sft_dev *d = container_of(work, struct sft_dev, work);
	u32 i;

	for (i = 0; i < d->nports; i++) {
		/* not in the table yet (add still running) or never: keep bits */
		if (smp_load_acquire(&d->ports[i].slot) == SHIFT_FT_NO_PORT)
			continue;
		sft_port_work(d, i);
	}
}

/*
 * Context: process; the core holds the device registered until .remove.
 * The event handler goes in before the ports are read, and a resync runs
 * after, so that no event between the two is lost.
 */
static int sft_add_dev(struct ib_device *ibdev)
{
	u32 first = rdma_start_port(ibdev), n = rdma_end_port(ibdev) - first + 1;
	struct sft_dev *d;
	u32 i;

	d = kzalloc(struct_size(d, ports, n), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->ibdev = ibdev;
	d->first_port = first;
	d->nports = n;
	INIT_WORK(&d->work, sft_dev_work);
	for (i = 0; i < n; i++)
		d->ports[i].slot = SHIFT_FT_NO_PORT;

	INIT_IB_EVENT_HANDLER(&d->eh, ibdev, sft_event);
	ib_register_event_handler(&d->eh);

	for (i = 0; i < n; i++) {
		struct sft_dev_port *dp = &d->ports[i];
		int slot;

		sft_query(d, i, &dp->attrs);
		/* the name as registered; renames come through sft_rename() */
		strscpy(dp->attrs.dev_name, dev_name(&ibdev->dev),
			sizeof(dp->attrs.dev_name));
		slot = sft_port_add(&dp->attrs);
		if (slot < 0) {
			pr_warn("%s port %u not tracked: port table full (max_ports=%u)\n",
				dev_name(&ibdev->dev), first + i,
				sft_table_port_max());
			continue;
		}
		/* attrs before slot: pairs with the worker's acquire */
		smp_store_release(&dp->slot, slot);
		set_bit(SFT_RESYNC, &dp->pending);
	}
	ib_set_client_data(ibdev, &sft_client, d);
	queue_work(sft_wq, &d->work);
	return 0;
}

SFT_DEFINE_CLIENT_ADD(sft_add, sft_add_dev)

/* Context: process; device unregistration, or our own unregistration. */
static void sft_remove(struct ib_device *ibdev, void *client_data)
{
	struct sft_dev *d = client_data;
	u32 i;

	if (!d)
		return;
	/* no handler runs after this returns, so nothing requeues the work */
	ib_unregister_event_handler(&d->eh);
	cancel_work_sync(&d->work);
	for (i = 0; i < d->nports; i++)
		if (d->ports[i].slot != SHIFT_FT_NO_PORT)
			sft_port_remove(d->ports[i].slot);
	kfree(d);
}

/*
 * Context: process, under the core's device locks (devices_rwsem, so
 * dev_name() is stable); may sleep.  The worker may be updating the same
 * rows: the table takes the name from here only (sft_port_update()).
 */
static void sft_rename(struct ib_device *ibdev, void *client_data)
{
	struct sft_dev *d = client_data;
	u32 i;

	if (!d)
		return;
	for (i = 0; i < d->nports; i++)
		if (d->ports[i].slot != SHIFT_FT_NO_PORT)
			sft_port_rename(d->ports[i].slot, dev_name(&ibdev->dev));
}

static struct ib_client sft_client = {
	.name	= "shift_ft",
	.add	= sft_add,
	.remove	= sft_remove,
	.rename	= sft_rename,
	.no_kverbs_req = 1,
};

int __init sft_client_init(void)
{
	int err;

	sft_wq = alloc_ordered_workqueue("shift_ft", 0);
	if (!sft_wq)
		return -ENOMEM;
	err = ib_register_client(&sft_client);
	if (err)
		goto err_register;
	return 0;

err_register:
	destroy_workqueue(sft_wq);
	return err;
}

void sft_client_exit(void)
{
	ib_unregister_client(&sft_client);
	destroy_workqueue(sft_wq);
}
