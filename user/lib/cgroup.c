// SPDX-License-Identifier: GPL-2.0
/* Where a process runs: its cgroup v2 path, the container id that path names, its network
 * namespace (--backlog's owners, --trace's flows). */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
