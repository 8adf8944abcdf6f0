// SPDX-License-Identifier: GPL-2.0
/* --backlog: the listener table, filters, names and the queue sample. */
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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "backlog_bpf.h"
#include "backlog_diag.h"
#include "backlog_table.h"
#include "unix_name.h"

_Static_assert(BL_PATH_LEN == UNIX_NAME_LEN, "a listener holds a whole unix name");
#include "backlog.skel.h"
#include "util.h"

void bl_state_init(struct bl_state *s, const struct watch_filters *f)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	s->netns = bl_ns_inode(0, "net");
	s->mntns = bl_ns_inode(0, "mnt");
	s->self_netfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (s->self_netfd < 0)
		s->self_netfd = 0;	/* other namespaces are then not entered */
}

void bl_state_free(struct bl_state *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		bl_listener_free(&s->ls[i]);
	free(s->ls);
	bl_netns_free(s);
	memset(s, 0, sizeof(*s));
}

struct listener *bl_add_listener(struct bl_state *s, int family)
{
	struct listener *l = grow_array(s->ls, &s->cap, s->n, sizeof(*l), 64);

	if (!l)
		return NULL;
	s->ls = l;
	l = &s->ls[s->n++];
	memset(l, 0, sizeof(*l));
	l->family = family;
	return l;
}

bool bl_same_name(const struct listener *l, const char *path, uint32_t len)
{
	return l->path_len == len && !memcmp(l->path, path, len);
}

/* --netns and --cgroup: is l in that namespace, its owner in that cgroup subtree? */
static bool in_scope(const struct bl_state *s, const struct listener *l)
{
	if (s->f->netns && l->netns != s->f->netns)
		return false;
	if (s->f->cgroup && !bl_cgroup_under(l->cgroup, s->f->cgroup_rel))
		return false;
	return true;
}

bool bl_match_filters(struct bl_state *s, struct listener *l)
{
	char path[BL_PATH_LEN];
	uint32_t len;
	int i, j;

	if (!in_scope(s, l))
		return false;
	if (!s->f->n_unix && !s->f->n_ports && !s->f->n_pids)
		return true;
	for (i = 0; i < s->f->n_unix && l->family == BL_UNIX; i++)
		if (!parse_unix_addr(s->f->unix_paths[i], path, &len) && bl_same_name(l, path, len))
			return true;
	for (i = 0; i < s->f->n_ports && l->family == BL_TCP; i++)
		if (s->f->ports[i] == l->port)
			return true;
	for (i = 0; i < s->f->n_pids; i++)
		for (j = 0; j < l->n_holders; j++)
			if (s->f->pids[i] == l->holders[j])
				return true;
	return false;
}

/* The text form of where a listener is when that is not udsprobe's own namespace. */
void bl_set_addr(struct listener *l, const struct bl_listener *r)
{
	char ip[INET6_ADDRSTRLEN];

	if (l->family == BL_UNIX) {
		fmt_unix_addr(l->path, l->path_len, l->addr, sizeof(l->addr));
	} else if (r) {
		inet_ntop(r->v6 ? AF_INET6 : AF_INET, r->addr, ip, sizeof(ip));
		snprintf(l->addr, sizeof(l->addr), r->v6 ? "[%s]:%u" : "%s:%u", ip, r->port);
	} else {
		snprintf(l->addr, sizeof(l->addr), "*:%u", l->port);
	}
}

/*
 * Run one iterator to its end. The programs write listeners to the mmapped
 * listeners array, not to the seq_file, so the read() below returns no data:
 * see iter_put() in backlog.bpf.c for why (issue 16 item 5).
 */
static int run_iter(struct bl_state *s, struct bl_bpf *b, struct bpf_link *link,
		    void (*fn)(struct bl_state *, const struct bl_listener *))
{
	char buf[64];
	uint32_t i, n;
	ssize_t got;
	int fd;

	b->skel->bss->iter_n = 0;
	b->skel->bss->iter_tcp_shown = 0;
	b->skel->bss->iter_tcp_stopped = 0;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EAGAIN && b->skel->bss->iter_tcp_stopped) {
			got = 0;	/* iter_tcp's own stop: every listener seen */
			break;
		}
		if (got < 0 && errno != EINTR && errno != EAGAIN)
			break;
	}
	if (got < 0)
		got = -errno;
	close(fd);
	if (got < 0)
		return got;
	n = b->skel->bss->iter_n;
	if (n > BL_MAX_LISTENERS) {
		s->listeners_missed = MAX(s->listeners_missed, (uint64_t)(n - BL_MAX_LISTENERS));
		n = BL_MAX_LISTENERS;
	}
	for (i = 0; i < n; i++)
		fn(s, &b->iter_out[i]);
	return 0;
}

static void add_ino(struct bl_state *s, struct listener *l, uint64_t ino)
{
	int i;

	for (i = 0; i < l->n_inos; i++)
		if (l->inos[i] == ino)
			return;
	if (l->n_inos < (int)ARRAY_SIZE(l->inos)) {
		l->inos[l->n_inos++] = ino;
		l->owner_done = false;
		s->owners_dirty = true;
	}
}

static struct listener *find_sock(struct bl_state *s, int family, uint64_t ino)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ls[i].family == family && s->ls[i].ino == ino)
			return &s->ls[i];
	return NULL;
}

struct listener *bl_find_tcp(struct bl_state *s, uint32_t netns, unsigned port, bool live)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ls[i].family == BL_TCP && s->ls[i].netns == netns && s->ls[i].port == port &&
		    !!s->ls[i].ino == live)
			return &s->ls[i];
	return NULL;
}

static void on_listener(struct bl_state *s, const struct bl_listener *r)
{
	struct listener *l;

	if (r->family == BL_UNIX) {
		if (!r->path_len)
			return;	/* unbound listener: nobody can connect to it by name */
		l = find_sock(s, BL_UNIX, r->ino);
		if (!l) {
			l = bl_add_listener(s, BL_UNIX);
			if (!l)
				return;
			l->ino = r->ino;
			l->netns = r->netns;
			memcpy(l->path, r->path, BL_PATH_LEN);
			l->path_len = MIN(r->path_len, (uint32_t)BL_PATH_LEN);
			if (l->path[0])	/* pathname: the kernel stores the NUL; stop at it */
				l->path_len = strnlen(l->path, l->path_len);
			l->file_ino = r->file_ino;
			l->file_dev = makedev(r->file_dev >> 20, r->file_dev & 0xfffff);
			bl_set_addr(l, r);
		}
	} else {
		l = bl_find_tcp(s, r->netns, r->port, true);
		if (l)
			bl_unretire(l);	/* the port has a listener again */
		if (!l) {
			l = bl_add_listener(s, BL_TCP);
			if (!l)
				return;
			l->port = r->port;
			l->netns = r->netns;
			l->ino = r->ino;
		}
		if (!l->seen_now)
			bl_set_addr(l, r);
	}
	if (!l->seen_now) {
		l->seen_now = true;
		l->qlen = 0;
		l->n_socks = 0;
		l->drops_now = 0;
		l->sk = r->sk;
		l->sk_drops0 = r->drops;
	}
	l->n_socks++;
	l->qlen = MAX(l->qlen, r->qlen);
	l->limit = r->limit;
	l->somaxconn = s->cur_somaxconn;
	l->drops_now += r->drops;
	add_ino(s, l, r->ino);
}

/*
 * Tracepoint mode: TCP listener l in the tcp_ports map, where the freed segments
 * find it by port, in the slot of its netns (a port has a listener in each of up
 * to BL_PORT_SLOTS namespaces; beyond that one is not counted: s->ports_full).
 * A new or replaced listener counts from its sk_drops now.
 */
static void port_watch(struct bl_state *s, struct bl_bpf *b, struct listener *l)
{
	struct bpf_map *m = b->skel->maps.tcp_ports;
	struct bl_port pv;
	int i, slot = -1;

	if (bpf_map__lookup_elem(m, &l->port, sizeof(l->port), &pv, sizeof(pv), 0))
		memset(&pv, 0, sizeof(pv));
	for (i = 0; i < BL_PORT_SLOTS; i++) {
		if (pv.s[i].sk && pv.s[i].netns == l->netns) {
			if (pv.s[i].sk == l->sk)
				return;		/* watched already */
			slot = i;		/* replaced */
			break;
		}
		if (!pv.s[i].sk && slot < 0)
			slot = i;
	}
	if (slot < 0) {
		if (!l->port_full)
			s->ports_full++;
		l->port_full = true;
		return;
	}
	pv.s[slot].sk = l->sk;
	pv.s[slot].last_drops = l->sk_drops0;
	pv.s[slot].netns = l->netns;
	bpf_map__update_elem(m, &l->port, sizeof(l->port), &pv, sizeof(pv), BPF_ANY);
}

/* l closed: free its slot (the port's entry with the last one). */
static void port_unwatch(struct bl_bpf *b, struct listener *l)
{
	struct bpf_map *m = b->skel->maps.tcp_ports;
	struct bl_port pv;
	bool any = false;
	int i;

	if (bpf_map__lookup_elem(m, &l->port, sizeof(l->port), &pv, sizeof(pv), 0))
		return;
	for (i = 0; i < BL_PORT_SLOTS; i++) {
		if (pv.s[i].sk == l->sk && pv.s[i].netns == l->netns)
			memset(&pv.s[i], 0, sizeof(pv.s[i]));
		any |= pv.s[i].sk != 0;
	}
	if (any)
		bpf_map__update_elem(m, &l->port, sizeof(l->port), &pv, sizeof(pv), BPF_ANY);
	else
		bpf_map__delete_elem(m, &l->port, sizeof(l->port), 0);
}

static void on_diag_listener(void *s, const struct bl_listener *r)
{
	on_listener(s, r);
}

/* Both iterators (AF_UNIX from sock_diag without iter/unix), in the network namespace this
 * thread is in. */
static int run_iters(struct bl_state *s, struct bl_bpf *b)
{
	struct stat sb;
	int err;

	if (b->unix_diag)
		err = bl_diag_unix_listeners(stat("/proc/thread-self/ns/net", &sb) ? s->netns :
					     (uint32_t)sb.st_ino, on_diag_listener, s);
	else
		err = run_iter(s, b, b->iter_unix, on_listener);
	return err ? err : run_iter(s, b, b->iter_tcp, on_listener);
}

/* One queue sample: both iterators in udsprobe's netns and in every other one
 * processes are in (backlog_ns.c), then bookkeeping. */
int bl_sample(struct bl_state *s, struct bl_bpf *b)
{
	int i, err;

	for (i = 0; i < s->n; i++)
		s->ls[i].seen_now = false;
	s->cur_somaxconn = s->somaxconn;
	err = run_iters(s, b);
	if (!err) {
		bl_netns_scan(s, false);
		err = bl_netns_each(s, b, run_iters);
	}
	if (err)
		return err;
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];
		bool was = l->present;

		l->present = l->seen_now;
		if (!l->present) {
			l->qlen = 0;
			if (was && l->family == BL_TCP)
				port_unwatch(b, l);
			continue;
		}
		if (l->family == BL_TCP) {
			if (!was && !l->prev_drops && !l->drops_base)
				l->drops_base = l->drops_now;	/* first sight: baseline */
			l->prev_drops = l->drops_now;
		}
		l->peak = MAX(l->peak, l->qlen);
		l->watched = bl_match_filters(s, l);
		if (l->family == BL_TCP && l->watched && b->mode == ATTACH_TRACEPOINT)
			port_watch(s, b, l);
	}
	return 0;
}

/*
 * The socket file a client's path named: stat the path in the client's mount
 * namespace (through /proc/PID/root of the client or of any process in that
 * namespace). Relative paths are not resolved (the client's cwd is unknown).
 */
static bool resolve_file(struct bl_state *s, const struct bl_key *k, dev_t *dev, uint64_t *ino)
{
	static int last_pid;	/* the process that resolved the last foreign namespace */
	char p[BL_PATH_LEN + 48];
	struct dirent *e;
	struct stat sb;
	int pid = 0;
	DIR *d;

	if (k->path[0] != '/' || k->path_len >= BL_PATH_LEN)
		return false;
	if (k->mntns != s->mntns) {
		if (k->tgid && bl_ns_inode(k->tgid, "mnt") == k->mntns)
			pid = k->tgid;
		else if (last_pid && bl_ns_inode(last_pid, "mnt") == k->mntns)
			pid = last_pid;
		for (d = pid ? NULL : opendir("/proc"); d && (e = readdir(d));)
			if (atoi(e->d_name) > 0 && bl_ns_inode(atoi(e->d_name), "mnt") == k->mntns)
				pid = atoi(e->d_name);
		if (d)
			closedir(d);
		if (!pid)
			return false;	/* nobody left in that namespace */
		last_pid = pid;
	}
	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/root%.*s", pid, (int)k->path_len, k->path);
	else
		snprintf(p, sizeof(p), "%.*s", (int)k->path_len, k->path);
	if (stat(p, &sb) || !S_ISSOCK(sb.st_mode))
		return false;
	*dev = sb.st_dev;
	*ino = sb.st_ino;
	return true;
}

/* The listener a count key belongs to: the live socket when one matches, else a
 * listener keyed like the count (created here). */
struct listener *bl_listener_of(struct bl_state *s, const struct bl_key *k, bool create)
{
	struct listener *l;
	uint64_t ino;
	dev_t dev;
	int i;

	if (k->family == BL_TCP) {
		l = bl_find_tcp(s, k->netns, k->port, true);
		if (!l)
			l = bl_find_tcp(s, k->netns, k->port, false);
		if (l || !create)
			return l;
		l = bl_add_listener(s, BL_TCP);
		if (!l)
			return NULL;
		l->netns = k->netns;
		l->port = k->port;
		bl_set_addr(l, NULL);
	} else {
		bool abstract = !k->path[0];
		bool file = !abstract && resolve_file(s, k, &dev, &ino);

		struct listener *closed = NULL;

		for (i = 0; i < s->n; i++) {
			l = &s->ls[i];
			if (l->family != BL_UNIX || !l->ino)
				continue;
			if (abstract ? l->netns == k->netns && bl_same_name(l, k->path, k->path_len) :
			    file ? l->file_ino == ino && l->file_dev == dev &&
				   (l->present || bl_same_name(l, k->path, k->path_len)) :
			    k->mntns == s->mntns && bl_same_name(l, k->path, k->path_len)) {
				if (l->present)
					return l;
				closed = l;	/* a live one of that name wins */
			}
		}
		if (closed)
			return closed;
		for (i = 0; i < s->n; i++) {
			l = &s->ls[i];
			if (l->family == BL_UNIX && !l->ino && bl_same_name(l, k->path, k->path_len) &&
			    (abstract ? l->netns == k->netns : l->mntns == k->mntns))
				return l;
		}
		if (!create)
			return NULL;
		l = bl_add_listener(s, BL_UNIX);
		if (!l)
			return NULL;
		memcpy(l->path, k->path, BL_PATH_LEN);
		l->path_len = MIN(k->path_len, (uint32_t)BL_PATH_LEN);
		if (abstract)
			l->netns = k->netns;
		else
			l->mntns = k->mntns;
		bl_set_addr(l, NULL);
	}
	l->owner_done = true;
	l->watched = bl_match_filters(s, l);
	return l;
}

int bl_doom(struct bl_doomed *d, const struct bl_key *k)
{
	struct bl_key *p = grow_array(d->keys, &d->cap, d->n, sizeof(*p), 64);

	if (!p)
		return -ENOMEM;
	d->keys = p;
	d->keys[d->n++] = *k;
	return 0;
}

void bl_doom_apply(struct bl_doomed *d, struct bpf_map *map)
{
	int i;

	for (i = 0; i < d->n; i++)
		bpf_map__delete_elem(map, &d->keys[i], sizeof(d->keys[i]), 0);
	free(d->keys);
	memset(d, 0, sizeof(*d));
}

void bl_listener_free(struct listener *l)
{
	free(l->clients);
	free(l->gone);
	free(l->h);
}

void bl_unretire(struct listener *l)
{
	l->retired = false;
	if (!l->frozen)
		return;
	free(l->gone);
	l->gone = l->clients;	/* what it had is what its clients left */
	l->n_gone = l->n_clients;
	l->cap_gone = l->cap_clients;
	l->clients = NULL;
	l->n_clients = l->cap_clients = 0;
	l->frozen = false;
}
