// SPDX-License-Identifier: GPL-2.0
/*
 * ftpage: reads the shift_ft shared page (/dev/shift_ft) the way libshiftu
 * does, for tests.  Rows print in the same key=value form as ftnl (ftfmt.h),
 * so that the two can be compared field by field.
 *
 *   ftpage info                   SHIFT_FT_IOC_INFO and the page header
 *   ftpage gen                    read(2) of the generation
 *   ftpage ports | paths          the valid rows of one consistent snapshot
 *   ftpage wait DEV PORT COND.. [-t MS]
 *                                 poll() until the port row matches; prints
 *                                 the CLOCK_MONOTONIC ns at which it saw it.
 *                                 COND: a port state name (ACTIVE), or
 *                                 key=value (pair_state=BOTH_UP), or
 *                                 "present" or "absent" (the row).
 *   ftpage watch [-T SECONDS]     one line per changed row, with timestamp
 *   ftpage torture SECONDS [--literal]
 *                                 copy rows in a loop and check invariants
 *   ftpage hold                   map the page, close the fd, wait for a
 *                                 signal (keeps only the mapping alive)
 *   ftpage now                    CLOCK_MONOTONIC ns
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ftfmt.h"

static const char *prog = "ftpage";

struct page {
	int fd;
	const volatile uint8_t *map;
	size_t size;
	struct shift_ft_info info;
	uint8_t *snap;		/* a private copy of the whole mapping */
};

static void die(const char *what)
{
	int e = errno;

	fprintf(stderr, "%s: %s: %s [%s %d]\n", prog, what, strerror(e),
		ft_errno_name(e), e);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s info | gen | now | ports | paths | hold\n"
		"       %s wait DEV PORT COND... [-t MS]\n"
		"       %s watch [-T SECONDS]\n"
		"       %s torture SECONDS [--literal]\n"
		"  -f FIELDS selects and orders the printed fields\n",
		prog, prog, prog, prog);
	exit(2);
}

static const struct shift_ft_page_hdr *hdr_of(const void *base)
{
	return base;
}

static void page_open(struct page *p)
{
	const struct shift_ft_page_hdr *h;
	void *m;

	/* FTPAGE_DEVICE: a page image in a plain file, to try the tool itself */
	const char *path = getenv("FTPAGE_DEVICE") ?: SHIFT_FT_DEVICE_PATH;
	struct stat st;

	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->fd < 0)
		die("open");
	memset(&p->info, 0, sizeof(p->info));
	p->info.size = sizeof(p->info);
	if (ioctl(p->fd, SHIFT_FT_IOC_INFO, &p->info)) {
		if (!getenv("FTPAGE_DEVICE") || fstat(p->fd, &st))
			die("SHIFT_FT_IOC_INFO");
		p->info.map_size = st.st_size;
	}
	p->size = p->info.map_size;
	m = mmap(NULL, p->size, PROT_READ, MAP_SHARED, p->fd, 0);
	if (m == MAP_FAILED)
		die("mmap");
	p->map = m;
	h = (const void *)p->map;
	if (h->magic != SHIFT_FT_PAGE_MAGIC) {
		fprintf(stderr, "%s: bad magic 0x%08x\n", prog, h->magic);
		exit(1);
	}
	if (h->compat_version > SHIFT_FT_PAGE_VERSION) {
		fprintf(stderr, "%s: page compat version %u > %u\n", prog,
			h->compat_version, SHIFT_FT_PAGE_VERSION);
		exit(1);
	}
	p->snap = malloc(p->size);
	if (!p->snap)
		die("malloc");
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Copy @len bytes at @off of the mapping into @dst consistently; returns the
 * (even) seq the copy belongs to.  This is the header's reader loop, except
 * that an odd seq restarts the loop: in the header's do/while, "continue"
 * jumps to the condition, which holds when the writer is still inside, so
 * the loop would end with an odd seq and nothing copied.
 */
static uint32_t page_copy(const struct page *p, void *dst, size_t off,
			  size_t len, unsigned long *retries)
{
	const struct shift_ft_page_hdr *h = (const void *)p->map;
	uint32_t s;

	for (;;) {
		s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (s & 1) {
			if (retries)
				(*retries)++;
			cpu_relax();
			continue;
		}
		memcpy(dst, (const void *)(p->map + off), len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s)
			return s;
		if (retries)
			(*retries)++;
	}
}

/* The header's loop verbatim, to show what it does (torture --literal). */
static uint32_t page_copy_literal(const struct page *p, void *dst, size_t off,
				  size_t len, unsigned long *retries)
{
	const struct shift_ft_page_hdr *h = (const void *)p->map;
	uint32_t s;

	do {
		s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		memcpy(dst, (const void *)(p->map + off), len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s && ++*retries);
	return s;
}

static uint32_t snapshot(struct page *p)
{
	return page_copy(p, p->snap, 0, p->size, NULL);
}

static const struct shift_ft_page_port *port_at(const void *base, uint32_t i)
{
	const struct shift_ft_page_hdr *h = base;

	return (const void *)((const uint8_t *)base + h->port_offset +
			      (size_t)i * h->port_entry_size);
}

static const struct shift_ft_page_path *path_at(const void *base, uint32_t i)
{
	const struct shift_ft_page_hdr *h = base;

	return (const void *)((const uint8_t *)base + h->path_offset +
			      (size_t)i * h->path_entry_size);
}

/* The port row of a snapshot as ftnl prints a PORT_NEW message. */
static void port_row(struct ft_row *r, const void *base, uint32_t i)
{
	const struct shift_ft_page_hdr *h = base;
	const struct shift_ft_page_port *e = port_at(base, i);

	r->n = 0;
	ft_row_num(r, SHIFT_FT_A_GENERATION, h->generation);
	ft_row_num(r, SHIFT_FT_A_PORT_INDEX, i);
	ft_row_str(r, SHIFT_FT_A_DEV_NAME, e->dev_name, sizeof(e->dev_name));
	ft_row_num(r, SHIFT_FT_A_DEV_INDEX, e->dev_index);
	ft_row_num(r, SHIFT_FT_A_PORT_NUM, e->port_num);
	ft_row_num(r, SHIFT_FT_A_NODE_GUID, e->node_guid);
	ft_row_num(r, SHIFT_FT_A_LINK_LAYER, e->link_layer);
	if (e->netdev[0])
		ft_row_str(r, SHIFT_FT_A_NETDEV, e->netdev, sizeof(e->netdev));
	if (e->ifindex)
		ft_row_num(r, SHIFT_FT_A_IFINDEX, e->ifindex);
	ft_row_num(r, SHIFT_FT_A_NUMA_NODE, (uint32_t)e->numa_node);
	ft_row_num(r, SHIFT_FT_A_STATE, e->state);
	ft_row_num(r, SHIFT_FT_A_PHYS_STATE, e->phys_state);
	ft_row_num(r, SHIFT_FT_A_SPEED, e->speed);
	ft_row_num(r, SHIFT_FT_A_WIDTH, e->width);
	ft_row_num(r, SHIFT_FT_A_MTU, e->mtu);
	ft_row_num(r, SHIFT_FT_A_LAST_CHANGE, e->last_change_ns);
	ft_row_num(r, SHIFT_FT_A_DOWN_COUNT, e->down_count);
	ft_row_num(r, SHIFT_FT_A_LAST_EVENT, e->last_event);
	ft_row_num(r, SHIFT_FT_A_EVENT_COUNT, e->event_count);
	if (e->backup_index != SHIFT_FT_NO_PORT)
		ft_row_num(r, SHIFT_FT_A_BACKUP_INDEX, e->backup_index);
	ft_row_num(r, SHIFT_FT_A_PAIR_STATE, e->pair_state);
	ft_row_num(r, SHIFT_FT_A_PAIR_FLAGS, e->pair_flags);
}

static void path_row(struct ft_row *r, const void *base, uint32_t i)
{
	const struct shift_ft_page_hdr *h = base;
	const struct shift_ft_page_path *e = path_at(base, i);

	r->n = 0;
	ft_row_num(r, SHIFT_FT_A_GENERATION, h->generation);
	ft_row_num(r, SHIFT_FT_A_PATH_INDEX, i);
	ft_row_num(r, SHIFT_FT_A_PORT_INDEX, e->port_index);
	if (e->port_index < h->port_max &&
	    (port_at(base, e->port_index)->flags & SHIFT_FT_ROW_VALID)) {
		const struct shift_ft_page_port *pp = port_at(base, e->port_index);

		ft_row_str(r, SHIFT_FT_A_DEV_NAME, pp->dev_name, sizeof(pp->dev_name));
		ft_row_num(r, SHIFT_FT_A_PORT_NUM, pp->port_num);
	}
	ft_row_gid(r, SHIFT_FT_A_REMOTE_GID, e->remote_gid);
	ft_row_num(r, SHIFT_FT_A_PATH_STATE, e->state);
	ft_row_num(r, SHIFT_FT_A_REPORT_STATE, e->report_state);
	ft_row_num(r, SHIFT_FT_A_REPORT_SOURCE, e->report_source);
	ft_row_num(r, SHIFT_FT_A_REPORT_PID, e->report_pid);
	ft_row_num(r, SHIFT_FT_A_REPORT_TIME, e->report_ns);
	ft_row_num(r, SHIFT_FT_A_LAST_CHANGE, e->last_change_ns);
	ft_row_num(r, SHIFT_FT_A_DOWN_COUNT, e->down_count);
}

static int find_port(const void *base, const char *dev, uint32_t port)
{
	const struct shift_ft_page_hdr *h = base;
	uint32_t i;

	for (i = 0; i < h->port_max; i++) {
		const struct shift_ft_page_port *e = port_at(base, i);

		if ((e->flags & SHIFT_FT_ROW_VALID) && e->port_num == port &&
		    !strncmp(e->dev_name, dev, sizeof(e->dev_name)))
			return i;
	}
	return -1;
}

/* ---- simple commands ---- */

static int cmd_info(struct page *p)
{
	const struct shift_ft_page_hdr *h = hdr_of(p->snap);
	uint32_t s = snapshot(p);

	printf("info_size=%u\tpage_version=%u\tpage_compat_version=%u\tmap_size=%llu\t"
	       "port_max=%u\tpath_max=%u\tgeneration=%llu\n",
	       p->info.size, p->info.page_version, p->info.page_compat_version,
	       (unsigned long long)p->info.map_size, p->info.port_max,
	       p->info.path_max, (unsigned long long)p->info.generation);
	printf("magic=0x%08x\tversion=%u\tcompat_version=%u\thdr_size=%u\tseq=%u\t"
	       "generation=%llu\tfeatures=0x%llx\tport_offset=%u\tport_entry_size=%u\t"
	       "port_max=%u\tport_count=%u\tpath_offset=%u\tpath_entry_size=%u\t"
	       "path_max=%u\tpath_count=%u\tmap_size=%llu\n",
	       h->magic, h->version, h->compat_version, h->hdr_size, s,
	       (unsigned long long)h->generation, (unsigned long long)h->features,
	       h->port_offset, h->port_entry_size, h->port_max, h->port_count,
	       h->path_offset, h->path_entry_size, h->path_max, h->path_count,
	       (unsigned long long)h->map_size);
	return 0;
}

static int cmd_rows(struct page *p, bool paths)
{
	const struct shift_ft_page_hdr *h = hdr_of(p->snap);
	static struct ft_row r;
	uint32_t i;

	snapshot(p);
	if (!paths) {
		for (i = 0; i < h->port_max; i++)
			if (port_at(p->snap, i)->flags & SHIFT_FT_ROW_VALID) {
				port_row(&r, p->snap, i);
				ft_row_print(stdout, NULL, &r);
			}
	} else {
		for (i = 0; i < h->path_max; i++)
			if (path_at(p->snap, i)->flags & SHIFT_FT_ROW_VALID) {
				path_row(&r, p->snap, i);
				ft_row_print(stdout, NULL, &r);
			}
	}
	return 0;
}

static int cmd_gen(struct page *p)
{
	uint64_t g;
	ssize_t n = read(p->fd, &g, sizeof(g));

	if (n != (ssize_t)sizeof(g)) {
		if (n >= 0)
			errno = EIO;
		die("read");
	}
	printf("%llu\n", (unsigned long long)g);
	return 0;
}

/* Rearm poll(): read the generation so POLLIN means "changed since". */
static void rearm(struct page *p)
{
	uint64_t g;

	if (read(p->fd, &g, sizeof(g)) != (ssize_t)sizeof(g))
		die("read");
}

/* ---- wait ---- */

static bool row_matches(const void *base, int idx, char **conds, int n)
{
	static struct ft_row r;
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(conds[i], "absent"))
			return idx < 0;
	if (idx < 0)
		return false;
	port_row(&r, base, idx);
	for (i = 0; i < n; i++) {
		const char *eq = strchr(conds[i], '=');
		const char *v;

		if (!strcmp(conds[i], "present"))
			continue;
		if (!eq) {
			v = ft_row_get(&r, "state");
			if (!v || strcasecmp(v, conds[i]))
				return false;
			continue;
		}
		{
			char key[32];

			snprintf(key, sizeof(key), "%.*s", (int)(eq - conds[i]),
				 conds[i]);
			v = ft_row_get(&r, key);
			if (!v || strcasecmp(v, eq + 1))
				return false;
		}
	}
	return true;
}

static int cmd_wait(struct page *p, char **argv, int argc, long timeout_ms)
{
	uint64_t deadline = ft_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	static struct ft_row r;
	const char *dev;
	uint32_t port;
	int idx;

	if (argc < 3)
		usage();
	dev = argv[0];
	port = strtoul(argv[1], NULL, 0);
	for (;;) {
		struct pollfd pf = { .fd = p->fd, .events = POLLIN };
		uint64_t now;
		int r2;

		rearm(p);	/* before the snapshot: no change is missed */
		snapshot(p);
		idx = find_port(p->snap, dev, port);
		now = ft_now_ns();
		if (row_matches(p->snap, idx, argv + 2, argc - 2)) {
			printf("%llu\n", (unsigned long long)now);
			return 0;
		}
		if (now >= deadline)
			break;
		r2 = poll(&pf, 1, (int)((deadline - now) / 1000000) + 1);
		if (r2 < 0 && errno != EINTR)
			die("poll");
	}
	fprintf(stderr, "%s: wait %s %u: timeout after %ld ms; row: ", prog, dev,
		port, timeout_ms);
	if (idx >= 0) {
		port_row(&r, p->snap, idx);
		ft_row_print(stderr, NULL, &r);
	} else {
		fprintf(stderr, "absent\n");
	}
	return 1;
}

/* ---- watch ---- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int cmd_watch(struct page *p, double seconds)
{
	uint8_t *prev = calloc(1, p->size);
	const struct shift_ft_page_hdr *h = hdr_of(p->snap);
	uint64_t deadline = seconds > 0 ? ft_now_ns() + (uint64_t)(seconds * 1e9) : 0;
	static struct ft_row r;
	char pfx[64];
	uint32_t i;

	if (!prev)
		die("calloc");
	printf("# watch: mapped %zu bytes\n", p->size);
	fflush(stdout);
	while (!stop) {
		struct pollfd pf = { .fd = p->fd, .events = POLLIN };
		int timeout = -1;
		uint64_t now;

		rearm(p);
		snapshot(p);
		now = ft_now_ns();
		for (i = 0; i < h->port_max; i++) {
			const struct shift_ft_page_port *a = port_at(p->snap, i);
			const struct shift_ft_page_port *b = port_at(prev, i);
			size_t sz = h->port_entry_size;

			if (!memcmp(a, b, sz))
				continue;
			if (a->flags & SHIFT_FT_ROW_VALID) {
				snprintf(pfx, sizeof(pfx), "%llu\tport",
					 (unsigned long long)now);
				port_row(&r, p->snap, i);
				ft_row_print(stdout, pfx, &r);
			} else if (b->flags & SHIFT_FT_ROW_VALID) {
				printf("%llu\tport_gone\tport_index=%u\tdev_name=%.*s\n",
				       (unsigned long long)now, i,
				       (int)sizeof(b->dev_name), b->dev_name);
			}
		}
		for (i = 0; i < h->path_max; i++) {
			const struct shift_ft_page_path *a = path_at(p->snap, i);
			const struct shift_ft_page_path *b = path_at(prev, i);

			if (!memcmp(a, b, h->path_entry_size))
				continue;
			if (a->flags & SHIFT_FT_ROW_VALID) {
				snprintf(pfx, sizeof(pfx), "%llu\tpath",
					 (unsigned long long)now);
				path_row(&r, p->snap, i);
				ft_row_print(stdout, pfx, &r);
			} else if (b->flags & SHIFT_FT_ROW_VALID) {
				printf("%llu\tpath_gone\tpath_index=%u\n",
				       (unsigned long long)now, i);
			}
		}
		fflush(stdout);
		memcpy(prev, p->snap, p->size);
		if (deadline) {
			if (now >= deadline)
				break;
			timeout = (int)((deadline - now) / 1000000) + 1;
		}
		if (poll(&pf, 1, timeout) < 0 && errno != EINTR)
			die("poll");
	}
	free(prev);
	return 0;
}

/* ---- torture ---- */

struct devinfo {
	uint32_t dev_index;
	uint64_t node_guid;
	char netdev[SHIFT_FT_NETDEV_NAME_LEN];
	uint32_t ifindex;
	uint64_t down_count[8];
};

struct torture {
	struct devinfo dev[256];
	int ndev;
	unsigned long fails;
	uint64_t last_gen;
	uint32_t last_seq;
};

#define TFAIL(t, ...) do {						\
	if ((t)->fails++ < 20) {					\
		fprintf(stderr, "%s: torture: ", prog);			\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static bool port_active(const struct shift_ft_page_port *e)
{
	/* the header: a path over a port that is not ACTIVE is DOWN */
	return e->state == SHIFT_FT_PORT_ACTIVE;
}

/* Checks of one port row on its own; base is the snapshot it belongs to. */
static void check_port(struct torture *t, const void *base, uint32_t i,
		       const struct shift_ft_page_port *e, bool whole, uint64_t now)
{
	const struct shift_ft_page_hdr *h = base;
	struct devinfo *d = NULL;
	int k;

	if (!(e->flags & SHIFT_FT_ROW_VALID))
		return;
	if (!memchr(e->dev_name, 0, sizeof(e->dev_name)) || !e->dev_name[0])
		TFAIL(t, "port %u: dev_name not a string", i);
	if (!memchr(e->netdev, 0, sizeof(e->netdev)))
		TFAIL(t, "port %u: netdev not a string", i);
	if (!e->port_num || e->port_num > 255)
		TFAIL(t, "port %u: port_num %u", i, e->port_num);
	if (e->state > SHIFT_FT_PORT_ACTIVE_DEFER ||
	    e->link_layer > SHIFT_FT_LINK_ETHERNET ||
	    e->pair_state > SHIFT_FT_PAIR_BOTH_DOWN ||
	    e->last_event > SHIFT_FT_EV_MAX || (e->pair_flags & ~SHIFT_FT_PAIR_F_ALL))
		TFAIL(t, "port %u (%s): enum out of range: state %u link %u pair %u ev %u flags %#x",
		      i, e->dev_name, e->state, e->link_layer, e->pair_state,
		      e->last_event, e->pair_flags);
	if (e->last_change_ns > now)
		TFAIL(t, "port %u (%s): last_change %llu in the future (now %llu)",
		      i, e->dev_name, (unsigned long long)e->last_change_ns,
		      (unsigned long long)now);
	if (!!e->netdev[0] != !!e->ifindex)
		TFAIL(t, "port %u (%s): netdev '%s' vs ifindex %u", i,
		      e->dev_name, e->netdev, e->ifindex);

	/* immutable per device: node_guid, netdev, ifindex */
	for (k = 0; k < t->ndev; k++)
		if (t->dev[k].dev_index == e->dev_index)
			d = &t->dev[k];
	if (!d && t->ndev < (int)FT_ARRAY_SIZE(t->dev)) {
		d = &t->dev[t->ndev++];
		memset(d, 0, sizeof(*d));
		d->dev_index = e->dev_index;
		d->node_guid = e->node_guid;
		memcpy(d->netdev, e->netdev, sizeof(d->netdev));
		d->ifindex = e->ifindex;
	}
	if (d) {
		if (d->node_guid != e->node_guid ||
		    strncmp(d->netdev, e->netdev, sizeof(d->netdev)) ||
		    d->ifindex != e->ifindex)
			TFAIL(t, "port %u (%s): dev_index %u now guid %#llx netdev %s/%u, was %#llx %s/%u",
			      i, e->dev_name, e->dev_index,
			      (unsigned long long)e->node_guid, e->netdev,
			      e->ifindex, (unsigned long long)d->node_guid,
			      d->netdev, d->ifindex);
		if (e->port_num < FT_ARRAY_SIZE(d->down_count)) {
			if (e->down_count < d->down_count[e->port_num])
				TFAIL(t, "port %u (%s): down_count went back %llu -> %llu",
				      i, e->dev_name,
				      (unsigned long long)d->down_count[e->port_num],
				      (unsigned long long)e->down_count);
			d->down_count[e->port_num] = e->down_count;
		}
	}
	if (!whole)
		return;

	/* cross-row checks need a whole snapshot */
	if (e->backup_index == SHIFT_FT_NO_PORT) {
		if (e->pair_state != SHIFT_FT_PAIR_NONE)
			TFAIL(t, "port %u (%s): no backup but pair_state %u",
			      i, e->dev_name, e->pair_state);
	} else if (e->backup_index >= h->port_max || e->backup_index == i ||
		   !(port_at(base, e->backup_index)->flags & SHIFT_FT_ROW_VALID)) {
		TFAIL(t, "port %u (%s): bad backup_index %u", i, e->dev_name,
		      e->backup_index);
	} else {
		const struct shift_ft_page_port *b = port_at(base, e->backup_index);
		bool pu = port_active(e), bu = port_active(b);
		char n1[SM_NAME_BUF], n2[SM_NAME_BUF];
		uint8_t want = pu ? (bu ? SHIFT_FT_PAIR_BOTH_UP : SHIFT_FT_PAIR_BACKUP_DOWN)
				  : (bu ? SHIFT_FT_PAIR_PRIMARY_DOWN : SHIFT_FT_PAIR_BOTH_DOWN);

		if (e->pair_state != want)
			TFAIL(t, "port %u (%s) state %u, backup %u (%s) state %u: pair_state %s, expected %s (gen %llu)",
			      i, e->dev_name, e->state, e->backup_index,
			      b->dev_name, b->state,
			      sm_name(&sm_pair_state_names, e->pair_state, n1),
			      sm_name(&sm_pair_state_names, want, n2),
			      (unsigned long long)h->generation);
		if (b->link_layer != e->link_layer)
			TFAIL(t, "port %u (%s): backup %u has another link layer",
			      i, e->dev_name, e->backup_index);
	}
}

static void check_path(struct torture *t, const void *base, uint32_t i, uint64_t now)
{
	const struct shift_ft_page_hdr *h = base;
	const struct shift_ft_page_path *e = path_at(base, i);
	const struct shift_ft_page_port *pp;
	uint8_t want;

	if (!(e->flags & SHIFT_FT_ROW_VALID))
		return;
	if (e->port_index >= h->port_max ||
	    !(port_at(base, e->port_index)->flags & SHIFT_FT_ROW_VALID)) {
		TFAIL(t, "path %u: port_index %u is not a valid port", i, e->port_index);
		return;
	}
	if (e->state > SHIFT_FT_PATH_DOWN || e->report_state > SHIFT_FT_PATH_DOWN ||
	    e->report_source > SHIFT_FT_SRC_AGENT)
		TFAIL(t, "path %u: enum out of range", i);
	if (e->report_ns > now || e->last_change_ns > now)
		TFAIL(t, "path %u: time in the future", i);
	pp = port_at(base, e->port_index);
	want = !port_active(pp) ? SHIFT_FT_PATH_DOWN : e->report_state;
	if (e->state != want)
		TFAIL(t, "path %u on %s (port state %u): state %u, report %u, expected %u (gen %llu)",
		      i, pp->dev_name, pp->state, e->state, e->report_state,
		      want, (unsigned long long)h->generation);
}

static void check_snapshot(struct torture *t, const void *base, uint32_t seq)
{
	const struct shift_ft_page_hdr *h = base;
	uint64_t now = ft_now_ns();
	uint32_t i, nport = 0, npath = 0;

	if (seq & 1)
		TFAIL(t, "copy accepted with odd seq %u", seq);
	if (h->generation < t->last_gen)
		TFAIL(t, "generation went back %llu -> %llu",
		      (unsigned long long)t->last_gen,
		      (unsigned long long)h->generation);
	if ((int32_t)(seq - t->last_seq) < 0)
		TFAIL(t, "seq went back %u -> %u", t->last_seq, seq);
	if (seq == t->last_seq && h->generation != t->last_gen && t->last_seq)
		TFAIL(t, "generation changed without seq: %u", seq);
	t->last_gen = h->generation;
	t->last_seq = seq;
	for (i = 0; i < h->port_max; i++) {
		const struct shift_ft_page_port *e = port_at(base, i);

		if (e->flags & SHIFT_FT_ROW_VALID)
			nport++;
		check_port(t, base, i, e, true, now);
	}
	for (i = 0; i < h->path_max; i++) {
		if (path_at(base, i)->flags & SHIFT_FT_ROW_VALID)
			npath++;
		check_path(t, base, i, now);
	}
	if (nport != h->port_count || npath != h->path_count)
		TFAIL(t, "counts: %u valid ports (header %u), %u valid paths (header %u)",
		      nport, h->port_count, npath, h->path_count);
}

static int cmd_torture(struct page *p, double seconds, bool literal)
{
	static struct torture t;
	const struct shift_ft_page_hdr *live = (const void *)p->map;
	uint64_t end = ft_now_ns() + (uint64_t)(seconds * 1e9), loops = 0;
	unsigned long retries = 0, gens = 0;
	uint64_t prev_gen = 0;
	uint8_t row[4096];
	uint32_t pe = live->port_entry_size, pm = live->port_max, po = live->port_offset;

	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (pe > sizeof(row)) {
		fprintf(stderr, "%s: port entries of %u bytes\n", prog, pe);
		return 1;
	}
	while (!stop && ft_now_ns() < end) {
		uint32_t s, i;

		/* a whole snapshot, with the cross-row invariants */
		s = literal ? page_copy_literal(p, p->snap, 0, p->size, &retries)
			    : page_copy(p, p->snap, 0, p->size, &retries);
		check_snapshot(&t, p->snap, s);
		if (hdr_of(p->snap)->generation != prev_gen) {
			gens++;
			prev_gen = hdr_of(p->snap)->generation;
		}
		/* and single rows, the way the library's fast path reads them */
		for (i = 0; i < pm; i++) {
			memset(row, 0xa5, pe);
			s = literal ? page_copy_literal(p, row, po + (size_t)i * pe, pe, &retries)
				    : page_copy(p, row, po + (size_t)i * pe, pe, &retries);
			if (s & 1)
				TFAIL(&t, "row copy accepted with odd seq %u", s);
			check_port(&t, p->snap, i, (const void *)row, false, ft_now_ns());
		}
		loops++;
	}
	printf("# torture: %llu loops, %lu retries, %lu generations seen, %lu failures\n",
	       (unsigned long long)loops, retries, gens, t.fails);
	return t.fails ? 1 : 0;
}

/* ---- hold ---- */

static int cmd_hold(struct page *p)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* only the mapping keeps the file (and the module) referenced now */
	close(p->fd);
	p->fd = -1;
	printf("held %zu bytes magic=0x%08x\n", p->size,
	       ((const struct shift_ft_page_hdr *)p->map)->magic);
	fflush(stdout);
	while (!stop)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	struct page p = { .fd = -1 };
	char *args[64];
	int n = 0, i;
	long timeout_ms = 5000;
	double seconds = 0;
	bool literal = false;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			timeout_ms = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-T") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "-f") && i + 1 < argc)
			ft_set_fields(argv[++i]);
		else if (!strcmp(argv[i], "--literal"))
			literal = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			usage();
		else if (n < (int)FT_ARRAY_SIZE(args))
			args[n++] = argv[i];
	}
	if (!n)
		usage();
	if (!strcmp(args[0], "now")) {
		printf("%llu\n", (unsigned long long)ft_now_ns());
		return 0;
	}
	page_open(&p);
	if (!strcmp(args[0], "info") && n == 1)
		return cmd_info(&p);
	if (!strcmp(args[0], "gen") && n == 1)
		return cmd_gen(&p);
	if (!strcmp(args[0], "ports") && n == 1)
		return cmd_rows(&p, false);
	if (!strcmp(args[0], "paths") && n == 1)
		return cmd_rows(&p, true);
	if (!strcmp(args[0], "wait"))
		return cmd_wait(&p, args + 1, n - 1, timeout_ms);
	if (!strcmp(args[0], "watch") && n == 1)
		return cmd_watch(&p, seconds);
	if (!strcmp(args[0], "torture") && n == 2)
		return cmd_torture(&p, atof(args[1]), literal);
	if (!strcmp(args[0], "hold") && n == 1)
		return cmd_hold(&p);
	usage();
	return 2;
}
