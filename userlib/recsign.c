// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * recsign.c: records signed under the cluster key or a host's key, and
 * checked (recsign.h).  HMAC-SHA256 and Ed25519 are libcrypto's, loaded at
 * the first key read.
 *
 * Context: any thread, may sleep (the key file, dlopen).  No logging:
 * libshiftu and shiftmon each say what went wrong their way.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* types and prototypes only: the functions come from dlsym() */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "recsign.h"
#include "storeauth.h"

#define TAG_MAGIC	"s1/"
#define MAC_CONTEXT	"shift-rec-v1"
#define HOST_MAGIC	"s2/"
#define SIG_CONTEXT	"shift-rec-v2"
/* the longest string a MAC is computed over: a libshiftu value or an
 * agent's record, their names, the sender, the sequence */
#define MAC_INPUT_MAX	4096
#define KEY_FILE_MAX	1024

static struct {
	__typeof__(HMAC) *hmac;
	__typeof__(EVP_sha256) *sha256;
	__typeof__(EVP_PKEY_new_raw_private_key) *new_priv;
	__typeof__(EVP_PKEY_new_raw_public_key) *new_pub;
	__typeof__(EVP_PKEY_get_raw_public_key) *get_pub;
	__typeof__(EVP_PKEY_free) *pkey_free;
	__typeof__(EVP_MD_CTX_new) *md_new;
	__typeof__(EVP_MD_CTX_free) *md_free;
	__typeof__(EVP_DigestSignInit) *sign_init;
	__typeof__(EVP_DigestSign) *sign;
	__typeof__(EVP_DigestVerifyInit) *verify_init;
	__typeof__(EVP_DigestVerify) *verify;
} crypto;			/* written once, in crypto_once */
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static int crypto_err;		/* after crypto_once */
static char crypto_why[128];

static void crypto_load(void)
{
	static const char *const names[] = { "libcrypto.so.3", "libcrypto.so" };
	void *h = NULL;
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(crypto_why, sizeof(crypto_why), "cannot load libcrypto: %s",
			 dlerror());
		crypto_err = -ELIBACC;
		return;
	}
#define SYM(f, name)	(crypto.f = (__typeof__(crypto.f))dlsym(h, name))
	if (!SYM(hmac, "HMAC") || !SYM(sha256, "EVP_sha256") ||
	    !SYM(new_priv, "EVP_PKEY_new_raw_private_key") ||
	    !SYM(new_pub, "EVP_PKEY_new_raw_public_key") ||
	    !SYM(get_pub, "EVP_PKEY_get_raw_public_key") ||
	    !SYM(pkey_free, "EVP_PKEY_free") || !SYM(md_new, "EVP_MD_CTX_new") ||
	    !SYM(md_free, "EVP_MD_CTX_free") || !SYM(sign_init, "EVP_DigestSignInit") ||
	    !SYM(sign, "EVP_DigestSign") || !SYM(verify_init, "EVP_DigestVerifyInit") ||
	    !SYM(verify, "EVP_DigestVerify")) {
		snprintf(crypto_why, sizeof(crypto_why),
			 "libcrypto lacks HMAC or Ed25519 (OpenSSL 3 has both): %s", dlerror());
		crypto_err = -ELIBACC;
		/* the handle stays: nothing else may be loaded in its place */
	}
#undef SYM
}

/* libcrypto, once per process: 0 or -ELIBACC with the reason in @why. */
static int crypto_ready(char *why, size_t whylen)
{
	pthread_once(&crypto_once, crypto_load);
	if (crypto_err)
		snprintf(why, whylen, "%s", crypto_why);
	return crypto_err;
}

/* @n bytes from the 2 * @n hex digits at @hex into @out: 0 or -EINVAL. */
static int unhex(const char *hex, size_t n, uint8_t *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi = shift_hexval(hex[2 * i]), lo = shift_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = hi << 4 | lo;
	}
	return 0;
}

static void tohex(const uint8_t *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		*out++ = hex[in[i] >> 4];
		*out++ = hex[in[i] & 15];
	}
	*out = '\0';
}

/* The key line @found, hex, into @k. */
static int parse_key(const char *found, struct shift_sign_key *k, char *why, size_t whylen)
{
	size_t n;

	n = strlen(found);
	if (n & 1 || n < 2 * SHIFT_SIGN_KEY_MIN || n > 2 * SHIFT_SIGN_KEY_MAX) {
		snprintf(why, whylen,
			 "the key is %zu hex digits: it needs an even number from %d to %d (openssl rand -hex 32)",
			 n, 2 * SHIFT_SIGN_KEY_MIN, 2 * SHIFT_SIGN_KEY_MAX);
		return -EINVAL;
	}
	if (unhex(found, n / 2, k->key)) {
		snprintf(why, whylen, "the key line is not hex");
		shift_sign_key_clear(k);
		return -EINVAL;
	}
	k->len = n / 2;
	k->set = true;
	return 0;
}

int shift_sign_key_read(const char *path, struct shift_sign_key *k, char *why,
			size_t whylen)
{
	char buf[KEY_FILE_MAX + 2], *line;
	unsigned int at;
	int err;

	shift_sign_key_clear(k);
	err = shift_private_file_line(path, buf, sizeof(buf), "key", "key", &line, &at, why,
				      whylen);
	if (err)
		return err;
	err = parse_key(line, k, why, whylen);
	explicit_bzero(buf, sizeof(buf));
	if (err)
		return err;
	err = crypto_ready(why, whylen);
	if (err)
		shift_sign_key_clear(k);
	return err;
}

void shift_sign_key_clear(struct shift_sign_key *k)
{
	explicit_bzero(k, sizeof(*k));
}

bool shift_sign_sender_ok(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++) {
		char c = s[n];

		if (n >= SHIFT_SIGN_SENDER_MAX - 1 ||
		    !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

uint64_t shift_sign_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t shift_sign_seq_next(uint64_t *last)
{
	uint64_t old = __atomic_load_n(last, __ATOMIC_RELAXED), seq;

	/* strictly after the last one even when the clock stands still or
	 * steps back: a reader drops a sequence it has seen */
	do {
		seq = shift_sign_now_us();
		if (!shift_seq_after(seq, old))
			seq = old + 1;
	} while (!__atomic_compare_exchange_n(last, &old, seq, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return seq;
}

/*
 * The canonical string (recsign.h) of context @ctx in @in (MAC_INPUT_MAX
 * bytes): its length, or -ENOBUFS.
 */
static ssize_t canon(const char *ctx, const char *name, const char *text, size_t textlen,
		     const char *sender, uint64_t seq, unsigned char *in)
{
	size_t cl = strlen(ctx), nl = strlen(name), sl = strlen(sender), off;
	int i;

	if (cl + 1 + nl + 1 + textlen + 1 + sl + 1 + 8 > MAC_INPUT_MAX)
		return -ENOBUFS;
	memcpy(in, ctx, cl + 1);		/* with its NUL */
	off = cl + 1;
	memcpy(in + off, name, nl + 1);
	off += nl + 1;
	memcpy(in + off, text, textlen);
	off += textlen;
	in[off++] = '\0';
	memcpy(in + off, sender, sl + 1);
	off += sl + 1;
	for (i = 7; i >= 0; i--)
		in[off++] = seq >> (8 * i);
	return off;
}

/* HMAC-SHA256 of the canonical string into @mac. */
static int compute(const struct shift_sign_key *k, const char *name,
		   const char *text, size_t textlen, const char *sender,
		   uint64_t seq, uint8_t mac[SHIFT_SIGN_MAC_LEN])
{
	unsigned char in[MAC_INPUT_MAX];
	unsigned int maclen = 0;
	ssize_t len;

	if (!k->set || !crypto.hmac)
		return -EINVAL;
	len = canon(MAC_CONTEXT, name, text, textlen, sender, seq, in);
	if (len < 0)
		return len;
	if (!crypto.hmac(crypto.sha256(), k->key, (int)k->len, in, len, mac, &maclen) ||
	    maclen != SHIFT_SIGN_MAC_LEN)
		return -EIO;
	return 0;
}

/* Append "@sep@magic@sender/SEQ/" and @n bytes of @sig in hex to @text. */
static void append_tag(char *text, size_t len, char sep, const char *magic,
		       const char *sender, uint64_t seq, const uint8_t *sig, size_t n)
{
	char *p = text + len;

	p += sprintf(p, "%c%s%s/%016llx/", sep, magic, sender, (unsigned long long)seq);
	tohex(sig, n, p);
}

/* Does a token of @n signature bytes fit after @len bytes in @size? */
static bool tag_fits(size_t len, size_t size, const char *sender, size_t n)
{
	return len + 1 + 3 + strlen(sender) + 1 + 16 + 1 + 2 * n + 1 <= size;
}

int shift_sign_append(const struct shift_sign_key *k, const char *name,
		      char *text, size_t size, char sep, const char *sender,
		      uint64_t seq)
{
	uint8_t mac[SHIFT_SIGN_MAC_LEN];
	size_t len = strlen(text);
	int err;

	if (!shift_sign_sender_ok(sender))
		return -EINVAL;
	if (!tag_fits(len, size, sender, SHIFT_SIGN_MAC_LEN))
		return -ENOBUFS;
	err = compute(k, name, text, len, sender, seq, mac);
	if (err)
		return err;
	append_tag(text, len, sep, TAG_MAGIC, sender, seq, mac, SHIFT_SIGN_MAC_LEN);
	return 0;
}

/* Constant time: how much of the MAC matched says nothing. */
static bool same_mac(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	int i;

	for (i = 0; i < SHIFT_SIGN_MAC_LEN; i++)
		d |= a[i] ^ b[i];
	return !d;
}

/*
 * The token at the end of @text (after the last @sep) with @magic: its
 * sender into @who, its sequence into *@seq, its @n signature bytes into
 * @sig, and where it starts into *@tok.  -ENOMSG (none; -EPROTO: one with
 * the other magic, "s1/" or "s2/"), -EBADMSG (malformed: @who is "" unless
 * the sender was valid).
 */
static int parse_tag(const char *text, char sep, const char *magic, char *who,
		     uint64_t *seq, uint8_t *sig, size_t n, const char **tok)
{
	const char *t, *s, *q, *m;
	uint64_t v = 0;
	size_t i;

	who[0] = '\0';
	t = strrchr(text, sep);
	if (!t)
		return -ENOMSG;
	if (strncmp(t + 1, magic, 3))
		return !strncmp(t + 1, TAG_MAGIC, 3) || !strncmp(t + 1, HOST_MAGIC, 3) ?
		       -EPROTO : -ENOMSG;
	s = t + 4;
	q = strchr(s, '/');
	if (!q || q == s || (size_t)(q - s) >= SHIFT_SIGN_SENDER_MAX)
		return -EBADMSG;
	memcpy(who, s, q - s);
	who[q - s] = '\0';
	if (!shift_sign_sender_ok(who)) {
		who[0] = '\0';
		return -EBADMSG;
	}
	q++;
	for (i = 0; i < 16; i++) {
		int d = shift_hexval(q[i]);

		if (d < 0)
			return -EBADMSG;
		v = v << 4 | d;
	}
	if (q[16] != '/')
		return -EBADMSG;
	m = q + 17;
	if (strlen(m) != 2 * n || unhex(m, n, sig))
		return -EBADMSG;
	*seq = v;
	*tok = t;
	return 0;
}

int shift_sign_check(const struct shift_sign_key *k, const char *name,
		     char *text, char sep, char *sender, size_t senderlen,
		     uint64_t *seq)
{
	uint8_t mac[SHIFT_SIGN_MAC_LEN], want[SHIFT_SIGN_MAC_LEN];
	char who[SHIFT_SIGN_SENDER_MAX];
	const char *tok;
	uint64_t v;
	int err;

	err = parse_tag(text, sep, TAG_MAGIC, who, &v, mac, SHIFT_SIGN_MAC_LEN, &tok);
	if (senderlen)
		snprintf(sender, senderlen, "%s", who);
	if (err)
		return err == -EPROTO ? -EBADMSG : err;
	err = compute(k, name, text, tok - text, who, v, want);
	if (err)
		return err == -ENOBUFS ? -EBADMSG : err;
	if (!same_mac(mac, want))
		return -EBADMSG;
	text[tok - text] = '\0';
	*seq = v;
	return 0;
}

/* ---- host keys (Ed25519) ---------------------------------------------- */

/*
 * Read the hosts file @path, which is not secret but must not be anybody's
 * to change (storeauth.h), into a malloc()ed *@out, NUL-terminated.
 */
static int public_file_read(const char *path, char **out, char *why, size_t whylen)
{
	char *buf = malloc(SHIFT_SIGN_HOSTS_FILE_MAX + 2);
	int err;

	if (!buf) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = shift_public_file_read(path, buf, SHIFT_SIGN_HOSTS_FILE_MAX + 2, why, whylen);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

/* The private key in @keyfile as an EVP_PKEY in *@pkey. */
static int private_read(const char *keyfile, void **pkey, char *why, size_t whylen)
{
	uint8_t seed[SHIFT_SIGN_ED25519_LEN];
	char buf[KEY_FILE_MAX + 2], *line;
	unsigned int at;
	int err;

	err = shift_private_file_line(keyfile, buf, sizeof(buf), "key", "key", &line, &at,
				      why, whylen);
	if (err)
		return err;
	err = -EINVAL;
	if (strlen(line) != 2 * SHIFT_SIGN_ED25519_LEN || unhex(line, sizeof(seed), seed)) {
		snprintf(why, whylen,
			 "line %u: a host key is %d hex digits (openssl rand -hex %d)", at,
			 2 * SHIFT_SIGN_ED25519_LEN, SHIFT_SIGN_ED25519_LEN);
		goto out;
	}
	err = crypto_ready(why, whylen);
	if (err)
		goto out;
	*pkey = crypto.new_priv(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
	if (!*pkey) {
		snprintf(why, whylen, "libcrypto refused the Ed25519 key");
		err = -EIO;
	}
out:
	explicit_bzero(seed, sizeof(seed));
	explicit_bzero(buf, sizeof(buf));
	return err;
}

/* The raw public key of the EVP_PKEY @pkey in hex into @hex. */
static int public_hex(void *pkey, char *hex)
{
	uint8_t pub[SHIFT_SIGN_ED25519_LEN];
	size_t len = sizeof(pub);

	if (!crypto.get_pub(pkey, pub, &len) || len != sizeof(pub))
		return -EIO;
	tohex(pub, sizeof(pub), hex);
	return 0;
}

int shift_sign_host_public(const char *keyfile, char *hex, char *why, size_t whylen)
{
	void *pkey = NULL;
	int err;

	err = private_read(keyfile, &pkey, why, whylen);
	if (err)
		return err;
	err = public_hex(pkey, hex);
	if (err)
		snprintf(why, whylen, "libcrypto cannot give the public key");
	crypto.pkey_free(pkey);
	return err;
}

static int pub_cmp(const void *a, const void *b)
{
	return strcmp(((const struct shift_sign_pub *)a)->host,
		      ((const struct shift_sign_pub *)b)->host);
}

/*
 * A hosts file's GID @s, "ADDR[/LEN]", into @n: IPv6, or IPv4 for its
 * IPv4-mapped GID.  0 or -EINVAL.
 */
static int gidnet_parse(const char *gid, struct shift_sign_gidnet *n)
{
	char s[INET6_ADDRSTRLEN + 5], *slash, *end;
	unsigned int i, max = 128;
	unsigned long len;
	struct in_addr v4;

	if (strlen(gid) >= sizeof(s))
		return -EINVAL;
	strcpy(s, gid);
	slash = strchr(s, '/');
	if (slash)
		*slash = '\0';
	memset(n, 0, sizeof(*n));
	if (inet_pton(AF_INET, s, &v4) == 1) {
		n->addr[10] = n->addr[11] = 0xff;
		memcpy(&n->addr[12], &v4, 4);
		max = 32;
	} else if (inet_pton(AF_INET6, s, n->addr) != 1) {
		return -EINVAL;
	}
	len = max;
	if (slash) {
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || slash[1] == '+' || slash[1] == '-' ||
		    len > max)
			return -EINVAL;
	}
	n->len = len + (128 - max);
	/* the bits past the prefix: a host bit set is a typo, not a prefix */
	for (i = n->len; i < 128; i++)
		if (n->addr[i / 8] & (0x80 >> (i % 8)))
			return -EINVAL;
	return 0;
}

static bool gidnet_has(const struct shift_sign_gidnet *n, const uint8_t *gid)
{
	unsigned int full = n->len / 8, rest = n->len % 8;

	if (memcmp(n->addr, gid, full))
		return false;
	return !rest || !((n->addr[full] ^ gid[full]) & (uint8_t)(0xff00 >> rest));
}

/* The GIDs after a host's key, @rest of its line @no, into @p. */
static int hosts_gids(char *rest, unsigned int no, struct shift_sign_pub *p, char *why,
		      size_t whylen)
{
	char *tok;

	while ((tok = strtok_r(NULL, " \t", &rest))) {
		if (p->ngid == SHIFT_SIGN_HOST_GIDS_MAX) {
			snprintf(why, whylen, "line %u: more than %d GIDs for %s", no,
				 SHIFT_SIGN_HOST_GIDS_MAX, p->host);
			return -EINVAL;
		}
		if (!p->gid) {
			p->gid = calloc(SHIFT_SIGN_HOST_GIDS_MAX, sizeof(*p->gid));
			if (!p->gid) {
				snprintf(why, whylen, "out of memory");
				return -ENOMEM;
			}
		}
		if (gidnet_parse(tok, &p->gid[p->ngid])) {
			snprintf(why, whylen, "line %u: '%.64s' is not a GID (IPv6 or IPv4, with an optional /LEN and no bit set past it)",
				 no, tok);
			return -EINVAL;
		}
		p->ngid++;
	}
	return 0;
}

/* One line "HOST HEX [GID ...]" of the hosts file into @p. */
static int hosts_line(char *line, unsigned int no, struct shift_sign_pub *p, char *why,
		      size_t whylen)
{
	uint8_t pub[SHIFT_SIGN_ED25519_LEN];
	char *host, *hex, *rest;
	int err;

	memset(p, 0, sizeof(*p));
	host = strtok_r(line, " \t", &rest);
	hex = strtok_r(NULL, " \t", &rest);
	if (!hex) {
		snprintf(why, whylen, "line %u: not \"HOST PUBLIC-KEY [GID ...]\"", no);
		return -EINVAL;
	}
	if (!shift_sign_sender_ok(host)) {
		snprintf(why, whylen, "line %u: '%.64s' is not a host name (1 to %d of A-Z a-z 0-9 . _ -)",
			 no, host, SHIFT_SIGN_SENDER_MAX - 1);
		return -EINVAL;
	}
	if (strlen(hex) != 2 * SHIFT_SIGN_ED25519_LEN || unhex(hex, sizeof(pub), pub)) {
		snprintf(why, whylen, "line %u: %s's key is not %d hex digits", no, host,
			 2 * SHIFT_SIGN_ED25519_LEN);
		return -EINVAL;
	}
	snprintf(p->host, sizeof(p->host), "%s", host);
	err = hosts_gids(rest, no, p, why, whylen);
	if (err)
		goto out_free;
	p->pkey = crypto.new_pub(EVP_PKEY_ED25519, NULL, pub, sizeof(pub));
	if (!p->pkey) {
		snprintf(why, whylen, "line %u: libcrypto refused %s's key", no, host);
		err = -EINVAL;
		goto out_free;
	}
	return 0;

out_free:
	free(p->gid);
	p->gid = NULL;
	return err;
}

/* Every line of the hosts file @buf into @h. */
static int hosts_parse(char *buf, struct shift_sign_hosts *h, char *why, size_t whylen)
{
	char *line, *next;
	unsigned int no = 0, i;
	int err;

	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		no++;
		line[strcspn(line, "\r")] = '\0';
		line += strspn(line, " \t");
		if (!*line || *line == '#')
			continue;
		if (h->n == SHIFT_SIGN_HOSTS_MAX) {
			snprintf(why, whylen, "line %u: more than %d hosts", no,
				 SHIFT_SIGN_HOSTS_MAX);
			return -EINVAL;
		}
		/* room for 16, then doubled whenever full */
		if (!h->n || (h->n >= 16 && !(h->n & (h->n - 1)))) {
			struct shift_sign_pub *p = realloc(h->pub, (h->n ? 2 * h->n : 16) *
							   sizeof(*p));

			if (!p) {
				snprintf(why, whylen, "out of memory");
				return -ENOMEM;
			}
			h->pub = p;
		}
		err = hosts_line(line, no, &h->pub[h->n], why, whylen);
		if (err)
			return err;
		h->n++;
	}
	qsort(h->pub, h->n, sizeof(*h->pub), pub_cmp);
	for (i = 1; i < h->n; i++)
		if (!strcmp(h->pub[i].host, h->pub[i - 1].host)) {
			snprintf(why, whylen, "%s is listed twice", h->pub[i].host);
			return -EINVAL;
		}
	return 0;
}

static const struct shift_sign_pub *host_find(const struct shift_sign_hosts *h,
					      const char *host)
{
	struct shift_sign_pub key;

	snprintf(key.host, sizeof(key.host), "%s", host);
	return h->n ? bsearch(&key, h->pub, h->n, sizeof(*h->pub), pub_cmp) : NULL;
}

int shift_sign_hosts_read(const char *keyfile, const char *hostsfile, const char *self,
			  struct shift_sign_hosts *h, char *why, size_t whylen)
{
	char mine[2 * SHIFT_SIGN_ED25519_LEN + 1], theirs[2 * SHIFT_SIGN_ED25519_LEN + 1];
	const struct shift_sign_pub *p;
	char sub[160], *buf = NULL;
	int err;

	memset(h, 0, sizeof(*h));
	err = private_read(keyfile, &h->priv, sub, sizeof(sub));
	if (err) {
		snprintf(why, whylen, "host key file %s: %s", keyfile, sub);
		return err;
	}
	err = public_file_read(hostsfile, &buf, sub, sizeof(sub));
	if (!err)
		err = hosts_parse(buf, h, sub, sizeof(sub));
	free(buf);
	if (err) {
		snprintf(why, whylen, "hosts file %s: %s", hostsfile, sub);
		goto out_clear;
	}
	err = -ENOKEY;
	p = host_find(h, self);
	if (!p) {
		snprintf(why, whylen, "hosts file %s does not list this host, %s (shiftmon host-key %s)",
			 hostsfile, self, keyfile);
		goto out_clear;
	}
	if (public_hex(h->priv, mine) || public_hex(p->pkey, theirs)) {
		snprintf(why, whylen, "libcrypto cannot give a public key");
		err = -EIO;
		goto out_clear;
	}
	if (strcmp(mine, theirs)) {
		snprintf(why, whylen, "hosts file %s lists %s with another key than %s's",
			 hostsfile, self, keyfile);
		goto out_clear;
	}
	h->set = true;
	return 0;

out_clear:
	shift_sign_hosts_clear(h);
	return err;
}

bool shift_sign_host_gid_ok(const struct shift_sign_hosts *h, const char *host,
			    const uint8_t *gid)
{
	const struct shift_sign_pub *p = host_find(h, host);
	unsigned int i;

	if (!p)
		return false;
	if (!p->ngid)
		return true;
	for (i = 0; i < p->ngid; i++)
		if (gidnet_has(&p->gid[i], gid))
			return true;
	return false;
}

void shift_sign_hosts_clear(struct shift_sign_hosts *h)
{
	unsigned int i;

	if (h->priv)
		crypto.pkey_free(h->priv);
	for (i = 0; i < h->n; i++) {
		crypto.pkey_free(h->pub[i].pkey);
		free(h->pub[i].gid);
	}
	free(h->pub);
	memset(h, 0, sizeof(*h));
}

int shift_sign_host_append(const struct shift_sign_hosts *h, const char *name,
			   char *text, size_t size, char sep, const char *sender,
			   uint64_t seq)
{
	uint8_t sig[SHIFT_SIGN_SIG_LEN];
	unsigned char in[MAC_INPUT_MAX];
	size_t len = strlen(text), siglen = sizeof(sig);
	EVP_MD_CTX *md;
	ssize_t n;
	int err = -EIO;

	if (!h->set || !shift_sign_sender_ok(sender))
		return -EINVAL;
	if (!tag_fits(len, size, sender, SHIFT_SIGN_SIG_LEN))
		return -ENOBUFS;
	n = canon(SIG_CONTEXT, name, text, len, sender, seq, in);
	if (n < 0)
		return n;
	md = crypto.md_new();
	if (!md)
		return -ENOMEM;
	if (crypto.sign_init(md, NULL, NULL, NULL, h->priv) == 1 &&
	    crypto.sign(md, sig, &siglen, in, n) == 1 && siglen == sizeof(sig)) {
		append_tag(text, len, sep, HOST_MAGIC, sender, seq, sig, sizeof(sig));
		err = 0;
	}
	crypto.md_free(md);
	return err;
}

int shift_sign_host_check(const struct shift_sign_hosts *h, const char *name,
			  char *text, char sep, char *sender, size_t senderlen,
			  uint64_t *seq)
{
	char who[SHIFT_SIGN_SENDER_MAX];
	uint8_t sig[SHIFT_SIGN_SIG_LEN];
	unsigned char in[MAC_INPUT_MAX];
	const struct shift_sign_pub *p;
	const char *tok;
	EVP_MD_CTX *md;
	uint64_t v;
	ssize_t n;
	int err;

	if (!h->set)
		return -EINVAL;
	err = parse_tag(text, sep, HOST_MAGIC, who, &v, sig, sizeof(sig), &tok);
	if (senderlen)
		snprintf(sender, senderlen, "%s", who);
	if (err)
		return err;
	p = host_find(h, who);
	if (!p)
		return -ENOKEY;
	n = canon(SIG_CONTEXT, name, text, tok - text, who, v, in);
	if (n < 0)
		return -EBADMSG;
	md = crypto.md_new();
	if (!md)
		return -ENOMEM;
	err = crypto.verify_init(md, NULL, NULL, NULL, p->pkey) == 1 &&
	      crypto.verify(md, sig, sizeof(sig), in, n) == 1 ? 0 : -EBADMSG;
	crypto.md_free(md);
	if (err)
		return err;
	text[tok - text] = '\0';
	*seq = v;
	return 0;
}
