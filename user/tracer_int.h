/*
 * Private to the tracer's parts (tracer.c, tracer_calibrate.c): struct tracer and what they
 * share. Never include elsewhere: tracer.h is the tracer's interface.
 */
#ifndef UDSPROBE_TRACER_INT_H
#define UDSPROBE_TRACER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer.h"

struct bpf_link;
struct bpf_program;
struct stages_bpf;

struct tracer {
	struct stages_bpf *skel;
	enum attach_mode mode;
	char reason[1024];
	char missing[1024];
	const char *calib_func;		/* function the fentry/kprobe calibration probe sits on */
	long calib_nr;			/* the syscall that reaches it */
	bool avail[TR__COUNT][B__COUNT];
	struct bpf_link *links[128];
	struct bpf_program *link_progs[128];
	int n_links;
	bool keep_links;		/* fentry before 5.12: a detached program cannot attach again */
	int verbose;
	uint64_t missed_at_begin;	/* kernel_missed() when the run began */
	double syscall_hit_ns;		/* calibrated cost of one syscall-tracepoint hit */
};

/* Zero the BPF side's per-run state (.bss), tracing off. */
void tracer_reset_state(struct tracer *tr);
/* Register the two traced tasks of transport t (with what this mode sees of its path). */
void tracer_set_tasks(struct tracer *tr, pid_t client, pid_t server, enum transport t);
/* Attach one loaded program the way its mode attaches (kprobes on resolved symbols). */
struct bpf_link *tracer_attach_prog(struct tracer *tr, struct bpf_program *prog);

/* tracer_calibrate.c: before load, pick the calibration target and enable its program. */
void tracer_calib_prepare(struct tracer *tr);

#endif
