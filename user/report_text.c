// SPDX-License-Identifier: GPL-2.0
/* Human report: per (mode, size, placement), unix and tcp side by side with their ratio. */
#include <stdio.h>

#include "compare.h"
#include "util.h"

static const char *fmt_rate(double v, char *buf, size_t len)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.2f G", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1f k", v / 1e3);
	else
		snprintf(buf, len, "%.1f", v);
	return buf;
}

static void row_ns(FILE *f, const char *label, uint64_t u, uint64_t t)
{
	char a[32], b[32];

	fprintf(f, "  %-22s %12s %12s %9.2f\n", label, fmt_ns(u, a, sizeof(a)), fmt_ns(t, b, sizeof(b)),
		t ? (double)u / t : 0.0);
}

static void row_rate(FILE *f, const char *label, double u, double t)
{
	char a[32], b[32];

	fprintf(f, "  %-22s %12s %12s %9.2f\n", label, fmt_rate(u, a, sizeof(a)),
		fmt_rate(t, b, sizeof(b)), t > 0 ? u / t : 0.0);
}

static void placement(FILE *f, const struct pair_result *pr)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced;

	fprintf(f, "cpu=%s (client CPU%d, server CPU%d)", place_names[pr->place], u->client_cpu,
		u->server_cpu);
}

void report_text(const struct comparison *cmp, FILE *f)
{
	int i;

	fprintf(f, "udsprobe %s: AF_UNIX stream vs TCP 127.0.0.1 (TCP_NODELAY on)\n", UDSPROBE_VERSION);
	fprintf(f, "kernel %s, %d CPUs (%s), attach mode: %s\n", kernel_release(), cmp->n_cpus,
		cmp->cpu_model, cmp->attach_mode ? cmp->attach_mode : "none (untraced)");
	fprintf(f, "ratio = unix/tcp: below 1 means lower latency on unix, above 1 more throughput\n");
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];
		const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;

		fprintf(f, "\n%s %llu B, %llu/%llu %s, ", mode_names[pr->mode],
			(unsigned long long)pr->msg_size, (unsigned long long)u->count,
			(unsigned long long)t->count,
			pr->mode == WL_PINGPONG ? "round trips" :
			pr->mode == WL_STREAM ? "messages" : "connections");
		placement(f, pr);
		fprintf(f, "\n  %-22s %12s %12s %9s\n", "", "unix", "tcp", "ratio");
		switch (pr->mode) {
		case WL_PINGPONG:
			row_ns(f, "one-way p50", u->latency.p50, t->latency.p50);
			row_ns(f, "one-way p90", u->latency.p90, t->latency.p90);
			row_ns(f, "one-way p99", u->latency.p99, t->latency.p99);
			row_ns(f, "one-way mean", u->latency.mean, t->latency.mean);
			break;
		case WL_STREAM:
			row_rate(f, "msgs/s", u->msgs_per_sec, t->msgs_per_sec);
			row_rate(f, "bytes/s", u->bytes_per_sec, t->bytes_per_sec);
			break;
		case WL_CONNECT:
			row_rate(f, "conns/s", u->conns_per_sec, t->conns_per_sec);
			row_ns(f, "connection p50", u->latency.p50, t->latency.p50);
			row_ns(f, "connection p99", u->latency.p99, t->latency.p99);
			break;
		default:
			break;
		}
	}
}
