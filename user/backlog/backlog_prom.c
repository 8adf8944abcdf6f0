// SPDX-License-Identifier: GPL-2.0
/* --backlog --prom: the Prometheus textfile, from a table of metrics with one getter each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "backlog_out.h"
#include "metrics_http.h"
#include "util.h"

/* The netns label (two listeners of one name in two namespaces are two series), and
 * where the owner runs: its cgroup and container id (empty when unknown). One value
 * each per listener, so they add no series. */
static void prom_netns(FILE *f, const struct listener *l)
{
	if (l->netns)
		fprintf(f, "netns=\"%u\"", l->netns);
	else
		fprintf(f, "netns=\"\"");
	fprintf(f, ",cgroup=\"");
	metrics_label_value(f, l->cgroup);
	fprintf(f, "\",container=\"%s\"", l->container);
}

/* The listener's labels; le: a histogram bucket's bound (NULL: none). */
static void prom_labels(FILE *f, const struct listener *l, const char *le)
{
	fprintf(f, "{family=\"%s\",address=\"", bl_family_name(l->family));
	metrics_label_value(f, l->addr);
	fprintf(f, "\",owner_comm=\"");
	metrics_label_value(f, bl_owner_pid(l) ? l->owner_comm : "");
	fprintf(f, "\",owner_pid=\"%d\",", bl_owner_pid(l));
	prom_netns(f, l);
	if (le)
		fprintf(f, ",le=\"%s\"", le);
	fputc('}', f);
}

static void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP udsprobe_backlog_%s %s\n# TYPE udsprobe_backlog_%s %s\n", name, help,
		name, type);
}

static double get_limit(const struct listener *l) { return l->limit; }
static double get_queue(const struct listener *l) { return l->qlen; }
static double get_peak(const struct listener *l) { return l->peak; }
static double get_overflows(const struct listener *l) { return bl_overflows(&l->tot); }
static double get_waits(const struct listener *l) { return l->tot.waits; }
static double get_wait_s(const struct listener *l) { return l->tot.wait_ns / 1e9; }
static double get_syn_retrans(const struct listener *l) { return l->tot.syn_retrans; }
static double get_listen_drops(const struct listener *l) { return bl_listen_drops(l); }

/* Per-listener metrics: one row each, one getter each; family 0 = both families;
 * overflows: no series for a listener whose overflows are not counted (never a 0). */
static const struct prom_metric {
	const char *name, *type, *help;
	int family;
	double (*get)(const struct listener *l);
	bool overflows;
} metrics[] = {
	{ "limit", "gauge", "Listen queue limit (sk_max_ack_backlog).", 0, get_limit },
	{ "queue_length", "gauge", "Connections waiting in the listen queue now.", 0, get_queue },
	{ "queue_peak", "gauge", "Highest listen queue length seen since udsprobe started.", 0,
	  get_peak },
	{ "overflows_total", "counter",
	  "Connection attempts refused (unix EAGAIN) or dropped (tcp) at a full listen queue; "
	  "no tcp series where udsprobe_backlog_tcp_overflows_counted is 0.", 0, get_overflows,
	  true },
	{ "connect_waits_total", "counter",
	  "Blocking AF_UNIX connects that slept waiting for room in the queue.", BL_UNIX,
	  get_waits },
	{ "connect_wait_seconds_total", "counter", "Time those connects slept.", BL_UNIX,
	  get_wait_s },
	{ "syn_retransmits_total", "counter", "Local clients' SYN retransmits to this port.",
	  BL_TCP, get_syn_retrans },
	{ "listen_drops_total", "counter",
	  "Kernel per-socket drop counter (sk_drops) of a TCP listener, since start.", BL_TCP,
	  get_listen_drops },
};

/* Overflows per (listener, client comm): clients of one comm summed, at the first of them. */
static void prom_clients(FILE *f, const struct listener *l)
{
	int j, x;

	for (j = 0; j < l->n_clients; j++) {
		uint64_t n = 0;

		for (x = 0; x < j; x++)
			if (!strcmp(l->clients[x].comm, l->clients[j].comm))
				break;
		if (x < j)
			continue;
		for (x = j; x < l->n_clients; x++)
			if (!strcmp(l->clients[x].comm, l->clients[j].comm))
				n += bl_overflows(&l->clients[x].v);
		if (!n)
			continue;
		fprintf(f, "udsprobe_backlog_client_overflows_total{family=\"%s\",address=\"",
			bl_family_name(l->family));
		metrics_label_value(f, l->addr);
		fprintf(f, "\",client_comm=\"");
		metrics_label_value(f, l->clients[j].comm);
		fprintf(f, "\",");
		prom_netns(f, l);
		fprintf(f, "} %llu\n", (unsigned long long)n);
	}
}

/* One listener's histogram: cumulative buckets (the last slot is open-ended: only
 * +Inf), _sum and _count. le_of(slot) gives the bound as text. */
static void prom_histogram(FILE *f, const struct listener *l, const char *name,
			   const __u64 *slots, int n_slots, double sum, uint64_t count,
			   void (*le_of)(int slot, char *buf, size_t len))
{
	uint64_t cum = 0;
	char le[32];
	int i;

	for (i = 0; i < n_slots - 1; i++) {
		cum += slots[i];
		le_of(i, le, sizeof(le));
		fprintf(f, "udsprobe_backlog_%s_bucket", name);
		prom_labels(f, l, le);
		fprintf(f, " %llu\n", (unsigned long long)cum);
	}
	fprintf(f, "udsprobe_backlog_%s_bucket", name);
	prom_labels(f, l, "+Inf");
	fprintf(f, " %llu\nudsprobe_backlog_%s_sum", (unsigned long long)count, name);
	prom_labels(f, l, NULL);
	fprintf(f, " %.9g\nudsprobe_backlog_%s_count", sum, name);
	prom_labels(f, l, NULL);
	fprintf(f, " %llu\n", (unsigned long long)count);
}

static void wait_le(int slot, char *buf, size_t len)
{
	snprintf(buf, len, "%.9g", bl_wait_le(slot));
}

static void depth_le(int slot, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)bl_depth_le(slot));
}

/* Accept waits and arrival depths of the listeners that had a connect queued. */
static void prom_waits(struct bl_state *s, FILE *f)
{
	int i;

	prom_head(f, "accept_wait_seconds", "histogram",
		  "Time from a connection entering the listen queue to its accept().");
	for (i = 0; i < s->n; i++) {
		const struct listener *l = &s->ls[i];

		if (l->watched && !l->retired && l->h)
			prom_histogram(f, l, "accept_wait_seconds", l->h->cur.wait_slots,
				       BL_WAIT_SLOTS, l->h->cur.wait_ns / 1e9, l->h->cur.accepted,
				       wait_le);
	}
	prom_head(f, "queue_length_on_arrival", "histogram",
		  "Connections already in the listen queue when a connect entered it (no unix "
		  "series where udsprobe_backlog_unix_queue_depth_seen is 0).");
	for (i = 0; i < s->n; i++) {
		const struct listener *l = &s->ls[i];

		if (l->watched && !l->retired && l->h && !bl_depth_unknown(s, l))
			prom_histogram(f, l, "queue_length_on_arrival", l->h->cur.depth_slots,
				       BL_DEPTH_SLOTS, l->h->cur.depth_sum, l->h->cur.queued,
				       depth_le);
	}
}

/* The namespace and run-wide metrics after the per-listener ones. */
static void prom_run(struct bl_state *s, FILE *f, long long now)
{
	if (s->netstat_ok) {
		prom_head(f, "netstat_listen_overflows_total", "counter",
			  "TcpExt ListenOverflows of this network namespace, since start.");
		fprintf(f, "udsprobe_backlog_netstat_listen_overflows_total %llu\n",
			s->netstat[0] - s->netstat0[0]);
		prom_head(f, "netstat_listen_drops_total", "counter",
			  "TcpExt ListenDrops of this network namespace, since start.");
		fprintf(f, "udsprobe_backlog_netstat_listen_drops_total %llu\n",
			s->netstat[1] - s->netstat0[1]);
	}
	prom_head(f, "dropped_events_total", "counter",
		  "Events not counted because a BPF map was full (should stay 0).");
	fprintf(f, "udsprobe_backlog_dropped_events_total %llu\n", (unsigned long long)s->missed);
	prom_head(f, "wait_returns_missed_total", "counter",
		  "unix_wait_for_peer returns its kretprobe missed (kprobe mode, more sleepers than "
		  "maxactive); those waits ended at connect's return.");
	fprintf(f, "udsprobe_backlog_wait_returns_missed_total %llu\n",
		(unsigned long long)s->wait_returns_missed);
	prom_head(f, "tcp_overflows_counted", "gauge",
		  "1: TCP listen overflows are counted; 0: not in this attach mode on this kernel "
		  "(udsprobe's start line says why), so TCP listeners have no overflows series.");
	fprintf(f, "udsprobe_backlog_tcp_overflows_counted %d\n", !s->run.tcp_drops_missing);
	prom_head(f, "unix_queue_depth_seen", "gauge",
		  "1: AF_UNIX queue depths on arrival are seen; 0: not in this attach mode on this "
		  "kernel (udsprobe's start line says why).");
	fprintf(f, "udsprobe_backlog_unix_queue_depth_seen %d\n", !s->run.unix_depth_missing);
	prom_head(f, "info", "gauge", "Attach mode udsprobe uses.");
	fprintf(f, "udsprobe_backlog_info{attach_mode=\"%s\",kernel=\"", s->run.attach_mode);
	metrics_label_value(f, kernel_release());
	fprintf(f, "\"} 1\n");
	prom_head(f, "last_update_timestamp_seconds", "gauge",
		  "When udsprobe wrote these values (file or scrape).");
	fprintf(f, "udsprobe_backlog_last_update_timestamp_seconds %lld\n", now);
}

void bl_prom_print(struct bl_state *s, FILE *f, long long now)
{
	size_t k;
	int i;

	for (k = 0; k < ARRAY_SIZE(metrics); k++) {
		prom_head(f, metrics[k].name, metrics[k].type, metrics[k].help);
		for (i = 0; i < s->n; i++) {
			const struct listener *l = &s->ls[i];

			if (!l->watched || l->retired ||
			    (metrics[k].family && l->family != metrics[k].family) ||
			    (metrics[k].overflows && bl_overflows_unknown(s, l)))
				continue;
			fprintf(f, "udsprobe_backlog_%s", metrics[k].name);
			prom_labels(f, l, NULL);
			fprintf(f, " %.9g\n", metrics[k].get(l));
		}
	}
	prom_head(f, "client_overflows_total", "counter",
		  "Overflows per listener and client command (all its processes).");
	for (i = 0; i < s->n; i++)
		if (s->ls[i].watched && !s->ls[i].retired)
			prom_clients(f, &s->ls[i]);
	prom_waits(s, f);
	prom_run(s, f, now);
}

/* bl_prom_print with this moment's timestamp, for metrics_file_write. */
static void prom_body(void *ctx, FILE *f)
{
	bl_prom_print(ctx, f, (long long)time(NULL));
}

int bl_write_prom(struct bl_state *s, const char *path)
{
	return metrics_file_write(path, prom_body, s);
}
