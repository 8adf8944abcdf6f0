/* --trace's BPF side: flows.bpf.c chosen, loaded and attached in one attach mode. */
#ifndef UDSPROBE_TRACE_BPF_H
#define UDSPROBE_TRACE_BPF_H

#include "attach.h"
#include "trace.h"

struct flows_bpf;

/*
 * Open, configure (o's filters, map sizes), load and attach flows.bpf.c in the
 * mode o->attach asks for (auto: fentry, else kprobe, else tracepoint; a forced
 * mode that does not work is an error). 0 with *out and *mode set, or -errno
 * after printing what failed and what to do.
 */
int trace_bpf_open(const struct trace_opts *o, struct flows_bpf **out, enum attach_mode *mode);

#endif
