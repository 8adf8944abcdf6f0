// SPDX-License-Identifier: GPL-2.0
#include <math.h>

#include "json_writer.h"
#include "util.h"	/* kernel_release */

void jw_init(struct jw *w, FILE *f, bool pretty)
{
	*w = (struct jw){ .f = f, .pretty = pretty };
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void prefix(struct jw *w, const char *key)
{
	if (w->need_comma[w->depth])
		fputc(',', w->f);
	w->need_comma[w->depth] = true;
	if (w->pretty && w->depth > 0)
		fprintf(w->f, "\n%*s", 2 * w->depth, "");
	if (key) {
		put_string(w->f, key);
		fputs(w->pretty ? ": " : ":", w->f);
	}
}

static void open_scope(struct jw *w, const char *key, char c)
{
	prefix(w, key);
	fputc(c, w->f);
	if (w->depth < JW_MAX_DEPTH - 1)
		w->need_comma[++w->depth] = false;
}

static void close_scope(struct jw *w, char c)
{
	bool had_items = w->need_comma[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (w->pretty && had_items)
		fprintf(w->f, "\n%*s", 2 * w->depth, "");
	fputc(c, w->f);
	if (w->depth == 0)
		fputc('\n', w->f);
}

void jw_obj_begin(struct jw *w, const char *key) { open_scope(w, key, '{'); }
void jw_obj_end(struct jw *w) { close_scope(w, '}'); }
void jw_arr_begin(struct jw *w, const char *key) { open_scope(w, key, '['); }
void jw_arr_end(struct jw *w) { close_scope(w, ']'); }

void jw_str(struct jw *w, const char *key, const char *val)
{
	prefix(w, key);
	if (val)
		put_string(w->f, val);
	else
		fputs("null", w->f);
}

void jw_u64(struct jw *w, const char *key, uint64_t val)
{
	prefix(w, key);
	fprintf(w->f, "%llu", (unsigned long long)val);
}

void jw_i64(struct jw *w, const char *key, int64_t val)
{
	prefix(w, key);
	fprintf(w->f, "%lld", (long long)val);
}

void jw_double(struct jw *w, const char *key, double val)
{
	double mag = fabs(val);

	prefix(w, key);
	/* 6 significant digits, but never fewer than the integer digits: a 1.38 ms mean in ns
	 * is 1383712, not 1.38371e+06 (5 ns lost) */
	if (!isfinite(val))
		fputs("null", w->f);
	else if (mag >= 999999.5 && mag < 1e15)
		fprintf(w->f, "%.0f", val);
	else
		fprintf(w->f, "%.6g", val);
}

void jw_bool(struct jw *w, const char *key, bool val)
{
	prefix(w, key);
	fputs(val ? "true" : "false", w->f);
}

void jw_null(struct jw *w, const char *key)
{
	prefix(w, key);
	fputs("null", w->f);
}

void jw_latency(struct jw *w, const char *key, uint64_t p50, uint64_t p90, uint64_t p99,
		double mean, bool integral_mean)
{
	jw_obj_begin(w, key);
	jw_u64(w, "p50", p50);
	jw_u64(w, "p90", p90);
	jw_u64(w, "p99", p99);
	if (integral_mean)
		jw_u64(w, "mean", (uint64_t)mean);
	else
		jw_double(w, "mean", mean);
	jw_obj_end(w);
}

void jw_doc_begin(struct jw *w, FILE *f)
{
	jw_init(w, f, true);
	jw_obj_begin(w, NULL);
	jw_str(w, "tool", "udsprobe");
	jw_str(w, "version", UDSPROBE_VERSION);
	jw_str(w, "kernel", kernel_release());
}
