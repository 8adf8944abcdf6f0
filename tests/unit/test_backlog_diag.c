// SPDX-License-Identifier: GPL-2.0
/*
 * backlog_diag.c against the kernel itself: listeners made here, their queues filled here, and
 * what unix_diag reports for them checked against fstat()/stat() and the known depth.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "unit.h"
#include "backlog_diag.h"

struct found {
	uint64_t ino;			/* the listener looked for */
	int n;				/* records with that inode */
	struct bl_listener r;
	int listeners;			/* records seen */
	int bad;			/* records without a family or an inode */
};

static void collect(void *ctx, const struct bl_listener *r)
{
	struct found *f = ctx;

	f->listeners++;
	if (r->family != BL_UNIX || !r->ino)
		f->bad++;
	if (r->ino == f->ino) {
		f->n++;
		f->r = *r;
	}
}

/* A listener on addr (len bytes of sockaddr_un) with `backlog`, and `queued` connects to it. */
static int listener(const struct sockaddr_un *a, socklen_t len, int backlog, int queued, int *cl)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), i;

	REQUIRE(fd >= 0);
	REQUIRE(!bind(fd, (const struct sockaddr *)a, len));
	REQUIRE(!listen(fd, backlog));
	for (i = 0; i < queued; i++) {
		cl[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		REQUIRE(cl[i] >= 0);
		REQUIRE(!connect(cl[i], (const struct sockaddr *)a, len));
	}
	return fd;
}

static struct found find(int fd, int *err)
{
	struct found f = { 0 };
	struct stat sb;

	REQUIRE(!fstat(fd, &sb));
	f.ino = sb.st_ino;		/* the socket inode, as in /proc/PID/fd -> socket:[ino] */
	*err = bl_diag_unix_listeners(4242, collect, &f);
	return f;
}

TEST(backlog_diag_pathname_listener_depth_limit_vfs)
{
	char dir[] = "/tmp/udsprobe-diag.XXXXXX";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int cl[3], fd, err, i;
	struct found f;
	struct stat sb;

	REQUIRE(mkdtemp(dir));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/l.sock", dir);
	fd = listener(&a, sizeof(a), 7, 3, cl);
	f = find(fd, &err);
	CHECK_INT(err, 0);
	CHECK_INT(f.n, 1);
	CHECK_INT(f.bad, 0);
	CHECK_INT(f.r.family, BL_UNIX);
	CHECK_INT(f.r.qlen, 3);		/* three connects queued, none accepted */
	CHECK_INT(f.r.limit, 7);
	CHECK_INT(f.r.netns, 4242);
	CHECK(f.r.path_len >= strlen(a.sun_path));	/* the kernel may keep the NUL */
	CHECK_INT(strnlen(f.r.path, f.r.path_len), strlen(a.sun_path));
	CHECK(!memcmp(f.r.path, a.sun_path, strlen(a.sun_path)));
	REQUIRE(!stat(a.sun_path, &sb));	/* the socket file clients' paths resolve to */
	CHECK_INT(f.r.file_ino, sb.st_ino);
	CHECK_INT(f.r.file_dev >> 20, major(sb.st_dev));
	CHECK_INT(f.r.file_dev & 0xfffff, minor(sb.st_dev));
	CHECK_INT(f.r.sk, 0);
	for (i = 0; i < 3; i++)
		close(cl[i]);
	close(fd);
	unlink(a.sun_path);
	rmdir(dir);
}

TEST(backlog_diag_abstract_listener_full_queue)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int cl[3], fd, err, x, i;
	struct found f;

	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "udsprobe-diag-%d", getpid());
	fd = listener(&a, len, 2, 3, cl);	/* AF_UNIX queues one beyond the backlog */
	x = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK_INT(connect(x, (struct sockaddr *)&a, len) == -1 ? errno : 0, EAGAIN);	/* full */
	close(x);
	f = find(fd, &err);
	CHECK_INT(err, 0);
	CHECK_INT(f.n, 1);
	CHECK_INT(f.r.qlen, 3);
	CHECK_INT(f.r.limit, 2);
	CHECK_INT(f.r.path_len, len - offsetof(struct sockaddr_un, sun_path));
	CHECK(!memcmp(f.r.path, a.sun_path, f.r.path_len));	/* leading NUL included */
	CHECK_INT(f.r.file_ino, 0);
	for (i = 0; i < 3; i++)
		close(cl[i]);
	close(fd);
}

TEST(backlog_diag_only_listeners)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int sv[2], fd, err;
	struct found f;
	socklen_t len;

	/* a connected pair and a bound socket that does not listen (yet): neither is listed */
	REQUIRE(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	      snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "udsprobe-diag-nl-%d", getpid());
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	REQUIRE(!bind(fd, (struct sockaddr *)&a, len));
	f = find(sv[0], &err);
	CHECK_INT(err, 0);
	CHECK_INT(f.n, 0);
	f = find(fd, &err);
	CHECK_INT(f.n, 0);
	REQUIRE(!listen(fd, 1));	/* now it is one, with an empty queue */
	f = find(fd, &err);
	CHECK_INT(f.n, 1);
	CHECK_INT(f.r.qlen, 0);
	CHECK_INT(f.r.limit, 1);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}
