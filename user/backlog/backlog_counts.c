// SPDX-License-Identifier: GPL-2.0
/*
 * --backlog: counter reads. The BPF counts are per (listener key, client); here
 * they are matched to listeners (by socket, see listener_of), exited clients
 * are moved to user space, closed listeners retired.
 */
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
#include "backlog_table.h"
#include "backlog.skel.h"
#include "util.h"

void bl_val_add(struct bl_val *a, const struct bl_val *b)
{
	a->overflows += b->overflows;
	a->ack_overflows += b->ack_overflows;
	a->other_drops += b->other_drops;
	a->waits += b->waits;
	a->wait_ns += b->wait_ns;
	a->syn_retrans += b->syn_retrans;
}

uint64_t bl_overflows(const struct bl_val *v)
{
	return v->overflows + v->ack_overflows;
}

static struct client *client_add(struct client **arr, int *n, int *cap)
{
	struct client *c = grow_array(*arr, cap, *n, sizeof(*c), 8);

	if (!c)
		return NULL;
	*arr = c;
	c = &(*arr)[(*n)++];
	memset(c, 0, sizeof(*c));
	return c;
}

/*
 * Keep an evicted client's counts (issue 16 item 6): per process for the first
 * MAX_GONE of a listener, then summed per comm with pid unknown, so a storm of
 * short-lived clients costs bounded memory.
 */
#define MAX_GONE 256

static void keep_in(struct client **arr, int *n, int *cap, const struct client *c)
{
	struct client *g;
	int i;

	if (*n >= MAX_GONE) {
		for (i = 0; i < *n; i++)
			if (!(*arr)[i].tgid && !strcmp((*arr)[i].comm, c->comm)) {
				bl_val_add(&(*arr)[i].v, &c->v);
				return;
			}
	}
	g = client_add(arr, n, cap);
	if (!g)
		return;
	*g = *c;
	if (*n > MAX_GONE)
		g->tgid = 0;
}

static void keep_gone(struct listener *l, const struct client *c)
{
	keep_in(&l->gone, &l->n_gone, &l->cap_gone, c);
}

static bool process_gone(uint32_t tgid)
{
	return tgid && kill(tgid, 0) && errno == ESRCH;
}

/* Who client c (c->tgid) is: comm, netns and cgroup as its connect() saw them, else
 * its comm from /proc. */
static void comm_of(struct bl_bpf *b, struct client *c)
{
	struct bl_comm raw = {};

	if (!c->tgid) {
		strcpy(c->comm, "?");
		return;
	}
	if (bpf_map__lookup_elem(b->skel->maps.comms, &c->tgid, sizeof(c->tgid), &raw,
				 sizeof(raw), 0)) {
		bl_proc_comm(c->tgid, c->comm);
		return;
	}
	str_escape(raw.comm, strnlen(raw.comm, BL_COMM_LEN), c->comm, COMM_TXT);
	c->netns = raw.netns;
	c->cgroup = raw.cgroup;
}

/*
 * Read every counter; totals and client lists are rebuilt (the maps are
 * cumulative) on top of what was evicted. Keys of dead clients and of retired
 * listeners are deleted after reading, so the map holds live clients only.
 */
int bl_read_counts(struct bl_state *s, struct bl_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus(), i, c;
	struct bl_key key, next, *prev = NULL;
	struct bl_doomed dead = {};
	struct bl_val *vals, sum;
	struct listener *l;
	struct client *cl;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		l = &s->ls[i];
		if (l->frozen)
			continue;	/* final: its clients and totals stay as they are */
		memset(&l->tot, 0, sizeof(l->tot));
		l->n_clients = 0;
		for (c = 0; c < l->n_gone; c++) {
			cl = client_add(&l->clients, &l->n_clients, &l->cap_clients);
			if (!cl)
				break;
			*cl = l->gone[c];
			bl_val_add(&l->tot, &cl->v);
		}
	}
	while (!bpf_map__get_next_key(b->skel->maps.counts, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(b->skel->maps.counts, &key, sizeof(key), vals,
					 ncpu * sizeof(*vals), 0))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (c = 0; c < ncpu; c++)
			bl_val_add(&sum, &vals[c]);
		l = bl_listener_of(s, &key, true);
		if (!l)
			continue;
		bl_val_add(&l->tot, &sum);
		if (l->frozen) {	/* a closed listener's name counted again: add, evict */
			struct client late = { .tgid = key.tgid, .v = sum };

			comm_of(b, &late);
			keep_in(&l->clients, &l->n_clients, &l->cap_clients, &late);
			if (bl_doom(&dead, &key))
				break;
			continue;
		}
		cl = client_add(&l->clients, &l->n_clients, &l->cap_clients);
		if (!cl)
			continue;
		memset(cl, 0, sizeof(*cl));
		cl->tgid = key.tgid;
		cl->v = sum;
		comm_of(b, cl);
		if (l->retired || process_gone(key.tgid)) {
			keep_gone(l, cl);
			if (bl_doom(&dead, &key))
				break;
		}
	}
	bl_doom_apply(&dead, b->skel->maps.counts);
	free(vals);
	s->missed = b->skel->bss->missed_map_full;
	s->wait_returns_missed = b->skel->bss->wait_returns_missed;
	return bl_read_hists(s, b);
}

void bl_read_netstat(struct bl_state *s, unsigned long long out[2])
{
	char hdr[4096], val[4096], *hs, *vs, *h, *v;
	FILE *f = fopen("/proc/net/netstat", "r");

	s->netstat_ok = false;
	if (!f)
		return;
	while (fgets(hdr, sizeof(hdr), f) && fgets(val, sizeof(val), f)) {
		if (strncmp(hdr, "TcpExt:", 7))
			continue;
		h = strtok_r(hdr, " \n", &hs);
		v = strtok_r(val, " \n", &vs);
		while ((h = strtok_r(NULL, " \n", &hs)) && (v = strtok_r(NULL, " \n", &vs))) {
			if (!strcmp(h, "ListenOverflows"))
				out[0] = strtoull(v, NULL, 10);
			else if (!strcmp(h, "ListenDrops"))
				out[1] = strtoull(v, NULL, 10);
		}
		s->netstat_ok = true;
	}
	fclose(f);
}

int bl_cmp_clients(const void *a, const void *b)
{
	uint64_t x = bl_overflows(&((const struct client *)a)->v) +
		     ((const struct client *)a)->v.waits;
	uint64_t y = bl_overflows(&((const struct client *)b)->v) +
		     ((const struct client *)b)->v.waits;

	return x < y ? 1 : x > y ? -1 : 0;
}

uint64_t bl_listen_drops(const struct listener *l)
{
	return l->family == BL_TCP && l->prev_drops >= l->drops_base ?
	       l->prev_drops - l->drops_base : 0;
}

/*
 * Listeners that closed were reported once (this interval, "closed": true) and
 * are now forgotten (issue 16 item 7): a listener created and closed every 5 ms
 * must not grow every later line. One that overflowed stays for the summary,
 * retired: its counts move to user space (bl_read_counts evicts its keys).
 */
/* Forget the retired listener with the fewest overflows, retired in an earlier
 * interval (its BPF keys evicted since, so none can bring it back): 0, or -ENOENT. */
static int fold_one(struct bl_state *s)
{
	int i, min = -1;

	for (i = 0; i < s->n; i++)
		if (s->ls[i].foldable && (min < 0 || bl_overflows(&s->ls[i].tot) <
						    bl_overflows(&s->ls[min].tot)))
			min = i;
	if (min < 0)
		return -ENOENT;
	s->folded++;
	if (s->ls[min].watched)
		s->folded_overflows += bl_overflows(&s->ls[min].tot);
	bl_listener_free(&s->ls[min]);
	memmove(&s->ls[min], &s->ls[min + 1], (s->n - min - 1) * sizeof(*s->ls));
	s->n--;
	return 0;
}

/*
 * A listener retired an interval ago has all its clients in gone[] (its BPF keys
 * were evicted). Keep the RETIRED_CLIENTS with the most overflows by pid, sum the
 * others per command, and beyond RETIRED_CLIENTS commands into one unknown ("?")
 * entry (counted in s->clients_folded); then give the spare room back and keep
 * them once (freeze). Without this the 1,024 retired listeners a storm keeps drift
 * towards the busiest ones, each with up to MAX_GONE clients twice (gone and
 * clients): 60 MB in the 10-minute storm of docs/BENCHMARKS.md.
 */
#define RETIRED_CLIENTS	8

/* Give back an array's room beyond n entries (at least one kept, realloc of 0 frees). */
static void shrink_clients(struct client **arr, int *cap, int n)
{
	struct client *p;

	if (*cap <= n + 1)
		return;
	p = realloc(*arr, (n ? n : 1) * sizeof(**arr));
	if (p) {
		*arr = p;
		*cap = n ? n : 1;
	}
}

/* The unknown-pid entry of comm in c[0, n), or n. */
static int unknown_of(const struct client *c, int n, const char *comm)
{
	int j;

	for (j = 0; j < n; j++)
		if (!c[j].tgid && !strcmp(c[j].comm, comm))
			break;
	return j;
}

/* c[0, n) to at most RETIRED_CLIENTS by pid, then per command: the new n. */
static int compact_clients(struct bl_state *s, struct client *c, int n_in)
{
	int i, j, n = 0, pids = 0, comms = 0;

	qsort(c, n_in, sizeof(*c), bl_cmp_clients);
	for (i = 0; i < n_in; i++) {
		struct client one = c[i];	/* n <= i: written in place */

		if (one.tgid && pids < RETIRED_CLIENTS) {
			c[n++] = one;
			pids++;
			continue;
		}
		s->clients_folded += !!one.tgid;
		one.tgid = 0;
		j = unknown_of(c, n, one.comm);
		if (j == n && comms == RETIRED_CLIENTS) {	/* too many commands: unknown */
			strcpy(one.comm, "?");
			j = unknown_of(c, n, one.comm);
		}
		if (j < n) {
			bl_val_add(&c[j].v, &one.v);
			continue;
		}
		c[n++] = one;
		comms++;
	}
	return n;
}

/*
 * A retired listener's keys are evicted: its clients are all in gone[] and its
 * totals final. Compact them and keep them once, as its client list (frozen:
 * bl_read_counts no longer rebuilds it).
 */
static void freeze(struct bl_state *s, struct listener *l)
{
	l->n_gone = compact_clients(s, l->gone, l->n_gone);
	shrink_clients(&l->gone, &l->cap_gone, l->n_gone);
	free(l->clients);
	l->clients = l->gone;
	l->n_clients = l->n_gone;
	l->cap_clients = l->cap_gone;
	l->gone = NULL;
	l->n_gone = l->cap_gone = 0;
	l->frozen = true;
}

void bl_retire_closed(struct bl_state *s, struct bl_bpf *b)
{
	int i, n = 0, retired = 0;

	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];
		const struct bl_val *t = &l->tot;
		bool events = t->overflows || t->ack_overflows || t->other_drops || t->waits ||
			      t->syn_retrans || bl_listen_drops(l) ||
			      (l->h && (l->h->cur.accepted || l->h->cur.queued));

		l->foldable = l->retired;	/* retired before this call */
		if (l->foldable && !l->frozen)
			freeze(s, l);
		else if (l->frozen && l->n_clients > 2 * RETIRED_CLIENTS)	/* late clients */
			l->n_clients = compact_clients(s, l->clients, l->n_clients);
		if (l->ino && !l->present) {
			if (!events) {
				bl_listener_free(l);
				continue;
			}
			l->retired = true;
		} else if (!l->ino && !events && !l->n_gone && !l->n_clients) {
			bl_listener_free(l);	/* known from counts that moved elsewhere */
			continue;
		}
		retired += l->retired;
		if (n != i)
			s->ls[n] = *l;
		n++;
	}
	s->n = n;
	for (; retired > BL_MAX_RETIRED && !fold_one(s); retired--)
		;
}

int bl_cmp_listeners(const void *a, const void *b)
{
	const struct listener *x = a, *y = b;
	uint64_t ox = bl_overflows(&x->tot) + x->tot.waits, oy = bl_overflows(&y->tot) + y->tot.waits;

	if (ox != oy)
		return ox < oy ? 1 : -1;
	if (x->family != y->family)
		return x->family - y->family;
	return strcmp(x->addr, y->addr);
}

int bl_owner_pid(const struct listener *l)
{
	return l->n_holders ? l->holders[0] : 0;
}

void bl_sort(struct bl_state *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ls[i].n_clients)
			qsort(s->ls[i].clients, s->ls[i].n_clients, sizeof(struct client),
			      bl_cmp_clients);
	qsort(s->ls, s->n, sizeof(*s->ls), bl_cmp_listeners);
}
