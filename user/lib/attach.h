/* Attach modes: the enum, its names and parsing, and the choice between them. */
#ifndef UDSPROBE_ATTACH_H
#define UDSPROBE_ATTACH_H

#include <stdbool.h>
#include <stdio.h>

#include "capability.h"

enum attach_mode { ATTACH_AUTO, ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_TRACEPOINT, ATTACH__COUNT };

extern const char *const attach_mode_names[ATTACH__COUNT];

/* Parse "auto|fentry|kprobe|tracepoint"; -1 if unknown. */
int attach_mode_parse(const char *s);

/*
 * Does `mode` work for one tool's targets? 0, or -errno with the reason in why.
 * Each tool tests its own targets (the tracer loads one stages program per
 * mode, backlog probes its functions and loads its programs).
 */
typedef int (*attach_probe_fn)(enum attach_mode mode, void *ctx, char *why, size_t len);

/*
 * Pick the mode: the forced one if probe accepts it, else with ATTACH_AUTO the
 * first of fentry, kprobe, tracepoint that probe accepts (probe is not called
 * after that). 0, -ENOMEM (a mode failed for memory: a cgroup's limit, not the kernel's
 * features) or -EOPNOTSUPP; why says which mode and why, or why none.
 */
int attach_choose(enum attach_mode req, attach_probe_fn probe, void *ctx, enum attach_mode *out,
		  char *why, size_t len);

/* Is the kernel function func there for mode: its BTF (fentry), else in /proc/kallsyms or as
 * its compiler clone (kprobe), the symbol into sym? */
bool attach_func_here(enum attach_mode mode, const char *func, char *sym, size_t len);

/*
 * Are the kernel functions fns[0..n) there for mode? fentry: each has BTF;
 * kprobe: the kernel has a kprobe PMU and each is in /proc/kallsyms (or its
 * compiler clone); other modes need none: 0. 0, or -EOPNOTSUPP with the first
 * missing one in why.
 */
int attach_funcs_present(enum attach_mode mode, const char *const *fns, int n, char *why,
			 size_t len);

/* Probe results kept per mode, for a tool that probes every mode up front (--check). */
struct attach_caps {
	bool works[ATTACH__COUNT];
	char why[ATTACH__COUNT][200];	/* why a mode works or was rejected */
};

/* An attach_probe_fn over a filled struct attach_caps (ctx). */
int attach_caps_probe(enum attach_mode mode, void *caps, char *why, size_t len);

/* The words for attach_choose's failure err: no mode works on this kernel, or memory is short. */
const char *attach_failure(int err);

struct bpf_object;
/* Runs of obj's loaded programs the kernel skipped (bpf_prog_info.recursion_misses): a
 * program that would nest in another BPF program on its CPU does not run. Counted for
 * fentry/fexit since 5.12, tp_btf since 6.2, kprobes since 6.7; older kernels skip uncounted. */
unsigned long long attach_runs_skipped(const struct bpf_object *obj);

struct bpf_link;
/*
 * Destroy the links *links[0..n) (each set to NULL). Those whose detach waits for an RCU grace
 * period (kprobes, perf-event tracepoints) go from up to LINKS_DESTROY_THREADS threads: one
 * after the other they wait alone (~70 ms each here, 1.6 s for a run's kprobes in a TCG guest).
 */
enum { LINKS_DESTROY_THREADS = 8 };
void links_destroy(struct bpf_link **const links[], int n);

/* links_destroy of every program link in obj's skeleton s (then its __destroy frees the rest). */
struct bpf_object_skeleton;
void skeleton_links_destroy(const struct bpf_object_skeleton *s);

#endif
