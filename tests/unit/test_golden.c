// SPDX-License-Identifier: GPL-2.0
/*
 * Golden tests: every report writer renders a fixed report.json (tests/unit/golden/NAME.json,
 * loaded back into a struct comparison) and the output must equal the committed golden file
 * byte for byte. Refactors of the writers must keep them equal; an intended change of the
 * output regenerates them and shows up in the diff:
 *
 *   UDSPROBE_UPDATE_GOLDEN=1 .output/unit_tests 'golden_*'    # rewrites the goldens
 *
 * What differs per machine and build (version, kernel release, date) is replaced by
 * @VERSION@, @KERNEL@, @DATE@ before comparing. Run from the repository root (tests/run.sh
 * and make do), or set UDSPROBE_GOLDEN_DIR.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "json_read.h"
#include "report_common.h"
#include "reports.h"
#include "unit.h"
#include "util.h"

static const char *golden_dir(void)
{
	const char *d = getenv("UDSPROBE_GOLDEN_DIR");

	return d && *d ? d : "tests/unit/golden";
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (n + 4096 + 1) * 2);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static int name_index(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 0; s && i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

static void load_latency(const struct jnode *o, struct wl_latency *l)
{
	l->p50 = jnum(o, "p50", 0);
	l->p90 = jnum(o, "p90", 0);
	l->p99 = jnum(o, "p99", 0);
	l->mean = jnum(o, "mean", 0);
}

/* One results[] object into one transport of a pair: what report_json wrote, read back. */
static void load_result(const struct jnode *o, struct pair_result *pr, struct transport_result *x)
{
	const struct jnode *stages = jget(o, "stages"), *s;
	struct trace_result *r = &x->trace;
	struct wl_result *u = &x->untraced;

	x->cfg = (struct wl_config){ .transport = x - pr->tr, .mode = pr->mode,
				     .msg_size = pr->msg_size, .place = pr->place,
				     .think_ns = jnum(o, "think_ns", 0) };
	u->count = jnum(o, "count", 0);
	u->elapsed_ns = jnum(o, "elapsed_ns", 0);
	u->strangers = jnum(o, "strangers", 0);	/* total of both runs, kept on the untraced */
	u->has_latency = jget(o, "latency_ns") != NULL;
	load_latency(jget(o, "latency_ns"), &u->latency);
	u->msgs_per_sec = jnum(o, "msgs_per_sec", 0);
	u->bytes_per_sec = jnum(o, "bytes_per_sec", 0);
	u->conns_per_sec = jnum(o, "conns_per_sec", 0);
	u->client_cpu = jnum(o, "client_cpu", -1);
	u->server_cpu = jnum(o, "server_cpu", -1);
	if (!stages)
		return;
	r->valid = true;
	r->traced.has_latency = u->has_latency;
	load_latency(jget(o, "traced_latency_ns"), &r->traced.latency);
	/* compare.c: the end-to-end span exists for pingpong only */
	r->latency_ns = pr->mode == WL_PINGPONG ? r->traced.latency.mean : 0;
	r->overhead_ns = jnum(o, "overhead_ns", 0);
	r->overhead_pct = jnum(o, "overhead_pct", 0);
	r->coverage = jnum(o, "coverage", 0);
	r->messages = jnum(o, "messages", 0);
	r->stage_sum_ns = jnum(o, "stage_sum_ns", 0);
	r->corrected_sum_ns = jnum(o, "corrected_sum_ns", 0);
	r->probe_hits_per_msg = jnum(o, "probe_hits_per_msg", 0);
	r->misses = jnum(o, "misses", 0);
	r->out_of_order = jnum(o, "out_of_order", 0);
	r->kernel_misses = jnum(o, "kernel_misses", 0);
	r->bulk_messages = jnum(o, "bulk_messages", 0);
	r->recv_calls = jnum(o, "recv_calls", 0);
	r->xmit_calls = jnum(o, "xmit_calls", 0);
	r->syscall_hit_ns = jnum(o, "syscall_hit_ns", 0);
	for (s = stages->child; s && r->n_stages < MAX_STAGES; s = s->next) {
		struct stage_stat *st = &r->stages[r->n_stages++];
		const struct jnode *pc = jget(s, "per_connection");

		snprintf(st->name, sizeof(st->name), "%s", jstr(s, "name"));
		st->ns_per_msg = jnum(s, "ns_per_msg", 0);
		st->corrected_ns_per_msg = jnum(s, "corrected_ns_per_msg", 0);
		st->count = jnum(s, "count", 0);
		st->p50_ns = jnum(s, "p50_ns", 0);
		st->p99_ns = jnum(s, "p99_ns", 0);
		st->extra = pc && pc->boolean;
	}
}

/* report.json -> struct comparison; strings point into *tree (free it after cmp). */
static int load_comparison(const char *path, struct comparison *cmp, struct jnode **tree)
{
	const struct jnode *doc, *res, *o, *cp;
	char *text = slurp(path, NULL);
	int err, n = 0, t;

	memset(cmp, 0, sizeof(*cmp));
	if (!text)
		return -errno;
	err = jparse(text, tree);
	free(text);
	if (err)
		return err;
	doc = *tree;
	cmp->attach_mode = jstr(doc, "attach_mode");
	cmp->attach_reason = jstr(doc, "attach_reason");
	cmp->stage_granularity = jstr(doc, "stage_granularity");
	cmp->probe_cost_ns = jnum(doc, "probe_cost_ns", 0);
	cmp->missing = jstr(doc, "boundaries_missing");
	cmp->attach_ns = jnum(doc, "attach_ns", 0);
	cmp->detach_ns = jnum(doc, "detach_ns", 0);
	cp = jget(doc, "cpu_placement");
	cmp->n_cpus = jnum(cp, "cpus", 0);
	snprintf(cmp->cpu_model, sizeof(cmp->cpu_model), "%s", jstr(cp, "cpu_model"));
	res = jget(doc, "results");
	if (!res)
		return -EINVAL;
	for (o = res->child; o; o = o->next)
		n++;
	cmp->pairs = calloc(n / 2 + 1, sizeof(*cmp->pairs));
	if (!cmp->pairs)
		return -ENOMEM;
	for (o = res->child; o && o->next; o = o->next->next) {
		struct pair_result *pr = &cmp->pairs[cmp->n_pairs++];

		pr->mode = name_index(mode_names, WL__COUNT, jstr(o, "mode"));
		pr->place = name_index(place_names, CPU__COUNT, jstr(o, "cpu"));
		pr->msg_size = jnum(o, "msg_size", 0);
		if ((int)pr->mode < 0 || (int)pr->place < 0)
			return -EINVAL;
		for (t = 0; t < TR__COUNT; t++) {
			const struct jnode *x = t ? o->next : o;

			if (name_index(transport_names, TR__COUNT, jstr(x, "transport")) != t)
				return -EINVAL;	/* results come in unix, tcp pairs */
			load_result(x, pr, &pr->tr[t]);
		}
		cmp->think |= jget(o, "think_ns") != NULL;
	}
	return 0;
}

/* Replace every occurrence of what (if non-empty) by with, in place (malloc'd string). */
static char *replace_all(char *s, const char *what, const char *with)
{
	size_t lw = strlen(what), lr = strlen(with), n = 0;
	char *p, *out, *o;

	if (!lw)
		return s;
	for (p = s; (p = strstr(p, what)); p += lw)
		n++;
	out = malloc(strlen(s) + n * lr + 1);
	if (!out)
		return s;
	for (p = s, o = out; ; ) {
		char *hit = strstr(p, what);
		size_t k = hit ? (size_t)(hit - p) : strlen(p);

		memcpy(o, p, k);
		o += k;
		if (!hit)
			break;
		memcpy(o, with, lr);
		o += lr;
		p = hit + lw;
	}
	*o = 0;
	free(s);
	return out;
}

/*
 * Versions after each prefix ("0.1.0 (git 1fbec38-dirty)") -> "@VERSION@". By shape, not by
 * UDSPROBE_VERSION: make rebuilds only changed objects, so the writers' objects may carry
 * another git describe than this file's.
 */
static char *normalize_version(char *s, const char *prefix)
{
	size_t lp = strlen(prefix);
	char *out = malloc(strlen(s) * 2 + 16), *o = out, *p = s, *hit, *end;

	if (!out)
		return s;
	while ((hit = strstr(p, prefix))) {
		hit += lp;
		memcpy(o, p, hit - p);
		o += hit - p;
		end = hit + strspn(hit, "0123456789.");
		if (end > hit) {
			if (!strncmp(end, " (git ", 6) && strchr(end, ')'))
				end = strchr(end, ')') + 1;
			o += sprintf(o, "@VERSION@");	/* prefix + 1 char became <= 2x */
		}
		p = end;
	}
	strcpy(o, p);
	free(s);
	return out;
}

/* What depends on the build, the machine and the clock, as placeholders. */
static char *normalize(char *s)
{
	char *p, *end;

	s = normalize_version(s, "udsprobe ");
	s = normalize_version(s, "\"version\": \"");
	s = replace_all(s, kernel_release(), "@KERNEL@");
	/* report.md's "*udsprobe VERSION, 2026-11-23 12:00 UTC*" */
	p = strstr(s, "*udsprobe @VERSION@, ");
	if (p && (end = strstr(p, " UTC*"))) {
		p += strlen("*udsprobe @VERSION@, ");
		memcpy(p, "@DATE@", 6);
		memmove(p + 6, end + 4, strlen(end + 4) + 1);
	}
	return s;
}

/* Compare with (or, with UDSPROBE_UPDATE_GOLDEN=1, rewrite) golden/<name>. */
static void golden_check(const char *name, char *actual)
{
	char path[512], tmp[512];
	const char *upd = getenv("UDSPROBE_UPDATE_GOLDEN");
	char *want;
	size_t line = 1, i;
	FILE *f;

	REQUIRE(actual);
	actual = normalize(actual);
	snprintf(path, sizeof(path), "%s/%s", golden_dir(), name);
	if (upd && !strcmp(upd, "1")) {
		f = fopen(path, "w");
		REQUIRE(f);
		fputs(actual, f);
		REQUIRE(!fclose(f));
		printf("    wrote %s\n", path);
		free(actual);
		return;
	}
	want = slurp(path, NULL);
	if (!want) {
		unit_fail(__FILE__, __LINE__, "cannot read %s: %s (run from the repository root, or "
			  "set UDSPROBE_GOLDEN_DIR)", path, strerror(errno));
		free(actual);
		return;
	}
	if (strcmp(want, actual)) {
		for (i = 0; want[i] && want[i] == actual[i]; i++)
			line += want[i] == '\n';
		snprintf(tmp, sizeof(tmp), "/tmp/udsprobe-golden-%s", name);
		f = fopen(tmp, "w");
		if (f) {
			fputs(actual, f);
			fclose(f);
		}
		unit_fail(__FILE__, __LINE__, "%s differs from the golden file from line %zu on; "
			  "output in %s (diff -u %s %s; intended? UDSPROBE_UPDATE_GOLDEN=1)",
			  path, line, tmp, path, tmp);
	}
	free(want);
	free(actual);
}

/* Run a writer into a malloc'd string. */
#define RENDER(buf, call)							\
	do {									\
		size_t render_len = 0;						\
		FILE *out = open_memstream(&(buf), &render_len);		\
		REQUIRE(out);							\
		call;								\
		REQUIRE(!fclose(out));						\
	} while (0)

static void golden_all(const char *input)
{
	struct comparison cmp;
	struct jnode *tree = NULL;
	char path[512], name[128], tmpl[] = "/tmp/udsprobe-golden-json.XXXXXX";
	char *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s.json", golden_dir(), input);
	REQUIRE(load_comparison(path, &cmp, &tree) == 0);

	RENDER(buf, report_text(&cmp, out));
	snprintf(name, sizeof(name), "%s.txt", input);
	golden_check(name, buf);

	RENDER(buf, report_bars(&cmp, out, false, 0));
	snprintf(name, sizeof(name), "%s.bars", input);
	golden_check(name, buf);

	RENDER(buf, md_write(&cmp, out));
	snprintf(name, sizeof(name), "%s.md", input);
	golden_check(name, buf);

	/* as --folded and --out's tcp.folded write them */
	RENDER(buf, folded_write(&cmp, -1, cmp.n_pairs > 1, out));
	snprintf(name, sizeof(name), "%s.folded", input);
	golden_check(name, buf);
	RENDER(buf, folded_write(&cmp, TR_TCP, cmp.n_pairs > 1, out));
	snprintf(name, sizeof(name), "%s.tcp.folded", input);
	golden_check(name, buf);

	RENDER(buf, svg_write(&cmp, -1, SVG_BOTH, out));
	snprintf(name, sizeof(name), "%s.svg", input);
	golden_check(name, buf);

	/* report_json writes a path: the JSON read back must be written out the same way */
	fd = mkstemp(tmpl);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK_INT(report_json(&cmp, tmpl), 0);
	buf = slurp(tmpl, NULL);
	unlink(tmpl);
	snprintf(name, sizeof(name), "%s.out.json", input);
	golden_check(name, buf);

	free(cmp.pairs);
	jfree(tree);
}

/* docs/example-report's report.json: tracepoint mode, pingpong/stream/connect, merged stages */
TEST(golden_tracepoint_three_modes)
{
	golden_all("tracepoint");
}

/* function-level stages, split placement, a caveat (probes more than doubled a run) */
TEST(golden_fentry_function_level)
{
	golden_all("fentry");
}

/* --no-trace: workload numbers only, no stages anywhere */
TEST(golden_untraced)
{
	golden_all("untraced");
}

/* One curve SVG of a golden input, as --out writes it. */
static void golden_curve(const char *input, int (*write)(const struct comparison *, FILE *),
			 const char *name)
{
	struct comparison cmp;
	struct jnode *tree = NULL;
	char path[512], *buf;

	snprintf(path, sizeof(path), "%s/%s.json", golden_dir(), input);
	REQUIRE(load_comparison(path, &cmp, &tree) == 0);
	RENDER(buf, CHECK_INT(write(&cmp, out), 0));
	golden_check(name, buf);
	free(cmp.pairs);
	jfree(tree);
}

/* The size curve (sweep.svg) of a traced --sweep --size 64,4K,64K run on this project's
 * 2-vCPU AMD EPYC VM: latency, ratio, throughput and composition panels. */
TEST(golden_sweep_svg)
{
	golden_curve("sweep", sweep_svg_write, "sweep.curve.svg");
}

/* --think 0,10us,100us,1ms --no-trace (pingpong, 64 B, 2000 round trips, same VM): think.svg,
 * and the text report and report.md with the sentence across think times. */
TEST(golden_think)
{
	golden_curve("think", think_svg_write, "think.curve.svg");
	golden_all("think");
}

/* The loader itself: a golden test fed garbage must not pass silently. */
TEST(golden_json_reader)
{
	struct jnode *n = NULL;

	CHECK_INT(jparse("{\"a\": [1, 2.5e3, \"x\\u00b5\\n\"], \"b\": null, \"c\": true}", &n), 0);
	REQUIRE(n);
	CHECK_DBL(jget(n, "a")->child->next->num, 2500, 0);
	CHECK_STR(jget(n, "a")->child->next->next->str, "x\u00b5\n");
	CHECK(jget(n, "b")->type == J_NULL);
	CHECK(jget(n, "c")->boolean);
	CHECK(jstr(n, "b") == NULL);
	jfree(n);
	CHECK_INT(jparse("{\"a\": 1,}", &n), -EINVAL);
	CHECK_INT(jparse("[1] x", &n), -EINVAL);
	CHECK_INT(jparse("\"open", &n), -EINVAL);
}
