// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer: chooses the attach mode, enables that mode's programs in
 * stages.bpf.c, registers each run's tasks, and turns the in-kernel sums into
 * named stages. What ends each stage and how it is named is the stage table's
 * (stage_table.c), so the three attach modes and both transports line up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stages.h"
#include "tracer.h"
#include "stages.skel.h"
#include "util.h"

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

static bool is_prog(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* "?fentry/tcp_sendmsg" -> "tcp_sendmsg" */
static const char *prog_target(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog), *slash = strrchr(sec, '/');

	return slash ? slash + 1 : sec;
}

/* The function a fentry/kprobe program's target is called in this kernel: its own name, or the
 * older name of a renamed one (stage_func_older); NULL if neither is in kallsyms. */
static const char *kernel_func(const char *target, char *sym, size_t len)
{
	const char *older = stage_func_older(target);

	if (ksym_resolve(target, sym, len))
		return target;
	return older && ksym_resolve(older, sym, len) ? older : NULL;
}

/* Syscalls and the scheduler, in every mode: tp_btf, or raw_tp where the kernel has no BTF of
 * its own (kprobe mode with --btf FILE). */
static bool common_prog(const char *name)
{
	const char *prefix = kernel_has_btf() ? "tp_" : "rtp_";

	if (strncmp(name, prefix, strlen(prefix)))
		return false;
	name += strlen(prefix);
	return !strcmp(name, "sys_enter") || !strcmp(name, "sys_exit") || !strcmp(name, "sched_switch");
}

/* Does this program belong to the mode, and can its target be attached here? */
static bool prog_wanted(enum attach_mode mode, const struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog), *target = prog_target(prog), *func;
	char sym[256];

	if (common_prog(name))
		return true;
	if (is_prog(name, "calib_"))
		return false;	/* attached only while calibrating */
	switch (mode) {
	case ATTACH_FENTRY:
		func = kernel_func(target, sym, sizeof(sym));
		return (is_prog(name, "fe_") || is_prog(name, "fx_")) && func && btf_has_func(func);
	case ATTACH_KPROBE:
		return (is_prog(name, "kp_") || is_prog(name, "kr_")) &&
		       kernel_func(target, sym, sizeof(sym));
	case ATTACH_TRACEPOINT:
		return is_prog(name, "tp_") && btf_has_tracepoint(target);
	default:
		return false;
	}
}

static const char *calib_prog_name(enum attach_mode mode)
{
	return mode == ATTACH_FENTRY ? "calib_fentry" : mode == ATTACH_KPROBE ? "calib_kprobe" : "calib_tp";
}

/* Which boundaries the loaded programs can see, per transport. */
static void compute_availability(struct tracer *tr)
{
	struct bpf_program *prog;
	size_t n = 0;
	int b, t;

	for (b = 0; b < B__COUNT; b++) {
		for (t = 0; t < TR__COUNT; t++) {
			const struct stage_boundary *d = stage_boundary(b);
			const char *marker = stage_marker(b, t, tr->mode == ATTACH_TRACEPOINT);

			if (b == B_SEND_ENTER || (d->stage[t] && d->always)) {
				tr->avail[t][b] = true;
				continue;
			}
			if (!d->stage[t] || !marker)
				continue;
			bpf_object__for_each_program(prog, tr->skel->obj) {
				if (bpf_program__autoload(prog) &&
				    !strcmp(prog_target(prog), marker) &&
				    !common_prog(bpf_program__name(prog)))
					tr->avail[t][b] = true;
			}
		}
	}
	tr->missing[0] = 0;
	for (t = 0; t < TR__COUNT; t++)
		for (b = 0; b < B__COUNT; b++) {
			const struct stage_boundary *d = stage_boundary(b);
			const char *marker = stage_marker(b, t, tr->mode == ATTACH_TRACEPOINT);

			if (d->stage[t] && marker && !tr->avail[t][b] && n < sizeof(tr->missing))
				n += snprintf(tr->missing + n, sizeof(tr->missing) - n, "%s%s %s",
					      n ? ", " : "", transport_names[t], marker);
		}
}

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

static bool pick_calib_target(struct tracer *tr)
{
	char sym[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(calib_targets); i++) {
		const char *f = calib_targets[i].func;

		if (tr->mode == ATTACH_TRACEPOINT ||
		    (ksym_resolve(f, sym, sizeof(sym)) && (tr->mode != ATTACH_FENTRY || btf_has_func(f)))) {
			tr->calib_func = f;
			tr->calib_nr = calib_targets[i].nr;
			return true;
		}
	}
	return false;
}

/* Load and attach one program of ours; 0 or -errno. */
static int try_program(const char *prog_name, const char *kfunc)
{
	struct stages_bpf *skel = stages_bpf__open_opts(btf_open_opts());
	struct bpf_program *prog;
	struct bpf_link *link;
	int err;

	if (!skel)
		return -errno;
	prog = bpf_object__find_program_by_name(skel->obj, prog_name);
	if (!prog) {
		stages_bpf__destroy(skel);
		return -ENOENT;
	}
	bpf_program__set_autoload(prog, true);
	err = stages_bpf__load(skel);
	if (!err) {
		link = kfunc ? bpf_program__attach_kprobe(prog, false, kfunc) : bpf_program__attach(prog);
		err = libbpf_get_error(link);
		if (!err)
			bpf_link__destroy(link);
	}
	stages_bpf__destroy(skel);
	return err;
}

/* Can a detached fentry program be attached again? Not before Linux 5.12 (ENOENT). */
static bool fentry_can_reattach(void)
{
	struct stages_bpf *skel = stages_bpf__open_opts(btf_open_opts());
	struct bpf_program *prog;
	struct bpf_link *link;
	bool ok = false;
	int i;

	if (!skel)
		return false;
	prog = skel->progs.fe_unix_stream_sendmsg;
	bpf_program__set_autoload(prog, true);
	if (!stages_bpf__load(skel)) {
		for (i = 0; i < 2; i++) {	/* attach, detach, attach again */
			link = bpf_program__attach(prog);
			ok = !libbpf_get_error(link);
			if (!ok)
				break;
			bpf_link__destroy(link);
		}
	}
	stages_bpf__destroy(skel);
	return ok;
}

void tracer_probe(struct attach_caps *caps, int verbose)
{
	char sym[256];
	int err;

	memset(caps, 0, sizeof(*caps));
	libbpf_setup(verbose);

	if (!kernel_has_btf()) {
		snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
			 "needs the kernel's own BTF (/sys/kernel/btf/vmlinux)%s",
			 btf_file() ? "; --btf serves CO-RE and lookups only" : "");
	} else if (!btf_has_func("unix_stream_sendmsg")) {
		snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
			 "no kernel BTF for unix_stream_sendmsg");
	} else {
		err = try_program("fe_unix_stream_sendmsg", NULL);
		caps->works[ATTACH_FENTRY] = !err;
		if (err == -EPERM || err == -EACCES)
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "attaching an fentry program failed with %s: this kernel refuses BPF "
				 "trampolines (ftrace blocked or locked down)", strerror(-err));
		else if (err)
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "loading/attaching an fentry program failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "fentry/fexit on unix_stream_sendmsg loaded and attached");
	}

	if (!kernel_has_btf() && !btf_file()) {
		snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
			 "no BTF for CO-RE: give --btf FILE");
	} else if (!ksym_resolve("unix_stream_sendmsg", sym, sizeof(sym))) {
		snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
			 "unix_stream_sendmsg not in /proc/kallsyms");
	} else {
		err = try_program("kp_unix_stream_sendmsg", sym);
		caps->works[ATTACH_KPROBE] = !err;
		if (err == -ENOENT || err == -EOPNOTSUPP)
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "attaching a kprobe failed with %s: this kernel has no kprobe support "
				 "(CONFIG_KPROBES unset?)", strerror(-err));
		else if (err)
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "attaching a kprobe failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "kprobe/kretprobe on %.150s attached", sym);
	}

	if (!kernel_has_btf()) {
		snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
			 "tp_btf needs the kernel's own BTF (/sys/kernel/btf/vmlinux)%s",
			 btf_file() ? "; --btf serves CO-RE and lookups only" : "");
	} else if (!btf_has_tracepoint("sched_switch")) {
		snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
			 "no BTF for tracepoints (needs CONFIG_DEBUG_INFO_BTF, kernel 5.5+)");
	} else {
		err = try_program("tp_sched_switch", NULL);
		caps->works[ATTACH_TRACEPOINT] = !err;
		if (err)
			snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
				 "attaching tp_btf/sched_switch failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
				 "tp_btf/sched_switch attached");
	}
}

int tracer_open(enum attach_mode req, int verbose, struct tracer **out)
{
	struct attach_caps caps;
	struct bpf_program *prog;
	struct tracer *tr;
	char why[900];
	int err;

	*out = NULL;
	if (!kernel_has_btf() && !btf_file()) {
		fprintf(stderr, "udsprobe: %s\n", btf_missing_hint());
		return -ENOENT;
	}
	err = ensure_tracefs();
	if (err && verbose)
		fprintf(stderr, "udsprobe: note: cannot mount tracefs: %s\n", strerror(-err));
	tracer_probe(&caps, verbose);
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->verbose = verbose;
	err = attach_choose(req, attach_caps_probe, &caps, &tr->mode, why, sizeof(why));
	if (err) {
		if (req != ATTACH_AUTO)
			fprintf(stderr, "udsprobe: cannot trace in the forced mode: %s\n"
				"udsprobe: try --attach auto (udsprobe --check lists what this kernel "
				"supports)\n", why);
		else
			fprintf(stderr, "udsprobe: no attach mode works here: %s\n", why);
		free(tr);
		return err;
	}
	snprintf(tr->reason, sizeof(tr->reason), "%s", why);

	tr->skel = stages_bpf__open_opts(btf_open_opts());
	if (!tr->skel) {
		err = -errno;
		fprintf(stderr, "udsprobe: opening the BPF object failed: %s\n", strerror(-err));
		goto fail;
	}
	bpf_object__for_each_program(prog, tr->skel->obj) {
		const char *func;
		char sym[256];

		bpf_program__set_autoload(prog, prog_wanted(tr->mode, prog));
		/* a renamed function: fentry must name the older one before load */
		if (bpf_program__autoload(prog) && tr->mode == ATTACH_FENTRY &&
		    !common_prog(bpf_program__name(prog)) &&
		    (func = kernel_func(prog_target(prog), sym, sizeof(sym))) &&
		    strcmp(func, prog_target(prog)))
			bpf_program__set_attach_target(prog, 0, func);
	}
	prog = bpf_object__find_program_by_name(tr->skel->obj, calib_prog_name(tr->mode));
	if (prog && pick_calib_target(tr)) {
		bpf_program__set_autoload(prog, true);
		if (tr->mode == ATTACH_FENTRY)
			bpf_program__set_attach_target(prog, 0, tr->calib_func);
	}
	tr->skel->rodata->calib_nr = tr->calib_nr;
	err = stages_bpf__load(tr->skel);
	if (err) {
		fprintf(stderr, "udsprobe: loading the %s-mode BPF programs failed: %s (rerun with -vv "
			"for the verifier log)\n", attach_mode_names[tr->mode], strerror(-err));
		goto fail;
	}
	compute_availability(tr);
	/* then each fentry program attaches once, at its first run, and detaches at close */
	tr->keep_links = tr->mode == ATTACH_FENTRY && !fentry_can_reattach();
	if (tr->keep_links && verbose)
		fprintf(stderr, "udsprobe: note: this kernel cannot re-attach a detached fentry "
			"program: they stay attached from the first run to the end\n");
	*out = tr;
	return 0;
fail:
	tracer_close(tr);
	return err;
}

static void drop_links(struct tracer *tr)
{
	while (tr->n_links > 0)
		bpf_link__destroy(tr->links[--tr->n_links]);
}

void tracer_close(struct tracer *tr)
{
	if (!tr)
		return;
	drop_links(tr);
	stages_bpf__destroy(tr->skel);
	free(tr);
}

enum attach_mode tracer_mode(const struct tracer *tr) { return tr->mode; }
const char *tracer_reason(const struct tracer *tr) { return tr->reason; }
const char *tracer_missing(const struct tracer *tr) { return tr->missing; }

const char *tracer_granularity(const struct tracer *tr)
{
	return tr->mode == ATTACH_TRACEPOINT ? "tracepoint" : "function";
}

static struct bpf_link *attach_prog(struct tracer *tr, struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);
	char sym[256];

	if (is_prog(name, "kp_") || is_prog(name, "kr_") || !strcmp(name, "calib_kprobe")) {
		if (!strcmp(name, "calib_kprobe") ? !ksym_resolve(tr->calib_func, sym, sizeof(sym))
						   : !kernel_func(prog_target(prog), sym, sizeof(sym))) {
			errno = ENOENT;
			return NULL;
		}
		return bpf_program__attach_kprobe(prog, is_prog(name, "kr_"), sym);
	}
	return bpf_program__attach(prog);
}

/* Does transport t's path use this program? Fewer attached programs, fewer hits. */
static bool prog_on_path(const struct tracer *tr, const struct bpf_program *prog, enum transport t)
{
	const char *name = bpf_program__name(prog), *target = prog_target(prog);
	int b;

	if (common_prog(name) || !strcmp(name, "tp_sock_recv_length"))
		return true;
	for (b = 0; b < B__COUNT; b++) {
		const char *marker = stage_marker(b, t, tr->mode == ATTACH_TRACEPOINT);

		if (stage_boundary(b)->stage[t] && marker && !strcmp(marker, target))
			return true;
	}
	return false;
}

int tracer_attach(struct tracer *tr, enum transport t, uint64_t *attach_ns)
{
	uint64_t t0 = now_ns();
	struct bpf_program *prog;
	struct bpf_link *link;
	int err;

	bpf_object__for_each_program(prog, tr->skel->obj) {
		int i;

		if (!bpf_program__autoload(prog) || is_prog(bpf_program__name(prog), "calib_") ||
		    !prog_on_path(tr, prog, t))
			continue;
		for (i = 0; i < tr->n_links && tr->link_progs[i] != prog; i++)
			;
		if (i < tr->n_links)
			continue;	/* kept from an earlier run (keep_links) */
		if (tr->n_links == (int)ARRAY_SIZE(tr->links))
			return -E2BIG;
		link = attach_prog(tr, prog);
		err = libbpf_get_error(link);
		if (err) {
			fprintf(stderr, "udsprobe: attaching %s (%s) failed: %s\n",
				bpf_program__name(prog), bpf_program__section_name(prog), strerror(-err));
			drop_links(tr);
			return err;
		}
		tr->link_progs[tr->n_links] = prog;
		tr->links[tr->n_links++] = link;
	}
	if (attach_ns)
		*attach_ns = now_ns() - t0;
	return 0;
}

void tracer_detach(struct tracer *tr, uint64_t *detach_ns)
{
	uint64_t t0 = now_ns();

	if (!tr->keep_links)
		drop_links(tr);
	if (detach_ns)
		*detach_ns = now_ns() - t0;
}

static void reset_state(struct tracer *tr)
{
	struct stages_bpf__bss *bss = tr->skel->bss;

	bss->tracing = 0;
	bss->task_tid[0] = bss->task_tid[1] = 0;
	__sync_synchronize();
	memset(bss->tasks, 0, sizeof(bss->tasks));
	memset(bss->msgs, 0, sizeof(bss->msgs));
	memset(bss->stats, 0, sizeof(bss->stats));
	bss->msgs_done = bss->msgs_unmatched = bss->msgs_overwritten = bss->msgs_wrong_sock = 0;
	bss->calib_hits = 0;
}

static void set_tasks(struct tracer *tr, pid_t client, pid_t server, enum transport t)
{
	struct stages_bpf__bss *bss = tr->skel->bss;
	int b;

	bss->transport = t == TR_UNIX ? TRANSPORT_UNIX : TRANSPORT_TCP;
	bss->slice_from_send = !tr->avail[t][B_DATA_READY];
	bss->avail_mask = 0;
	for (b = 0; b < B__COUNT; b++)
		if (tr->avail[t][b])
			bss->avail_mask |= 1ull << b;
	bss->task_tid[0] = client;
	bss->task_tid[1] = server;
	__sync_synchronize();
}

/*
 * Runs of our programs the kernel skipped (bpf_prog_info.recursion_misses): a program that
 * would nest in another BPF program on the same CPU does not run. Counted for fentry/fexit
 * since 5.12 and tp_btf since 6.2; kprobe skips only since 6.7 (older kernels lose them
 * uncounted, and the stage counts show it).
 */
static uint64_t kernel_missed(const struct tracer *tr)
{
	struct bpf_program *prog;
	uint64_t sum = 0;

	bpf_object__for_each_program(prog, tr->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}

int tracer_begin_run(struct tracer *tr, const struct wl_config *cfg, pid_t client, pid_t server)
{
	reset_state(tr);
	tr->missed_at_begin = kernel_missed(tr);
	tr->skel->bss->attribution = cfg->mode == WL_STREAM ? ATTR_PER_CALL : ATTR_MESSAGE;
	set_tasks(tr, client, server, cfg->transport);
	return 0;
}

void tracer_measure(struct tracer *tr, bool on)
{
	__sync_synchronize();
	tr->skel->bss->tracing = on;
	__sync_synchronize();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double time_syscall_loop(long nr, int calls)
{
	uint64_t t0 = now_ns();
	struct rusage ru;
	unsigned int cpu, node;
	int i;

	for (i = 0; i < calls; i++) {
		if (nr == SYS_getrusage)
			syscall(nr, RUSAGE_SELF, &ru);
		else
			syscall(nr, &cpu, &node, NULL);	/* getppid ignores them */
	}
	return (double)(now_ns() - t0) / calls;
}

/* 15 alternating rounds: the two costs came out within ~7 % (other) and ~20 % (syscall) run to
 * run on a shared AMD EPYC; 9 rounds gave ~14 % and ~40 %. About 1.5 s at start-up. */
enum { CALIB_ROUNDS = 15, CALIB_CALLS = 40000 };

/* Median of the paired differences of alternating timed loops (drift hits a pair alike). */
static double paired_median(const double *plain, double *traced, int n)
{
	int i;

	for (i = 0; i < n; i++)
		traced[i] -= plain[i];
	qsort(traced, n, sizeof(double), cmp_double);
	return traced[n / 2];
}

/*
 * Time CALLS syscalls per round, alternating without and with `extra` attached, on top of
 * whatever is attached already; the median paired difference per call. once: attach `extra`
 * one time only (fentry where the kernel cannot re-attach): every plain round first.
 */
static double time_with_and_without(struct tracer *tr, struct bpf_program *const *extra, int n_extra,
				    bool once)
{
	double plain[CALIB_ROUNDS], traced[CALIB_ROUNDS];
	struct bpf_link *links[4];
	int i, j;

	if (once) {
		for (i = 0; i < CALIB_ROUNDS; i++)
			plain[i] = time_syscall_loop(tr->calib_nr, CALIB_CALLS);
		for (j = 0; j < n_extra; j++) {
			links[j] = attach_prog(tr, extra[j]);
			if (libbpf_get_error(links[j])) {
				while (j--)
					bpf_link__destroy(links[j]);
				return -1;
			}
		}
		for (i = 0; i < CALIB_ROUNDS; i++)
			traced[i] = time_syscall_loop(tr->calib_nr, CALIB_CALLS);
		for (j = 0; j < n_extra; j++)
			bpf_link__destroy(links[j]);
		return paired_median(plain, traced, CALIB_ROUNDS);
	}
	for (i = 0; i < CALIB_ROUNDS; i++) {
		plain[i] = time_syscall_loop(tr->calib_nr, CALIB_CALLS);
		for (j = 0; j < n_extra; j++) {
			links[j] = attach_prog(tr, extra[j]);
			if (libbpf_get_error(links[j])) {
				while (j--)
					bpf_link__destroy(links[j]);
				return -1;
			}
		}
		traced[i] = time_syscall_loop(tr->calib_nr, CALIB_CALLS);
		for (j = 0; j < n_extra; j++)
			bpf_link__destroy(links[j]);
	}
	return paired_median(plain, traced, CALIB_ROUNDS);
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
	struct bpf_program *calib = bpf_object__find_program_by_name(tr->skel->obj,
								      calib_prog_name(tr->mode));
	struct bpf_program *sys[2] = {
		kernel_has_btf() ? tr->skel->progs.tp_sys_enter : tr->skel->progs.rtp_sys_enter,
		kernel_has_btf() ? tr->skel->progs.tp_sys_exit : tr->skel->progs.rtp_sys_exit,
	};
	struct bpf_link *held[2] = { NULL, NULL };
	pid_t self = syscall(SYS_gettid);
	double sys_ns, other_ns = -1;
	uint64_t hits;
	int i;

	tr->syscall_hit_ns = 0;
	if (!calib || !tr->calib_func)
		goto fail;
	reset_state(tr);
	set_tasks(tr, self, self, TR_TCP);
	sys_ns = time_with_and_without(tr, sys, 2, false);
	for (i = 0; i < 2; i++) {
		held[i] = attach_prog(tr, sys[i]);
		if (libbpf_get_error(held[i])) {
			held[i] = NULL;
			goto fail;
		}
	}
	tr->skel->bss->calib_hits = 0;
	other_ns = time_with_and_without(tr, &calib, 1, tr->keep_links);
	hits = tr->skel->bss->calib_hits;
	for (i = 0; i < 2; i++)
		bpf_link__destroy(held[i]);
	reset_state(tr);
	if (sys_ns < 0 || other_ns < -1e9)
		goto fail;
	tr->syscall_hit_ns = MAX(sys_ns / 2, 0.0);
	if (hits < (uint64_t)CALIB_ROUNDS * CALIB_CALLS) {
		fprintf(stderr, "udsprobe: warning: the calibration probe fired %llu times for %d "
			"calls; the corrected breakdown subtracts only syscall-tracepoint hits\n",
			(unsigned long long)hits, CALIB_ROUNDS * CALIB_CALLS);
		return 0;
	}
	if (other_ns <= 0 || sys_ns <= 0)
		fprintf(stderr, "udsprobe: warning: probe-cost calibration measured no cost for %s "
			"(noise larger than one probe hit); the corrected breakdown subtracts less\n",
			other_ns <= 0 ? "a probe hit" : "a syscall-tracepoint hit");
	return MAX(other_ns, 0.0);
fail:
	for (i = 0; i < 2; i++)
		if (held[i])
			bpf_link__destroy(held[i]);
	fprintf(stderr, "udsprobe: warning: probe-cost calibration could not attach %s: %s; the "
		"corrected breakdown subtracts nothing\n", calib_prog_name(tr->mode), strerror(errno));
	reset_state(tr);
	return 0;
}

/* ---- naming and collection ------------------------------------------------- */

/* Both tasks' accumulators of one stage, summed. */
static void read_slot(struct tracer *tr, __u32 stage, struct stage_acc *sum)
{
	int slot, i;

	memset(sum, 0, sizeof(*sum));
	for (slot = 0; slot < NR_SLOTS; slot++) {
		const struct stage_acc *a = &tr->skel->bss->stats[slot * SLOT_STRIDE + stage];

		sum->sum_ns += a->sum_ns;
		sum->count += a->count;
		sum->hits += a->hits;
		sum->sys_hits += a->sys_hits;
		sum->book_ns += a->book_ns;
		for (i = 0; i < HIST_SLOTS; i++)
			sum->hist[i] += a->hist[i];
	}
}

/* Percentile from a log2 histogram: the geometric middle of the bucket. */
static uint64_t hist_pct(const struct stage_acc *a, double pct)
{
	uint64_t want = (uint64_t)(a->count * pct / 100.0 + 0.999999), seen = 0;
	int i;

	if (!a->count)
		return 0;
	for (i = 0; i < HIST_SLOTS; i++) {
		seen += a->hist[i];
		if (seen >= want)
			return i == 0 ? 1 : (uint64_t)((double)(1ull << i) * 1.41421356);
	}
	return 1ull << (HIST_SLOTS - 1);
}

static void add_stage(struct trace_result *res, const char *name, const struct stage_acc *a,
		      uint64_t per, double probe_cost_ns, bool extra)
{
	struct stage_stat *s;
	double sys_hit_ns = res->syscall_hit_ns;

	if (res->n_stages == MAX_STAGES)
		return;
	s = &res->stages[res->n_stages++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->count = a->count;
	s->ns_per_msg = per ? (double)a->sum_ns / per : 0;
	/* probe hits at the calibrated cost, and our own measured bookkeeping */
	s->corrected_ns_per_msg =
		per ? MAX(((double)a->sum_ns - a->book_ns - (a->hits - a->sys_hits) * probe_cost_ns -
			   a->sys_hits * sys_hit_ns) / per, 0.0) : 0;
	s->p50_ns = hist_pct(a, 50);
	s->p99_ns = hist_pct(a, 99);
	s->extra = extra;
	if (!extra) {
		res->stage_sum_ns += s->ns_per_msg;
		res->corrected_sum_ns += s->corrected_ns_per_msg;
		res->probe_hits_per_msg += per ? (double)a->hits / per : 0;
	}
}

const struct stage_stat *trace_stage(const struct trace_result *r, const char *name)
{
	int i;

	for (i = 0; i < r->n_stages; i++)
		if (!strcmp(r->stages[i].name, name))
			return &r->stages[i];
	return NULL;
}

static bool has_bulk(struct tracer *tr)
{
	struct stage_acc acc;

	read_slot(tr, C_BULK_SEND_COPY, &acc);
	return acc.count > 0;
}

/*
 * Messages delivered in several chunks are sliced by who runs after their first data-ready
 * (bpf/stages.h, C_BULK_*); their later boundary stages are not counted. Shown when seen.
 */
static void add_bulk_stages(struct tracer *tr, struct trace_result *res, uint64_t per,
			    double probe_cost_ns)
{
	static const char *const names[NR_BULK] = {
		"bulk;send_copy", "bulk;recv_copy", "bulk;wait_space", "bulk;wait_cpu",
	};
	struct stage_acc acc;
	int k;

	if (!has_bulk(tr))
		return;
	for (k = 0; k < NR_BULK; k++) {
		read_slot(tr, C_BULK_SEND_COPY + k, &acc);
		add_stage(res, names[k], &acc, per, probe_cost_ns, false);
	}
}

int tracer_collect(struct tracer *tr, const struct wl_config *cfg, double probe_cost_ns,
		   struct trace_result *res)
{
	enum transport t = cfg->transport;
	bool per_call = cfg->mode == WL_STREAM;
	struct stage_acc acc, total, send_calls, recv_calls;
	char name[STAGE_NAME_LEN];
	int b, prev = B_SEND_ENTER;

	res->n_stages = 0;
	res->stage_sum_ns = res->corrected_sum_ns = res->probe_hits_per_msg = 0;
	res->syscall_hit_ns = tr->syscall_hit_ns;
	read_slot(tr, C_TOTAL, &total);
	read_slot(tr, B_SEND_EXIT, &send_calls);
	read_slot(tr, B_RECV_EXIT, &recv_calls);
	res->messages = per_call ? send_calls.count : total.count;
	res->recv_calls = per_call ? recv_calls.count : 0;
	read_slot(tr, B_DEV_QUEUE, &acc);
	res->xmit_calls = per_call && t == TR_TCP ? acc.count : 0;
	res->misses = tr->skel->bss->msgs_unmatched;
	res->out_of_order = tr->skel->bss->msgs_overwritten + tr->skel->bss->msgs_wrong_sock;
	res->kernel_misses = kernel_missed(tr) - tr->missed_at_begin;
	read_slot(tr, C_BULK_SEND_COPY, &acc);
	res->bulk_messages = per_call ? 0 : acc.count;
	read_slot(tr, C_CHUNKS, &acc);
	res->chunks_per_msg = acc.count ? (double)acc.sum_ns / acc.count : 0;
	read_slot(tr, C_SLEEPS, &acc);
	res->sleeps_per_msg = acc.count ? (double)acc.sum_ns / acc.count : 0;

	/* without a data-ready boundary, messages in several chunks are sliced from send() entry */
	if (!per_call && !tr->avail[t][B_DATA_READY])
		add_bulk_stages(tr, res, total.count, probe_cost_ns);
	for (b = B_SEND_ENTER + 1; b < B__COUNT; b++) {
		if (!tr->avail[t][b])
			continue;
		if (per_call && b == B_COPY_START)
			continue;	/* per-call receive side is wait, copy, return */
		if (per_call && b == B_RUN)
			prev = B_SEND_EXIT;
		stage_name(t, prev, b, per_call, tr->mode != ATTACH_TRACEPOINT, name, sizeof(name));
		read_slot(tr, b, &acc);
		if (!acc.count && (b > B_DATA_READY || !tr->avail[t][B_DATA_READY]) && has_bulk(tr)) {
			prev = b;	/* every message was sliced here */
			continue;
		}
		add_stage(res, name, &acc, per_call ? (b <= B_SEND_EXIT ? send_calls.count : recv_calls.count) :
			  total.count, probe_cost_ns, false);
		prev = b;
		if (b == B_DATA_READY && !per_call)
			add_bulk_stages(tr, res, total.count, probe_cost_ns);
		if (b == B_SOFTIRQ && !per_call) {
			/* messages whose NET_RX softirq ran outside the send: shown only when seen */
			read_slot(tr, C_SOFTIRQ_DEFERRED, &acc);
			if (acc.count)
				add_stage(res, tr->mode != ATTACH_TRACEPOINT ? SOFTIRQ_DEFERRED_STAGE ";wait" :
					  SOFTIRQ_DEFERRED_STAGE, &acc, total.count, probe_cost_ns, false);
		}
	}
	if (cfg->mode == WL_CONNECT) {
		read_slot(tr, C_CONNECT, &acc);
		add_stage(res, "conn;connect", &acc, acc.count, probe_cost_ns, true);
		read_slot(tr, C_ACCEPT, &acc);
		add_stage(res, "conn;accept", &acc, acc.count, probe_cost_ns, true);
	}
	if (cfg->mode == WL_PINGPONG) {
		/* one gap per message: RTT = 2 messages + 2 gaps, so one-way = message + gap */
		read_slot(tr, C_GAP, &acc);
		add_stage(res, "app;gap", &acc, total.count, probe_cost_ns, false);
	}
	res->valid = res->messages > 0;
	return 0;
}
