/* --trace: read the flow maps into a struct trace_run (trace.h). */
#ifndef UDSPROBE_TRACE_COLLECT_H
#define UDSPROBE_TRACE_COLLECT_H

#include "trace.h"

struct flows_bpf;

/* Sum the per-CPU flow stats, merge by (transport, endpoint, comms), keep what
 * the endpoint filters (--unix, --port) select, busiest first. */
int trace_collect(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run);

#endif
