// SPDX-License-Identifier: GPL-2.0
/*
 * --backlog: how long connects wait. The BPF side keeps, per listener, a log2
 * histogram of the time from a connection entering the queue to its accept()
 * and one of the queue depth each queued connect found (struct bl_hist); here
 * they are read, matched to listeners like the counts, kept when a listener
 * closes, and turned into quantiles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "backlog_bpf.h"
#include "backlog_table.h"
#include "backlog.skel.h"
#include "hist.h"
#include "util.h"

void bl_hist_add(struct bl_hist *a, const struct bl_hist *b)
{
	int i;

	for (i = 0; i < BL_WAIT_SLOTS; i++)
		a->wait_slots[i] += b->wait_slots[i];
	for (i = 0; i < BL_DEPTH_SLOTS; i++)
		a->depth_slots[i] += b->depth_slots[i];
	a->accepted += b->accepted;
	a->wait_ns += b->wait_ns;
	a->wait_max_ns = MAX(a->wait_max_ns, b->wait_max_ns);
	a->queued += b->queued;
	a->depth_sum += b->depth_sum;
	a->depth_max = MAX(a->depth_max, b->depth_max);
}

/* Upper bounds of the slots (bpf/backlog.h): seconds, and connections. */
double bl_wait_le(int slot)
{
	return (double)(2ull << slot) / 1e6;
}

uint64_t bl_depth_le(int slot)
{
	return slot < 16 ? (uint64_t)slot : (2ull << (slot - 12)) - 1;
}

/* An upper estimate (the slot's bound, never above the maximum seen), in seconds. */
double bl_wait_quantile(const struct bl_hist *h, double q)
{
	int slot = hist_quantile_bucket((const uint64_t *)h->wait_slots, BL_WAIT_SLOTS, h->accepted,
					q);
	double max = h->wait_max_ns / 1e9;

	if (slot < 0)
		return 0;
	return MIN(bl_wait_le(slot), max);
}

uint64_t bl_depth_quantile(const struct bl_hist *h, double q)
{
	int slot = hist_quantile_bucket((const uint64_t *)h->depth_slots, BL_DEPTH_SLOTS, h->queued,
					q);

	if (slot < 0)
		return 0;
	return MIN(bl_depth_le(slot), h->depth_max);
}

static struct bl_hists *hists_of(struct listener *l)
{
	if (!l->h)
		l->h = calloc(1, sizeof(*l->h));
	return l->h;
}

/*
 * Rebuild every listener's histograms: what closed listeners had (base) plus the
 * map. Keys of retired listeners move into base and are deleted, as their counts;
 * keys of no known listener are deleted and counted (s->waits_unattributed).
 */
int bl_read_hists(struct bl_state *s, struct bl_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus(), i, c;
	struct bpf_map *map = b->skel->maps.hists;
	struct bl_key key, next, *prev = NULL;
	struct bl_doomed dead = {};
	struct bl_hist *vals, sum;
	struct listener *l;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		if (s->ls[i].h)
			s->ls[i].h->cur = s->ls[i].h->base;
	while (!bpf_map__get_next_key(map, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(map, &key, sizeof(key), vals, ncpu * sizeof(*vals), 0))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (c = 0; c < ncpu; c++)
			bl_hist_add(&sum, &vals[c]);
		/* waits alone make no listener: one udsprobe never saw (closed within a
		 * sample of its first connect, another netns) would never retire */
		l = bl_listener_of(s, &key, false);
		if (l && hists_of(l)) {
			bl_hist_add(&l->h->cur, &sum);
			if (!l->retired)
				continue;
			bl_hist_add(&l->h->base, &sum);
		} else {
			s->waits_unattributed += sum.accepted;
		}
		if (bl_doom(&dead, &key))
			break;
	}
	bl_doom_apply(&dead, map);
	free(vals);
	return 0;
}
