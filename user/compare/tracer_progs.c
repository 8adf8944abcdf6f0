// SPDX-License-Identifier: GPL-2.0
/*
 * Which programs of stages.bpf.c each attach mode uses, as skeleton fields (never by name
 * string: a renamed program fails the build here, not a run), and the test that tells whether
 * a mode works on this kernel (tracer_probe, for attach_choose and --check).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>

#include "capability.h"
#include "tracer_int.h"
#include "stages.skel.h"
#include "util.h"

/* A program as its offset in struct stages_bpf (0: none), for static tables. */
#define PROG(name) offsetof(struct stages_bpf, progs.name)

/* The kernel functions of the two function modes: entry programs, and exit ones where a
 * boundary is the function's return. */
static const struct func_target {
	const char *func;	/* as the stage table's markers name it */
	size_t fentry, fexit, kprobe, kretprobe;
} func_targets[] = {
#define FUNC(f) { #f, PROG(fe_##f), 0, PROG(kp_##f), 0 }
#define FUNC_RET(f) { #f, PROG(fe_##f), PROG(fx_##f), PROG(kp_##f), PROG(kr_##f) }
	FUNC(unix_stream_sendmsg),
	FUNC(tcp_sendmsg),
	FUNC(sock_alloc_send_pskb),
	FUNC(skb_copy_datagram_from_iter),
	FUNC(skb_queue_tail),
	FUNC(tcp_sendmsg_locked),
	FUNC(tcp_write_xmit),
	FUNC(__tcp_transmit_skb),
	FUNC(__ip_queue_xmit),
	FUNC(ip_finish_output2),
	FUNC(__dev_queue_xmit),
	FUNC(loopback_xmit),
	FUNC(__netif_rx),
	FUNC(net_rx_action),
	FUNC(process_backlog),
	FUNC(__netif_receive_skb),
	FUNC(ip_rcv),
	FUNC(ip_local_deliver),
	FUNC(tcp_v4_rcv),
	FUNC(tcp_rcv_established),
	FUNC_RET(sock_def_readable),
	FUNC_RET(skb_copy_datagram_iter),
#undef FUNC
#undef FUNC_RET
};

/* Tracepoint mode's own programs (tp_btf). */
static const struct tp_target {
	const char *tp;		/* as the stage table's markers name it */
	size_t prog;
} tp_targets[] = {
#define TP(t) { #t, PROG(tp_##t) }
	TP(tcp_sendmsg_locked),
	TP(net_dev_queue),
	TP(softirq_entry),
	TP(netif_receive_skb),
	TP(sk_data_ready),
	TP(sock_send_length),
	TP(softirq_exit),
	TP(consume_skb),
	TP(tcp_rcv_space_adjust),
#undef TP
};

/* Syscalls and the scheduler, in every mode: tp_btf, or raw_tp where the kernel has no BTF of
 * its own (kprobe mode with --btf FILE). */
static const struct { size_t tp_btf, raw_tp; } common_progs[] = {
	{ PROG(tp_sys_enter), PROG(rtp_sys_enter) },
	{ PROG(tp_sys_exit), PROG(rtp_sys_exit) },
	{ PROG(tp_sched_switch), PROG(rtp_sched_switch) },
};

static const size_t calib_progs[ATTACH__COUNT] = {
	[ATTACH_FENTRY] = PROG(fe_calib),
	[ATTACH_KPROBE] = PROG(kp_calib),
	[ATTACH_TRACEPOINT] = PROG(tp_calib),
};

static void add(struct stage_prog *out, int *n, int max, struct bpf_program *prog,
		const char *target, enum prog_attach how, bool every_path)
{
	if (*n < max)
		out[(*n)++] = (struct stage_prog){ prog, target, how, every_path, NULL };
}

int tracer_mode_programs(struct stages_bpf *skel, enum attach_mode mode, bool own_btf,
			struct stage_prog *out, int max)
{
	bool kprobe = mode == ATTACH_KPROBE;
	size_t i;
	int n = 0;

	for (i = 0; i < ARRAY_SIZE(common_progs); i++)
		add(out, &n, max, skel_prog(skel, own_btf ? common_progs[i].tp_btf : common_progs[i].raw_tp),
		    NULL, PA_SECTION, true);
	if (mode == ATTACH_TRACEPOINT) {
		for (i = 0; i < ARRAY_SIZE(tp_targets); i++)
			add(out, &n, max, skel_prog(skel, tp_targets[i].prog), tp_targets[i].tp, PA_SECTION,
			    false);
		return n;
	}
	if (mode != ATTACH_FENTRY && !kprobe)
		return n;
	for (i = 0; i < ARRAY_SIZE(func_targets); i++) {
		const struct func_target *f = &func_targets[i];
		size_t exit = kprobe ? f->kretprobe : f->fexit;

		add(out, &n, max, skel_prog(skel, kprobe ? f->kprobe : f->fentry), f->func,
		    kprobe ? PA_KPROBE : PA_SECTION, false);
		if (exit)
			add(out, &n, max, skel_prog(skel, exit), f->func, kprobe ? PA_KRETPROBE : PA_SECTION,
			    false);
	}
	return n;
}

struct bpf_program *tracer_calib_program(struct stages_bpf *skel, enum attach_mode mode)
{
	return mode > ATTACH_AUTO && mode < ATTACH__COUNT ? skel_prog(skel, calib_progs[mode]) : NULL;
}

const char *tracer_kernel_func(enum attach_mode mode, const char *target, char *sym, size_t len)
{
	const char *older = stage_func_older(target);

	if (attach_func_here(mode, target, sym, len))
		return target;
	return older && attach_func_here(mode, older, sym, len) ? older : NULL;
}

/* ---- does a mode work here? ------------------------------------------------------------- */

/* How each mode is tested: a two-instruction program on one target (capability.c: not our
 * object, whose load parses the kernel's BTF again), and what each outcome says. */
static const struct mode_probe {
	const char *target;
	bool btf_file_serves;	/* --btf FILE is enough (CO-RE reads), no BTF of the kernel's own */
	const char *no_btf;	/* %s: a note when --btf was given */
	const char *no_target;	/* %s: the target */
	int refused[2];		/* errors that mean the kernel refuses the mode ... */
	const char *refused_why;	/* ... and what they mean (%s: the error) */
	const char *failed;	/* %s: any other error */
	const char *works;	/* %s: the symbol attached */
} mode_probes[ATTACH__COUNT] = {
	[ATTACH_FENTRY] = {
		"unix_stream_sendmsg", false,
		"needs the kernel's own BTF (/sys/kernel/btf/vmlinux)%s",
		"no kernel BTF for %s",
		{ EPERM, EACCES }, "attaching an fentry program failed with %s: this kernel refuses "
		"BPF trampolines (ftrace blocked or locked down)",
		"loading/attaching an fentry program failed: %s",
		"fentry/fexit on %.150s loaded and attached",
	},
	[ATTACH_KPROBE] = {
		"unix_stream_sendmsg", true,
		"no BTF for CO-RE: give --btf FILE",
		"%s not in /proc/kallsyms",
		{ ENOENT, EOPNOTSUPP }, "attaching a kprobe failed with %s: this kernel has no kprobe "
		"support (CONFIG_KPROBES unset?)",
		"attaching a kprobe failed: %s",
		"kprobe/kretprobe on %.150s attached",
	},
	[ATTACH_TRACEPOINT] = {
		"sched_switch", false,
		"tp_btf needs the kernel's own BTF (/sys/kernel/btf/vmlinux)%s",
		"no BTF for tracepoints (needs CONFIG_DEBUG_INFO_BTF, kernel 5.5+)",
		{ 0, 0 }, NULL,
		"attaching tp_btf/sched_switch failed: %s",
		"tp_btf/%.150s attached",
	},
};

/* Is the test target here: a function for mode (attach_func_here, the symbol into sym), or a
 * tracepoint's BTF? */
static bool probe_target_here(enum attach_mode mode, const char *target, char *sym, size_t len)
{
	if (mode != ATTACH_TRACEPOINT)
		return attach_func_here(mode, target, sym, len);
	snprintf(sym, len, "%s", target);
	return btf_has_tracepoint(target);
}

/* Can a detached fentry program be attached again (not before Linux 5.12: ENOENT)? Learned
 * by the fentry probe (fentry_can_attach). */
static enum { REATTACH_UNKNOWN, REATTACH_NO, REATTACH_YES } fentry_reattach;

static int fentry_probe(const char *func)
{
	bool reattach;
	int err = fentry_can_attach(func, &reattach);

	if (!err)
		fentry_reattach = reattach ? REATTACH_YES : REATTACH_NO;
	return err;
}

static bool probe_mode(enum attach_mode mode, char *why, size_t len)
{
	const struct mode_probe *p = &mode_probes[mode];
	char sym[256];
	int err;

	if (!kernel_has_btf() && !(p->btf_file_serves && btf_file())) {
		snprintf(why, len, p->no_btf, btf_file() ? "; --btf serves CO-RE and lookups only" : "");
		return false;
	}
	if (!probe_target_here(mode, p->target, sym, sizeof(sym))) {
		snprintf(why, len, p->no_target, p->target);
		return false;
	}
	err = mode == ATTACH_FENTRY ? fentry_probe(p->target) :
	      mode == ATTACH_KPROBE ? kprobe_can_attach(sym) : tp_btf_can_attach(p->target);
	if (!err)
		snprintf(why, len, p->works, sym);
	else if (p->refused_why && (-err == p->refused[0] || -err == p->refused[1]))
		snprintf(why, len, p->refused_why, strerror(-err));
	else
		snprintf(why, len, p->failed, strerror(-err));
	return !err;
}

/* An attach_probe_fn that probes a mode only when attach_choose asks: a forced mode, or the
 * first that works. */
int tracer_probe_mode(enum attach_mode mode, void *ctx, char *why, size_t len)
{
	return probe_mode(mode, why, len) ? 0 : -EOPNOTSUPP;
}

void tracer_probe(struct attach_caps *caps, int verbose)
{
	int m;

	memset(caps, 0, sizeof(*caps));
	libbpf_setup(verbose);
	for (m = ATTACH_FENTRY; m < ATTACH__COUNT; m++)
		caps->works[m] = probe_mode(m, caps->why[m], sizeof(caps->why[m]));
}

bool tracer_fentry_can_reattach(void)
{
	if (fentry_reattach == REATTACH_UNKNOWN)
		fentry_probe(mode_probes[ATTACH_FENTRY].target);
	return fentry_reattach == REATTACH_YES;
}

/* ---- the calibration's probe (tracer_calibrate.c measures with it) ---- */

/* Cheap syscalls whose arch wrapper (__x64_sys_*, __arm64_sys_*) can carry the calibration
 * probe: which of them has BTF (needed by fentry) differs between kernels (6.12 lacks
 * getppid's). */
static const struct {
	const char *func;
	long nr;
} calib_targets[] = {
	{ SYSCALL_WRAPPER "getppid", SYS_getppid },
	{ SYSCALL_WRAPPER "getcpu", SYS_getcpu },
	{ SYSCALL_WRAPPER "getrusage", SYS_getrusage },
};

/* The first target this mode can probe: its BTF for fentry, its symbol in kallsyms for kprobe
 * (tracepoint mode's probe sits on sys_enter and only needs the number). */
static int pick_calib_target(enum attach_mode mode)
{
	char sym[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(calib_targets); i++) {
		const char *f = calib_targets[i].func;

		if (mode == ATTACH_TRACEPOINT || attach_func_here(mode, f, sym, sizeof(sym)))
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
