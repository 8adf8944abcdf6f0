// SPDX-License-Identifier: GPL-2.0
/* Where a process runs: its cgroup v2 path, the container id that path names, its network
 * namespace (--backlog's owners, --trace's flows). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "cgroup.h"
#include "util.h"

/* The cgroup v2 path of PID ("/system.slice/x.service"; "" when unknown). */
void proc_cgroup(int pid, char *out, size_t len)
{
	char path[64], line[PATH_MAX + 16];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))	/* the unified hierarchy's line */
			continue;
		line[strcspn(line, "\n")] = 0;
		str_escape(line + 3, strlen(line + 3), out, len);
		break;
	}
	fclose(f);
}

static bool hex64(const char *s, size_t n)
{
	size_t i;

	if (n != 64)
		return false;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/*
 * The container id a cgroup path names, or "": the last path component that is
 * 64 hex digits, alone (/docker/<id>, kubepods .../pod<uid>/<id>) or as
 * docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>.scope or
 * libpod-<id>.scope (not their conmon-... monitors).
 */
void cgroup_container_id(const char *cg, char *out, size_t len)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-", "" };
	const char *end = cg + strlen(cg), *start;
	size_t i, n, p;

	out[0] = 0;
	while (end > cg) {
		for (start = end; start > cg && start[-1] != '/'; start--)
			;
		n = end - start;
		if (n > 6 && !strncmp(end - 6, ".scope", 6))
			n -= 6;
		for (i = 0; i < ARRAY_SIZE(prefixes); i++) {
			p = strlen(prefixes[i]);
			if (n > p && !strncmp(start, prefixes[i], p) && hex64(start + p, n - p)) {
				snprintf(out, len, "%.*s", 64, start + p);
				return;
			}
		}
		end = start > cg ? start - 1 : cg;
	}
}

uint32_t proc_netns(int pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	return pid > 0 && !stat(path, &st) ? (uint32_t)st.st_ino : 0;
}

/* The cgroup v2 mount point holding `real` (longest match in mountinfo; "": the
 * first cgroup2 mount), or -ENOENT. */
static int cgroup2_mount(const char *real, char *mnt, size_t len)
{
	char line[PATH_MAX * 2], point[PATH_MAX], *sep;
	size_t best = 0, n;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "36 25 0:30 / /sys/fs/cgroup rw,... - cgroup2 cgroup2 rw" */
		sep = strstr(line, " - ");
		if (!sep || strncmp(sep, " - cgroup2 ", 11))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		n = strlen(point);
		if (!real[0]) {		/* any: the first */
			snprintf(mnt, len, "%s", point);
			best = n;
			break;
		}
		if (n > best && !strncmp(real, point, n) && (real[n] == '/' || !real[n] ||
							      (n == 1 && point[0] == '/'))) {
			best = n;
			snprintf(mnt, len, "%s", point);
		}
	}
	fclose(f);
	return best ? 0 : -ENOENT;
}

/*
 * --cgroup PATH: a cgroup v2 directory (/sys/fs/cgroup/system.slice/x.service).
 * Its path within the hierarchy (as /proc/PID/cgroup shows it) in rel, its id
 * (the directory's inode, what bpf_get_current_cgroup_id returns). 0, or -errno
 * with the reason in why.
 */
int cgroup_parse(const char *arg, char *rel, size_t len, uint64_t *id, char *why, size_t wlen)
{
	char real[PATH_MAX], mnt[PATH_MAX];
	struct statfs fs;
	struct stat sb;

	if (!realpath(arg, real) || stat(real, &sb)) {
		snprintf(why, wlen, "%s", strerror(errno));
		return -ENOENT;
	}
	if (statfs(real, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(sb.st_mode)) {
		snprintf(why, wlen, "not a directory of the cgroup v2 hierarchy (e.g. "
			 "/sys/fs/cgroup/system.slice/php8.2-fpm.service)");
		return -EINVAL;
	}
	if (cgroup2_mount(real, mnt, sizeof(mnt))) {
		snprintf(why, wlen, "no cgroup2 mount holds it in /proc/self/mountinfo");
		return -EINVAL;
	}
	snprintf(rel, len, "%s", real[strlen(mnt)] ? real + (strcmp(mnt, "/") ? strlen(mnt) : 0) :
		 "/");
	*id = sb.st_ino;
	return 0;
}

/*
 * A cgroup v2 id (what bpf_get_current_cgroup_id returns: the kernfs inode) as a
 * path: open_by_handle_at on the cgroup2 mount with the id as a kernfs file
 * handle (needs CAP_DAC_READ_SEARCH), then the fd's path. Cached, the misses
 * too (an id is never reused), in a small ring.
 */
#define CG_CACHE	256
#define FILEID_KERNFS	0xfe

static struct {
	uint64_t id;
	char path[CGROUP_TXT];
} cg_cache[CG_CACHE];
static unsigned cg_next;
static int cg_mnt_fd = -1;
static char cg_mnt[PATH_MAX];
static bool cg_mnt_tried;

const char *cgroup_id_path(uint64_t id)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	char lnk[64], real[PATH_MAX];
	const char *rel;
	unsigned i;
	ssize_t n;
	int fd;

	for (i = 0; i < CG_CACHE; i++)
		if (cg_cache[i].id == id)
			return cg_cache[i].path;
	i = cg_next++ % CG_CACHE;
	cg_cache[i].id = id;
	cg_cache[i].path[0] = 0;
	if (!cg_mnt_tried) {
		cg_mnt_tried = true;
		if (!cgroup2_mount("", cg_mnt, sizeof(cg_mnt)))
			cg_mnt_fd = open(cg_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (cg_mnt_fd < 0)
		return cg_cache[i].path;
	h.fh.handle_bytes = sizeof(uint64_t);
	h.fh.handle_type = FILEID_KERNFS;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(cg_mnt_fd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cg_cache[i].path;
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	n = readlink(lnk, real, sizeof(real) - 1);
	close(fd);
	if (n <= 0)
		return cg_cache[i].path;
	real[n] = 0;
	rel = strcmp(cg_mnt, "/") ? real + strlen(cg_mnt) : real;
	if (strncmp(real, cg_mnt, strlen(cg_mnt)))
		return cg_cache[i].path;
	str_escape(*rel ? rel : "/", *rel ? strlen(rel) : 1, cg_cache[i].path, CGROUP_TXT);
	return cg_cache[i].path;
}

/* --netns PATH|INODE: the namespace's inode; PATH is kept to enter it. */
int netns_parse(const char *arg, uint32_t *ino, char *why, size_t wlen)
{
	struct stat sb;
	uint64_t v;
	int fd;

	if (!parse_u64(arg, 1, UINT32_MAX, &v)) {
		*ino = v;
		return 0;
	}
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, wlen, "%s", strerror(errno));
		return -ENOENT;
	}
	if (fstat(fd, &sb) || ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		close(fd);
		snprintf(why, wlen, "not a network namespace (e.g. /proc/PID/ns/net, "
			 "/run/netns/NAME, or its inode number)");
		return -EINVAL;
	}
	close(fd);
	*ino = sb.st_ino;
	return 0;
}

void cgroup_id_path_close(void)
{
	if (cg_mnt_fd >= 0)
		close(cg_mnt_fd);
	cg_mnt_fd = -1;
	cg_mnt_tried = false;
}
