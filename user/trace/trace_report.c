// SPDX-License-Identifier: GPL-2.0
/* --trace reports: one table per flow (busiest first), UDS vs TCP, JSON (issue 11 item 4). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "outfile.h"
#include "predict.h"
#include "trace_report.h"
#include "util.h"

static void pids_text(const struct flow_end *e, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < e->n_pids && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%u", i ? "," : "", e->pids[i]);
}

static void flow_text(const struct flow *fl, FILE *f)
{
	char a[32], b[32], c[32], d[32], sp[200], rp[200];

	pids_text(&fl->sender, sp, sizeof(sp));
	pids_text(&fl->receiver, rp, sizeof(rp));
	fprintf(f, "\n%s %s: %s [%s] -> %s [%s]\n", trace_transport_name(fl->transport), fl->endpoint,
		fl->sender.comm, sp, fl->receiver.comm, rp);
	fprintf(f, "  %llu messages, %llu bytes, %llu lost (misses)\n",
		(unsigned long long)fl->messages, (unsigned long long)fl->bytes,
		(unsigned long long)fl->misses);
	fprintf(f, "  latency send() entry -> recv() return: p50 %s  p90 %s  p99 %s  mean %s\n",
		fmt_dur(fl->p50, false, a, sizeof(a)), fmt_dur(fl->p90, false, b, sizeof(b)),
		fmt_dur(fl->p99, false, c, sizeof(c)), fmt_dur(fl->mean, false, d, sizeof(d)));
	trace_stage_table(fl, false, f);
	predict_flow_text(fl, f);
}

/* The kernel stages of stage st, under it: the mean per message and its share of the latency. */
static void kstage_rows(const struct flow *fl, int st, bool md, FILE *f)
{
	char a[32];
	int i;

	for (i = 0; i < fl->n_kstages; i++) {
		const struct flow_kstage *k = &fl->kstages[i];
		double share = fl->mean > 0 ? 100.0 * k->ns_per_msg / fl->mean : 0.0;

		if (k->of != st)
			continue;
		fmt_dur(k->ns_per_msg, md, a, sizeof(a));
		if (md)
			fprintf(f, "| &nbsp;&nbsp;`%s` | %s | %.1f%% | | | |\n", k->name, a, share);
		else
			fprintf(f, "    %-30s %8s %5.1f%%\n", k->name, a, share);
	}
}

void trace_stage_table(const struct flow *fl, bool md, FILE *f)
{
	char a[32], b[32], c[32];
	int st;

	if (md)
		fprintf(f, "| stage | per message | share | messages | p50 | p99 |\n"
			"|---|---:|---:|---:|---:|---:|\n");
	else
		fprintf(f, "  %-18s %12s %6s %10s %10s %10s\n", "stage", "per message", "share",
			"messages", "p50", "p99");
	for (st = 0; st < FS__COUNT; st++) {
		const struct flow_stage *g = &fl->stages[st];
		double share = fl->mean > 0 ? 100.0 * g->ns_per_msg / fl->mean : 0.0;

		if (!g->count)
			continue;
		fmt_dur(g->ns_per_msg, md, a, sizeof(a));
		fmt_dur(g->p50_ns, md, b, sizeof(b));
		fmt_dur(g->p99_ns, md, c, sizeof(c));
		if (md)
			fprintf(f, "| `%s` | %s | %.1f%% | %llu | %s | %s |\n", g->name, a, share,
				(unsigned long long)g->count, b, c);
		else
			fprintf(f, "  %-18s %12s %5.1f%% %10llu %10s %10s\n", g->name, a, share,
				(unsigned long long)g->count, b, c);
		kstage_rows(fl, st, md, f);
	}
}

/* One line per (sender, receiver) pair that talks over both transports. */
void trace_compare_text(const struct trace_run *run, FILE *f)
{
	char a[32], b[32];
	int i, j;

	for (i = 0; i < run->n_flows; i++) {
		const struct flow *u = &run->flows[i], *t = NULL;

		if (u->transport != FL_UNIX || !u->messages)
			continue;
		for (j = 0; j < i; j++)	/* the busiest unix flow of the pair only */
			if (run->flows[j].transport == FL_UNIX &&
			    !strcmp(run->flows[j].sender.comm, u->sender.comm) &&
			    !strcmp(run->flows[j].receiver.comm, u->receiver.comm))
				break;
		if (j < i)
			continue;
		for (j = 0; j < run->n_flows && !t; j++)
			if (run->flows[j].transport == FL_TCP && run->flows[j].messages &&
			    !strcmp(run->flows[j].sender.comm, u->sender.comm) &&
			    !strcmp(run->flows[j].receiver.comm, u->receiver.comm))
				t = &run->flows[j];
		if (!t)
			continue;
		fprintf(f, "\nUDS vs TCP, %s -> %s: p50 %s over %s vs %s over %s: ", u->sender.comm,
			u->receiver.comm, fmt_dur(u->p50, false, a, sizeof(a)), u->endpoint,
			fmt_dur(t->p50, false, b, sizeof(b)), t->endpoint);
		if (u->p50 && t->p50 >= u->p50)
			fprintf(f, "TCP takes %.2fx as long\n", (double)t->p50 / u->p50);
		else if (t->p50)
			fprintf(f, "UDS takes %.2fx as long (UDS does not win here)\n",
				(double)u->p50 / t->p50);
		else
			fprintf(f, "not comparable\n");
	}
}

/* ---- --slower-than: the outliers ---- */

static const char *const unseen_names[] = { "send_entry", "recv_entry" };
static const char *const unseen_words[] = {
	"the send() entry (sent outside a traced syscall: send;call starts at the handover)",
	"the receiver's recv() entry (its time counts in recv;blocked)",
};

/* ISO 8601 UTC with microseconds: "2026-11-23T19:30:01.123456Z". */
static void iso_time(uint64_t ns, char *buf, size_t len)
{
	time_t sec = ns / 1000000000;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06uZ", (unsigned)(ns % 1000000000 / 1000));
}

static int by_latency(const void *a, const void *b)
{
	const struct trace_outlier *x = *(const struct trace_outlier *const *)a;
	const struct trace_outlier *y = *(const struct trace_outlier *const *)b;

	if (x->latency_ns != y->latency_ns)
		return x->latency_ns < y->latency_ns ? 1 : -1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

const struct trace_outlier **trace_outliers_slowest(const struct trace_run *run)
{
	const struct trace_outlier **v = malloc((run->n_outliers + 1) * sizeof(*v));
	int i;

	if (!v)
		return NULL;
	for (i = 0; i < run->n_outliers; i++)
		v[i] = &run->outliers[i];
	qsort(v, run->n_outliers, sizeof(*v), by_latency);
	return v;
}

static int outlier_kstages(const struct trace_outlier *x, struct flow_kstage *ks)
{
	struct kstage_in in = { x->transport, x->kseen, x->rkseen, x->k, x->rk, x->bk,
				x->stage_ns, x->stages, 1 };

	return trace_kstages_cut(&in, ks);
}

/* The message's stages in path order, each cut into its kernel stages where the run cut it. */
void trace_outlier_stages(const struct trace_outlier *x, const char *sep, FILE *f)
{
	struct flow_kstage ks[TR_MAX_KSTAGES];
	int st, i, n = 0, nk = outlier_kstages(x, ks);
	char a[32];
	bool cut;

	for (st = 0; st < FS__COUNT; st++) {
		if (!(x->stages & (1u << st)))
			continue;
		cut = false;
		for (i = 0; i < nk; i++) {
			if (ks[i].of != st)
				continue;
			fprintf(f, "%s%s %s", n++ ? sep : "", ks[i].name,
				fmt_dur(ks[i].ns_per_msg, false, a, sizeof(a)));
			cut = true;
		}
		if (!cut)
			fprintf(f, "%s%s %s", n++ ? sep : "", fl_stage_names[st],
				fmt_dur(x->stage_ns[st], false, a, sizeof(a)));
	}
}

static void outliers_text(const struct trace_run *run, FILE *f)
{
	const struct trace_outlier **v;
	char a[32], when[40];
	size_t u;
	int i;

	if (!run->slower_than_ns)
		return;
	fprintf(f, "\nMessages slower than %s: %d%s\n",
		fmt_dur(run->slower_than_ns, false, a, sizeof(a)), run->n_outliers,
		run->n_outliers > 1 ? " (the slowest first)" : "");
	v = run->n_outliers ? trace_outliers_slowest(run) : NULL;
	for (i = 0; v && i < run->n_outliers && i < TR_TEXT_OUTLIERS; i++) {
		const struct trace_outlier *x = v[i];

		iso_time(x->time_ns, when, sizeof(when));
		fprintf(f, "  %10s  %s %s: %s [%u/%u] -> %s [%u/%u], %llu bytes, sent %s\n",
			fmt_dur(x->latency_ns, false, a, sizeof(a)), trace_transport_name(x->transport),
			x->endpoint, x->s_comm, x->s_pid, x->s_tid, x->r_comm, x->r_pid, x->r_tid,
			(unsigned long long)x->bytes, when);
		fprintf(f, "  %10s  ", "");
		trace_outlier_stages(x, " + ", f);
		fputc('\n', f);
		for (u = 0; u < ARRAY_SIZE(unseen_words); u++)
			if (x->unseen & (1u << u))
				fprintf(f, "  %10s  not seen: %s\n", "", unseen_words[u]);
	}
	if (run->n_outliers > TR_TEXT_OUTLIERS)
		fprintf(f, "  and %d more (all of them in --json's \"outliers\" and --out's "
			"slow.jsonl)\n", run->n_outliers - TR_TEXT_OUTLIERS);
	if (!v && run->n_outliers)
		fprintf(f, "  (out of memory sorting them: see --json)\n");
	free(v);
	trace_outliers_lost(run, "  ", "", f);
}

void trace_outliers_lost(const struct trace_run *run, const char *lead, const char *end, FILE *f)
{
	if (run->outliers_dropped)
		fprintf(f, "%s%llu outliers dropped (ring buffer full)%s\n", lead,
			(unsigned long long)run->outliers_dropped, end);
	if (run->outliers_not_kept)
		fprintf(f, "%s%llu outliers not kept (more than %d)%s\n", lead,
			(unsigned long long)run->outliers_not_kept, TR_MAX_OUTLIERS, end);
}

static void outlier_end_json(struct jw *w, const char *key, const char *comm, uint32_t pid,
			     uint32_t tid)
{
	jw_obj_begin(w, key);
	jw_str(w, "comm", comm);
	jw_u64(w, "pid", pid);
	jw_u64(w, "tid", tid);
	jw_obj_end(w);
}

void trace_outlier_json(struct jw *w, const struct trace_outlier *x)
{
	struct flow_kstage ks[TR_MAX_KSTAGES];
	char when[40];
	size_t u;
	int st, i, nk;

	iso_time(x->time_ns, when, sizeof(when));
	jw_obj_begin(w, NULL);
	jw_str(w, "time", when);
	jw_u64(w, "time_ns", x->time_ns);
	jw_str(w, "transport", trace_transport_name(x->transport));
	jw_str(w, "endpoint", x->endpoint);
	outlier_end_json(w, "sender", x->s_comm, x->s_pid, x->s_tid);
	outlier_end_json(w, "receiver", x->r_comm, x->r_pid, x->r_tid);
	jw_u64(w, "bytes", x->bytes);
	jw_u64(w, "latency_ns", x->latency_ns);
	jw_arr_begin(w, "stages");
	for (st = 0; st < FS__COUNT; st++) {
		if (!(x->stages & (1u << st)))
			continue;
		jw_obj_begin(w, NULL);
		jw_str(w, "name", fl_stage_names[st]);
		jw_u64(w, "ns", x->stage_ns[st]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_arr_begin(w, "kernel_stages");
	nk = outlier_kstages(x, ks);
	for (i = 0; i < nk; i++) {
		jw_obj_begin(w, NULL);
		jw_str(w, "name", ks[i].name);
		jw_str(w, "of", fl_stage_names[ks[i].of]);
		jw_u64(w, "ns", (uint64_t)ks[i].ns_per_msg);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_arr_begin(w, "not_seen");
	for (u = 0; u < ARRAY_SIZE(unseen_names); u++)
		if (x->unseen & (1u << u))
			jw_str(w, NULL, unseen_names[u]);
	jw_arr_end(w);
	jw_obj_end(w);
}

void trace_outliers_jsonl(const struct trace_run *run, FILE *f)
{
	struct jw w;
	int i;

	for (i = 0; i < run->n_outliers; i++) {
		jw_init(&w, f, false);	/* the object's end closes the line */
		trace_outlier_json(&w, &run->outliers[i]);
	}
}

/* What the run's non-zero miss counters mean, and for whom they were counted: the kernel
 * counts them where a process filter selects an end, else for every process on the host. */
static void misses_text(const struct trace_run *run, const struct trace_opts *o, FILE *f)
{
	bool procs = o->n_pids || o->n_comms || o->argv || o->cgroup;
	bool any = false;
	char size[32];
	int i;

	for (i = 0; i < FM__COUNT; i++) {
		if (!run->misses[i])
			continue;
		if (!any)
			fprintf(f, "Counted %s:\n", procs ? "for the processes followed" :
				"for every process on the host (no process filter), not only the "
				"flows above");
		any = true;
		fprintf(f, "  %s %llu: %s", fl_miss_names[i], (unsigned long long)run->misses[i],
			fl_miss_meanings[i]);
		if (i == FM_FLOW_FULL)
			fprintf(f, " (the kernel's: %u flows at once, %s on %d CPUs, "
				"--max-flows sets it; user space keeps %d)", run->flow_map_entries,
				bytes_text(trace_flow_map_bytes(run->flow_map_entries,
								run->flow_map_cpus), size, sizeof(size)),
				run->flow_map_cpus, TR_MAX_FLOWS);
		fputc('\n', f);
	}
}

/* Unix endpoint names the kernel's name map had no room for: their flows are under
 * "unix:unnamed" when they were kept at all, else their messages are in flow_map_full. */
static void unnamed_text(const struct trace_run *run, FILE *f)
{
	uint64_t msgs = 0;
	int i, n = 0;

	if (!run->names_lost)
		return;
	for (i = 0; i < run->n_flows; i++) {
		if (run->flows[i].transport == FL_UNIX &&
		    !strcmp(run->flows[i].endpoint, "unix:unnamed")) {
			msgs += run->flows[i].messages;
			n++;
		}
	}
	/* counted per direction that met the full map: not distinct names */
	fprintf(f, "unix endpoint names found no room in the kernel's name map %llu times: ",
		(unsigned long long)run->names_lost);
	if (n)
		fprintf(f, "%llu messages of their flows are in %d flow%s under \"unix:unnamed\"%s\n",
			(unsigned long long)msgs, n, n == 1 ? "" : "s",
			run->misses[FM_FLOW_FULL] ? ", the rest in flow_map_full" : "");
	else
		fprintf(f, "no flow is under \"unix:unnamed\"%s\n", run->misses[FM_FLOW_FULL] ?
			" (flow_map_full counts the messages of flows that found no room)" : "");
}

void trace_report_text(const struct trace_run *run, const struct trace_opts *o, FILE *f)
{
	char d[32];
	uint64_t total = 0;
	int i;

	fprintf(f, "udsprobe --trace: %s, %s mode, detail %s", fmt_dur(run->duration_ns, false, d,
		sizeof(d)), run->attach_mode, run->detail);
	if (run->argv)
		fprintf(f, "; command '%s' exit status %d", run->argv[0], run->exit_status);
	fprintf(f, "%s\n", run->interrupted ? " (interrupted)" : "");
	if (!run->n_flows) {
		fprintf(f, "No messages matched%s: no AF_UNIX stream or loopback TCP message "
			"completed during the run.\n",
			o->n_pids || o->n_comms || o->n_ports || o->n_unix || o->argv || o->cgroup ?
			" the filters" : "");
	}
	for (i = 0; i < run->n_flows; i++) {
		flow_text(&run->flows[i], f);
		total += run->flows[i].messages;
	}
	trace_compare_text(run, f);
	outliers_text(run, f);
	fprintf(f, "\n%llu messages in %d flow%s; not matched:", (unsigned long long)total,
		run->n_flows, run->n_flows == 1 ? "" : "s");
	for (i = 0; i < FM__COUNT; i++)
		if (i != FM_NO_ENTRY)
			fprintf(f, " %s %llu", fl_miss_names[i], (unsigned long long)run->misses[i]);
	fprintf(f, "; socket states evicted (LRU) %llu", (unsigned long long)run->dirs_evicted);
	if (run->runs_skipped)	/* a boundary not seen: its message is one of the misses */
		fprintf(f, "; program runs the kernel skipped %llu",
			(unsigned long long)run->runs_skipped);
	fputc('\n', f);
	misses_text(run, o, f);
	unnamed_text(run, f);
	if (run->procs_unfollowed)
		fprintf(f, "%llu processes started by followed ones were not followed (the process "
			"map of 16384 was full): their messages count only where the other end "
			"does\n", (unsigned long long)run->procs_unfollowed);
}

static void end_json(struct jw *w, const char *key, const struct flow_end *e)
{
	int i;

	jw_obj_begin(w, key);
	jw_str(w, "comm", e->comm);
	jw_arr_begin(w, "pids");
	for (i = 0; i < e->n_pids; i++)
		jw_u64(w, NULL, e->pids[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

void trace_flow_json(struct jw *w, const struct flow *fl)
{
	int st;

	jw_obj_begin(w, NULL);
	jw_str(w, "transport", trace_transport_name(fl->transport));
	jw_str(w, "endpoint", fl->endpoint);
	end_json(w, "sender", &fl->sender);
	end_json(w, "receiver", &fl->receiver);
	jw_u64(w, "messages", fl->messages);
	jw_u64(w, "bytes", fl->bytes);
	jw_latency(w, "latency_ns", fl->p50, fl->p90, fl->p99, fl->mean, false);
	jw_double(w, "coverage", fl->coverage);
	jw_u64(w, "misses", fl->misses);
	jw_u64(w, "cross_cpu", fl->cross_cpu);
	jw_u64(w, "connections", fl->conns);
	if (fl->transport == FL_TCP)
		jw_u64(w, "connections_to_listener", fl->conns_to_srv);
	jw_u64(w, "bulk_messages", fl->bulk_msgs);
	jw_arr_begin(w, "stages");
	for (st = 0; st < FS__COUNT; st++) {
		const struct flow_stage *g = &fl->stages[st];

		jw_obj_begin(w, NULL);
		jw_str(w, "name", g->name);
		jw_double(w, "ns_per_msg", g->ns_per_msg);
		jw_u64(w, "count", g->count);
		jw_u64(w, "p50_ns", g->p50_ns);
		jw_u64(w, "p99_ns", g->p99_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	/* stages cut at the kernel boundaries, named as --compare's stages */
	jw_arr_begin(w, "kernel_stages");
	for (st = 0; st < fl->n_kstages; st++) {
		jw_obj_begin(w, NULL);
		jw_str(w, "name", fl->kstages[st].name);
		jw_str(w, "of", fl_stage_names[fl->kstages[st].of]);
		jw_double(w, "ns_per_msg", fl->kstages[st].ns_per_msg);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	predict_flow_json(w, &fl->if_unix);
	jw_obj_end(w);
}

void trace_json_write(const struct trace_run *run, FILE *f)
{
	struct jw w;
	int i;

	jw_doc_begin(&w, f);
	jw_str(&w, "attach_mode", run->attach_mode);
	jw_str(&w, "detail", run->detail);
	jw_u64(&w, "duration_ns", run->duration_ns);
	jw_arr_begin(&w, "flows");
	for (i = 0; i < run->n_flows; i++)
		trace_flow_json(&w, &run->flows[i]);
	jw_arr_end(&w);
	predict_basis_json(&w, &run->basis);
	jw_obj_begin(&w, "misses");
	for (i = 0; i < FM__COUNT; i++)
		jw_u64(&w, fl_miss_names[i], run->misses[i]);
	jw_obj_end(&w);
	jw_obj_begin(&w, "flow_map");
	jw_u64(&w, "entries", run->flow_map_entries);
	jw_u64(&w, "cpus", run->flow_map_cpus);
	jw_u64(&w, "bytes", trace_flow_map_bytes(run->flow_map_entries, run->flow_map_cpus));
	jw_obj_end(&w);
	jw_u64(&w, "socket_states_evicted", run->dirs_evicted);
	jw_u64(&w, "program_runs_skipped", run->runs_skipped);
	jw_u64(&w, "endpoint_names_lost", run->names_lost);
	jw_u64(&w, "bulk_unsliced", run->bulk_unsliced);
	jw_u64(&w, "processes_exited", run->procs_exited);
	jw_u64(&w, "processes_not_followed", run->procs_unfollowed);
	jw_bool(&w, "interrupted", run->interrupted);
	if (run->slower_than_ns) {
		jw_u64(&w, "slower_than_ns", run->slower_than_ns);
		jw_arr_begin(&w, "outliers");
		for (i = 0; i < run->n_outliers; i++)
			trace_outlier_json(&w, &run->outliers[i]);
		jw_arr_end(&w);
		jw_u64(&w, "outliers_dropped", run->outliers_dropped);
		jw_u64(&w, "outliers_not_kept", run->outliers_not_kept);
	}
	if (run->argv) {
		jw_obj_begin(&w, "command");
		jw_arr_begin(&w, "argv");
		for (i = 0; run->argv[i]; i++)
			jw_str(&w, NULL, run->argv[i]);
		jw_arr_end(&w);
		jw_i64(&w, "exit_status", run->exit_status);
		jw_obj_end(&w);
	}
	jw_obj_end(&w);
	fputc('\n', f);
}

int trace_report_json(const struct trace_run *run, const char *path)
{
	struct outfile of;
	int err = outfile_begin(&of, "--json", path);

	if (err)
		return err;
	trace_json_write(run, of.f);
	return outfile_commit(&of, 0);
}
