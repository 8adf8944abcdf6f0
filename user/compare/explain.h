/* The plain-language explanation under each comparison (explain.c). */
#ifndef UDSPROBE_EXPLAIN_H
#define UDSPROBE_EXPLAIN_H

#include <stdio.h>

#include "compare.h"

/* Plain-language explanation of one pair's difference, generated from its numbers. */
void explain_pair(const struct comparison *cmp, const struct pair_result *pr, FILE *f);

/* --think LIST: how the UDS advantage changes from the least to the most application work
 * per round trip (think_curve()), in one paragraph from the numbers; nothing without two
 * think times. */
void explain_think_curve(const struct comparison *cmp, FILE *f);

#endif
