// SPDX-License-Identifier: GPL-2.0
/*
 * --out DIR: a directory a newcomer can open cold. report.md (summary, environment, per run
 * the side-by-side tables, the pictures and the explanation, then a glossary and the list of
 * files), report.json, folded stacks and SVGs. docs/REPORTS.md lists the files.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "explain.h"
#include "report_common.h"
#include "reports.h"
#include "util.h"

/* "UDS 1.42× faster" from a lower-is-better (lat) or higher-is-better pair of numbers. */
static const char *verdict(double u, double t, bool lower_better, char *buf, size_t len)
{
	double k;

	if (u <= 0 || t <= 0) {
		snprintf(buf, len, "n/a");
		return buf;
	}
	k = lower_better ? t / u : u / t;
	if (fabs(k - 1) < 0.02)
		snprintf(buf, len, "about the same");
	else if (k > 1)
		snprintf(buf, len, "UDS %.2f\u00d7 faster", k);
	else
		snprintf(buf, len, "UDS %.2f\u00d7 slower", 1 / k);
	return buf;
}

static void row_ns(FILE *f, const char *label, double u, double t)
{
	char a[32], b[32], c[48];

	fprintf(f, "| %s | %s | %s | %s |\n", label, fmt_dur(u, true, a, sizeof(a)),
		fmt_dur(t, true, b, sizeof(b)), verdict(u, t, true, c, sizeof(c)));
}

static void row_rate(FILE *f, const char *label, double u, double t, const char *unit)
{
	char a[32], b[32], c[48];

	fprintf(f, "| %s | %s%s | %s%s | %s |\n", label, fmt_rate(u, a, sizeof(a)), unit,
		fmt_rate(t, b, sizeof(b)), unit, verdict(u, t, false, c, sizeof(c)));
}

static void headline(FILE *f, const struct pair_result *pr)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;

	switch (pr->mode) {
	case WL_PINGPONG:
		row_ns(f, "one-way latency, median (p50)", u->latency.p50, t->latency.p50);
		break;
	case WL_STREAM:
		row_rate(f, "throughput", u->msgs_per_sec, t->msgs_per_sec, " msgs/s");
		break;
	case WL_CONNECT:
		row_rate(f, "connections", u->conns_per_sec, t->conns_per_sec, " conns/s");
		break;
	default:
		break;
	}
}

static void workload_table(FILE *f, const struct pair_result *pr)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;
	const struct metric_row *rows;
	char a[32], b[32];
	int i;

	fprintf(f, "| measured without tracing | UDS | TCP | comparison |\n|---|---:|---:|---|\n");
	for (i = 0; i < metric_rows(pr->mode, &rows); i++) {
		const struct metric_row *m = &rows[i];

		if (m->rate)
			row_rate(f, m->md_label, m->value(u), m->value(t), m->md_unit);
		else
			row_ns(f, m->md_label, m->value(u), m->value(t));
	}
	for (i = 0; i < cpu_rows(pr, &rows); i++)
		row_ns(f, rows[i].md_label, rows[i].value(u), rows[i].value(t));
	fprintf(f, "| %s measured | %s | %s | |\n\n", mode_count_noun(pr->mode),
		fmt_rate(u->count, a, sizeof(a)), fmt_rate(t->count, b, sizeof(b)));
}

/* Plain text in a table cell. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (strchr("|`*_<>[]\\", *s))
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* A stage path as `code` in a table cell: backslashes are literal there, except for \|. */
static void md_code(FILE *f, const char *s)
{
	fputc('`', f);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s == '`' ? '\'' : *s, f);
	}
	fputc('`', f);
}

static void cell(FILE *f, const struct stree *t, int tr, bool has, double v)
{
	char a[32];

	if (!t->has[tr])
		fputs(" n/a |", f);
	else if (!has)
		fputs(" \u2014 |", f);
	else
		fprintf(f, " %s |", fmt_dur(v, true, a, sizeof(a)));
}

static void cell_diff(FILE *f, const struct stree *t, double u, double c)
{
	char a[32];
	double d = c - u;

	if (t->has[TR_UNIX] && t->has[TR_TCP])
		fprintf(f, " %s%s |", d > 0.5 ? "+" : d < -0.5 ? "\u2212" : "\u00b1",
			fmt_dur(fabs(d), true, a, sizeof(a)));
	else
		fputs(" |", f);
}

/* With corrected values in front, the as-traced ones follow; then the row ends. */
static void end_row(FILE *f, const struct stree *t, bool has_u, double u, bool has_c, double c)
{
	if (t->corrected) {
		cell(f, t, TR_UNIX, has_u, u);
		cell(f, t, TR_TCP, has_c, c);
	}
	fputc('\n', f);
}

/* A stage below a row: a member of a joined row, or a function-level stage. */
static void sub_row(FILE *f, const struct stree *t, int k, const char *label)
{
	const struct snode *nd = &t->node[k];
	int tr;

	fputs("| \u21b3 ", f);
	md_code(f, label);
	fputs(" | ", f);
	md_text(f, nd->depth > 2 ? "kernel function (self time)" :
		stage_describe(nd->path) ? stage_describe(nd->path) :
		strchr(nd->path, '+') ? "one stage here: the probe between its parts is not "
		"available" : "");
	fputs(" |", f);
	for (tr = 0; tr < TR__COUNT; tr++)
		cell(f, t, tr, nd->total[tr] > 0 || nd->st[tr], nd->total[tr]);
	cell_diff(f, t, nd->total[TR_UNIX], nd->total[TR_TCP]);
	end_row(f, t, nd->raw_total[TR_UNIX] > 0 || nd->st[TR_UNIX], nd->raw_total[TR_UNIX],
		nd->raw_total[TR_TCP] > 0 || nd->st[TR_TCP], nd->raw_total[TR_TCP]);
}

/* Per-connection stages (connect mode): outside the message's stages and their sum. */
static void extra_rows(FILE *f, const struct pair_result *pr, const struct stree *t)
{
	const struct trace_result *u = &pr->tr[TR_UNIX].trace, *c = &pr->tr[TR_TCP].trace;
	int i, j, tr;

	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = tr ? c : u, *o = tr ? u : c;

		for (i = 0; t->has[tr] && i < r->n_stages; i++) {
			const struct stage_stat *s = &r->stages[i], *os = NULL;
			const char *what = stage_describe(s->name);

			if (!s->extra)
				continue;
			for (j = 0; j < o->n_stages; j++)
				if (o->stages[j].extra && !strcmp(o->stages[j].name, s->name))
					os = &o->stages[j];
			if (tr == TR_TCP && os)
				continue;	/* printed with unix */
			fputs("| ", f);
			md_code(f, s->name);
			fputs(" | ", f);
			md_text(f, what ? what : "per connection");
			fputs(" (not part of the sum) |", f);
			if (tr == TR_UNIX) {
				cell(f, t, TR_UNIX, true, s->ns_per_msg);
				cell(f, t, TR_TCP, os != NULL, os ? os->ns_per_msg : 0);
				cell_diff(f, t, s->ns_per_msg, os ? os->ns_per_msg : 0);
			} else {
				cell(f, t, TR_UNIX, false, 0);
				cell(f, t, TR_TCP, true, s->ns_per_msg);
				fputs(" |", f);
			}
			fputs(t->corrected ? " | |\n" : "\n", f);	/* as traced: no correction */
		}
	}
}

/* The sum of the stages, and for pingpong the traced latency they cover. */
static void total_rows(FILE *f, const struct pair_result *pr, const struct stree *t)
{
	const struct trace_result *r[TR__COUNT] = { &pr->tr[TR_UNIX].trace, &pr->tr[TR_TCP].trace };
	char a[32];
	int tr;

	fprintf(f, "| **all stages** | sum of the stages above |");
	for (tr = 0; tr < TR__COUNT; tr++)
		fprintf(f, " **%s** |", t->has[tr] ? fmt_dur(t->sum[tr], true, a, sizeof(a)) : "n/a");
	if (t->has[TR_UNIX] && t->has[TR_TCP])
		fprintf(f, " **%s%s** |", t->sum[TR_TCP] >= t->sum[TR_UNIX] ? "+" : "\u2212",
			fmt_dur(fabs(t->sum[TR_TCP] - t->sum[TR_UNIX]), true, a, sizeof(a)));
	else
		fputs(" |", f);
	end_row(f, t, t->has[TR_UNIX], t->raw_sum[TR_UNIX], t->has[TR_TCP], t->raw_sum[TR_TCP]);
	if (r[TR_UNIX]->latency_ns <= 0 && r[TR_TCP]->latency_ns <= 0)
		return;	/* per-call modes: no end-to-end latency to compare with */
	fprintf(f, "| traced latency | send() entry to recv() return, measured end to end, "
		"probes included |%s", t->corrected ? " | | |" : "");
	for (tr = 0; tr < TR__COUNT; tr++)
		fprintf(f, " %s |", t->has[tr] ? fmt_dur(r[tr]->latency_ns, true, a, sizeof(a)) : "n/a");
	fputs(t->corrected ? "\n" : " |\n", f);
	fprintf(f, "| coverage | share of the traced latency the stages account for |%s",
		t->corrected ? " | | |" : "");
	for (tr = 0; tr < TR__COUNT; tr++)
		if (t->has[tr])
			fprintf(f, " %.0f%% |", 100 * r[tr]->coverage);
		else
			fputs(" n/a |", f);
	fputs(t->corrected ? "\n" : " |\n", f);
}

/* Why the tables show times with the probe cost removed, in numbers. */
static void corrected_note(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			   const struct stree *t)
{
	const struct trace_result *r[TR__COUNT] = { &pr->tr[TR_UNIX].trace, &pr->tr[TR_TCP].trace };
	char a[32], b[32], c[32], d[32];

	if (!t->corrected || !t->has[TR_UNIX] || !t->has[TR_TCP])
		return;
	fprintf(f, "Every probe costs about %s, and a traced stage includes the probes that "
		"fired in it (%.1f per message on UDS, %.1f on TCP: TCP's longer path has more "
		"of them). Removing that cost, the stages sum to **%s** on UDS and **%s** on "
		"TCP, a difference of **%s**", fmt_dur(cmp->probe_cost_ns, true, a, sizeof(a)),
		r[TR_UNIX]->probe_hits_per_msg, r[TR_TCP]->probe_hits_per_msg,
		fmt_dur(t->sum[TR_UNIX], true, b, sizeof(b)),
		fmt_dur(t->sum[TR_TCP], true, c, sizeof(c)),
		fmt_dur(fabs(t->sum[TR_TCP] - t->sum[TR_UNIX]), true, d, sizeof(d)));
	if (pr->mode == WL_PINGPONG && pr->tr[TR_UNIX].untraced.has_latency &&
	    pr->tr[TR_TCP].untraced.has_latency)
		fprintf(f, "; without any probes the mean one-way latencies were %s and %s",
			fmt_dur(pr->tr[TR_UNIX].untraced.latency.mean, true, b, sizeof(b)),
			fmt_dur(pr->tr[TR_TCP].untraced.latency.mean, true, c, sizeof(c)));
	fprintf(f, ". As traced, the difference would look like %s: that is why the tables "
		"and pictures show the corrected times.\n\n",
		fmt_dur(fabs(t->raw_sum[TR_TCP] - t->raw_sum[TR_UNIX]), true, a, sizeof(a)));
}

static void stage_table(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			const struct stree *t)
{
	struct srow *rows = calloc(MAX_STAGES * 2, sizeof(*rows));
	int i, m, k, tr, n;

	if (!rows)
		return;
	n = stree_rows(t, rows, MAX_STAGES * 2);
	if (t->corrected)
		fprintf(f, "Times with the probe cost removed (%.0f ns per probe hit, calibrated on "
			"this machine); the last two columns are the same stages as traced, probes "
			"included.\n\n", cmp->probe_cost_ns);
	fprintf(f, "| stage | what happens there | UDS | TCP | TCP \u2212 UDS |%s\n"
		"|---|---|---:|---:|---:|%s\n", t->corrected ? " UDS traced | TCP traced |" : "",
		t->corrected ? "---:|---:|" : "");
	for (i = 0; i < n; i++) {
		const struct srow *row = &rows[i];
		const char *what = row->n_members == 1 ? stage_describe(row->name) : NULL;

		fputs("| ", f);
		md_code(f, row->name);
		fputs(" | ", f);
		if (row->n_members > 1)
			md_text(f, "one row for both: their probes split this stretch differently "
				"(the parts follow)");
		else if (what)
			md_text(f, what);
		fputs(" |", f);
		for (tr = 0; tr < TR__COUNT; tr++)
			cell(f, t, tr, row->has[tr], row->v[tr]);
		cell_diff(f, t, row->v[TR_UNIX], row->v[TR_TCP]);
		end_row(f, t, row->has[TR_UNIX], row->raw[TR_UNIX], row->has[TR_TCP],
			row->raw[TR_TCP]);
		for (m = 0; m < row->n_members; m++) {
			int g = row->member[m];

			if (row->n_members > 1)
				sub_row(f, t, g, t->node[g].path);
			for (k = g + 1; k < t->n; k++) {
				int p = t->node[k].parent;

				while (p >= 0 && p != g)
					p = t->node[p].parent;
				if (p == g)
					sub_row(f, t, k, row->n_members > 1 ? t->node[k].path :
						t->node[k].path + strlen(t->node[g].path) + 1);
			}
		}
	}
	free(rows);
	total_rows(f, pr, t);
	extra_rows(f, pr, t);
	fputc('\n', f);
	corrected_note(f, cmp, pr, t);
}

static void trust(FILE *f, const struct pair_result *pr)
{
	char a[32], b[32], c[32];
	int tr;

	fprintf(f, "How much to trust these numbers:\n\n");
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;

		if (!tr_has_stages(&pr->tr[tr])) {
			fprintf(f, "- %s: no stage data.\n", tr == TR_UNIX ? "UDS" : "TCP");
			continue;
		}
		fprintf(f, "- %s: %llu messages traced end to end (%llu missed, %llu out of order); ",
			tr == TR_UNIX ? "UDS" : "TCP", (unsigned long long)r->messages,
			(unsigned long long)r->misses, (unsigned long long)r->out_of_order);
		if (r->traced.has_latency && pr->tr[tr].untraced.has_latency)
			fprintf(f, "mean latency %s traced vs %s untraced, so ",
				fmt_dur(r->traced.latency.mean, true, a, sizeof(a)),
				fmt_dur(pr->tr[tr].untraced.latency.mean, true, b, sizeof(b)));
		if (r->overhead_ns < 0)
			fprintf(f, "the probes' cost per message is %s",
				overhead_words(r, true, c, sizeof(c)));
		else
			fprintf(f, "the probes cost %s per message", overhead_words(r, true, c, sizeof(c)));
		if (r->coverage > 0)
			fprintf(f, "; the stages cover %.0f%% of the traced latency", 100 * r->coverage);
		fputs(".\n", f);
	}
	fputc('\n', f);
}

static void env_table(FILE *f, const struct comparison *cmp)
{
	char buf[160];
	int i;

	fprintf(f, "## Environment\n\n| | |\n|---|---|\n");
	fprintf(f, "| kernel | Linux %s |\n", kernel_release());
	fprintf(f, "| CPU | %s, %d CPUs available to udsprobe |\n", cmp->cpu_model, cmp->n_cpus);
	fprintf(f, "| CPU placement |");
	for (i = 0; i < cmp->n_pairs; i++) {
		if (i && cmp->pairs[i].place == cmp->pairs[i - 1].place)
			continue;
		fprintf(f, "%s %s: %s", i ? ";" : "", place_names[cmp->pairs[i].place],
			place_words(&cmp->pairs[i], true, buf, sizeof(buf)));
	}
	fprintf(f, " |\n");
	if (cmp->attach_mode) {
		fprintf(f, "| attach mode | **%s**%s%s |\n", cmp->attach_mode,
			cmp->attach_reason ? ": " : "", cmp->attach_reason ? cmp->attach_reason : "");
		fprintf(f, "| stage detail | %s |\n",
			cmp->stage_granularity && !strcmp(cmp->stage_granularity, "function") ?
			"function level (fentry/kprobe): stages split into kernel functions" :
			"tracepoint level: the stages of the stage model, no function split");
		if (cmp->probe_cost_ns > 0)
			fprintf(f, "| probe cost | %.0f ns per probe hit (calibrated on this machine) |\n",
				cmp->probe_cost_ns);
	} else {
		fprintf(f, "| attach mode | none: the run was untraced (`--no-trace`) |\n");
	}
	fprintf(f, "| transports | AF_UNIX stream socket (UDS); TCP over 127.0.0.1 with TCP_NODELAY |\n");
	fprintf(f, "| tool | udsprobe %s |\n\n", UDSPROBE_VERSION);
}

static void pair_heading(FILE *f, const struct pair_result *pr, char *buf, size_t len)
{
	char think[48];

	snprintf(buf, len, "%s, %llu-byte messages, cpu=%s%s", mode_names[pr->mode],
		 (unsigned long long)pr->msg_size, place_names[pr->place],
		 think_words(pr, think, sizeof(think)));
	fputs(buf, f);
}

static const char *mode_words(enum wl_mode m)
{
	switch (m) {
	case WL_PINGPONG:
		return "**pingpong**: the client sends a message and waits for the server's equally "
		       "sized reply, one message in flight; latency is half the round trip";
	case WL_STREAM:
		return "**stream**: the client sends as fast as it can, the server reads; "
		       "throughput";
	default:
		return "**connect**: connect, one request and response, close, repeated; "
		       "connections per second";
	}
}

/* Every stage-model stage seen in any run, once, in message order; merged names
 * ("send;syscall+sock") are explained through their parts. */
static void glossary(FILE *f, const struct comparison *cmp)
{
	char seen[64][STAGE_NAME_LEN], one[STAGE_NAME_LEN];
	int n_seen = 0, i, k, j;

	fprintf(f, "| stage | meaning |\n|---|---|\n");
	for (i = 0; i < cmp->n_pairs; i++) {
		struct stree *t;

		if (!pair_has_stages(&cmp->pairs[i]))
			continue;
		t = calloc(1, sizeof(*t));
		if (!t)
			break;
		stree_build(&cmp->pairs[i], show_corrected(cmp), t);
		for (k = 0; k < t->n; k++) {
			const char *path = t->node[k].path, *semi = strchr(path, ';'), *p;

			if (t->node[k].depth > 2 || (t->node[k].depth == 1 && k + 1 < t->n &&
						     t->node[k + 1].parent == k))
				continue;
			for (p = semi ? semi + 1 : path; *p; p += strcspn(p, "+"), p += *p == '+') {
				const char *what;

				if (semi)
					snprintf(one, sizeof(one), "%.*s;%.*s", (int)(semi - path), path,
						 (int)strcspn(p, "+"), p);
				else
					snprintf(one, sizeof(one), "%s", path);
				for (j = 0; j < n_seen && strcmp(seen[j], one); j++)
					;
				if (j < n_seen || n_seen == 64)
					continue;
				snprintf(seen[n_seen++], STAGE_NAME_LEN, "%s", one);
				what = stage_describe(one);
				fputs("| ", f);
				md_code(f, one);
				fputs(" | ", f);
				md_text(f, what ? what : "(not in the stage model)");
				fputs(" |\n", f);
				if (!semi)
					break;
			}
		}
		free(t);
	}
	fprintf(f, "\nA name joined with `+` (`send;syscall+sock`) is one stage spanning both: "
		"the probe between them is not available in this attach mode or kernel.\n\n");
}

/* Title, what this is, and a note when there are no stages at all. */
static void intro(FILE *f, const struct comparison *cmp, bool staged)
{
	char when[64];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	fprintf(f, "# Unix domain socket vs TCP loopback: where a message's time goes\n\n");
	fprintf(f, "*udsprobe %s, %s*\n\n", UDSPROBE_VERSION, when);
	fprintf(f, "**What this is.** Two processes on one machine can talk over a *Unix domain "
		"socket* (UDS, `AF_UNIX`) or over TCP to `127.0.0.1` (loopback). udsprobe ran the "
		"same client/server workload over both and, with eBPF, followed every message "
		"through the Linux kernel: from the sender's `send()` call until the receiver's "
		"`recv()` returns. That time is cut into *stages* (building the packet, TCP/IP "
		"processing, waking the receiver, copying the data...), so you can see not only "
		"*that* one transport is faster but *where* the difference comes from. Times are "
		"means per message unless marked p50 (median) or p99.\n\n");
	if (!staged)
		fprintf(f, "> **No stage breakdown in this report:** %s. It holds the workload's "
			"own measurements only; run `sudo udsprobe --compare --out DIR` (without "
			"`--no-trace`) for the stages and the pictures.\n\n", no_stages_reason(cmp));
}

/* One headline row per run, and the stages' sum when both transports have stages. */
static void summary(FILE *f, const struct comparison *cmp)
{
	char buf[160];
	int i;

	fprintf(f, "## Summary\n\n| run | UDS | TCP | comparison |\n|---|---:|---:|---|\n");
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];
		struct stree *t = calloc(1, sizeof(*t));
		char a[32], b[32], c[48];

		fputs("| **", f);
		pair_heading(f, pr, buf, sizeof(buf));
		fputs("** | | | |\n", f);
		headline(f, pr);
		if (t && pair_has_stages(pr)) {
			stree_build(pr, show_corrected(cmp), t);
			if (t->has[TR_UNIX] && t->has[TR_TCP])
				fprintf(f, "| time in the kernel per message (all stages, traced) | %s | "
					"%s | %s |\n", fmt_dur(t->sum[TR_UNIX], true, a, sizeof(a)),
					fmt_dur(t->sum[TR_TCP], true, b, sizeof(b)),
					verdict(t->sum[TR_UNIX], t->sum[TR_TCP], true, c, sizeof(c)));
		}
		free(t);
	}
	fputc('\n', f);
}

/* One run: the workload's numbers, the pictures, the stage table, why, how far to trust it. */
static void pair_section(FILE *f, const struct comparison *cmp, const struct pair_result *pr)
{
	char buf[160], tag[64], caveat[240];
	struct stree *t;

	fputs("## ", f);
	pair_heading(f, pr, buf, sizeof(buf));
	fprintf(f, "\n\n%s. %s. %llu-byte messages.\n\n", mode_words(pr->mode),
		place_words(pr, true, buf, sizeof(buf)), (unsigned long long)pr->msg_size);
	if (*pair_caveat(cmp, pr, caveat, sizeof(caveat)))
		fprintf(f, "> **Caution:** %s.\n\n", caveat);
	fprintf(f, "### The workload's own numbers\n\n");
	workload_table(f, pr);
	if (!pair_has_stages(pr)) {
		fprintf(f, "No stage breakdown for this run: %s.\n\n", no_stages_reason(cmp));
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	stree_build(pr, show_corrected(cmp), t);
	pair_tag(pr, true, tag, sizeof(tag));
	fprintf(f, "### Where the time goes\n\n");
	fprintf(f, "Both transports on one scale: the longer bar is the slower transport. "
		"Each box is a stage, its width the stage's mean time per message; a box's "
		"children (below it) split it further. Open the SVG in a browser to hover "
		"(numbers) and click (zoom).\n\n");
	fprintf(f, "![UDS and TCP stage breakdown on one scale](flame-%s.svg)\n\n", tag);
	fprintf(f, "The same stages as a difference: orange bars are stages where TCP "
		"spends more time than UDS, blue bars where it spends less.\n\n");
	fprintf(f, "![TCP minus UDS per stage](diff-%s.svg)\n\n", tag);
	stage_table(f, cmp, pr, t);
	fprintf(f, "### Why\n\n");
	explain_pair(cmp, pr, f);
	fputc('\n', f);
	trust(f, pr);
	free(t);
}

void md_write(const struct comparison *cmp, FILE *f)
{
	bool staged = comparison_has_stages(cmp);
	int i;

	intro(f, cmp, staged);
	summary(f, cmp);
	env_table(f, cmp);
	if (sweep_sizes(cmp) >= 2)
		fprintf(f, "## Across message sizes\n\n![UDS vs TCP across message sizes: latency, "
			"ratio, throughput and stage composition](sweep.svg)\n\nOne size axis for "
			"every panel: one-way latency (pingpong p50), the UDS/TCP ratio (below 1: UDS "
			"faster), stream throughput, and where each transport's traced message time goes "
			"at each size. Hover a point or bar for its figure.\n\n");
	if (think_points(cmp) >= 2) {
		fprintf(f, "## Across think times\n\n![UDS vs TCP round trip as the application's "
			"work per round trip grows](think.svg)\n\nPingpong with the client working on "
			"the CPU after each reply (`--think`): the round trip both transports take, work "
			"included (untraced medians), and their ratio (below 1: UDS faster), against the "
			"work per round trip on a log axis, no work at its left. Hover a point for its "
			"figure.\n\n");
		explain_think_curve(cmp, f);
		fputc('\n', f);
	}
	for (i = 0; i < cmp->n_pairs; i++)
		pair_section(f, cmp, &cmp->pairs[i]);

	fprintf(f, "## How to read this\n\n");
	fprintf(f, "- **Stage**: a contiguous slice of a message's trip through the kernel, "
		"between two probe points. Both transports use the same stage names, so rows line "
		"up; a stage one transport does not have shows as \u2014. Names are paths: "
		"`send;sock` is the `sock` part of the `send` phase; with function-level probes, "
		"`send;sock;tcp_sendmsg_locked` is time inside that kernel function.\n");
	fprintf(f, "- **Exclusive time**: a stage's own time, not counting the stages below it, "
		"so the stages add up to the whole message. A parent's number in the pictures is "
		"the sum of its children.\n");
	fprintf(f, "- **Traced vs untraced**: every run is done twice, once without probes (the "
		"workload's own numbers above) and once with them (the stages). The difference is "
		"the probes' overhead; it is reported, not hidden.\n");
	fprintf(f, "- **Coverage**: the stages' sum divided by the traced end-to-end latency. "
		"Anything the probes did not see is an explicit `unattributed` stage.\n");
	fprintf(f, "- **p50 / p99**: half / 99%% of the messages were faster than this.\n\n");
	if (staged)
		glossary(f, cmp);

	fprintf(f, "## Files in this directory\n\n");
	fprintf(f, "- `report.md`: this report.\n");
	fprintf(f, "- `report.json`: every number above, machine-readable (schema: udsprobe's "
		"docs/JSON.md).\n");
	if (sweep_sizes(cmp) >= 2)
		fprintf(f, "- `sweep.svg`: the size curve (latency, ratio, throughput, stage "
			"composition across sizes).\n");
	if (think_points(cmp) >= 2)
		fprintf(f, "- `think.svg`: round trip and UDS/TCP ratio across the think times "
			"(`--think`).\n");
	if (staged) {
		fprintf(f, "- `udsprobe.svg`: all runs in one picture. `flame-<run>.svg`, "
			"`diff-<run>.svg`: one picture per run, sized for a slide.\n");
		fprintf(f, "- `stages.folded`: folded stacks (`%stransport;stage;substage <ns per "
			"message>`), for flamegraph.pl, inferno, speedscope or Pyroscope: "
			"`flamegraph.pl stages.folded > stages.svg`.\n", cmp->n_pairs > 1 ? "run;" : "");
		fprintf(f, "- `unix.folded`, `tcp.folded`: the same, one transport each, for a "
			"classic differential flame graph: "
			"`difffolded.pl unix.folded tcp.folded | flamegraph.pl > diff.svg`.\n");
		fprintf(f, "\nFolded weights are mean nanoseconds per message, rounded; multiply by "
			"`messages` in report.json for totals over the run.\n");
	}
}
