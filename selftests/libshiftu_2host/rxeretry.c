// SPDX-License-Identifier: GPL-2.0
/*
 * rxeretry: does Soft-RoCE's requester send an empty SEND after the
 * responder acknowledged a whole message that it was sending again?
 *
 *   rxeretry fake [-i IFNAME] [-p TCPPORT] [-D SECONDS]
 *   rxeretry req [-d DEV] [-x GIDIDX] [-p TCPPORT] [-l PACKETS]
 *                [-m send|write_imm] SERVER_ADDR
 *
 * No library is involved: this is a question about the lab's transport.
 * `req` (host 1) is an ordinary RC QP of Soft-RoCE that posts two SENDs, M
 * of PACKETS MTU-sized packets (PSNs a .. a+PACKETS-1) and N of 4 packets.
 * `fake` (host 2) is its responder, played by hand: it reads the
 * requester's packets off IFNAME with a packet socket (the QP number they
 * are sent to has no QP there, so host 2's rxe drops them) and answers
 * with acknowledgements it writes itself, each one a real responder could
 * have sent:
 *
 *   1. M's first transmission arrives whole; N's is lost; no ACK is sent
 *      (as if the link had dropped them).
 *   2. The requester's retransmission timer fires and it sends M again from
 *      PSN a.  On the first packet sent again, the fake does what a
 *      responder does for a duplicate SEND packet: it acknowledges the last
 *      PSN it received, a+PACKETS-1, the end of M.  Then it is silent again.
 *   3. The next retry shows what the requester made of that ACK.  A correct
 *      requester completes M (the ACK covers it) and sends N again from
 *      a+PACKETS.  Soft-RoCE, when the ACK found M still being sent (the
 *      caller slows host 1's egress so that the requester waits for its
 *      sent packets to drain), moves its completion PSN past M without
 *      completing it; the retry then skips all of M's packets and sends
 *      what is left of M, nothing, as an empty SEND_ONLY at a+PACKETS,
 *      which a real responder takes as a new message of 0 bytes.  (A
 *      WRITE_WITH_IMM comes again as an empty one, with M's immediate: a
 *      second notification; -m write_imm asks that, M and N then
 *      WRITE_WITH_IMMs, which the fake, with no memory, never checks.)
 *      rxe_comp.c: an ACK of a request's last PSN completes it only if
 *      the request is "pending" (sent whole); otherwise it only moves
 *      comp.psn past it, and rxe_req.c's req_retry() counts the packets
 *      to skip from there.
 *
 * The fake then acknowledges everything it saw, so the requester ends.
 * Each side prints one line; the fake's:
 *   rxeretry: role=fake ... acked_at_retry=yes|no next_psn_opcode=NAME next_psn_bytes=N empty=yes|no
 * fake exits 0 when it got its answer (steps 2 and 3 happened) whatever
 * it was, 1 when it did not, 2 on bad arguments.  req exits 0 when
 * both SENDs completed.
 *
 * Out of band, over TCP (the lab's management network): req sends its QP
 * number, first PSN, PACKETS, MTU and its rail's IPv4 address; fake answers
 * its IPv4 address on IFNAME and the QP number req must send to.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#define ROCE_PORT	4791
/* no QP of host 2's rxe has this number (its pool ends far below) */
#define FAKE_QPN	0x7ffff0
#define PSN_MASK	0xffffff
#define N_PACKETS	4
#define MTU		1024

#define OP_SEND_FIRST	0x00
#define OP_SEND_MIDDLE	0x01
#define OP_SEND_LAST	0x02
#define OP_SEND_ONLY	0x04
#define OP_WRITE_FIRST	0x06
#define OP_WRITE_MIDDLE	0x07
#define OP_WRITE_LAST_IMM 0x09
#define OP_WRITE_ONLY_IMM 0x0b
#define OP_ACK		0x11

struct hello {
	uint32_t qpn, psn, packets, mtu;
	uint32_t addr;		/* network order */
};

struct ready {
	uint32_t qpn;
	uint32_t addr;		/* network order */
};

static const char *op_name(int op)
{
	static const char *const names[] = {
		[OP_SEND_FIRST] = "SEND_FIRST",
		[OP_SEND_MIDDLE] = "SEND_MIDDLE",
		[OP_SEND_LAST] = "SEND_LAST",
		[OP_SEND_ONLY] = "SEND_ONLY",
		[OP_WRITE_FIRST] = "RDMA_WRITE_FIRST",
		[OP_WRITE_MIDDLE] = "RDMA_WRITE_MIDDLE",
		[OP_WRITE_LAST_IMM] = "RDMA_WRITE_LAST_WITH_IMMEDIATE",
		[OP_WRITE_ONLY_IMM] = "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		[OP_ACK] = "ACK",
	};

	if (op < 0)
		return "none";
	if (op >= (int)(sizeof(names) / sizeof(names[0])) || !names[op])
		return "other";
	return names[op];
}

/* the bytes of a request's extended headers: RETH 16, ImmDt 4 */
static int ext_len(int op)
{
	switch (op) {
	case OP_WRITE_FIRST:
		return 16;
	case OP_WRITE_LAST_IMM:
		return 4;
	case OP_WRITE_ONLY_IMM:
		return 20;
	default:
		return 0;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int full_io(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * The invariant CRC of RoCEv2 (IBTA annex A17): CRC-32 over the IP and UDP
 * headers and the BTH with their variant fields set to ones, then the rest
 * of the packet, as Soft-RoCE's rxe_icrc.c checks it.
 */
static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (; len > 1; p += 2, len -= 2)
		sum += p[0] << 8 | p[1];
	if (len)
		sum += p[0] << 8;
	return sum;
}

/* an RC ACKNOWLEDGE of PSN from SRC to DST's QP QPN, with its ICRC */
static int send_ack(int raw, uint32_t src, uint32_t dst, uint32_t qpn, uint32_t psn)
{
	uint8_t pkt[20 + 8 + 12 + 4 + 4] = { 0 }, pseudo[20 + 8 + 12];
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *udp = (struct udphdr *)(pkt + 20);
	uint8_t *bth = pkt + 28, *aeth = bth + 12;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = dst };
	static uint16_t id = 1;
	uint32_t icrc, sum;

	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(sizeof(pkt));
	ip->id = htons(id++);		/* not 0: the kernel would choose it */
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = src;
	ip->daddr = dst;
	udp->source = htons(0xc000);
	udp->dest = htons(ROCE_PORT);
	udp->len = htons(sizeof(pkt) - 20);
	bth[0] = OP_ACK;
	bth[2] = bth[3] = 0xff;		/* the default P_Key */
	bth[5] = qpn >> 16;
	bth[6] = qpn >> 8;
	bth[7] = qpn;
	bth[9] = psn >> 16;
	bth[10] = psn >> 8;
	bth[11] = psn;
	aeth[0] = 0x1f;			/* ACK, unlimited credits; MSN 0 */

	memcpy(pseudo, pkt, sizeof(pseudo));
	pseudo[1] = 0xff;		/* TOS */
	pseudo[8] = 0xff;		/* TTL */
	pseudo[10] = pseudo[11] = 0xff;	/* IP checksum */
	pseudo[26] = pseudo[27] = 0xff;	/* UDP checksum */
	pseudo[28 + 4] = 0xff;		/* BTH reserved byte */
	icrc = crc32_le(0xdebb20e3, pseudo, sizeof(pseudo));
	icrc = ~crc32_le(icrc, aeth, 4);
	memcpy(aeth + 4, &icrc, 4);	/* as the CPU stores it, as rxe does */

	sum = csum_add(0, &ip->saddr, 8);
	sum += IPPROTO_UDP + ntohs(udp->len);
	sum = csum_add(sum, udp, ntohs(udp->len));
	udp->check = htons(csum_fold(sum)) ?: 0xffff;

	if (sendto(raw, pkt, sizeof(pkt), 0, (struct sockaddr *)&to, sizeof(to)) != sizeof(pkt)) {
		perror("rxeretry: sendto (ACK)");
		return -1;
	}
	return 0;
}

static uint32_t if_addr(const char *ifname)
{
	struct ifaddrs *ifa, *i;
	uint32_t a = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, ifname)) {
			a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			break;
		}
	freeifaddrs(ifa);
	return a;
}

static int fake(const char *ifname, int port, int secs)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	int lsn, conn, pkts, raw, one = 1, decided = 0;
	int next_op = -1, next_len = -1, empty = 0, acked = 0, m_seen = 0;
	uint32_t a, end;
	uint8_t *seen;
	struct hello h;
	struct ready r;
	double t_end, last;

	r.addr = if_addr(ifname);
	if (!r.addr) {
		fprintf(stderr, "rxeretry: %s has no IPv4 address\n", ifname);
		return 2;
	}
	r.qpn = htonl(FAKE_QPN);
	sll.sll_ifindex = if_nametoindex(ifname);
	pkts = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	lsn = socket(AF_INET, SOCK_STREAM, 0);
	if (pkts < 0 || raw < 0 || lsn < 0) {
		perror("rxeretry: socket");
		return 1;
	}
	if (bind(pkts, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("rxeretry: bind (packet socket)");
		return 1;
	}
	setsockopt(lsn, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lsn, (struct sockaddr *)&sin, sizeof(sin)) || listen(lsn, 1)) {
		perror("rxeretry: bind (TCP)");
		return 1;
	}
	alarm(secs + 30);	/* a requester that never comes */
	printf("rxeretry: role=fake listening port=%d\n", port);
	fflush(stdout);
	conn = accept(lsn, NULL, NULL);
	if (conn < 0 || full_io(conn, &h, sizeof(h), false)) {
		perror("rxeretry: accept");
		return 1;
	}
	h.qpn = ntohl(h.qpn);
	h.psn = ntohl(h.psn) & PSN_MASK;
	h.packets = ntohl(h.packets);
	if (h.packets < 2 || h.packets > 4096) {
		fprintf(stderr, "rxeretry: the requester's message of %u packets\n", h.packets);
		return 2;
	}
	a = h.psn;
	end = (a + h.packets) & PSN_MASK;	/* N's first PSN */
	seen = calloc(h.packets, 1);
	if (!seen || full_io(conn, &r, sizeof(r), true))
		return 1;

	t_end = now() + secs;
	last = now();
	while (now() < t_end) {
		struct pollfd pfd = { .fd = pkts, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t flen = sizeof(from);
		uint8_t buf[2048], *bth;
		struct iphdr *ip = (struct iphdr *)buf;
		struct udphdr *udp;
		uint32_t off, psn, qpn;
		double gap;
		ssize_t n;
		int op, len;

		if (poll(&pfd, 1, 100) <= 0) {
			/* the second retry's burst is over: acknowledge
			 * everything, which an empty SEND moved one PSN on */
			if (decided && now() - last > 0.3) {
				if (send_ack(raw, r.addr, h.addr, h.qpn, (end + N_PACKETS - !empty) & PSN_MASK))
					return 1;
				break;
			}
			continue;
		}
		n = recvfrom(pkts, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		if (n < 28 + 12 + 4 || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (ip->protocol != IPPROTO_UDP || ip->saddr != h.addr || ip->daddr != r.addr)
			continue;
		udp = (struct udphdr *)(buf + ip->ihl * 4);
		if (udp->dest != htons(ROCE_PORT))
			continue;
		bth = (uint8_t *)(udp + 1);
		qpn = bth[5] << 16 | bth[6] << 8 | bth[7];
		if (qpn != FAKE_QPN)
			continue;
		op = bth[0];
		psn = bth[9] << 16 | bth[10] << 8 | bth[11];
		len = ntohs(udp->len) - 8 - 12 - ext_len(op) - ((bth[1] >> 4) & 3) - 4;
		off = (psn - a) & PSN_MASK;
		gap = now() - last;
		last = now();

		if (off < h.packets) {
			/* M: its first transmission, then the first retry */
			if (!seen[off]++) {
				m_seen++;
			} else if (off == 0 && !acked) {
				/* a duplicate: the responder acknowledges
				 * the last PSN it has, the end of M */
				if (send_ack(raw, r.addr, h.addr, h.qpn, (end - 1) & PSN_MASK))
					return 1;
				acked = 1;
			}
			continue;
		}
		/* N's first transmission and the first retry's: lost.  The
		 * next retry starts after a quiet retransmission timeout;
		 * its first packet at N's first PSN tells what the
		 * requester made of the ACK. */
		if (!acked || decided || off != h.packets || gap < 0.5)
			continue;
		decided = 1;
		next_op = op;
		next_len = len;
		empty = (op == OP_SEND_ONLY || op == OP_WRITE_ONLY_IMM) && len == 0;
	}
	printf("rxeretry: role=fake packets=%u first_psn=%u m_seen=%d acked_at_retry=%s "
	       "next_psn_opcode=%s next_psn_bytes=%d empty=%s\n",
	       h.packets, a, m_seen, acked ? "yes" : "no", op_name(next_op), next_len,
	       empty ? "yes" : "no");
	fflush(stdout);
	/* the requester's word that it ended */
	full_io(conn, &one, sizeof(one), false);
	return acked && decided ? 0 : 1;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int err = ibv_modify_qp(qp, a, mask);

	if (err)
		fprintf(stderr, "rxeretry: modify QP to %s: %s\n", what, strerror(err));
	return err;
}

static int req(const char *dev, int gidx, int port, unsigned int packets, bool imm,
	       const char *server)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr qa = { 0 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct ibv_wc wc[2];
	union ibv_gid gid;
	struct hello h;
	struct ready r;
	char sport[16];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	size_t len = (size_t)(packets + N_PACKETS) * MTU;
	char *buf;
	int sock, got = 0, ok = 0, i;
	double t_end;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "rxeretry: no device %s\n", dev);
		return 1;
	}
	if (ibv_query_gid(ctx, 1, gidx, &gid)) {
		fprintf(stderr, "rxeretry: %s has no GID %d\n", dev, gidx);
		return 1;
	}
	buf = calloc(1, len);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	mr = cq && buf ? ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
	qia.send_cq = qia.recv_cq = cq;
	qia.cap.max_send_wr = 4;
	qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qia.qp_type = IBV_QPT_RC;
	qp = mr ? ibv_create_qp(pd, &qia) : NULL;
	if (!qp) {
		fprintf(stderr, "rxeretry: creating the QP: %s\n", strerror(errno));
		return 1;
	}

	snprintf(sport, sizeof(sport), "%d", port);
	if (getaddrinfo(server, sport, &hints, &ai)) {
		fprintf(stderr, "rxeretry: cannot resolve %s\n", server);
		return 2;
	}
	sock = socket(ai->ai_family, SOCK_STREAM, 0);
	for (i = 0; i < 50 && connect(sock, ai->ai_addr, ai->ai_addrlen); i++)
		usleep(100000);
	h.qpn = htonl(qp->qp_num);
	h.psn = htonl(0x1000);
	h.packets = htonl(packets);
	h.mtu = htonl(MTU);
	memcpy(&h.addr, &gid.raw[12], 4);
	if (i == 50 || full_io(sock, &h, sizeof(h), true) || full_io(sock, &r, sizeof(r), false)) {
		fprintf(stderr, "rxeretry: no answer from the fake at %s:%d\n", server, port);
		return 1;
	}

	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = 0;
	if (modify(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT"))
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = ntohl(r.qpn);
	qa.rq_psn = 0;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.sgid_index = gidx;
	qa.ah_attr.grh.hop_limit = 64;
	memset(&qa.ah_attr.grh.dgid, 0, 10);
	qa.ah_attr.grh.dgid.raw[10] = qa.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&qa.ah_attr.grh.dgid.raw[12], &r.addr, 4);
	if (modify(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR"))
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 18;		/* about 1 s */
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = 0x1000;
	qa.max_rd_atomic = 1;
	if (modify(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS"))
		return 1;

	for (i = 0; i < 2; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf + (i ? (size_t)packets * MTU : 0),
			.length = (i ? N_PACKETS : packets) * MTU,
			.lkey = mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		/* the fake has no memory: any address and key will do */
		if (imm) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(i + 1);
			wr.wr.rdma.remote_addr = 0x10000 + (i ? (uint64_t)packets * MTU : 0);
			wr.wr.rdma.rkey = 0x1234;
		}

		if (ibv_post_send(qp, &wr, &bad)) {
			fprintf(stderr, "rxeretry: post_send: %s\n", strerror(errno));
			return 1;
		}
	}
	t_end = now() + 60;
	while (got < 2 && now() < t_end) {
		int n = ibv_poll_cq(cq, 2 - got, wc);

		for (i = 0; i < n; i++, got++)
			ok += wc[i].status == IBV_WC_SUCCESS;
		if (!n)
			usleep(1000);
	}
	printf("rxeretry: role=req qpn=%u completions=%d success=%d\n", qp->qp_num, got, ok);
	fflush(stdout);
	full_io(sock, &ok, sizeof(ok), true);
	return got == 2 && ok == 2 ? 0 : 1;
}

static void usage(void)
{
	fputs("usage: rxeretry fake [-i IFNAME] [-p TCPPORT] [-D SECONDS]\n"
	      "       rxeretry req [-d DEV] [-x GIDIDX] [-p TCPPORT] [-l PACKETS] [-m send|write_imm]\n"
	      "                    SERVER_ADDR\n"
	      "  defaults: -i eth0 -p 18700 -D 60, -d rxe0 -x 1 -l 100 -m send\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *ifname = "eth0", *dev = "rxe0";
	int port = 18700, secs = 60, gidx = 1, packets = 100, c;
	bool is_fake, imm = false;

	if (argc < 2 || (strcmp(argv[1], "fake") && strcmp(argv[1], "req")))
		usage();
	is_fake = !strcmp(argv[1], "fake");
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "i:p:D:d:x:l:m:")) != -1) {
		switch (c) {
		case 'i':
			ifname = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'D':
			secs = atoi(optarg);
			break;
		case 'd':
			dev = optarg;
			break;
		case 'x':
			gidx = atoi(optarg);
			break;
		case 'l':
			packets = atoi(optarg);
			break;
		case 'm':
			if (strcmp(optarg, "send") && strcmp(optarg, "write_imm"))
				usage();
			imm = !strcmp(optarg, "write_imm");
			break;
		default:
			usage();
		}
	}
	if (port <= 0 || port > 65535 || secs <= 0 || packets < 2 || packets > 4096)
		usage();
	if (is_fake)
		return fake(ifname, port, secs);
	if (optind != argc - 1)
		usage();
	return req(dev, gidx, port, packets, imm, argv[optind]);
}
