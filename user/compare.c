// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "tracer.h"
#include "util.h"

/* Defaults sized so that plain --compare finishes in about 15 s on a 2-vCPU VM. */
uint64_t default_count(enum wl_mode mode)
{
	switch (mode) {
	case WL_PINGPONG: return 200000;
	case WL_STREAM: return 1000000;
	case WL_CONNECT: return 20000;
	default: return 1000;
	}
}

uint64_t default_warmup(enum wl_mode mode, uint64_t count)
{
	/* enough to fault in buffers, fill caches and settle TCP's window; count/10 at most */
	uint64_t w = mode == WL_CONNECT ? 200 : 1000;

	return count ? MIN(w, MAX(count / 10, 1)) : w;
}

static void read_cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
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

/* Per-message time of a run: what overhead and coverage are measured against. */
static double per_message_ns(enum wl_mode mode, const struct wl_result *r)
{
	switch (mode) {
	case WL_PINGPONG: return r->latency.mean;
	case WL_STREAM: return r->msgs_per_sec > 0 ? 1e9 / r->msgs_per_sec : 0;
	default: return r->latency.mean;	/* per connection */
	}
}

static int traced_pair(struct tracer *tr, const struct compare_opts *opts, struct comparison *cmp,
		       struct pair_result *pr, int n, int total)
{
	uint64_t attach_ns = 0, detach_ns = 0;
	int t, err = 0;

	for (t = 0; t < TR__COUNT && !err; t++) {
		struct transport_result *x = &pr->tr[t];
		struct trace_result *res = &x->trace;
		struct traced_run run = { .tr = tr, .cfg = &x->cfg };
		struct wl_hooks hooks = { .ctx = &run, .spawned = on_spawned, .measure = on_measure };
		double traced, untraced;

		/* only the programs on this transport's path: the other's would only add hits */
		err = tracer_attach(tr, t, &attach_ns);
		if (err)
			break;
		cmp->attach_ns = MAX(cmp->attach_ns, attach_ns);
		if (!opts->quiet)
			fprintf(stderr, "udsprobe: [%d/%d] %-8s %-5s %7llu B cpu=%s traced (%s)\n", n + 1,
				total, mode_names[pr->mode], transport_names[t],
				(unsigned long long)pr->msg_size, place_names[pr->place], cmp->attach_mode);
		err = workload_run(&x->cfg, &hooks, &res->traced);
		tracer_detach(tr, &detach_ns);
		cmp->detach_ns = MAX(cmp->detach_ns, detach_ns);
		if (err)
			break;
		tracer_collect(tr, &x->cfg, cmp->probe_cost_ns, res);
		traced = per_message_ns(pr->mode, &res->traced);
		untraced = per_message_ns(pr->mode, &x->untraced);
		res->overhead_ns = traced - untraced;
		res->overhead_pct = untraced > 0 ? 100.0 * (traced - untraced) / untraced : 0;
		/* stages cover send entry to recv exit of one message: compare with the
		 * user-space one-way latency; stream and connect have no single such span */
		res->latency_ns = pr->mode == WL_PINGPONG ? traced : 0;
		res->coverage = res->latency_ns > 0 ? res->stage_sum_ns / res->latency_ns : 0;
	}
	return err;
}

int compare_run(const struct compare_opts *opts, struct comparison *cmp)
{
	struct tracer *tr = NULL;
	char sockdir[64];
	int m, s, p, t, n = 0, total = 0, err;

	memset(cmp, 0, sizeof(*cmp));
	cmp->n_cpus = allowed_cpu_count();
	read_cpu_model(cmp->cpu_model, sizeof(cmp->cpu_model));
	for (m = 0; m < WL__COUNT; m++)
		for (p = 0; p < CPU__COUNT; p++)
			total += opts->modes[m] && opts->places[p] ? opts->n_sizes : 0;
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
			fprintf(stderr, "udsprobe: attach mode %s (%s); calibrating probe cost...\n",
				cmp->attach_mode, cmp->attach_reason);
		cmp->probe_cost_ns = tracer_calibrate(tr);
	}
	err = sockdir_create(sockdir, sizeof(sockdir));
	if (err) {
		fprintf(stderr, "udsprobe: cannot create a private socket directory in /tmp: %s\n",
			strerror(-err));
		goto out;
	}
	for (p = 0; p < CPU__COUNT; p++) {
		for (m = 0; m < WL__COUNT; m++) {
			if (!opts->places[p] || !opts->modes[m])
				continue;
			for (s = 0; s < opts->n_sizes; s++) {
				struct pair_result *pr = &cmp->pairs[n];

				pr->mode = m;
				pr->msg_size = opts->sizes[s];
				pr->place = p;
				for (t = 0; t < TR__COUNT; t++) {
					struct transport_result *x = &pr->tr[t];
					uint64_t count = opts->count;

					if (!count && !opts->duration_s)
						count = default_count(m);
					x->cfg = (struct wl_config){
						.transport = t, .mode = m, .msg_size = opts->sizes[s],
						.count = count, .duration_s = opts->duration_s,
						.warmup = opts->warmup == UINT64_MAX ?
							default_warmup(m, count) : opts->warmup,
						.place = p, .sock_dir = sockdir,
					};
					if (!opts->quiet)
						fprintf(stderr, "udsprobe: [%d/%d] %-8s %-5s %7llu B cpu=%s untraced\n",
							n + 1, total, mode_names[m], transport_names[t],
							(unsigned long long)opts->sizes[s], place_names[p]);
					err = workload_run(&x->cfg, NULL, &x->untraced);
					if (err)
						goto out;
				}
				if (tr) {
					err = traced_pair(tr, opts, cmp, pr, n, total);
					if (err)
						goto out;
				}
				cmp->n_pairs = ++n;
			}
		}
	}
	sockdir_remove(sockdir);
out:
	tracer_close(tr);
	return err;
}

void comparison_free(struct comparison *cmp)
{
	free((char *)cmp->attach_reason);
	free((char *)cmp->missing);
	free(cmp->pairs);
	cmp->pairs = NULL;
	cmp->n_pairs = 0;
}
