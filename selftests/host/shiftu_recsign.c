// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_recsign: records signed under the cluster key are accepted, and
 * every change to one (its text, name, sender, sequence, MAC), a record
 * without a signature and one signed with another key are refused; the
 * key file is refused when others may read it or another user owns it;
 * with host keys, a record is accepted only signed by the key the hosts
 * file lists for its sender (another host's key, an unlisted host, any
 * change, the other scheme's token are refused), and the hosts file only
 * when nobody but its owner may write it and it lists this host's key;
 * sequences compare across their wrap; and libshiftu's store signs what
 * it writes and drops, counts and names what it cannot trust.
 *
 * The MAC is checked against openssl(1)'s own HMAC of the canonical string
 * recsign.h describes, so the format is the documented one and not only
 * self-consistent.  Each TEST runs in its own process (kselftest_harness
 * forks).
 */
#define _GNU_SOURCE		/* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "event.h"
#include "log.h"
#include "recsign.h"
#include "store.h"

#include "kselftest_harness.h"

#define KEY_HEX		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define KEY2_HEX	"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* A key file of @mode holding @text under @dir; its path in @path. */
static int key_file(const char *dir, const char *name, const char *text, mode_t mode,
		    char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	close(fd);
	return chmod(path, mode);
}

FIXTURE(sign) {
	char tmp[64];
	char path[PATH_MAX];
	struct shift_sign_key k, k2;
};

FIXTURE_SETUP(sign)
{
	char why[192], p2[PATH_MAX];

	strcpy(self->tmp, "/tmp/shiftu_recsign.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	ASSERT_EQ(0, key_file(self->tmp, "key", "# the cluster key\n" KEY_HEX "\n", 0600,
			      self->path, sizeof(self->path)));
	ASSERT_EQ(0, shift_sign_key_read(self->path, &self->k, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, key_file(self->tmp, "key2", KEY2_HEX, 0400, p2, sizeof(p2)));
	ASSERT_EQ(0, shift_sign_key_read(p2, &self->k2, why, sizeof(why)))
		TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(sign)
{
	nftw(self->tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

TEST_F(sign, round_trip)
{
	char text[512] = "ACTIVE\tETHERNET\teth0\t::ffff:10.0.0.1\t0\t1\t00000000000000ab\t7";
	char orig[512], who[SHIFT_SIGN_SENDER_MAX];
	uint64_t seq = 0;

	strcpy(orig, text);
	ASSERT_EQ(0, shift_sign_append(&self->k, "port:rxe0/1", text, sizeof(text), '\t',
				       "host1", 0x0123456789abcdefULL));
	EXPECT_NE(NULL, strstr(text, "\ts1/host1/0123456789abcdef/"));
	EXPECT_EQ(strlen(orig) + 1 + 3 + 5 + 1 + 16 + 1 + 64, strlen(text));
	ASSERT_EQ(0, shift_sign_check(&self->k, "port:rxe0/1", text, '\t', who, sizeof(who),
				      &seq));
	EXPECT_STREQ(orig, text);
	EXPECT_STREQ("host1", who);
	EXPECT_EQ(0x0123456789abcdefULL, seq);
}

/* The MAC is HMAC-SHA256 of what recsign.h says, as openssl(1) computes it. */
TEST_F(sign, openssl_agrees)
{
	static const unsigned char canon[] = "shift-rec-v1\0qp:fe80:17\0a b c\0h-1\0"
					     "\x00\x00\x00\x00\x00\x00\x01\x02";
	char text[256] = "a b c", in[PATH_MAX + 8], cmd[2 * PATH_MAX], line[256], *mac;
	FILE *f;
	int fd;

	if (system("command -v openssl >/dev/null 2>&1"))
		SKIP(return, "no openssl(1) to compare with");
	ASSERT_EQ(0, shift_sign_append(&self->k, "qp:fe80:17", text, sizeof(text), ' ',
				       "h-1", 0x102));
	snprintf(in, sizeof(in), "%s/canon", self->tmp);
	fd = open(in, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	/* sizeof - 1: the literal's own final NUL is not part of it */
	ASSERT_EQ((ssize_t)sizeof(canon) - 1, write(fd, canon, sizeof(canon) - 1));
	close(fd);
	snprintf(cmd, sizeof(cmd), "openssl dgst -sha256 -mac HMAC -macopt hexkey:%s -r %s",
		 KEY_HEX, in);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	pclose(f);
	line[64] = '\0';
	mac = strrchr(text, '/');
	ASSERT_NE(NULL, mac);
	EXPECT_STREQ(line, mac + 1);
}

TEST_F(sign, tampered)
{
	char good[512] = "DOWN\tETHERNET\teth0\t::ffff:10.0.0.1\t3\t1\t00000000000000ab\t9";
	char t[512], who[SHIFT_SIGN_SENDER_MAX], *p;
	uint64_t seq;

	ASSERT_EQ(0, shift_sign_append(&self->k, "port:rxe0/1", good, sizeof(good), '\t',
				       "host1", 100));
	strcpy(t, good);
	ASSERT_EQ(0, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who, sizeof(who), &seq));

	/* the text: DOWN made ACTIVE */
	strcpy(t, good);
	memcpy(t, "UP  ", 4);
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	EXPECT_STREQ("host1", who);
	/* another name: the same record shown as another port's */
	strcpy(t, good);
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe1/1", t, '\t', who,
					     sizeof(who), &seq));
	/* another sender */
	strcpy(t, good);
	p = strstr(t, "s1/host1/");
	p[7] = '2';
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	EXPECT_STREQ("host2", who);
	/* another sequence: pinned at the largest */
	strcpy(t, good);
	p = strstr(t, "s1/host1/") + 9;
	memcpy(p, "ffffffffffffffff", 16);
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	/* one bit of the MAC */
	strcpy(t, good);
	p = t + strlen(t) - 1;
	*p = *p == '0' ? '1' : '0';
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	/* a MAC cut short, one too long, one not hex */
	strcpy(t, good);
	t[strlen(t) - 1] = '\0';
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	strcpy(t, good);
	strcat(t, "0");
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	strcpy(t, good);
	t[strlen(t) - 3] = 'g';
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	/* a bad sender in the token */
	strcpy(t, good);
	p = strstr(t, "s1/host1/");
	p[4] = ' ';
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who,
					     sizeof(who), &seq));
	EXPECT_STREQ("", who);
	/* the untouched record still checks */
	strcpy(t, good);
	EXPECT_EQ(0, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who, sizeof(who),
				      &seq));
	EXPECT_EQ(100, seq);
}

TEST_F(sign, unsigned_and_wrong_key)
{
	char t[512] = "ACTIVE\tETHERNET\teth0\t-\t0\t1\t00000000000000ab\t18446744073709551615";
	char orig[512], who[SHIFT_SIGN_SENDER_MAX];
	uint64_t seq;

	strcpy(orig, t);
	/* today's record, unsigned: said so, left as it was */
	EXPECT_EQ(-ENOMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who, sizeof(who),
					    &seq));
	EXPECT_STREQ(orig, t);
	/* signed with another key */
	ASSERT_EQ(0, shift_sign_append(&self->k2, "port:rxe0/1", t, sizeof(t), '\t', "host1", 5));
	EXPECT_EQ(-EBADMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who, sizeof(who),
					     &seq));
	/* the other separator: a libshiftu value is not an agent's record */
	strcpy(t, orig);
	ASSERT_EQ(0, shift_sign_append(&self->k, "port:rxe0/1", t, sizeof(t), ' ', "host1", 5));
	EXPECT_EQ(-ENOMSG, shift_sign_check(&self->k, "port:rxe0/1", t, '\t', who, sizeof(who),
					    &seq));
	/* no room for the token */
	strcpy(t, "x");
	EXPECT_EQ(-ENOBUFS, shift_sign_append(&self->k, "n", t, 40, ' ', "host1", 5));
	EXPECT_STREQ("x", t);
	EXPECT_EQ(-EINVAL, shift_sign_append(&self->k, "n", t, sizeof(t), ' ', "a/b", 5));
	EXPECT_EQ(-EINVAL, shift_sign_append(&self->k, "n", t, sizeof(t), ' ', "", 5));
}

/* The key file: as the credentials file, its owner's alone. */
TEST_F(sign, key_file_refused)
{
	struct shift_sign_key k;
	char why[192], p[PATH_MAX];

	ASSERT_EQ(0, key_file(self->tmp, "open", KEY_HEX "\n", 0644, p, sizeof(p)));
	EXPECT_EQ(-EPERM, shift_sign_key_read(p, &k, why, sizeof(why)));
	EXPECT_STREQ("refused: mode 0644 lets group or others at it (chmod 600 it)", why);
	EXPECT_FALSE(k.set);
	ASSERT_EQ(0, key_file(self->tmp, "grp", KEY_HEX "\n", 0620, p, sizeof(p)));
	EXPECT_EQ(-EPERM, shift_sign_key_read(p, &k, why, sizeof(why)));
	if (geteuid() == 0) {
		ASSERT_EQ(0, key_file(self->tmp, "other", KEY_HEX "\n", 0600, p, sizeof(p)));
		ASSERT_EQ(0, chown(p, 65534, 65534));
		EXPECT_EQ(-EPERM, shift_sign_key_read(p, &k, why, sizeof(why)));
		EXPECT_NE(NULL, strstr(why, "owned by uid 65534"));
	}
	EXPECT_EQ(-ENOENT, shift_sign_key_read("/nonexistent/key", &k, why, sizeof(why)));
	/* what is in it */
	ASSERT_EQ(0, key_file(self->tmp, "short", "0011223344556677\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_key_read(p, &k, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "16 hex digits"));
	ASSERT_EQ(0, key_file(self->tmp, "odd", KEY_HEX "0\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_key_read(p, &k, why, sizeof(why)));
	ASSERT_EQ(0, key_file(self->tmp, "nothex", "zz" KEY_HEX "\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_key_read(p, &k, why, sizeof(why)));
	EXPECT_STREQ("the key line is not hex", why);
	EXPECT_FALSE(k.set);
	ASSERT_EQ(0, key_file(self->tmp, "two", KEY_HEX "\n" KEY2_HEX "\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_key_read(p, &k, why, sizeof(why)));
	ASSERT_EQ(0, key_file(self->tmp, "none", "# nothing\n\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_key_read(p, &k, why, sizeof(why)));
	/* CRLF, as an editor may leave it */
	ASSERT_EQ(0, key_file(self->tmp, "crlf", KEY_HEX "\r\n", 0600, p, sizeof(p)));
	EXPECT_EQ(0, shift_sign_key_read(p, &k, why, sizeof(why)));
	EXPECT_EQ(32, k.len);
}

/*
 * Host keys: hostA and hostB each hold their own Ed25519 key (KEY_HEX and
 * KEY2_HEX as seeds) and the hosts file lists both; hostC's key is nobody's.
 */
#define KEY3_HEX	"0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a090807060504030201000"

FIXTURE(hostsign) {
	char tmp[64];
	char akey[PATH_MAX], bkey[PATH_MAX], ckey[PATH_MAX], hosts[PATH_MAX];
	char apub[2 * SHIFT_SIGN_ED25519_LEN + 1], bpub[2 * SHIFT_SIGN_ED25519_LEN + 1];
	struct shift_sign_hosts a, b;
};

FIXTURE_SETUP(hostsign)
{
	char why[320], text[512], cpub[2 * SHIFT_SIGN_ED25519_LEN + 1];

	strcpy(self->tmp, "/tmp/shiftu_hostsign.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	ASSERT_EQ(0, key_file(self->tmp, "a.key", KEY_HEX "\n", 0600, self->akey,
			      sizeof(self->akey)));
	ASSERT_EQ(0, key_file(self->tmp, "b.key", KEY2_HEX "\n", 0400, self->bkey,
			      sizeof(self->bkey)));
	ASSERT_EQ(0, key_file(self->tmp, "c.key", KEY3_HEX "\n", 0600, self->ckey,
			      sizeof(self->ckey)));
	ASSERT_EQ(0, shift_sign_host_public(self->akey, self->apub, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, shift_sign_host_public(self->bkey, self->bpub, why, sizeof(why)));
	ASSERT_EQ(0, shift_sign_host_public(self->ckey, cpub, why, sizeof(why)));
	EXPECT_STRNE(self->apub, self->bpub);
	snprintf(text, sizeof(text), "# the cluster\n\nhostB %s\r\n  hostA\t%s\n", self->bpub,
		 self->apub);
	ASSERT_EQ(0, key_file(self->tmp, "hosts", text, 0644, self->hosts, sizeof(self->hosts)));
	ASSERT_EQ(0, shift_sign_hosts_read(self->akey, self->hosts, "hostA", &self->a, why,
					   sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, shift_sign_hosts_read(self->bkey, self->hosts, "hostB", &self->b, why,
					   sizeof(why)))
		TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(hostsign)
{
	shift_sign_hosts_clear(&self->a);
	shift_sign_hosts_clear(&self->b);
	nftw(self->tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

#define REC	"DOWN\tETHERNET\teth0\t::ffff:10.0.0.1\t3\t1\t00000000000000ab\t9"

TEST_F(hostsign, round_trip)
{
	char text[512] = REC, who[SHIFT_SIGN_SENDER_MAX];
	uint64_t seq = 0;

	ASSERT_EQ(0, shift_sign_host_append(&self->a, "port:rxe0/1", text, sizeof(text), '\t',
					    "hostA", 0x0123456789abcdefULL));
	EXPECT_NE(NULL, strstr(text, "\ts2/hostA/0123456789abcdef/"));
	EXPECT_EQ(strlen(REC) + 1 + 3 + 5 + 1 + 16 + 1 + 128, strlen(text));
	ASSERT_EQ(0, shift_sign_host_check(&self->b, "port:rxe0/1", text, '\t', who,
					   sizeof(who), &seq));
	EXPECT_STREQ(REC, text);
	EXPECT_STREQ("hostA", who);
	EXPECT_EQ(0x0123456789abcdefULL, seq);
}

/* The signature is Ed25519 of what recsign.h says, as openssl(1) checks it. */
TEST_F(hostsign, openssl_agrees)
{
	static const unsigned char canon[] = "shift-rec-v2\0port:rxe0/1\0" REC "\0hostA\0"
					     "\x00\x00\x00\x00\x00\x00\x01\x02";
	char text[512] = REC, path[PATH_MAX + 16], cmd[4 * PATH_MAX], *sig;
	uint8_t raw[SHIFT_SIGN_SIG_LEN], der[12 + SHIFT_SIGN_ED25519_LEN];
	unsigned int i;
	int fd;

	if (system("command -v openssl >/dev/null 2>&1"))
		SKIP(return, "no openssl(1) to compare with");
	ASSERT_EQ(0, shift_sign_host_append(&self->a, "port:rxe0/1", text, sizeof(text), '\t',
					    "hostA", 0x102));
	snprintf(path, sizeof(path), "%s/canon", self->tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(canon) - 1, write(fd, canon, sizeof(canon) - 1));
	close(fd);
	sig = strrchr(text, '/') + 1;
	ASSERT_EQ(2 * SHIFT_SIGN_SIG_LEN, strlen(sig));
	for (i = 0; i < SHIFT_SIGN_SIG_LEN; i++)
		ASSERT_EQ(1, sscanf(sig + 2 * i, "%2hhx", &raw[i]));
	snprintf(path, sizeof(path), "%s/sig", self->tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(raw), write(fd, raw, sizeof(raw)));
	close(fd);
	/* hostA's public key as DER: RFC 8410's SubjectPublicKeyInfo prefix */
	memcpy(der, "\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00", 12);
	for (i = 0; i < SHIFT_SIGN_ED25519_LEN; i++)
		ASSERT_EQ(1, sscanf(self->apub + 2 * i, "%2hhx", &der[12 + i]));
	snprintf(path, sizeof(path), "%s/pub.der", self->tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(der), write(fd, der, sizeof(der)));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl pkeyutl -verify -pubin -keyform DER -inkey pub.der -rawin "
		 "-in canon -sigfile sig >/dev/null 2>&1", self->tmp);
	EXPECT_EQ(0, system(cmd));
	/* and refuses it for another text */
	snprintf(cmd, sizeof(cmd), "cd %s && echo x >> canon && "
		 "openssl pkeyutl -verify -pubin -keyform DER -inkey pub.der -rawin "
		 "-in canon -sigfile sig >/dev/null 2>&1", self->tmp);
	EXPECT_NE(0, system(cmd));
}

/* A host speaks for itself only: whoever holds another key cannot sign as it. */
TEST_F(hostsign, impersonation)
{
	char t[512], who[SHIFT_SIGN_SENDER_MAX], why[320], hosts[PATH_MAX];
	char cpub[2 * SHIFT_SIGN_ED25519_LEN + 1];
	struct shift_sign_hosts c;
	uint64_t seq;

	/* hostB's key, claiming to be hostA */
	strcpy(t, REC);
	ASSERT_EQ(0, shift_sign_host_append(&self->b, "port:rxe0/1", t, sizeof(t), '\t',
					    "hostA", 5));
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->a, "port:rxe0/1", t, '\t', who,
						  sizeof(who), &seq));
	EXPECT_STREQ("hostA", who);
	/* a key the hosts file does not list, as a host it does not list */
	ASSERT_EQ(0, shift_sign_host_public(self->ckey, cpub, why, sizeof(why)));
	snprintf(t, sizeof(t), "hostC %s\n", cpub);
	ASSERT_EQ(0, key_file(self->tmp, "hostsC", t, 0644, hosts, sizeof(hosts)));
	ASSERT_EQ(0, shift_sign_hosts_read(self->ckey, hosts, "hostC", &c, why, sizeof(why)));
	strcpy(t, REC);
	ASSERT_EQ(0, shift_sign_host_append(&c, "port:rxe0/1", t, sizeof(t), '\t', "hostC", 5));
	EXPECT_EQ(-ENOKEY, shift_sign_host_check(&self->a, "port:rxe0/1", t, '\t', who,
						 sizeof(who), &seq));
	EXPECT_STREQ("hostC", who);
	shift_sign_hosts_clear(&c);
}

TEST_F(hostsign, tampered)
{
	char good[512] = REC, t[512], who[SHIFT_SIGN_SENDER_MAX], *p;
	uint64_t seq;

	ASSERT_EQ(0, shift_sign_host_append(&self->a, "port:rxe0/1", good, sizeof(good), '\t',
					    "hostA", 100));
	/* the state */
	strcpy(t, good);
	p = strstr(t, "DOWN");
	memcpy(p, "UP\t\t", 4);
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->b, "port:rxe0/1", t, '\t', who,
						  sizeof(who), &seq));
	/* moved to another port */
	strcpy(t, good);
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->b, "port:rxe1/1", t, '\t', who,
						  sizeof(who), &seq));
	/* the sequence */
	strcpy(t, good);
	p = strstr(t, "/0000000000000064/");
	ASSERT_NE(NULL, p);
	p[16] = '5';
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->b, "port:rxe0/1", t, '\t', who,
						  sizeof(who), &seq));
	/* a bit of the signature, and a short one */
	strcpy(t, good);
	p = strrchr(t, '/') + 1;
	p[0] = p[0] == '0' ? '1' : '0';
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->b, "port:rxe0/1", t, '\t', who,
						  sizeof(who), &seq));
	strcpy(t, good);
	t[strlen(t) - 2] = '\0';
	EXPECT_EQ(-EBADMSG, shift_sign_host_check(&self->b, "port:rxe0/1", t, '\t', who,
						  sizeof(who), &seq));
	/* the good one still checks */
	strcpy(t, good);
	EXPECT_EQ(0, shift_sign_host_check(&self->b, "port:rxe0/1", t, '\t', who, sizeof(who),
					   &seq));
	EXPECT_EQ(100, seq);
}

/* A host key's reader takes no cluster key's token, and the other way round. */
TEST_F(hostsign, schemes_apart)
{
	char t[512] = REC, kp[PATH_MAX], why[192], who[SHIFT_SIGN_SENDER_MAX];
	struct shift_sign_key k;
	uint64_t seq;

	EXPECT_EQ(-ENOMSG, shift_sign_host_check(&self->a, "port:rxe0/1", t, '\t', who,
						 sizeof(who), &seq));
	EXPECT_STREQ(REC, t);
	ASSERT_EQ(0, key_file(self->tmp, "cluster", KEY_HEX "\n", 0600, kp, sizeof(kp)));
	ASSERT_EQ(0, shift_sign_key_read(kp, &k, why, sizeof(why)));
	ASSERT_EQ(0, shift_sign_append(&k, "port:rxe0/1", t, sizeof(t), '\t', "hostA", 5));
	EXPECT_EQ(-EPROTO, shift_sign_host_check(&self->a, "port:rxe0/1", t, '\t', who,
						 sizeof(who), &seq));
	strcpy(t, REC);
	ASSERT_EQ(0, shift_sign_host_append(&self->a, "port:rxe0/1", t, sizeof(t), '\t',
					    "hostA", 5));
	EXPECT_EQ(-EBADMSG, shift_sign_check(&k, "port:rxe0/1", t, '\t', who, sizeof(who),
					     &seq));
	/* no room, no sender, no key */
	strcpy(t, "x");
	EXPECT_EQ(-ENOBUFS, shift_sign_host_append(&self->a, "n", t, 100, '\t', "hostA", 5));
	EXPECT_EQ(-EINVAL, shift_sign_host_append(&self->a, "n", t, sizeof(t), '\t', "a/b", 5));
	shift_sign_hosts_clear(&self->b);
	EXPECT_EQ(-EINVAL, shift_sign_host_append(&self->b, "n", t, sizeof(t), '\t', "hostB", 5));
}

/* The hosts file: anybody's to read, only its owner's to write; each host once. */
/* hosts_read() with the hosts file's @line for hostA (the key first), into @h */
static int gids_read(const char *tmp, const char *akey, const char *apub, const char *gids,
		     struct shift_sign_hosts *h, char *why, size_t whylen)
{
	char text[4096], p[PATH_MAX];
	int err;

	snprintf(text, sizeof(text), "hostA %s %s\nhostB %s\n", apub, gids,
		 "0000000000000000000000000000000000000000000000000000000000000000");
	err = key_file(tmp, "gids", text, 0644, p, sizeof(p));
	if (err)
		return err;
	err = shift_sign_hosts_read(akey, p, "hostA", h, why, whylen);
	unlink(p);
	return err;
}

static bool gid_ok(const struct shift_sign_hosts *h, const char *host, const char *gid)
{
	uint8_t g[16];

	if (inet_pton(AF_INET6, gid, g) != 1)
		return false;
	return shift_sign_host_gid_ok(h, host, g);
}

/* A host's line gives it the GIDs it may name; a line without any, every GID. */
TEST_F(hostsign, gids)
{
	struct shift_sign_hosts h;
	char why[320], many[64 * 20] = "";
	int i;

	ASSERT_EQ(0, gids_read(self->tmp, self->akey, self->apub,
			       "10.0.0.1 10.0.1.0/24\tfe80::5054:ff:fe00:101 fd00:1::/64 ::ffff:10.9.0.0/112",
			       &h, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.0.0.1"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "::ffff:10.0.0.2"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.0.1.0"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.0.1.255"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "::ffff:10.0.2.1"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "fe80::5054:ff:fe00:101"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "fe80::5054:ff:fe00:201"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "fd00:1::abcd"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "fd00:2::abcd"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.9.255.255"));
	/* an IPv4 address is its IPv4-mapped GID only */
	EXPECT_FALSE(gid_ok(&h, "hostA", "::10.0.0.1"));
	/* hostB lists none: any; a host not listed: none */
	EXPECT_TRUE(gid_ok(&h, "hostB", "::ffff:10.0.0.1"));
	EXPECT_FALSE(gid_ok(&h, "hostC", "::ffff:10.0.0.1"));
	shift_sign_hosts_clear(&h);

	/* /0 and a prefix length not on a byte */
	ASSERT_EQ(0, gids_read(self->tmp, self->akey, self->apub, "10.0.0.0/31 fe80::/10",
			       &h, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.0.0.1"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "::ffff:10.0.0.2"));
	EXPECT_TRUE(gid_ok(&h, "hostA", "febf::1"));
	EXPECT_FALSE(gid_ok(&h, "hostA", "fec0::1"));
	shift_sign_hosts_clear(&h);
	ASSERT_EQ(0, gids_read(self->tmp, self->akey, self->apub, "::/0", &h, why, sizeof(why)));
	EXPECT_TRUE(gid_ok(&h, "hostA", "2001:db8::1"));
	shift_sign_hosts_clear(&h);

	/* refused, each named */
	static const char *const bad[] = {
		"10.0.0.1/33", "fe80::/129", "10.0.0.1/24", "fe80::1/64", "10.0.0.256",
		"10.0.0.1/", "10.0.0.1/x", "10.0.0.1/-1", "10.0.0.1/+8", "host2",
		"10.0.0.1/4294967328",
	};
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		EXPECT_EQ(-EINVAL, gids_read(self->tmp, self->akey, self->apub, bad[i], &h, why,
					     sizeof(why))) TH_LOG("%s", bad[i]);
		EXPECT_NE(NULL, strstr(why, "line 1: '")) TH_LOG("%s: %s", bad[i], why);
		EXPECT_NE(NULL, strstr(why, "' is not a GID")) TH_LOG("%s: %s", bad[i], why);
		EXPECT_FALSE(h.set);
	}
	for (i = 0; i < SHIFT_SIGN_HOST_GIDS_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), " 10.1.%d.1", i);
	ASSERT_EQ(0, gids_read(self->tmp, self->akey, self->apub, many, &h, why, sizeof(why)));
	EXPECT_TRUE(gid_ok(&h, "hostA", "::ffff:10.1.63.1"));
	shift_sign_hosts_clear(&h);
	strcat(many, " 10.2.0.1");
	EXPECT_EQ(-EINVAL, gids_read(self->tmp, self->akey, self->apub, many, &h, why,
				     sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "line 1: more than 64 GIDs for hostA")) TH_LOG("%s", why);
}

TEST_F(hostsign, hosts_file_refused)
{
	struct shift_sign_hosts h;
	char why[320], p[PATH_MAX], text[512];

	snprintf(text, sizeof(text), "hostA %s\nhostB %s\n", self->apub, self->bpub);
	ASSERT_EQ(0, key_file(self->tmp, "h1", text, 0664, p, sizeof(p)));
	EXPECT_EQ(-EPERM, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "mode 0664: group or others may write it")) TH_LOG("%s", why);
	EXPECT_FALSE(h.set);
	if (geteuid() == 0) {
		ASSERT_EQ(0, key_file(self->tmp, "h2", text, 0644, p, sizeof(p)));
		ASSERT_EQ(0, chown(p, 65534, 65534));
		EXPECT_EQ(-EPERM, shift_sign_hosts_read(self->akey, p, "hostA", &h, why,
							sizeof(why)));
		EXPECT_NE(NULL, strstr(why, "owned by uid 65534"));
	}
	/* listed twice */
	snprintf(text, sizeof(text), "hostA %s\nhostB %s\nhostA %s\n", self->apub, self->bpub,
		 self->apub);
	ASSERT_EQ(0, key_file(self->tmp, "h3", text, 0644, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "hostA is listed twice"));
	/* a bad line, named */
	snprintf(text, sizeof(text), "hostA %s\nhostB %.60s\n", self->apub, self->bpub);
	ASSERT_EQ(0, key_file(self->tmp, "h4", text, 0644, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "line 2: hostB's key is not 64 hex digits"));
	snprintf(text, sizeof(text), "hostA %s extra\n", self->apub);
	ASSERT_EQ(0, key_file(self->tmp, "h5", text, 0644, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "line 1: 'extra' is not a GID")) TH_LOG("%s", why);
	snprintf(text, sizeof(text), "hostA\n");
	ASSERT_EQ(0, key_file(self->tmp, "h7", text, 0644, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "line 1: not \"HOST PUBLIC-KEY [GID ...]\""));
	snprintf(text, sizeof(text), "host/A %s\n", self->apub);
	ASSERT_EQ(0, key_file(self->tmp, "h6", text, 0644, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(self->akey, p, "hostA", &h, why, sizeof(why)));
	/* this host not in it, or with another key */
	EXPECT_EQ(-ENOKEY, shift_sign_hosts_read(self->akey, self->hosts, "hostC", &h, why,
						 sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "does not list this host, hostC"));
	EXPECT_EQ(-ENOKEY, shift_sign_hosts_read(self->akey, self->hosts, "hostB", &h, why,
						 sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "lists hostB with another key"));
	/* the private key: its owner's alone, and an Ed25519 seed's length */
	ASSERT_EQ(0, key_file(self->tmp, "open.key", KEY_HEX "\n", 0644, p, sizeof(p)));
	EXPECT_EQ(-EPERM, shift_sign_hosts_read(p, self->hosts, "hostA", &h, why, sizeof(why)));
	ASSERT_EQ(0, key_file(self->tmp, "long.key", KEY_HEX "00\n", 0600, p, sizeof(p)));
	EXPECT_EQ(-EINVAL, shift_sign_hosts_read(p, self->hosts, "hostA", &h, why, sizeof(why)));
	EXPECT_NE(NULL, strstr(why, "a host key is 64 hex digits"));
	EXPECT_EQ(-ENOENT, shift_sign_hosts_read(self->akey, "/nonexistent/hosts", "hostA", &h,
						 why, sizeof(why)));
	EXPECT_FALSE(h.set);
}

/* No sequence is a maximum: each is after the one before, across the wrap. */
TEST(serial_wrap)
{
	static const uint64_t at[] = { 0, 1, (1ULL << 63) - 1, 1ULL << 63, UINT64_MAX - 1,
				       UINT64_MAX };
	uint64_t last;
	unsigned int i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint64_t s = at[i];

		EXPECT_TRUE(shift_seq_after(s + 1, s));
		EXPECT_FALSE(shift_seq_after(s, s + 1));
		EXPECT_FALSE(shift_seq_after(s, s));
		EXPECT_TRUE(shift_seq_after(s + (1ULL << 63) - 1, s));
		EXPECT_FALSE(shift_seq_after(s + (1ULL << 63), s));
	}
	/* UINT64_MAX, today's pin, is before 0, 1 and a clock's sequence */
	EXPECT_TRUE(shift_seq_after(0, UINT64_MAX));
	EXPECT_TRUE(shift_seq_after(shift_sign_now_us(), UINT64_MAX));
	/* a sender's sequence: its clock, and strictly increasing */
	last = 0;
	EXPECT_TRUE(shift_seq_after(shift_sign_seq_next(&last), shift_sign_now_us() - 1000000));
	last = shift_sign_now_us() + 3600ULL * 1000000;	/* the clock stepped back */
	EXPECT_EQ(last + 1, shift_sign_seq_next(&last));
	last = UINT64_MAX;				/* and across the wrap */
	EXPECT_EQ(shift_seq_after(shift_sign_seq_next(&last), UINT64_MAX), true);
}

/* ---- libshiftu's store: signed values, on the LOCAL backend ---- */

FIXTURE(store) {
	char tmp[64];
	char log[PATH_MAX];
	struct shiftu_store cfg;
	struct shiftu_kv *kv;
};

FIXTURE_SETUP(store)
{
	char key[PATH_MAX];

	strcpy(self->tmp, "/tmp/shiftu_recsign.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	snprintf(self->log, sizeof(self->log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_WARN, self->log));
	ASSERT_EQ(0, shiftu_parse_store("local", &self->cfg));
	snprintf(self->cfg.dir, sizeof(self->cfg.dir), "%s/kv", self->tmp);
	ASSERT_EQ(0, key_file(self->tmp, "key", KEY_HEX "\n", 0600, key, sizeof(key)));
	ASSERT_EQ(0, shiftu_parse_store_dir(key, self->cfg.key_file));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &self->kv));
}

FIXTURE_TEARDOWN(store)
{
	shiftu_kv_close(self->kv);
	nftw(self->tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void file_write(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			close(fd);
		else
			close(fd);
	}
}

static void file_read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
}

static uint64_t dropped(void)
{
	return __atomic_load_n(&shiftu_stat_lines[SHIFTU_STAT_RECORDS_DROPPED].v,
			       __ATOMIC_RELAXED);
}

TEST_F(store, signed_values)
{
	char val[64], raw[1100], moved[1100];
	struct shiftu_kv_req r[3] = {
		{ .op = SHIFTU_KV_PUT, .key = "mr:00000000000000ab:7", .val = "77" },
		{ .op = SHIFTU_KV_GET, .key = "qp:fe80:17", .val = val, .len = sizeof(val) },
		{ .op = SHIFTU_KV_DEL, .key = "fbreq:fe80:17" },
	};

	ASSERT_EQ(0, shiftu_kv_put(self->kv, "qp:fe80:17", "fe80 5 6"));
	/* the store holds it signed, the caller sees it as written */
	file_read(self->cfg.dir, "shiftu%3Av1%3Aqp%3Afe80%3A17", raw, sizeof(raw));
	EXPECT_EQ(0, strncmp(raw, "fe80 5 6 s1/", 12));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "qp:fe80:17", val, sizeof(val)));
	EXPECT_STREQ("fe80 5 6", val);
	/* a small buffer that holds the value, not its signature */
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "qp:fe80:17", val, 9));
	EXPECT_EQ(-ENOBUFS, shiftu_kv_get(self->kv, "qp:fe80:17", val, 8));
	/* batches sign and check too; their deletes have no value to sign */
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "fbreq:fe80:17", "1 REQ 2 3 4"));
	val[0] = '\0';
	ASSERT_EQ(0, shiftu_kv_batch(self->kv, r, 3));
	EXPECT_EQ(0, r[0].ret);
	EXPECT_EQ(0, r[1].ret);
	EXPECT_EQ(0, r[2].ret);
	EXPECT_STREQ("fe80 5 6", val);
	EXPECT_EQ(-ENOENT, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "mr:00000000000000ab:7", val, sizeof(val)));
	EXPECT_STREQ("77", val);
	/* a record moved to another key (another QP's twin) is not that key's */
	file_read(self->cfg.dir, "shiftu%3Av1%3Aqp%3Afe80%3A17", moved, sizeof(moved));
	file_write(self->cfg.dir, "shiftu%3Av1%3Aqp%3Afe80%3A18", moved);
	EXPECT_EQ(0, dropped());
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "qp:fe80:18", val, sizeof(val)));
	EXPECT_EQ(1, dropped());
	/* a value too long to be signed is refused, not written unsigned */
	memset(raw, 'x', 1000);
	raw[1000] = '\0';
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "qp:fe80:19", raw));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(self->kv, "qp:fe80:19", val, sizeof(val)));
}

/* A value older than one read before for its key is a replay: dropped. */
TEST_F(store, replayed)
{
	char val[64], first[1100], log[8192];

	ASSERT_EQ(0, shiftu_kv_put(self->kv, "fbreq:fe80:17", "1 REQ 2 3 4"));
	file_read(self->cfg.dir, "shiftu%3Av1%3Afbreq%3Afe80%3A17", first, sizeof(first));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	/* read again: the same value is no replay */
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "fbreq:fe80:17", "2 REQ 5 6 7"));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	EXPECT_STREQ("2 REQ 5 6 7", val);
	EXPECT_EQ(0, dropped());
	/* the first one, signed and genuine, put back */
	file_write(self->cfg.dir, "shiftu%3Av1%3Afbreq%3Afe80%3A17", first);
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	EXPECT_EQ(1, dropped());
	file_read(self->tmp, "log", log, sizeof(log));
	EXPECT_NE(NULL, strstr(log, "older than one read before (a replay)")) TH_LOG("%s", log);
	/* another key's history is its own */
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "fbreq:fe80:18", "1 REQ 2 3 4"));
	EXPECT_EQ(0, shiftu_kv_get(self->kv, "fbreq:fe80:18", val, sizeof(val)));
}

/* Unsigned, forged or wrong-key values: dropped, counted, said once per source. */
TEST_F(store, dropped_and_counted)
{
	struct shift_sign_key k, k2;
	char val[64], text[256], why[192], key2[PATH_MAX], buf[4096];
	struct shiftu_kv_req r = { .op = SHIFTU_KV_GET, .key = "fbreq:fe80:17", .val = val,
				   .len = sizeof(val) };
	uint64_t seq;

	file_write(self->cfg.dir, "shiftu%3Av1%3Aqp%3Afe80%3A17", "fe80 5 6");
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "qp:fe80:17", val, sizeof(val)));
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "qp:fe80:17", val, sizeof(val)));
	EXPECT_EQ(2, dropped());
	/* signed under another key */
	ASSERT_EQ(0, key_file(self->tmp, "key2", KEY2_HEX "\n", 0600, key2, sizeof(key2)));
	ASSERT_EQ(0, shift_sign_key_read(key2, &k2, why, sizeof(why)));
	strcpy(text, "1 REQ 2 3 4");
	ASSERT_EQ(0, shift_sign_append(&k2, "fbreq:fe80:17", text, sizeof(text), ' ', "mallory",
				       shift_sign_now_us()));
	file_write(self->cfg.dir, "shiftu%3Av1%3Afbreq%3Afe80%3A17", text);
	ASSERT_EQ(0, shiftu_kv_batch(self->kv, &r, 1));
	EXPECT_EQ(-EBADMSG, r.ret);
	EXPECT_EQ(3, dropped());
	ASSERT_EQ(0, shift_sign_key_read(self->cfg.key_file, &k, why, sizeof(why)));
	/* the right key, a sequence an hour ahead: a pin, refused */
	strcpy(text, "1 REQ 2 3 4");
	seq = shift_sign_now_us() + 3600ULL * 1000000;
	ASSERT_EQ(0, shift_sign_append(&k, "fbreq:fe80:17", text, sizeof(text),
				       ' ', "mallory", seq));
	file_write(self->cfg.dir, "shiftu%3Av1%3Afbreq%3Afe80%3A17", text);
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	EXPECT_EQ(4, dropped());
	/* a minute behind is fine: clocks differ */
	strcpy(text, "1 REQ 2 3 4");
	ASSERT_EQ(0, shift_sign_append(&k, "fbreq:fe80:17", text, sizeof(text),
				       ' ', "alice", shift_sign_now_us() - 60000000));
	file_write(self->cfg.dir, "shiftu%3Av1%3Afbreq%3Afe80%3A17", text);
	EXPECT_EQ(0, shiftu_kv_get(self->kv, "fbreq:fe80:17", val, sizeof(val)));
	EXPECT_STREQ("1 REQ 2 3 4", val);
	EXPECT_EQ(4, dropped());

	/* one line per source: qp:fe80 (unsigned) and mallory */
	file_read(self->tmp, "log", buf, sizeof(buf));
	EXPECT_NE(NULL, strstr(buf, "dropped qp:fe80:17 from qp:fe80 (unsigned): not signed"));
	EXPECT_NE(NULL, strstr(buf, "dropped fbreq:fe80:17 from mallory: bad signature"));
	EXPECT_EQ(NULL, strstr(strstr(buf, "from mallory") + 1, "from mallory"));
	EXPECT_EQ(NULL, strstr(strstr(buf, "(unsigned)") + 1, "(unsigned)"));
}

/* A key file others can read: the store is refused, as for bad credentials. */
TEST_F(store, key_file_mode)
{
	struct shiftu_kv *kv = NULL;
	char buf[4096];

	ASSERT_EQ(0, chmod(self->cfg.key_file, 0640));
	EXPECT_EQ(-EACCES, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_EQ(NULL, kv);
	file_read(self->tmp, "log", buf, sizeof(buf));
	EXPECT_NE(NULL, strstr(buf, "refused: mode 0640 lets group or others at it"));
	EXPECT_NE(NULL, strstr(buf, self->cfg.key_file));
}

/* Without a key, values go as they are: today's one-host default. */
TEST_F(store, no_key)
{
	struct shiftu_store cfg = self->cfg;
	struct shiftu_kv *kv;
	char raw[256], val[64];

	cfg.key_file[0] = '\0';
	ASSERT_EQ(0, shiftu_kv_open(&cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "qp:fe80:20", "a b"));
	file_read(cfg.dir, "shiftu%3Av1%3Aqp%3Afe80%3A20", raw, sizeof(raw));
	EXPECT_STREQ("a b", raw);
	ASSERT_EQ(0, shiftu_kv_get(kv, "qp:fe80:20", val, sizeof(val)));
	EXPECT_STREQ("a b", val);
	shiftu_kv_close(kv);
}

/*
 * Without a key, a store on another host says once that its records are
 * unauthenticated; one on this host (a loopback address) says nothing.
 */
TEST_F(store, unauthenticated_once)
{
	struct shiftu_store cfg;
	struct shiftu_kv *kv = NULL;
	char buf[4096], *p;
	int i;

	ASSERT_EQ(0, shiftu_parse_store("redis://127.0.0.1:1", &cfg));
	EXPECT_NE(0, shiftu_kv_open(&cfg, &kv));
	file_read(self->tmp, "log", buf, sizeof(buf));
	EXPECT_EQ(NULL, strstr(buf, "UNAUTHENTICATED"));
	/* TEST-NET-1: nothing answers there, at once or after 1 s */
	ASSERT_EQ(0, shiftu_parse_store("redis://192.0.2.1:1", &cfg));
	for (i = 0; i < 2; i++)
		EXPECT_NE(0, shiftu_kv_open(&cfg, &kv));
	EXPECT_EQ(NULL, kv);
	file_read(self->tmp, "log", buf, sizeof(buf));
	p = strstr(buf, "store redis://192.0.2.1:1: UNAUTHENTICATED records: no SHIFTU_STORE_KEY_FILE");
	ASSERT_NE(NULL, p);
	p = strstr(buf, "UNAUTHENTICATED");
	EXPECT_EQ(NULL, strstr(p + 1, "UNAUTHENTICATED"));
}

TEST_HARNESS_MAIN
