// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * store_local.c: the store's LOCAL backend (store.h), for processes on
 * one host: a directory that only we can write, one file per key,
 * each value written to a temporary file and renamed over the key's.
 *
 * Context: the library's background thread, which may block for a bounded
 * time.  Nothing here runs on the verbs fast path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"

/* SHIFTU_KV_PREFIX escaped, then "%XX" per byte of key at worst */
#define FILE_PREFIX		"shiftu%3Av1%3A"
#define FILE_NAME_LEN		(sizeof(FILE_PREFIX) - 1 + 3 * SHIFTU_KV_KEY_MAX + 1)
_Static_assert(FILE_NAME_LEN <= NAME_MAX + 1,
	       "SHIFTU_KV_KEY_MAX too large for a LOCAL file name");
/* temporary files start with '.', which no escaped key does */
#define TMP_FMT			".tmp-%d-%u"

static void file_name(const char *key, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	char sk[STORED_KEY_LEN];
	const unsigned char *p;

	stored_key(key, sk);
	for (p = (const unsigned char *)sk; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-') {
			*out++ = *p;
		} else {
			*out++ = '%';
			*out++ = hex[*p >> 4];
			*out++ = hex[*p & 15];
		}
	}
	*out = '\0';
}

/*
 * Open (creating it if missing) the directory and check that nobody else
 * can plant or swap files in it: it holds what peers will connect to.
 */
int shiftu_local_open(struct shiftu_kv *kv, const char *cfg_dir)
{
	char dir[PATH_MAX];
	struct stat st;
	int fd;

	if (cfg_dir && *cfg_dir)
		snprintf(dir, sizeof(dir), "%s", cfg_dir);
	else
		snprintf(dir, sizeof(dir), "/dev/shm/shiftu-%u", (unsigned int)geteuid());
	snprintf(kv->desc, sizeof(kv->desc), "local:%s", dir);

	if (mkdir(dir, 0700) && errno != EEXIST) {
		fd = -errno;
		shiftu_warn("store %s: cannot create the directory: %s",
			    kv->desc, strerror(-fd));
		return fd;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR) {
			shiftu_warn("store %s: refused: not a directory or a symbolic link",
				    kv->desc);
			return -EPERM;
		}
		fd = -errno;
		shiftu_warn("store %s: cannot open the directory: %s",
			    kv->desc, strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		shiftu_warn("store %s: refused: owned by uid %u, mode %03o (need uid %u, not group or other writable)",
			    kv->desc, (unsigned int)st.st_uid,
			    (unsigned int)(st.st_mode & 07777), (unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	kv->dirfd = fd;
	return 0;
}

static unsigned int tmp_seq;	/* atomic: temporary names of this process */

int shiftu_local_put(struct shiftu_kv *kv, const char *key, const char *val)
{
	char name[FILE_NAME_LEN], tmp[64];
	size_t len = strlen(val), off = 0;
	int fd, err, tries;

	file_name(key, name);
	/* unique within the process; EEXIST: left by a dead process whose
	 * pid came back, take the next number */
	for (tries = 0;; tries++) {
		snprintf(tmp, sizeof(tmp), TMP_FMT, (int)getpid(),
			 __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_RELAXED));
		fd = openat(kv->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			    O_NOFOLLOW, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries == 8)
			return -errno;
	}
	while (off < len) {
		ssize_t n = write(fd, val + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto remove_tmp;
		}
		off += n;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		goto remove_tmp;
	}
	fd = -1;
	/* the switch readers see: the whole old value or the whole new one */
	if (renameat(kv->dirfd, tmp, kv->dirfd, name)) {
		err = -errno;
		goto remove_tmp;
	}
	return 0;

remove_tmp:
	if (fd >= 0)
		close(fd);
	unlinkat(kv->dirfd, tmp, 0);
	return err;
}

int shiftu_local_get(struct shiftu_kv *kv, const char *key, char *val, size_t len)
{
	char name[FILE_NAME_LEN], buf[SHIFTU_KV_VAL_MAX + 2];
	size_t off = 0;
	int fd, err;

	file_name(key, name);
	fd = openat(kv->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* one byte more than a value may have, to tell a too long file */
	while (off < sizeof(buf)) {
		ssize_t n = read(fd, buf + off, sizeof(buf) - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			return err;
		}
		if (!n)
			break;
		off += n;
	}
	close(fd);
	return copy_out(buf, off, val, len);
}

int shiftu_local_del(struct shiftu_kv *kv, const char *key)
{
	char name[FILE_NAME_LEN];

	file_name(key, name);
	return unlinkat(kv->dirfd, name, 0) ? -errno : 0;
}
