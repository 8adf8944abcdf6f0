// SPDX-License-Identifier: GPL-2.0
/*
 * --trace's BPF side: flows.bpf.c in one attach mode. attach_choose tries the
 * modes (auto: fentry, kprobe, tracepoint) with a probe that opens, configures,
 * loads and attaches the mode's programs, all or nothing; the first that works
 * stays loaded. The send/recv boundary programs of each mode are skeleton
 * fields listed per kernel function. The socket syscalls' entries and the poll
 * family's returns: in the function modes each syscall's own wrapper; in
 * tracepoint mode (or without the wrappers) sys_enter and the per-syscall
 * tracepoints where the kernel has them, else raw sys_exit. The other tp_btf
 * programs (listen, fork) are always loaded.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capability.h"
#include "flows.h"	/* before the skeleton: its .bss has struct fl_bulk_slot */
#include "flows.skel.h"
#include "trace_bpf.h"
#include "trace_outliers.h"
#include "util.h"

/* The socket-layer functions the function modes probe (what sock_send_length /
 * sock_recv_length wrap), each with its entry and exit programs as skeleton
 * fields (offsets in struct flows_bpf). */
#define PROG(name) offsetof(struct flows_bpf, progs.name)
#define FUNC(f) { #f, PROG(fe_##f), PROG(fx_##f), PROG(kp_##f), PROG(kr_##f) }

static const struct fl_target {
	const char *func;
	size_t fe, fx, kp, kr;
} fl_targets[] = {
	FUNC(unix_stream_sendmsg),
	FUNC(unix_stream_recvmsg),
	FUNC(inet_sendmsg),
	FUNC(inet_recvmsg),
	FUNC(inet6_sendmsg),
	FUNC(inet6_recvmsg),
};

static const char *const fl_tracepoints[] = { "sock_send_length", "sock_recv_length" };

/* The poll-family returns (flows.bpf.c POLL_EXIT) as syscalls: events and skeleton fields. */
#define POLL(name) { "sys_exit_" #name, PROG(tp_exit_##name) }

static const struct poll_exit {
	const char *event;
	size_t prog;
} poll_exits[] = {
	POLL(epoll_wait), POLL(epoll_pwait), POLL(epoll_pwait2), POLL(poll), POLL(ppoll),
	POLL(select), POLL(pselect6),
};

/* The syscalls whose entry flows.bpf.c times (its is_io_nr and is_poll_nr), with the programs
 * of their arch wrappers for the function modes: entry, and return for the poll family. A
 * required one missing from kallsyms means a kernel without such wrappers; the optional one
 * (epoll_pwait2, 5.11+), a syscall this kernel lacks. */
#define SYS(name, func, required, fx, kr)						\
	{ SYSCALL_WRAPPER #func, SYS_##name, required, PROG(fe_sys_##name), PROG(kp_sys_##name),	\
	  fx, kr }
#define SYS_IO(name) SYS(name, name, true, 0, 0)
#define SYS_POLL(name, required) SYS(name, name, required, PROG(fx_sys_##name), PROG(kr_sys_##name))

static const struct sys_target {
	const char *func;
	long nr;	/* kprobe.multi's cookie */
	bool required;
	size_t fe, kp, fx, kr;
} sys_targets[] = {
	SYS_IO(read), SYS_IO(write), SYS_IO(readv), SYS_IO(writev), SYS_IO(sendto),
	SYS_IO(recvfrom), SYS_IO(sendmsg), SYS_IO(recvmsg), SYS_IO(sendmmsg), SYS_IO(recvmmsg),
	SYS(sendfile, sendfile64, true, 0, 0), SYS_IO(splice),
	/* epoll_pwait2: 5.11+; arm64 has a wrapper for epoll_wait, poll and select but not the
	 * syscalls (no SYS_ numbers), whose programs would never run */
	SYS_POLL(epoll_pwait, true), SYS_POLL(epoll_pwait2, false), SYS_POLL(ppoll, true),
	SYS_POLL(pselect6, true),
#ifdef SYS_epoll_wait
	SYS_POLL(epoll_wait, true),
#endif
#ifdef SYS_poll
	SYS_POLL(poll, true),
#endif
#ifdef SYS_select
	SYS_POLL(select, true),
#endif
};

#define FL_MAX_MODE_PROGS (2 * ARRAY_SIZE(fl_targets) + 2 * ARRAY_SIZE(sys_targets) + \
			   ARRAY_SIZE(poll_exits) + 1)

/* The programs of the kernel boundaries that cut send;call (enum fl_kstage), in every attach
 * mode; each boundary's tracepoint is the stage table's TCP marker (the handover: none). */
static const size_t kstage_progs[FK__COUNT] = {
	[FK_PROTO] = PROG(tp_k_tcp_sendmsg_locked),
	[FK_DEV_QUEUE] = PROG(tp_k_net_dev_queue),
	[FK_SOFTIRQ] = PROG(tp_k_softirq_entry),
	[FK_IP_RCV] = PROG(tp_k_netif_receive_skb),
	[FK_DATA_READY] = PROG(tp_k_sk_data_ready),
	[FK_WAKE_END] = PROG(tp_k_softirq_exit),
};

/* The receiver's boundaries (enum fl_rkstage_seen): the switch onto a CPU, and copy done,
 * whose tracepoint is the stage table's marker for each transport. */
static const struct {
	size_t prog;
	const char *tp;		/* NULL: the stage table's copy-done marker for transport t */
	enum transport t;
	__u32 bit;
} rkstage_progs[] = {
	{ PROG(tp_k_sched_switch), "sched_switch", TR_UNIX, FRS_RUN },
	{ PROG(tp_k_consume_skb), NULL, TR_UNIX, FRS_COPY },
	{ PROG(tp_k_tcp_rcv_space_adjust), NULL, TR_TCP, FRS_COPY },
};

/* The kernel-stage programs this kernel can attach (sk_data_ready and tcp_sendmsg_locked:
 * 6.x): autoloaded, and their bits in kstages and rkstages (copy done: both transports'). */
static void kstages_select(struct flows_bpf *skel)
{
	__u32 seen = 0, rseen = FRS_RUN | FRS_COPY;
	size_t i;

	for (i = 0; i < FK__COUNT; i++) {
		const char *tp = stage_marker(kstage_boundary[i], TR_TCP, true);

		if (!kstage_progs[i] || !tp || !btf_has_tracepoint(tp))
			continue;
		bpf_program__set_autoload(skel_prog(skel, kstage_progs[i]), true);
		seen |= 1u << i;
	}
	skel->rodata->kstages = seen;
	for (i = 0; i < ARRAY_SIZE(rkstage_progs); i++) {
		const char *tp = rkstage_progs[i].tp ?: stage_marker(B_COPY_DONE, rkstage_progs[i].t, true);

		if (!btf_has_tracepoint(tp))
			rseen &= ~rkstage_progs[i].bit;
	}
	for (i = 0; i < ARRAY_SIZE(rkstage_progs); i++)
		if (rseen & rkstage_progs[i].bit)
			bpf_program__set_autoload(skel_prog(skel, rkstage_progs[i].prog), true);
	skel->rodata->rkstages = rseen;
	/* slicing starts at a send's first data-ready and needs both tasks' switches */
	skel->rodata->bulk = (seen & (1u << FK_DATA_READY)) && (rseen & FRS_RUN);
}

void trace_bpf_hit_ns(struct flows_bpf *skel, double hit_ns[FK__COUNT])
{
	size_t i;

	for (i = 0; i < FK__COUNT; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = kstage_progs[i] ? bpf_program__fd(skel_prog(skel, kstage_progs[i])) : -1;

		memset(&info, 0, sizeof(info));
		hit_ns[i] = fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) && info.run_cnt ?
			    (double)info.run_time_ns / info.run_cnt : 0;
	}
}

bool trace_bpf_cost(struct flows_bpf *skel, uint64_t *ns)
{
	struct bpf_program *prog;
	bool known = false;

	*ns = 0;
	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		*ns += info.run_time_ns;
		known = true;
	}
	return known;
}

/* Are mode's targets on this kernel? 0, or -EOPNOTSUPP with the reason in why. */
static int mode_usable(enum attach_mode mode, char *why, size_t len)
{
	const char *fns[ARRAY_SIZE(fl_targets)];
	size_t i;

	if (mode == ATTACH_TRACEPOINT) {
		for (i = 0; i < ARRAY_SIZE(fl_tracepoints); i++) {
			if (!btf_has_tracepoint(fl_tracepoints[i])) {
				snprintf(why, len, "no sock:%s tracepoint (Linux 6.3+)", fl_tracepoints[i]);
				return -EOPNOTSUPP;
			}
		}
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(fl_targets); i++)
		fns[i] = fl_targets[i].func;
	return attach_funcs_present(mode, fns, ARRAY_SIZE(fns), why, len);
}

/* The send/recv boundary programs of mode. */
static int mode_programs(struct flows_bpf *skel, enum attach_mode mode, struct bpf_program **p)
{
	bool fentry = mode == ATTACH_FENTRY;
	size_t i;
	int n = 0;

	if (mode == ATTACH_TRACEPOINT) {
		p[n++] = skel->progs.tp_sock_send_length;
		p[n++] = skel->progs.tp_sock_recv_length;
		return n;
	}
	for (i = 0; i < ARRAY_SIZE(fl_targets); i++) {
		const struct fl_target *t = &fl_targets[i];

		p[n++] = skel_prog(skel, fentry ? t->fe : t->kp);
		p[n++] = skel_prog(skel, fentry ? t->fx : t->kr);
	}
	return n;
}

/* The programs that see poll-family returns, into p: the syscalls: exit event of each such
 * syscall this architecture has (epoll_pwait: every one has it), else raw sys_exit. */
static int poll_exit_programs(struct flows_bpf *skel, struct bpf_program **p)
{
	size_t i;
	int n = 0;

	if (!tracefs_has_event("syscalls", "sys_exit_epoll_pwait")) {
		p[n++] = skel->progs.tp_sys_exit;
		return n;
	}
	for (i = 0; i < ARRAY_SIZE(poll_exits); i++)
		if (tracefs_has_event("syscalls", poll_exits[i].event))
			p[n++] = skel_prog(skel, poll_exits[i].prog);
	return n;
}

/* func itself in kallsyms, not a variant ksym_resolve would take for it */
static bool ksym_exact(const char *func)
{
	char sym[256];

	return ksym_resolve(func, sym, sizeof(sym)) && !strcmp(sym, func);
}

/* 1 where this kernel has t's wrapper, 0 where it lacks an optional one, -1 a required one.
 * fentry: in vmlinux's BTF, which a trampoline needs and pahole fills from the ftrace-able
 * functions (a whole kallsyms read cost ~0.7 s a start under qemu TCG); kprobe: in kallsyms. */
static int wrapper_here(const struct sys_target *t, bool fentry)
{
	if (fentry ? btf_has_func(t->func) : ksym_exact(t->func))
		return 1;
	return t->required ? -1 : 0;
}

/* The function modes' per-syscall programs into p, or 0 where a syscall that exists here
 * cannot be probed alone in mode (no wrapper, no BTF for fentry): then sys_enter, as in
 * tracepoint mode. multi (kprobe mode): the two kprobe.multi programs instead of a kprobe per
 * wrapper, attached by attach_wrappers_multi. */
static int syscall_wrapper_programs(struct flows_bpf *skel, enum attach_mode mode, bool multi,
				    struct bpf_program **p)
{
	bool fentry = mode == ATTACH_FENTRY;
	size_t i;
	int n = 0, here;

	for (i = 0; i < ARRAY_SIZE(sys_targets); i++) {
		const struct sys_target *t = &sys_targets[i];

		here = wrapper_here(t, fentry);
		if (here < 0)
			return 0;
		if (!here || multi)
			continue;
		p[n++] = skel_prog(skel, fentry ? t->fe : t->kp);
		if (t->fx)
			p[n++] = skel_prog(skel, fentry ? t->fx : t->kr);
	}
	if (multi) {
		p[n++] = skel->progs.kpm_sys_enter;
		p[n++] = skel->progs.kpm_sys_poll_exit;
		/* no section target: attach_wrappers_multi gives the functions */
		bpf_program__set_autoattach(skel->progs.kpm_sys_enter, false);
		bpf_program__set_autoattach(skel->progs.kpm_sys_poll_exit, false);
	}
	return n;
}

/* multi's two links (syscall_wrapper_programs): every wrapper's entry, its syscall's number as
 * cookie, and the poll family's returns; the skeleton's links, destroyed with it. */
static int attach_wrappers_multi(struct flows_bpf *skel)
{
	const char *entry[ARRAY_SIZE(sys_targets)], *ret[ARRAY_SIZE(sys_targets)];
	__u64 cookies[ARRAY_SIZE(sys_targets)];
	size_t i, n = 0, r = 0;

	for (i = 0; i < ARRAY_SIZE(sys_targets); i++) {
		if (wrapper_here(&sys_targets[i], false) <= 0)
			continue;
		cookies[n] = sys_targets[i].nr;
		entry[n++] = sys_targets[i].func;
		if (sys_targets[i].kr)
			ret[r++] = sys_targets[i].func;
	}
	LIBBPF_OPTS(bpf_kprobe_multi_opts, eo, .syms = entry, .cnt = n, .cookies = cookies);
	LIBBPF_OPTS(bpf_kprobe_multi_opts, ro, .syms = ret, .cnt = r, .retprobe = true);
	skel->links.kpm_sys_enter =
		bpf_program__attach_kprobe_multi_opts(skel->progs.kpm_sys_enter, NULL, &eo);
	if (!skel->links.kpm_sys_enter)
		return -errno;
	skel->links.kpm_sys_poll_exit =
		bpf_program__attach_kprobe_multi_opts(skel->progs.kpm_sys_poll_exit, NULL, &ro);
	return skel->links.kpm_sys_poll_exit ? 0 : -errno;
}

/* The programs that see the syscalls' entries and the poll family's returns, into p: in the
 * function modes each such syscall's own wrapper where this kernel has them all, else
 * sys_enter (every syscall of every task) and the poll returns' tracepoints. */
static int syscall_programs(struct flows_bpf *skel, enum attach_mode mode, bool multi,
			    struct bpf_program **p)
{
	int n = 0;

	if (mode != ATTACH_TRACEPOINT)
		n = syscall_wrapper_programs(skel, mode, multi && mode == ATTACH_KPROBE, p);
	if (n)
		return n;
	p[n++] = skel->progs.tp_sys_enter;
	return n + poll_exit_programs(skel, p + n);
}

uint32_t trace_flow_map_entries(int ncpus, uint32_t asked)
{
	uint64_t fit;

	if (asked)
		return asked;
	fit = TR_FLOW_MAP_BYTES / ((uint64_t)(ncpus > 0 ? ncpus : 1) * sizeof(struct fl_stats));
	return fit > TR_FLOW_MAP_DEFAULT ? TR_FLOW_MAP_DEFAULT :
	       fit < TR_FLOW_MAP_MIN ? TR_FLOW_MAP_MIN : (uint32_t)fit;
}

uint64_t trace_flow_map_bytes(uint32_t entries, int ncpus)
{
	return (uint64_t)entries * (ncpus > 0 ? ncpus : 1) * sizeof(struct fl_stats);
}

/* Filters and map sizes, between open and load. */
static void configure(struct flows_bpf *skel, const struct trace_opts *o)
{
	int i;

	skel->rodata->filter_procs = o->n_pids || o->n_comms || o->argv || o->cgroup;
	skel->rodata->filter_cgroup = o->cgroup != NULL;
	skel->rodata->n_comms = o->n_comms;
	for (i = 0; i < o->n_comms; i++)
		strncpy((char *)skel->rodata->comms[i], o->comms[i], FL_COMM_LEN - 1);
	/* endpoint filters: the kernel leaves out what they certainly exclude */
	skel->rodata->n_ports = o->n_ports;
	for (i = 0; i < o->n_ports && i < FL_MAX_PORTS; i++)
		skel->rodata->ports[i] = o->ports[i];
	skel->rodata->n_unix = o->n_unix;
	/* per-task state: task local storage where the kernel has it, else the tid hash */
	skel->rodata->task_storage = task_storage_usable();
	bpf_map__set_max_entries(skel->maps.tasks, skel->rodata->task_storage ? 1 : 32768);
	bpf_map__set_max_entries(skel->maps.dirs, 16384);
	bpf_map__set_max_entries(skel->maps.flows,
				 trace_flow_map_entries(libbpf_num_possible_cpus(), o->max_flows));
	bpf_map__set_max_entries(skel->maps.tgids, 16384);
	bpf_map__set_max_entries(skel->maps.uaddrs, 4096);
	/* children followed, exited processes and threads dropped: only where that state is kept */
	bpf_program__set_autoload(skel->progs.tp_sched_process_fork, skel->rodata->filter_procs);
	bpf_program__set_autoload(skel->progs.tp_sched_process_exit,
				  skel->rodata->filter_procs || !skel->rodata->task_storage);
	/* one page when no outliers are asked for: the map exists either way */
	skel->rodata->slower_than_ns = o->slower_than_ns;
	bpf_map__set_max_entries(skel->maps.outliers, o->slower_than_ns ? TR_OUTLIER_RING :
				 (__u32)sysconf(_SC_PAGESIZE));
}

struct mode_try {
	const struct trace_opts *o;
	struct flows_bpf *skel;	/* loaded and attached when the probe accepted the mode */
	int multi_err;		/* attaching the kprobe.multi links failed with this (-errno) */
};

int trace_bpf_select(struct flows_bpf *skel, const struct trace_opts *o, enum attach_mode mode,
		     bool kprobe_multi, char *why, size_t len)
{
	struct bpf_program *progs[FL_MAX_MODE_PROGS];
	int n, i, err;

	err = mode_usable(mode, why, len);
	if (err)
		return err;
	configure(skel, o);
	n = mode_programs(skel, mode, progs);
	n += syscall_programs(skel, mode, kprobe_multi, progs + n);
	for (i = 0; i < n; i++)
		bpf_program__set_autoload(progs[i], true);
	if (o->kernel_stages)
		kstages_select(skel);
	return 0;
}

/* kprobe.multi where the kernel has the link type (5.18+) and fprobe under it (CONFIG_FPROBE:
 * Debian's 6.1 has none). Should its attach fail all the same, mode_try loads a kprobe per
 * wrapper (a second load: this check keeps it to kernels that say they can). */
static bool kprobe_multi_known(void)
{
	return !btf_enum_value("BPF_TRACE_KPROBE_MULTI", &(long long){ 0 }) &&
	       ksym_exact("register_fprobe");
}

/* attach_choose's probe: open, configure, load and attach mode's programs. */
static int mode_try(enum attach_mode mode, void *ctx, char *why, size_t len)
{
	struct mode_try *t = ctx;
	bool multi = mode == ATTACH_KPROBE && kprobe_multi_known();
	int err;

again:
	t->skel = flows_bpf__open();
	if (!t->skel) {
		err = -errno;
		snprintf(why, len, "cannot open the BPF object: %s", strerror(-err));
		return err;
	}
	err = trace_bpf_select(t->skel, t->o, mode, multi, why, len);
	if (err)
		goto fail;
	err = flows_bpf__load(t->skel);
	if (err) {
		uint32_t flows = bpf_map__max_entries(t->skel->maps.flows);
		int cpus = libbpf_num_possible_cpus();
		char size[32];

		if (err == -ENOMEM)	/* the likeliest cause named: libbpf says only ENOMEM */
			snprintf(why, len, "cannot load the %s-mode programs: %s (the flow map "
				 "alone is %s: %u flows x %d CPUs x %zu B; a smaller --max-flows "
				 "takes less)", attach_mode_names[mode], strerror(-err),
				 bytes_text(trace_flow_map_bytes(flows, cpus), size, sizeof(size)),
				 flows, cpus, sizeof(struct fl_stats));
		else
			snprintf(why, len, "cannot load the %s-mode programs: %s (rerun with -vv "
				 "for the verifier log)", attach_mode_names[mode], strerror(-err));
		goto fail;
	}
	err = flows_bpf__attach(t->skel);
	if (err) {
		snprintf(why, len, "cannot attach the %s-mode programs: %s",
			 attach_mode_names[mode], strerror(-err));
		goto fail;
	}
	if (multi) {
		t->multi_err = attach_wrappers_multi(t->skel);
		if (t->multi_err) {
			flows_bpf__destroy(t->skel);
			multi = false;
			goto again;
		}
	}
	return 0;
fail:
	flows_bpf__destroy(t->skel);
	t->skel = NULL;
	return err;
}

/* --verbose: how the function modes took the syscalls' entries (docs/TRACE.md, "Overhead"). */
static void say_syscall_hooks(const struct mode_try *t, enum attach_mode mode)
{
	if (mode == ATTACH_TRACEPOINT)
		return;
	if (bpf_program__autoload(t->skel->progs.tp_sys_enter))
		say_error("--trace: syscalls by the sys_enter tracepoint: a syscall wrapper that "
			  "exists here cannot be probed alone in %s mode", attach_mode_names[mode]);
	else if (t->skel->links.kpm_sys_enter)
		say_error("--trace: syscall wrappers by two kprobe.multi links");
	else if (t->multi_err)
		say_error("--trace: syscall wrappers by a %s each: attaching them as kprobe.multi "
			  "failed (%s)", attach_mode_names[mode], strerror(-t->multi_err));
	else
		say_error("--trace: syscall wrappers by a%s %s each%s", mode == ATTACH_FENTRY ? "n" : "",
			  attach_mode_names[mode], mode == ATTACH_KPROBE ?
			  " (this kernel has no kprobe.multi with fprobe)" : "");
}

int trace_bpf_open(const struct trace_opts *o, struct flows_bpf **out, enum attach_mode *mode)
{
	struct mode_try t = { .o = o };
	char why[1024];
	int err;

	*out = NULL;
	if (!kernel_has_btf()) {
		say_error("--trace: no kernel BTF (/sys/kernel/btf/vmlinux): boot a "
			"kernel with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOENT;
	}
	/* every mode: cur_entry() reads the current syscall's number through bpf_task_pt_regs
	 * (5.15+), and complete() claims a message with BPF_CMPXCHG (5.12+), which 5.10's
	 * verifier refuses anywhere in a program ("BPF_STX uses reserved fields") */
	if (btf_enum_value("BPF_FUNC_task_pt_regs", &(long long){ 0 })) {
		say_error("--trace: this kernel (%s) has no bpf_task_pt_regs helper "
			"(Linux 5.15+), which --trace's programs need in every attach mode "
			"(docs/TRACE.md, \"Kernels\")", kernel_release());
		return -EOPNOTSUPP;
	}
	err = attach_choose(o->attach, mode_try, &t, mode, why, sizeof(why));
	if (err) {
		if (o->attach != ATTACH_AUTO)
			say_error("--trace: cannot trace in the forced mode: %s\n"
				"udsprobe: try --attach auto (docs/TRACE.md lists what each mode needs)",
				why);
		else
			say_error("--trace: %s (%s): %s", attach_failure(err),
				kernel_release(), why);
		return err;
	}
	if (o->verbose) {
		say_error("--trace: %s mode (%s)", attach_mode_names[*mode], why);
		say_syscall_hooks(&t, *mode);
	}
	*out = t.skel;
	return 0;
}
