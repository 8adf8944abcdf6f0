/* The tracer: loads stages.bpf.c in one attach mode, attributes a run, names its stages. */
#ifndef UDSPROBE_TRACER_H
#define UDSPROBE_TRACER_H

#include <stdbool.h>
#include <sys/types.h>

#include "attach.h"
#include "compare.h"

struct tracer;

/* Detect, choose the mode, load. 0 or -errno (message printed). */
int tracer_open(enum attach_mode req, int verbose, struct tracer **out);
void tracer_close(struct tracer *tr);

enum attach_mode tracer_mode(const struct tracer *tr);
const char *tracer_reason(const struct tracer *tr);
const char *tracer_granularity(const struct tracer *tr);
/* Boundaries this mode cannot see on this kernel (merged into neighbours), as text. */
const char *tracer_missing(const struct tracer *tr);

/* Cost of one probe hit in this mode, measured now (ns). */
double tracer_calibrate(struct tracer *tr);

/* Attach the mode's programs on transport t's path / detach them; *_ns: how long it took. */
int tracer_attach(struct tracer *tr, enum transport t, uint64_t *attach_ns);
void tracer_detach(struct tracer *tr, uint64_t *detach_ns);

/* Per run: reset state and register the workload's two tasks. */
int tracer_begin_run(struct tracer *tr, const struct wl_config *cfg, pid_t client, pid_t server);
/* From the client child: tracing on/off around the measured loop (shared .bss). */
void tracer_measure(struct tracer *tr, bool on);
/* Read the run's stages into res (names, ns/msg, counts, percentiles, hits). */
int tracer_collect(struct tracer *tr, const struct wl_config *cfg, double probe_cost_ns,
		   struct trace_result *res);

/* --list-stages */
void stages_list(FILE *f);

#endif
