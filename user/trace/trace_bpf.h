/* --trace's BPF side: flows.bpf.c chosen, loaded and attached in one attach mode. */
#ifndef UDSPROBE_TRACE_BPF_H
#define UDSPROBE_TRACE_BPF_H

#include <stddef.h>

#include "attach.h"
#include "trace.h"

struct flows_bpf;

/*
 * Configure an opened flows_bpf for o (filters, map sizes) and mark for loading exactly the
 * programs mode attaches (its send/recv boundaries, the poll-family returns this kernel has
 * events for, fork/exit where they keep state): what trace_bpf_open loads, and what the
 * bench's empty-program floor (scripts/hooks_floor.c) mirrors. 0, or -EOPNOTSUPP with the
 * reason in why when the mode's hooks are not on this kernel. kprobe_multi (kprobe mode): the
 * syscall wrappers as two kprobe.multi programs, which trace_bpf_open attaches itself.
 */
int trace_bpf_select(struct flows_bpf *skel, const struct trace_opts *o, enum attach_mode mode,
		     bool kprobe_multi, char *why, size_t len);

/*
 * Open, configure (o's filters, map sizes), load and attach flows.bpf.c in the
 * mode o->attach asks for (auto: fentry, else kprobe, else tracepoint; a forced
 * mode that does not work is an error). 0 with *out and *mode set, or -errno
 * after printing what failed and what to do.
 */
int trace_bpf_open(const struct trace_opts *o, struct flows_bpf **out, enum attach_mode *mode);

/* Each kernel-stage program's run time per hit so far (BPF run-time statistics: 0 for a
 * program not loaded, not run, or while the statistics were off). */
void trace_bpf_hit_ns(struct flows_bpf *skel, double hit_ns[FK__COUNT]);
/* The run time of every loaded program so far, in *ns (BPF run-time statistics: counted only
 * while they are on); false when no program's could be read. */
bool trace_bpf_cost(struct flows_bpf *skel, uint64_t *ns);

#endif
