// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer: chooses the attach mode, enables that mode's programs in
 * stages.bpf.c, registers each run's tasks, and turns the in-kernel sums into
 * named stages. What ends each stage and how it is named is the stage table's
 * (stage_table.c), so the three attach modes and both transports line up. The
 * probe-cost calibration is tracer_calibrate.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stages.h"
#include "tracer_int.h"
#include "stages.skel.h"
#include "util.h"

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
	tracer_calib_prepare(tr);
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

struct bpf_link *tracer_attach_prog(struct tracer *tr, struct bpf_program *prog)
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
		link = tracer_attach_prog(tr, prog);
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

void tracer_reset_state(struct tracer *tr)
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

void tracer_set_tasks(struct tracer *tr, pid_t client, pid_t server, enum transport t)
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
	tracer_reset_state(tr);
	tr->missed_at_begin = kernel_missed(tr);
	tr->skel->bss->attribution = cfg->mode == WL_STREAM ? ATTR_PER_CALL : ATTR_MESSAGE;
	tracer_set_tasks(tr, client, server, cfg->transport);
	return 0;
}

void tracer_measure(struct tracer *tr, bool on)
{
	__sync_synchronize();
	tr->skel->bss->tracing = on;
	__sync_synchronize();
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
