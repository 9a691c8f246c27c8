// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * storeauth.c: the store's credentials, from a URL or from a file only its
 * owner may read, and URLs shown without their password (storeauth.h).
 *
 * Context: any thread, may sleep (the file is read with open/read).  No
 * logging: libshiftu and shiftmon each say what went wrong their way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storeauth.h"

bool shift_auth_in_url(const char *url, const char **ui, size_t *uilen,
		       const char **at)
{
	const char *rest, *p;

	if (!strncmp(url, "redis://", 8)) {
		rest = url + 8;
		/* a password may hold a raw '@' or '/': the last '@' ends it,
		 * and no host or "/DB" has one */
		p = strrchr(rest, '@');
		if (!p)
			return false;
		*at = p + 1;
	} else if (!strncmp(url, "unix://", 7)) {
		rest = url + 7;
		if (*rest == '/')	/* unix:///PATH */
			return false;
		/* a socket path may hold an '@': the first "@/" ends it */
		p = strstr(rest, "@/");
		if (!p)
			return false;
		*at = p + 1;
	} else {
		return false;
	}
	*ui = rest;
	*uilen = p - rest;
	return true;
}

int shift_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* %-decode @len bytes of @s into @out (@size bytes with the NUL). */
static int pct_decode(const char *s, size_t len, char *out, size_t size,
		      const char *what, char *why, size_t whylen)
{
	size_t i, n = 0;
	int hi, lo;
	char c;

	for (i = 0; i < len; i++) {
		c = s[i];
		if (c == '%') {
			hi = i + 2 < len ? shift_hexval(s[i + 1]) : -1;
			lo = hi < 0 ? -1 : shift_hexval(s[i + 2]);
			if (lo < 0) {
				snprintf(why, whylen,
					 "a bad %%-escape in the %s (write '%%' as %%25)", what);
				return -EINVAL;
			}
			c = hi << 4 | lo;
			if (!c) {
				snprintf(why, whylen, "%%00 in the %s", what);
				return -EINVAL;
			}
			i += 2;
		}
		if (n + 1 >= size) {
			snprintf(why, whylen, "the %s is longer than %zu bytes", what,
				 size - 1);
			return -EINVAL;
		}
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* "USER:PASSWORD" (@len bytes, @decode: %-escapes) into @a */
static int split_userinfo(const char *ui, size_t len, bool decode,
			  struct shift_auth *a, char *why, size_t whylen)
{
	const char *colon = memchr(ui, ':', len);
	size_t ulen, plen;
	int err;

	shift_auth_clear(a);
	if (!len) {
		snprintf(why, whylen, "no user and password before '@'");
		return -EINVAL;
	}
	if (!colon) {
		snprintf(why, whylen, "a user without a password (USER:PASSWORD)");
		return -EINVAL;
	}
	ulen = colon - ui;
	plen = len - ulen - 1;
	if (!plen) {
		snprintf(why, whylen, "an empty password");
		return -EINVAL;
	}
	if (decode) {
		err = pct_decode(ui, ulen, a->user, sizeof(a->user), "user", why, whylen);
		if (!err)
			err = pct_decode(colon + 1, plen, a->pass, sizeof(a->pass),
					 "password", why, whylen);
		if (err) {
			shift_auth_clear(a);
			return err;
		}
	} else {
		if (ulen >= sizeof(a->user) || plen >= sizeof(a->pass)) {
			snprintf(why, whylen, "the %s is longer than %zu bytes",
				 ulen >= sizeof(a->user) ? "user" : "password",
				 ulen >= sizeof(a->user) ? sizeof(a->user) - 1
							 : sizeof(a->pass) - 1);
			return -EINVAL;
		}
		memcpy(a->user, ui, ulen);
		a->user[ulen] = '\0';
		memcpy(a->pass, colon + 1, plen);
		a->pass[plen] = '\0';
	}
	if (!a->user[0])
		strcpy(a->user, SHIFT_AUTH_DEFAULT_USER);
	a->set = true;
	return 0;
}

int shift_auth_parse_userinfo(const char *ui, size_t len, struct shift_auth *a,
			      char *why, size_t whylen)
{
	return split_userinfo(ui, len, true, a, why, whylen);
}

/*
 * The one line of @buf (NUL-terminated; cut into lines) that is neither
 * empty nor a '#' comment, its trailing "\r" dropped, in *@found, its
 * number in *@at.  0, or -EINVAL (none, or a second one) with the reason
 * in @why: @noun names the line ("credentials"), @what what it holds
 * ("USER:PASSWORD").
 */
static int one_line(char *buf, const char *noun, const char *what, char **found,
		    unsigned int *at, char *why, size_t whylen)
{
	unsigned int lineno = 0;
	char *line, *next;
	size_t n;

	*found = NULL;
	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		if (*found) {
			snprintf(why, whylen, "line %u: a second %s line (one %s only)",
				 lineno, noun, what);
			return -EINVAL;
		}
		*found = line;
		*at = lineno;
	}
	if (!*found) {
		snprintf(why, whylen, "no %s line", what);
		return -EINVAL;
	}
	return 0;
}

int shift_private_file_line(const char *path, char *buf, size_t size, const char *noun,
			    const char *what, char **line, unsigned int *lineno, char *why,
			    size_t whylen)
{
	int err;

	err = shift_private_file_read(path, buf, size, why, whylen);
	if (err)
		return err;
	err = one_line(buf, noun, what, line, lineno, why, whylen);
	if (err)
		explicit_bzero(buf, size);
	return err;
}

/* The credentials line @found (line @at) into @a. */
static int parse_line(char *found, unsigned int at, struct shift_auth *a, char *why,
		      size_t whylen)
{
	if (split_userinfo(found, strlen(found), false, a, why, whylen)) {
		char tmp[128];

		snprintf(tmp, sizeof(tmp), "%s", why);
		snprintf(why, whylen, "line %u: %s", at, tmp);
		return -EINVAL;
	}
	return 0;
}

/*
 * Read @path into @buf (@size bytes) after checking it: a regular file (a
 * symbolic link is followed: a mounted secret is one; what is checked is
 * the file read, through its descriptor) that is, when @secret, its
 * effective user's and nobody else's to read or write, else root's or the
 * effective user's and nobody else's to write.
 */
static int checked_file_read(const char *path, char *buf, size_t size, bool secret,
			     char *why, size_t whylen)
{
	size_t off = 0;
	struct stat st;
	int fd, err;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open it: %s", strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot stat it: %s", strerror(-err));
		goto close_fd;
	}
	err = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "refused: not a regular file");
		goto close_fd;
	}
	if (secret && st.st_uid != geteuid()) {
		snprintf(why, whylen, "refused: owned by uid %u, not by uid %u (this process)",
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto close_fd;
	}
	if (!secret && st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, whylen, "refused: owned by uid %u: it must be root's or uid %u's",
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto close_fd;
	}
	if (secret && st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(why, whylen,
			 "refused: mode %04o lets group or others at it (chmod 600 it)",
			 (unsigned int)(st.st_mode & 07777));
		goto close_fd;
	}
	if (!secret && st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen,
			 "refused: mode %04o: group or others may write it (chmod go-w it)",
			 (unsigned int)(st.st_mode & 07777));
		goto close_fd;
	}
	while (off < size - 1) {
		n = read(fd, buf + off, size - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			snprintf(why, whylen, "cannot read it: %s", strerror(-err));
			goto wipe;
		}
		if (!n)
			break;
		off += n;
	}
	if (off == size - 1) {
		err = -EFBIG;
		snprintf(why, whylen, "longer than %zu bytes", size - 2);
		goto wipe;
	}
	buf[off] = '\0';
	if (memchr(buf, '\0', off)) {
		err = -EINVAL;
		snprintf(why, whylen, "a NUL byte in it");
		goto wipe;
	}
	close(fd);
	return 0;
wipe:
	explicit_bzero(buf, size);
close_fd:
	close(fd);
	return err;
}

int shift_private_file_read(const char *path, char *buf, size_t size,
			    char *why, size_t whylen)
{
	return checked_file_read(path, buf, size, true, why, whylen);
}

int shift_public_file_read(const char *path, char *buf, size_t size,
			   char *why, size_t whylen)
{
	return checked_file_read(path, buf, size, false, why, whylen);
}

int shift_auth_read_file(const char *path, struct shift_auth *a, char *why,
			 size_t whylen)
{
	char buf[SHIFT_AUTH_FILE_MAX + 2], *line;
	unsigned int at;
	int err;

	shift_auth_clear(a);
	err = shift_private_file_line(path, buf, sizeof(buf), "credentials", "USER:PASSWORD",
				      &line, &at, why, whylen);
	if (err)
		return err;
	err = parse_line(line, at, a, why, whylen);
	explicit_bzero(buf, sizeof(buf));
	return err;
}

void shift_auth_redact(const char *url, char *out, size_t len)
{
	const char *ui, *at, *colon, *p;
	size_t uilen;

	if (!shift_auth_in_url(url, &ui, &uilen, &at)) {
		/* malformed: hide whatever could be a password after "//" */
		p = strstr(url, "//");
		at = p ? strrchr(p, '@') : NULL;
		if (!at) {
			snprintf(out, len, "%s", url);
			return;
		}
		ui = p + 2;
		uilen = at - ui;
		at++;
	}
	colon = memchr(ui, ':', uilen);
	if (!colon) {	/* no password to hide */
		snprintf(out, len, "%s", url);
		return;
	}
	snprintf(out, len, "%.*s:%s@%s", (int)(colon - url), url, SHIFT_AUTH_REDACTED, at);
}

void shift_auth_clear(struct shift_auth *a)
{
	explicit_bzero(a, sizeof(*a));
}
