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
/* --cgroup and --netns arguments: 0, or -errno with the reason in why. */
int cgroup_parse(const char *arg, char *rel, size_t len, uint64_t *id, char *why, size_t wlen);
int netns_parse(const char *arg, uint32_t *ino, char *why, size_t wlen);
/* The path of cgroup v2 id (escaped; "" unknown), from a small cache. */
const char *cgroup_id_path(uint64_t id);
/* Its cgroup2 mount's fd closed (opened again at the next use). */
void cgroup_id_path_close(void);

#endif
