// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * recsign.c: records signed under the cluster key, and checked
 * (recsign.h).  HMAC-SHA256 is libcrypto's, loaded at the first key read.
 *
 * Context: any thread, may sleep (the key file, dlopen).  No logging:
 * libshiftu and shiftmon each say what went wrong their way.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* types and prototypes only: the functions come from dlsym() */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "recsign.h"
#include "storeauth.h"

#define TAG_MAGIC	"s1/"
#define MAC_CONTEXT	"shift-rec-v1"
/* the longest string a MAC is computed over: a libshiftu value or an
 * agent's record, their names, the sender, the sequence */
#define MAC_INPUT_MAX	4096
#define KEY_FILE_MAX	1024

static struct {
	__typeof__(HMAC) *hmac;
	__typeof__(EVP_sha256) *sha256;
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
	crypto.hmac = (__typeof__(HMAC) *)dlsym(h, "HMAC");
	crypto.sha256 = (__typeof__(EVP_sha256) *)dlsym(h, "EVP_sha256");
	if (!crypto.hmac || !crypto.sha256) {
		snprintf(crypto_why, sizeof(crypto_why),
			 "libcrypto has no HMAC or EVP_sha256");
		crypto_err = -ELIBACC;
		/* the handle stays: nothing else may be loaded in its place */
	}
}

/* The key line @found, hex, into @k. */
static int parse_key(const char *found, struct shift_sign_key *k, char *why, size_t whylen)
{
	size_t n, i;

	n = strlen(found);
	if (n & 1 || n < 2 * SHIFT_SIGN_KEY_MIN || n > 2 * SHIFT_SIGN_KEY_MAX) {
		snprintf(why, whylen,
			 "the key is %zu hex digits: it needs an even number from %d to %d (openssl rand -hex 32)",
			 n, 2 * SHIFT_SIGN_KEY_MIN, 2 * SHIFT_SIGN_KEY_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n / 2; i++) {
		int hi = shift_hexval(found[2 * i]), lo = shift_hexval(found[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(why, whylen, "the key line is not hex");
			shift_sign_key_clear(k);
			return -EINVAL;
		}
		k->key[i] = hi << 4 | lo;
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
	pthread_once(&crypto_once, crypto_load);
	if (crypto_err) {
		snprintf(why, whylen, "%s", crypto_why);
		shift_sign_key_clear(k);
		return crypto_err;
	}
	return 0;
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

/* HMAC-SHA256 of the canonical string (recsign.h) into @mac. */
static int compute(const struct shift_sign_key *k, const char *name,
		   const char *text, size_t textlen, const char *sender,
		   uint64_t seq, uint8_t mac[SHIFT_SIGN_MAC_LEN])
{
	static const char ctx[] = MAC_CONTEXT;
	size_t nl = strlen(name), sl = strlen(sender), off = 0;
	unsigned char in[MAC_INPUT_MAX];
	unsigned int maclen = 0;
	int i;

	if (!k->set || !crypto.hmac)
		return -EINVAL;
	if (sizeof(ctx) + nl + 1 + textlen + 1 + sl + 1 + 8 > sizeof(in))
		return -ENOBUFS;
	memcpy(in, ctx, sizeof(ctx));		/* with its NUL */
	off = sizeof(ctx);
	memcpy(in + off, name, nl + 1);
	off += nl + 1;
	memcpy(in + off, text, textlen);
	off += textlen;
	in[off++] = '\0';
	memcpy(in + off, sender, sl + 1);
	off += sl + 1;
	for (i = 7; i >= 0; i--)
		in[off++] = seq >> (8 * i);
	if (!crypto.hmac(crypto.sha256(), k->key, (int)k->len, in, off, mac, &maclen) ||
	    maclen != SHIFT_SIGN_MAC_LEN)
		return -EIO;
	return 0;
}

int shift_sign_append(const struct shift_sign_key *k, const char *name,
		      char *text, size_t size, char sep, const char *sender,
		      uint64_t seq)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t mac[SHIFT_SIGN_MAC_LEN];
	size_t len = strlen(text), need;
	char *p;
	int err, i;

	if (!shift_sign_sender_ok(sender))
		return -EINVAL;
	need = len + 1 + strlen(TAG_MAGIC) + strlen(sender) + 1 + 16 + 1 +
	       2 * SHIFT_SIGN_MAC_LEN + 1;
	if (need > size)
		return -ENOBUFS;
	err = compute(k, name, text, len, sender, seq, mac);
	if (err)
		return err;
	p = text + len;
	p += sprintf(p, "%c" TAG_MAGIC "%s/%016llx/", sep, sender,
		     (unsigned long long)seq);
	for (i = 0; i < SHIFT_SIGN_MAC_LEN; i++) {
		*p++ = hex[mac[i] >> 4];
		*p++ = hex[mac[i] & 15];
	}
	*p = '\0';
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

int shift_sign_check(const struct shift_sign_key *k, const char *name,
		     char *text, char sep, char *sender, size_t senderlen,
		     uint64_t *seq)
{
	uint8_t mac[SHIFT_SIGN_MAC_LEN], want[SHIFT_SIGN_MAC_LEN];
	char who[SHIFT_SIGN_SENDER_MAX];
	const char *tok, *s, *q, *m;
	uint64_t v = 0;
	size_t n;
	int i, err;

	if (senderlen)
		sender[0] = '\0';
	tok = strrchr(text, sep);
	if (!tok || strncmp(tok + 1, TAG_MAGIC, strlen(TAG_MAGIC)))
		return -ENOMSG;
	s = tok + 1 + strlen(TAG_MAGIC);
	q = strchr(s, '/');
	if (!q || q == s || (size_t)(q - s) >= sizeof(who))
		return -EBADMSG;
	memcpy(who, s, q - s);
	who[q - s] = '\0';
	if (!shift_sign_sender_ok(who))
		return -EBADMSG;
	if (senderlen)
		snprintf(sender, senderlen, "%s", who);
	q++;
	for (n = 0; n < 16; n++) {
		int d = shift_hexval(q[n]);

		if (d < 0)
			return -EBADMSG;
		v = v << 4 | d;
	}
	if (q[16] != '/')
		return -EBADMSG;
	m = q + 17;
	if (strlen(m) != 2 * SHIFT_SIGN_MAC_LEN)
		return -EBADMSG;
	for (i = 0; i < SHIFT_SIGN_MAC_LEN; i++) {
		int hi = shift_hexval(m[2 * i]), lo = shift_hexval(m[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EBADMSG;
		mac[i] = hi << 4 | lo;
	}
	err = compute(k, name, text, tok - text, who, v, want);
	if (err)
		return err == -ENOBUFS ? -EBADMSG : err;
	if (!same_mac(mac, want))
		return -EBADMSG;
	text[tok - text] = '\0';
	*seq = v;
	return 0;
}
