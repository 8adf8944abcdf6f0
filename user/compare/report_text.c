// SPDX-License-Identifier: GPL-2.0
/* Human report: per (mode, size, placement), unix and tcp side by side with their ratio. */
#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "report_common.h"
#include "reports.h"
#include "util.h"

static void metric_row(FILE *f, const struct metric_row *m, const struct pair_result *pr)
{
	double u = m->value(&pr->tr[TR_UNIX].untraced), t = m->value(&pr->tr[TR_TCP].untraced);
	char a[32], b[32];

	fprintf(f, "  %-22s %12s %12s %9.2f\n", m->label,
		m->rate ? fmt_rate(u, a, sizeof(a)) : fmt_dur(u, false, a, sizeof(a)),
		m->rate ? fmt_rate(t, b, sizeof(b)) : fmt_dur(t, false, b, sizeof(b)),
		t > 0 ? u / t : 0.0);
}

static void placement(FILE *f, const struct pair_result *pr)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced;

	fprintf(f, "cpu=%s (client CPU%d, server CPU%d)", place_names[pr->place], u->client_cpu,
		u->server_cpu);
}

static void stage_row(FILE *f, const char *name, const struct stage_stat *u, const struct stage_stat *t)
{
	char a[16] = "-", b[16] = "-", d[16] = "";

	if (u)
		snprintf(a, sizeof(a), "%.0f", u->ns_per_msg);
	if (t)
		snprintf(b, sizeof(b), "%.0f", t->ns_per_msg);
	snprintf(d, sizeof(d), "%+.0f", (t ? t->ns_per_msg : 0) - (u ? u->ns_per_msg : 0));
	fprintf(f, "  %-40s %9s %9s %9s\n", name, a, b, d);
}


/* How the calibrated probe cost compares with the measured (traced - untraced) overhead. */
static const char *agreement(const struct trace_result *u, const struct trace_result *t, char *buf,
			     size_t len)
{
	double pu = u->stage_sum_ns - u->corrected_sum_ns, pt = t->stage_sum_ns - t->corrected_sum_ns;

	if (u->overhead_ns <= 0 || t->overhead_ns <= 0)
		snprintf(buf, len, "measured overhead not positive: run-to-run noise exceeds the probe "
			 "cost, compare with --repeat");
	else
		snprintf(buf, len, "%.0f%% and %.0f%% of the measured overhead", 100.0 * pu / u->overhead_ns,
			 100.0 * pt / t->overhead_ns);
	return buf;
}

static void stage_table(FILE *f, const struct comparison *cmp, const struct pair_result *pr)
{
	const struct trace_result *u = &pr->tr[TR_UNIX].trace, *t = &pr->tr[TR_TCP].trace;
	bool printed[MAX_STAGES] = { false };
	int i, j, k;
	char a[32], b[32], c[160], c2[160];

	fprintf(f, "\n  where the time goes, ns per %s (%s mode, %s granularity)\n",
		pr->mode == WL_STREAM ? "send()/recv() call" : "message", cmp->attach_mode,
		cmp->stage_granularity);
	fprintf(f, "  %-40s %9s %9s %9s\n", "stage", "unix", "tcp", "tcp-unix");
	/* row order: TCP's stage order (the longer path), UDS-only stages where they fall;
	 * walk TCP's stages; before each, print UDS stages not printed that precede a shared one */
	for (i = 0; i < t->n_stages; i++) {
		const struct stage_stat *us = trace_stage(u, t->stages[i].name);

		if (us) {
			k = us - u->stages;
			for (j = 0; j < k; j++)
				if (!printed[j] && !trace_stage(t, u->stages[j].name)) {
					stage_row(f, u->stages[j].name, &u->stages[j], NULL);
					printed[j] = true;
				}
			printed[k] = true;
		}
		stage_row(f, t->stages[i].name, us, &t->stages[i]);
	}
	for (j = 0; j < u->n_stages; j++)
		if (!printed[j])
			stage_row(f, u->stages[j].name, &u->stages[j], NULL);
	/* connect: the per-connection conn;* rows are outside the per-message sum */
	fprintf(f, "  %-40s %9.0f %9.0f %+9.0f\n", pr->mode == WL_CONNECT ?
		"total (sum of stages, conn;* not in it)" : "total (sum of stages)", u->stage_sum_ns,
		t->stage_sum_ns, t->stage_sum_ns - u->stage_sum_ns);
	if (pr->mode == WL_PINGPONG)
		fprintf(f, "  %-40s %9.0f %9.0f\n", "traced one-way latency (mean)", u->latency_ns,
			t->latency_ns);
	fprintf(f, "  %-40s %9.0f %9.0f\n", "total minus probe cost (corrected)", u->corrected_sum_ns,
		t->corrected_sum_ns);
	if (pr->mode == WL_PINGPONG)
		fprintf(f, "  coverage (stages / traced latency): unix %.2f, tcp %.2f\n", u->coverage,
			t->coverage);
	fprintf(f, "  probe overhead (traced - untraced per %s): unix %s, tcp %s\n",
		pr->mode == WL_PINGPONG ? "message" : pr->mode == WL_STREAM ? "message" : "connection",
		overhead_words(u, false, c, sizeof(c)), overhead_words(t, false, c2, sizeof(c2)));
	if (pr->tr[TR_UNIX].runs > 1)
		fprintf(f, "  over %d alternating runs, probe overhead median (min..max): unix %+.0f%% "
			"(%+.0f..%+.0f%%), tcp %+.0f%% (%+.0f..%+.0f%%); the table is the median run\n",
			pr->tr[TR_UNIX].runs, pr->tr[TR_UNIX].overhead_pct.median,
			pr->tr[TR_UNIX].overhead_pct.min, pr->tr[TR_UNIX].overhead_pct.max,
			pr->tr[TR_TCP].overhead_pct.median, pr->tr[TR_TCP].overhead_pct.min,
			pr->tr[TR_TCP].overhead_pct.max);
	/* the calibration's prediction next to the measured overhead: how far to trust "corrected" */
	fprintf(f, "  calibrated probe cost per %s: unix %s, tcp %s (%s)\n",
		pr->mode == WL_CONNECT ? "connection" : "message",
		fmt_dur(u->stage_sum_ns - u->corrected_sum_ns, false, a, sizeof(a)),
		fmt_dur(t->stage_sum_ns - t->corrected_sum_ns, false, b, sizeof(b)),
		agreement(u, t, c, sizeof(c)));
	if (pr->mode == WL_PINGPONG)
		fprintf(f, "  corrected total vs untraced mean: unix %+.0f%%, tcp %+.0f%%\n",
			100.0 * (u->corrected_sum_ns / MAX(pr->tr[TR_UNIX].untraced.latency.mean, 1) - 1),
			100.0 * (t->corrected_sum_ns / MAX(pr->tr[TR_TCP].untraced.latency.mean, 1) - 1));
	fprintf(f, "  messages attributed: unix %llu, tcp %llu; misses %llu/%llu; out of order %llu/%llu; "
		"probe hits/msg %.1f/%.1f\n",
		(unsigned long long)u->messages, (unsigned long long)t->messages,
		(unsigned long long)u->misses, (unsigned long long)t->misses,
		(unsigned long long)u->out_of_order, (unsigned long long)t->out_of_order,
		u->probe_hits_per_msg, t->probe_hits_per_msg);
	if (u->kernel_misses || t->kernel_misses)
		fprintf(f, "  program runs the kernel skipped (nested BPF on one CPU): unix %llu, tcp %llu; "
			"stages that missed them merge into the next\n",
			(unsigned long long)u->kernel_misses, (unsigned long long)t->kernel_misses);
}

/* --repeat: the spread of the untraced time per message over the runs (the rows are the median run). */
static void repeat_line(FILE *f, const struct pair_result *pr)
{
	const struct spread *u = &pr->tr[TR_UNIX].untraced_ns, *t = &pr->tr[TR_TCP].untraced_ns;
	char a[32], b[32], c[32], d[32], e[32], g[32];

	fprintf(f, "  over %d alternating runs, untraced per %s median (min..max): unix %s (%s..%s), "
		"tcp %s (%s..%s)\n", pr->tr[TR_UNIX].runs, pr->mode == WL_CONNECT ? "connection" : "message",
		fmt_dur(u->median, false, a, sizeof(a)), fmt_dur(u->min, false, b, sizeof(b)),
		fmt_dur(u->max, false, c, sizeof(c)), fmt_dur(t->median, false, d, sizeof(d)),
		fmt_dur(t->min, false, e, sizeof(e)), fmt_dur(t->max, false, g, sizeof(g)));
}

void report_text(const struct comparison *cmp, FILE *f)
{
	const struct metric_row *rows;
	int i, m;

	fprintf(f, "udsprobe %s: AF_UNIX stream vs TCP 127.0.0.1 (TCP_NODELAY on)\n", UDSPROBE_VERSION);
	fprintf(f, "kernel %s, %d CPUs (%s), attach mode: %s\n", kernel_release(), cmp->n_cpus,
		cmp->cpu_model, cmp->attach_mode ? cmp->attach_mode : "none (untraced)");
	if (cmp->attach_mode) {
		fprintf(f, "why this mode: %s\n", cmp->attach_reason);
		fprintf(f, "probe cost %.0f ns per hit, %.0f ns per syscall-tracepoint hit (calibrated); "
			"attach %.0f ms, detach %.0f ms%s%s\n", cmp->probe_cost_ns,
			cmp->n_pairs ? cmp->pairs[0].tr[TR_UNIX].trace.syscall_hit_ns : 0.0,
			cmp->attach_ns / 1e6, cmp->detach_ns / 1e6,
			cmp->missing && *cmp->missing ? "; not visible here: " : "",
			cmp->missing && *cmp->missing ? cmp->missing : "");
	}
	fprintf(f, "ratio = unix/tcp: below 1 means lower latency on unix, above 1 more throughput\n");
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];
		const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;

		char think[48];

		fprintf(f, "\n%s %llu B%s, %llu/%llu %s, ", mode_names[pr->mode],
			(unsigned long long)pr->msg_size, think_words(pr, think, sizeof(think)),
			(unsigned long long)u->count, (unsigned long long)t->count,
			mode_count_noun(pr->mode));
		placement(f, pr);
		fprintf(f, "\n  %-22s %12s %12s %9s\n", "", "unix", "tcp", "ratio");
		for (m = 0; m < metric_rows(pr->mode, &rows); m++)
			metric_row(f, &rows[m], pr);
		for (m = 0; m < cpu_rows(pr, &rows); m++)
			metric_row(f, &rows[m], pr);
		if (pr->tr[TR_UNIX].runs > 1)
			repeat_line(f, pr);
		if (pair_strangers(pr))
			fprintf(f, "  strangers: %llu connection%s from other processes refused (unix %llu, "
				"tcp %llu); not measured, but they took the server's time\n",
				(unsigned long long)pair_strangers(pr), pair_strangers(pr) == 1 ? "" : "s",
				(unsigned long long)transport_strangers(&pr->tr[TR_UNIX]),
				(unsigned long long)transport_strangers(&pr->tr[TR_TCP]));
		if (pr->tr[TR_UNIX].trace.valid && pr->tr[TR_TCP].trace.valid)
			stage_table(f, cmp, pr);
		fprintf(f, "\n");
		explain_pair(cmp, pr, f);
	}
	if (think_points(cmp) >= 2) {
		fputc('\n', f);
		explain_think_curve(cmp, f);
	}
}
