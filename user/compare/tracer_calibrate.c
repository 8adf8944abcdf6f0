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
			syscall(nr, &cpu, &node, NULL);	/* getppid and getpid ignore them */
	}
	return (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / calls;
}

/* 36 rounds (18 where a syscall is slow), each timing the loop three ways back to back:
 * untraced, with sys_enter/sys_exit, and with the calibration probe on top; in thread CPU time
 * (wall-clock timing under load spread 83 % and 48 % run to run: commit 8c874d7). Three loops
 * a round where timing each kind apart took four, and both kinds' rounds span the whole
 * calibration (~1.4 s on the host). The syscall kind's cost steps up for spells of 0.1 s to
 * over a second (docs/STAGES.md): 36 rounds span more of them, and their lower quartile is
 * read, not the median. Under qemu TCG 36 rounds took 0.5-2.4 s more per run than 18. */
enum { CALIB_ROUNDS = 36, CALIB_SLOW_ROUNDS = 18, CALIB_CALLS = 40000, CALIB_MIN_CALLS = 1000,
       CALIB_SIZING_CALLS = 2000 };
/* A round's untraced loop lasts about this long: 40,000 calls of a syscall up to 250 ns (every
 * host seen), fewer where a syscall is slower. Under qemu TCG (~2 us a call) a fixed 40,000
 * took 5-7 s of each run's ~12 s. */
#define CALIB_ROUND_NS 10e6
/* Rounds per attach: under qemu TCG attaching and detaching a kprobe or fentry program took
 * most of the calibration; three rounds of ~10 ms are still paired within a spell of the
 * syscall kind's level (docs/STAGES.md). */
enum { CALIB_BLOCK = 3 };
/* Where a syscall takes 1 us or more (qemu TCG; every host seen is under 250 ns), six: an
 * fentry attach and detach there took ~1 s, most of a run's calibration (issue 35). */
enum { CALIB_TCG_BLOCK = 6, CALIB_TCG_CALLS = (int)(CALIB_ROUND_NS / 1000) };
/* Sets of rounds tried while a cost comes out at or below zero. */
enum { CALIB_TRIES = 3 };
_Static_assert(CALIB_ROUNDS % CALIB_BLOCK == 0 && CALIB_SLOW_ROUNDS % CALIB_BLOCK == 0 &&
	       CALIB_SLOW_ROUNDS % CALIB_TCG_BLOCK == 0, "whole blocks of rounds");

/* Programs a calibration step attaches, on top of the steps before it. */
struct calib_step {
	const struct stage_prog *progs;
	int n;
};
enum { CALIB_MAX_STEPS = 2, CALIB_MAX_PROGS = 2 };

/*
 * A cost from n samples (sorted in place): their lower quartile. Timing noise only adds (an
 * interrupt, a preemption, a spell at the syscall kind's upper level): the median followed
 * those spells, 30-45 % run to run in 5 of 6 bench sections against 15-20 % in 9 of 9
 * (docs/STAGES.md). Where noise is as large as the cost in the rounds without it too (a TCG
 * guest on an overloaded host) the quartile comes out at or below zero: the median, which
 * noise on both sides does not bias, is read then.
 */
static double cost_of(double *v, int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 4] > 0 ? v[n / 4] : v[n / 2];
}

/* Append the paired differences `with - without` (each pair timed back to back, so drift hits
 * both alike) to d at *n. */
static void add_pairs(double *d, int *n, const double *without, const double *with, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++)
		d[(*n)++] = with[i] - without[i];
}

/* Attach every program of a step into links; all or none (-1, errno kept). */
static int attach_all(const struct calib_step *step, struct bpf_link **links)
{
	int j, err;

	for (j = 0; j < step->n; j++) {
		links[j] = tracer_attach_prog(&step->progs[j]);
		if (libbpf_get_error(links[j])) {
			err = errno;
			while (j--)
				bpf_link__destroy(links[j]);
			errno = err;
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

/* A round's time per call: of the calibration syscall, or (ref_nr != 0) of it minus that of a
 * reference syscall the probe does not hit, timed right after it, so drift hits both alike. */
static double time_round(long nr, long ref_nr, int calls)
{
	double t = time_syscall_loop(nr, calls);

	return ref_nr ? t - time_syscall_loop(ref_nr, calls) : t;
}

/*
 * Time ROUNDS rounds of CALLS syscalls (time_round) on top of whatever is attached already:
 * t[0] with nothing more, t[s + 1] with steps 0..s attached, in blocks of `block` rounds (each
 * step attached once per block, all detached at its end). -1 with errno set and *failed =
 * the step that could not be attached.
 */
static int time_steps(struct tracer *tr, const struct calib_step *steps, int n_steps, int rounds,
		      int calls, long ref_nr, int block, double t[][CALIB_ROUNDS], int *failed)
{
	struct bpf_link *links[CALIB_MAX_STEPS][CALIB_MAX_PROGS];
	int i, j, s, attached, err;

	for (i = 0; i < rounds; i += block) {
		for (s = 0, attached = 0; s <= n_steps; s++) {
			if (s > 0 && attach_all(&steps[s - 1], links[s - 1]))
				break;
			attached = s;
			for (j = i; j < i + block; j++)
				t[s][j] = time_round(tr->calib_nr, ref_nr, calls);
		}
		err = errno;
		while (attached--)
			destroy_all(links[attached], steps[attached].n);
		if (s <= n_steps) {
			*failed = s - 1;
			errno = err;
			return -1;
		}
	}
	return 0;
}

/*
 * keep_links (5.10 fentry): the probe attaches once, so its rounds cannot pair with rounds
 * without it. Each round is timed against getpid, which the probe does not hit, so drift
 * cancels; the two sets are compared by their own lower quartiles (else medians, as in
 * cost_of), and rounds with the probe are added (the probe stays attached) until the cost
 * comes out above zero: a single block measured 0 in a slow 5.10 TCG guest (issue 35).
 */
static int time_kept_probe(struct tracer *tr, const struct calib_step steps[2], int rounds,
			   int calls, double *other_ns, int *tries, int *failed)
{
	struct bpf_link *links[CALIB_MAX_STEPS][CALIB_MAX_PROGS];
	double without[CALIB_ROUNDS], with[CALIB_ROUNDS * CALIB_TRIES], w[CALIB_ROUNDS * CALIB_TRIES];
	double q[2];
	int i, n = 0, err;

	if (attach_all(&steps[0], links[0])) {
		*failed = 0;
		return -1;
	}
	for (i = 0; i < rounds; i++)
		without[i] = time_round(tr->calib_nr, SYS_getpid, calls);
	if (attach_all(&steps[1], links[1])) {
		err = errno;
		destroy_all(links[0], steps[0].n);
		errno = err;
		*failed = 1;
		return -1;
	}
	for (*tries = 1;; ++*tries) {
		for (i = 0; i < rounds; i++)
			with[n++] = time_round(tr->calib_nr, SYS_getpid, calls);
		memcpy(w, with, n * sizeof(double));
		qsort(w, n, sizeof(double), cmp_double);
		qsort(without, rounds, sizeof(double), cmp_double);
		/* each set's lower quartile, else (see cost_of) its median */
		for (i = 0; i < 2; i++)
			q[i] = w[n * (i + 1) / 4] - without[rounds * (i + 1) / 4];
		*other_ns = q[0] > 0 ? q[0] : q[1];
		if (*other_ns > 0 || *tries == CALIB_TRIES)
			break;
	}
	destroy_all(links[1], steps[1].n);
	destroy_all(links[0], steps[0].n);
	return 0;
}

/*
 * The two costs per call: the syscall tracepoints' (sys_ns) and, on top of them, the
 * calibration probe's (other_ns). Measured again while either comes out at or below zero:
 * noise larger than the cost, seen in qemu TCG guests on a busy host (a guest's CPU time runs
 * on while the host runs something else). *tries: the probe's tries.
 * -1 with errno set and *failed = 0 (sys_enter/sys_exit) or 1 (the probe).
 */
static int time_costs(struct tracer *tr, const struct calib_step steps[2], int rounds, int calls,
		      int block, double *sys_ns, double *other_ns, int *tries, int *failed)
{
	double t[3][CALIB_ROUNDS], d_sys[CALIB_ROUNDS * CALIB_TRIES], d_other[CALIB_ROUNDS * CALIB_TRIES];
	double v[CALIB_ROUNDS * CALIB_TRIES];
	int n_steps = tr->keep_links ? 1 : 2, n_sys = 0, n_other = 0;

	/* every try's pairs are kept: a later try adds to the sample, it does not replace it */
	for (*tries = 1;; ++*tries) {
		if (time_steps(tr, steps, n_steps, rounds, calls, 0, block, t, failed))
			return -1;
		add_pairs(d_sys, &n_sys, t[0], t[1], rounds);
		memcpy(v, d_sys, n_sys * sizeof(double));
		*sys_ns = cost_of(v, n_sys);
		if (n_steps == 2) {
			add_pairs(d_other, &n_other, t[1], t[2], rounds);
			memcpy(v, d_other, n_other * sizeof(double));
			*other_ns = cost_of(v, n_other);
		}
		if ((*sys_ns > 0 && (n_steps == 1 || *other_ns > 0)) || *tries == CALIB_TRIES)
			break;
	}
	if (n_steps == 2)
		return 0;
	return time_kept_probe(tr, steps, rounds, calls, other_ns, tries, failed);
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
	const struct calib_step steps[2] = { { sys, 2 }, { &tr->calib, 1 } };
	struct bpf_program *calib = tracer_calib_program(tr->skel, tr->mode);
	pid_t self = syscall(SYS_gettid);
	double sys_ns, other_ns = 0;
	const char *what = calib ? bpf_program__name(calib) : "its probe";	/* for the warning */
	uint64_t hits, want;
	int calls, rounds, tries, failed;

	tr->syscall_hit_ns = 0;
	if (!tr->calib.prog)
		goto fail;
	tracer_reset_state(tr);
	tracer_set_tasks(tr, self, self, TR_TCP);
	calls = calls_per_round(tr->calib_nr);
	rounds = calls < CALIB_CALLS ? CALIB_SLOW_ROUNDS : CALIB_ROUNDS;
	tr->skel->bss->calib_hits = 0;
	if (time_costs(tr, steps, rounds, calls, calls <= CALIB_TCG_CALLS ? CALIB_TCG_BLOCK : CALIB_BLOCK,
		       &sys_ns, &other_ns, &tries, &failed)) {
		if (failed == 0)
			what = "sys_enter/sys_exit";
		goto fail;
	}
	hits = tr->skel->bss->calib_hits;
	tracer_reset_state(tr);
	tr->syscall_hit_ns = MAX(sys_ns / 2, 0.0);
	/* every try's probe rounds */
	want = (uint64_t)rounds * calls * tries;
	if (hits < want) {
		say_error("warning: the calibration probe fired %llu times for %llu "
			"calls; the corrected breakdown subtracts only syscall-tracepoint hits",
			(unsigned long long)hits, (unsigned long long)want);
		return 0;
	}
	if (other_ns <= 0 || sys_ns <= 0)
		say_error("warning: probe-cost calibration measured no cost for %s "
			"in %d tries (noise larger than one probe hit); the corrected breakdown "
			"subtracts less", other_ns <= 0 ? "a probe hit" : "a syscall-tracepoint hit",
			tries);
	return MAX(other_ns, 0.0);
fail:
	say_error("warning: probe-cost calibration could not attach %s: %s; the "
		"corrected breakdown subtracts nothing", what, strerror(errno));
	tracer_reset_state(tr);
	return 0;
}
