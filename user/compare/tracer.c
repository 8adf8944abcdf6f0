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

#include "attach.h"
#include "stages.h"
#include "tracer_int.h"
#include "stages.skel.h"
#include "util.h"

/* Which boundaries the loaded programs can see, per transport. */
static void compute_availability(struct tracer *tr)
{
	size_t n = 0;
	int b, t, i;

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
			for (i = 0; i < tr->n_progs; i++)
				if (tr->progs[i].target && !strcmp(tr->progs[i].target, marker))
					tr->avail[t][b] = true;
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

/* Can this kernel attach p in mode: the function in kallsyms (kprobe) or in BTF (fentry; *func:
 * its name here), or the tracepoint's BTF? The syscall and scheduler programs go everywhere. */
static bool prog_here(enum attach_mode mode, const struct stage_prog *p, const char **func)
{
	char sym[256];

	*func = NULL;
	if (!p->target)
		return true;
	if (mode == ATTACH_TRACEPOINT)
		return btf_has_tracepoint(p->target);
	*func = tracer_kernel_func(mode, p->target, sym, sizeof(sym));
	return *func;
}

/* The mode's programs this kernel can attach, into tr->progs, enabled for load. */
static void select_programs(struct tracer *tr)
{
	struct stage_prog all[MAX_STAGE_PROGS];
	int n = tracer_mode_programs(tr->skel, tr->mode, kernel_has_btf(), all, MAX_STAGE_PROGS), i;
	const char *func;

	tr->n_progs = 0;
	for (i = 0; i < n; i++) {
		if (!prog_here(tr->mode, &all[i], &func))
			continue;
		bpf_program__set_autoload(all[i].prog, true);
		/* a renamed function: fentry must name the older one before load */
		if (func && tr->mode == ATTACH_FENTRY && strcmp(func, all[i].target))
			bpf_program__set_attach_target(all[i].prog, 0, func);
		tr->progs[tr->n_progs++] = all[i];
	}
}

int tracer_open(enum attach_mode req, int verbose, struct tracer **out)
{
	struct tracer *tr;
	char why[900];
	int err;

	*out = NULL;
	if (!kernel_has_btf() && !btf_file()) {
		say_error("%s", btf_missing_hint());
		return -ENOENT;
	}
	err = ensure_tracefs();
	if (err && verbose)
		say_error("note: cannot mount tracefs: %s", strerror(-err));
	libbpf_setup(verbose);
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->verbose = verbose;
	err = attach_choose(req, tracer_probe_mode, NULL, &tr->mode, why, sizeof(why));
	if (err) {
		if (req != ATTACH_AUTO)
			say_error("cannot trace in the forced mode: %s\n"
				"udsprobe: try --attach auto (udsprobe --check lists what this kernel "
				"supports)", why);
		else
			say_error("%s: %s", attach_failure(err), why);
		free(tr);
		return err;
	}
	snprintf(tr->reason, sizeof(tr->reason), "%s", why);

	tr->skel = stages_bpf__open_opts(btf_open_opts());
	if (!tr->skel) {
		err = -errno;
		say_error("opening the BPF object failed: %s", strerror(-err));
		goto fail;
	}
	select_programs(tr);
	tracer_calib_prepare(tr);
	err = stages_bpf__load(tr->skel);
	if (err) {
		say_error("loading the %s-mode BPF programs failed: %s (rerun with -vv "
			"for the verifier log)", attach_mode_names[tr->mode], strerror(-err));
		goto fail;
	}
	compute_availability(tr);
	/* then each fentry program attaches once, at its first run, and detaches at close */
	tr->keep_links = tr->mode == ATTACH_FENTRY && !tracer_fentry_can_reattach();
	if (tr->keep_links && verbose)
		say_error("note: this kernel cannot re-attach a detached fentry "
			"program: they stay attached from the first run to the end");
	*out = tr;
	return 0;
fail:
	tracer_close(tr);
	return err;
}

/* Each run's links: kprobes detach from links_destroy's threads (each waits for a grace
 * period), fentry and raw tracepoints one after the other. */
static void drop_links(struct tracer *tr)
{
	struct bpf_link **links[MAX_STAGE_PROGS];
	int i;

	for (i = 0; i < tr->n_progs; i++)
		links[i] = &tr->progs[i].link;
	links_destroy(links, tr->n_progs);
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

/*
 * A link destroyed here stays attached while another process holds a reference to it
 * (`bpftool link show` takes each link by id for a moment): attaching the same program there
 * again then fails, EEXIST at a tracepoint, EBUSY at a trampoline, until it lets go. Seen
 * between one transport's traced run and the next in a TCG guest, where bpftool is slow.
 */
enum { REATTACH_WAIT_MS = 10, REATTACH_TRIES = 300 };

struct bpf_link *tracer_attach_prog(const struct stage_prog *p)
{
	struct bpf_link *link;
	char sym[256];
	int i;

	if (p->how != PA_SECTION)
		return tracer_kernel_func(ATTACH_KPROBE, p->target, sym, sizeof(sym)) ?
			bpf_program__attach_kprobe(p->prog, p->how == PA_KRETPROBE, sym) :
			(errno = ENOENT, NULL);
	for (i = 0;; i++) {
		link = bpf_program__attach(p->prog);
		if (link || (errno != EEXIST && errno != EBUSY) || i == REATTACH_TRIES)
			return link;
		usleep(REATTACH_WAIT_MS * 1000);
	}
}

/* Does transport t's path use this program in mode? Fewer attached programs, fewer hits. */
static bool prog_on_path(enum attach_mode mode, const struct stage_prog *p, enum transport t)
{
	int b;

	if (p->every_path)
		return true;
	for (b = 0; b < B__COUNT; b++) {
		const char *marker = stage_marker(b, t, mode == ATTACH_TRACEPOINT);

		if (stage_boundary(b)->stage[t] && marker && !strcmp(marker, p->target))
			return true;
	}
	return false;
}

int tracer_path_programs(struct stages_bpf *skel, enum attach_mode mode, enum transport t,
			 struct bpf_program **out, int max)
{
	struct stage_prog all[MAX_STAGE_PROGS];
	int n = tracer_mode_programs(skel, mode, kernel_has_btf(), all, MAX_STAGE_PROGS), i, k = 0;
	const char *func;

	for (i = 0; i < n; i++) {
		if (!prog_here(mode, &all[i], &func) || !prog_on_path(mode, &all[i], t))
			continue;
		if (k == max)
			return -E2BIG;	/* a floor on some of the hooks would be no floor */
		out[k++] = all[i].prog;
	}
	return k;
}

int tracer_attach(struct tracer *tr, enum transport t, uint64_t *attach_ns)
{
	uint64_t t0 = now_ns();
	struct bpf_link *link;
	int i, err;

	for (i = 0; i < tr->n_progs; i++) {
		struct stage_prog *p = &tr->progs[i];

		if (p->link || !prog_on_path(tr->mode, p, t))
			continue;	/* p->link: kept from an earlier run (keep_links) */
		link = tracer_attach_prog(p);
		err = libbpf_get_error(link);
		if (err) {
			if (err == -EEXIST || err == -EBUSY)
				say_error("attaching %s (%s) failed: %s, still after %d s of retries: "
					"another process may hold this program's earlier link (bpftool, "
					"a BPF monitor reading links)", bpf_program__name(p->prog),
					bpf_program__section_name(p->prog), strerror(-err),
					REATTACH_WAIT_MS * REATTACH_TRIES / 1000);
			else
				say_error("attaching %s (%s) failed: %s",
					bpf_program__name(p->prog),
					bpf_program__section_name(p->prog), strerror(-err));
			drop_links(tr);
			return err;
		}
		p->link = link;
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

/* Runs of our programs the kernel skipped (older kernels lose kprobe runs uncounted, and
 * the stage counts show it). */
static uint64_t kernel_missed(const struct tracer *tr)
{
	return attach_runs_skipped(tr->skel->obj);
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

_Static_assert(NR_BULK == STAGE_NR_BULK, "one list of bulk slices");

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
	struct stage_acc acc;
	int k;

	if (!has_bulk(tr))
		return;
	for (k = 0; k < NR_BULK; k++) {
		read_slot(tr, C_BULK_SEND_COPY + k, &acc);
		add_stage(res, stage_bulk_names[k], &acc, per, probe_cost_ns, false);
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
	read_slot(tr, C_BULK_SEND_COPY, &acc);
	res->bulk_messages = acc.count;	/* stream: send() calls sliced */
	if (per_call)	/* a sliced send() call ends in the slices, not at B_SEND_EXIT */
		send_calls.count += acc.count;
	res->messages = per_call ? send_calls.count : total.count;
	res->recv_calls = per_call ? recv_calls.count : 0;
	read_slot(tr, B_DEV_QUEUE, &acc);
	res->xmit_calls = per_call && t == TR_TCP ? acc.count : 0;
	res->misses = tr->skel->bss->msgs_unmatched;
	res->out_of_order = tr->skel->bss->msgs_overwritten + tr->skel->bss->msgs_wrong_sock;
	res->kernel_misses = kernel_missed(tr) - tr->missed_at_begin;
	read_slot(tr, C_CHUNKS, &acc);
	res->chunks_counted = acc.count;
	res->chunks_per_msg = acc.count ? (double)acc.sum_ns / acc.count : 0;
	read_slot(tr, C_SLEEPS, &acc);
	res->sleeps_per_msg = acc.count ? (double)acc.sum_ns / acc.count : 0;

	/* without a data-ready boundary, messages (stream: send() calls) in several chunks are
	 * sliced from send() entry */
	if (!tr->avail[t][B_DATA_READY])
		add_bulk_stages(tr, res, per_call ? send_calls.count : total.count, probe_cost_ns);
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
		if (b == B_DATA_READY)
			add_bulk_stages(tr, res, per_call ? send_calls.count : total.count, probe_cost_ns);
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
