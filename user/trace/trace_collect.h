/* --trace: read the flow maps into a struct trace_run (trace.h). */
#ifndef UDSPROBE_TRACE_COLLECT_H
#define UDSPROBE_TRACE_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

#include "trace.h"

struct flows_bpf;

/* Sum the per-CPU flow stats, merge by (transport, endpoint, comms), keep what
 * the endpoint filters (--unix, --port) select, busiest first. */
int trace_collect(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run);
/* During the run: move the flows whose sender and receiver processes have both exited
 * from the flow map into run (a long run's new processes would fill the map). */
int trace_harvest(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run);
/* During the run: the flows so far (run's and the map's) summed into out, as trace_collect
 * would now, neither run nor the map changed (--metrics); trace_run_free(out) after. */
int trace_snapshot(struct flows_bpf *skel, const struct trace_opts *o,
		   const struct trace_run *run, struct trace_run *out);
/* A flow key's endpoint as the reports name it ("/run/x.sock", "@name", "socketpair",
 * "127.0.0.1:6379"; unix names from run's, else the map), and whether --unix/--port select it. */
void trace_endpoint_name(struct flows_bpf *skel, struct trace_run *run, const struct fl_key *k,
			 char *out, size_t len);
bool trace_endpoint_selected(const struct trace_opts *o, const struct fl_key *k, const char *ep);

#endif
