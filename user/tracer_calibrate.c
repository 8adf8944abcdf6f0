// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer's probe-cost calibration: what one probe hit costs in the chosen mode, measured
 * at start-up on a cheap syscall, so the corrected breakdown can subtract it (docs/STAGES.md).
 * A syscall-tracepoint hit and any other hit are measured apart: they cost differently.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "tracer_int.h"
#include "stages.skel.h"
#include "util.h"

/* Cheap syscalls whose arch wrapper (__x64_sys_*, __arm64_sys_*) can carry the calibration
 * probe: which of them has BTF (needed by fentry) differs between kernels (6.12 lacks
 * getppid's). */
#if defined(__aarch64__)
#define SYS_WRAPPER "__arm64_sys_"
#else
#define SYS_WRAPPER "__x64_sys_"
#endif
static const struct {
	const char *func;
	long nr;
} calib_targets[] = {
	{ SYS_WRAPPER "getppid", SYS_getppid },
	{ SYS_WRAPPER "getcpu", SYS_getcpu },
	{ SYS_WRAPPER "getrusage", SYS_getrusage },
};

/* The first target this mode can probe: its symbol in kallsyms, with BTF for fentry (tracepoint
 * mode's probe sits on sys_enter and only needs the number). */
static int pick_calib_target(enum attach_mode mode)
{
	char sym[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(calib_targets); i++) {
		const char *f = calib_targets[i].func;

		if (mode == ATTACH_TRACEPOINT ||
		    (ksym_resolve(f, sym, sizeof(sym)) && (mode != ATTACH_FENTRY || btf_has_func(f))))
			return i;
	}
	return -1;
}

void tracer_calib_prepare(struct tracer *tr)
{
	struct bpf_program *prog = tracer_calib_program(tr->skel, tr->mode);
	int i = pick_calib_target(tr->mode);

	if (prog && i >= 0) {
		tr->calib = (struct stage_prog){
			.prog = prog, .target = calib_targets[i].func,
			.how = tr->mode == ATTACH_KPROBE ? PA_KPROBE : PA_SECTION,
		};
		tr->calib_nr = calib_targets[i].nr;
		bpf_program__set_autoload(prog, true);
		if (tr->mode == ATTACH_FENTRY)
			bpf_program__set_attach_target(prog, 0, tr->calib.target);
	}
	tr->skel->rodata->calib_nr = tr->calib_nr;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* In this thread's CPU time: a loop preempted by other tasks is not charged their time slices. */
static double time_syscall_loop(long nr, int calls)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru;
	unsigned int cpu, node;
	int i;

	for (i = 0; i < calls; i++) {
		if (nr == SYS_getrusage)
			syscall(nr, RUSAGE_SELF, &ru);
		else
			syscall(nr, &cpu, &node, NULL);	/* getppid ignores them */
	}
	return (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / calls;
}

/* 15 paired rounds, timed in thread CPU time: on an AMD EPYC VM, quiet or with both CPUs
 * busy, the two costs came out within ~2 % (other) and ~20 % (syscall) run to run, where
 * wall-clock timing under load spread 83 % and 48 % (docs/BENCHMARKS.md, "Calibration
 * stability"). The syscall kind's ~20 % is two levels that alternate in spells of 0.1-0.3 s
 * (docs/STAGES.md). About 1 s at start-up on the host. */
enum { CALIB_ROUNDS = 15, CALIB_CALLS = 40000, CALIB_MIN_CALLS = 1000, CALIB_SIZING_CALLS = 2000 };
/* Rounds per attach: under qemu TCG attaching and detaching a kprobe or fentry program took
 * most of the calibration; three rounds of ~10 ms are still paired within a spell of the
 * syscall kind's level (docs/STAGES.md). */
enum { CALIB_BLOCK = 3 };
_Static_assert(CALIB_ROUNDS % CALIB_BLOCK == 0, "whole blocks of rounds");
/* A round's untraced loop lasts about this long: 40,000 calls of a syscall up to 250 ns (every
 * host seen), fewer where a syscall is slower. Under qemu TCG (~2 us a call) a fixed 40,000
 * took 5-7 s of each run's ~12 s. */
#define CALIB_ROUND_NS 10e6

/* Median of the paired differences of alternating timed loops (drift hits a pair alike). */
static double paired_median(const double *plain, double *traced, int n)
{
	int i;

	for (i = 0; i < n; i++)
		traced[i] -= plain[i];
	qsort(traced, n, sizeof(double), cmp_double);
	return traced[n / 2];
}

/* Attach every program of extra into links; all or none (-1). */
static int attach_all(const struct stage_prog *extra, int n_extra, struct bpf_link **links)
{
	int j;

	for (j = 0; j < n_extra; j++) {
		links[j] = tracer_attach_prog(&extra[j]);
		if (libbpf_get_error(links[j])) {
			while (j--)
				bpf_link__destroy(links[j]);
			return -1;
		}
	}
	return 0;
}

static void destroy_all(struct bpf_link **links, int n)
{
	while (n--)
		bpf_link__destroy(links[n]);
}

/*
 * Time CALLS syscalls per round, in blocks of rounds without and then with `extra` attached,
 * on top of whatever is attached already; the median paired difference per call, or NAN when
 * `extra` could not be attached (a difference below zero is noise, not a failure). once:
 * attach `extra` one time only (fentry where the kernel cannot re-attach): one block.
 */
static double time_with_and_without(struct tracer *tr, const struct stage_prog *extra, int n_extra,
				    int calls, bool once)
{
	double plain[CALIB_ROUNDS], traced[CALIB_ROUNDS];
	int block = once ? CALIB_ROUNDS : CALIB_BLOCK, i, j;
	struct bpf_link *links[4];

	for (i = 0; i < CALIB_ROUNDS; i += block) {
		for (j = i; j < i + block; j++)
			plain[j] = time_syscall_loop(tr->calib_nr, calls);
		if (attach_all(extra, n_extra, links))
			return NAN;
		for (j = i; j < i + block; j++)
			traced[j] = time_syscall_loop(tr->calib_nr, calls);
		destroy_all(links, n_extra);
	}
	return paired_median(plain, traced, CALIB_ROUNDS);
}

/*
 * time_with_and_without, measured again while it comes out at or below zero: noise larger
 * than the cost, seen in qemu TCG guests on a busy host (a guest's CPU time runs on while
 * the host runs something else). Not when `once`: that program cannot be attached again.
 */
enum { CALIB_TRIES = 3 };
static double time_cost(struct tracer *tr, const struct stage_prog *extra, int n_extra, int calls,
			bool once)
{
	double ns = time_with_and_without(tr, extra, n_extra, calls, once);
	int i;

	for (i = 1; i < CALIB_TRIES && !once && ns <= 0; i++)	/* false for NAN: attach failed */
		ns = time_with_and_without(tr, extra, n_extra, calls, once);
	return ns;
}

/* Calls per round: CALIB_CALLS, or fewer where CALIB_ROUND_NS holds fewer untraced calls. */
static int calls_per_round(long nr)
{
	double cold = time_syscall_loop(nr, CALIB_SIZING_CALLS);	/* the first may run cold */
	double warm = time_syscall_loop(nr, CALIB_SIZING_CALLS);
	double ns = MIN(cold, warm), calls = ns > 0 ? CALIB_ROUND_NS / ns : CALIB_CALLS;

	return (int)MIN(MAX(calls, (double)CALIB_MIN_CALLS), (double)CALIB_CALLS);
}

/*
 * Two kinds of probe hits cost differently. A syscall-tracepoint hit also switches every
 * task's syscalls to the kernel's tracing slow path: measured as the cost per syscall of
 * attaching sys_enter + sys_exit, halved per hit. Any other hit (tp_btf, fentry, kprobe) is
 * measured on top of that, as one more program on the same syscall: the calibration probe.
 * Returns the other-hit cost; the syscall-hit cost stays with the tracer for the correction.
 */
double tracer_calibrate(struct tracer *tr)
{
	const struct stage_prog sys[2] = {
		{ .prog = kernel_has_btf() ? tr->skel->progs.tp_sys_enter : tr->skel->progs.rtp_sys_enter },
		{ .prog = kernel_has_btf() ? tr->skel->progs.tp_sys_exit : tr->skel->progs.rtp_sys_exit },
	};
	struct bpf_program *calib = tracer_calib_program(tr->skel, tr->mode);
	struct bpf_link *held[2];
	pid_t self = syscall(SYS_gettid);
	double sys_ns, other_ns;
	const char *what = calib ? bpf_program__name(calib) : "its probe";	/* for the warning */
	uint64_t hits;
	int calls;

	tr->syscall_hit_ns = 0;
	if (!tr->calib.prog)
		goto fail;
	tracer_reset_state(tr);
	tracer_set_tasks(tr, self, self, TR_TCP);
	calls = calls_per_round(tr->calib_nr);
	sys_ns = time_cost(tr, sys, 2, calls, false);
	if (isnan(sys_ns) || attach_all(sys, 2, held)) {
		what = "sys_enter/sys_exit";
		goto fail;
	}
	tr->skel->bss->calib_hits = 0;
	other_ns = time_cost(tr, &tr->calib, 1, calls, tr->keep_links);
	hits = tr->skel->bss->calib_hits;
	destroy_all(held, 2);
	tracer_reset_state(tr);
	if (isnan(other_ns))
		goto fail;
	tr->syscall_hit_ns = MAX(sys_ns / 2, 0.0);
	if (hits < (uint64_t)CALIB_ROUNDS * calls) {
		fprintf(stderr, "udsprobe: warning: the calibration probe fired %llu times for %d "
			"calls; the corrected breakdown subtracts only syscall-tracepoint hits\n",
			(unsigned long long)hits, CALIB_ROUNDS * calls);
		return 0;
	}
	if (other_ns <= 0 || sys_ns <= 0)
		fprintf(stderr, "udsprobe: warning: probe-cost calibration measured no cost for %s "
			"in %d tries (noise larger than one probe hit); the corrected breakdown "
			"subtracts less\n", other_ns <= 0 ? "a probe hit" : "a syscall-tracepoint hit",
			other_ns <= 0 && tr->keep_links ? 1 : CALIB_TRIES);
	return MAX(other_ns, 0.0);
fail:
	fprintf(stderr, "udsprobe: warning: probe-cost calibration could not attach %s: %s; the "
		"corrected breakdown subtracts nothing\n", what, strerror(errno));
	tracer_reset_state(tr);
	return 0;
}
