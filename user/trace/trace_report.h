/* --trace: the text report and the JSON document of a struct trace_run. */
#ifndef UDSPROBE_TRACE_REPORT_H
#define UDSPROBE_TRACE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "trace.h"

struct jw;
struct outdir;

#define TR_TEXT_OUTLIERS 20	/* outliers the text report and report.md show */
#define TR_OUT_FLOWS	8	/* flows --out draws (the busiest) */

void trace_report_text(const struct trace_run *run, const struct trace_opts *o, FILE *f);
/* A flow's stage table: text columns, or a markdown table (md). */
void trace_stage_table(const struct flow *fl, bool md, FILE *f);
/* The "UDS vs TCP" lines of pairs of programs that talk over both transports. */
void trace_compare_text(const struct trace_run *run, FILE *f);
/* The JSON document (docs/TRACE.md), and the same to path ('-' = stdout); 0 or -errno. */
void trace_json_write(const struct trace_run *run, FILE *f);
int trace_report_json(const struct trace_run *run, const char *path);

/* --slower-than: one outlier as a JSON object; all of them as JSON lines (slow.jsonl);
 * its stages as "name DUR" joined by sep; the outliers slowest first (free() it; NULL when
 * out of memory). */
void trace_outlier_json(struct jw *w, const struct trace_outlier *x);
void trace_outliers_jsonl(const struct trace_run *run, FILE *f);
void trace_outlier_stages(const struct trace_outlier *x, const char *sep, FILE *f);
const struct trace_outlier **trace_outliers_slowest(const struct trace_run *run);
/* The outliers lost (ring buffer full, more than kept), a line each between lead and end. */
void trace_outliers_lost(const struct trace_run *run, const char *lead, const char *end, FILE *f);

/* --out DIR (trace_out.c): report.md, trace.json, per-flow flame SVGs on one scale and
 * folded stacks, slow.jsonl; through report_out.c's manifest. 0 or -errno. */
int trace_out_at(const struct trace_run *run, struct outdir *od);
/* The px/ns that fits the slowest of the first n flows' mean latency in the plot. */
double trace_svg_scale(const struct trace_run *run, int n);


#endif
