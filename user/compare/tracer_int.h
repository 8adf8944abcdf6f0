/*
 * Private to the tracer's parts (tracer.c, tracer_progs.c, tracer_calibrate.c): struct tracer
 * and what they share. Never include elsewhere (but in its unit test): tracer.h is the
 * tracer's interface.
 */
#ifndef UDSPROBE_TRACER_INT_H
#define UDSPROBE_TRACER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer.h"

struct bpf_link;
struct bpf_program;
struct stages_bpf;

/* How a program attaches: by libbpf from its section, or as a k(ret)probe on the symbol its
 * target resolves to here (a renamed or suffixed function). */
enum prog_attach { PA_SECTION, PA_KPROBE, PA_KRETPROBE };

/* One program of stages.bpf.c, as the tracer uses it. */
struct stage_prog {
	struct bpf_program *prog;
	const char *target;	/* the function or tracepoint, as the stage table names it;
				 * NULL: syscalls and scheduler */
	enum prog_attach how;
	bool every_path;	/* attached for both transports, whatever the markers */
	struct bpf_link *link;	/* while attached */
};

#define MAX_STAGE_PROGS 48

struct tracer {
	struct stages_bpf *skel;
	enum attach_mode mode;
	char reason[1024];
	char missing[1024];
	struct stage_prog progs[MAX_STAGE_PROGS];	/* the mode's programs this kernel can attach */
	int n_progs;
	struct stage_prog calib;	/* the calibration probe (tracer_calibrate.c) */
	long calib_nr;			/* the syscall that reaches it */
	bool avail[TR__COUNT][B__COUNT];
	bool keep_links;		/* fentry before 5.12: a detached program cannot attach again */
	int verbose;
	uint64_t missed_at_begin;	/* kernel_missed() when the run began */
	double syscall_hit_ns;		/* calibrated cost of one syscall-tracepoint hit */
};

/* Zero the BPF side's per-run state (.bss), tracing off. */
void tracer_reset_state(struct tracer *tr);
/* Register the two traced tasks of transport t (with what this mode sees of its path). */
void tracer_set_tasks(struct tracer *tr, pid_t client, pid_t server, enum transport t);
/* Attach one loaded program the way it attaches; NULL with errno on failure. */
struct bpf_link *tracer_attach_prog(const struct stage_prog *p);

/* tracer_progs.c: the programs of each mode, as skeleton fields. */
/* Every program mode uses, whatever this kernel has: the syscall and scheduler tracepoints
 * (tp_btf, or raw_tp when the kernel has no BTF of its own: own_btf false), then the mode's
 * own. Returns how many (at most max). */
int tracer_mode_programs(struct stages_bpf *skel, enum attach_mode mode, bool own_btf,
			 struct stage_prog *out, int max);
/* The calibration probe of mode (a cheap syscall's entry), or NULL. */
struct bpf_program *tracer_calib_program(struct stages_bpf *skel, enum attach_mode mode);
/* The name target (a function of the stage table) has in this kernel for mode: its own or an
 * older one (stage_func_older), the symbol in sym (attach_func_here); NULL if neither is. */
const char *tracer_kernel_func(enum attach_mode mode, const char *target, char *sym, size_t len);
/* Can a detached fentry program be attached again? Not before Linux 5.12. */
bool tracer_fentry_can_reattach(void);

/* Before load, pick the calibration target and enable its program (tracer_progs.c). */
void tracer_calib_prepare(struct tracer *tr);

#endif
