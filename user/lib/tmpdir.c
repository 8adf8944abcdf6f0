// SPDX-License-Identifier: GPL-2.0
/* Private directories in /tmp and their janitors (tmpdir.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tmpdir.h"
#include "util.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static bool groups_left(const pid_t *groups, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (groups[i] && !kill(-groups[i], 0))
			return true;
	return false;
}

/* SIGTERM to each group still guarded, SIGKILL to what is left after 1 s. */
static void stop_groups(const pid_t *groups, int n)
{
	struct timespec tick = { 0, 10000000 };
	int i, t;

	for (i = 0; i < n; i++)
		if (groups[i])
			kill(-groups[i], SIGTERM);
	for (t = 0; t < 100 && groups_left(groups, n); t++)
		nanosleep(&tick, NULL);
	for (i = 0; i < n; i++)
		if (groups[i])
			kill(-groups[i], SIGKILL);
}

/*
 * Read pgids (guard) and -pgids (forget) from a pipe whose only writer is udsprobe, until
 * EOF: udsprobe has exited, for any reason. Then stop the groups still guarded and remove
 * the directory.
 */
static void janitor(const char *path, int rd)
{
	pid_t groups[TMPDIR_GROUPS] = { 0 }, g;
	int i;

	/* nothing else of udsprobe's: it outlives udsprobe by the clean-up, and would keep its
	 * BPF objects loaded and its --compare lock held (the next run waited) */
	if (rd != 3 && dup2(rd, 3) == 3) {
		close(rd);
		rd = 3;
	}
	if (rd == 3)
		close_range(4, ~0U, 0);
	setsid();	/* out of the terminal's process group: Ctrl-C is udsprobe's */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	for (;;) {
		ssize_t r = read(rd, &g, sizeof(g));	/* written whole: sizeof(g) < PIPE_BUF */

		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(g))
			break;
		for (i = 0; i < TMPDIR_GROUPS; i++)
			if (g > 0 ? !groups[i] : groups[i] == -g) {
				groups[i] = g > 0 ? g : 0;
				break;
			}
	}
	stop_groups(groups, TMPDIR_GROUPS);
	if (*path)
		remove_tree(path);
	_exit(0);
}

int tmpdir_create(struct tmpdir *d, const char *prefix, mode_t mode)
{
	int fds[2], err;
	pid_t pid;

	d->janitor = 0;
	d->fd = -1;
	d->path[0] = 0;
	d->janitor_failed = false;
	if (prefix) {
		snprintf(d->path, sizeof(d->path), "/tmp/%s.XXXXXX", prefix);
		if (!mkdtemp(d->path)) {	/* 0700 until chmod */
			err = -errno;
			d->path[0] = 0;
			return err;
		}
		if (chmod(d->path, mode)) {
			err = -errno;
			goto fail;
		}
	}
	if (pipe2(fds, O_CLOEXEC)) {
		err = -errno;
		d->janitor_failed = true;
		goto fail;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		janitor(d->path, fds[0]);
	}
	if (pid < 0) {
		err = -errno;
		d->janitor_failed = true;
		close(fds[0]);
		close(fds[1]);
		goto fail;
	}
	close(fds[0]);
	d->janitor = pid;
	d->fd = fds[1];
	return 0;
fail:
	if (d->path[0])
		rmdir(d->path);
	d->path[0] = 0;
	return err;
}

void tmpdir_say_failure(const struct tmpdir *d, const char *who, const char *what, int err)
{
	if (!d->janitor_failed) {
		say_error("%s%s: %s", who, what, strerror(-err));
		return;
	}
	/* the directory was fine: blaming /tmp sent people looking at the wrong thing */
	say_error("%scannot start the process that cleans up should udsprobe be "
		  "killed: %s%s", who, strerror(-err), err == -EAGAIN ? " (the process limit: "
		"pids.max of udsprobe's cgroup, or ulimit -u; raise it or end other processes)" : "");
}

static int tell(struct tmpdir *d, pid_t v)
{
	if (d->fd < 0)
		return -EBADF;
	return write(d->fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

int tmpdir_guard(struct tmpdir *d, pid_t pgid)
{
	return pgid > 0 ? tell(d, pgid) : -EINVAL;
}

void tmpdir_forget(struct tmpdir *d, pid_t pgid)
{
	if (pgid > 0)
		tell(d, -pgid);
}

void tmpdir_remove(struct tmpdir *d)
{
	if (d->path[0])
		remove_tree(d->path);
	d->path[0] = 0;
	if (d->fd >= 0)
		close(d->fd);	/* the janitor sees EOF and exits */
	d->fd = -1;
}
