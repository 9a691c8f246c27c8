// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * health.c: the slow path of the health page reader (health.h): mapping
 * /dev/shift_ft, checking it, and copying rows with the seqcount loop of
 * uapi/shift_ft.h.  Arrays are located only through the header's offsets,
 * strides and counts, re-read inside every loop, never through sizeof().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "config.h"
#include "health.h"
#include "lock.h"
#include "lockorder.h"
#include "log.h"
#include "util.h"

const uint32_t shiftu_health_noseq = 1;
const uint32_t *shiftu_health_seqp = &shiftu_health_noseq;

/*
 * The attached page.  page_base is published with a release store after
 * page_len, page_fd and the checks (pairs with the acquire load in
 * page_get()); all of it changes only under health_lock.
 */
static const uint8_t *page_base;
static size_t page_len;
static int page_fd = -1;
static bool page_mapped;		/* page_base came from our mmap */
static bool open_tried;			/* release store after open's result */
static int open_result = -ENODEV;
static pthread_mutex_t health_lock = PTHREAD_MUTEX_INITIALIZER;

/* The smallest rows version 1 of the page has: entries may only grow. */
#define PORT_ROW_MIN	(offsetof(struct shift_ft_page_port, pair_flags) + sizeof(__u32))
#define PATH_ROW_MIN	(offsetof(struct shift_ft_page_path, down_count) + sizeof(__u64))
#define HDR_MIN		(offsetof(struct shift_ft_page_hdr, map_size) + sizeof(__u64))

/* Give up on a page whose writer stays inside for this long. */
#define SEQ_WAIT_NS	1000000000ULL

/* Copy a field of a shared row at its version-1 offset; see read_begin(). */
#define ROW_GET(dst, row, type, field) \
	memcpy(&(dst), (row) + offsetof(type, field), sizeof(dst))

struct geometry {
	uint64_t generation;
	uint32_t port_offset, port_stride, port_max;
	uint32_t path_offset, path_stride, path_max;
};

static const struct shift_ft_page_hdr *hdr_of(const uint8_t *base)
{
	return (const struct shift_ft_page_hdr *)base;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * Start a read section: wait for an even seq and return it, or -ESTALE after
 * SEQ_WAIT_NS.  The acquire load pairs with the writer's final smp_wmb();
 * seq++, so rows copied after it are those of that seq or newer (newer is
 * caught by read_retry()).  @deadline is 0 on the first call.
 */
static int64_t read_begin(const struct shift_ft_page_hdr *h, uint64_t *deadline)
{
	unsigned int spins = 0;
	uint32_t s;

	for (;;) {
		s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (!(s & 1))
			return s;
		if (++spins < 256) {
			cpu_relax();
			continue;
		}
		/* the writer sleeps or was preempted inside: stop burning */
		spins = 0;
		if (!*deadline)
			*deadline = shiftu_mono_ns() + SEQ_WAIT_NS;
		else if (shiftu_mono_ns() > *deadline)
			return -ESTALE;
		sched_yield();
	}
}

/*
 * End a read section: true when the copies since read_begin() may be torn.
 * The acquire fence keeps those copies before the second load of seq; it
 * pairs with the writer's first seq++; smp_wmb().
 */
static bool read_retry(const struct shift_ft_page_hdr *h, uint32_t s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s;
}

/* Layout fields of the header, checked against the mapping.  In a section. */
static int geometry_read(const uint8_t *base, size_t len, struct geometry *g)
{
	const struct shift_ft_page_hdr *h = hdr_of(base);
	uint32_t hdr_size;

	memcpy(&hdr_size, &h->hdr_size, sizeof(hdr_size));
	memcpy(&g->generation, &h->generation, sizeof(g->generation));
	memcpy(&g->port_offset, &h->port_offset, sizeof(uint32_t));
	memcpy(&g->port_stride, &h->port_entry_size, sizeof(uint32_t));
	memcpy(&g->port_max, &h->port_max, sizeof(uint32_t));
	memcpy(&g->path_offset, &h->path_offset, sizeof(uint32_t));
	memcpy(&g->path_stride, &h->path_entry_size, sizeof(uint32_t));
	memcpy(&g->path_max, &h->path_max, sizeof(uint32_t));

	if (hdr_size < HDR_MIN || hdr_size > len)
		return -EPROTO;
	if (g->port_max && (g->port_stride < PORT_ROW_MIN || g->port_offset < hdr_size ||
			    g->port_offset + (uint64_t)g->port_max * g->port_stride > len))
		return -EPROTO;
	if (g->path_max && (g->path_stride < PATH_ROW_MIN || g->path_offset < hdr_size ||
			    g->path_offset + (uint64_t)g->path_max * g->path_stride > len))
		return -EPROTO;
	return 0;
}

/* Magic, version and layout of a candidate page; one consistent read. */
static int page_check(const uint8_t *base, size_t len)
{
	const struct shift_ft_page_hdr *h = hdr_of(base);
	uint16_t compat;
	uint32_t magic;
	uint64_t deadline = 0;
	struct geometry g;
	int64_t s;
	int err;

	if (len < HDR_MIN)
		return -EPROTO;
	do {
		s = read_begin(h, &deadline);
		if (s < 0)
			return s;
		memcpy(&magic, &h->magic, sizeof(magic));
		memcpy(&compat, &h->compat_version, sizeof(compat));
		err = geometry_read(base, len, &g);
	} while (read_retry(h, s));

	if (magic != SHIFT_FT_PAGE_MAGIC) {
		shiftu_warn("health page: bad magic 0x%08x", magic);
		return -EPROTO;
	}
	if (compat > SHIFT_FT_PAGE_VERSION) {
		shiftu_warn("health page: needs reader version %u, this is %u",
			    compat, SHIFT_FT_PAGE_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (err)
		shiftu_warn("health page: layout outside its %zu bytes", len);
	return err;
}

/* Under health_lock. */
static int attach_locked(const uint8_t *base, size_t len)
{
	int err;

	if (page_base)
		return -EBUSY;
	err = page_check(base, len);
	if (err)
		return err;
	page_len = len;
	__atomic_store_n(&page_base, base, __ATOMIC_RELEASE);
	/* pairs with the acquire load of the pointer in shiftu_health_moved() */
	__atomic_store_n(&shiftu_health_seqp, &hdr_of(base)->seq, __ATOMIC_RELEASE);
	return 0;
}

int shiftu_health_attach_mem(const void *mem, size_t len)
{
	int err;

	shiftu_lock(&health_lock, SHIFTU_LOCK_HEALTH);
	err = attach_locked(mem, len);
	shiftu_unlock(&health_lock, SHIFTU_LOCK_HEALTH);
	return err;
}

void shiftu_health_detach(void)
{
	shiftu_lock(&health_lock, SHIFTU_LOCK_HEALTH);
	__atomic_store_n(&shiftu_health_seqp, &shiftu_health_noseq, __ATOMIC_RELEASE);
	if (page_mapped)
		munmap((void *)page_base, page_len);
	if (page_fd >= 0)
		close(page_fd);
	__atomic_store_n(&page_base, NULL, __ATOMIC_RELEASE);
	page_len = 0;
	page_fd = -1;
	page_mapped = false;
	open_result = -ENODEV;
	__atomic_store_n(&open_tried, false, __ATOMIC_RELEASE);
	shiftu_unlock(&health_lock, SHIFTU_LOCK_HEALTH);
}

/* Under health_lock. */
static int shiftu_cold open_locked(void)
{
	const char *path = shiftu_config()->health_dev;
	struct shift_ft_info info;
	void *map;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		shiftu_info("health page unavailable: %s: %s", path, strerror(-err));
		return -ENODEV;
	}
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (ioctl(fd, SHIFT_FT_IOC_INFO, &info)) {
		err = -errno;
		shiftu_warn("health page unavailable: %s: SHIFT_FT_IOC_INFO: %s",
			    path, strerror(-err));
		goto close_fd;
	}
	map = mmap(NULL, info.map_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		shiftu_warn("health page unavailable: %s: mmap: %s", path, strerror(-err));
		goto close_fd;
	}
	/* before attach_locked() publishes page_base (see shiftu_health_fd()) */
	page_fd = fd;
	page_mapped = true;
	err = attach_locked(map, info.map_size);
	if (err)
		goto unmap;
	shiftu_info("health page %s: %zu bytes, %u ports, %u paths", path,
		    (size_t)info.map_size, info.port_max, info.path_max);
	return 0;

unmap:
	page_fd = -1;
	page_mapped = false;
	munmap(map, info.map_size);
close_fd:
	close(fd);
	return -ENODEV;
}

int shiftu_health_open(void)
{
	int err;

	if (__atomic_load_n(&open_tried, __ATOMIC_ACQUIRE))
		return open_result;	/* written before open_tried's release */
	shiftu_lock(&health_lock, SHIFTU_LOCK_HEALTH);
	if (page_base)
		err = 0;
	else if (__atomic_load_n(&open_tried, __ATOMIC_RELAXED))
		err = open_result;
	else
		err = open_locked();
	open_result = err;
	__atomic_store_n(&open_tried, true, __ATOMIC_RELEASE);
	shiftu_unlock(&health_lock, SHIFTU_LOCK_HEALTH);
	return err;
}

/* The attached page, opening it on first use; NULL: none. */
static const uint8_t *page_get(void)
{
	/* pairs with the release store in attach_locked() */
	const uint8_t *base = __atomic_load_n(&page_base, __ATOMIC_ACQUIRE);

	if (base)
		return base;
	if (shiftu_health_open())
		return NULL;
	return __atomic_load_n(&page_base, __ATOMIC_ACQUIRE);
}

static const uint8_t *port_row(const uint8_t *base, const struct geometry *g, uint32_t i)
{
	return base + g->port_offset + (size_t)i * g->port_stride;
}

static const uint8_t *path_row(const uint8_t *base, const struct geometry *g, uint32_t i)
{
	return base + g->path_offset + (size_t)i * g->path_stride;
}

int shiftu_cold shiftu_health_port(uint64_t node_guid, uint32_t port_num,
			      struct shiftu_port_health *out)
{
	const struct shift_ft_page_hdr *h;
	const uint8_t *base, *row, *brow;
	uint64_t deadline = 0, guid;
	struct shiftu_port_health r;
	struct geometry g;
	uint32_t i, flags, num;
	int64_t s;
	int err;

	base = page_get();
	if (!base)
		return -ENODEV;
	h = hdr_of(base);
	do {
		s = read_begin(h, &deadline);
		if (s < 0)
			return s;
		memset(&r, 0, sizeof(r));
		r.backup_index = SHIFT_FT_NO_PORT;
		err = geometry_read(base, page_len, &g);
		if (err)
			continue;	/* torn header or a broken page: read_retry decides */
		err = -ENOENT;
		for (i = 0; i < g.port_max; i++) {
			row = port_row(base, &g, i);
			ROW_GET(flags, row, struct shift_ft_page_port, flags);
			ROW_GET(guid, row, struct shift_ft_page_port, node_guid);
			ROW_GET(num, row, struct shift_ft_page_port, port_num);
			if ((flags & SHIFT_FT_ROW_VALID) && guid == node_guid && num == port_num)
				break;
		}
		if (i == g.port_max)
			continue;
		err = 0;
		r.seq = s;
		r.port_index = i;
		r.generation = g.generation;
		ROW_GET(r.down_count, row, struct shift_ft_page_port, down_count);
		ROW_GET(r.state, row, struct shift_ft_page_port, state);
		ROW_GET(r.link_layer, row, struct shift_ft_page_port, link_layer);
		ROW_GET(r.pair_state, row, struct shift_ft_page_port, pair_state);
		ROW_GET(r.pair_flags, row, struct shift_ft_page_port, pair_flags);
		ROW_GET(r.dev_name, row, struct shift_ft_page_port, dev_name);
		ROW_GET(r.backup_index, row, struct shift_ft_page_port, backup_index);
		if (r.backup_index >= g.port_max) {
			r.backup_index = SHIFT_FT_NO_PORT;
			continue;
		}
		brow = port_row(base, &g, r.backup_index);
		ROW_GET(flags, brow, struct shift_ft_page_port, flags);
		if (!(flags & SHIFT_FT_ROW_VALID)) {
			r.backup_index = SHIFT_FT_NO_PORT;
			continue;
		}
		ROW_GET(r.backup_port_num, brow, struct shift_ft_page_port, port_num);
		ROW_GET(r.backup_node_guid, brow, struct shift_ft_page_port, node_guid);
		ROW_GET(r.backup_state, brow, struct shift_ft_page_port, state);
		ROW_GET(r.backup_dev_name, brow, struct shift_ft_page_port, dev_name);
	} while (read_retry(h, s));

	if (err)
		return err;
	/* the kernel NUL-terminates; a torn-free copy of a broken page may not */
	r.dev_name[sizeof(r.dev_name) - 1] = '\0';
	r.backup_dev_name[sizeof(r.backup_dev_name) - 1] = '\0';
	*out = r;
	return 0;
}

int shiftu_cold shiftu_health_path(uint32_t port_index, const uint8_t gid[SHIFT_FT_GID_LEN],
			      uint8_t *state, uint64_t *since)
{
	const struct shift_ft_page_hdr *h;
	const uint8_t *base, *row;
	uint8_t rgid[SHIFT_FT_GID_LEN], st = SHIFT_FT_PATH_UNKNOWN;
	uint64_t deadline = 0, changed = 0;
	struct geometry g;
	uint32_t i, flags, pidx;
	int64_t s;
	int err;

	base = page_get();
	if (!base)
		return -ENODEV;
	h = hdr_of(base);
	do {
		s = read_begin(h, &deadline);
		if (s < 0)
			return s;
		err = geometry_read(base, page_len, &g);
		if (err)
			continue;
		err = -ENOENT;
		for (i = 0; i < g.path_max; i++) {
			row = path_row(base, &g, i);
			ROW_GET(flags, row, struct shift_ft_page_path, flags);
			ROW_GET(pidx, row, struct shift_ft_page_path, port_index);
			if (!(flags & SHIFT_FT_ROW_VALID) || pidx != port_index)
				continue;
			ROW_GET(rgid, row, struct shift_ft_page_path, remote_gid);
			if (memcmp(rgid, gid, sizeof(rgid)))
				continue;
			ROW_GET(st, row, struct shift_ft_page_path, state);
			ROW_GET(changed, row, struct shift_ft_page_path, last_change_ns);
			err = 0;
			break;
		}
	} while (read_retry(h, s));

	if (!err) {
		*state = st;
		if (since)
			*since = changed;
	}
	return err;
}

int shiftu_health_fd(void)
{
	if (!page_get())
		return -ENODEV;
	/* page_fd was written before page_base's release store */
	return page_fd >= 0 ? page_fd : -ENODEV;
}

uint64_t shiftu_health_generation(void)
{
	const uint8_t *base = __atomic_load_n(&page_base, __ATOMIC_ACQUIRE);
	uint64_t gen;

	if (!base)
		return 0;
	/* statistics only: a relaxed read, possibly one change behind */
	gen = __atomic_load_n(&hdr_of(base)->generation, __ATOMIC_RELAXED);
	return gen;
}

/*
 * fork(2) (fork.c): the mapping stays (the page is the kernel's, read
 * only), the file is opened again, so that the child's watcher reading
 * it does not take the parent's wakeups (they are per open file).
 */
static void shiftu_health_fork_child(void)
{
	int fd;

	if (page_fd < 0)
		return;
	fd = open(shiftu_config()->health_dev, O_RDONLY | O_CLOEXEC);
	close(page_fd);
	page_fd = fd;
}

SHIFTU_FORK_HOOK(health, .rank = SHIFTU_RANK_HEALTH, .name = "health_lock",
		 .lock = &health_lock, .child = shiftu_health_fork_child);
