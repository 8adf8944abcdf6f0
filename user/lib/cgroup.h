/* Where a process runs: cgroup v2 path, container id, network namespace (layer 0). */
#ifndef UDSPROBE_CGROUP_H
#define UDSPROBE_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#define CGROUP_TXT	512	/* a cgroup path after str_escape */
#define CONTAINER_ID_LEN 65

/* The cgroup v2 path of PID ("/system.slice/x.service", str_escape()d; "" when unknown). */
void proc_cgroup(int pid, char *out, size_t len);
/*
 * The container id a cgroup path names, or "": the last path component that is 64 hex
 * digits, alone (/docker/<id>, kubepods .../pod<uid>/<id>) or as docker-<id>.scope,
 * cri-containerd-<id>.scope, crio-<id>.scope or libpod-<id>.scope (not their conmon-...).
 */
void cgroup_container_id(const char *cg, char *out, size_t len);
/* The inode of PID's network namespace (what --backlog's netns label says), 0 when unknown. */
uint32_t proc_netns(int pid);

#endif
