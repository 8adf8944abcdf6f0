// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks (--folded).
 *
 * A line is "[pair;]transport;stage;substage <weight>" with the stage's exclusive (self) time
 * as the weight, in integer ns per message (the mean, rounded). Per-message weights compare
 * across transports and runs of different lengths; multiply by the message count (JSON
 * "messages") for the total over the run. docs/REPORTS.md has the details.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_common.h"
#include "reports.h"
#include "util.h"

/* Folded frames may hold anything but ';' (separator), whitespace and control characters. */
static void put_frame(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s <= ' ' || *s == 0x7f ? '_' : *s, f);
}

int folded_write(const struct comparison *cmp, int transport, bool with_pair, FILE *f)
{
	char tag[64];
	int i, t, s, lines = 0;

	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];

		pair_tag(pr, false, tag, sizeof(tag));
		for (t = 0; t < TR__COUNT; t++) {
			const struct trace_result *r = &pr->tr[t].trace;

			if ((transport >= 0 && t != transport) || !tr_has_stages(&pr->tr[t]))
				continue;
			for (s = 0; s < r->n_stages; s++) {
				long long w = r->stages[s].ns_per_msg > 0 ?
					      llround(r->stages[s].ns_per_msg) : 0;

				if (w <= 0)	/* below 0.5 ns/msg: invisible, and some tools warn */
					continue;
				if (r->stages[s].extra)	/* per connection, not part of the message */
					continue;
				if (with_pair)
					fprintf(f, "%s;", tag);
				if (transport < 0)
					fprintf(f, "%s;", transport_names[t]);
				put_frame(f, r->stages[s].name);
				fprintf(f, " %lld\n", w);
				lines++;
			}
		}
	}
	return lines;
}

static int folded_all(const struct comparison *cmp, FILE *f)
{
	folded_write(cmp, -1, cmp->n_pairs > 1, f);
	return 0;
}

int report_folded(const struct comparison *cmp, const char *path)
{
	return stages_file_write(cmp, "--folded", path, folded_all);
}
