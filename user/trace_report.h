/* --trace: the text report and the JSON document of a struct trace_run. */
#ifndef UDSPROBE_TRACE_REPORT_H
#define UDSPROBE_TRACE_REPORT_H

#include <stdio.h>

#include "trace.h"

struct jw;

/* One flow as an object of the "flows" array (docs/TRACE.md), for other documents too. */
void trace_flow_json(struct jw *w, const struct flow *fl);
void trace_report_text(const struct trace_run *run, const struct trace_opts *o, FILE *f);
/* JSON to path ('-' = stdout); 0 or -errno (said on stderr). */
int trace_report_json(const struct trace_run *run, const char *path);
/* The whole --trace action in mode attach (--attach): run, then the reports; returns the
 * exit status 0/1/2. */
int trace_main(const char *json_path, double duration_s, enum attach_mode attach, int verbose);

#endif
