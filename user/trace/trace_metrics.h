/* --trace --metrics: the flows so far in Prometheus' text format. */
#ifndef UDSPROBE_TRACE_METRICS_H
#define UDSPROBE_TRACE_METRICS_H

#include <stdio.h>

#include "trace.h"

#define TR_METRICS_FLOWS	200	/* flows with labels of their own; the rest: "other" */
#define TR_METRICS_FLOWS_TXT	"200"

/* run: a snapshot (trace_snapshot), busiest flow first. */
void trace_metrics_write(const struct trace_run *run, FILE *f);

#endif
