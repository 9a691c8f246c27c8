// SPDX-License-Identifier: GPL-2.0
/*
 * ftflap: flap a port and time how long the table takes to show it.
 *
 * One process, one poll() loop over the page (/dev/shift_ft), the "events"
 * multicast socket and, for cable pulls, the lab's control line, so that no
 * process start and no polling interval sits between the pull and the
 * timestamps.  For each transition it prints the time from the request to
 * the page showing the new state and to the PORT_NEW event carrying it, then
 * the median and maximum of each.
 *
 *   ftflap [-n CYCLES] [-i IFNAME] [-d DEV] [-p PORT] [-l LIMIT_MS]
 *          [-s SETTLE_MS] ip|cable
 *
 * ip:    SIOCSIFFLAGS on IFNAME in this process (what `ip link set` does)
 * cable: a QEMU set_link request on /dev/ttyS1 through the lab's relay (the
 *        protocol of selftests/lab/guest/lab-lib.sh); the time starts when
 *        the request is written, so it includes QEMU's own work.
 *
 * SETTLE_MS (default 100) is the pause after each up.  A guest learns of a
 * carrier loss through the kernel's linkwatch, which holds a non-urgent
 * event until a second after its previous run: pulls closer than that
 * measure linkwatch's batching, not shift_ft.  Give 1100 to time each pull
 * as the first event in a second, as a real failure is.  Even then some
 * other run of linkwatch can come just before a pull, so each transition
 * is judged from the kernel's own RTM_NEWLINK for IFNAME (IFF_UP for ip,
 * IFF_LOWER_UP for cable), which linkwatch sends after the notifier chain
 * that told rxe; the times from the request are printed beside it.
 *
 * Exit: 0 if every transition reached both within LIMIT_MS (default 1000)
 * of the kernel's link message, with a correct row; 1 otherwise, 2 usage,
 * 4 when it cannot run here.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/if.h>		/* IFF_LOWER_UP, after net/if.h */
#include <linux/rtnetlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <shift_ft.h>

#define KSFT_SKIP 4

struct target {
	const char *dev;
	uint32_t port;
	uint8_t state;		/* what the row must show */
	uint64_t t_event;	/* when the PORT_NEW with it arrived, 0: not yet */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(int code, const char *what)
{
	fprintf(stderr, "ftflap: %s: %s\n", what, strerror(errno));
	exit(code);
}

/* ---- the page ---- */

struct page {
	int fd;
	const uint8_t *base;
	const struct shift_ft_page_hdr *hdr;
};

static void page_open(struct page *p)
{
	struct shift_ft_info info = { .size = sizeof(info) };

	p->fd = open(SHIFT_FT_DEVICE_PATH, O_RDONLY);
	if (p->fd < 0)
		die(KSFT_SKIP, SHIFT_FT_DEVICE_PATH);
	if (ioctl(p->fd, SHIFT_FT_IOC_INFO, &info))
		die(1, "SHIFT_FT_IOC_INFO");
	p->base = mmap(NULL, info.map_size, PROT_READ, MAP_SHARED, p->fd, 0);
	if (p->base == MAP_FAILED)
		die(1, "mmap");
	p->hdr = (const void *)p->base;
}

/* The reader's loop of uapi/shift_ft.h, for one port row. */
static int page_row(struct page *p, const char *dev, uint32_t port,
		    struct shift_ft_page_port *out)
{
	const struct shift_ft_page_hdr *h = p->hdr;
	uint32_t s, i;
	int found;

	do {
		s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		found = 0;
		for (i = 0; i < h->port_max && !found; i++) {
			const struct shift_ft_page_port *r = (const void *)
				(p->base + h->port_offset + (size_t)i * h->port_entry_size);

			if ((r->flags & SHIFT_FT_ROW_VALID) && r->port_num == port &&
			    !strncmp(r->dev_name, dev, sizeof(r->dev_name))) {
				memcpy(out, r, sizeof(*out));
				found = 1;
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (s & 1 || __atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s);
	return found ? 0 : -ENODEV;
}

/* ---- the events group ---- */

static int on_event(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[SHIFT_FT_A_MAX + 1];
	struct target *t = arg;

	if (g->cmd != SHIFT_FT_CMD_PORT_NEW || t->t_event)
		return NL_OK;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, SHIFT_FT_A_MAX, NULL) ||
	    !tb[SHIFT_FT_A_DEV_NAME] || !tb[SHIFT_FT_A_PORT_NUM] ||
	    !tb[SHIFT_FT_A_STATE])
		return NL_OK;
	if (!strcmp(nla_get_string(tb[SHIFT_FT_A_DEV_NAME]), t->dev) &&
	    nla_get_u32(tb[SHIFT_FT_A_PORT_NUM]) == t->port &&
	    nla_get_u8(tb[SHIFT_FT_A_STATE]) == t->state)
		t->t_event = now_ns();
	return NL_OK;
}

static struct nl_sock *events_open(struct target *t)
{
	struct nl_sock *sk = nl_socket_alloc();
	int grp;

	if (!sk || genl_connect(sk))
		die(1, "netlink");
	grp = genl_ctrl_resolve_grp(sk, SHIFT_FT_GENL_NAME, SHIFT_FT_MCGRP_EVENTS);
	if (grp < 0) {
		fprintf(stderr, "ftflap: no %s/%s group\n", SHIFT_FT_GENL_NAME,
			SHIFT_FT_MCGRP_EVENTS);
		exit(KSFT_SKIP);
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, t);
	if (nl_socket_add_membership(sk, grp))
		die(1, "subscribe");
	nl_socket_set_nonblocking(sk);
	return sk;
}

/* ---- the kernel's own word on the interface ---- */

static int link_open(void)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_LINK,
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			NETLINK_ROUTE);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die(1, "rtnetlink");
	return fd;
}

/*
 * Reads what the link group queued; returns 1 if a RTM_NEWLINK showed
 * IFINDEX with FLAG set (WANT 1) or clear (WANT 0).  A lost message
 * (ENOBUFS) ends the run: the transition could not be judged.
 */
static int link_seen(int fd, int ifindex, unsigned int flag, int want)
{
	char buf[16384];
	ssize_t n;
	int seen = 0;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		const struct nlmsghdr *h;

		for (h = (const void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			const struct ifinfomsg *ifi = NLMSG_DATA(h);

			if (h->nlmsg_type == RTM_NEWLINK &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifi)) &&
			    ifi->ifi_index == ifindex &&
			    !!(ifi->ifi_flags & flag) == want)
				seen = 1;
		}
	}
	if (n < 0 && errno != EAGAIN)
		die(1, "rtnetlink recv");
	return seen;
}

/* ---- the two ways of pulling ---- */

static void ip_set(const char *ifname, int up)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr))
		die(1, ifname);
	if (up)
		ifr.ifr_flags |= IFF_UP;
	else
		ifr.ifr_flags &= ~IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		die(1, ifname);
	close(s);
}

static int ctl_open(void)
{
	struct termios tio;
	int fd = open("/dev/ttyS1", O_RDWR | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		die(KSFT_SKIP, "/dev/ttyS1 (not in the lab?)");
	if (!tcgetattr(fd, &tio)) {
		cfmakeraw(&tio);
		tcsetattr(fd, TCSANOW, &tio);
	}
	tcflush(fd, TCIFLUSH);
	return fd;
}

/* Reads what the relay said; returns 1 once our nonce's "ok" is in. */
static int ctl_acked(int fd, const char *nonce, char *buf, size_t *len)
{
	char want[96];
	ssize_t n;

	n = read(fd, buf + *len, 4095 - *len);
	if (n > 0)
		*len += n;
	buf[*len] = 0;
	snprintf(want, sizeof(want), "lab-link %s ok", nonce);
	if (strstr(buf, want))
		return 1;
	snprintf(want, sizeof(want), "lab-link %s error", nonce);
	if (strstr(buf, want)) {
		fprintf(stderr, "ftflap: relay: %s\n", strstr(buf, want));
		exit(1);
	}
	if (*len > 2048) {		/* keep the tail only */
		memmove(buf, buf + *len - 256, 256);
		*len = 256;
	}
	return 0;
}

/* ---- one transition ---- */

struct result {
	uint64_t page, event, ack, link;	/* ns from the request */
};

static int flap(struct page *pg, struct nl_sock *sk, int lk, int ctl,
		int cable, const char *ifname, struct target *t, int up,
		uint64_t limit, struct result *res)
{
	unsigned int flag = cable ? IFF_LOWER_UP : IFF_UP;
	int ifindex = if_nametoindex(ifname);
	struct shift_ft_page_port before, row;
	char nonce[32], buf[4096];
	uint64_t t0, t_page = 0, t_ack = 0, t_link = 0, gen = 0;
	size_t len = 0;

	if (page_row(pg, t->dev, t->port, &before)) {
		fprintf(stderr, "ftflap: no row for %s %u\n", t->dev, t->port);
		return -1;
	}
	if (read(pg->fd, &gen, sizeof(gen)) != sizeof(gen))	/* arm poll() */
		die(1, "read " SHIFT_FT_DEVICE_PATH);
	if (!ifindex)
		die(1, ifname);
	link_seen(lk, ifindex, flag, up);	/* what came before */
	t->state = up ? SHIFT_FT_PORT_ACTIVE : SHIFT_FT_PORT_DOWN;
	t->t_event = 0;
	snprintf(nonce, sizeof(nonce), "%d.%llu", getpid(),
		 (unsigned long long)now_ns());

	t0 = now_ns();
	if (cable)
		dprintf(ctl, "lab-link %s %s %s\n", nonce, ifname, up ? "on" : "off");
	else
		ip_set(ifname, up);
	if (!cable)
		t_ack = t0;

	while (!t_page || !t->t_event || !t_ack || !t_link) {
		struct pollfd fds[4] = {
			{ .fd = pg->fd, .events = POLLIN },
			{ .fd = nl_socket_get_fd(sk), .events = POLLIN },
			{ .fd = cable ? ctl : -1, .events = POLLIN },
			{ .fd = lk, .events = POLLIN },
		};
		uint64_t now = now_ns();

		if (now - t0 > 5 * limit)
			break;
		if (poll(fds, 4, (int)((5 * limit - (now - t0)) / 1000000) + 1) < 0 &&
		    errno != EINTR)
			die(1, "poll");
		if (fds[0].revents & POLLIN) {
			now = now_ns();
			if (read(pg->fd, &gen, sizeof(gen)) != sizeof(gen))
				die(1, "read");
			if (!t_page && !page_row(pg, t->dev, t->port, &row) &&
			    row.state == t->state)
				t_page = now;
		}
		if (fds[1].revents & POLLIN)
			nl_recvmsgs_default(sk);
		if (fds[2].revents & POLLIN && !t_ack &&
		    ctl_acked(ctl, nonce, buf, &len))
			t_ack = now_ns();
		if (fds[3].revents & POLLIN && !t_link &&
		    link_seen(lk, ifindex, flag, up))
			t_link = now_ns();
	}
	if (!t_page || !t->t_event || !t_ack || !t_link) {
		fprintf(stderr, "ftflap: %s %s: page %s, event %s, ack %s, link message %s\n",
			t->dev, up ? "up" : "down", t_page ? "seen" : "MISSING",
			t->t_event ? "seen" : "MISSING", t_ack ? "seen" : "MISSING",
			t_link ? "seen" : "MISSING");
		return -1;
	}

	/* the row says what happened and when */
	if (page_row(pg, t->dev, t->port, &row))
		return -1;
	if (row.last_change_ns < t0 || row.last_change_ns > t_page) {
		fprintf(stderr, "ftflap: last_change %llu outside [%llu, %llu]\n",
			(unsigned long long)row.last_change_ns,
			(unsigned long long)t0, (unsigned long long)t_page);
		return -1;
	}
	if (row.down_count != before.down_count + !up) {
		fprintf(stderr, "ftflap: down_count %llu after %llu\n",
			(unsigned long long)row.down_count,
			(unsigned long long)before.down_count);
		return -1;
	}
	res->page = t_page - t0;
	res->event = t->t_event - t0;
	res->ack = t_ack - t0;
	res->link = t_link - t0;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void stats(const char *what, uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%-12s n=%d median=%.3f ms max=%.3f ms\n", what, n,
	       (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e6,
	       v[n - 1] / 1e6);
}

int main(int argc, char **argv)
{
	const char *ifname = "eth0", *mode;
	struct target t = { .dev = "rxe0", .port = 1 };
	uint64_t limit = 1000000000ull, *v[2][3];
	int cycles = 20, settle_ms = 100, c, i, d, bad = 0, ctl = -1, cable, lk;
	struct nl_sock *sk;
	struct page pg;

	while ((c = getopt(argc, argv, "n:i:d:p:l:s:")) != -1) {
		switch (c) {
		case 'n': cycles = atoi(optarg); break;
		case 'i': ifname = optarg; break;
		case 'd': t.dev = optarg; break;
		case 'p': t.port = strtoul(optarg, NULL, 0); break;
		case 'l': limit = strtoull(optarg, NULL, 0) * 1000000ull; break;
		case 's': settle_ms = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || cycles < 1)
		goto usage;
	mode = argv[optind];
	if (strcmp(mode, "ip") && strcmp(mode, "cable"))
		goto usage;
	cable = !strcmp(mode, "cable");

	page_open(&pg);
	sk = events_open(&t);
	lk = link_open();
	if (cable)
		ctl = ctl_open();
	for (d = 0; d < 2; d++)
		for (i = 0; i < 3; i++)
			v[d][i] = calloc(cycles, sizeof(uint64_t));

	for (c = 0; c < cycles; c++) {
		for (d = 0; d < 2; d++) {	/* 0: down, 1: up */
			struct result r;
			int over;

			if (flap(&pg, sk, lk, ctl, cable, ifname, &t, d, limit, &r)) {
				bad++;
				if (d == 0 && cable)	/* never leave the cable out */
					dprintf(ctl, "lab-link x %s on\n", ifname);
				else if (d == 0)
					ip_set(ifname, 1);
				goto out;
			}
			/* the link message may come after the page: rxe heard first */
			over = r.page > r.link + limit || r.event > r.link + limit;
			printf("# %s %s %d: page %.3f ms, event %.3f ms, link message %.3f ms",
			       mode, d ? "up" : "down", c + 1, r.page / 1e6,
			       r.event / 1e6, r.link / 1e6);
			if (cable)
				printf(", relay %.3f ms", r.ack / 1e6);
			printf("%s\n", over ? " OVER LIMIT" : "");
			bad += over;
			v[d][0][c] = r.page;
			v[d][1][c] = r.event;
			v[d][2][c] = r.link;
		}
		/* let the port settle (see SETTLE_MS above) */
		usleep(settle_ms * 1000);
	}
	fflush(stdout);
	for (d = 0; d < 2; d++) {
		char what[32];

		snprintf(what, sizeof(what), "%s-%s page", mode, d ? "up" : "down");
		stats(what, v[d][0], cycles);
		snprintf(what, sizeof(what), "%s-%s event", mode, d ? "up" : "down");
		stats(what, v[d][1], cycles);
		snprintf(what, sizeof(what), "%s-%s link", mode, d ? "up" : "down");
		stats(what, v[d][2], cycles);
	}
out:
	return bad ? 1 : 0;
usage:
	fprintf(stderr, "usage: ftflap [-n CYCLES] [-i IFNAME] [-d DEV] [-p PORT] [-l LIMIT_MS] [-s SETTLE_MS] ip|cable\n");
	return 2;
}
