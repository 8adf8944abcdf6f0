// SPDX-License-Identifier: GPL-2.0
/*
 * --compare of real programs, reported as the built-in workload is: per flow a table with
 * the unix and the TCP run side by side (latency, the --trace stages per message), an
 * explanation, the clients' output; JSON with a "results" entry per transport; --out DIR
 * with report.md, report.json and each client's output. docs/PROGRAMS.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capability.h"
#include "compare.h"
#include "json_writer.h"
#include "outfile.h"
#include "predict.h"
#include "programs_report.h"
#include "reports.h"
#include "trace_report.h"
#include "util.h"
#include "out_set.h"

static const char *const side_name[PG__COUNT] = { "unix", "tcp" };

/* ------------------------------------------------------------------ text */

#define LABEL_W 30
#define COL_W 13

static void ratio_cell(double u, double t, FILE *f)
{
	if (u > 0 && t > 0)
		fprintf(f, " %*.2fx", COL_W - 1, t / u);
	fputc('\n', f);
}

static void row_dur(const char *label, double u, double t, bool ratio, FILE *f)
{
	char a[32], b[32];

	fprintf(f, "  %-*s %*s %*s", LABEL_W, label, COL_W, u >= 0 ? fmt_dur(u, false, a, sizeof(a)) : "-",
		COL_W, t >= 0 ? fmt_dur(t, false, b, sizeof(b)) : "-");
	if (ratio)
		ratio_cell(u, t, f);
	else
		fputc('\n', f);
}

static void row_count(const char *label, const struct flow_pair *p, FILE *f)
{
	int s;

	fprintf(f, "  %-*s", LABEL_W, label);
	for (s = 0; s < PG__COUNT; s++) {
		if (p->f[s])
			fprintf(f, " %*llu", COL_W, (unsigned long long)p->f[s]->messages);
		else
			fprintf(f, " %*s", COL_W, "-");
	}
	fputc('\n', f);
}

/* The kernel stage of f named name inside stage st, or NULL. */
static const struct flow_kstage *kstage_of(const struct flow *f, int st, const char *name)
{
	int i;

	for (i = 0; f && i < f->n_kstages; i++)
		if (f->kstages[i].of == st && !strcmp(f->kstages[i].name, name))
			return &f->kstages[i];
	return NULL;
}

/*
 * The kernel stages stage st is cut into, under it: TCP's in path order, with a UDS-only
 * one (a merged name, "send;syscall+sock") before the first TCP stage after it on UDS's path.
 */
static void kstage_rows(const struct flow *u, const struct flow *t, int st, FILE *f)
{
	const char *names[2 * TR_MAX_KSTAGES];
	int n = 0, i, j, at = 0;

	for (i = 0; t && i < t->n_kstages; i++)
		if (t->kstages[i].of == st)
			names[n++] = t->kstages[i].name;
	for (i = 0; u && i < u->n_kstages; i++) {
		const char *name = u->kstages[i].name;

		if (u->kstages[i].of != st)
			continue;
		for (j = 0; j < n && strcmp(names[j], name); j++)
			;
		if (j < n) {
			at = j + 1;
			continue;
		}
		memmove(&names[at + 1], &names[at], (n - at) * sizeof(*names));
		names[at++] = name;
		n++;
	}
	for (i = 0; i < n; i++) {
		const struct flow_kstage *ku = kstage_of(u, st, names[i]), *kt = kstage_of(t, st, names[i]);
		char label[STAGE_NAME_LEN + 8];

		snprintf(label, sizeof(label), "      %s", names[i]);
		row_dur(label, ku ? ku->ns_per_msg : -1, kt ? kt->ns_per_msg : -1, false, f);
	}
}

/* The unix latency the TCP run alone predicts (docs/PREDICT.md), beside the one measured. */
static void predicted_row(const struct flow *u, const struct flow *t, FILE *f)
{
	const struct flow_if_unix *x = &t->if_unix;
	char a[32], b[32], c[32], d[32];

	fprintf(f, "  %-*s %s [%s to %s]", LABEL_W, "  predicted from TCP alone",
		fmt_dur(x->mean, false, a, sizeof(a)), fmt_dur(x->mean_lo, false, b, sizeof(b)),
		fmt_dur(x->mean_hi, false, c, sizeof(c)));
	if (u)
		fprintf(f, ", measured %s: %s", fmt_dur(u->mean, false, d, sizeof(d)),
			u->mean >= x->mean_lo && u->mean <= x->mean_hi ? "inside the range" :
			"outside the range");
	fputc('\n', f);
	predict_conn_text(t, "    ", f);
}

static void pair_text(const struct flow_pair *p, FILE *f)
{
	const struct flow *any = p->f[PG_UNIX] ? p->f[PG_UNIX] : p->f[PG_TCP];
	const struct flow *u = p->f[PG_UNIX], *t = p->f[PG_TCP];
	int st;

	fprintf(f, "\n%s -> %s\n", any->sender.comm, any->receiver.comm);
	row_count("messages", p, f);
	row_dur("latency p50", u ? (double)u->p50 : -1, t ? (double)t->p50 : -1, u && t, f);
	row_dur("latency p99", u ? (double)u->p99 : -1, t ? (double)t->p99 : -1, u && t, f);
	row_dur("latency mean", u ? u->mean : -1, t ? t->mean : -1, u && t, f);
	if (t && t->if_unix.predicted)
		predicted_row(u, t, f);
	fprintf(f, "  %-*s\n", LABEL_W, "per message, by stage:");
	for (st = 0; st < FS__COUNT; st++) {
		char label[48];

		if (!(u && u->stages[st].count) && !(t && t->stages[st].count))
			continue;
		snprintf(label, sizeof(label), "  %s", fl_stage_names[st]);
		row_dur(label, u ? u->stages[st].ns_per_msg : -1, t ? t->stages[st].ns_per_msg : -1,
			false, f);
		kstage_rows(u, t, st, f);
	}
}

/* The last non-blank \r-separated part of line p[0..len). */
static void last_shown(const char *p, size_t len, const char **seg, size_t *seg_len)
{
	const char *end = p + len, *q = p;

	while (q < end) {
		size_t n = 0, blank = 0;

		while (q + n < end && q[n] != '\r')
			blank += q[n++] == ' ';
		if (n > blank) {
			*seg = q;
			*seg_len = n;
		}
		q += n + 1;
	}
}

/* The last n lines of a client's output, indented. */
static void output_tail(const struct program_side *sd, int n, FILE *f)
{
	const char *start = sd->output, *end = sd->output + sd->output_len, *p;
	int lines = 0;

	while (end > sd->output && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
		end--;	/* trailing blank lines */
	if (end == sd->output) {
		fprintf(f, "    (no output)\n");
		return;
	}
	for (p = end - 1; p > sd->output; p--)
		if (*p == '\n' && ++lines == n) {
			start = p + 1;
			break;
		}
	for (p = start; p < end;) {
		/* memchr, not strcspn: the output may hold NULs */
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *seg = p;
		size_t seg_len = len;
		char raw[1024], line[1024];
		size_t k;

		/* progress lines redrawn with \r: what a terminal would show is the last
		 * non-blank part; tabs as spaces */
		last_shown(p, len, &seg, &seg_len);
		seg_len = MIN(seg_len, sizeof(raw));
		for (k = 0; k < seg_len; k++)
			raw[k] = seg[k] == '\t' ? ' ' : seg[k];
		str_escape(raw, seg_len, line, sizeof(line));
		fprintf(f, "    %s\n", line);
		p += len + (p[len] == '\n');
	}
}

/* CPU per message of the client's and the server's processes, when both runs measured it. */
static void cpu_rows(const struct program_compare *pc, FILE *f)
{
	const struct program_side *u = &pc->side[PG_UNIX], *t = &pc->side[PG_TCP];
	double mu = programs_messages(u), mt = programs_messages(t);

	if (!u->has_cpu || !t->has_cpu || !mu || !mt)
		return;
	row_dur("client user CPU/msg", u->client_user_ns / mu, t->client_user_ns / mt, true, f);
	row_dur("client system CPU/msg", u->client_sys_ns / mu, t->client_sys_ns / mt, true, f);
	if (!pc->server_cmd)
		return;
	row_dur("server user CPU/msg", u->server_user_ns / mu, t->server_user_ns / mt, true, f);
	row_dur("server system CPU/msg", u->server_sys_ns / mu, t->server_sys_ns / mt, true, f);
}

void programs_text(const struct program_compare *pc, FILE *f)
{
	struct flow_pair pairs[PG_MAX_PAIRS];
	int n = programs_pairs(pc, pairs, PG_MAX_PAIRS), i, s;
	double u_wall = pc->side[PG_UNIX].wall_ns, t_wall = pc->side[PG_TCP].wall_ns;

	fprintf(f, "udsprobe --compare of programs: %s mode, kernel %s%s\n",
		pc->attach_mode ? pc->attach_mode : "-", kernel_release(),
		pc->interrupted ? " (interrupted)" : "");
	if (pc->server_cmd)
		fprintf(f, "server: %s\n", pc->server_cmd);
	for (s = 0; s < PG__COUNT; s++)
		fprintf(f, "%-7s %s\n", s == PG_UNIX ? "unix:" : "tcp:", pc->side[s].cmd ? pc->side[s].cmd :
			"not run (no --client-unix): predicted from the TCP run (docs/PREDICT.md)");
	fprintf(f, "\n  %-*s %*s %*s %*s\n", LABEL_W, "", COL_W, pc->endpoint[PG_UNIX][0] ? "unix" : "",
		COL_W, "tcp", COL_W, "tcp/unix");
	if (pc->side[PG_UNIX].cmd)
		fprintf(f, "  %-*s %*d %*d\n", LABEL_W, "client exit status", COL_W,
			pc->side[PG_UNIX].exit_status, COL_W, pc->side[PG_TCP].exit_status);
	else
		fprintf(f, "  %-*s %*s %*d\n", LABEL_W, "client exit status", COL_W, "-", COL_W,
			pc->side[PG_TCP].exit_status);
	row_dur("client run time", pc->side[PG_UNIX].ran ? u_wall : -1,
		pc->side[PG_TCP].ran ? t_wall : -1, true, f);
	fprintf(f, "  %-*s %*llu %*llu\n", LABEL_W, "messages on the endpoint", COL_W,
		(unsigned long long)programs_messages(&pc->side[PG_UNIX]), COL_W,
		(unsigned long long)programs_messages(&pc->side[PG_TCP]));
	row_dur("time messages were in flight", pc->side[PG_UNIX].ran ?
		programs_socket_ns(&pc->side[PG_UNIX]) : -1,
		programs_socket_ns(&pc->side[PG_TCP]), true, f);
	cpu_rows(pc, f);
	for (i = 0; i < n; i++)
		pair_text(&pairs[i], f);
	if (!n)
		fprintf(f, "\nNo message on %s or %s completed: do the clients use {unix} and {port}?\n",
			pc->endpoint[PG_UNIX], pc->endpoint[PG_TCP]);
	fprintf(f, "\n");
	programs_explain(pc, f);
	for (s = 0; s < PG__COUNT; s++) {
		if (!pc->side[s].ran)
			continue;
		fprintf(f, "\nclient output (%s), the last lines:\n", side_name[s]);
		output_tail(&pc->side[s], 8, f);
	}
}

/* ------------------------------------------------------------------ JSON */

/* JSON strings are UTF-8: bytes of no valid sequence (and NULs) become U+FFFD. out holds
 * 3 x len + 1. */
static void utf8_clean(const char *in, size_t len, char *out)
{
	const unsigned char *p = (const unsigned char *)in, *end = p + len;
	size_t o = 0;

	while (p < end) {
		int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 && *p >= 0xC2 ? 2 :
			(*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 && *p <= 0xF4 ? 4 : 0;
		int k;

		for (k = 1; k < n; k++)
			if (p + k >= end || (p[k] & 0xC0) != 0x80)
				n = 0;
		/* overlong 3-byte forms, surrogates, and 4-byte forms beyond U+10FFFF */
		if ((n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) ||
		    (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))))
			n = 0;
		if (n == 0 || *p == 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			p++;
			continue;
		}
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = 0;
}

static void side_json(struct jw *w, const struct program_compare *pc, int s)
{
	const struct program_side *sd = &pc->side[s];
	char *esc = NULL;
	int i;

	jw_obj_begin(w, NULL);
	jw_str(w, "transport", side_name[s]);
	jw_str(w, "endpoint", pc->endpoint[s]);
	jw_str(w, "command", sd->cmd);
	jw_bool(w, "ran", sd->ran);
	jw_i64(w, "exit_status", sd->exit_status);
	jw_u64(w, "wall_ns", sd->wall_ns);
	jw_u64(w, "messages", programs_messages(sd));
	jw_double(w, "in_flight_ns", programs_socket_ns(sd));
	if (sd->has_cpu) {
		jw_obj_begin(w, "cpu_ns");
		jw_double(w, "client_user", sd->client_user_ns);
		jw_double(w, "client_system", sd->client_sys_ns);
		jw_double(w, "server_user", sd->server_user_ns);
		jw_double(w, "server_system", sd->server_sys_ns);
		jw_obj_end(w);
	}
	if (sd->output_len && (esc = malloc(3 * sd->output_len + 1)))
		utf8_clean(sd->output, sd->output_len, esc);
	jw_str(w, "output", esc ? esc : "");
	free(esc);
	jw_bool(w, "output_truncated", sd->output_cut);
	jw_arr_begin(w, "flows");
	for (i = 0; i < sd->run.n_flows; i++)
		trace_flow_json(w, &sd->run.flows[i]);
	jw_arr_end(w);
	predict_basis_json(w, &sd->run.basis);
	jw_obj_begin(w, "misses");
	for (i = 0; i < FM__COUNT; i++)
		jw_u64(w, fl_miss_names[i], sd->run.misses[i]);
	jw_obj_end(w);
	jw_obj_end(w);
}

void programs_json_write(const struct program_compare *pc, FILE *f)
{
	struct claims *cl = calloc(1, sizeof(*cl));
	struct jw w;
	int s;

	jw_doc_begin(&w, f);
	jw_str(&w, "action", "compare-programs");
	jw_str(&w, "attach_mode", pc->attach_mode);
	jw_str(&w, "server", pc->server_cmd);
	jw_arr_begin(&w, "results");
	for (s = 0; s < PG__COUNT; s++)
		side_json(&w, pc, s);
	jw_arr_end(&w);
	if (pc->side[PG_UNIX].wall_ns && pc->side[PG_TCP].wall_ns)
		jw_double(&w, "tcp_over_unix_wall", (double)pc->side[PG_TCP].wall_ns /
			  pc->side[PG_UNIX].wall_ns);
	else
		jw_null(&w, "tcp_over_unix_wall");
	jw_bool(&w, "interrupted", pc->interrupted);
	if (cl) {
		programs_claims(pc, cl);
		claims_json(&w, "explanation", cl);
		free(cl);
	}
	jw_obj_end(&w);
	fputc('\n', f);
}

/* ------------------------------------------------------------------ report.md */

void programs_md(const struct program_compare *pc, FILE *f)
{
	struct flow_pair bp;
	int s;

	fprintf(f, "# udsprobe --compare of programs\n\n");
	fprintf(f, "The same client over a unix socket and over TCP loopback, each run traced with "
		"`--trace` (docs/PROGRAMS.md); stages are described in docs/TRACE.md.\n\n");
	fprintf(f, "## Side by side\n\n```\n");
	programs_text(pc, f);
	fprintf(f, "```\n");
	if (programs_busiest_pair(pc, &bp))
		fprintf(f, "\n## %s \u2192 %s, both runs on one scale\n\n![unix](flow-unix.svg)\n\n"
			"![tcp](flow-tcp.svg)\n\nFolded stacks (ns per message): `flow-unix.folded`, "
			"`flow-tcp.folded`.\n", bp.f[PG_UNIX]->sender.comm, bp.f[PG_UNIX]->receiver.comm);
	for (s = 0; s < PG__COUNT; s++) {
		if (!pc->side[s].ran)
			continue;
		fprintf(f, "\n## Client output (%s)%s\n\nIn `client-%s.out`.\n", side_name[s],
			pc->side[s].output_cut ? ", its last 64 KiB" : "", side_name[s]);
	}
	fprintf(f, "\nreport.json holds every number above (docs/PROGRAMS.md).\n");
}

/* ------------------------------------------------------------------ the action */

/* The files of the --out directory; a client's output is PG_FILE_CLIENT + its side, the
 * busiest pair's flame graph PG_FILE_SVG + side, its folded stacks PG_FILE_FOLDED + side. */
enum pg_file { PG_FILE_MD, PG_FILE_JSON, PG_FILE_CLIENT, PG_FILE_SVG = PG_FILE_CLIENT + PG__COUNT,
	       PG_FILE_FOLDED = PG_FILE_SVG + PG__COUNT };

static int pg_file_write(FILE *f, const void *ctx, int what)
{
	const struct program_compare *pc = ctx;
	struct flow_pair bp;
	const struct flow *const *fl = bp.f;

	if (what == PG_FILE_MD) {
		programs_md(pc, f);
	} else if (what == PG_FILE_JSON) {
		programs_json_write(pc, f);
	} else if (what < PG_FILE_SVG) {
		fwrite(pc->side[what - PG_FILE_CLIENT].output, 1,
		       pc->side[what - PG_FILE_CLIENT].output_len, f);
	} else if (programs_busiest_pair(pc, &bp) && what < PG_FILE_FOLDED) {
		/* the two runs on one scale, as --compare draws UDS and TCP */
		trace_svg_write(&pc->side[what - PG_FILE_SVG].run, fl[what - PG_FILE_SVG],
				trace_svg_scale_of(MAX(fl[PG_UNIX]->mean, fl[PG_TCP]->mean)), f);
	} else if (programs_busiest_pair(pc, &bp)) {
		trace_flow_folded(fl[what - PG_FILE_FOLDED], f);
	}
	return 0;
}

/* Through out_set: the manifest lets a rerun (or another action's run) in the same directory
 * replace exactly its own files, e.g. a client that did not run this time keeps no old output. */
static int write_out(const struct program_compare *pc, struct outdir *od)
{
	struct out_set *set = out_set_begin(od);
	struct flow_pair bp;
	char name[32];
	int err, e, s;

	if (!set)
		return -ENOMEM;
	err = out_set_write(set, "report.md", pg_file_write, pc, PG_FILE_MD);
	if (!err)
		err = out_set_write(set, "report.json", pg_file_write, pc, PG_FILE_JSON);
	for (s = 0; s < PG__COUNT && !err; s++)
		if (pc->side[s].ran)
			err = out_set_write(set, s == PG_UNIX ? "client-unix.out" : "client-tcp.out",
					    pg_file_write, pc, PG_FILE_CLIENT + s);
	for (s = 0; s < PG__COUNT && !err && programs_busiest_pair(pc, &bp); s++) {
		snprintf(name, sizeof(name), "flow-%s.svg", side_name[s]);
		err = out_set_write(set, name, pg_file_write, pc, PG_FILE_SVG + s);
		snprintf(name, sizeof(name), "flow-%s.folded", side_name[s]);
		err = err ? err : out_set_write(set, name, pg_file_write, pc, PG_FILE_FOLDED + s);
	}
	e = out_set_end(set);
	return err ? err : e;
}

static int write_outputs(const struct program_compare *pc, const char *json_path,
			 struct outdir *od)
{
	struct outfile of;
	int err = 0, e;

	if (!json_path || strcmp(json_path, "-")) {
		programs_text(pc, stdout);
		err = stdout_flush_report();
	}
	if (json_path) {
		e = outfile_begin(&of, "--json", json_path);
		if (!e) {
			programs_json_write(pc, of.f);
			e = outfile_commit(&of, 0);
		}
		err = err ? err : e;
	}
	if (od->fd >= 0 && (e = write_out(pc, od)))
		err = err ? err : e;
	return err;
}

int programs_main(const struct programs_opts *o, const char *json_path, const char *out_dir,
		  int verbose)
{
	struct outdir od = { .fd = -1 };
	struct program_compare pc;
	int err, e;

	if ((err = privileges_check("--compare of programs (it traces them)", PRIVILEGES_SETCAP)))
		return err;
	/* your programs' runs are traced too: the same one-at-a-time rule as --compare's */
	if ((err = compare_lock()))
		return err;
	if (json_path && (err = outfile_check("--json", json_path)))
		return err;
	if (out_dir && (err = outdir_open(&od, "--out", out_dir)))
		return err;
	err = programs_run(&pc, o, verbose);
	if (!err)	/* what the TCP run alone says of unix, beside what unix measured */
		predict_if_unix(&pc.side[PG_TCP].run, o->if_unix, ATTACH_AUTO, verbose);
	/* an interrupted run or a failed client: the report of what ran, statuses included */
	if (!err || pc.side[PG_UNIX].ran || pc.side[PG_TCP].ran) {
		if (err)
			say_error("%s; the report of what ran follows",
				err == -EINTR ? "interrupted" : "the run failed (above)");
		e = write_outputs(&pc, json_path, &od);
		err = err ? err : e;
	}
	if (od.fd >= 0)
		outdir_close(&od, true);
	programs_free(&pc);
	return err;
}
