/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * shift_ft: the per-host RDMA NIC health table.
 *
 * This header is the specification of the ABI between the shift_ft kernel
 * module and userspace (libshiftu, shiftmon, the selftests).  It is shared
 * verbatim by both sides.  Changes are additive only: new attributes,
 * commands and enum values are appended, reserved space is consumed, and
 * released numbers never change meaning.
 *
 * There are two ways in:
 *
 *  1. /dev/shift_ft, a read-only shared mapping of the whole table, for
 *     readers that must not enter the kernel (libshiftu's data path).
 *  2. The generic netlink family "shift_ft" for queries, administrative
 *     changes, and the multicast group "events" that announces every change.
 *
 * --------------------------------------------------------------------------
 * The table
 * --------------------------------------------------------------------------
 *
 * Port rows.  One per (RDMA device, port).  A row lives in a fixed slot from
 * the moment its device is registered until it is unregistered; the slot
 * number is the row's "port index".  A freed slot may be reused by a later
 * device: readers that cache an index check node_guid, port_num and
 * dev_index again whenever the page generation changes.
 *
 * Pairs.  Every port row names its backup port (another device, same link
 * layer, nearest NUMA node first, then the next slot after the port's own,
 * cyclically) and the pair state.  An
 * administrator may override the choice by device name and port number; the
 * override survives the devices going away and coming back.
 *
 * Path rows.  Keyed by (local port index, remote GID).  Their state combines
 * the local port (a path over a port that is not ACTIVE is DOWN) with the
 * last report received for it: from an application that saw an error
 * completion, or from a host agent relaying another host's events.  A
 * report made with SHIFT_FT_REPORT_F_WITHDRAW lasts as long as the netlink
 * socket it came on: when that socket is closed (the reporter exited), the
 * report is withdrawn (report state UNKNOWN, source NONE, event
 * SHIFT_FT_EV_REPORTER_GONE), so that a path is not left down by a process
 * that can no longer say it is up again.
 *
 * Room for path rows.  The number of path rows is bounded by the max_paths
 * module parameter.  Rows whose report was made without
 * SHIFT_FT_REPORT_F_WITHDRAW (a host agent's, an administrator's) never
 * number more than max_paths - reserved_paths (module parameter, default a
 * quarter of max_paths): such a report neither creates a row nor takes
 * over one that is idle or held by an F_WITHDRAW report beyond that, so
 * that whatever the agents report, the host's own applications (libshiftu,
 * whose reports are F_WITHDRAW) can hold reserved_paths rows.  A row whose
 * report was withdrawn (report source NONE) is idle: it tells a reader
 * nothing a missing row would not.  A new row takes a free slot, else the
 * slot of the row idle the longest, which goes with a PATH_DEL event
 * carrying SHIFT_FT_EV_PATH_REPORT before the new row's PATH_NEW.  When no
 * row is left for a report, it fails with -ENOSPC and the table is
 * unchanged.  No other row is ever evicted: whoever reported removes rows
 * with SHIFT_FT_CMD_PATH_DEL (a host agent does when the remote port is up
 * again or gone), and a port's rows go with the port.
 *
 * Every change to any row increments the table generation.
 *
 * --------------------------------------------------------------------------
 * The shared page: /dev/shift_ft
 * --------------------------------------------------------------------------
 *
 * open(O_RDONLY) then mmap(PROT_READ, MAP_SHARED) of SHIFT_FT_IOC_INFO's
 * map_size bytes at offset 0.  PROT_WRITE, MAP_PRIVATE-with-write and a later
 * mprotect(PROT_WRITE) all fail: the mapping is created without VM_MAYWRITE.
 * poll() reports POLLIN once the generation differs from the value the file
 * last saw through read(2) (which returns the current generation as a __u64
 * and needs a buffer of at least 8 bytes, else -EINVAL) or at open.
 *
 *   offset 0                 struct shift_ft_page_hdr
 *   hdr.port_offset          hdr.port_max  x hdr.port_entry_size   (ports)
 *   hdr.path_offset          hdr.path_max  x hdr.path_entry_size   (paths)
 *
 * Readers locate arrays and strides only through the header fields, never
 * through their own sizeof(), so that entries may grow at the end.  A reader
 * checks magic, and that compat_version is not above the version it was built
 * for (SHIFT_FT_PAGE_VERSION); a newer version with the same compat_version
 * only adds fields or feature bits.
 *
 * Consistency is a single seqcount, hdr.seq, around every update of the page:
 * odd while a writer is inside, incremented by two per completed change.  A
 * reader therefore tells with one acquire load of hdr.seq whether anything
 * changed since it last looked, and copies rows like this:
 *
 *	for (;;) {
 *		s = __atomic_load_n(&hdr->seq, __ATOMIC_ACQUIRE);
 *		if (s & 1)
 *			continue;			// writer inside: retry
 *		memcpy(&row, base + off, sizeof(row));	// any rows it needs
 *		__atomic_thread_fence(__ATOMIC_ACQUIRE);
 *		if (__atomic_load_n(&hdr->seq, __ATOMIC_RELAXED) == s)
 *			break;				// nothing moved: row is whole
 *	}
 *
 * The writer (the kernel, under its table mutex) does: seq++ ; smp_wmb() ;
 * rows and header ; smp_wmb() ; seq++ (pairs with the reader's acquire load
 * and fence).  generation is written inside the same section and equals the
 * netlink generation attribute.
 *
 * --------------------------------------------------------------------------
 * Generic netlink family "shift_ft", version SHIFT_FT_GENL_VERSION
 * --------------------------------------------------------------------------
 *
 * All attributes live in one space (enum shift_ft_attr).  Strings are NUL
 * terminated.  Each command takes the attributes listed with it below and
 * no other; requests with others or with wrong types are refused (strict
 * validation against the command's own policy) with an extended ack naming
 * the attribute: -EINVAL for an unknown or reply-only attribute, one the
 * command does not take, a wrong type or a missing one, -ERANGE
 * for a value or length outside its limits (a name of 64 bytes or more, a
 * GID that is not 16 bytes, a state or source that is not listed).  Commands
 * marked [admin] need CAP_NET_ADMIN in the initial user namespace.  The
 * family lives in the initial network namespace only.
 *
 * A port is named in requests by either
 *	SHIFT_FT_A_PORT_INDEX		u32
 * or
 *	SHIFT_FT_A_DEV_NAME		string, < SHIFT_FT_DEV_NAME_LEN
 *	SHIFT_FT_A_PORT_NUM		u32, 1..255
 * (the backup port of PAIR_SET likewise with the SHIFT_FT_A_BACKUP_* twins).
 *
 * A dump's request filters: it takes the attributes of its command's doit
 * request, each optional, and returns the rows that match every one given
 * (none given: every row).  SHIFT_FT_A_DEV_NAME alone thus dumps one
 * device's ports, pairs or paths; SHIFT_FT_A_REMOTE_GID alone the paths to
 * one remote GID.  A filter that matches nothing gives an empty dump.
 *
 * SHIFT_FT_CMD_PORT_GET		doit: one port; dumpit: ports
 *	request:  [port] (dumpit: filters)
 *	reply:    SHIFT_FT_CMD_PORT_NEW, a "port message":
 *	  SHIFT_FT_A_GENERATION		u64
 *	  SHIFT_FT_A_PORT_INDEX		u32
 *	  SHIFT_FT_A_DEV_NAME		string
 *	  SHIFT_FT_A_DEV_INDEX		u32	ib_device index
 *	  SHIFT_FT_A_PORT_NUM		u32
 *	  SHIFT_FT_A_NODE_GUID		u64	host byte order
 *	  SHIFT_FT_A_LINK_LAYER		u8	enum shift_ft_link_layer
 *	  SHIFT_FT_A_NETDEV		string	(absent: none)
 *	  SHIFT_FT_A_IFINDEX		u32	(absent: none)
 *	  SHIFT_FT_A_NUMA_NODE		s32	-1: none
 *	  SHIFT_FT_A_STATE		u8	enum shift_ft_port_state (IB port state)
 *	  SHIFT_FT_A_PHYS_STATE		u8	IB physical port state
 *	  SHIFT_FT_A_SPEED		u32	Mb/s, 0 when unknown
 *	  SHIFT_FT_A_WIDTH		u8	lanes
 *	  SHIFT_FT_A_MTU		u32	active MTU in bytes
 *	  SHIFT_FT_A_LAST_CHANGE	u64	CLOCK_MONOTONIC ns of last state change
 *	  SHIFT_FT_A_DOWN_COUNT		u64	transitions from ACTIVE to anything
 *	  SHIFT_FT_A_LAST_EVENT		u32	enum shift_ft_event
 *	  SHIFT_FT_A_EVENT_COUNT	u64	events seen on this port
 *	  SHIFT_FT_A_EVENT_COUNTS	nested	the same, by cause: one u64
 *					attribute per enum shift_ft_event
 *					value that occurred, its type
 *					being that value; type 0 is
 *					alignment padding (absent: none;
 *					they add up to EVENT_COUNT)
 *	  SHIFT_FT_A_BACKUP_INDEX	u32	(absent: no backup)
 *	  SHIFT_FT_A_PAIR_STATE		u8	enum shift_ft_pair_state
 *	  SHIFT_FT_A_PAIR_FLAGS		u32	SHIFT_FT_PAIR_F_*
 *
 * SHIFT_FT_CMD_PAIR_GET		doit: one pair; dumpit: pairs
 *	request:  [port] (dumpit: filters)
 *	reply:    SHIFT_FT_CMD_PAIR_NEW, a "pair message":
 *	  SHIFT_FT_A_GENERATION, SHIFT_FT_A_PORT_INDEX, SHIFT_FT_A_DEV_NAME,
 *	  SHIFT_FT_A_PORT_NUM, SHIFT_FT_A_STATE,
 *	  SHIFT_FT_A_BACKUP_INDEX, SHIFT_FT_A_BACKUP_DEV_NAME,
 *	  SHIFT_FT_A_BACKUP_PORT_NUM, SHIFT_FT_A_BACKUP_STATE (all absent: no
 *	  backup), SHIFT_FT_A_PAIR_STATE, SHIFT_FT_A_PAIR_FLAGS
 *
 * SHIFT_FT_CMD_PAIR_SET [admin]	configure the backup of a port
 *	request:  SHIFT_FT_A_DEV_NAME, SHIFT_FT_A_PORT_NUM,
 *		  SHIFT_FT_A_BACKUP_DEV_NAME, SHIFT_FT_A_BACKUP_PORT_NUM
 *	  Names need not exist yet: the override binds whenever the port
 *	  exists.  While the named backup does not, the port has no backup
 *	  (pair state NONE, flag CONFIGURED): an administrator's choice is
 *	  never silently replaced by the automatic one.  A port cannot back
 *	  itself up (-EINVAL).  At most SHIFT_FT_MAX_PAIR_CONFIG overrides
 *	  (-ENOSPC).
 *
 * SHIFT_FT_CMD_PAIR_CLEAR [admin]	return a port to automatic choice
 *	request:  SHIFT_FT_A_DEV_NAME, SHIFT_FT_A_PORT_NUM
 *	  -ENOENT when no override exists.
 *
 * SHIFT_FT_CMD_PATH_GET		doit: one path; dumpit: paths
 *	request:  [port] SHIFT_FT_A_REMOTE_GID (dumpit: filters)
 *	reply:    SHIFT_FT_CMD_PATH_NEW, a "path message":
 *	  SHIFT_FT_A_GENERATION		u64
 *	  SHIFT_FT_A_PATH_INDEX		u32	slot in the page's path array
 *	  SHIFT_FT_A_PORT_INDEX		u32
 *	  SHIFT_FT_A_DEV_NAME		string
 *	  SHIFT_FT_A_PORT_NUM		u32
 *	  SHIFT_FT_A_REMOTE_GID		binary, 16 bytes
 *	  SHIFT_FT_A_PATH_STATE		u8	enum shift_ft_path_state (effective)
 *	  SHIFT_FT_A_REPORT_STATE	u8	enum shift_ft_path_state (last report)
 *	  SHIFT_FT_A_REPORT_SOURCE	u8	enum shift_ft_report_source
 *	  SHIFT_FT_A_REPORT_PID		u32	reporter's pid (init pid namespace)
 *	  SHIFT_FT_A_REPORT_TIME	u64	CLOCK_MONOTONIC ns of last report
 *	  SHIFT_FT_A_LAST_CHANGE	u64	ns of last effective state change
 *	  SHIFT_FT_A_DOWN_COUNT		u64	effective transitions to DOWN
 *
 * SHIFT_FT_CMD_PATH_REPORT [admin]	report the state of a path
 *	request:  [port] SHIFT_FT_A_REMOTE_GID, SHIFT_FT_A_REPORT_STATE (UP or
 *		  DOWN), SHIFT_FT_A_REPORT_SOURCE (APP or AGENT),
 *		  [SHIFT_FT_A_FLAGS: SHIFT_FT_REPORT_F_*]
 *	  Creates the row unless SHIFT_FT_REPORT_F_NOCREATE (-ENOENT).
 *	  -ENOSPC when no row is left for it ("Room for path rows" above:
 *	  reports without SHIFT_FT_REPORT_F_WITHDRAW hold at most
 *	  max_paths - reserved_paths rows); the table is unchanged.
 *
 * SHIFT_FT_CMD_PATH_DEL [admin]	forget a path row
 *	request:  [port] SHIFT_FT_A_REMOTE_GID, [SHIFT_FT_A_REPORT_SOURCE]
 *	  -ENOENT when there is no such row.  With SHIFT_FT_A_REPORT_SOURCE
 *	  (APP or AGENT), the row goes only if its last report came from that
 *	  source, else -EBUSY and the row stays: a host agent forgets the rows
 *	  of its own reports, never an application's report that came later.
 *
 * Unknown flag bits in SHIFT_FT_A_FLAGS are refused with -EOPNOTSUPP.
 *
 * Dumps carry the generation in nlmsg_seq consistency checking: a dump that
 * raced with a change has NLM_F_DUMP_INTR set on a message; the reader
 * restarts it.
 *
 * Multicast group "events": every change to the table is announced by one
 * message per changed row, built exactly like the replies above, plus
 * SHIFT_FT_A_EVENT (enum shift_ft_event: what caused the change; a pair or
 * path that follows a port carries that port's event):
 *	SHIFT_FT_CMD_PORT_NEW	a port appeared or changed
 *	SHIFT_FT_CMD_PORT_DEL	a port went away (its device was unregistered)
 *	SHIFT_FT_CMD_PAIR_NEW	a pair's backup or state changed
 *	SHIFT_FT_CMD_PATH_NEW	a path row was created or changed
 *	SHIFT_FT_CMD_PATH_DEL	a path row was removed
 * Listeners must print, not reject, commands and events they do not know.
 */
#ifndef _UAPI_SHIFT_FT_H
#define _UAPI_SHIFT_FT_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define SHIFT_FT_GENL_NAME		"shift_ft"
#define SHIFT_FT_GENL_VERSION		1
#define SHIFT_FT_MCGRP_EVENTS		"events"
#define SHIFT_FT_DEVICE_PATH		"/dev/shift_ft"

#define SHIFT_FT_DEV_NAME_LEN		64	/* IB_DEVICE_NAME_MAX */
#define SHIFT_FT_NETDEV_NAME_LEN	16	/* IFNAMSIZ */
#define SHIFT_FT_GID_LEN		16
#define SHIFT_FT_MAX_PAIR_CONFIG	256
#define SHIFT_FT_NO_PORT		0xffffffffU

enum shift_ft_cmd {
	SHIFT_FT_CMD_UNSPEC,
	SHIFT_FT_CMD_PORT_GET,
	SHIFT_FT_CMD_PORT_NEW,
	SHIFT_FT_CMD_PORT_DEL,
	SHIFT_FT_CMD_PAIR_GET,
	SHIFT_FT_CMD_PAIR_NEW,
	SHIFT_FT_CMD_PAIR_SET,
	SHIFT_FT_CMD_PAIR_CLEAR,
	SHIFT_FT_CMD_PATH_GET,
	SHIFT_FT_CMD_PATH_NEW,
	SHIFT_FT_CMD_PATH_DEL,
	SHIFT_FT_CMD_PATH_REPORT,

	__SHIFT_FT_CMD_MAX,
	SHIFT_FT_CMD_MAX = __SHIFT_FT_CMD_MAX - 1
};

enum shift_ft_attr {
	SHIFT_FT_A_UNSPEC,
	SHIFT_FT_A_PAD,
	SHIFT_FT_A_GENERATION,		/* u64 */
	SHIFT_FT_A_PORT_INDEX,		/* u32 */
	SHIFT_FT_A_DEV_NAME,		/* string */
	SHIFT_FT_A_DEV_INDEX,		/* u32 */
	SHIFT_FT_A_PORT_NUM,		/* u32 */
	SHIFT_FT_A_NODE_GUID,		/* u64 */
	SHIFT_FT_A_LINK_LAYER,		/* u8 */
	SHIFT_FT_A_NETDEV,		/* string */
	SHIFT_FT_A_IFINDEX,		/* u32 */
	SHIFT_FT_A_NUMA_NODE,		/* s32 */
	SHIFT_FT_A_STATE,		/* u8 */
	SHIFT_FT_A_PHYS_STATE,		/* u8 */
	SHIFT_FT_A_SPEED,		/* u32 */
	SHIFT_FT_A_WIDTH,		/* u8 */
	SHIFT_FT_A_MTU,			/* u32 */
	SHIFT_FT_A_LAST_CHANGE,		/* u64 */
	SHIFT_FT_A_DOWN_COUNT,		/* u64 */
	SHIFT_FT_A_LAST_EVENT,		/* u32 */
	SHIFT_FT_A_EVENT_COUNT,		/* u64 */
	SHIFT_FT_A_BACKUP_INDEX,	/* u32 */
	SHIFT_FT_A_BACKUP_DEV_NAME,	/* string */
	SHIFT_FT_A_BACKUP_PORT_NUM,	/* u32 */
	SHIFT_FT_A_BACKUP_STATE,	/* u8 */
	SHIFT_FT_A_PAIR_STATE,		/* u8 */
	SHIFT_FT_A_PAIR_FLAGS,		/* u32 */
	SHIFT_FT_A_PATH_INDEX,		/* u32 */
	SHIFT_FT_A_REMOTE_GID,		/* binary[16] */
	SHIFT_FT_A_PATH_STATE,		/* u8 */
	SHIFT_FT_A_REPORT_STATE,	/* u8 */
	SHIFT_FT_A_REPORT_SOURCE,	/* u8 */
	SHIFT_FT_A_REPORT_PID,		/* u32 */
	SHIFT_FT_A_REPORT_TIME,		/* u64 */
	SHIFT_FT_A_FLAGS,		/* u32 */
	SHIFT_FT_A_EVENT,		/* u32 */
	SHIFT_FT_A_EVENT_COUNTS,	/* nested: u64 per enum shift_ft_event */

	__SHIFT_FT_A_MAX,
	SHIFT_FT_A_MAX = __SHIFT_FT_A_MAX - 1
};

/* Port state: the values of the IB port state (enum ib_port_state). */
enum shift_ft_port_state {
	SHIFT_FT_PORT_NOP,
	SHIFT_FT_PORT_DOWN,
	SHIFT_FT_PORT_INIT,
	SHIFT_FT_PORT_ARMED,
	SHIFT_FT_PORT_ACTIVE,
	SHIFT_FT_PORT_ACTIVE_DEFER,
};

enum shift_ft_link_layer {
	SHIFT_FT_LINK_UNSPEC,
	SHIFT_FT_LINK_INFINIBAND,
	SHIFT_FT_LINK_ETHERNET,
};

enum shift_ft_pair_state {
	SHIFT_FT_PAIR_NONE,		/* no backup port */
	SHIFT_FT_PAIR_BOTH_UP,
	SHIFT_FT_PAIR_PRIMARY_DOWN,
	SHIFT_FT_PAIR_BACKUP_DOWN,
	SHIFT_FT_PAIR_BOTH_DOWN,
};

/* SHIFT_FT_A_PAIR_FLAGS */
#define SHIFT_FT_PAIR_F_CONFIGURED	(1U << 0)	/* chosen by an override */
#define SHIFT_FT_PAIR_F_ALL		(SHIFT_FT_PAIR_F_CONFIGURED)

enum shift_ft_path_state {
	SHIFT_FT_PATH_UNKNOWN,
	SHIFT_FT_PATH_UP,
	SHIFT_FT_PATH_DOWN,
};

enum shift_ft_report_source {
	SHIFT_FT_SRC_NONE,
	SHIFT_FT_SRC_LOCAL,		/* the local port's own events */
	SHIFT_FT_SRC_APP,		/* an application's completion */
	SHIFT_FT_SRC_AGENT,		/* a host agent relaying a peer */
};

/* SHIFT_FT_A_FLAGS of SHIFT_FT_CMD_PATH_REPORT */
#define SHIFT_FT_REPORT_F_NOCREATE	(1U << 0)	/* -ENOENT if no row */
#define SHIFT_FT_REPORT_F_WITHDRAW	(1U << 1)	/* until the socket closes */
#define SHIFT_FT_REPORT_F_ALL		(SHIFT_FT_REPORT_F_NOCREATE |	\
					 SHIFT_FT_REPORT_F_WITHDRAW)

/*
 * What caused a change: the IB asynchronous events the module follows (mapped
 * one by one from enum ib_event_type, whose numbers are not ours), then the
 * module's own causes.
 */
enum shift_ft_event {
	SHIFT_FT_EV_NONE,
	SHIFT_FT_EV_PORT_ACTIVE,
	SHIFT_FT_EV_PORT_ERR,
	SHIFT_FT_EV_LID_CHANGE,
	SHIFT_FT_EV_PKEY_CHANGE,
	SHIFT_FT_EV_SM_CHANGE,
	SHIFT_FT_EV_CLIENT_REREGISTER,
	SHIFT_FT_EV_GID_CHANGE,
	SHIFT_FT_EV_DEVICE_FATAL,
	SHIFT_FT_EV_DEVICE_ADD,		/* the device was registered */
	SHIFT_FT_EV_DEVICE_REMOVE,	/* the device was unregistered */
	SHIFT_FT_EV_DEVICE_RENAME,
	SHIFT_FT_EV_PAIR_CONFIG,	/* an administrator set or cleared a pair */
	SHIFT_FT_EV_PATH_REPORT,	/* a path report was received */
	SHIFT_FT_EV_PATH_DELETE,	/* a path row was deleted */
	SHIFT_FT_EV_REPORTER_GONE,	/* a report's socket closed (F_WITHDRAW) */

	__SHIFT_FT_EV_MAX,
	SHIFT_FT_EV_MAX = __SHIFT_FT_EV_MAX - 1
};

/* ---------------------------------------------------------------------- */
/* The shared page                                                         */
/* ---------------------------------------------------------------------- */

#define SHIFT_FT_PAGE_MAGIC		0x54464853U	/* "SHFT" little endian */
#define SHIFT_FT_PAGE_VERSION		1
#define SHIFT_FT_PAGE_COMPAT_VERSION	1

/* hdr.features */
#define SHIFT_FT_FEAT_PAIRS		(1ULL << 0)
#define SHIFT_FT_FEAT_PATHS		(1ULL << 1)

/*
 * All fields are written only by the kernel inside the hdr.seq write
 * section, except seq itself (see the reader's loop above).
 */
struct shift_ft_page_hdr {
	__u32 magic;			/* SHIFT_FT_PAGE_MAGIC */
	__u16 version;			/* layout version, SHIFT_FT_PAGE_VERSION */
	__u16 compat_version;		/* oldest reader version that works */
	__u32 hdr_size;			/* sizeof this header as the kernel has it */
	__u32 seq;			/* seqcount: odd while being written */
	__u64 generation;		/* table generation, as in netlink */
	__u64 features;			/* SHIFT_FT_FEAT_* */
	__u32 port_offset;		/* byte offset of the port array */
	__u32 port_entry_size;		/* stride of the port array */
	__u32 port_max;			/* slots in the port array */
	__u32 port_count;		/* slots in use (valid rows) */
	__u32 path_offset;
	__u32 path_entry_size;
	__u32 path_max;
	__u32 path_count;
	__u64 map_size;			/* bytes to map */
	__u64 reserved[8];
};

/* port row flags */
#define SHIFT_FT_ROW_VALID		(1U << 0)

struct shift_ft_page_port {
	__u32 flags;			/* SHIFT_FT_ROW_VALID */
	__u32 dev_index;		/* ib_device index */
	__u32 port_num;
	__u32 ifindex;			/* 0: none */
	__u64 node_guid;		/* host byte order */
	char dev_name[SHIFT_FT_DEV_NAME_LEN];
	char netdev[SHIFT_FT_NETDEV_NAME_LEN];
	__u8 link_layer;		/* enum shift_ft_link_layer */
	__u8 state;			/* enum shift_ft_port_state */
	__u8 phys_state;
	__u8 width;
	__u32 speed;			/* Mb/s */
	__u32 mtu;			/* bytes */
	__s32 numa_node;
	__u64 last_change_ns;		/* CLOCK_MONOTONIC */
	__u64 down_count;
	__u64 event_count;
	__u32 last_event;		/* enum shift_ft_event */
	__u32 backup_index;		/* SHIFT_FT_NO_PORT: none */
	__u8 pair_state;		/* enum shift_ft_pair_state */
	__u8 pad[3];
	__u32 pair_flags;		/* SHIFT_FT_PAIR_F_* */
	__u64 reserved[4];
};

struct shift_ft_page_path {
	__u32 flags;			/* SHIFT_FT_ROW_VALID */
	__u32 port_index;
	__u8 remote_gid[SHIFT_FT_GID_LEN];
	__u8 state;			/* enum shift_ft_path_state, effective */
	__u8 report_state;
	__u8 report_source;		/* enum shift_ft_report_source */
	__u8 pad;
	__u32 report_pid;
	__u64 report_ns;
	__u64 last_change_ns;
	__u64 down_count;
	__u64 reserved[2];
};

/* ---------------------------------------------------------------------- */
/* ioctls on /dev/shift_ft                                                 */
/* ---------------------------------------------------------------------- */

/*
 * SHIFT_FT_IOC_INFO: what to map, before mapping it.  The caller sets size
 * to sizeof(struct shift_ft_info) as it knows it (at least
 * SHIFT_FT_INFO_SIZE_VER0) and flags to zero; the kernel fills in as much as
 * both know and sets size to what it filled.  -EINVAL for a size below
 * SHIFT_FT_INFO_SIZE_VER0, -E2BIG for a size above SHIFT_FT_INFO_SIZE_MAX
 * (one 4 KiB page: the kernel reads nothing then) or for a larger struct
 * whose bytes beyond the kernel's are not zero, -EOPNOTSUPP for unknown
 * flags, -EFAULT for a bad pointer, -ENOTTY for an unknown ioctl.  The
 * struct will never grow beyond SHIFT_FT_INFO_SIZE_MAX.
 */
struct shift_ft_info {
	__u32 size;			/* in: caller's size; out: filled */
	__u32 flags;			/* in: zero */
	__u32 page_version;
	__u32 page_compat_version;
	__u64 map_size;
	__u32 port_max;
	__u32 path_max;
	__u64 generation;
	__u64 reserved[4];
};

#define SHIFT_FT_INFO_SIZE_VER0		40
#define SHIFT_FT_INFO_SIZE_MAX		4096
#define SHIFT_FT_IOC_MAGIC		0xF7
#define SHIFT_FT_IOC_INFO		_IOWR(SHIFT_FT_IOC_MAGIC, 1, struct shift_ft_info)

#endif /* _UAPI_SHIFT_FT_H */
