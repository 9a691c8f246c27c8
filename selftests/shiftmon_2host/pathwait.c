// SPDX-License-Identifier: GPL-2.0
/*
 * pathwait: time how long a path takes to reach a state in this host's
 * shared page (/dev/shift_ft), read the way libshiftu reads it.
 *
 *   pathwait GID STATE [-t MS] [--send ADDR PORT LINE | -- CMD [ARGS...]]
 *
 * STATE is UP, DOWN or ABSENT.  Waits (poll() on the page, default 3000
 * ms) until at least one valid path row has remote GID GID and every such
 * row has that effective state (ABSENT: no such row).  With a command, it
 * is started just after the clock is read, and the wait runs while it
 * does; the command must succeed.  Prints the nanoseconds from that clock
 * reading (or the start) to the snapshot that matched and, with a command,
 * a second number: the nanoseconds the command itself took (the command's
 * own cost, e.g. lab-peer's, to read the first one against).
 *
 * --send connects to a line server (pull-server on host 2) and waits for its
 * "ready" before reading the clock, then sends LINE and counts as the
 * command's end its "ok": no process starts between the clock and the
 * request, so the first number is the relay's time plus the pull itself.
 * Exit 0 matched, 1 timeout or error, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <shift_ft.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: pathwait GID UP|DOWN|ABSENT [-t MS] [--send ADDR PORT LINE | -- CMD [ARGS...]]\n");
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "pathwait: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* one consistent copy of the page (the seqcount loop of uapi/shift_ft.h) */
static void snapshot(const volatile uint8_t *map, uint8_t *snap, size_t size)
{
	const volatile struct shift_ft_page_hdr *h = (const volatile void *)map;

	for (;;) {
		uint32_t s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);

		if (s & 1)
			continue;
		memcpy(snap, (const void *)map, size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s)
			return;
	}
}

/* 1: matched; 0: not yet.  @print: the rows with @gid on stderr. */
static int matches(const uint8_t *snap, const uint8_t *gid, int want, bool print)
{
	const struct shift_ft_page_hdr *h = (const void *)snap;
	unsigned int n = 0, ok = 0;
	uint32_t i;

	for (i = 0; i < h->path_max; i++) {
		const struct shift_ft_page_path *e = (const void *)(snap +
			h->path_offset + (size_t)i * h->path_entry_size);

		if (!(e->flags & SHIFT_FT_ROW_VALID) ||
		    memcmp(e->remote_gid, gid, SHIFT_FT_GID_LEN))
			continue;
		n++;
		if (e->state == want)
			ok++;
		if (print)
			fprintf(stderr, "pathwait: row %u: port_index %u state %u report %u source %u\n",
				i, e->port_index, e->state, e->report_state,
				e->report_source);
	}
	if (want < 0)
		return n == 0;
	return n && ok == n;
}

int main(int argc, char **argv)
{
	struct shift_ft_info info = { .size = sizeof(info) };
	long timeout_ms = 3000;
	uint8_t gid[16], *snap;
	const volatile uint8_t *map;
	char **cmd = NULL, **send_to = NULL, reply[256];
	uint64_t t0, deadline, g;
	uint64_t t_match = 0, t_exit = 0;
	pid_t child = -1;
	int fd, pidfd = -1, want, i, st = 0;

	if (argc < 3 || inet_pton(AF_INET6, argv[1], gid) != 1)
		usage();
	if (!strcasecmp(argv[2], "UP"))
		want = SHIFT_FT_PATH_UP;
	else if (!strcasecmp(argv[2], "DOWN"))
		want = SHIFT_FT_PATH_DOWN;
	else if (!strcasecmp(argv[2], "ABSENT"))
		want = -1;
	else
		usage();
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			timeout_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--send") && i + 3 < argc) {
			send_to = argv + i + 1;
			i += 3;
		} else if (!strcmp(argv[i], "--") && i + 1 < argc) {
			cmd = argv + i + 1;
			break;
		} else
			usage();
	}

	fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(SHIFT_FT_DEVICE_PATH);
	if (ioctl(fd, SHIFT_FT_IOC_INFO, &info))
		die("SHIFT_FT_IOC_INFO");
	map = mmap(NULL, info.map_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	snap = malloc(info.map_size);
	if (!snap)
		die("malloc");

	if (send_to) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(atoi(send_to[1])) };
		ssize_t n = 0, r;

		pidfd = socket(AF_INET, SOCK_STREAM, 0);
		if (pidfd < 0 || inet_pton(AF_INET, send_to[0], &sa.sin_addr) != 1 ||
		    connect(pidfd, (struct sockaddr *)&sa, sizeof(sa)))
			die("connect");
		while (!memchr(reply, '\n', n) &&
		       (r = read(pidfd, reply + n, sizeof(reply) - 1 - n)) > 0)
			n += r;
		if (n <= 0 || strncmp(reply, "ready", 5))
			die("pull server not ready");
		child = 0;	/* a "command" whose end is the server's answer */
	}
	t0 = now_ns();
	if (send_to) {
		dprintf(pidfd, "%s\n", send_to[2]);
	} else if (cmd) {
		child = fork();
		if (child < 0)
			die("fork");
		if (!child) {
			int null = open("/dev/null", O_WRONLY);

			if (null >= 0)
				dup2(null, STDOUT_FILENO);
			execvp(cmd[0], cmd);
			_exit(127);
		}
		/* readable when the child exits: its duration, while we wait */
		pidfd = syscall(SYS_pidfd_open, child, 0);
		if (pidfd < 0)
			die("pidfd_open");
	}
	deadline = t0 + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		struct pollfd pf[2] = { { .fd = fd, .events = POLLIN },
					{ .fd = pidfd, .events = POLLIN } };
		uint64_t t;

		if (!t_match) {
			/* the generation first: POLLIN then means "changed since" */
			if (read(fd, &g, sizeof(g)) != sizeof(g))
				die("read");
			snapshot(map, snap, info.map_size);
			t = now_ns();
			if (matches(snap, gid, want, false))
				t_match = t;
		}
		t = now_ns();
		if (t_match && !t_exit && child < 0)
			break;
		if (t_match && t_exit)
			break;
		if (t >= deadline)
			break;
		if (poll(t_match ? pf + 1 : pf, t_match ? 1 : (pidfd >= 0 && !t_exit ? 2 : 1),
			 (int)((deadline - t) / 1000000) + 1) < 0 && errno != EINTR)
			die("poll");
		if (send_to && !t_exit && (pf[1].revents & POLLIN)) {
			ssize_t r = read(pidfd, reply, sizeof(reply) - 1);

			t_exit = now_ns();
			if (r <= 0 || strncmp(reply, "ok", 2)) {
				fprintf(stderr, "pathwait: pull server: %.*s\n",
					r > 0 ? (int)r : 0, reply);
				return 1;
			}
		} else if (pidfd >= 0 && !t_exit && (pf[1].revents & POLLIN)) {
			t_exit = now_ns();
			if (waitpid(child, &st, 0) < 0)
				die("waitpid");
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "pathwait: %s failed (status %#x)\n",
					cmd[0], st);
				return 1;
			}
		}
	}
	if (t_match && (child < 0 || t_exit)) {
		if (child >= 0)
			printf("%llu %llu\n", (unsigned long long)(t_match - t0),
			       (unsigned long long)(t_exit - t0));
		else
			printf("%llu\n", (unsigned long long)(t_match - t0));
		return 0;
	}
	fprintf(stderr, "pathwait: %s never %s after %ld ms\n", argv[1], argv[2],
		timeout_ms);
	if (t_match)
		fprintf(stderr, "pathwait: matched, but %s did not finish\n",
			send_to ? "the pull server" : cmd[0]);
	else
		matches(snap, gid, want, true);
	if (child > 0 && !t_exit)
		waitpid(child, &st, 0);
	return 1;
}
