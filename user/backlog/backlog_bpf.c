// SPDX-License-Identifier: GPL-2.0
/*
 * --backlog's BPF side: the attach mode (attach_choose with backlog's own
 * targets), load and attach from one table of probed functions, the iterators'
 * mmapped output.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "capability.h"
#include "backlog_bpf.h"
#include "backlog_diag.h"
#include "backlog.skel.h"
#include "util.h"

/*
 * The functions probed in fentry/kprobe mode, with their programs as skeleton
 * fields (offsets in struct backlog_bpf; 0 = no such program): one list for the
 * capability checks and for enabling the programs.
 */
#define PROG(name) offsetof(struct backlog_bpf, progs.name)
#define ENTRY(f, v6) { #f, v6, PROG(fe_##f), 0, PROG(kp_##f), 0 }
#define ENTRY_RET(f, v6) { #f, v6, PROG(fe_##f), PROG(fx_##f), PROG(kp_##f), PROG(kr_##f) }
/* a return seen by fexit, and in kprobe mode at the syscall's exit (kprobe_exit_tps) */
#define ENTRY_FEXIT(f, v6) { #f, v6, PROG(fe_##f), PROG(fx_##f), PROG(kp_##f), 0 }
/* fentry and fexit; kprobe mode sees the result at the syscall's exit alone */
#define FENTRY_ONLY(f, v6) { #f, v6, PROG(fe_##f), PROG(fx_##f), 0, 0 }

static const struct probe_target {
	const char *func;
	bool v6;		/* only when the kernel has IPv6 (tcp_v6_syn_recv_sock) */
	size_t fe, fx, kp, kr;
} probe_targets[] = {
	ENTRY_FEXIT(unix_stream_connect, false),
	ENTRY_RET(unix_wait_for_peer, false),
	ENTRY_RET(tcp_conn_request, false),
	ENTRY(tcp_v4_send_synack, false),	/* the SYN was kept: not a drop */
	ENTRY(tcp_v6_send_synack, true),
	ENTRY_RET(tcp_v4_syn_recv_sock, false),
	ENTRY_RET(tcp_v6_syn_recv_sock, true),
	ENTRY(tcp_connect, false),
	ENTRY(tcp_retransmit_skb, false),
	/* accept waits: queued (unix: the listener's data-ready in connect), accepted */
	ENTRY(sock_def_readable, false),
	FENTRY_ONLY(unix_accept, false),
	FENTRY_ONLY(inet_accept, false),
};

/* The syscall tracepoints tracepoint mode needs, and kprobe mode's (connect's and accept's
 * results, instead of kretprobes that miss returns: backlog.bpf.c, fx_unix_stream_connect). */
static const char *const tp_syscalls[] = {
	"sys_enter_connect", "sys_exit_connect", "sys_exit_accept", "sys_exit_accept4",
};
static const char *const kprobe_exit_tps[] = {
	"sys_exit_connect", "sys_exit_accept", "sys_exit_accept4",
};

/* tracefs is there and has these syscalls:NAME events; else -EOPNOTSUPP and why. */
static int syscall_tps_present(const char *const *names, size_t n, char *why, size_t len)
{
	int err = ensure_tracefs();
	size_t i;

	if (err) {
		snprintf(why, len, "cannot mount tracefs: %s", strerror(-err));
		return -EOPNOTSUPP;
	}
	for (i = 0; i < n; i++) {
		if (!tracefs_has_event("syscalls", names[i])) {
			snprintf(why, len, "no syscalls:%s tracepoint "
				 "(CONFIG_FTRACE_SYSCALLS unset?)", names[i]);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

/* Can `mode` be used here for the backlog targets? 0, or -EOPNOTSUPP with the reason. */
static int mode_usable(enum attach_mode mode, bool with_v6, char *why, size_t len)
{
	const char *fns[ARRAY_SIZE(probe_targets)];
	int n = 0, i, err;

	for (i = 0; i < (int)ARRAY_SIZE(probe_targets); i++)	/* the mode's own targets */
		if ((with_v6 || !probe_targets[i].v6) &&
		    (mode != ATTACH_KPROBE || probe_targets[i].kp))
			fns[n++] = probe_targets[i].func;

	switch (mode) {
	case ATTACH_FENTRY:
		err = attach_funcs_present(mode, fns, n, why, len);
		if (err)
			return err;
		/* loaded, not attached: each test attach's detach waited ~0.1 s (an RCU-tasks
		 * grace period); a target refused at attach (6.1: ENOTSUPP) is bl_bpf_open's */
		for (i = 0; i < n; i++) {
			err = fentry_test_load(fns[i]);
			if (err < 0) {
				snprintf(why, len, "a test fentry program on %s failed: %s", fns[i],
					 errno_text(err));
				return -EOPNOTSUPP;
			}
			close(err);
		}
		return 0;
	case ATTACH_KPROBE:
		err = attach_funcs_present(mode, fns, n, why, len);
		return err ? err : syscall_tps_present(kprobe_exit_tps, ARRAY_SIZE(kprobe_exit_tps),
						       why, len);
	case ATTACH_TRACEPOINT:
		if (!kernel_has_btf()) {
			snprintf(why, len, "no kernel BTF (/sys/kernel/btf/vmlinux) for tp_btf");
			return -EOPNOTSUPP;
		}
		return syscall_tps_present(tp_syscalls, ARRAY_SIZE(tp_syscalls), why, len);
	default:
		snprintf(why, len, "unknown mode");
		return -EINVAL;
	}
}

bool bl_tp_tcp_drops(char *why, size_t len)
{
	int args = btf_tracepoint_args("kfree_skb");

	if (!bpf_has_cmpxchg())
		snprintf(why, len, "this kernel's BPF has no compare-and-exchange (Linux 5.12+), "
			 "which hands each drop to one freed segment");
	else if (args < 3)
		snprintf(why, len, "this kernel's kfree_skb tracepoint has no drop reason (Linux "
			 "5.17+)");
	else
		return true;
	return false;
}

void bl_mode_programs(struct backlog_bpf *skel, enum attach_mode mode, bool v6, bool tcp_drops,
		      struct bpf_program **p, int *n)
{
	bool fentry = mode == ATTACH_FENTRY;
	size_t i, k;

	*n = 0;
	switch (mode) {
	case ATTACH_FENTRY:
	case ATTACH_KPROBE:
		for (i = 0; i < ARRAY_SIZE(probe_targets); i++) {
			const struct probe_target *t = &probe_targets[i];
			size_t off[2] = { fentry ? t->fe : t->kp, fentry ? t->fx : t->kr };

			if (t->v6 && !v6)
				continue;
			for (k = 0; k < 2; k++)
				if (off[k])
					p[(*n)++] = skel_prog(skel, off[k]);
		}
		if (!fentry) {
			p[(*n)++] = skel->progs.tp_sys_exit_connect;
			p[(*n)++] = skel->progs.tp_sys_exit_accept;
			p[(*n)++] = skel->progs.tp_sys_exit_accept4;
		}
		break;
	default:
		p[(*n)++] = skel->progs.tp_sys_enter_connect;
		p[(*n)++] = skel->progs.tp_sys_exit_connect;
		p[(*n)++] = skel->progs.tp_sched_switch;
		if (tcp_drops) {	/* else TCP drops are not counted */
			p[(*n)++] = skel->progs.tp_consume_skb;
			p[(*n)++] = skel->progs.tp_kfree_skb;
		}
		p[(*n)++] = skel->progs.tp_inet_sock_set_state;
		p[(*n)++] = skel->progs.tp_tcp_retransmit_skb;
		p[(*n)++] = skel->progs.tp_sys_exit_accept;
		p[(*n)++] = skel->progs.tp_sys_exit_accept4;
		if (btf_has_tracepoint("sk_data_ready"))	/* 6.6+: the arrival depth */
			p[(*n)++] = skel->progs.tp_sk_data_ready;
		break;
	}
}

void bl_bpf_close(struct bl_bpf *b)
{
	struct bpf_link **links[ARRAY_SIZE(b->links) + 2];
	int i, n = 0;

	for (i = 0; i < b->n_links; i++)
		links[n++] = &b->links[i];
	links[n++] = &b->iter_unix;
	links[n++] = &b->iter_tcp;
	links_destroy(links, n);
	b->n_links = 0;
	if (b->iter_out)
		munmap((void *)b->iter_out, b->iter_len);
	b->iter_out = NULL;
	backlog_bpf__destroy(b->skel);
	b->skel = NULL;
}

/* Open, load and attach one mode's programs plus the iterators; all or nothing. */
static int bl_bpf_open(struct bl_bpf *b, enum attach_mode mode, char *err_msg, size_t len)
{
	struct bpf_program *progs[BL_MAX_PROGS];
	int n, i, err;

	b->skel = backlog_bpf__open_opts(btf_open_opts());
	if (!b->skel) {
		snprintf(err_msg, len, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	b->skel->rodata->listen_overflow_reason = b->reason > 0 ? b->reason : 0;
	b->skel->rodata->self_tgid = getpid();
	/* asked once: bpf_has_cmpxchg() loads a probe program */
	b->tcp_drops_why[0] = 0;
	b->tcp_drops = mode != ATTACH_TRACEPOINT ||
		       bl_tp_tcp_drops(b->tcp_drops_why, sizeof(b->tcp_drops_why));
	bl_mode_programs(b->skel, mode, b->v6, b->tcp_drops, progs, &n);
	for (i = 0; i < n; i++)
		bpf_program__set_autoload(progs[i], true);
	if (b->unix_diag)	/* before 5.17 iter/unix has no target: it would not load */
		bpf_program__set_autoload(b->skel->progs.iter_unix, false);
	err = backlog_bpf__load(b->skel);
	if (err) {
		snprintf(err_msg, len, "cannot load the %s programs: %s (rerun with -vv for the "
			 "verifier log)", attach_mode_names[mode], strerror(-err));
		/* fentry's test programs only load: a refused fexit (5.10: no bpf_get_func_ret)
		 * shows here, and means the mode is not usable, as in mode_usable */
		if (mode == ATTACH_FENTRY && err != -ENOMEM)
			err = -EOPNOTSUPP;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		b->links[b->n_links] = bpf_program__attach(progs[i]);
		if (!b->links[b->n_links]) {
			const char *sec = bpf_program__section_name(progs[i]);	/* fentry/F */

			err = -errno;
			if (mode == ATTACH_FENTRY && err != -ENOMEM) {	/* 6.1: ENOTSUPP */
				snprintf(err_msg, len, "an fentry program on %s failed: %s",
					 strchr(sec, '/') ? strchr(sec, '/') + 1 : sec, errno_text(err));
				err = -EOPNOTSUPP;	/* a refused trampoline: not usable */
			} else {
				snprintf(err_msg, len, "cannot attach %s: %s",
					 bpf_program__name(progs[i]), errno_text(err));
			}
			goto fail;
		}
		b->n_links++;
	}
	if (!b->unix_diag)
		b->iter_unix = bpf_program__attach_iter(b->skel->progs.iter_unix, NULL);
	b->iter_tcp = bpf_program__attach_iter(b->skel->progs.iter_tcp, NULL);
	if ((!b->unix_diag && !b->iter_unix) || !b->iter_tcp) {
		err = -errno;
		snprintf(err_msg, len, "cannot attach the %s program%s: %s (iter/tcp needs "
			 "Linux 5.9+, iter/unix 5.17+)", b->unix_diag ? "iter/tcp" :
			 "iter/unix and iter/tcp", b->unix_diag ? "" : "s", strerror(-err));
		goto fail;
	}
	b->iter_len = BL_MAX_LISTENERS * sizeof(struct bl_listener);
	b->iter_out = mmap(NULL, b->iter_len, PROT_READ, MAP_SHARED,
			   bpf_map__fd(b->skel->maps.listeners), 0);
	if (b->iter_out == MAP_FAILED) {
		err = -errno;
		b->iter_out = NULL;
		snprintf(err_msg, len, "cannot map the listeners array: %s", strerror(-err));
		goto fail;
	}
	b->mode = mode;
	b->unix_depth = mode != ATTACH_TRACEPOINT || btf_has_tracepoint("sk_data_ready");
	return 0;
fail:
	bl_bpf_close(b);
	return err ? err : -EINVAL;
}

/* attach_choose's probe for backlog: the targets are there, and the mode's
 * programs load and attach (then b stays open in that mode). */
struct mode_try {
	struct bl_bpf *b;
	bool open_failed;	/* usable, but loading or attaching failed (fentry: refusals are unusable) */
};

/* Has this kernel IPv6 TCP, for the function modes' v6 targets? Built in, its function is in
 * vmlinux's BTF; a module's, in kallsyms (a whole read: ~1 s under qemu TCG), read only then. */
static bool v6_present(enum attach_mode mode)
{
	static const char func[] = "tcp_v6_syn_recv_sock";
	char sym[128];

	if (mode == ATTACH_TRACEPOINT)
		return false;
	return (mode == ATTACH_FENTRY && btf_has_func(func)) || ksym_resolve(func, sym, sizeof(sym));
}

static int mode_try(enum attach_mode mode, void *ctx, char *why, size_t len)
{
	struct mode_try *t = ctx;
	int err;

	t->open_failed = false;
	t->b->v6 = v6_present(mode);
	err = mode_usable(mode, t->b->v6, why, len);
	if (err)
		return err;
	err = bl_bpf_open(t->b, mode, why, len);
	t->open_failed = err != 0 && err != -EOPNOTSUPP;
	return err;
}

static void diag_discard(void *ctx, const struct bl_listener *r)
{
	(void)ctx;
	(void)r;
}

/*
 * Where the listeners come from: iter/tcp (5.9+) for TCP in every case; for AF_UNIX
 * iter/unix (5.17+), or sock_diag where the kernel lacks it or b->source says so
 * (then one dump now, so that a missing unix_diag fails here, clearly). 0 or -ENOTSUP.
 */
static int choose_source(struct bl_bpf *b)
{
	bool iter_unix = btf_has_func("bpf_iter_unix");
	int err;

	if (!btf_has_func("bpf_iter_tcp")) {
		say_error("--backlog needs the BPF iterator iter/tcp (Linux 5.9+) to "
			"find TCP listeners; kernel %s lacks it", kernel_release());
		return -ENOTSUP;
	}
	if (b->source == BL_SOURCE_ITER && !iter_unix) {
		say_error("--backlog-source iter: kernel %s has no iter/unix (Linux "
			"5.17+); use --backlog-source auto, which reads AF_UNIX queues through "
			"sock_diag here", kernel_release());
		return -ENOTSUP;
	}
	b->unix_diag = b->source == BL_SOURCE_DIAG || !iter_unix;
	b->source_why[0] = 0;
	if (!b->unix_diag)
		return 0;
	snprintf(b->source_why, sizeof(b->source_why), "%s", iter_unix ?
		 "forced with --backlog-source diag" : "this kernel has no iter/unix (before 5.17)");
	err = bl_diag_unix_listeners(0, diag_discard, NULL);
	if (err) {
		say_error("--backlog: %s, and sock_diag cannot list AF_UNIX sockets: "
			"%s; load the unix_diag module (modprobe unix_diag; CONFIG_UNIX_DIAG)",
			b->source_why, strerror(-err));
		return -ENOTSUP;
	}
	return 0;
}

/* auto: fentry -> kprobe -> tracepoint; a forced mode fails with the reason. */
int bl_bpf_setup(struct bl_bpf *b, enum attach_mode want)
{
	struct mode_try t = { .b = b };
	char reason[512];
	long long v;
	int err;

	err = choose_source(b);
	if (err)
		return err;
	b->reason = btf_enum_value("SKB_DROP_REASON_TCP_LISTEN_OVERFLOW", &v) ? -1 : (int)v;
	if (want != ATTACH_AUTO) {	/* say which of the two went wrong */
		err = mode_try(want, &t, reason, sizeof(reason));
		if (err && !t.open_failed) {
			say_error("--attach %s is not available here: %s\n"
				"Try --attach auto to use the best mode this kernel has.",
				attach_mode_names[want], reason);
			return -ENOTSUP;
		}
		if (err) {
			say_error("--attach %s: %s", attach_mode_names[want], reason);
			return -EINVAL;
		}
		b->mode = want;
		snprintf(b->why, sizeof(b->why), "forced with --attach %s",
			 attach_mode_names[want]);
		return 0;
	}
	err = attach_choose(want, mode_try, &t, &b->mode, b->why, sizeof(b->why));
	if (err) {
		say_error("%s (%s)", attach_failure(err), b->why);
		return err == -ENOMEM ? err : -ENOTSUP;
	}
	return 0;
}
