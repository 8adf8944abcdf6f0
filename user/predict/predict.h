/* --trace --if-unix: what each loopback TCP flow would cost over AF_UNIX on this host. */
#ifndef UDSPROBE_PREDICT_H
#define UDSPROBE_PREDICT_H

#include <argp.h>
#include <stdbool.h>
#include <stdio.h>

#include "trace.h"

enum if_unix_mode { IFU_AUTO, IFU_CACHED, IFU_FRESH, IFU_OFF };
/* --if-unix MODE (or $UDSPROBE_IF_UNIX): predict_argp, a child of the command line's parser,
 * fills the struct its parent hands it; given: --if-unix was on the line. */
struct predict_opts {
	enum if_unix_mode mode;
	bool given;
};
extern const struct argp predict_argp;

/*
 * Fill run->flows[].if_unix for the TCP flows and run->basis (nothing with IFU_OFF; a run to
 * predict keeps what the prediction reads: trace_opts.hit_costs): from the AF_UNIX calibration
 * cached for this kernel and CPU, or one run now (auto/fresh; udsprobe's own
 * ping-pong, both transports, traced in mode attach). Run after the trace's programs are
 * gone. A flow it cannot predict gets why; nothing here fails the run.
 */
void predict_if_unix(struct trace_run *run, enum if_unix_mode mode, enum attach_mode attach,
		     int verbose);

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
