// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --slower-than DUR: flows.bpf.c puts each message slower than DUR in
 * the outliers ring buffer (its flow key, boundaries and stages); this polls it
 * during the run, names each record's endpoint, applies --unix/--port and keeps
 * it in struct trace_run (at most TR_MAX_OUTLIERS; more are counted). The
 * kernel's clock (CLOCK_MONOTONIC) becomes wall-clock time here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "flows.h"	/* before the skeleton: its .bss has struct fl_bulk_slot */
#include "flows.skel.h"
#include "trace_collect.h"
#include "trace_outliers.h"
#include "util.h"

struct trace_outliers {
	struct ring_buffer *rb;
	struct flows_bpf *skel;
	const struct trace_opts *o;
	struct trace_run *run;
	int cap;
	int64_t mono_to_wall;	/* CLOCK_REALTIME - CLOCK_MONOTONIC at the start */
};

static int take(void *ctx, void *data, size_t size)
{
	struct trace_outliers *t = ctx;
	const struct fl_outlier *r = data;
	struct trace_run *run = t->run;
	struct trace_outlier *x;
	char ep[sizeof(x->endpoint)];

	if (size < sizeof(*r))
		return 0;
	trace_endpoint_name(t->skel, run, &r->key, ep, sizeof(ep));
	if (!trace_endpoint_selected(t->o, &r->key, ep))
		return 0;
	if (run->n_outliers == TR_MAX_OUTLIERS) {
		run->outliers_not_kept++;
		return 0;
	}
	x = grow_array(run->outliers, &t->cap, run->n_outliers, sizeof(*x), 64);
	if (!x) {
		run->outliers_not_kept++;
		return 0;
	}
	run->outliers = x;
	x = &run->outliers[run->n_outliers++];
	memset(x, 0, sizeof(*x));
	x->time_ns = r->bound[FB_SEND_ENTRY] + t->mono_to_wall;
	x->transport = r->key.transport;
	memcpy(x->endpoint, ep, sizeof(ep));
	str_escape(r->key.s_comm, strnlen(r->key.s_comm, FL_COMM_LEN), x->s_comm, sizeof(x->s_comm));
	str_escape(r->key.r_comm, strnlen(r->key.r_comm, FL_COMM_LEN), x->r_comm, sizeof(x->r_comm));
	x->s_pid = r->key.s_tgid;
	x->s_tid = r->s_tid;
	x->r_pid = r->key.r_tgid;
	x->r_tid = r->r_tid;
	x->bytes = r->bytes;
	x->latency_ns = r->latency_ns;
	x->stages = r->stages;
	x->unseen = r->unseen;
	memcpy(x->stage_ns, r->stage_ns, sizeof(x->stage_ns));
	memcpy(x->k, r->k, sizeof(x->k));
	memcpy(x->rk, r->rk, sizeof(x->rk));
	memcpy(x->bk, r->bk, sizeof(x->bk));
	x->kseen = run->kstages;
	x->rkseen = run->rkstages;
	return 0;
}

int trace_outliers_open(struct flows_bpf *skel, const struct trace_opts *o,
			struct trace_run *run, struct trace_outliers **out)
{
	struct trace_outliers *t;
	int err;

	*out = NULL;
	run->slower_than_ns = o->slower_than_ns;
	if (!o->slower_than_ns)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t) {
		say_error("--slower-than: out of memory");
		return -ENOMEM;
	}
	t->skel = skel;
	t->o = o;
	t->run = run;
	t->mono_to_wall = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
	t->rb = ring_buffer__new(bpf_map__fd(skel->maps.outliers), take, t, NULL);
	if (!t->rb) {
		err = -errno;
		say_error("--slower-than: cannot read the outliers ring buffer: %s",
			strerror(-err));
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

int trace_outliers_poll(struct trace_outliers *t, int timeout_ms)
{
	int n = ring_buffer__poll(t->rb, timeout_ms);

	return n < 0 && n != -EINTR ? n : 0;
}

void trace_outliers_close(struct trace_outliers *t)
{
	if (!t)
		return;
	ring_buffer__consume(t->rb);
	t->run->outliers_dropped = t->skel->bss->outliers_dropped;
	ring_buffer__free(t->rb);
	free(t);
}
