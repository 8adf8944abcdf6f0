// SPDX-License-Identifier: GPL-2.0
/* user/report_{folded,svg,bars,md}.c on synthetic comparisons: grammar, sums, edge cases. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_common.h"
#include "reports.h"
#include "unit.h"
#include "util.h"

/* ---- synthetic data: the stage model's numbers from KERNEL.md, roughly ---- */

static const struct {
	const char *name;
	double unix_ns, tcp_ns;	/* < 0: stage absent on that transport */
} model[] = {
	{ "send;syscall", 180, 185 },
	{ "send;sock", 550, 190 },
	{ "send;tcp_ip_out", -1, 650 },
	{ "send;dev_xmit", -1, 250 },
	{ "rx_softirq;backlog", -1, 200 },
	{ "rx_softirq;ip_tcp_in", -1, 450 },
	{ "deliver;enqueue_wakeup", 300, 500 },
	{ "send;return", 250, 310 },
	{ "sched;wait_cpu", 900, 880 },
	{ "recv;copy", 350, 400 },
	{ "recv;return", 300, 350 },
};

static void add_stage(struct transport_result *tr, const char *name, double ns)
{
	struct trace_result *r = &tr->trace;
	struct stage_stat *s = &r->stages[r->n_stages++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->ns_per_msg = ns;
	s->corrected_ns_per_msg = ns > 40 ? ns - 40 : 0;
	s->count = 20000;
	s->p50_ns = (uint64_t)ns;
	s->p99_ns = (uint64_t)ns * 4;
	r->stage_sum_ns += ns;
	r->corrected_sum_ns += s->corrected_ns_per_msg;
}

static void fill_transport(struct transport_result *tr, int t, double scale, bool func)
{
	struct trace_result *r = &tr->trace;
	size_t i;

	r->valid = true;
	r->messages = 20000;
	tr->untraced.count = 20000;
	tr->untraced.has_latency = true;
	tr->untraced.latency = (struct wl_latency){ .p50 = t ? 3900 : 2700, .p90 = 4200,
						    .p99 = 8000, .mean = t ? 4000 : 2800 };
	for (i = 0; i < ARRAY_SIZE(model); i++) {
		double ns = (t ? model[i].tcp_ns : model[i].unix_ns) * scale;

		if (ns < 0)
			continue;
		if (func && !strcmp(model[i].name, "send;sock")) {
			add_stage(tr, "send;sock", ns * 0.2);
			add_stage(tr, t ? "send;sock;tcp_sendmsg_locked" :
				  "send;sock;unix_stream_sendmsg", ns * 0.5);
			add_stage(tr, "send;sock;skb_copy_datagram_from_iter", ns * 0.3);
			continue;
		}
		add_stage(tr, model[i].name, ns);
	}
	r->latency_ns = r->stage_sum_ns / 0.97;
	r->coverage = 0.97;
	r->overhead_ns = 900;
	r->overhead_pct = 30;
	r->probe_hits_per_msg = t ? 24 : 12;
}

static struct comparison *synth(int n_pairs, bool with_unix, bool with_tcp, bool func)
{
	struct comparison *c = calloc(1, sizeof(*c));
	int i;

	c->pairs = calloc(n_pairs, sizeof(*c->pairs));
	c->n_pairs = n_pairs;
	c->attach_mode = func ? "fentry" : "tracepoint";
	c->attach_reason = "synthetic test data";
	c->stage_granularity = func ? "function" : "tracepoint";
	c->probe_cost_ns = 40;
	c->n_cpus = 2;
	snprintf(c->cpu_model, sizeof(c->cpu_model), "Test CPU @ 1 GHz");
	for (i = 0; i < n_pairs; i++) {
		struct pair_result *pr = &c->pairs[i];

		pr->mode = i % 2 ? WL_STREAM : WL_PINGPONG;
		pr->msg_size = i < 2 ? 64 : 4096;
		pr->place = CPU_SAME;
		pr->tr[TR_UNIX].cfg.transport = TR_UNIX;
		pr->tr[TR_TCP].cfg.transport = TR_TCP;
		if (with_unix)
			fill_transport(&pr->tr[TR_UNIX], TR_UNIX, 1 + i, func);
		if (with_tcp)
			fill_transport(&pr->tr[TR_TCP], TR_TCP, 1 + i, func);
	}
	return c;
}

static void synth_free(struct comparison *c)
{
	free(c->pairs);
	free(c);
}

/* Run a writer into a string. */
#define CAPTURE(buf, len, call)							\
	do {									\
		FILE *cap_f = open_memstream(&(buf), &(len));			\
		REQUIRE(cap_f);							\
		call;								\
		fclose(cap_f);							\
	} while (0)

/* Every line "frame(;frame)* <integer>", frames non-empty, no whitespace. */
static int folded_grammar_ok(const char *s, int *lines)
{
	const char *p = s;

	*lines = 0;
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		const char *q;

		if (!nl)
			return 0;	/* every line ends in \n */
		sp = memchr(p, ' ', nl - p);
		if (!sp || sp == p || sp + 1 == nl)
			return 0;
		for (q = p; q < sp; q++)
			if (*q == '\t' || (*q == ';' && (q == p || q[-1] == ';' || q + 1 == sp)))
				return 0;
		for (q = sp + 1; q < nl; q++)
			if (*q < '0' || *q > '9')
				return 0;
		(*lines)++;
		p = nl + 1;
	}
	return 1;
}

/* Sum of the weights of lines starting with prefix. */
static long long folded_sum(const char *s, const char *prefix)
{
	long long sum = 0;
	const char *p = s;

	while (*p) {
		const char *nl = strchr(p, '\n'), *sp = memchr(p, ' ', nl - p);

		if (!strncmp(p, prefix, strlen(prefix)))
			sum += atoll(sp + 1);
		p = nl + 1;
	}
	return sum;
}

static int count_str(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* ---- folded ---- */

TEST(reports_folded_grammar_and_sums)
{
	struct comparison *c = synth(1, true, true, false);
	char *buf = NULL;
	size_t len = 0;
	int lines, t;

	CAPTURE(buf, len, CHECK_INT(folded_write(c, -1, false, cap_f), 18));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK_INT(lines, 18);
	CHECK(strstr(buf, "unix;send;sock 550\n") != NULL);
	CHECK(strstr(buf, "tcp;rx_softirq;ip_tcp_in 450\n") != NULL);
	for (t = 0; t < TR__COUNT; t++) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "%s;", transport_names[t]);
		CHECK_DBL((double)folded_sum(buf, prefix), c->pairs[0].tr[t].trace.stage_sum_ns,
			  0.5 * c->pairs[0].tr[t].trace.n_stages);
	}
	free(buf);
	synth_free(c);
}

TEST(reports_folded_one_transport_file_has_no_transport_frame)
{
	struct comparison *c = synth(1, true, true, false);
	char *buf = NULL;
	size_t len = 0;
	int lines;

	CAPTURE(buf, len, folded_write(c, TR_TCP, false, cap_f));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK_INT(lines, 11);
	CHECK(!strncmp(buf, "send;syscall 185\n", 17));
	CHECK(strstr(buf, "tcp;") == NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_folded_several_pairs_get_a_run_frame)
{
	struct comparison *c = synth(3, true, true, false);
	char *buf = NULL;
	size_t len = 0;
	int lines;

	c->pairs[2].place = CPU_SPLIT;
	CAPTURE(buf, len, folded_write(c, -1, true, cap_f));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK_INT(lines, 3 * 18);
	CHECK(strstr(buf, "pingpong_64B_cpu-same;unix;send;sock 550\n") != NULL);
	CHECK(strstr(buf, "stream_64B_cpu-same;tcp;send;sock 380\n") != NULL);
	CHECK(strstr(buf, "pingpong_4096B_cpu-split;tcp;send;sock 570\n") != NULL);
	CHECK_INT(folded_sum(buf, "stream_64B_cpu-same;unix;"),
		  llround(c->pairs[1].tr[TR_UNIX].trace.stage_sum_ns));
	free(buf);
	synth_free(c);
}

TEST(reports_folded_rounds_and_drops_zero_width_stages)
{
	struct comparison *c = synth(1, true, true, false);
	struct trace_result *r = &c->pairs[0].tr[TR_UNIX].trace;
	char *buf = NULL;
	size_t len = 0;
	int lines;

	r->stages[0].ns_per_msg = 0.4;		/* rounds to 0: left out */
	r->stages[1].ns_per_msg = 549.5;	/* rounds half away from zero */
	r->stages[2].ns_per_msg = 0;
	r->stages[3].ns_per_msg = -3;		/* never negative weights */
	CAPTURE(buf, len, folded_write(c, TR_UNIX, false, cap_f));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK_INT(lines, 7 - 3);
	CHECK(strstr(buf, "send;sock 550\n") != NULL);
	CHECK(strstr(buf, "send;syscall") == NULL);
	CHECK(strstr(buf, " 0\n") == NULL);
	CHECK(strstr(buf, "-1") == NULL);	/* no negative figure */
	free(buf);
	synth_free(c);
}

TEST(reports_folded_function_level_and_odd_names)
{
	struct comparison *c = synth(1, true, true, true);
	struct trace_result *r = &c->pairs[0].tr[TR_TCP].trace;
	char *buf = NULL;
	size_t len = 0;
	int lines;

	/* whitespace and control characters would break the grammar: replaced by '_' */
	snprintf(r->stages[r->n_stages - 1].name, STAGE_NAME_LEN, "recv;return;odd name\tx\001");
	CAPTURE(buf, len, folded_write(c, -1, false, cap_f));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK(strstr(buf, "tcp;send;sock;tcp_sendmsg_locked 95\n") != NULL);
	CHECK(strstr(buf, "unix;send;sock;unix_stream_sendmsg 275\n") != NULL);
	CHECK(strstr(buf, "tcp;recv;return;odd_name_x_ 350\n") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_folded_untraced_writes_nothing)
{
	struct comparison *c = synth(1, false, false, false);
	char path[] = "/tmp/udsprobe-test-XXXXXX";
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	close(fd);
	unlink(path);
	c->attach_mode = NULL;
	CHECK(!comparison_has_stages(c));
	CHECK_INT(report_folded(c, path), -ENODATA);
	CHECK(access(path, F_OK) != 0);		/* no empty file left behind */
	CHECK_INT(report_svg(c, path), -ENODATA);
	CHECK(access(path, F_OK) != 0);
	CHECK(strstr(no_stages_reason(c), "--no-trace") != NULL);
	synth_free(c);
}

/* ---- the stage tree ---- */

TEST(reports_stree_merges_orders_and_sums_parents)
{
	struct comparison *c = synth(1, true, true, true);
	struct stree *t = calloc(1, sizeof(*t));
	int g[64], n, k, i;

	stree_build(&c->pairs[0], false, t);
	CHECK(t->has[TR_UNIX] && t->has[TR_TCP]);
	CHECK_INT(t->max_depth, 3);
	k = stree_find(t, "send;sock");
	REQUIRE(k >= 0);
	CHECK_DBL(t->node[k].self[TR_TCP], 38, 1e-9);
	CHECK_DBL(t->node[k].total[TR_TCP], 190, 1e-9);
	CHECK_DBL(t->node[k].total[TR_UNIX], 550, 1e-9);
	k = stree_find(t, "send");
	CHECK_DBL(t->node[k].total[TR_UNIX], 180 + 550 + 250, 1e-9);
	CHECK_DBL(t->sum[TR_TCP], c->pairs[0].tr[TR_TCP].trace.stage_sum_ns, 1e-6);
	/* both functions under send;sock, whichever transport has them */
	CHECK(stree_find(t, "send;sock;unix_stream_sendmsg") > stree_find(t, "send;sock"));
	CHECK(stree_find(t, "send;sock;tcp_sendmsg_locked") > stree_find(t, "send;sock"));
	/* groups: the 11 stage-model rows, in message order */
	n = stree_groups(t, g, 64);
	CHECK_INT(n, 11);
	for (i = 0; i < n && i < (int)ARRAY_SIZE(model); i++)
		CHECK_STR(t->node[g[i]].path, model[i].name);
	free(t);
	synth_free(c);
}

TEST(reports_stree_unix_only_stage_lands_after_its_predecessor)
{
	struct comparison *c = synth(1, true, true, false);
	struct transport_result *u = &c->pairs[0].tr[TR_UNIX];
	struct stree *t = calloc(1, sizeof(*t));
	int g[64], n;

	/* a stage only unix has, between send;sock and deliver */
	memmove(&u->trace.stages[3], &u->trace.stages[2],
		(u->trace.n_stages - 2) * sizeof(u->trace.stages[0]));
	snprintf(u->trace.stages[2].name, STAGE_NAME_LEN, "send;unix_peer");
	u->trace.stages[2].ns_per_msg = 10;
	u->trace.n_stages++;
	stree_build(&c->pairs[0], false, t);
	n = stree_groups(t, g, 64);
	CHECK_INT(n, 12);
	CHECK_STR(t->node[g[1]].path, "send;sock");
	CHECK_STR(t->node[g[2]].path, "send;unix_peer");
	CHECK_STR(t->node[g[3]].path, "send;tcp_ip_out");
	free(t);
	synth_free(c);
}

TEST(reports_stree_top_level_unattributed_is_a_group)
{
	struct comparison *c = synth(1, true, true, false);
	struct stree *t = calloc(1, sizeof(*t));
	int g[64], n;

	add_stage(&c->pairs[0].tr[TR_TCP], "unattributed", 70);
	stree_build(&c->pairs[0], false, t);
	n = stree_groups(t, g, 64);
	CHECK_INT(n, 12);
	CHECK_STR(t->node[g[n - 1]].path, "unattributed");
	free(t);
	synth_free(c);
}

/* ---- SVG ---- */

TEST(reports_svg_names_every_stage_and_is_well_formed)
{
	struct comparison *c = synth(1, true, true, true);
	char *buf = NULL;
	size_t len = 0;
	int t, s;

	CAPTURE(buf, len, CHECK_INT(svg_write(c, -1, SVG_BOTH, cap_f), 0));
	CHECK(!strncmp(buf, "<?xml", 5));
	CHECK(strstr(buf, "</svg>\n") != NULL);
	CHECK_INT(count_str(buf, "<g"), count_str(buf, "</g>"));
	CHECK_INT(count_str(buf, "<text"), count_str(buf, "</text>"));
	CHECK_INT(count_str(buf, "<title>"), count_str(buf, "</title>"));
	for (t = 0; t < TR__COUNT; t++)
		for (s = 0; s < c->pairs[0].tr[t].trace.n_stages; s++)
			CHECK(strstr(buf, c->pairs[0].tr[t].trace.stages[s].name) != NULL);
	CHECK(strstr(buf, "TCP \xe2\x88\x92 UDS") != NULL);	/* the diff view */
	CHECK(strstr(buf, "<script>") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_svg_one_transport_only)
{
	struct comparison *c = synth(1, true, false, false);
	char *buf = NULL;
	size_t len = 0;

	CAPTURE(buf, len, CHECK_INT(svg_write(c, -1, SVG_BOTH, cap_f), 0));
	CHECK(strstr(buf, "no stage data for TCP") != NULL);
	CHECK(strstr(buf, "needs stage data for both transports") != NULL);
	CHECK(strstr(buf, "send;sock") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_svg_escapes_and_survives_long_names)
{
	struct comparison *c = synth(1, true, true, false);
	struct trace_result *r = &c->pairs[0].tr[TR_TCP].trace;
	char *buf = NULL, name[STAGE_NAME_LEN];
	size_t len = 0;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	memcpy(name, "recv;a<b>&\"c\";", 14);
	snprintf(r->stages[r->n_stages - 1].name, STAGE_NAME_LEN, "%s", name);
	r->stages[0].ns_per_msg = 0;	/* zero-width: no frame, no crash */
	CAPTURE(buf, len, CHECK_INT(svg_write(c, -1, SVG_BOTH, cap_f), 0));
	CHECK(strstr(buf, "a&lt;b&gt;&amp;&quot;c&quot;") != NULL);
	CHECK(strstr(buf, "a<b>") == NULL);
	CHECK(strstr(buf, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..") != NULL ||
	      strstr(buf, "..</text>") != NULL);	/* cut to fit somewhere */
	free(buf);
	synth_free(c);
}

TEST(reports_svg_untraced_says_so)
{
	struct comparison *c = synth(2, false, false, false);
	char *buf = NULL;
	size_t len = 0;

	c->attach_mode = NULL;
	CAPTURE(buf, len, CHECK_INT(svg_write(c, -1, SVG_BOTH, cap_f), -ENODATA));
	CHECK(strstr(buf, "No stages to draw") != NULL);
	CHECK(strstr(buf, "--no-trace") != NULL);
	CHECK(strstr(buf, "</svg>") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_svg_single_pair_selection)
{
	struct comparison *c = synth(2, true, true, false);
	char *buf = NULL;
	size_t len = 0;

	CAPTURE(buf, len, svg_write(c, 1, SVG_DIFF, cap_f));
	CHECK(strstr(buf, "stream, 64-byte") != NULL);
	CHECK(strstr(buf, "pingpong, 64-byte") == NULL);
	CHECK(strstr(buf, "<script>") == NULL);	/* no frames to zoom */
	free(buf);
	synth_free(c);
}

/* ---- terminal bars ---- */

TEST(reports_bars_plain_ascii_on_one_scale)
{
	struct comparison *c = synth(1, true, true, false);
	char *buf = NULL, *u, *t;
	size_t len = 0, i;

	CAPTURE(buf, len, report_bars(c, cap_f, false, 60));
	for (i = 0; i < len; i++)
		CHECK((unsigned char)buf[i] < 0x80 && buf[i] != '\033');
	u = strstr(buf, "  unix [");
	t = strstr(buf, "  tcp  [");
	REQUIRE(u && t);
	/* tcp is the longer: 60 columns; unix 2830/4365 of it */
	CHECK_INT(strchr(t, ']') - t - 8, 60);
	CHECK_INT(strchr(u, ']') - u - 8, llround(60 * 2830.0 / 4365));
	CHECK(strstr(buf, "1.54x unix") != NULL);
	CHECK(strstr(buf, "a send;syscall") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_bars_colour_and_missing_transport)
{
	struct comparison *c = synth(1, false, true, false);
	char *buf = NULL;
	size_t len = 0;

	CAPTURE(buf, len, report_bars(c, cap_f, true, 40));
	CHECK(strstr(buf, "\033[30;48;5;") != NULL);
	CHECK(strstr(buf, "\033[0m") != NULL);
	CHECK(strstr(buf, "unix (no stage data)") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_bars_no_color_env)
{
	setenv("NO_COLOR", "1", 1);
	CHECK(!bars_use_color(stdout));
	unsetenv("NO_COLOR");
	setenv("TERM", "dumb", 1);
	CHECK(!bars_use_color(stdout));
}

/* ---- report.md and --out ---- */

TEST(reports_md_has_tables_and_explanation)
{
	struct comparison *c = synth(1, true, true, false);
	char *buf = NULL;
	size_t len = 0;

	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "| stage | what happens there | UDS | TCP | TCP \xe2\x88\x92 UDS |") != NULL);
	CHECK(strstr(buf, "| `send;tcp_ip_out` |") != NULL);
	CHECK(strstr(buf, "| **all stages** |") != NULL);
	CHECK(strstr(buf, "## Environment") != NULL);
	CHECK(strstr(buf, "| attach mode | **tracepoint**: synthetic test data |") != NULL);
	CHECK(strstr(buf, "### Why") != NULL);
	CHECK(strstr(buf, "![UDS and TCP stage breakdown on one scale](flame-pingpong-64B-same.svg)"));
	CHECK(strstr(buf, "| one-way latency p50 | 2.70 \xc2\xb5s | 3.90 \xc2\xb5s | UDS 1.44\xc3\x97 "
		      "faster |") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_md_untraced)
{
	struct comparison *c = synth(1, false, false, false);
	char *buf = NULL;
	size_t len = 0;

	c->attach_mode = NULL;
	c->pairs[0].tr[TR_UNIX].untraced.has_latency = true;
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "No stage breakdown in this report") != NULL);
	CHECK(strstr(buf, "| measured without tracing | UDS | TCP | comparison |") != NULL);
	CHECK(strstr(buf, ".svg") == NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_out_writes_the_directory)
{
	static const char *const files[] = {
		"report.md", "report.json", "stages.folded", "unix.folded", "tcp.folded",
		"udsprobe.svg", "flame-pingpong-64B-same.svg", "diff-pingpong-64B-same.svg",
		"flame-stream-64B-same.svg", "diff-stream-64B-same.svg",
	};
	struct comparison *c = synth(2, true, true, false);
	char dir[] = "/tmp/udsprobe-out-XXXXXX", path[512], sub[300];
	size_t i;

	REQUIRE(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/report", dir);
	CHECK_INT(report_out(c, sub), 0);
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", sub, files[i]);
		CHECK(!stat(path, &st) && st.st_size > 0);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/.udsprobe-manifest", sub);
	CHECK(access(path, F_OK) == 0);
	unlink(path);
	CHECK(rmdir(sub) == 0);		/* nothing else left, no temporary file */
	/* a file where the directory should be */
	snprintf(path, sizeof(path), "%s/file", dir);
	fclose(fopen(path, "w"));
	CHECK(report_out(c, path) < 0);
	unlink(path);
	rmdir(dir);
	synth_free(c);
}

/* ---- what tracepoint mode really reports: merged boundaries, per-connection stages ---- */

/* Stage names as udsprobe's tracepoint mode reports them on 6.18 (unix lacks the probe
 * between syscall and sock, tcp the one between sock and tcp_ip_out). */
static void real_names(struct comparison *c)
{
	static const struct {
		const char *name;
		double u, t;
	} r[] = {
		{ "send;syscall+sock", 300, -1 }, { "send;syscall", -1, 170 },
		{ "send;sock+tcp_ip_out", -1, 500 }, { "send;dev_xmit", -1, 360 },
		{ "deliver;enqueue_wakeup", 110, 300 }, { "recv;copy", 430, 390 },
		{ "conn;connect", 20000, 25000 },
	};
	int t;
	size_t i;

	for (t = 0; t < TR__COUNT; t++) {
		struct transport_result *tr = &c->pairs[0].tr[t];

		memset(&tr->trace.stages, 0, sizeof(tr->trace.stages));
		tr->trace.n_stages = 0;
		tr->trace.stage_sum_ns = 0;
		for (i = 0; i < ARRAY_SIZE(r); i++) {
			double v = t ? r[i].t : r[i].u;

			if (v < 0)
				continue;
			if (!strncmp(r[i].name, "conn;", 5)) {
				struct stage_stat *s = &tr->trace.stages[tr->trace.n_stages++];

				snprintf(s->name, sizeof(s->name), "%s", r[i].name);
				s->ns_per_msg = v;
				s->extra = true;	/* outside the message sum */
				continue;
			}
			add_stage(tr, r[i].name, v);
		}
	}
}

TEST(reports_rows_join_stages_the_transports_split_differently)
{
	struct comparison *c = synth(1, true, true, false);
	struct stree *t = calloc(1, sizeof(*t));
	struct srow rows[16];
	int n;

	real_names(c);
	stree_build(&c->pairs[0], false, t);
	CHECK_DBL(t->sum[TR_UNIX], 300 + 110 + 430, 1e-9);	/* conn;connect left out */
	CHECK_DBL(t->sum[TR_TCP], 170 + 500 + 360 + 300 + 390, 1e-9);
	CHECK(stree_find(t, "conn") < 0);
	n = stree_rows(t, rows, 16);
	REQUIRE(n == 4);
	CHECK_STR(rows[0].name, "send;syscall+sock+tcp_ip_out");
	CHECK_INT(rows[0].n_members, 3);
	CHECK_DBL(rows[0].v[TR_UNIX], 300, 1e-9);
	CHECK_DBL(rows[0].v[TR_TCP], 670, 1e-9);
	CHECK(rows[0].has[TR_UNIX] && rows[0].has[TR_TCP]);
	CHECK_STR(rows[1].name, "send;dev_xmit");
	CHECK(!rows[1].has[TR_UNIX] && rows[1].has[TR_TCP]);
	CHECK_STR(rows[2].name, "deliver;enqueue_wakeup");
	CHECK_STR(rows[3].name, "recv;copy");
	free(t);
	synth_free(c);
}

TEST(reports_per_connection_stages_stay_out_of_folded_and_bars)
{
	struct comparison *c = synth(1, true, true, false);
	char *buf = NULL;
	size_t len = 0;
	int lines;

	real_names(c);
	CAPTURE(buf, len, folded_write(c, -1, false, cap_f));
	CHECK(folded_grammar_ok(buf, &lines));
	CHECK(strstr(buf, "conn;") == NULL);
	CHECK_INT(folded_sum(buf, "tcp;"), 170 + 500 + 360 + 300 + 390);
	free(buf);
	buf = NULL;
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "| `conn;connect` |") != NULL);
	CHECK(strstr(buf, "| `send;syscall+sock+tcp_ip_out` |") != NULL);
	CHECK(strstr(buf, "| \xe2\x86\xb3 `send;syscall+sock` |") != NULL);
	free(buf);
	buf = NULL;
	CAPTURE(buf, len, svg_write(c, -1, SVG_BOTH, cap_f));
	CHECK(strstr(buf, "per connection (not in the bars): conn;connect") != NULL);
	CHECK(strstr(buf, ">send;syscall+sock+tcp_ip_out</text>") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_pictures_use_corrected_times_when_the_probe_cost_is_known)
{
	struct comparison *c = synth(1, true, true, false);
	struct stree *t = calloc(1, sizeof(*t));
	char *buf = NULL;
	size_t len = 0;

	CHECK(show_corrected(c));
	stree_build(&c->pairs[0], true, t);
	CHECK(t->corrected);
	CHECK_DBL(t->sum[TR_UNIX], 2830 - 7 * 40, 1e-9);	/* synth: corrected = ns - 40 */
	CHECK_DBL(t->raw_sum[TR_UNIX], 2830, 1e-9);
	CHECK_DBL(t->node[stree_find(t, "send")].raw_total[TR_TCP], 185 + 190 + 650 + 250 + 310,
		  1e-9);
	CAPTURE(buf, len, svg_write(c, -1, SVG_BOTH, cap_f));
	CHECK(strstr(buf, "probe cost removed") != NULL);
	CHECK(strstr(buf, "2.55 \xc2\xb5s per message") != NULL);
	CHECK(strstr(buf, "2.83 \xc2\xb5s as traced") != NULL);
	free(buf);
	buf = NULL;
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "| TCP \xe2\x88\x92 UDS | UDS traced | TCP traced |") != NULL);
	CHECK(strstr(buf, "| `send;sock` | protocol sendmsg") != NULL);
	CHECK(strstr(buf, "| 510 ns | 150 ns | \xe2\x88\x92" "360 ns | 550 ns | 190 ns |\n") != NULL);
	free(buf);
	buf = NULL;
	CAPTURE(buf, len, report_bars(c, cap_f, false, 60));
	CHECK(strstr(buf, "probe cost removed") != NULL);
	CHECK(strstr(buf, "2.55 us") != NULL);
	free(buf);
	/* untraced or uncalibrated: as traced */
	c->probe_cost_ns = 0;
	CHECK(!show_corrected(c));
	free(t);
	synth_free(c);
}

TEST(reports_caveat_when_the_run_is_not_fit_for_a_slide)
{
	struct comparison *c = synth(1, true, true, false);
	char buf[240], *out = NULL;
	size_t len = 0;

	CHECK_STR(pair_caveat(c, &c->pairs[0], buf, sizeof(buf)), "");
	c->pairs[0].tr[TR_TCP].trace.stages[2].corrected_ns_per_msg = 0;	/* clamped */
	CHECK(strstr(pair_caveat(c, &c->pairs[0], buf, sizeof(buf)), "1 stage came out below zero"));
	c->pairs[0].tr[TR_UNIX].trace.overhead_pct = 323;
	CHECK(strstr(pair_caveat(c, &c->pairs[0], buf, sizeof(buf)), "(+323%)"));
	CAPTURE(out, len, svg_write(c, -1, SVG_BOTH, cap_f));
	CHECK(strstr(out, "Caution: the probes more than doubled") != NULL);
	free(out);
	out = NULL;
	CAPTURE(out, len, md_write(c, cap_f));
	CHECK(strstr(out, "> **Caution:** the probes more than doubled") != NULL);
	free(out);
	synth_free(c);
}

/* Issue 9 item 5: two durations formatted into one buffer inside one call printed the probe
 * cost as "a difference of 44 ns". The sentence must carry the corrected sums' difference. */
TEST(reports_md_corrected_difference_is_the_difference)
{
	struct comparison *c = synth(1, true, true, false);
	struct stree *t = calloc(1, sizeof(*t));
	char want[96], d[32], *buf = NULL;
	size_t len = 0;

	REQUIRE(t);
	stree_build(&c->pairs[0], true, t);
	snprintf(want, sizeof(want), "a difference of **%s**",
		 fmt_dur(fabs(t->sum[TR_TCP] - t->sum[TR_UNIX]), true, d, sizeof(d)));
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, want) != NULL);
	CHECK(strstr(buf, "a difference of **40 ns**") == NULL);	/* the probe cost */
	CHECK(strstr(buf, "Every probe costs about 40 ns") != NULL);
	free(buf);
	free(t);
	synth_free(c);
}

TEST(reports_place_words_one_wording)
{
	struct comparison *c = synth(1, true, true, false);
	struct pair_result *pr = &c->pairs[0];
	char buf[96];

	pr->tr[TR_UNIX].untraced.client_cpu = 1;
	pr->tr[TR_UNIX].untraced.server_cpu = 0;
	CHECK_STR(place_words(pr, true, buf, sizeof(buf)), "client and server pinned to one CPU (CPU1)");
	CHECK_STR(place_words(pr, false, buf, sizeof(buf)), "client and server pinned to one CPU");
	pr->place = CPU_SPLIT;
	CHECK_STR(place_words(pr, true, buf, sizeof(buf)), "client on CPU1, server on CPU0");
	CHECK_STR(place_words(pr, false, buf, sizeof(buf)), "client and server on different CPUs");
	pr->place = CPU_NONE;
	CHECK_STR(place_words(pr, true, buf, sizeof(buf)), "CPU placement left to the scheduler");
	CHECK_STR(place_words(pr, false, buf, sizeof(buf)), "CPU placement left to the scheduler");
	pr->place = CPU_SAME;
	CHECK_STR(place_words(pr, true, buf, 11), "client and");	/* truncates */
	synth_free(c);
}

/* Text and report.md render the same rows of the workload's numbers, in the same order. */
TEST(reports_metric_rows_per_mode)
{
	struct wl_result r = { .latency = { .p50 = 1, .p90 = 2, .p99 = 3, .mean = 4 },
			       .msgs_per_sec = 5, .bytes_per_sec = 6, .conns_per_sec = 7 };
	const struct metric_row *m;
	int n, i;

	CHECK_INT(metric_rows(WL_PINGPONG, &m), 4);
	for (i = 0; i < 4; i++) {
		CHECK(!m[i].rate);
		CHECK_DBL(m[i].value(&r), i + 1, 0);
	}
	CHECK_STR(m[0].label, "one-way p50");
	CHECK_STR(m[3].md_label, "one-way latency mean");
	n = metric_rows(WL_STREAM, &m);
	REQUIRE(n == 2);
	CHECK(m[0].rate && m[1].rate);
	CHECK_DBL(m[1].value(&r), 6, 0);
	CHECK_STR(m[1].md_unit, "B");
	n = metric_rows(WL_CONNECT, &m);
	REQUIRE(n == 3);
	CHECK(m[0].rate && !m[1].rate && !m[2].rate);
	CHECK_DBL(m[0].value(&r), 7, 0);
	CHECK_DBL(m[2].value(&r), 3, 0);
	CHECK_INT(metric_rows(WL__COUNT, &m), 0);
	CHECK(m == NULL);
	CHECK_STR(mode_count_noun(WL_PINGPONG), "round trips");
	CHECK_STR(mode_count_noun(WL_CONNECT), "connections");
}

TEST(reports_trace_stage_finds_by_name)
{
	struct comparison *c = synth(1, true, true, false);
	const struct trace_result *t = &c->pairs[0].tr[TR_TCP].trace;

	REQUIRE(trace_stage(t, "send;dev_xmit"));
	CHECK_DBL(trace_stage(t, "send;dev_xmit")->ns_per_msg, 250, 0);
	CHECK(trace_stage(&c->pairs[0].tr[TR_UNIX].trace, "send;dev_xmit") == NULL);
	CHECK(trace_stage(t, "send") == NULL);	/* whole names only */
	synth_free(c);
}

/* A traced run faster than its untraced twin is noise, never a negative probe cost. */
TEST(reports_overhead_words_never_negative)
{
	struct trace_result r = { .overhead_ns = -15871, .overhead_pct = -14 };
	char buf[128];

	overhead_words(&r, false, buf, sizeof(buf));
	CHECK(strstr(buf, "within run-to-run noise") != NULL);
	CHECK(strstr(buf, "-1") == NULL);	/* no negative figure */
	CHECK(strstr(buf, "15.9 us faster") != NULL);
	r.overhead_ns = 3100;
	r.overhead_pct = 49;
	CHECK_STR(overhead_words(&r, false, buf, sizeof(buf)), "3.10 us (+49%)");
}

/* The size curve: four sizes where the transports cross over, both modes, traced. */
TEST(reports_sweep_svg_panels_points_and_crossing)
{
	struct comparison *c = synth(8, true, true, false);
	char *buf = NULL;
	size_t len = 0, circles = 0;
	const char *p;
	FILE *f;
	int i;

	for (i = 0; i < c->n_pairs; i++) {
		struct pair_result *pr = &c->pairs[i];
		uint64_t size = (uint64_t)1 << (6 * (i / 2));	/* 1 B, 64 B, 4 KiB, 256 KiB */

		pr->msg_size = size;
		pr->tr[TR_UNIX].untraced.latency.p50 = 2700 + size / 2;	/* UDS loses at 256 KiB */
		pr->tr[TR_TCP].untraced.latency.p50 = 3900 + size / 4;
		pr->tr[TR_UNIX].untraced.bytes_per_sec = 1e6 * (i + 1);
		pr->tr[TR_TCP].untraced.bytes_per_sec = 0.8e6 * (i + 1);
	}
	f = open_memstream(&buf, &len);
	REQUIRE(f != NULL);
	CHECK_INT(sweep_svg_write(c, f), 0);
	fclose(f);
	if (getenv("UDSPROBE_SWEEP_SVG")) {	/* to look at it: rsvg-convert the file */
		FILE *out = fopen(getenv("UDSPROBE_SWEEP_SVG"), "w");

		if (out) {
			fputs(buf, out);
			fclose(out);
		}
	}
	CHECK(strncmp(buf, "<svg", 4) == 0 && strstr(buf, "</svg>") != NULL);
	for (p = buf; (p = strstr(p, "<circle")); p++)
		circles++;
	/* latency and throughput: 2 transports x 4 sizes; ratio: 4 sizes */
	CHECK_U64(circles, 2 * 4 + 4 + 2 * 4);
	CHECK(strstr(buf, "256 KiB: UDS/TCP = 1.93 (TCP faster)") != NULL);
	CHECK(strstr(buf, "1 B: UDS/TCP = 0.69 (UDS faster)") != NULL);
	CHECK(strstr(buf, "Where a message's time goes") != NULL);
	CHECK(strstr(buf, "UDS, 64 B: send ") != NULL);	/* a composition tooltip */
	free(buf);
	synth_free(c);
}

/* One size is no curve. */
TEST(reports_sweep_svg_needs_two_sizes)
{
	struct comparison *c = synth(2, true, true, false);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	REQUIRE(f != NULL);
	CHECK_INT(sweep_svg_write(c, f), -EINVAL);
	fclose(f);
	free(buf);
	synth_free(c);
}

/* --think LIST: three untraced pingpong runs at 0, 10 us and 1 ms of work per round trip. */
static struct comparison *synth_think(const uint64_t p50[3][TR__COUNT])
{
	static const uint64_t thinks[3] = { 1000000, 0, 10000 };	/* out of order on purpose */
	struct comparison *c = synth(3, false, false, false);
	int i, t;

	c->attach_mode = NULL;
	c->think = true;
	for (i = 0; i < 3; i++) {
		c->pairs[i].mode = WL_PINGPONG;
		c->pairs[i].msg_size = 64;
		for (t = 0; t < TR__COUNT; t++) {
			c->pairs[i].tr[t].cfg.think_ns = thinks[i];
			c->pairs[i].tr[t].untraced.has_latency = true;
			c->pairs[i].tr[t].untraced.latency.p50 = p50[i][t];
		}
	}
	return c;
}

/* The sentence follows the numbers: the least and the most work, whichever way it went. */
TEST(reports_think_curve_sentence_follows_the_numbers)
{
	/* one-way p50, by the pairs' order (1 ms, 0, 10 us), unix then tcp */
	static const uint64_t shrinks[3][TR__COUNT] = { { 505000, 510000 }, { 5000, 8000 }, { 10000, 12000 } };
	static const uint64_t grows[3][TR__COUNT] = { { 250000, 500000 }, { 5000, 8000 }, { 10000, 12000 } };
	struct comparison *c = synth_think(shrinks);
	const struct pair_result *p[MAX_THINKS];
	char *buf;
	size_t len;

	REQUIRE(think_curve(c, p, MAX_THINKS) == 3);
	CHECK(pair_think(p[0]) == 0 && pair_think(p[1]) == 10000 && pair_think(p[2]) == 1000000);
	CHECK_INT(think_points(c), 3);
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "](think.svg)") != NULL);
	/* 1 - 10/16 = 37.5% -> 38; 1 - 1010/1020 = 0.98% -> 1 */
	CHECK(strstr(buf, "with no application work, UDS's round trip is 38% shorter than TCP's "
		      "(10.0 us vs 16.0 us); with 1.00 ms of application work per round trip, it is "
		      "1% shorter (1.01 ms vs 1.02 ms). The advantage shrinks as the application's "
		      "own time grows: TCP's round trip is 6.00 us longer with the least work and "
		      "10.0 us with the most") != NULL);
	free(buf);
	synth_free(c);

	c = synth_think(grows);
	CAPTURE(buf, len, report_text(c, cap_f));
	CHECK(strstr(buf, "it is 50% shorter (500.0 us vs 1.00 ms). Here the advantage did not "
		      "shrink (38% to 50%)") != NULL);
	free(buf);
	synth_free(c);
}

TEST(reports_think_curve_needs_two_think_times)
{
	static const uint64_t p50[3][TR__COUNT] = { { 5000, 8000 }, { 5000, 8000 }, { 5000, 8000 } };
	struct comparison *c = synth_think(p50);
	char *buf;
	size_t len;

	c->n_pairs = 1;		/* one think time: no chart, no sentence */
	CHECK_INT(think_points(c), 1);
	CAPTURE(buf, len, CHECK_INT(think_svg_write(c, cap_f), -EINVAL));
	free(buf);
	CAPTURE(buf, len, md_write(c, cap_f));
	CHECK(strstr(buf, "think.svg") == NULL && strstr(buf, "Across think times") == NULL);
	free(buf);
	c->n_pairs = 3;
	c->think = false;	/* no --think: no curve whatever the pairs say */
	CHECK_INT(think_points(c), 0);
	synth_free(c);
}
