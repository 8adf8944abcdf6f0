// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --out DIR: report.md (the flow tables, UDS vs TCP, the outliers), trace.json
 * (the --json document), per flow of the busiest TR_OUT_FLOWS a flame graph
 * (flow-N-....svg, all on one scale: trace_svg.c) and its folded stacks
 * (flow-N-....folded), and slow.jsonl with --slower-than. Files go through report_out.c's
 * out_set: safe output files and the manifest that lets a rerun replace its own files.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "reports.h"
#include "predict.h"
#include "trace_report.h"
#include "util.h"
#include "out_set.h"

/* "flow-1-unix-redis-benchmark-to-redis-server" (+ ext): comms reduced to [A-Za-z0-9._-]. */
static void flow_file(int i, const struct flow *fl, const char *ext, char *buf, size_t len)
{
	size_t n;
	char *p;

	n = snprintf(buf, len, "flow-%d-%s-%.24s-to-%.24s", i + 1, trace_transport_name(fl->transport),
		     fl->sender.comm, fl->receiver.comm);
	for (p = buf; *p && (size_t)(p - buf) < n; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '.' && *p != '-' && *p != '_')
			*p = '_';
	snprintf(buf + strlen(buf), len - strlen(buf), ".%s", ext);
}

static void folded_line(const char *name, double ns, FILE *f)
{
	long long w = llround(ns);

	if (w > 0)	/* below 0.5 ns/msg: invisible, and some tools warn */
		fprintf(f, "%s %lld\n", name, w);
}

/* Folded stacks of one flow: "phase;stage <ns per message, rounded>"; a stage as its kernel
 * stages where the run cut it (the frames --compare's flames have). */
void trace_flow_folded(const struct flow *fl, FILE *f)
{
	int st, i;

	for (st = 0; st < FS__COUNT; st++) {
		bool cut = false;

		for (i = 0; i < fl->n_kstages; i++) {
			if (fl->kstages[i].of != st)
				continue;
			folded_line(fl->kstages[i].name, fl->kstages[i].ns_per_msg, f);
			cut = true;
		}
		if (!cut)
			folded_line(fl->stages[st].name, fl->stages[st].ns_per_msg, f);
	}
}

static void md_pids(const struct flow_end *e, FILE *f)
{
	int i;

	for (i = 0; i < e->n_pids; i++)
		fprintf(f, "%s%u", i ? ", " : "", e->pids[i]);
}

static void md_flow(const struct trace_run *run, int i, FILE *f)
{
	const struct flow *fl = &run->flows[i];
	char a[32], b[32], c[32], d[32], name[128];

	fprintf(f, "\n### %d. %s `%s`: %s \u2192 %s\n\n", i + 1, trace_transport_name(fl->transport),
		fl->endpoint, fl->sender.comm, fl->receiver.comm);
	fprintf(f, "Sender pids ");
	md_pids(&fl->sender, f);
	fprintf(f, "; receiver pids ");
	md_pids(&fl->receiver, f);
	fprintf(f, ". %llu messages, %llu bytes, %llu lost (misses). Latency send() entry \u2192 "
		"recv() return: p50 %s, p90 %s, p99 %s, mean %s.\n\n",
		(unsigned long long)fl->messages, (unsigned long long)fl->bytes,
		(unsigned long long)fl->misses, fmt_dur(fl->p50, true, a, sizeof(a)),
		fmt_dur(fl->p90, true, b, sizeof(b)), fmt_dur(fl->p99, true, c, sizeof(c)),
		fmt_dur(fl->mean, true, d, sizeof(d)));
	trace_stage_table(fl, true, f);
	if (fl->if_unix.predicted || *fl->if_unix.why) {
		fputc('\n', f);
		predict_flow_text(fl, f);
	}
	if (i < TR_OUT_FLOWS) {
		flow_file(i, fl, "svg", name, sizeof(name));
		fprintf(f, "\n![flow %d](%s)\n\n", i + 1, name);
		flow_file(i, fl, "folded", name, sizeof(name));
		fprintf(f, "Folded stacks (ns per message): `%s`.\n", name);
	}
}

static void md_outliers(const struct trace_run *run, FILE *f)
{
	const struct trace_outlier **v = trace_outliers_slowest(run);
	char a[32];
	int i;

	fprintf(f, "\n## Messages slower than %s\n\n",
		fmt_dur(run->slower_than_ns, true, a, sizeof(a)));
	if (!run->n_outliers)
		fprintf(f, "None.\n");
	else
		fprintf(f, "%d, the slowest first; every one in `slow.jsonl` (JSON lines, "
			"docs/TRACE.md).\n\n| latency | flow | sender \u2192 receiver (pid/tid) | "
			"bytes | stages |\n|---:|---|---|---:|---|\n", run->n_outliers);
	for (i = 0; v && i < run->n_outliers && i < TR_TEXT_OUTLIERS; i++) {
		const struct trace_outlier *x = v[i];

		fprintf(f, "| %s | %s `%s` | %s %u/%u \u2192 %s %u/%u | %llu | ",
			fmt_dur(x->latency_ns, true, a, sizeof(a)), trace_transport_name(x->transport),
			x->endpoint, x->s_comm, x->s_pid, x->s_tid, x->r_comm, x->r_pid, x->r_tid,
			(unsigned long long)x->bytes);
		trace_outlier_stages(x, " + ", f);
		fprintf(f, " |\n");
	}
	if (run->n_outliers > TR_TEXT_OUTLIERS)
		fprintf(f, "\nand %d more in `slow.jsonl`.\n", run->n_outliers - TR_TEXT_OUTLIERS);
	free(v);
	trace_outliers_lost(run, "\n", ".", f);
}

static void md_write_trace(const struct trace_run *run, FILE *f)
{
	char a[32], *both = NULL;
	size_t both_len = 0;
	FILE *m;
	int i;

	fprintf(f, "# udsprobe --trace\n\nLinux %s, %s mode, %s%s.", kernel_release(),
		run->attach_mode, fmt_dur(run->duration_ns, true, a, sizeof(a)),
		run->interrupted ? " (interrupted)" : "");
	if (run->argv) {
		fprintf(f, " Command `");
		for (i = 0; run->argv[i]; i++)
			fprintf(f, "%s%s", i ? " " : "", run->argv[i]);
		fprintf(f, "`, exit status %d.", run->exit_status);
	}
	fprintf(f, " The stages are described in docs/TRACE.md; trace.json holds every number "
		"below.\n\n## Flows, the busiest first\n");
	if (!run->n_flows)
		fprintf(f, "\nNo messages matched: no AF_UNIX stream or loopback TCP message "
			"completed during the run.\n");
	else if (run->n_flows > TR_OUT_FLOWS)
		fprintf(f, "\nThe first %d are drawn, all on one scale.\n", TR_OUT_FLOWS);
	else
		fprintf(f, "\nThe pictures share one scale: their widths compare.\n");
	for (i = 0; i < run->n_flows; i++)
		md_flow(run, i, f);
	fprintf(f, "\n## UDS vs TCP\n");
	m = open_memstream(&both, &both_len);
	if (m) {
		trace_compare_text(run, m);
		fclose(m);
	}
	fprintf(f, "%s", both_len ? both : "\nNo pair of programs talked over both transports "
		"in this run.\n");
	free(both);
	if (run->slower_than_ns)
		md_outliers(run, f);
	fprintf(f, "\n## Not matched\n\n");
	for (i = 0; i < FM__COUNT; i++)
		fprintf(f, "%s`%s` %llu", i ? ", " : "", fl_miss_names[i],
			(unsigned long long)run->misses[i]);
	fprintf(f, " (docs/TRACE.md says what each means).\n");
}

enum trace_file { TF_MD, TF_JSON, TF_SLOW, TF_SVG, TF_FOLDED };

struct trace_file_ctx {
	const struct trace_run *run;
	enum trace_file kind;
	double scale;
};

static int trace_file_write(FILE *f, const void *ctx, int arg)
{
	const struct trace_file_ctx *c = ctx;

	switch (c->kind) {
	case TF_MD:
		md_write_trace(c->run, f);
		break;
	case TF_JSON:
		trace_json_write(c->run, f);
		break;
	case TF_SLOW:
		trace_outliers_jsonl(c->run, f);
		break;
	case TF_SVG:
		trace_svg_write(c->run, &c->run->flows[arg], c->scale, f);
		break;
	case TF_FOLDED:
		trace_flow_folded(&c->run->flows[arg], f);
		break;
	}
	return 0;
}

int trace_out_at(const struct trace_run *run, struct outdir *od)
{
	struct trace_file_ctx c = { .run = run, .scale = trace_svg_scale(run, TR_OUT_FLOWS) };
	struct out_set *set = out_set_begin(od);
	char name[128];
	int err = 0, e, i;

	if (!set)
		return -ENOMEM;
#define KEEP(k, n, arg) do { c.kind = (k); e = out_set_write(set, (n), trace_file_write, &c, (arg)); \
			     err = err ? err : e; } while (0)
	KEEP(TF_MD, "report.md", 0);
	KEEP(TF_JSON, "trace.json", 0);
	if (run->slower_than_ns)
		KEEP(TF_SLOW, "slow.jsonl", 0);
	for (i = 0; i < run->n_flows && i < TR_OUT_FLOWS; i++) {
		flow_file(i, &run->flows[i], "svg", name, sizeof(name));
		KEEP(TF_SVG, name, i);
		flow_file(i, &run->flows[i], "folded", name, sizeof(name));
		KEEP(TF_FOLDED, name, i);
	}
#undef KEEP
	e = out_set_end(set);
	err = err ? err : e;
	if (!err)
		say_error("wrote %s/: report.md, trace.json%s%s", od->path,
			run->slower_than_ns ? ", slow.jsonl" : "",
			run->n_flows ? ", flow-*.svg and flow-*.folded per flow" : "");
	return err;
}
