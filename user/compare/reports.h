/*
 * The outputs of --compare: the text report, JSON, folded stacks, the SVG flame graph, the
 * terminal bars and the --out report directory. All read a finished struct comparison
 * through the report model (report_common.h); docs/REPORTS.md and docs/JSON.md describe the
 * formats.
 */
#ifndef UDSPROBE_REPORTS_H
#define UDSPROBE_REPORTS_H

#include <stdbool.h>
#include <stdio.h>

#include "compare.h"

/* ---- text report (report_text.c) and JSON (report_json.c) ---- */

void report_text(const struct comparison *cmp, FILE *f);
/* --json PATH ('-' = stdout); json_write() is the document itself. */
int report_json(const struct comparison *cmp, const char *path);
int json_write(const struct comparison *cmp, FILE *f);

/* ---- folded stacks (report_folded.c) ---- */

/*
 * One line per stage: [pair_tag;]transport;stage path <ns per message, rounded>.
 * transport < 0: both transports, with the transport frame; else only that transport and no
 * transport frame (input for difffolded.pl). with_pair: prefix the pair tag. Returns the
 * number of lines written.
 */
int folded_write(const struct comparison *cmp, int transport, bool with_pair, FILE *f);
/* --folded PATH ('-' = stdout). 0, -ENODATA when no stage data (message printed), -errno. */
int report_folded(const struct comparison *cmp, const char *path);

/* ---- the curves: sizes and think times (report_sweep.c) ---- */

/* Latency, ratio, throughput and stage composition across the sizes of one placement;
 * -EINVAL when fewer than two pingpong/stream sizes were measured. */
int sweep_svg_write(const struct comparison *cmp, FILE *f);
/* How many sizes the curve would have (pingpong/stream at the first pingpong placement). */
int sweep_sizes(const struct comparison *cmp);
/* Round trip of both transports and their ratio across the --think values of pingpong at the
 * first pingpong pair's size and placement; -EINVAL when fewer than two were measured. */
int think_svg_write(const struct comparison *cmp, FILE *f);
/* How many think times that chart would have (0 without --think). */
int think_points(const struct comparison *cmp);

/* ---- SVG flame graph (report_svg.c) ---- */

enum svg_view { SVG_FLAME = 1, SVG_DIFF = 2, SVG_BOTH = 3 };
/* pair < 0: every pair with stages, one section each. 0 or -ENODATA. */
int svg_write(const struct comparison *cmp, int pair, unsigned views, FILE *f);
int report_svg(const struct comparison *cmp, const char *path);

/* ---- terminal bars (report_bars.c) ---- */

/* Colour only on a tty, without NO_COLOR (no-color.org) and with TERM other than "dumb". */
bool bars_use_color(FILE *f);
/* One proportional bar per transport and pair, on one scale per pair, and a key. width:
 * columns of the longer bar (0: fit the terminal, at most 64). Pairs without stages are
 * skipped. */
void report_bars(const struct comparison *cmp, FILE *f, bool color, int width);

/* ---- --out DIR (report_md.c) ---- */

/* report.md for a directory that holds the files named in it. */
void md_write(const struct comparison *cmp, FILE *f);
/* Create DIR (one level) and write report.md, report.json, *.folded and *.svg into it
 * (report_out.c: safe file creation, a manifest that lets a rerun replace its own files). */
int report_out(const struct comparison *cmp, const char *dir);
struct outdir;
/* The same into a directory already opened (and checked) with outdir_open(). */
int report_out_at(const struct comparison *cmp, struct outdir *od);


#endif
