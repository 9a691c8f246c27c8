/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * recsign.h: the signature every record published to the cluster store
 * carries when a cluster key is configured: the shiftmon agents' port
 * records and libshiftu's qp:, mr:, fbreq: and fbrep: values.  Shared by
 * libshiftu (store_seal.c) and shiftmon (tools/shiftmon/agent.c), which
 * compiles this file too, as it does storeauth.c: no logging, no library
 * state but libcrypto's handle, nothing but -errno and a reason in the
 * caller's buffer.
 *
 * The key: a file (SHIFTU_STORE_KEY_FILE, shiftu-run -k, shiftmon
 * --store-key-file) checked as the credentials file is (storeauth.h: a
 * regular file of the effective user, no group or other permission, else
 * -EPERM and the mode or owner named), whose first line that is neither
 * empty nor a '#' comment holds the key in hex, 32 to 128 digits (16 to 64
 * bytes; "openssl rand -hex 32" writes one).  Every host and job of a
 * cluster holds the same key.
 *
 * A signed record is its text, then @sep (a tab in the agents' records,
 * whose readers ignore fields they do not know; a space in libshiftu's
 * values), then one token:
 *
 *	s1/SENDER/SEQ/MAC
 *
 *   SENDER	who signs: 1 to SHIFT_SIGN_SENDER_MAX - 1 bytes of
 *		[A-Za-z0-9._-] (an agent's host name; libshiftu's host name)
 *   SEQ	16 hex digits: the sender's sequence, its CLOCK_REALTIME in
 *		microseconds, strictly increasing per sender process
 *		(shift_sign_seq_next()); compared with serial-number
 *		arithmetic (RFC 1982), so no value is a maximum that pins
 *   MAC	64 hex digits: HMAC-SHA256 under the key of
 *		"shift-rec-v1" NUL NAME NUL TEXT NUL SENDER NUL SEQ (8 bytes,
 *		big endian): NAME is where the record lives (the agent's
 *		"port:<dev>/<port>", libshiftu's key, "qp:GID:QPN"), so a
 *		record cannot be moved to another name, to another sender
 *		or to another sequence; none of the strings holds a NUL, so
 *		the string is read one way only.
 *
 * libcrypto (OpenSSL 3, libcrypto.so.3) is dlopen()ed at the first key
 * read, as libshiftu does hiredis: a process that has no key never loads
 * it.  Context: any thread; the functions keep no state but that handle.
 */
#ifndef _SHIFT_RECSIGN_H
#define _SHIFT_RECSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHIFT_SIGN_KEY_MIN	16	/* bytes */
#define SHIFT_SIGN_KEY_MAX	64
#define SHIFT_SIGN_SENDER_MAX	64	/* bytes, with the NUL */
#define SHIFT_SIGN_MAC_LEN	32	/* HMAC-SHA256 */
/* what shift_sign_append() adds at most: sep, "s1/", sender, '/', seq, '/', mac */
#define SHIFT_SIGN_TAG_MAX	(1 + 3 + SHIFT_SIGN_SENDER_MAX - 1 + 1 + 16 + 1 + \
				 2 * SHIFT_SIGN_MAC_LEN)
/*
 * How far ahead of the reader's clock a sequence may be (a sender's clock
 * a little fast): more is a record from the future, refused, so that
 * even a key holder pins a port for this long at most.
 */
#define SHIFT_SIGN_FUTURE_US	(60 * 1000000ULL)

struct shift_sign_key {
	bool set;			/* else: records are neither signed nor checked */
	size_t len;
	uint8_t key[SHIFT_SIGN_KEY_MAX];
};

/* Is @a after @b (RFC 1982 on 64 bits: within half the space ahead)? */
static inline bool shift_seq_after(uint64_t a, uint64_t b)
{
	return a != b && a - b < (1ULL << 63);
}

/*
 * Read the key file @path into @k (and load libcrypto).  0; -EPERM,
 * -EFBIG, open()'s -errno (storeauth.h's file checks); -EINVAL (no key
 * line, not hex, too short or long, a second key line); -ELIBACC
 * (libcrypto cannot be loaded).  The reason is in @why, never the key.
 */
int shift_sign_key_read(const char *path, struct shift_sign_key *k, char *why,
			size_t whylen);

/* Forget the key (explicit_bzero: not optimised away). */
void shift_sign_key_clear(struct shift_sign_key *k);

/* Is @s a valid SENDER? */
bool shift_sign_sender_ok(const char *s);

/*
 * The next sequence of a sender: its CLOCK_REALTIME in microseconds, or
 * one more than *@last when the clock has not moved past it; *@last is
 * updated (atomically: several threads may sign).
 */
uint64_t shift_sign_seq_next(uint64_t *last);

/* CLOCK_REALTIME in microseconds: what a reader holds a sequence against. */
uint64_t shift_sign_now_us(void);

/*
 * Sign @text (NUL-terminated, in a buffer of @size bytes) as record @name
 * from @sender with sequence @seq: the token is appended after @sep.
 * 0; -ENOBUFS when it does not fit; -EINVAL for a bad @sender or a key not
 * set; -EIO when libcrypto fails.
 */
int shift_sign_append(const struct shift_sign_key *k, const char *name,
		      char *text, size_t size, char sep, const char *sender,
		      uint64_t seq);

/*
 * Check the token at the end of @text (after the last @sep) against the
 * record's @name, and cut it off: @text is then the record as signed.
 * 0, with the sender in @sender (@senderlen bytes) and the sequence in
 * *@seq; -ENOMSG: no token (an unsigned record; @text unchanged);
 * -EBADMSG: a malformed token or a MAC that does not match (@sender holds
 * the claimed sender when the token had a valid one, else "").  The MAC
 * is compared in constant time.
 */
int shift_sign_check(const struct shift_sign_key *k, const char *name,
		     char *text, char sep, char *sender, size_t senderlen,
		     uint64_t *seq);

/*
 * Host keys: the agents' port records signed by the host that owns the
 * port, so that a host speaks for its own ports only, whoever else holds
 * a key (the cluster key above is every host's and every job's: whoever
 * has it can sign as any host).  Each host has a private key, a file
 * checked as the cluster key's is, one line of 64 hex digits (32 bytes:
 * an Ed25519 seed, RFC 8032; "openssl rand -hex 32" writes one); every
 * host reads the cluster's public keys from a hosts file, which anybody
 * may read but only its owner (root or the effective user) may write:
 * lines "HOST HEX [GID ...]", HOST a SENDER above and HEX the 64 hex
 * digits of its raw Ed25519 public key ("shiftmon host-key FILE" prints a
 * host's line), '#' comments and empty lines ignored.  A host must be
 * listed once, and the reader's own entry must be the public key of its
 * private key.  The GIDs, if any, are those the host may name in its
 * records, each an address with an optional prefix length: IPv6
 * ("fe80::5054:ff:fe12:3401", "fd00:1::/64") or IPv4, which stands for
 * its IPv4-mapped GID ("10.0.0.2", "10.0.0.0/24" as ::ffff:10.0.0.0/120),
 * SHIFT_SIGN_HOST_GIDS_MAX at most; a host listed without any may name
 * any GID (shift_sign_host_gid_ok()).
 *
 *	s2/SENDER/SEQ/SIG
 *
 *   SIG	128 hex digits: the Ed25519 signature by SENDER's key of
 *		"shift-rec-v2" NUL NAME NUL TEXT NUL SENDER NUL SEQ (8 bytes,
 *		big endian), checked against SENDER's line of the hosts file
 */
#define SHIFT_SIGN_ED25519_LEN		32	/* a key, either half */
#define SHIFT_SIGN_SIG_LEN		64	/* a signature */
#define SHIFT_SIGN_HOSTS_MAX		16384	/* lines of a hosts file */
#define SHIFT_SIGN_HOSTS_FILE_MAX	(2 << 20)
/* what shift_sign_host_append() adds at most */
#define SHIFT_SIGN_HOST_TAG_MAX	(1 + 3 + SHIFT_SIGN_SENDER_MAX - 1 + 1 + 16 + 1 + \
				 2 * SHIFT_SIGN_SIG_LEN)

#define SHIFT_SIGN_HOST_GIDS_MAX	64	/* GIDs or prefixes on a host's line */

struct shift_sign_gidnet {
	uint8_t addr[16];		/* the prefix, the bits past it zero */
	uint8_t len;			/* its length in bits, 0-128 */
};

struct shift_sign_pub {
	char host[SHIFT_SIGN_SENDER_MAX];
	void *pkey;			/* libcrypto's EVP_PKEY, to verify */
	unsigned int ngid;		/* 0: any GID */
	struct shift_sign_gidnet *gid;
};

struct shift_sign_hosts {
	bool set;			/* else: port records use the cluster key, or none */
	void *priv;			/* this host's EVP_PKEY, to sign */
	unsigned int n;			/* sorted by host, for bsearch() */
	struct shift_sign_pub *pub;
};

/*
 * Read this host's (@self's) private key from @keyfile and the cluster's
 * public keys from @hostsfile into @h (and load libcrypto).  0; -EPERM
 * (a file's owner or mode), -EFBIG, open()'s -errno; -EINVAL (a bad line,
 * named by its number; a host listed twice; more than SHIFT_SIGN_HOSTS_MAX);
 * -ENOKEY (@self not listed, or listed with another key than @keyfile's);
 * -ELIBACC (libcrypto).  The reason is in @why, never the private key.
 */
int shift_sign_hosts_read(const char *keyfile, const char *hostsfile, const char *self,
			  struct shift_sign_hosts *h, char *why, size_t whylen);

/*
 * Whether @host may name @gid (16 bytes) in its records: its line in the
 * hosts file lists no GID, or one of them covers @gid.  False for a host
 * not listed.
 */
bool shift_sign_host_gid_ok(const struct shift_sign_hosts *h, const char *host,
			    const uint8_t *gid);

/* Free what shift_sign_hosts_read() made; @h is then unset. */
void shift_sign_hosts_clear(struct shift_sign_hosts *h);

/*
 * The public key of the private key file @keyfile, in hex, into @hex
 * (2 * SHIFT_SIGN_ED25519_LEN + 1 bytes): a hosts file's line.  0 or as
 * shift_sign_hosts_read().
 */
int shift_sign_host_public(const char *keyfile, char *hex, char *why, size_t whylen);

/* shift_sign_append() and shift_sign_check() with host keys (s2 tokens). */
int shift_sign_host_append(const struct shift_sign_hosts *h, const char *name,
			   char *text, size_t size, char sep, const char *sender,
			   uint64_t seq);
/*
 * As shift_sign_check(); also -ENOKEY when the sender is not in the hosts
 * file (@sender holds it), and -EPROTO when the token is a cluster key's
 * (s1): a host key's reader takes none.
 */
int shift_sign_host_check(const struct shift_sign_hosts *h, const char *name,
			  char *text, char sep, char *sender, size_t senderlen,
			  uint64_t *seq);

#endif /* _SHIFT_RECSIGN_H */
