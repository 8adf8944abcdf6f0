/* --trace --slower-than: the outliers ring buffer of flows.bpf.c, read during the run. */
#ifndef UDSPROBE_TRACE_OUTLIERS_H
#define UDSPROBE_TRACE_OUTLIERS_H

#include "trace.h"

struct flows_bpf;
struct trace_outliers;

/* Ring buffer bytes for --slower-than (set between open and load; a power of two). */
#define TR_OUTLIER_RING	(1u << 20)

/*
 * Start reading skel's outliers ring buffer into run->outliers (NULL and 0 when
 * o->slower_than_ns is 0). 0 or -errno after saying what failed.
 */
int trace_outliers_open(struct flows_bpf *skel, const struct trace_opts *o,
			struct trace_run *run, struct trace_outliers **out);
/* Wait up to timeout_ms for outliers and take them in; 0 or -errno. */
int trace_outliers_poll(struct trace_outliers *t, int timeout_ms);
/* Take in what is left, read the drop counter, free t (NULL-safe). */
void trace_outliers_close(struct trace_outliers *t);

#endif
