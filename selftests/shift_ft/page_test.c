// SPDX-License-Identifier: GPL-2.0
/*
 * page_test: /dev/shift_ft is a read-only, self-describing shared page that
 * cannot be made writable by any route, that every user may read, that
 * cannot be seeked, whose ioctl checks its arguments, and whose poll()
 * reports table changes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <shift_ft.h>

#include "kselftest_harness.h"

#define GID_PROBE "fe80::5eed:0:0:1"

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* Consistent copy of the header (the seqcount loop, odd seq retried). */
static void hdr_copy(const struct shift_ft_page_hdr *h, struct shift_ft_page_hdr *out)
{
	uint32_t s;

	for (;;) {
		s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		memcpy(out, (const void *)h, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s)
			return;
	}
}

/* Run "ftnl ARGS" from the directory of this binary; returns exit status. */
static int ftnl(const char *args)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 256], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int st;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(cmd, sizeof(cmd), "%s/ftnl %s", exe, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

FIXTURE(page) {
	int fd;
	struct shift_ft_info info;
	const struct shift_ft_page_hdr *hdr;
	size_t size;
	char probe[160];	/* "DEV PORT" of a valid port row, or "" */
};

FIXTURE_SETUP(page)
{
	const uint8_t *base;
	uint32_t i;

	self->fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	memset(&self->info, 0, sizeof(self->info));
	self->info.size = sizeof(self->info);
	ASSERT_EQ(0, ioctl(self->fd, SHIFT_FT_IOC_INFO, &self->info))
		TH_LOG("SHIFT_FT_IOC_INFO: %s", strerror(errno));
	ASSERT_LT(0ULL, self->info.map_size);
	self->size = self->info.map_size;
	self->hdr = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->hdr) TH_LOG("mmap: %s", strerror(errno));
	self->probe[0] = '\0';
	base = (const void *)self->hdr;
	for (i = 0; i < self->hdr->port_max; i++) {
		const struct shift_ft_page_port *p = (const void *)(base +
			self->hdr->port_offset + (size_t)i * self->hdr->port_entry_size);

		if ((p->flags & SHIFT_FT_ROW_VALID) &&
		    memchr(p->dev_name, 0, sizeof(p->dev_name))) {
			snprintf(self->probe, sizeof(self->probe), "%s %u",
				 p->dev_name, p->port_num);
			break;
		}
	}
}

FIXTURE_TEARDOWN(page)
{
	if (self->hdr && self->hdr != MAP_FAILED)
		munmap((void *)self->hdr, self->size);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(page, header)
{
	struct shift_ft_page_hdr h;
	uint64_t ports_end, paths_end;

	hdr_copy(self->hdr, &h);
	EXPECT_EQ(SHIFT_FT_PAGE_MAGIC, h.magic);
	EXPECT_LE(1, h.version);
	EXPECT_LE(h.compat_version, SHIFT_FT_PAGE_VERSION);
	EXPECT_LE(h.compat_version, h.version);
	EXPECT_EQ(0U, h.seq & 1);
	/* version 1 of the layout: exactly what this header declares */
	if (h.version == SHIFT_FT_PAGE_VERSION) {
		EXPECT_EQ(sizeof(struct shift_ft_page_hdr), h.hdr_size);
		EXPECT_EQ(sizeof(struct shift_ft_page_port), h.port_entry_size);
		EXPECT_EQ(sizeof(struct shift_ft_page_path), h.path_entry_size);
	} else {
		EXPECT_LE(sizeof(struct shift_ft_page_hdr), h.hdr_size);
		EXPECT_LE(sizeof(struct shift_ft_page_port), h.port_entry_size);
		EXPECT_LE(sizeof(struct shift_ft_page_path), h.path_entry_size);
	}
	EXPECT_EQ(SHIFT_FT_FEAT_PAIRS | SHIFT_FT_FEAT_PATHS,
		  h.features & (SHIFT_FT_FEAT_PAIRS | SHIFT_FT_FEAT_PATHS));
	EXPECT_EQ(self->info.map_size, h.map_size);
	EXPECT_EQ(0ULL, h.map_size % (uint64_t)page_size());
	/* arrays: aligned, after the header, inside the map, disjoint */
	EXPECT_EQ(0U, h.port_offset % 8);
	EXPECT_EQ(0U, h.path_offset % 8);
	EXPECT_EQ(0U, h.port_entry_size % 8);
	EXPECT_EQ(0U, h.path_entry_size % 8);
	EXPECT_LE(h.hdr_size, h.port_offset);
	EXPECT_LE(h.hdr_size, h.path_offset);
	ports_end = h.port_offset + (uint64_t)h.port_max * h.port_entry_size;
	paths_end = h.path_offset + (uint64_t)h.path_max * h.path_entry_size;
	EXPECT_LE(ports_end, h.map_size);
	EXPECT_LE(paths_end, h.map_size);
	EXPECT_TRUE(ports_end <= h.path_offset || paths_end <= h.port_offset);
	EXPECT_LE(1U, h.port_max);
	EXPECT_LE(1U, h.path_max);
	EXPECT_LE(h.port_count, h.port_max);
	EXPECT_LE(h.path_count, h.path_max);
}

TEST_F(page, info_matches_header)
{
	struct shift_ft_page_hdr h;

	hdr_copy(self->hdr, &h);
	EXPECT_EQ(sizeof(struct shift_ft_info), self->info.size);
	EXPECT_EQ(0U, self->info.flags);
	EXPECT_EQ(h.version, self->info.page_version);
	EXPECT_EQ(h.compat_version, self->info.page_compat_version);
	EXPECT_EQ(h.port_max, self->info.port_max);
	EXPECT_EQ(h.path_max, self->info.path_max);
	EXPECT_LE(self->info.generation, h.generation);
}

TEST_F(page, rows_well_formed)
{
	const uint8_t *base = (const void *)self->hdr;
	uint8_t *copy = malloc(self->size);
	const struct shift_ft_page_hdr *h = (const void *)copy;
	uint32_t i, nport = 0, npath = 0, s;

	ASSERT_NE(NULL, copy);
	for (;;) {
		s = __atomic_load_n(&self->hdr->seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		memcpy(copy, base, self->size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&self->hdr->seq, __ATOMIC_RELAXED) == s)
			break;
	}
	for (i = 0; i < h->port_max; i++) {
		const struct shift_ft_page_port *p = (const void *)(copy +
			h->port_offset + (size_t)i * h->port_entry_size);

		if (!(p->flags & SHIFT_FT_ROW_VALID))
			continue;
		nport++;
		EXPECT_NE(NULL, memchr(p->dev_name, 0, sizeof(p->dev_name)));
		EXPECT_NE(NULL, memchr(p->netdev, 0, sizeof(p->netdev)));
		EXPECT_NE(0, p->dev_name[0]);
		EXPECT_LE(1U, p->port_num);
		EXPECT_LE(p->state, SHIFT_FT_PORT_ACTIVE_DEFER);
		EXPECT_TRUE(p->backup_index == SHIFT_FT_NO_PORT ||
			    p->backup_index < h->port_max);
		EXPECT_NE(i, p->backup_index);
	}
	for (i = 0; i < h->path_max; i++) {
		const struct shift_ft_page_path *p = (const void *)(copy +
			h->path_offset + (size_t)i * h->path_entry_size);

		if (!(p->flags & SHIFT_FT_ROW_VALID))
			continue;
		npath++;
		EXPECT_LT(p->port_index, h->port_max);
		EXPECT_LE(p->state, SHIFT_FT_PATH_DOWN);
	}
	EXPECT_EQ(h->port_count, nport);
	EXPECT_EQ(h->path_count, npath);
	TH_LOG("%u ports, %u paths, generation %llu", nport, npath,
	       (unsigned long long)h->generation);
	free(copy);
}

TEST_F(page, read_generation)
{
	struct shift_ft_page_hdr h;
	uint64_t g = 0;
	int tries;

	/* the table may change between the two reads: a few attempts */
	for (tries = 0; tries < 5; tries++) {
		ASSERT_EQ((ssize_t)sizeof(g), read(self->fd, &g, sizeof(g)));
		hdr_copy(self->hdr, &h);
		if (g == h.generation)
			break;
	}
	EXPECT_EQ(h.generation, g);
}

/* The device is a stream: lseek() and pread() fail with ESPIPE. */
TEST_F(page, not_seekable)
{
	uint64_t g;

	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
	errno = 0;
	EXPECT_EQ(-1, pread(self->fd, &g, sizeof(g), 0));
	EXPECT_EQ(ESPIPE, errno);
}

/* A read-only descriptor: the VFS alone refuses a shared writable map. */
TEST(map_shared_write_rdonly_fd)
{
	int fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	void *m;

	ASSERT_LE(0, fd);
	m = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EACCES, errno);
	if (m != MAP_FAILED)
		munmap(m, page_size());
	close(fd);
}

/*
 * Root opens the 0444 node read-write despite its mode: then only the driver
 * stands between a process and a writable mapping of the table.
 */
TEST(map_shared_write_rdwr_fd)
{
	int fd = open(SHIFT_FT_DEVICE_PATH, O_RDWR);
	void *m;

	if (fd < 0) {
		/* refusing writable opens is also correct */
		TH_LOG("O_RDWR open refused: %s", strerror(errno));
		EXPECT_TRUE(errno == EACCES || errno == EPERM);
		return;
	}
	m = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_TRUE(errno == EPERM || errno == EACCES)
		TH_LOG("errno %d (%s)", errno, strerror(errno));
	if (m != MAP_FAILED)
		munmap(m, page_size());
	/* a shared read-only map of the same fd must not allow mprotect */
	m = mmap(NULL, page_size(), PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(-1, mprotect(m, page_size(), PROT_READ | PROT_WRITE));
	munmap(m, page_size());
	/* nor does write(2) change anything */
	EXPECT_GT(0, write(fd, "x", 1));
	close(fd);
}

TEST(map_private_write)
{
	int fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	void *m;

	ASSERT_LE(0, fd);
	m = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_TRUE(errno == EPERM || errno == EACCES || errno == EINVAL)
		TH_LOG("errno %d (%s)", errno, strerror(errno));
	if (m != MAP_FAILED)
		munmap(m, page_size());
	close(fd);
}

TEST_F(page, mprotect_write)
{
	EXPECT_EQ(-1, mprotect((void *)self->hdr, self->size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect((void *)self->hdr, page_size(), PROT_WRITE));
	EXPECT_EQ(SHIFT_FT_PAGE_MAGIC, self->hdr->magic);
}

TEST_F(page, private_readonly_then_mprotect)
{
	void *m = mmap(NULL, page_size(), PROT_READ, MAP_PRIVATE, self->fd, 0);

	if (m == MAP_FAILED) {
		TH_LOG("MAP_PRIVATE read-only refused: %s (fine)", strerror(errno));
		return;
	}
	/* a private COW copy of a kernel page would be harmless, but the
	 * header promises VM_MAYWRITE is gone for every mapping */
	EXPECT_EQ(-1, mprotect(m, page_size(), PROT_READ | PROT_WRITE));
	munmap(m, page_size());
}

/* FOLL_FORCE writes through /proc/self/mem must not reach the page. */
TEST_F(page, proc_self_mem_write)
{
	uint32_t junk = 0xdeadbeef, magic = self->hdr->magic;
	int mem = open("/proc/self/mem", O_RDWR);
	ssize_t n;

	ASSERT_LE(0, mem);
	n = pwrite(mem, &junk, sizeof(junk), (off_t)(uintptr_t)self->hdr);
	EXPECT_NE((ssize_t)sizeof(junk), n) TH_LOG("pwrite wrote %zd bytes", n);
	n = pwrite(mem, &junk, sizeof(junk),
		   (off_t)(uintptr_t)self->hdr + self->hdr->port_offset);
	EXPECT_NE((ssize_t)sizeof(junk), n);
	close(mem);
	EXPECT_EQ(magic, self->hdr->magic);
	EXPECT_EQ(SHIFT_FT_PAGE_MAGIC, self->hdr->magic);
}

/* Mapping more than map_size would expose memory beyond the table. */
TEST_F(page, map_beyond_size)
{
	void *m = mmap(NULL, self->size + page_size(), PROT_READ, MAP_SHARED,
		       self->fd, 0);

	EXPECT_EQ(MAP_FAILED, m);
	if (m != MAP_FAILED)
		munmap(m, self->size + page_size());
	m = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, page_size());
	EXPECT_EQ(MAP_FAILED, m) TH_LOG("a map at offset one page, full size, worked");
	if (m != MAP_FAILED)
		munmap(m, self->size);
}

TEST(unprivileged_read)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct shift_ft_info info = { .size = sizeof(info) };
		const struct shift_ft_page_hdr *h;
		uint64_t g;
		int fd;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		if (geteuid() != 65534)
			_exit(11);
		fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
		if (fd < 0)
			_exit(12);
		if (ioctl(fd, SHIFT_FT_IOC_INFO, &info))
			_exit(13);
		h = mmap(NULL, info.map_size, PROT_READ, MAP_SHARED, fd, 0);
		if (h == MAP_FAILED)
			_exit(14);
		if (h->magic != SHIFT_FT_PAGE_MAGIC)
			_exit(15);
		if (read(fd, &g, sizeof(g)) != sizeof(g))
			_exit(16);
		if (mmap(NULL, info.map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0) != MAP_FAILED)
			_exit(17);
		if (open(SHIFT_FT_DEVICE_PATH, O_RDWR) >= 0)
			_exit(18);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("child step %d failed", WEXITSTATUS(st));
}

TEST(ioctl_bad_args)
{
	int fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	struct shift_ft_info info;
	union {
		struct shift_ft_info info;
		uint8_t bytes[4096];
	} big;
	size_t i;

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, (void *)16));
	EXPECT_EQ(EFAULT, errno);

	memset(&info, 0, sizeof(info));
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, &info));
	EXPECT_EQ(EINVAL, errno);

	info.size = SHIFT_FT_INFO_SIZE_VER0 - 1;
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, &info));
	EXPECT_EQ(EINVAL, errno);

	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	info.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, &info));
	EXPECT_EQ(EOPNOTSUPP, errno);
	info.flags = 0x80000000U;
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, &info));
	EXPECT_EQ(EOPNOTSUPP, errno);

	/* the oldest caller: 40 bytes in, 40 out, nothing written beyond */
	memset(&big, 0xa5, sizeof(big));
	big.info.size = SHIFT_FT_INFO_SIZE_VER0;
	big.info.flags = 0;
	EXPECT_EQ(0, ioctl(fd, SHIFT_FT_IOC_INFO, &big.info));
	EXPECT_EQ((__u32)SHIFT_FT_INFO_SIZE_VER0, big.info.size);
	EXPECT_NE(0ULL, big.info.map_size);
	for (i = SHIFT_FT_INFO_SIZE_VER0; i < sizeof(big.bytes); i++)
		if (big.bytes[i] != 0xa5)
			break;
	EXPECT_EQ(sizeof(big.bytes), i) TH_LOG("byte %zu written", i);

	/* a newer caller (fields unknown to the kernel zeroed): the kernel
	 * fills what it knows and says how much */
	memset(&big, 0, sizeof(big));
	big.info.size = sizeof(big.bytes);
	EXPECT_EQ(0, ioctl(fd, SHIFT_FT_IOC_INFO, &big.info))
		TH_LOG("size %zu: %s", sizeof(big.bytes), strerror(errno));
	EXPECT_LE((__u32)SHIFT_FT_INFO_SIZE_VER0, big.info.size);
	EXPECT_GE(sizeof(big.bytes), big.info.size);
	EXPECT_NE(0ULL, big.info.map_size);

	/* ... and with non-zero bytes the kernel does not know: refused
	 * (copy_struct_from_user's E2BIG) or ignored, never misread */
	memset(&big, 0xa5, sizeof(big));
	big.info.size = sizeof(big.bytes);
	big.info.flags = 0;
	if (ioctl(fd, SHIFT_FT_IOC_INFO, &big.info)) {
		EXPECT_EQ(E2BIG, errno);
	} else {
		for (i = big.info.size; i < sizeof(big.bytes); i++)
			if (big.bytes[i] != 0xa5)
				break;
		EXPECT_EQ(sizeof(big.bytes), i) TH_LOG("byte %zu written", i);
	}

	EXPECT_EQ(-1, ioctl(fd, _IOWR(SHIFT_FT_IOC_MAGIC, 2, struct shift_ft_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, _IOR(SHIFT_FT_IOC_MAGIC, 1, struct shift_ft_info), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, _IO('x', 1), 0));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

/*
 * The size is bounded (SHIFT_FT_INFO_SIZE_MAX) before the kernel reads a
 * byte: zeroed memory beyond the bound is refused, not scanned, and the
 * largest size fails with E2BIG rather than walking off the mapping
 * (EFAULT) after reading gigabytes.
 */
TEST(ioctl_size_limit)
{
	size_t len = SHIFT_FT_INFO_SIZE_MAX + (size_t)page_size();
	int fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	struct shift_ft_info *info;
	uint8_t *buf;

	ASSERT_LE(0, fd);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	info = (struct shift_ft_info *)buf;

	/* the bound itself is accepted: a newer caller's zeroed struct */
	info->size = SHIFT_FT_INFO_SIZE_MAX;
	EXPECT_EQ(0, ioctl(fd, SHIFT_FT_IOC_INFO, info))
		TH_LOG("size %u: %s", SHIFT_FT_INFO_SIZE_MAX, strerror(errno));
	EXPECT_LE((__u32)SHIFT_FT_INFO_SIZE_VER0, info->size);
	EXPECT_GE((__u32)SHIFT_FT_INFO_SIZE_MAX, info->size);

	/* one byte more, all zero: refused, and nothing written back */
	memset(buf, 0, len);
	info->size = SHIFT_FT_INFO_SIZE_MAX + 1;
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, info))
		TH_LOG("size %u (zeroed) accepted", SHIFT_FT_INFO_SIZE_MAX + 1);
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ((__u32)SHIFT_FT_INFO_SIZE_MAX + 1, info->size);
	EXPECT_EQ(0ULL, info->map_size);

	/* 4 GiB - 1: refused at once, not an EFAULT after a scan */
	memset(buf, 0, len);
	info->size = UINT32_MAX;
	EXPECT_EQ(-1, ioctl(fd, SHIFT_FT_IOC_INFO, info));
	EXPECT_EQ(E2BIG, errno) TH_LOG("size 4 GiB - 1: %s", strerror(errno));
	EXPECT_EQ((__u32)UINT32_MAX, info->size);

	munmap(buf, len);
	close(fd);
}

/* Rearm, make a change through netlink, expect POLLIN and a new generation. */
TEST_F(page, poll_wakes_on_change)
{
	struct pollfd p = { .events = POLLIN };
	char args[256];
	uint64_t g0, g1;
	int fd, tries;

	if (!self->probe[0])
		SKIP(return, "no port row to report a path on");
	fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	p.fd = fd;
	/* quiet first: read, and poll must not report (unless the table moved) */
	for (tries = 0; tries < 5; tries++) {
		ASSERT_EQ((ssize_t)sizeof(g0), read(fd, &g0, sizeof(g0)));
		if (poll(&p, 1, 0) == 0)
			break;
	}
	ASSERT_GT(5, tries) TH_LOG("table never quiet");

	snprintf(args, sizeof(args), "report %s " GID_PROBE " up app", self->probe);
	ASSERT_EQ(0, ftnl(args));
	ASSERT_EQ(1, poll(&p, 1, 2000));
	EXPECT_TRUE(p.revents & POLLIN);
	ASSERT_EQ((ssize_t)sizeof(g1), read(fd, &g1, sizeof(g1)));
	EXPECT_LT(g0, g1);
	EXPECT_LE(g1, __atomic_load_n(&self->hdr->generation, __ATOMIC_ACQUIRE));

	/* after read(), quiet again until the next change */
	if (poll(&p, 1, 0) != 0)
		TH_LOG("POLLIN again right after read: another change?");

	/* a second descriptor that never read() reports a change since open */
	{
		struct pollfd p2 = { .events = POLLIN };
		int fd2 = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);

		ASSERT_LE(0, fd2);
		p2.fd = fd2;
		snprintf(args, sizeof(args), "path-del %s " GID_PROBE, self->probe);
		ASSERT_EQ(0, ftnl(args));
		EXPECT_EQ(1, poll(&p2, 1, 2000));
		EXPECT_EQ(1, poll(&p, 1, 2000));
		close(fd2);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	if (access(SHIFT_FT_DEVICE_PATH, F_OK)) {
		ksft_print_header();
		ksft_exit_skip("%s missing: shift_ft not loaded (needs the lab)\n",
			       SHIFT_FT_DEVICE_PATH);
	}
	if (geteuid()) {
		ksft_print_header();
		ksft_exit_skip("needs root\n");
	}
	return test_harness_run(argc, argv);
}
