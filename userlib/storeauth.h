/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * storeauth.h: the credentials a Redis store is opened with (a Redis 6+
 * ACL user and its password, sent as AUTH USER PASSWORD on every new
 * connection), where they come from, and how a store's address is shown
 * without them.  Shared by libshiftu (store_redis.c, config.c) and shiftmon
 * (tools/shiftmon/store.c), which compiles this file too: no logging, no
 * library state, nothing but -errno and a reason in the caller's buffer.
 *
 * In the URL (documented in libshiftu(7) and shiftmon(8)):
 *
 *	redis://USER:PASSWORD@HOST[:PORT][/DB]
 *	unix://USER:PASSWORD@/PATH
 *
 * USER and PASSWORD are percent-decoded (RFC 3986): "%40" is '@', "%25"
 * is '%'; a ':' in USER must be written %3A.  In redis:// the credentials
 * end at the last '@', in unix:// at the first "@/".  An empty USER
 * (":PASSWORD@") is Redis' "default" user.  Refused, -EINVAL: a USER
 * without ":PASSWORD", an empty password, a bad %-escape, %00, a user or
 * password longer than the limits below.
 *
 * In a file (SHIFTU_STORE_AUTH_FILE, shiftmon --store-auth-file): the
 * first line that is neither empty nor a '#' comment is USER:PASSWORD,
 * taken literally up to the end of the line (no %-decoding; a trailing
 * "\r" is dropped); a second such line is refused.  The file must be a
 * regular file owned by the process' effective user and neither readable
 * nor writable by group or others (as ssh requires of a private key):
 * -EPERM otherwise, with a reason that names the mode or the owner.
 */
#ifndef _SHIFT_STOREAUTH_H
#define _SHIFT_STOREAUTH_H

#include <stdbool.h>
#include <stddef.h>

#define SHIFT_AUTH_USER_MAX	128	/* bytes, with the NUL */
#define SHIFT_AUTH_PASS_MAX	512
#define SHIFT_AUTH_FILE_MAX	4096	/* a longer file is refused */
#define SHIFT_AUTH_DEFAULT_USER	"default"
/* what a password is shown as in a URL */
#define SHIFT_AUTH_REDACTED	"***"

struct shift_auth {
	bool set;			/* else: no AUTH is sent */
	char user[SHIFT_AUTH_USER_MAX];
	char pass[SHIFT_AUTH_PASS_MAX];
};

/*
 * Find the credentials in @url: on success *@ui and *@uilen are the
 * "USER:PASSWORD" part (not decoded) and *@at points just past the '@';
 * false when @url has none (or is not a redis:// or unix:// URL).
 */
bool shift_auth_in_url(const char *url, const char **ui, size_t *uilen,
		       const char **at);

/*
 * Decode @len bytes of "USER:PASSWORD" (from a URL) into @a.  0, or
 * -EINVAL with what was wrong in @why (@whylen bytes; it never holds the
 * password).
 */
int shift_auth_parse_userinfo(const char *ui, size_t len, struct shift_auth *a,
			      char *why, size_t whylen);

/*
 * Read the credentials file @path into @a.  0; -EPERM (owner, mode, not a
 * regular file), -EINVAL (content), -EFBIG, or open()'s -errno; each with
 * the reason in @why (without the password).
 */
int shift_auth_read_file(const char *path, struct shift_auth *a, char *why,
			 size_t whylen);

/*
 * Read the whole of the file @path, a secret, into @buf (@size bytes: at
 * most @size - 2 bytes of content, NUL-terminated) after checking it as
 * above: a regular file (a symbolic link to one is followed), owned by the
 * effective user, no group or other permission.  0; -EPERM with the mode
 * or owner in @why; -EFBIG; -EINVAL (a NUL byte); open()'s or read()'s
 * -errno.  On failure @buf holds nothing of the file.  Shared with the
 * records' key file (recsign.h).
 */
int shift_private_file_read(const char *path, char *buf, size_t size,
			    char *why, size_t whylen);

/*
 * The same for a file that is not secret but must be nobody else's to
 * change (the hosts file of recsign.h): owned by root or the effective
 * user, not writable by group or others.
 */
int shift_public_file_read(const char *path, char *buf, size_t size,
			   char *why, size_t whylen);

/*
 * The same, and then its one line that is neither empty nor a '#' comment
 * (a trailing "\r" dropped) in *@line, within @buf, and its number in
 * *@lineno.  -EINVAL when there is none or a second one, @why naming
 * the line (@noun: "credentials") and what it holds (@what:
 * "USER:PASSWORD").  On failure @buf holds nothing of the file.
 */
int shift_private_file_line(const char *path, char *buf, size_t size, const char *noun,
			    const char *what, char **line, unsigned int *lineno, char *why,
			    size_t whylen);

/* The value of the hex digit @c, -1 if it is none. */
int shift_hexval(char c);

/*
 * @url into @out (@len bytes) with its password, if any, replaced by
 * SHIFT_AUTH_REDACTED: what log lines and messages show.  Works on a
 * malformed URL too (best effort: anything between the first ':' after
 * "//" and the '@' shiftu_auth_in_url() would take is hidden).
 */
void shift_auth_redact(const char *url, char *out, size_t len);

/* Forget the password (explicit_bzero: not optimised away). */
void shift_auth_clear(struct shift_auth *a);

#endif /* _SHIFT_STOREAUTH_H */
