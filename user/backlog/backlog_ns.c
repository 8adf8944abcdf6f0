// SPDX-License-Identifier: GPL-2.0
/*
 * --backlog in containers: the network namespaces whose listeners are read
 * (setns into each for the iterators and its net.core.somaxconn), the owner's
 * cgroup and container id, the --netns and --cgroup filters.
 *
 * The iterators iter/unix and iter/tcp show the sockets of the network
 * namespace of the task that creates the iterator (bpf_iter_init_seq_net takes
 * current's netns at bpf_iter_create), and /proc/sys/net/... is the reader's
 * netns too, whatever /proc it is read through. So both are done from inside
 * the namespace: this thread enters it with setns(CLONE_NEWNET), which changes
 * only the calling thread, and goes back at once.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <linux/nsfs.h>
#include <linux/magic.h>

#include "backlog_table.h"
#include "util.h"

#define NS_SCAN_NS	1000000000ull	/* new namespaces are looked for once a second */

/* net.core.somaxconn of the calling thread's network namespace, or 0. */
int bl_read_somaxconn(void)
{
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* ------------------------------------------------------------------ cgroups */

/* Is cgroup path `cg` the cgroup `top` or below it? ("/" holds everything.) */
bool bl_cgroup_under(const char *cg, const char *top)
{
	size_t n = strlen(top);

	if (!cg[0])
		return false;
	if (n == 1 && top[0] == '/')
		return true;
	return !strncmp(cg, top, n) && (cg[n] == 0 || cg[n] == '/');
}

/* ------------------------------------------------------------------ netns */

static struct bl_netns *ns_find(struct bl_state *s, uint32_t inum)
{
	int i;

	for (i = 0; i < s->n_nss; i++)
		if (s->nss[i].inum == inum)
			return &s->nss[i];
	return NULL;
}

/* Enter ns (this thread only); its somaxconn is read there once a second. 0 or -errno. */
static int ns_enter(struct bl_state *s, struct bl_netns *ns)
{
	uint64_t now = now_ns();

	if (setns(ns->fd, CLONE_NEWNET) < 0)
		return -errno;
	if (!ns->somaxconn || now - ns->somaxconn_ns >= NS_SCAN_NS) {
		ns->somaxconn = bl_read_somaxconn();
		ns->somaxconn_ns = now;
	}
	return 0;
}

static int ns_leave(struct bl_state *s)
{
	if (setns(s->self_netfd, CLONE_NEWNET) < 0) {
		say_error("cannot return to udsprobe's own network namespace: %s",
			strerror(errno));
		return -errno;
	}
	return 0;
}

/* Keep an fd of the namespace file `path` (inode inum) to enter it. */
static void ns_add(struct bl_state *s, uint32_t inum, const char *path, bool pinned)
{
	struct bl_netns *ns;
	struct stat sb;
	int fd;

	if (s->n_nss == BL_MAX_NETNS)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) || (uint32_t)sb.st_ino != inum) {	/* the process went away */
		close(fd);
		return;
	}
	ns = &s->nss[s->n_nss++];
	ns->inum = inum;
	ns->fd = fd;
	ns->seen = true;
	ns->pinned = pinned;
	ns->somaxconn = 0;
}

/*
 * The other network namespaces processes are in (/proc/PID/ns/net), each with
 * an fd to enter it; those no process is in any more are closed, so udsprobe
 * never keeps a namespace alive. With --netns only that one.
 */
void bl_netns_scan(struct bl_state *s, bool force)
{
	uint64_t now = now_ns();
	struct bl_netns *ns;
	struct dirent *p;
	char path[64];
	uint32_t inum;
	DIR *proc;
	int i, pid;

	if (!s->self_netfd || s->setns_denied || (!force && now - s->last_ns_scan < NS_SCAN_NS))
		return;
	s->last_ns_scan = now;
	proc = opendir("/proc");
	if (!proc)
		return;
	for (i = 0; i < s->n_nss; i++)
		s->nss[i].seen = false;
	while ((p = readdir(proc))) {
		pid = atoi(p->d_name);
		if (pid <= 0)
			continue;
		inum = bl_ns_inode(pid, "net");
		if (!inum || inum == s->netns || (s->f->netns && inum != s->f->netns))
			continue;
		ns = ns_find(s, inum);
		if (ns) {
			ns->seen = true;
		} else {
			snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
			ns_add(s, inum, path, false);
		}
	}
	closedir(proc);
	/* --netns /run/netns/NAME: entered through that file even with no process in it */
	if (s->f->netns_path && s->f->netns != s->netns && !ns_find(s, s->f->netns))
		ns_add(s, s->f->netns, s->f->netns_path, true);
	for (i = 0; i < s->n_nss;) {
		if (s->nss[i].seen || s->nss[i].pinned) {
			i++;
			continue;
		}
		close(s->nss[i].fd);
		s->nss[i] = s->nss[--s->n_nss];
	}
}

/*
 * Run fn(s, b) inside every other namespace found (after udsprobe's own, which
 * the caller ran). A namespace that cannot be entered is skipped (its listeners
 * stay "known from counts"); no setns right at all is said once.
 */
int bl_netns_each(struct bl_state *s, struct bl_bpf *b,
		  int (*fn)(struct bl_state *, struct bl_bpf *))
{
	int i, err;

	for (i = 0; i < s->n_nss; i++) {
		err = ns_enter(s, &s->nss[i]);
		if (err == -EPERM) {
			s->setns_denied = true;
			fprintf(stderr, "note: no CAP_SYS_ADMIN: listeners in other network namespaces "
				"are known only from their counts (no owner, queue or limit)\n");
			return 0;
		}
		if (err)
			continue;
		s->cur_somaxconn = s->nss[i].somaxconn;
		err = fn(s, b);
		if (ns_leave(s))
			return -errno;
		if (err)
			return err;
	}
	s->cur_somaxconn = s->somaxconn;
	return 0;
}

int bl_netns_somaxconn(const struct bl_state *s, uint32_t netns)
{
	int i;

	if (!netns || netns == s->netns)
		return s->somaxconn;
	for (i = 0; i < s->n_nss; i++)
		if (s->nss[i].inum == netns)
			return s->nss[i].somaxconn;
	return 0;
}

void bl_netns_free(struct bl_state *s)
{
	int i;

	for (i = 0; i < s->n_nss; i++)
		close(s->nss[i].fd);
	s->n_nss = 0;
	if (s->self_netfd > 0)
		close(s->self_netfd);
	s->self_netfd = 0;
	cgroup_id_path_close();
}

/* Inode number of /proc/PID/ns/NAME (PID 0 = self), or 0. */
uint32_t bl_ns_inode(int pid, const char *name)
{
	char path[64];
	struct stat sb;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &sb) ? 0 : (uint32_t)sb.st_ino;
}
