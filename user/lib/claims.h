/*
 * The explanation as data (claims.c): a list of claims, each a kind, the values it rests on
 * and its sentence. explain.c and programs_explain.c build them from a run's numbers; the
 * text report, report.md and JSON render the same list (docs/JSON.md, "explanation").
 */
#ifndef UDSPROBE_CLAIMS_H
#define UDSPROBE_CLAIMS_H

#include <stdbool.h>
#include <stdio.h>

#include "json_writer.h"

#define CLAIM_MAX 24
#define CLAIM_VALUES 16
#define CLAIM_TEXT 768
#define CLAIM_STR 64

/*
 * A difference between two transports smaller than this share of the larger figure is not
 * called a win from one run: the untraced run-to-run spread of one same-CPU run is 2-8 % at
 * 1 B-4 KiB (docs/BENCHMARKS.md, "Accuracy"). --repeat measures it instead.
 */
#define NOISE_FLOOR 0.05

enum claim_type { CV_NUM, CV_STR, CV_BOOL };

struct claim_value {
	char key[CLAIM_STR];
	enum claim_type type;
	double num;		/* CV_NUM; CV_BOOL: 0 or 1 */
	char str[CLAIM_STR];	/* CV_STR: a stage name, a transport */
};

struct claim {
	const char *kind;	/* docs/JSON.md lists them */
	char text[CLAIM_TEXT];
	int n_values;
	struct claim_value v[CLAIM_VALUES];
};

struct claims {
	int n;
	struct claim c[CLAIM_MAX];
	struct claim spill;	/* where claims past CLAIM_MAX go, never rendered */
};

/* A new claim of kind with its sentence (printf format); never NULL. */
struct claim *claim_add(struct claims *cl, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append to the claim's sentence. */
void claim_more(struct claim *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void claim_num(struct claim *c, const char *key, double v);
void claim_str(struct claim *c, const char *key, const char *s);
void claim_bool(struct claim *c, const char *key, bool v);
/* The value of key, NULL if absent. */
const struct claim_value *claim_get(const struct claim *c, const char *key);

/* One line per claim, as the text report and report.md show them. */
void claims_print(const struct claims *cl, FILE *f);
/* key: [{"kind", "text", "values": {...}}, ...] */
void claims_json(struct jw *w, const char *key, const struct claims *cl);

#endif
