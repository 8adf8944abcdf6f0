/* --trace --if-unix: what each loopback TCP flow would cost over AF_UNIX on this host. */
#ifndef UDSPROBE_PREDICT_H
#define UDSPROBE_PREDICT_H

#include <argp.h>
#include <stdbool.h>
#include <stdio.h>

#include "trace.h"

/* Its option (--if-unix MODE), a child of the command line's parser. */
extern const struct argp predict_argp;
/* --if-unix was given (options.c checks the action takes it). */
bool predict_requested(void);
/* --if-unix is not off: a run should keep what the prediction reads (trace_opts.hit_costs). */
bool predict_wanted(void);

/*
 * Fill run->flows[].if_unix for the TCP flows and run->basis: from the AF_UNIX calibration
 * cached for this kernel and CPU, or one run now (--if-unix auto/fresh; udsprobe's own
 * ping-pong, both transports, traced in mode attach). Run after the trace's programs are
 * gone. A flow it cannot predict gets why; nothing here fails the run.
 */
void predict_if_unix(struct trace_run *run, enum attach_mode attach, int verbose);

/* The same from a calibration file (its kernel and CPU not checked: unit tests); 0 or -errno. */
int predict_from_file(struct trace_run *run, const char *path);

struct jw;
/* A flow's prediction: its sentence under the flow's table (nothing for a flow not asked
 * about), its "if_unix" object; the run's "if_unix_basis" object. */
void predict_flow_text(const struct flow *fl, FILE *f);
/* Its connections' line (short-lived ones: one per 10 messages or fewer), after indent. */
void predict_conn_text(const struct flow *fl, const char *indent, FILE *f);
void predict_flow_json(struct jw *w, const struct flow_if_unix *u);
void predict_basis_json(struct jw *w, const struct if_unix_basis *b);

#endif
