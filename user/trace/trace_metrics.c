// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --metrics ADDR:PORT: the flows so far in Prometheus' text format (docs/TRACE.md,
 * "Metrics"), from a snapshot taken at each scrape (trace_snapshot). Per flow: messages, bytes
 * and misses as counters, the message latency and each stage's time as histograms, each
 * stage's time also as a counter, and with --detail full the kernel stages' as counters.
 * The busiest TR_METRICS_FLOWS flows keep their labels; the rest add up in one "other" series
 * per transport.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "metrics_http.h"
#include "trace_metrics.h"
#include "util.h"

/* the histogram's bounds: 2^10 .. 2^30 ns (1 us .. 1.07 s), then +Inf */
enum { LE_FIRST = 10, LE_LAST = 30, N_LE = LE_LAST - LE_FIRST + 1 };

struct series {
	int tr;				/* enum fl_transport; 0: no flow yet */
	const char *endpoint, *sender, *receiver;
	/* where the receiver runs (its first pid now; "" when gone or for "other"), as
	 * --backlog labels a listener's owner */
	char netns[16], cgroup[CGROUP_TXT], container[CONTAINER_ID_LEN];
	uint64_t messages, bytes, misses, lat_sum;
	struct buckets {
		uint64_t le[N_LE];	/* at or under each bound, cumulative */
		uint64_t n;		/* all: the +Inf bucket */
	} lat, st[FS__COUNT];
	uint64_t st_sum[FS__COUNT], st_cnt[FS__COUNT], k_sum[FK__COUNT], rk_sum[FR__COUNT];
	uint64_t bk_sum[FBO__COUNT][FBK__COUNT];
};

static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	metrics_label_value(f, v);
	fputc('"', f);
}

/* The series' labels, then stage="..." when a stage is named. */
static void labels(FILE *f, const struct series *s, const char *stage)
{
	label(f, "transport", trace_transport_name(s->tr), true);
	label(f, "endpoint", s->endpoint, false);
	label(f, "sender", s->sender, false);
	label(f, "receiver", s->receiver, false);
	label(f, "netns", s->netns, false);
	label(f, "cgroup", s->cgroup, false);
	label(f, "container", s->container, false);
	if (stage)
		label(f, "stage", stage, false);
}

static void where_it_runs(struct series *s, const struct flow *fl)
{
	int pid = fl->receiver.n_pids ? (int)fl->receiver.pids[0] : 0;
	uint32_t ns = proc_netns(pid);

	if (ns)
		snprintf(s->netns, sizeof(s->netns), "%u", ns);
	if (pid > 0)
		proc_cgroup(pid, s->cgroup, sizeof(s->cgroup));
	cgroup_container_id(s->cgroup, s->container, sizeof(s->container));
}

static void add_buckets(struct buckets *to, const struct sparse_hist *h)
{
	int i, b;

	for (i = 0; i < h->n; i++) {
		uint64_t v = fl_bucket_value(h->bucket[i]);

		for (b = 0; b < N_LE; b++)
			if (v <= (1ull << (LE_FIRST + b)))
				to->le[b] += h->count[i];
		to->n += h->count[i];
	}
}

static void add_flow(struct series *s, const struct flow *fl)
{
	int i;

	s->messages += fl->messages;
	s->bytes += fl->bytes;
	s->misses += fl->misses;
	s->lat_sum += fl->lat_sum;
	add_buckets(&s->lat, &fl->lat_hist);
	for (i = 0; i < FS__COUNT; i++) {
		s->st_sum[i] += fl->st_sum[i];
		s->st_cnt[i] += fl->st_cnt[i];
		add_buckets(&s->st[i], &fl->st_hist[i]);
	}
	for (i = 0; i < FK__COUNT; i++)
		s->k_sum[i] += fl->k_sum[i];
	for (i = 0; i < FR__COUNT; i++)
		s->rk_sum[i] += fl->rk_sum[i];
	for (i = 0; i < FBO__COUNT * FBK__COUNT; i++)
		s->bk_sum[i / FBK__COUNT][i % FBK__COUNT] += fl->bk_sum[i / FBK__COUNT][i % FBK__COUNT];
}

/* The series' kernel stages, in ns (not per message), cut as the report cuts a flow's. */
static int kernel_stages(const struct trace_run *run, const struct series *s,
			 struct flow_kstage *ks)
{
	struct kstage_in in = { s->tr, run->kstages, run->rkstages, s->k_sum, s->rk_sum,
				s->bk_sum, s->st_sum, trace_stages_passed(s->st_cnt), 1.0 };

	return trace_kstages_cut(&in, ks);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP udsprobe_trace_%s %s\n# TYPE udsprobe_trace_%s %s\n", name, help, name,
		type);
}

static void counter(FILE *f, const char *name, const struct series *v, int n, size_t off)
{
	int i;

	for (i = 0; i < n; i++) {
		fprintf(f, "udsprobe_trace_%s{", name);
		labels(f, &v[i], NULL);
		fprintf(f, "} %llu\n", (unsigned long long)*(const uint64_t *)((const char *)&v[i] + off));
	}
}

/* One series' histogram; stage: its stage label, or NULL. */
static void histogram(FILE *f, const char *name, const struct series *s, const char *stage,
		      const struct buckets *h, uint64_t sum_ns)
{
	int b;

	for (b = 0; b <= N_LE; b++) {
		fprintf(f, "udsprobe_trace_%s_bucket{", name);
		labels(f, s, stage);
		if (b < N_LE)
			fprintf(f, ",le=\"%.9g\"} %llu\n", (double)(1ull << (LE_FIRST + b)) / 1e9,
				(unsigned long long)h->le[b]);
		else
			fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->n);
	}
	fprintf(f, "udsprobe_trace_%s_sum{", name);
	labels(f, s, stage);
	fprintf(f, "} %.9f\nudsprobe_trace_%s_count{", sum_ns / 1e9, name);
	labels(f, s, stage);
	fprintf(f, "} %llu\n", (unsigned long long)h->n);
}

void trace_metrics_write(const struct trace_run *run, FILE *f)
{
	/* the kept flows, then one "other" series per transport (FL_UNIX, FL_TCP) */
	static struct series v[TR_METRICS_FLOWS + 2];
	struct series *other = &v[TR_METRICS_FLOWS];
	struct flow_kstage ks[TR_MAX_KSTAGES];
	int n = 0, i, k, nk, st, folded = 0;

	memset(v, 0, sizeof(v));
	for (i = 0; i < run->n_flows; i++) {	/* busiest first */
		const struct flow *fl = &run->flows[i];
		bool kept = n < TR_METRICS_FLOWS;
		struct series *s = kept ? &v[n++] : &other[fl->transport == FL_TCP];

		s->tr = fl->transport;
		if (kept) {
			s->endpoint = fl->endpoint;
			s->sender = fl->sender.comm;
			s->receiver = fl->receiver.comm;
			where_it_runs(s, fl);
		} else {
			s->endpoint = s->sender = s->receiver = "other";
			folded++;
		}
		add_flow(s, fl);
	}
	for (i = 0; i < 2; i++)		/* the other series that have flows, after the kept */
		if (other[i].tr)
			v[n++] = other[i];
	head(f, "messages_total", "counter", "Messages completed: a send() to the peer's last recv() "
	     "of its bytes, per flow (transport, endpoint, sender and receiver process name)");
	counter(f, "messages_total", v, n, offsetof(struct series, messages));
	head(f, "bytes_total", "counter", "Bytes of those messages");
	counter(f, "bytes_total", v, n, offsetof(struct series, bytes));
	head(f, "misses_total", "counter", "Sends of the flow lost before a later message completed");
	counter(f, "misses_total", v, n, offsetof(struct series, misses));
	head(f, "message_latency_seconds", "histogram",
	     "send() entry to the peer's recv() return, per message");
	for (i = 0; i < n; i++)
		histogram(f, "message_latency_seconds", &v[i], NULL, &v[i].lat, v[i].lat_sum);
	head(f, "stage_latency_seconds", "histogram", "Time one message spent in a stage of "
	     "docs/TRACE.md, per message that passed through it");
	for (i = 0; i < n; i++)
		for (st = 0; st < FS__COUNT; st++)
			if (v[i].st[st].n)
				histogram(f, "stage_latency_seconds", &v[i], fl_stage_names[st],
					  &v[i].st[st], v[i].st_sum[st]);
	head(f, "stage_seconds_total", "counter", "Time the flow's messages spent in each stage of "
	     "docs/TRACE.md (they add up to the latency's sum)");
	for (i = 0; i < n; i++)
		for (st = 0; st < FS__COUNT; st++) {
			fputs("udsprobe_trace_stage_seconds_total{", f);
			labels(f, &v[i], fl_stage_names[st]);
			fprintf(f, "} %.9f\n", v[i].st_sum[st] / 1e9);
		}
	head(f, "kernel_stage_seconds_total", "counter", "--detail full: time the flow's messages "
	     "spent in each kernel stage of docs/TRACE.md (stage; of: the stage it is part of)");
	for (i = 0; i < n; i++) {
		nk = kernel_stages(run, &v[i], ks);
		for (k = 0; k < nk; k++) {
			fputs("udsprobe_trace_kernel_stage_seconds_total{", f);
			labels(f, &v[i], ks[k].name);
			label(f, "of", fl_stage_names[ks[k].of], false);
			fprintf(f, "} %.9f\n", ks[k].ns_per_msg / 1e9);
		}
	}
	head(f, "flows", "gauge", "Flows so far; those beyond the busiest " TR_METRICS_FLOWS_TXT
	     " add up in one series per transport labelled \"other\"");
	fprintf(f, "udsprobe_trace_flows %d\n", run->n_flows);
	head(f, "flows_folded", "gauge", "Flows added up in the \"other\" series");
	fprintf(f, "udsprobe_trace_flows_folded %d\n", folded);
}
