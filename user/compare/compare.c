// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "interrupt.h"
#include "tmpdir.h"
#include "tracer.h"
#include "util.h"

#define THINK_BUDGET_NS 2000000000ull	/* --think: think time per run with the default count */

/*
 * Defaults sized so that plain --compare finishes in about 25 s on a 2-vCPU VM; large messages
 * get fewer, so that a run moves at most a fixed number of bytes (a 16 MiB stream run would
 * otherwise move 16 TB), and so do pingpongs with --think (1 ms would take 200 s per run).
 */
uint64_t default_count(enum wl_mode mode, uint64_t msg_size, uint64_t think_ns)
{
	uint64_t count, budget;

	switch (mode) {
	case WL_PINGPONG: count = 200000, budget = 512ull << 20; break;
	case WL_STREAM: count = 1000000, budget = 4ull << 30; break;
	case WL_CONNECT: return 20000;
	default: return 1000;
	}
	count = MIN(count, budget / MAX(msg_size, 1));
	if (think_ns)	/* the client's think time: at most THINK_BUDGET_NS of it per run */
		count = MIN(count, THINK_BUDGET_NS / think_ns);
	return MAX(count, 16);
}

uint64_t default_warmup(enum wl_mode mode, uint64_t count)
{
	/* enough to fault in buffers, fill caches and settle TCP's window; count/10 at most */
	uint64_t w = mode == WL_CONNECT ? 200 : 1000;

	return count ? MIN(w, MAX(count / 10, 1)) : w;
}

struct traced_run {
	struct tracer *tr;
	const struct wl_config *cfg;
};

static int on_spawned(void *ctx, pid_t client, pid_t server)
{
	struct traced_run *run = ctx;

	return tracer_begin_run(run->tr, run->cfg, client, server);
}

static void on_measure(void *ctx, bool on)
{
	struct traced_run *run = ctx;

	tracer_measure(run->tr, on);
}

/* " think=100.0 us" on a progress line of a run with --think work, else "". */
static const char *think_note(uint64_t ns, char *buf, size_t len)
{
	char d[32];

	buf[0] = 0;
	if (ns)
		snprintf(buf, len, " think=%s", fmt_dur(ns, false, d, sizeof(d)));
	return buf;
}

/* Per-message time of a run: what overhead and coverage are measured against. */
static double per_message_ns(enum wl_mode mode, const struct wl_result *r)
{
	switch (mode) {
	case WL_PINGPONG: return r->latency.mean;
	case WL_STREAM: return r->msgs_per_sec > 0 ? 1e9 / r->msgs_per_sec : 0;
	default: return r->latency.mean;	/* per connection */
	}
}

/* Transport t's traced run of a pair whose untraced runs are done, its programs attached. */
static int traced_run(struct tracer *tr, const struct compare_opts *opts, struct comparison *cmp,
		      struct pair_result *pr, enum transport t, int n, int total)
{
	struct transport_result *x = &pr->tr[t];
	struct trace_result *res = &x->trace;
	struct traced_run run = { .tr = tr, .cfg = &x->cfg };
	struct wl_hooks hooks = { .ctx = &run, .spawned = on_spawned, .measure = on_measure };
	double traced, untraced;
	char think[40];
	int err;

	if (!opts->quiet)
		say_error("[%d/%d] %-8s %-5s %7llu B cpu=%s%s traced (%s)", n + 1, total,
			mode_names[pr->mode], transport_names[t], (unsigned long long)pr->msg_size,
			place_names[pr->place], think_note(x->cfg.think_ns, think, sizeof(think)),
			cmp->attach_mode);
	err = workload_run(&x->cfg, &hooks, &res->traced);
	if (err)
		return err;
	err = tracer_collect(tr, &x->cfg, cmp->probe_cost_ns, res);
	if (err)
		return err;
	traced = per_message_ns(pr->mode, &res->traced);
	untraced = per_message_ns(pr->mode, &x->untraced);
	res->overhead_ns = traced - untraced;
	res->overhead_pct = untraced > 0 ? 100.0 * (traced - untraced) / untraced : 0;
	/* stages cover send entry to recv exit of one message: compare with the user-space
	 * one-way latency; stream and connect have no single such span */
	res->latency_ns = pr->mode == WL_PINGPONG ? traced : 0;
	res->coverage = res->latency_ns > 0 ? res->stage_sum_ns / res->latency_ns : 0;
	return 0;
}

/* Only the programs on transport t's path attached (the other's would only add hits) while
 * pairs[0..n) run traced on it. */
static int traced_on(struct tracer *tr, const struct compare_opts *opts, struct comparison *cmp,
		     enum transport t, struct pair_result *pairs, int n, int first, int total)
{
	uint64_t attach_ns = 0, detach_ns = 0;
	int i, err;

	err = tracer_attach(tr, t, &attach_ns);
	if (err)
		return err;
	cmp->attach_ns = MAX(cmp->attach_ns, attach_ns);
	for (i = 0; i < n && !err; i++)
		err = traced_run(tr, opts, cmp, &pairs[i], t, first + i, total);
	tracer_detach(tr, &detach_ns);
	cmp->detach_ns = MAX(cmp->detach_ns, detach_ns);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct spread spread_of(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return (struct spread){ v[0], n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[n - 1] };
}

/*
 * --repeat: the pair was run `runs` times, untraced and traced alternating; keep, per
 * transport, the run whose overhead is the median (its stages, latency and coverage belong
 * together) and the median and range of the per-message times and overhead over all runs.
 */
static void keep_median_run(struct pair_result *out, const struct pair_result *reps, int runs)
{
	double un[runs], trd[runs], ov[runs], sorted[runs];
	int t, i, best;

	for (t = 0; t < TR__COUNT; t++) {
		for (i = 0; i < runs; i++) {
			un[i] = per_message_ns(out->mode, &reps[i].tr[t].untraced);
			trd[i] = reps[i].tr[t].trace.valid ? per_message_ns(out->mode, &reps[i].tr[t].trace.traced) : 0;
			ov[i] = sorted[i] = reps[i].tr[t].trace.overhead_pct;
		}
		qsort(sorted, runs, sizeof(double), cmp_double);
		for (best = 0; best < runs && ov[best] != sorted[runs / 2]; best++)
			;
		out->tr[t] = reps[best < runs ? best : 0].tr[t];
		out->tr[t].runs = runs;
		out->tr[t].untraced_ns = spread_of(un, runs);
		out->tr[t].traced_ns = spread_of(trd, runs);
		out->tr[t].overhead_pct = spread_of(ov, runs);
	}
}

/* What one pair of runs measures, and where it stands in the matrix (progress lines). */
struct pair_spec {
	enum wl_mode mode;
	uint64_t size;
	enum cpu_place place;
	uint64_t think_ns;
	const char *sockdir;
	int n, total;
};

/* Both transports untraced, then (tracing) both traced: one run of the pair. */
static int run_pair(struct tracer *tr, const struct compare_opts *opts, struct comparison *cmp,
		    const struct pair_spec *sp, struct pair_result *pr)
{
	char think[40];
	int t, err;

	pr->mode = sp->mode;
	pr->msg_size = sp->size;
	pr->place = sp->place;
	for (t = 0; t < TR__COUNT; t++) {
		struct transport_result *x = &pr->tr[t];
		uint64_t count = opts->count, sized = default_count(sp->mode, sp->size, sp->think_ns);

		if (!count && !opts->duration_s)
			count = sized;
		x->cfg = (struct wl_config){
			.transport = t, .mode = sp->mode, .msg_size = sp->size,
			.count = count, .duration_s = opts->duration_s,
			/* --duration: the warm-up a count run of this size gets (16 MiB: 3, not 1000) */
			.warmup = opts->warmup == UINT64_MAX ? default_warmup(sp->mode, count ?: sized) :
							       opts->warmup,
			.place = sp->place, .sock_dir = sp->sockdir,
			.think_ns = sp->think_ns,
		};
		if (!opts->quiet)
			say_error("[%d/%d] %-8s %-5s %7llu B cpu=%s%s untraced", sp->n + 1,
				sp->total, mode_names[sp->mode], transport_names[t],
				(unsigned long long)sp->size, place_names[sp->place],
				think_note(sp->think_ns, think, sizeof(think)));
		err = workload_run(&x->cfg, NULL, &x->untraced);
		if (err)
			return err;
	}
	for (t = 0; tr && t < TR__COUNT && !err; t++)
		err = traced_on(tr, opts, cmp, t, pr, 1, sp->n, sp->total);
	return err;
}

/* The pair `--repeat` times (at least once), alternating untraced and traced runs. */
static int run_repeated(struct tracer *tr, const struct compare_opts *opts, struct comparison *cmp,
			const struct pair_spec *sp, struct pair_result *out)
{
	int r, runs = MAX(opts->repeat, 1), err = 0;
	struct pair_result *reps = calloc(runs, sizeof(*reps));

	if (!reps)
		return -ENOMEM;
	for (r = 0; r < runs && !err; r++)
		err = run_pair(tr, opts, cmp, sp, &reps[r]);
	if (!err) {
		*out = reps[0];
		keep_median_run(out, reps, runs);
	}
	free(reps);
	return err;
}

/* Runs per (mode, size, placement): one per --think value for pingpong, else one. */
static int mode_thinks(const struct compare_opts *opts, enum wl_mode m)
{
	return m == WL_PINGPONG ? MAX(opts->n_thinks, 1) : 1;
}

int compare_run(const struct compare_opts *opts, struct comparison *cmp)
{
	struct tracer *tr = NULL;
	struct tmpdir sockdir = { .fd = -1 };	/* the socket files */
	int m, s, p, k, t, n = 0, total = 0, err;

	memset(cmp, 0, sizeof(*cmp));
	cmp->think = opts->n_thinks > 0;
	cmp->n_cpus = allowed_cpu_count();
	cpu_model(cmp->cpu_model, sizeof(cmp->cpu_model));
	for (m = 0; m < WL__COUNT; m++)
		for (p = 0; p < CPU__COUNT; p++)
			total += opts->modes[m] && opts->places[p] ? opts->n_sizes * mode_thinks(opts, m) : 0;
	cmp->pairs = calloc(total, sizeof(*cmp->pairs));
	if (!cmp->pairs)
		return -ENOMEM;

	if (opts->trace) {
		err = tracer_open(opts->attach, opts->verbose, &tr);
		if (err)
			return err;
		cmp->attach_mode = attach_mode_names[tracer_mode(tr)];
		cmp->attach_reason = strdup(tracer_reason(tr));
		cmp->stage_granularity = tracer_granularity(tr);
		cmp->missing = strdup(tracer_missing(tr));
		if (!opts->quiet)
			say_error("attach mode %s (%s); calibrating probe cost...",
				cmp->attach_mode, cmp->attach_reason);
		/* Ctrl-C while loading or calibrating: stop here, not after the first run */
		if (!udsprobe_stop)
			cmp->probe_cost_ns = tracer_calibrate(tr);
		if (udsprobe_stop) {
			err = -EINTR;
			goto out;
		}
	}
	err = tmpdir_create(&sockdir, "udsprobe", 0700);
	if (err) {
		tmpdir_say_failure(&sockdir, "", "cannot create a private socket directory in /tmp",
				   err);
		goto out;
	}
	for (p = 0; p < CPU__COUNT; p++) {
		for (m = 0; m < WL__COUNT; m++) {
			if (!opts->places[p] || !opts->modes[m])
				continue;
			for (s = 0; s < opts->n_sizes; s++)
				for (k = 0; k < mode_thinks(opts, m); k++) {
					struct pair_spec spec = { m, opts->sizes[s], p,
								  m == WL_PINGPONG && opts->n_thinks ?
								  opts->thinks[k] : 0, sockdir.path, n, total };

					err = run_repeated(opts->attach_once ? NULL : tr, opts,
							   cmp, &spec, &cmp->pairs[n]);
					if (err)
						goto out;
					cmp->n_pairs = ++n;
				}
		}
	}
	for (t = 0; tr && opts->attach_once && t < TR__COUNT && !err; t++)
		err = traced_on(tr, opts, cmp, t, cmp->pairs, n, 0, total);
out:
	tmpdir_remove(&sockdir);
	tracer_close(tr);
	return err;
}

uint64_t transport_strangers(const struct transport_result *x)
{
	return x->untraced.strangers + x->trace.traced.strangers;
}

uint64_t pair_strangers(const struct pair_result *pr)
{
	return transport_strangers(&pr->tr[TR_UNIX]) + transport_strangers(&pr->tr[TR_TCP]);
}

uint64_t pair_think(const struct pair_result *pr)
{
	return pr->tr[TR_UNIX].cfg.think_ns;
}

int think_curve(const struct comparison *cmp, const struct pair_result **out, int max)
{
	const struct pair_result *first = NULL, *t;
	int i, j, n = 0;

	for (i = 0; i < cmp->n_pairs && !first; i++)
		if (cmp->pairs[i].mode == WL_PINGPONG)
			first = &cmp->pairs[i];
	if (!first || !cmp->think)
		return 0;
	for (i = 0; i < cmp->n_pairs && n < max; i++) {
		t = &cmp->pairs[i];
		if (t->mode != WL_PINGPONG || t->place != first->place || t->msg_size != first->msg_size)
			continue;
		for (j = n++; j > 0 && pair_think(out[j - 1]) > pair_think(t); j--)
			out[j] = out[j - 1];	/* insertion by think time */
		out[j] = t;
	}
	return n;
}

void comparison_free(struct comparison *cmp)
{
	free((char *)cmp->attach_reason);
	free((char *)cmp->missing);
	free(cmp->pairs);
	cmp->pairs = NULL;
	cmp->n_pairs = 0;
}

void compare_rearm(void)
{
	interrupt_rearm();
	workload_interrupt_clear();
}
