// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shiftu_store: libshiftu's key-value store (userlib/store.h) keeps, finds
 * and forgets values in a local directory and in a real redis-server that
 * the test starts, alone or in batches, survives a server restart, and
 * fails fast, never hangs, when the server is gone or stuck.  With ACL
 * users (Redis 6+) it authenticates on every connection, from the URL or
 * from a credentials file only its owner may read, and a refusal (a wrong
 * password, none given, an ACL without the command, a file others may
 * read) is one warning naming the store and the reason, never the
 * password.
 *
 * Each TEST runs in its own process (kselftest_harness forks).  The Redis
 * tests SKIP, with the reason, when redis-server is not installed.
 */
#define _GNU_SOURCE		/* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "store.h"

#include "kselftest_harness.h"

static void quiet(void)
{
	shiftu_log_setup(SHIFTU_LOG_OFF, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) && errno != ENOENT ? -1 : 0;
}

static void rm_tree(const char *dir)
{
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		fprintf(stderr, "# cannot remove %s\n", dir);
}

/*
 * A batch of @n PUTs of "k<i>" = "v<i>", one invalid key among them, then
 * a batch of GETs of the same keys and of one never set, then one of DELs
 * with a PUT and GETs after them: each request gets what the single call
 * would have given.  Shared by LOCAL and REDIS.
 */
static void batch_check(struct __test_metadata *_metadata, struct shiftu_kv *kv)
{
	enum { N = 100 };
	static char keys[N + 1][16], vals[N + 1][16], got[N + 1][16];
	struct shiftu_kv_req r[N + 1];
	int i;

	for (i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		snprintf(vals[i], sizeof(vals[i]), "v%d", i);
		r[i] = (struct shiftu_kv_req){ .op = SHIFTU_KV_PUT, .key = keys[i],
					       .val = vals[i] };
	}
	r[N / 2].key = "bad key";
	ASSERT_EQ(0, shiftu_kv_batch(kv, r, N));
	for (i = 0; i < N; i++)
		EXPECT_EQ(i == N / 2 ? -EINVAL : 0, r[i].ret);
	EXPECT_EQ(0, shiftu_kv_get(kv, "k99", got[0], sizeof(got[0])));
	EXPECT_STREQ("v99", got[0]);

	for (i = 0; i <= N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		got[i][0] = '\0';
		r[i] = (struct shiftu_kv_req){ .op = SHIFTU_KV_GET, .key = keys[i],
					       .val = got[i], .len = sizeof(got[i]) };
	}
	r[7].len = 2;		/* "v7" needs 3 */
	ASSERT_EQ(0, shiftu_kv_batch(kv, r, N + 1));
	for (i = 0; i <= N; i++) {
		if (i == N / 2 || i == N) {
			EXPECT_EQ(-ENOENT, r[i].ret);
		} else if (i == 7) {
			EXPECT_EQ(-ENOBUFS, r[i].ret);
		} else {
			EXPECT_EQ(0, r[i].ret);
			EXPECT_STREQ(vals[i], got[i]);
		}
	}
	/* nothing to send is no error */
	EXPECT_EQ(0, shiftu_kv_batch(kv, r, 0));

	/*
	 * DELs, and a PUT and a GET of a deleted key after its DEL in the
	 * same batch: in order (the shadow thread deletes a forgotten key
	 * before a new record under the same name).
	 */
	r[0] = (struct shiftu_kv_req){ .op = SHIFTU_KV_DEL, .key = "k1" };
	r[1] = (struct shiftu_kv_req){ .op = SHIFTU_KV_DEL, .key = "k2" };
	r[2] = (struct shiftu_kv_req){ .op = SHIFTU_KV_DEL, .key = "k2" };
	r[3] = (struct shiftu_kv_req){ .op = SHIFTU_KV_DEL, .key = "bad key" };
	r[4] = (struct shiftu_kv_req){ .op = SHIFTU_KV_PUT, .key = "k1", .val = "again" };
	r[5] = (struct shiftu_kv_req){ .op = SHIFTU_KV_GET, .key = "k1", .val = got[0],
				       .len = sizeof(got[0]) };
	r[6] = (struct shiftu_kv_req){ .op = SHIFTU_KV_GET, .key = "k2", .val = got[1],
				       .len = sizeof(got[1]) };
	ASSERT_EQ(0, shiftu_kv_batch(kv, r, 7));
	EXPECT_EQ(0, r[0].ret);
	EXPECT_EQ(0, r[1].ret);
	EXPECT_EQ(-ENOENT, r[2].ret);
	EXPECT_EQ(-EINVAL, r[3].ret);
	EXPECT_EQ(0, r[4].ret);
	EXPECT_EQ(0, r[5].ret);
	EXPECT_STREQ("again", got[0]);
	EXPECT_EQ(-ENOENT, r[6].ret);
}

/* ---- LOCAL ---- */

FIXTURE(local) {
	char tmp[64];
	struct shiftu_store cfg;
	struct shiftu_kv *kv;
};

FIXTURE_SETUP(local)
{
	quiet();
	strcpy(self->tmp, "/tmp/shiftu_store.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	ASSERT_EQ(0, shiftu_parse_store("local", &self->cfg));
	snprintf(self->cfg.dir, sizeof(self->cfg.dir), "%s/kv", self->tmp);
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &self->kv));
}

FIXTURE_TEARDOWN(local)
{
	shiftu_kv_close(self->kv);
	rm_tree(self->tmp);
}

TEST_F(local, put_get_del)
{
	char val[64], path[PATH_MAX + 64];
	struct stat st;

	ASSERT_EQ(0, stat(self->cfg.dir, &st));
	EXPECT_EQ(0700, st.st_mode & 07777);
	snprintf(path, sizeof(path), "local:%s", self->cfg.dir);
	EXPECT_STREQ(path, shiftu_kv_describe(self->kv));

	EXPECT_EQ(-ENOENT, shiftu_kv_get(self->kv, "qp:fe80::1:17", val, sizeof(val)));
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "qp:fe80::1:17", "qpn=17 psn=42"));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_STREQ("qpn=17 psn=42", val);
	/* the layout: prefixed, escaped */
	snprintf(path, sizeof(path), "%s/shiftu%%3Av1%%3Aqp%%3Afe80%%3A%%3A1%%3A17",
		 self->cfg.dir);
	EXPECT_EQ(0, access(path, F_OK));

	ASSERT_EQ(0, shiftu_kv_put(self->kv, "qp:fe80::1:17", "second"));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_STREQ("second", val);
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "empty", ""));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "empty", val, sizeof(val)));
	EXPECT_STREQ("", val);

	EXPECT_EQ(0, shiftu_kv_del(self->kv, "qp:fe80::1:17"));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(self->kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_EQ(-ENOENT, shiftu_kv_del(self->kv, "qp:fe80::1:17"));
	EXPECT_EQ(0, access(self->cfg.dir, F_OK));
}

/* A batch: each request answered as alone (store.h). */
TEST_F(local, batch)
{
	batch_check(_metadata, self->kv);
}

/* Keys that escape to odd names stay apart; no temporary file is left. */
TEST_F(local, names)
{
	static const char *const keys[] = { ".", "..", "a/b", "a%2Fb", "%", "~x",
					    "a.b_c-d" };
	char val[32];
	unsigned int i;
	unsigned int files = 0;
	struct dirent *de;
	DIR *d;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ASSERT_EQ(0, shiftu_kv_put(self->kv, keys[i], keys[i]));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		ASSERT_EQ(0, shiftu_kv_get(self->kv, keys[i], val, sizeof(val)));
		EXPECT_STREQ(keys[i], val);
	}
	d = opendir(self->cfg.dir);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		EXPECT_EQ(0, strncmp(de->d_name, "shiftu%3Av1%3A", 14)) {
			TH_LOG("unexpected file %s", de->d_name);
		}
		files++;
	}
	closedir(d);
	EXPECT_EQ(sizeof(keys) / sizeof(keys[0]), files);
}

TEST_F(local, limits)
{
	char key[SHIFTU_KV_KEY_MAX + 2], big[SHIFTU_KV_VAL_MAX + 2], val[SHIFTU_KV_VAL_MAX + 1];

	/* keys: printable, no space, 1..SHIFTU_KV_KEY_MAX */
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "", "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "a b", "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "a\tb", "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "a\nb", "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "caf\xc3\xa9", "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, NULL, "v"));
	EXPECT_EQ(-EINVAL, shiftu_kv_get(self->kv, "a b", val, sizeof(val)));
	EXPECT_EQ(-EINVAL, shiftu_kv_del(self->kv, "a b"));
	memset(key, '%', SHIFTU_KV_KEY_MAX);	/* the worst case to escape */
	key[SHIFTU_KV_KEY_MAX] = '\0';
	EXPECT_EQ(0, shiftu_kv_put(self->kv, key, "longest"));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, key, val, sizeof(val)));
	EXPECT_STREQ("longest", val);
	key[SHIFTU_KV_KEY_MAX] = 'x';
	key[SHIFTU_KV_KEY_MAX + 1] = '\0';
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, key, "v"));

	/* values: printable (space too), up to SHIFTU_KV_VAL_MAX */
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "k", "a\nb"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "k", "\x7f"));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "k", NULL));
	memset(big, 'v', SHIFTU_KV_VAL_MAX);
	big[SHIFTU_KV_VAL_MAX] = '\0';
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "k", big));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "k", val, sizeof(val)));
	EXPECT_EQ(SHIFTU_KV_VAL_MAX, strlen(val));
	EXPECT_EQ(-ENOBUFS, shiftu_kv_get(self->kv, "k", val, SHIFTU_KV_VAL_MAX));
	EXPECT_EQ(-ENOBUFS, shiftu_kv_get(self->kv, "k", val, 0));
	big[SHIFTU_KV_VAL_MAX] = 'v';
	big[SHIFTU_KV_VAL_MAX + 1] = '\0';
	EXPECT_EQ(-EINVAL, shiftu_kv_put(self->kv, "k", big));
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "k", "abc"));
	EXPECT_EQ(-ENOBUFS, shiftu_kv_get(self->kv, "k", val, 3));
	EXPECT_EQ(0, shiftu_kv_get(self->kv, "k", val, 4));
}

/* A file someone else put there is not handed out as a value. */
TEST_F(local, foreign_value)
{
	char path[PATH_MAX + 64], val[16];
	int fd;

	snprintf(path, sizeof(path), "%s/shiftu%%3Av1%%3Abin", self->cfg.dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(3, write(fd, "a\0b", 3));
	close(fd);
	EXPECT_EQ(-EBADMSG, shiftu_kv_get(self->kv, "bin", val, sizeof(val)));
}

TEST_F(local, second_handle)
{
	struct shiftu_kv *kv2;
	char val[32];

	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv2));
	ASSERT_EQ(0, shiftu_kv_put(self->kv, "mr:1", "rkey=7"));
	ASSERT_EQ(0, shiftu_kv_get(kv2, "mr:1", val, sizeof(val)));
	EXPECT_STREQ("rkey=7", val);
	ASSERT_EQ(0, shiftu_kv_put(kv2, "mr:1", "rkey=8"));
	ASSERT_EQ(0, shiftu_kv_get(self->kv, "mr:1", val, sizeof(val)));
	EXPECT_STREQ("rkey=8", val);
	ASSERT_EQ(0, shiftu_kv_del(kv2, "mr:1"));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(self->kv, "mr:1", val, sizeof(val)));
	shiftu_kv_close(kv2);
}

/* One warn line, -EPERM, for a directory others could write or swap. */
TEST_F(local, bad_permissions)
{
	char log[PATH_MAX], link[PATH_MAX], buf[1024];
	struct shiftu_store cfg = self->cfg;
	struct shiftu_kv *kv = NULL;
	int fd, lines = 0;
	ssize_t n;

	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_WARN, log));

	ASSERT_EQ(0, chmod(self->cfg.dir, 0770));
	EXPECT_EQ(-EPERM, shiftu_kv_open(&cfg, &kv));
	ASSERT_EQ(0, chmod(self->cfg.dir, 0703));
	EXPECT_EQ(-EPERM, shiftu_kv_open(&cfg, &kv));
	ASSERT_EQ(0, chmod(self->cfg.dir, 0700));

	snprintf(link, sizeof(link), "%s/link", self->tmp);
	ASSERT_EQ(0, symlink(self->cfg.dir, link));
	strcpy(cfg.dir, link);
	EXPECT_EQ(-EPERM, shiftu_kv_open(&cfg, &kv));
	EXPECT_EQ(NULL, kv);

	/* another user's: only root can make one here */
	if (geteuid() == 0) {
		snprintf(cfg.dir, sizeof(cfg.dir), "%s/other", self->tmp);
		ASSERT_EQ(0, mkdir(cfg.dir, 0700));
		ASSERT_EQ(0, chown(cfg.dir, 65534, 65534));
		EXPECT_EQ(-EPERM, shiftu_kv_open(&cfg, &kv));
		lines--;
	}

	fd = open(log, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	EXPECT_EQ(3, lines);
	EXPECT_NE(NULL, strstr(buf, "refused"));

	/* the default directory is per user */
	snprintf(link, sizeof(link), "/dev/shm/shiftu-%u", (unsigned int)geteuid());
	cfg.dir[0] = '\0';
	if (!access("/dev/shm", W_OK) && access(link, F_OK)) {
		EXPECT_EQ(0, shiftu_kv_open(&cfg, &kv));
		if (kv) {
			EXPECT_EQ(0, strcmp(shiftu_kv_describe(kv) + 6, link));
			shiftu_kv_close(kv);
		}
		rmdir(link);
	}
}

TEST(none)
{
	struct shiftu_store cfg;
	struct shiftu_kv *kv = NULL;

	quiet();
	ASSERT_EQ(0, shiftu_parse_store("none", &cfg));
	EXPECT_EQ(-ENOTCONN, shiftu_kv_open(&cfg, &kv));
	EXPECT_EQ(NULL, kv);
}

/* ---- REDIS ---- */

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd, port = -1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static bool in_path(const char *prog)
{
	char path[PATH_MAX], *dirs, *d, *save = NULL;
	const char *env = getenv("PATH");
	bool found = false;

	dirs = strdup(env ? env : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/%s", d, prog);
		found = !access(path, X_OK);
	}
	free(dirs);
	return found;
}

/* "+PONG" to a PING on a fresh connection, within 200 ms ("-NOAUTH" from
 * a server whose default user is off) */
static bool redis_answers(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_usec = 200000 };
	char buf[16] = "";
	bool ok = false;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, sizeof(buf) - 1) > 0)
		ok = !strncmp(buf, "+PONG", 5) || !strncmp(buf, "-NOAUTH", 7);
	close(fd);
	return ok;
}

FIXTURE(redis) {
	bool acl;			/* the next start: with ACL users */
	char skip[128];
	char tmp[64];
	char sock[PATH_MAX];
	int port;
	pid_t pid;
	struct shiftu_store cfg;
};

#define ACL_PASS	"S3cr3t-P4ss"

static pid_t redis_start(struct __test_metadata *_metadata,
			 FIXTURE_DATA(redis) *self)
{
	char port[8];
	pid_t pid;
	int i;

	snprintf(port, sizeof(port), "%d", self->port);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (self->acl)
			/* no default user; shiftu: the library's keys only;
			 * reader: may read them, not write */
			execlp("redis-server", "redis-server", "--port", port,
			       "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			       "--dir", self->tmp, "--unixsocket", self->sock,
			       "--unixsocketperm", "700", "--daemonize", "no",
			       "--user", "default", "off",
			       "--user", "shiftu", "on", ">" ACL_PASS, "~shiftu:v1:*",
			       "+get", "+set", "+del",
			       "--user", "reader", "on", ">" ACL_PASS, "~shiftu:v1:*", "+get",
			       NULL);
		else
			execlp("redis-server", "redis-server", "--port", port,
			       "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			       "--dir", self->tmp, "--unixsocket", self->sock,
			       "--unixsocketperm", "700", "--daemonize", "no", NULL);
		_exit(127);
	}
	for (i = 0; i < 100 && !redis_answers(self->port); i++)
		usleep(50000);
	ASSERT_TRUE(redis_answers(self->port)) {
		TH_LOG("redis-server on port %d does not answer", self->port);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return pid;
}

static void redis_stop(FIXTURE_DATA(redis) *self)
{
	if (self->pid > 0) {
		kill(self->pid, SIGCONT);
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	self->pid = 0;
}

FIXTURE_SETUP(redis)
{
	char url[64];

	quiet();
	if (!in_path("redis-server")) {
		snprintf(self->skip, sizeof(self->skip),
			 "redis-server not installed (apt-get install redis-server)");
		return;
	}
	strcpy(self->tmp, "/tmp/shiftu_redis.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	snprintf(self->sock, sizeof(self->sock), "%s/redis.sock", self->tmp);
	self->port = free_port();
	ASSERT_LT(0, self->port);
	self->pid = redis_start(_metadata, self);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", self->port);
	ASSERT_EQ(0, shiftu_parse_store(url, &self->cfg));
}

FIXTURE_TEARDOWN(redis)
{
	redis_stop(self);
	if (self->tmp[0])
		rm_tree(self->tmp);
}

#define NEED_REDIS() do {						\
	if (self->skip[0])						\
		SKIP(return, "%s", self->skip);				\
} while (0)

TEST_F(redis, put_get_del)
{
	struct shiftu_kv *kv;
	char val[64], desc[64];

	NEED_REDIS();
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	snprintf(desc, sizeof(desc), "redis://127.0.0.1:%d", self->port);
	EXPECT_STREQ(desc, shiftu_kv_describe(kv));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(kv, "qp:fe80::1:17", val, sizeof(val)));
	ASSERT_EQ(0, shiftu_kv_put(kv, "qp:fe80::1:17", "qpn=17 psn=42"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_STREQ("qpn=17 psn=42", val);
	ASSERT_EQ(0, shiftu_kv_put(kv, "qp:fe80::1:17", "second"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_STREQ("second", val);
	EXPECT_EQ(-ENOBUFS, shiftu_kv_get(kv, "qp:fe80::1:17", val, 6));
	EXPECT_EQ(-EINVAL, shiftu_kv_put(kv, "a b", "v"));
	EXPECT_EQ(0, shiftu_kv_del(kv, "qp:fe80::1:17"));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(kv, "qp:fe80::1:17", val, sizeof(val)));
	EXPECT_EQ(-ENOENT, shiftu_kv_del(kv, "qp:fe80::1:17"));
	shiftu_kv_close(kv);
}

/* Written through one handle (TCP), read through another (Unix socket),
 * stored under the prefix, next to a shiftmon key that stays untouched. */
TEST_F(redis, two_handles)
{
	struct shiftu_store ucfg;
	struct shiftu_kv *a, *b;
	char url[PATH_MAX + 8], val[64];

	NEED_REDIS();
	snprintf(url, sizeof(url), "unix:%s", self->sock);
	ASSERT_EQ(0, shiftu_parse_store(url, &ucfg));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &a));
	ASSERT_EQ(0, shiftu_kv_open(&ucfg, &b));
	EXPECT_STREQ(url, shiftu_kv_describe(b));
	ASSERT_EQ(0, shiftu_kv_put(a, "mr:1", "rkey=7"));
	ASSERT_EQ(0, shiftu_kv_get(b, "mr:1", val, sizeof(val)));
	EXPECT_STREQ("rkey=7", val);

	/* as another client sees it: "shiftu:v1:" + key, and keys
	 * without the prefix (shiftmon's) are not ours */
	if (in_path("redis-cli")) {
		char cmd[128];
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "redis-cli -p %d GET shiftu:v1:mr:1 && redis-cli -p %d SET mr:2 x",
			 self->port, self->port);
		p = popen(cmd, "r");
		ASSERT_NE(NULL, p);
		EXPECT_NE(NULL, fgets(val, sizeof(val), p));
		EXPECT_STREQ("rkey=7\n", val);
		EXPECT_NE(NULL, fgets(val, sizeof(val), p));
		EXPECT_STREQ("OK\n", val);
		pclose(p);
		EXPECT_EQ(-ENOENT, shiftu_kv_get(a, "mr:2", val, sizeof(val)));
	}
	ASSERT_EQ(0, shiftu_kv_del(b, "mr:1"));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(a, "mr:1", val, sizeof(val)));
	shiftu_kv_close(a);
	shiftu_kv_close(b);
}

TEST_F(redis, restart)
{
	struct shiftu_kv *kv;
	char val[64];
	double t;
	int i;

	NEED_REDIS();
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "before"));

	/* restarted: the next call reconnects and works (the data is gone:
	 * no persistence) */
	redis_stop(self);
	self->pid = redis_start(_metadata, self);
	EXPECT_EQ(-ENOENT, shiftu_kv_get(kv, "k", val, sizeof(val)));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "after"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	EXPECT_STREQ("after", val);

	/* stopped: every call fails fast */
	redis_stop(self);
	for (i = 0; i < 3; i++) {
		int err;

		t = now();
		err = i == 0 ? shiftu_kv_put(kv, "k", "v") :
		      i == 1 ? shiftu_kv_get(kv, "k", val, sizeof(val)) :
			       shiftu_kv_del(kv, "k");
		EXPECT_EQ(-ECONNREFUSED, err) {
			TH_LOG("call %d: %s", i, strerror(-err));
		}
		EXPECT_GT(2.0, now() - t);
	}

	/* back again: the handle works once more */
	self->pid = redis_start(_metadata, self);
	EXPECT_EQ(0, shiftu_kv_put(kv, "k", "again"));
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	EXPECT_STREQ("again", val);
	shiftu_kv_close(kv);
}

/*
 * A batch is one pipeline: each request answered as alone; after a
 * restart the batch reconnects and is sent again; a stopped server costs
 * the single calls' bound, not more, and every request says why.
 */
TEST_F(redis, batch)
{
	struct shiftu_kv_req r[2];
	struct shiftu_kv *kv;
	char val[64];
	double t;

	NEED_REDIS();
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	batch_check(_metadata, kv);

	redis_stop(self);
	self->pid = redis_start(_metadata, self);
	r[0] = (struct shiftu_kv_req){ .op = SHIFTU_KV_PUT, .key = "a", .val = "1" };
	r[1] = (struct shiftu_kv_req){ .op = SHIFTU_KV_GET, .key = "a", .val = val,
				       .len = sizeof(val) };
	ASSERT_EQ(0, shiftu_kv_batch(kv, r, 2));
	EXPECT_EQ(0, r[0].ret);
	EXPECT_EQ(0, r[1].ret);
	EXPECT_STREQ("1", val);

	ASSERT_EQ(0, kill(self->pid, SIGSTOP));
	t = now();
	EXPECT_EQ(-ETIMEDOUT, shiftu_kv_batch(kv, r, 2));
	EXPECT_EQ(-ETIMEDOUT, r[0].ret);
	EXPECT_EQ(-ETIMEDOUT, r[1].ret);
	EXPECT_GT(3.5, now() - t);
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	EXPECT_EQ(0, shiftu_kv_batch(kv, r, 2));
	EXPECT_EQ(0, r[1].ret);
	shiftu_kv_close(kv);
}

/* A server that accepts but never answers costs seconds, not forever. */
TEST_F(redis, stuck)
{
	struct shiftu_kv *kv;
	char val[64];
	double t;
	int err;

	NEED_REDIS();
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "v"));
	ASSERT_EQ(0, kill(self->pid, SIGSTOP));
	t = now();
	err = shiftu_kv_get(kv, "k", val, sizeof(val));
	EXPECT_EQ(-ETIMEDOUT, err) {
		TH_LOG("%s", strerror(-err));
	}
	/* a timed-out command, one reconnect, one more timed-out command */
	EXPECT_GT(3.5, now() - t);
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	EXPECT_STREQ("v", val);
	shiftu_kv_close(kv);
}

/* A handle whose server goes away logs one warning, not one per call. */
/* Stop the server now and let it go on after @ms (a child does). */
static pid_t pause_server(pid_t server, unsigned int ms)
{
	pid_t waker;

	if (kill(server, SIGSTOP))
		return -1;
	waker = fork();
	if (!waker) {
		usleep(ms * 1000);
		kill(server, SIGCONT);
		_exit(0);
	}
	return waker;
}

/* The log at @path, whole, into @buf; its length, or -1. */
static ssize_t read_log(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * A server that answers a command late (after the timeout, as a starved
 * host does) but in time for the call's second try: the call works, with
 * an info line and no warning.  One that does not answer this call at
 * all is slow, not gone, until it has been silent for SHIFTU_KV_SLOW_MS:
 * the call fails, without a warning either.
 */
TEST_F(redis, slow_no_warning)
{
	char log[PATH_MAX], buf[8192], val[8];
	struct shiftu_kv *kv;
	ssize_t n;
	pid_t waker;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_INFO, log));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "v"));
	waker = pause_server(self->pid, 1300);
	ASSERT_LE(0, waker);
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	EXPECT_STREQ("v", val);
	waitpid(waker, NULL, 0);

	ASSERT_EQ(0, kill(self->pid, SIGSTOP));
	EXPECT_EQ(-ETIMEDOUT, shiftu_kv_get(kv, "k", val, sizeof(val)));
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));

	n = read_log(log, buf, sizeof(buf));
	ASSERT_LE(0, n);
	EXPECT_NE(NULL, strstr(buf, "trying again on a new connection")) {
		TH_LOG("%s", buf);
	}
	EXPECT_NE(NULL, strstr(buf, "(slow: no answer for")) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(NULL, strstr(buf, ": warn: ")) {
		TH_LOG("%s", buf);
	}
	shiftu_kv_close(kv);
}

/*
 * A server that has been answering slowly (600 ms: a busy host's) is given
 * three times that: its next answer, 1.4 s late, is taken on the same
 * connection, not abandoned after SHIFTU_KV_TIMEOUT_MS and asked for again
 * on a new one.
 */
TEST_F(redis, slow_server_paced)
{
	char log[PATH_MAX], buf[8192], val[8];
	struct shiftu_kv *kv;
	ssize_t n;
	pid_t waker;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_INFO, log));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "v"));
	waker = pause_server(self->pid, 600);
	ASSERT_LE(0, waker);
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	waitpid(waker, NULL, 0);
	waker = pause_server(self->pid, 1400);
	ASSERT_LE(0, waker);
	EXPECT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	EXPECT_STREQ("v", val);
	waitpid(waker, NULL, 0);

	n = read_log(log, buf, sizeof(buf));
	ASSERT_LE(0, n);
	EXPECT_EQ(NULL, strstr(buf, "trying again on a new connection")) {
		TH_LOG("%s", buf);
	}
	shiftu_kv_close(kv);
}

TEST_F(redis, one_warning)
{
	char log[PATH_MAX], buf[4096], val[8];
	struct shiftu_kv *kv;
	int fd, lines = 0, i;
	ssize_t n;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_WARN, log));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	redis_stop(self);
	for (i = 0; i < 5; i++)
		EXPECT_GT(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	fd = open(log, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	EXPECT_EQ(1, lines) {
		TH_LOG("%s", buf);
	}
	shiftu_kv_close(kv);
}

/* ---- REDIS with ACL users ---- */

/* Restart the fixture's server with ACL users (redis_start()). */
static void acl_restart(struct __test_metadata *_metadata, FIXTURE_DATA(redis) *self)
{
	redis_stop(self);
	self->acl = true;
	self->pid = redis_start(_metadata, self);
}

/* @url parsed into @cfg, as "redis://USER:PASS@127.0.0.1:PORT" */
static void acl_url(struct __test_metadata *_metadata, FIXTURE_DATA(redis) *self,
		    const char *user, const char *pass, struct shiftu_store *cfg)
{
	char url[256];

	snprintf(url, sizeof(url), "redis://%s:%s@127.0.0.1:%d", user, pass, self->port);
	ASSERT_EQ(0, shiftu_parse_store(url, cfg));
}

/* lines of @buf that contain @what */
static int count_lines(const char *buf, const char *what)
{
	const char *p = buf, *eol;
	int n = 0;

	for (; *p; p = eol + 1) {
		eol = strchrnul(p, '\n');
		if (memmem(p, eol - p, what, strlen(what)))
			n++;
		if (!*eol)
			break;
	}
	return n;
}

/*
 * The right user and password: the library's keys are written and read,
 * over TCP and over the Unix socket, and again after the server restarts
 * (a reconnect authenticates again).  Nothing logs the password, not even
 * at debug.
 */
TEST_F(redis, acl_user)
{
	char log[PATH_MAX], buf[16384], val[64], url[PATH_MAX + 64];
	struct shiftu_store ucfg;
	struct shiftu_kv *kv, *ukv;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_DEBUG, log));
	acl_restart(_metadata, self);
	acl_url(_metadata, self, "shiftu", ACL_PASS, &self->cfg);
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "qp:1", "psn=1"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "qp:1", val, sizeof(val)));
	EXPECT_STREQ("psn=1", val);
	batch_check(_metadata, kv);

	snprintf(url, sizeof(url), "unix://shiftu:%s@%s", ACL_PASS, self->sock);
	ASSERT_EQ(0, shiftu_parse_store(url, &ucfg));
	ASSERT_EQ(0, shiftu_kv_open(&ucfg, &ukv));
	ASSERT_EQ(0, shiftu_kv_get(ukv, "qp:1", val, sizeof(val)));
	EXPECT_STREQ("psn=1", val);
	shiftu_kv_close(ukv);

	/* the server forgets whom a connection was: the new one says again */
	redis_stop(self);
	self->pid = redis_start(_metadata, self);
	ASSERT_EQ(0, shiftu_kv_put(kv, "qp:2", "psn=2"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "qp:2", val, sizeof(val)));
	EXPECT_STREQ("psn=2", val);
	shiftu_kv_close(kv);

	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, ACL_PASS)) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(0, count_lines(buf, ": warn: ")) {
		TH_LOG("%s", buf);
	}
}

/*
 * A wrong password: the open fails with -EACCES, quickly, with one warning
 * for the process that names the store and the server's reason, however
 * many handles and tries; the password is in no line.
 */
TEST_F(redis, acl_wrong_password)
{
	char log[PATH_MAX], buf[16384], desc[128];
	struct shiftu_kv *kv = NULL;
	double t;
	int i;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_DEBUG, log));
	acl_restart(_metadata, self);
	acl_url(_metadata, self, "shiftu", "Wr0ng-P4ss", &self->cfg);
	t = now();
	for (i = 0; i < 3; i++)
		EXPECT_EQ(-EACCES, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_GT(1.0, now() - t);
	EXPECT_EQ(NULL, kv);

	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	snprintf(desc, sizeof(desc), "warn: store redis://127.0.0.1:%d: AUTH as user shiftu refused: WRONGPASS",
		 self->port);
	EXPECT_EQ(1, count_lines(buf, ": warn: ")) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(1, count_lines(buf, desc)) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(NULL, strstr(buf, "Wr0ng-P4ss"));

	/* the right one: accepted, and said so */
	acl_url(_metadata, self, "shiftu", ACL_PASS, &self->cfg);
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	shiftu_kv_close(kv);
	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(1, count_lines(buf, "accepted as user shiftu"));
}

/*
 * No credentials for a server that wants some (its default user is off):
 * the open works (nothing is sent), every command is refused with
 * -EACCES, and one warning names the store, NOAUTH and what to give.
 * A user whose ACL lacks SET: -EACCES for the SET, NOPERM named, GET
 * works.
 */
TEST_F(redis, acl_noauth_noperm)
{
	char log[PATH_MAX], buf[16384], val[64];
	struct shiftu_kv_req r[2];
	struct shiftu_kv *kv;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_INFO, log));
	acl_restart(_metadata, self);
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_EQ(-EACCES, shiftu_kv_put(kv, "k", "v"));
	EXPECT_EQ(-EACCES, shiftu_kv_get(kv, "k", val, sizeof(val)));
	r[0] = (struct shiftu_kv_req){ .op = SHIFTU_KV_PUT, .key = "a", .val = "1" };
	r[1] = (struct shiftu_kv_req){ .op = SHIFTU_KV_GET, .key = "a", .val = val,
				       .len = sizeof(val) };
	EXPECT_EQ(0, shiftu_kv_batch(kv, r, 2));
	EXPECT_EQ(-EACCES, r[0].ret);
	EXPECT_EQ(-EACCES, r[1].ret);
	shiftu_kv_close(kv);
	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(1, count_lines(buf, ": warn: ")) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(1, count_lines(buf, "SET refused: NOAUTH Authentication required. (no credentials given")) {
		TH_LOG("%s", buf);
	}

	/* a new log: the next refusal warns again, after an acceptance */
	ASSERT_EQ(0, truncate(log, 0));
	acl_url(_metadata, self, "reader", ACL_PASS, &self->cfg);
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_EQ(-EACCES, shiftu_kv_put(kv, "k", "v"));
	EXPECT_EQ(-ENOENT, shiftu_kv_get(kv, "k", val, sizeof(val)));
	shiftu_kv_close(kv);
	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(1, count_lines(buf, "SET refused to user reader: NOPERM")) {
		TH_LOG("%s", buf);
	}
}

/*
 * SHIFTU_STORE_AUTH_FILE: used when only its owner may read it; a mode
 * 0644 file is refused (-EACCES, one warning naming the file and its
 * mode) and nothing is sent to the server; fixed, it is taken at the next
 * open.  Credentials in the URL win over the file.
 */
TEST_F(redis, acl_auth_file)
{
	char log[PATH_MAX], buf[16384], val[128], path[PATH_MAX], url[128];
	struct shiftu_kv *kv = NULL;
	int fd;

	NEED_REDIS();
	snprintf(log, sizeof(log), "%s/log", self->tmp);
	ASSERT_EQ(0, shiftu_log_setup(SHIFTU_LOG_DEBUG, log));
	acl_restart(_metadata, self);
	snprintf(path, sizeof(path), "%s/store.auth", self->tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ASSERT_LE(0, fd);
	ASSERT_LT(0, dprintf(fd, "# libshiftu's ACL user\nshiftu:%s\n", ACL_PASS));
	close(fd);
	ASSERT_EQ(0, chmod(path, 0644));
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", self->port);
	ASSERT_EQ(0, shiftu_parse_store(url, &self->cfg));
	ASSERT_EQ(0, shiftu_parse_store_dir(path, self->cfg.auth_file));

	EXPECT_EQ(-EACCES, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_EQ(-EACCES, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(1, count_lines(buf, ": warn: ")) {
		TH_LOG("%s", buf);
	}
	snprintf(val, sizeof(val), "warn: store redis://127.0.0.1:%d: credentials file ",
		 self->port);
	EXPECT_EQ(1, count_lines(buf, val)) {
		TH_LOG("%s", buf);
	}
	EXPECT_NE(NULL, strstr(buf, "store.auth: refused: mode 0644 lets group or others at it (chmod 600 it)"));

	ASSERT_EQ(0, chmod(path, 0600));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	ASSERT_EQ(0, shiftu_kv_put(kv, "k", "v"));
	ASSERT_EQ(0, shiftu_kv_get(kv, "k", val, sizeof(val)));
	shiftu_kv_close(kv);

	/* the URL's user wins: "reader" may not SET */
	snprintf(url, sizeof(url), "redis://reader:%s@127.0.0.1:%d", ACL_PASS, self->port);
	ASSERT_EQ(0, shiftu_parse_store(url, &self->cfg));
	ASSERT_EQ(0, shiftu_parse_store_dir(path, self->cfg.auth_file));
	ASSERT_EQ(0, shiftu_kv_open(&self->cfg, &kv));
	EXPECT_EQ(-EACCES, shiftu_kv_put(kv, "k", "v"));
	shiftu_kv_close(kv);

	ASSERT_LT(0, read_log(log, buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, ACL_PASS));
}

TEST(redis_refused)
{
	struct shiftu_store cfg;
	struct shiftu_kv *kv = NULL;
	char url[64];
	double t;
	int port;

	quiet();
	port = free_port();
	ASSERT_LT(0, port);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	ASSERT_EQ(0, shiftu_parse_store(url, &cfg));
	t = now();
	EXPECT_EQ(-ECONNREFUSED, shiftu_kv_open(&cfg, &kv));
	EXPECT_GT(2.0, now() - t);
	EXPECT_EQ(NULL, kv);
	ASSERT_EQ(0, shiftu_parse_store("unix:/nonexistent/redis.sock", &cfg));
	EXPECT_EQ(-ENOENT, shiftu_kv_open(&cfg, &kv));
}

TEST_HARNESS_MAIN
