// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --metrics ADDR:PORT: the flows so far in Prometheus' text format (docs/TRACE.md,
 * "Metrics"), from a snapshot taken at each scrape (trace_snapshot). Per flow: messages, bytes
 * and misses as counters, the message latency as a histogram, each stage's time as a counter.
 * The busiest TR_METRICS_FLOWS flows keep their labels; the rest add up in one "other" series.
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
	const char *transport, *endpoint, *sender, *receiver;
	/* where the receiver runs (its first pid now; "" when gone or for "other"), as
	 * --backlog labels a listener's owner */
	char netns[16], cgroup[CGROUP_TXT], container[CONTAINER_ID_LEN];
	uint64_t messages, bytes, misses, lat_sum;
	uint64_t le[N_LE];		/* messages at or under each bound, cumulative */
	uint64_t st_sum[FS__COUNT];
};

static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	metrics_label_value(f, v);
	fputc('"', f);
}

static void labels(FILE *f, const struct series *s)
{
	label(f, "transport", s->transport, true);
	label(f, "endpoint", s->endpoint, false);
	label(f, "sender", s->sender, false);
	label(f, "receiver", s->receiver, false);
	label(f, "netns", s->netns, false);
	label(f, "cgroup", s->cgroup, false);
	label(f, "container", s->container, false);
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

static void add_flow(struct series *s, const struct flow *fl)
{
	int i, b;

	s->messages += fl->messages;
	s->bytes += fl->bytes;
	s->misses += fl->misses;
	s->lat_sum += fl->lat_sum;
	for (i = 0; i < FS__COUNT; i++)
		s->st_sum[i] += fl->st_sum[i];
	for (i = 0; i < fl->lat_hist.n; i++) {
		uint64_t v = fl_bucket_value(fl->lat_hist.bucket[i]);

		for (b = 0; b < N_LE; b++)
			if (v <= (1ull << (LE_FIRST + b)))
				s->le[b] += fl->lat_hist.count[i];
	}
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
		labels(f, &v[i]);
		fprintf(f, "} %llu\n", (unsigned long long)*(const uint64_t *)((const char *)&v[i] + off));
	}
}

void trace_metrics_write(const struct trace_run *run, FILE *f)
{
	static struct series v[TR_METRICS_FLOWS + 1];
	int n = 0, i, b, st, folded = 0;

	memset(v, 0, sizeof(v));
	for (i = 0; i < run->n_flows; i++) {	/* busiest first */
		const struct flow *fl = &run->flows[i];
		struct series *s = &v[n < TR_METRICS_FLOWS ? n : TR_METRICS_FLOWS];

		if (n < TR_METRICS_FLOWS) {
			s->transport = trace_transport_name(fl->transport);
			s->endpoint = fl->endpoint;
			s->sender = fl->sender.comm;
			s->receiver = fl->receiver.comm;
			where_it_runs(s, fl);
			n++;
		} else {
			s->transport = s->endpoint = s->sender = s->receiver = "other";
			folded++;
		}
		add_flow(s, fl);
	}
	if (folded)
		n++;
	head(f, "messages_total", "counter", "Messages completed: a send() to the peer's last recv() "
	     "of its bytes, per flow (transport, endpoint, sender and receiver process name)");
	counter(f, "messages_total", v, n, offsetof(struct series, messages));
	head(f, "bytes_total", "counter", "Bytes of those messages");
	counter(f, "bytes_total", v, n, offsetof(struct series, bytes));
	head(f, "misses_total", "counter", "Sends of the flow lost before a later message completed");
	counter(f, "misses_total", v, n, offsetof(struct series, misses));
	head(f, "message_latency_seconds", "histogram",
	     "send() entry to the peer's recv() return, per message");
	for (i = 0; i < n; i++) {
		for (b = 0; b < N_LE; b++) {
			fputs("udsprobe_trace_message_latency_seconds_bucket{", f);
			labels(f, &v[i]);
			fprintf(f, ",le=\"%.9g\"} %llu\n", (double)(1ull << (LE_FIRST + b)) / 1e9,
				(unsigned long long)v[i].le[b]);
		}
		fputs("udsprobe_trace_message_latency_seconds_bucket{", f);
		labels(f, &v[i]);
		fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)v[i].messages);
		fputs("udsprobe_trace_message_latency_seconds_sum{", f);
		labels(f, &v[i]);
		fprintf(f, "} %.9f\n", v[i].lat_sum / 1e9);
		fputs("udsprobe_trace_message_latency_seconds_count{", f);
		labels(f, &v[i]);
		fprintf(f, "} %llu\n", (unsigned long long)v[i].messages);
	}
	head(f, "stage_seconds_total", "counter", "Time the flow's messages spent in each stage of "
	     "docs/TRACE.md (they add up to the latency's sum)");
	for (i = 0; i < n; i++)
		for (st = 0; st < FS__COUNT; st++) {
			fputs("udsprobe_trace_stage_seconds_total{", f);
			labels(f, &v[i]);
			label(f, "stage", fl_stage_names[st], false);
			fprintf(f, "} %.9f\n", v[i].st_sum[st] / 1e9);
		}
	head(f, "flows", "gauge", "Flows so far; those beyond the busiest " TR_METRICS_FLOWS_TXT
	     " add up in the series labelled \"other\"");
	fprintf(f, "udsprobe_trace_flows %d\n", run->n_flows);
	head(f, "flows_folded", "gauge", "Flows added up in the \"other\" series");
	fprintf(f, "udsprobe_trace_flows_folded %d\n", folded);
}
