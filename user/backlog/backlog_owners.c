// SPDX-License-Identifier: GPL-2.0
/* --backlog: who holds each listener (lowest pid = the master of a pool), from /proc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <arpa/inet.h>

#include "backlog_table.h"
#include "util.h"

/* /proc/PID/comm, escaped (a comm may hold ESC, BEL or a newline: issue 16 item 3). */
void bl_proc_comm(int pid, char *out)
{
	char path[64], raw[BL_COMM_LEN + 1];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, sizeof(raw));
		close(fd);
	}
	if (n > 0 && raw[n - 1] == '\n')	/* the kernel's line end, not the comm's */
		n--;
	str_escape(raw, n > 0 ? n : 0, out, COMM_TXT);
}

/* Fill holders/owner of listeners with new inodes from /proc/PID/fd. */
void bl_resolve_owners(struct bl_state *s)
{
	DIR *proc, *fds;
	struct dirent *p, *f;
	char dir[64], lnk[320], target[64];
	unsigned long long ino;
	int i, j, pid;
	ssize_t n;

	proc = opendir("/proc");
	if (!proc)
		return;
	for (i = 0; i < s->n; i++)
		if (!s->ls[i].owner_done)
			s->ls[i].n_holders = 0;
	while ((p = readdir(proc))) {
		pid = atoi(p->d_name);
		if (pid <= 0)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
		fds = opendir(dir);
		if (!fds)
			continue;
		while ((f = readdir(fds))) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(lnk, sizeof(lnk), "%s/%s", dir, f->d_name);
			n = readlink(lnk, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			if (sscanf(target, "socket:[%llu]", &ino) != 1)
				continue;
			for (i = 0; i < s->n; i++) {
				struct listener *l = &s->ls[i];

				if (l->owner_done)
					continue;
				for (j = 0; j < l->n_inos; j++)
					if (l->inos[j] == ino)
						break;
				if (j == l->n_inos)
					continue;
				for (j = 0; j < l->n_holders; j++)
					if (l->holders[j] == pid)
						break;
				if (j == l->n_holders && l->n_holders < MAX_HOLDERS)
					l->holders[l->n_holders++] = pid;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];
		int owner = 0;

		if (l->owner_done)
			continue;
		l->owner_done = true;
		for (j = 0; j < l->n_holders; j++)	/* the lowest pid: the master of a pool */
			if (!owner || l->holders[j] < owner)
				owner = l->holders[j];
		if (l->n_holders) {
			bl_proc_comm(owner, l->owner_comm);
			proc_cgroup(owner, l->cgroup, sizeof(l->cgroup));
			cgroup_container_id(l->cgroup, l->container, sizeof(l->container));
			/* keep the owner first in holders */
			for (j = 0; j < l->n_holders; j++)
				if (l->holders[j] == owner) {
					l->holders[j] = l->holders[0];
					l->holders[0] = owner;
					break;
				}
		}
		l->watched = l->present ? bl_match_filters(s, l) : l->watched;
	}
	s->owners_dirty = false;
	s->last_owner_scan = now_ns();
}

