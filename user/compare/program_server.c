// SPDX-License-Identifier: GPL-2.0
/*
 * The server of --compare of programs: its own process group (so stopping it reaches the
 * workers it forked, and a Ctrl-C on the terminal reaches udsprobe, which then stops it in
 * order), a death signal should udsprobe itself be killed, readiness by connecting.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interrupt.h"
#include "program_server.h"
#include "util.h"

int server_start(struct program_server *s, const char *cmd, const char *out_path,
		 struct tmpdir *guard)
{
	pid_t pid, parent = getpid();
	int fd;

	s->pid = 0;
	s->exit_status = -1;
	s->cmd = cmd;
	s->guard = guard;
	snprintf(s->out_path, sizeof(s->out_path), "%s", out_path);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		say_error("--server: cannot create %s for its output: %s", out_path,
			strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		say_error("--server: cannot fork: %s", strerror(-err));
		close(fd);
		return err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		/* udsprobe killed: no orphan server (SIGTERM: a server may clean up) */
		if (!child_dies_with_parent(parent, SIGTERM, true))
			_exit(127);
		if (null >= 0)
			dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		say_error("--server: cannot run /bin/sh: %s", strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);	/* both sides: whichever runs first */
	close(fd);
	s->pid = pid;
	if (guard)
		tmpdir_guard(guard, pid);
	return 0;
}

bool server_alive(struct program_server *s)
{
	int status;

	if (s->pid <= 0)
		return false;
	if (s->exit_status >= 0)
		return false;
	if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
		s->exit_status = exit_code(status);
		return false;
	}
	return true;
}

static bool accepts(int family, const char *unix_path, unsigned port)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	if (family == AF_UNIX) {
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", unix_path);
		ok = !connect(fd, (struct sockaddr *)&un, sizeof(un));
	} else {
		ok = !connect(fd, (struct sockaddr *)&in, sizeof(in));
	}
	close(fd);
	return ok;
}

size_t file_tail(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	off_t size;
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return 0;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)len - 1)
		lseek(fd, size - (off_t)len + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	close(fd);
	return n;
}

static void say_output(const struct program_server *s)
{
	char tail[2048];
	size_t n = file_tail(s->out_path, tail, sizeof(tail));

	if (!n) {
		fprintf(stderr, "It printed nothing.\n");
		return;
	}
	fprintf(stderr, "It printed (the end):\n");
	fwrite(tail, 1, n, stderr);
	if (tail[n - 1] != '\n')
		fputc('\n', stderr);
}

int server_wait_ready(struct program_server *s, const char *unix_path, const unsigned *ports,
		      int n_ports, double timeout_s)
{
	uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);
	bool un_ok = !unix_path, tcp_ok[4] = { false };
	char where[4200];
	int i, ready;

	snprintf(where, sizeof(where), "%s", unix_path ? unix_path : "");
	for (i = 0; i < n_ports && i < 4; i++)
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s127.0.0.1:%u",
			 i == n_ports - 1 && where[0] ? " and " : where[0] ? ", " : "", ports[i]);
	for (;;) {
		un_ok = un_ok || accepts(AF_UNIX, unix_path, 0);
		for (ready = un_ok, i = 0; i < n_ports && i < 4; i++) {
			tcp_ok[i] = tcp_ok[i] || accepts(AF_INET, NULL, ports[i]);
			ready &= tcp_ok[i];
		}
		if (ready)
			return 0;
		if (!server_alive(s)) {
			say_error("--server '%s' exited with status %d before it "
				"accepted connections on %s.", s->cmd, s->exit_status, where);
			say_output(s);
			return -ECHILD;
		}
		if (udsprobe_stop) {
			say_error("interrupted while waiting for --server");
			return -EINTR;
		}
		if (now_ns() >= end) {
			say_error("--server '%s' did not accept connections on %s "
				"within %g s (--ready-timeout); it was stopped. Does the command use "
				"{unix} and {port} and stay in the foreground?", s->cmd, where,
				timeout_s);
			say_output(s);
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
}

static bool listed(const int *pids, int n, int pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/*
 * root's process group and all of root's descendants (servers such as php-fpm call setsid()
 * even in the foreground and leave the group, not the tree), at most max.
 */
static int tree_of(pid_t root, int *pids, int max)
{
	struct proc_ids *all;
	int n = 0, total = proc_snapshot(&all), i, grown = 1;

	for (i = 0; i < total && n < max; i++)
		if (all[i].pid == root || all[i].pgrp == root)
			pids[n++] = all[i].pid;
	while (grown && n < max) {	/* add children of listed processes until none is new */
		grown = 0;
		for (i = 0; i < total && n < max; i++)
			if (!listed(pids, n, all[i].pid) && listed(pids, n, all[i].ppid)) {
				pids[n++] = all[i].pid;
				grown = 1;
			}
	}
	free(all);
	return n;
}

int server_group_pids(const struct program_server *s, int *pids, int max)
{
	return s->pid > 0 ? tree_of(s->pid, pids, max) : 0;
}

/* Wait up to ms for the leader to be reaped and none of pids to be left. */
static bool all_gone(struct program_server *s, const int *pids, int n, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000;
	int status, i;
	pid_t pid;

	for (;;) {
		bool left = false;

		server_alive(s);
		/* its orphans, ours as the subreaper; and the leader if it exited just now */
		while ((pid = waitpid(-s->pid, &status, WNOHANG)) > 0)
			if (pid == s->pid && s->exit_status < 0)
				s->exit_status = exit_code(status);
		for (i = 0; i < n; i++) {
			waitpid(pids[i], &status, WNOHANG);
			left |= !kill(pids[i], 0);
		}
		if (s->exit_status >= 0 && !left)
			return true;
		if (now_ns() >= end)
			return false;
		usleep(10000);
	}
}

void server_stop(struct program_server *s)
{
	int pids[512], n, i, status;

	if (s->pid <= 0)
		return;
	n = tree_of(s->pid, pids, (int)ARRAY_SIZE(pids));
	kill(-s->pid, SIGTERM);
	for (i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	if (!all_gone(s, pids, n, 3000)) {
		kill(-s->pid, SIGKILL);
		for (i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		if (s->exit_status < 0 && waitpid(s->pid, &status, 0) == s->pid)
			s->exit_status = exit_code(status);
		all_gone(s, pids, n, 1000);
	}
	if (s->guard)
		tmpdir_forget(s->guard, s->pid);
	s->pid = 0;
}
