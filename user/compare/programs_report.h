/* --compare of real programs: the side-by-side report, its explanation, JSON, --out DIR. */
#ifndef UDSPROBE_PROGRAMS_REPORT_H
#define UDSPROBE_PROGRAMS_REPORT_H

#include <stdio.h>

#include "claims.h"
#include "programs.h"

/* The same (sender, receiver) flow over both transports; either may be NULL. */
struct flow_pair {
	const struct flow *f[PG__COUNT];
};

#define PG_MAX_PAIRS 32

/* The flows of both runs paired by (sender comm, receiver comm), busiest unix flow first. */
int programs_pairs(const struct program_compare *pc, struct flow_pair *out, int max);
/* The busiest pair both runs have, into p (the one the explanation is about and --out draws);
 * false when none. */
bool programs_busiest_pair(const struct program_compare *pc, struct flow_pair *p);
/* Sum over a run's flows of mean latency x messages: the time messages were in flight. */
double programs_socket_ns(const struct program_side *sd);
uint64_t programs_messages(const struct program_side *sd);

void programs_text(const struct program_compare *pc, FILE *f);
/* Plain-language reading of the numbers, as claims (programs_explain.c), and printed. */
void programs_claims(const struct program_compare *pc, struct claims *out);
void programs_explain(const struct program_compare *pc, FILE *f);
void programs_json_write(const struct program_compare *pc, FILE *f);
void programs_md(const struct program_compare *pc, FILE *f);

/* The --compare action with programs: run, then the text report, --json PATH, --out DIR.
 * 0 or -errno (said on stderr). */
int programs_main(const struct programs_opts *o, const char *json_path, const char *out_dir,
		  int verbose);

#endif
