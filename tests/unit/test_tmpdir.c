// SPDX-License-Identifier: GPL-2.0
/* user/lib/tmpdir.c: private directories in /tmp, their removal and their janitors. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tmpdir.h"
#include "unit.h"

static bool gone_within(const char *path, int ms)
{
	struct stat st;

	while (!lstat(path, &st) && ms-- > 0)
		usleep(1000);
	return lstat(path, &st) && errno == ENOENT;
}

/* Zombies stay in their group until init reaps them: give it time. */
/* Gone at all, not fast: a loaded machine (two TCG guests on 2 vCPUs) took over 2 s. */
#define GONE_MS 20000

static bool group_gone_within(pid_t pgid, int ms)
{
	while (!kill(-pgid, 0) && ms-- > 0)
		usleep(1000);
	return kill(-pgid, 0) && errno == ESRCH;
}

/* Mode as asked; removal takes what is inside, depth first, and never follows a link out. */
TEST(tmpdir_create_and_remove)
{
	char path[64], sub[PATH_MAX], file[PATH_MAX], link[PATH_MAX];
	char outside[] = "/tmp/udsprobe-unit-XXXXXX";
	struct stat st;
	struct tmpdir d;
	int fd = mkstemp(outside);

	REQUIRE(fd >= 0);
	close(fd);
	REQUIRE(tmpdir_create(&d, "udsprobe-unit", 0711) == 0);
	snprintf(path, sizeof(path), "%s", d.path);
	CHECK(!strncmp(path, "/tmp/udsprobe-unit.", 19) && strlen(path) == 25);
	CHECK(d.janitor > 0 && d.fd >= 0);
	REQUIRE(stat(path, &st) == 0);
	CHECK_INT(st.st_mode & 07777, 0711);
	snprintf(sub, sizeof(sub), "%s/a", path);
	snprintf(file, sizeof(file), "%s/a/f", path);
	snprintf(link, sizeof(link), "%s/a/l", path);
	REQUIRE(mkdir(sub, 0700) == 0);
	REQUIRE((fd = open(file, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	REQUIRE(symlink(outside, link) == 0);
	tmpdir_remove(&d);
	CHECK(gone_within(path, 0));
	CHECK(stat(outside, &st) == 0);		/* the link's target stays */
	unlink(outside);
	CHECK(d.fd == -1 && !d.path[0]);
	REQUIRE(waitpid(d.janitor, NULL, 0) == d.janitor);	/* EOF: it exits */
}

/* udsprobe gone (here: the process that made the directory exits without removing it): the
 * janitor stops the process group it guards (a shell and its child: SIGTERM) and the one that
 * ignores SIGTERM (SIGKILL a second later), not the one forgotten, then removes the directory
 * with what is inside. */
TEST(tmpdir_janitor_stops_the_groups_and_removes_it)
{
	struct { char path[64]; pid_t groups[3]; } got;
	int fds[2], status, i;
	pid_t pid;

	REQUIRE(pipe(fds) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		static const char *const cmds[3] = {
			"sleep 60 & sleep 60; true",		/* a shell and its children */
			"trap '' TERM; sleep 60; sleep 60",	/* ignores SIGTERM: SIGKILL */
			"sleep 60",				/* forgotten: left alone */
		};
		struct tmpdir d;
		char file[128];
		int fd;

		close(fds[0]);
		if (tmpdir_create(&d, "udsprobe-unit", 0700))
			_exit(1);
		snprintf(got.path, sizeof(got.path), "%s", d.path);
		for (i = 0; i < 3; i++) {
			pid_t g = fork();

			if (g == 0) {
				setpgid(0, 0);
				execl("/bin/sh", "sh", "-c", cmds[i], (char *)NULL);
				_exit(127);
			}
			setpgid(g, g);
			got.groups[i] = g;
			if (tmpdir_guard(&d, g))
				_exit(1);
		}
		tmpdir_forget(&d, got.groups[2]);
		snprintf(file, sizeof(file), "%s/server.sock", d.path);
		fd = open(file, O_CREAT | O_WRONLY, 0600);
		usleep(200000);	/* the shells have run their trap and forked */
		if (fd < 0 || write(fds[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		_exit(0);	/* as SIGKILL would: no clean-up */
	}
	close(fds[1]);
	REQUIRE(read(fds[0], &got, sizeof(got)) == sizeof(got));
	close(fds[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK(!strncmp(got.path, "/tmp/udsprobe-unit.", 19));
	CHECK(gone_within(got.path, 3000));
	CHECK(group_gone_within(got.groups[0], GONE_MS));
	CHECK(group_gone_within(got.groups[1], GONE_MS));
	CHECK(kill(-got.groups[2], 0) == 0);		/* forgotten: still there */
	kill(-got.groups[2], SIGKILL);
}

/* No prefix: a janitor and no directory (--trace -- COMMAND); it still stops a guarded group
 * once its creator has exited. */
TEST(tmpdir_janitor_without_a_directory)
{
	pid_t pid, group = 0;
	int fds[2], status;

	REQUIRE(pipe(fds) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct tmpdir d;
		pid_t g;

		close(fds[0]);
		if (tmpdir_create(&d, NULL, 0) || d.path[0] || d.janitor <= 0)
			_exit(1);
		g = fork();
		if (g == 0) {
			setpgid(0, 0);
			execl("/bin/sh", "sh", "-c", "sleep 60 & sleep 60", (char *)NULL);
			_exit(127);
		}
		setpgid(g, g);
		if (tmpdir_guard(&d, g) || write(fds[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		usleep(100000);
		_exit(0);
	}
	close(fds[1]);
	REQUIRE(read(fds[0], &group, sizeof(group)) == sizeof(group));
	close(fds[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK(group_gone_within(group, GONE_MS));
	if (!kill(-group, 0))
		kill(-group, SIGKILL);
}
