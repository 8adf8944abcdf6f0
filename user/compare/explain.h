/* The plain-language explanation under each comparison (explain.c), as claims (claims.h). */
#ifndef UDSPROBE_EXPLAIN_H
#define UDSPROBE_EXPLAIN_H

#include <stdio.h>

#include "claims.h"
#include "compare.h"

/* The claims that explain one pair's difference, computed from its numbers (docs/JSON.md). */
void explain_pair_claims(const struct comparison *cmp, const struct pair_result *pr,
			 struct claims *out);
/* The same, one line per claim. */
void explain_pair(const struct comparison *cmp, const struct pair_result *pr, FILE *f);

/* --think LIST: how the UDS advantage changes from the least to the most application work
 * per round trip (think_curve()), from the numbers; no claim without two think times. */
void explain_think_claims(const struct comparison *cmp, struct claims *out);
void explain_think_curve(const struct comparison *cmp, FILE *f);

#endif
