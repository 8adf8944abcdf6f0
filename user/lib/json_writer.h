/* Minimal streaming JSON writer: correct escaping and commas, nothing more. */
#ifndef UDSPROBE_JSON_WRITER_H
#define UDSPROBE_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	FILE *f;
	int depth;
	bool need_comma[JW_MAX_DEPTH];
	bool pretty;
};

void jw_init(struct jw *w, FILE *f, bool pretty);
/* A udsprobe document: jw_init (pretty), the top object opened, its "tool", "version" and
 * "kernel" written; the caller goes on with its own keys. */
void jw_doc_begin(struct jw *w, FILE *f);
void jw_obj_begin(struct jw *w, const char *key);	/* key NULL inside arrays / at top */
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w, const char *key);
void jw_arr_end(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *val);	/* val NULL writes null */
void jw_u64(struct jw *w, const char *key, uint64_t val);
void jw_i64(struct jw *w, const char *key, int64_t val);
void jw_double(struct jw *w, const char *key, double val);	/* 6 digits or all integer ones; non-finite: null */
void jw_bool(struct jw *w, const char *key, bool val);
void jw_null(struct jw *w, const char *key);
/* The latency object of udsprobe's documents: {"p50": N, "p90": N, "p99": N, "mean": M} under
 * key; M an integer when integral_mean (--compare's schema), else a number (--trace's). */
void jw_latency(struct jw *w, const char *key, uint64_t p50, uint64_t p90, uint64_t p99,
		double mean, bool integral_mean);

#endif
