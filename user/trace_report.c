// SPDX-License-Identifier: GPL-2.0
/* --trace reports: one table per flow (busiest first), UDS vs TCP, JSON (issue 11 item 4). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backlog.h"
#include "backlog_table.h"
#include "json_writer.h"
#include "outfile.h"
#include "trace_report.h"
#include "util.h"

static const char *transport_name(int t)
{
	return t == FL_UNIX ? "unix" : "tcp";
}

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
	int st;

	pids_text(&fl->sender, sp, sizeof(sp));
	pids_text(&fl->receiver, rp, sizeof(rp));
	fprintf(f, "\n%s %s: %s [%s] -> %s [%s]\n", transport_name(fl->transport), fl->endpoint,
		fl->sender.comm, sp, fl->receiver.comm, rp);
	fprintf(f, "  %llu messages, %llu bytes, %llu lost (misses)\n",
		(unsigned long long)fl->messages, (unsigned long long)fl->bytes,
		(unsigned long long)fl->misses);
	fprintf(f, "  latency send() entry -> recv() return: p50 %s  p90 %s  p99 %s  mean %s\n",
		fmt_dur(fl->p50, false, a, sizeof(a)), fmt_dur(fl->p90, false, b, sizeof(b)),
		fmt_dur(fl->p99, false, c, sizeof(c)), fmt_dur(fl->mean, false, d, sizeof(d)));
	fprintf(f, "  %-18s %12s %6s %10s %10s %10s\n", "stage", "per message", "share", "messages",
		"p50", "p99");
	for (st = 0; st < FS__COUNT; st++) {
		const struct flow_stage *g = &fl->stages[st];

		if (!g->count)
			continue;
		fprintf(f, "  %-18s %12s %5.1f%% %10llu %10s %10s\n", g->name,
			fmt_dur(g->ns_per_msg, false, a, sizeof(a)),
			fl->mean > 0 ? 100.0 * g->ns_per_msg / fl->mean : 0.0,
			(unsigned long long)g->count, fmt_dur(g->p50_ns, false, b, sizeof(b)),
			fmt_dur(g->p99_ns, false, c, sizeof(c)));
	}
}

/* One line per (sender, receiver) pair that talks over both transports. */
static void compare_text(const struct trace_run *run, FILE *f)
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

void trace_report_text(const struct trace_run *run, const struct trace_opts *o, FILE *f)
{
	char d[32];
	uint64_t total = 0;
	int i;

	fprintf(f, "udsprobe --trace: %s, %s mode", fmt_dur(run->duration_ns, false, d, sizeof(d)),
		run->attach_mode);
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
	compare_text(run, f);
	fprintf(f, "\n%llu messages in %d flow%s; not matched:", (unsigned long long)total,
		run->n_flows, run->n_flows == 1 ? "" : "s");
	for (i = 0; i < FM__COUNT; i++)
		fprintf(f, " %s %llu", fl_miss_names[i], (unsigned long long)run->misses[i]);
	fprintf(f, "\n");
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
	jw_str(w, "transport", transport_name(fl->transport));
	jw_str(w, "endpoint", fl->endpoint);
	end_json(w, "sender", &fl->sender);
	end_json(w, "receiver", &fl->receiver);
	jw_u64(w, "messages", fl->messages);
	jw_u64(w, "bytes", fl->bytes);
	jw_latency(w, "latency_ns", fl->p50, fl->p90, fl->p99, fl->mean, false);
	jw_double(w, "coverage", fl->coverage);
	jw_u64(w, "misses", fl->misses);
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
	jw_obj_end(w);
}

static void run_json(const struct trace_run *run, FILE *f)
{
	struct jw w;
	int i;

	jw_init(&w, f, true);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "tool", "udsprobe");
	jw_str(&w, "version", UDSPROBE_VERSION);
	jw_str(&w, "kernel", kernel_release());
	jw_str(&w, "attach_mode", run->attach_mode);
	jw_u64(&w, "duration_ns", run->duration_ns);
	jw_arr_begin(&w, "flows");
	for (i = 0; i < run->n_flows; i++)
		trace_flow_json(&w, &run->flows[i]);
	jw_arr_end(&w);
	jw_obj_begin(&w, "misses");
	for (i = 0; i < FM__COUNT; i++)
		jw_u64(&w, fl_miss_names[i], run->misses[i]);
	jw_obj_end(&w);
	jw_bool(&w, "interrupted", run->interrupted);
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
	run_json(run, of.f);
	return outfile_commit(&of, 0);
}

int trace_main(const char *json_path, double duration_s, enum attach_mode attach, int verbose)
{
	const struct bl_filters *f = backlog_filters();
	struct trace_opts o = {
		.pids = f->pids, .n_pids = f->n_pids,
		.ports = f->ports, .n_ports = f->n_ports,
		.unix_paths = f->unix_paths, .n_unix = f->n_unix,
		.cgroup = f->cgroup,
		.duration_s = duration_s, .attach = attach, .argv = trace_command(),
		.verbose = verbose,
	};
	struct trace_run run;
	int err, status = 0;

	o.n_comms = trace_comms(o.comms, FL_MAX_COMMS);
	if (geteuid() != 0) {
		fprintf(stderr, "udsprobe: --trace needs root (CAP_BPF and CAP_PERFMON): run it with sudo\n");
		return 1;
	}
	err = trace_run(&o, &run);
	if (err) {
		trace_run_free(&run);
		return 1;
	}
	if (!json_path || strcmp(json_path, "-"))
		trace_report_text(&run, &o, stdout);
	if (json_path && trace_report_json(&run, json_path))
		status = 1;
	trace_run_free(&run);
	return status;
}
