/*
 * Flame-style and slide-ready outputs of --compare: folded stacks, the SVG flame graph,
 * the terminal bars and the --out report directory. All read a finished struct comparison;
 * docs/REPORTS.md describes the formats.
 */
#ifndef UDSPROBE_REPORTS_H
#define UDSPROBE_REPORTS_H

#include <stdbool.h>
#include <stdio.h>

#include "compare.h"

/* ---- stage paths, shared by the writers (report_folded.c) ---- */

/* Path prefixes of every stage of both transports of one pair, merged in message order. */
#define STREE_MAX 256

struct snode {
	char path[STAGE_NAME_LEN];	/* "send", "send;sock", "send;sock;tcp_sendmsg" */
	const char *name;		/* last component, points into path */
	int depth;			/* 1 for "send" */
	int parent;			/* index, -1 for a top-level frame */
	double self[TR__COUNT];		/* exclusive ns/msg (0 when the stage is absent) */
	double total[TR__COUNT];	/* self + children */
	double raw_total[TR__COUNT];	/* total as traced, when self/total are corrected */
	const struct stage_stat *st[TR__COUNT];	/* the stage itself, if it is one */
};

struct stree {
	int n, max_depth;
	bool has[TR__COUNT];		/* transport has stage data */
	bool corrected;			/* values are corrected_ns_per_msg (probe cost removed) */
	double sum[TR__COUNT];		/* sum of all stages' values */
	double raw_sum[TR__COUNT];	/* sum of all stages' ns_per_msg (as traced) */
	struct snode node[STREE_MAX];
};

bool tr_has_stages(const struct transport_result *tr);
bool pair_has_stages(const struct pair_result *pr);
bool comparison_has_stages(const struct comparison *cmp);
/*
 * Build the merged stage tree of one pair (message order, unix's and tcp's orders merged),
 * leaving out per-connection stages. corrected: use corrected_ns_per_msg (probe cost
 * removed) as the values, ns_per_msg otherwise; raw_* always hold ns_per_msg.
 */
void stree_build(const struct pair_result *pr, bool corrected, struct stree *t);
/* The pictures and tables show probe-cost-corrected times when the probe cost is known. */
bool show_corrected(const struct comparison *cmp);
/* Node index whose path is the first `depth` components of path, or -1. */
int stree_find(const struct stree *t, const char *path);
/* Stage group = first two components ("send;sock"): the stage model's rows. */
int stree_groups(const struct stree *t, int *idx, int max);
/*
 * Rows that compare honestly across transports: the stage groups, with groups joined where a
 * transport merged boundaries the other sees (unix "send;syscall+sock" vs tcp "send;syscall"
 * and "send;sock+tcp_ip_out" -> one row "send;syscall+sock+tcp_ip_out").
 */
#define SROW_MEMBERS 16
struct srow {
	char name[STAGE_NAME_LEN * 2];
	double v[TR__COUNT];		/* ns/msg, sum of the members' totals */
	double raw[TR__COUNT];		/* the same as traced */
	bool has[TR__COUNT];		/* the transport has a stage in this row */
	int n_members;
	int member[SROW_MEMBERS];	/* stree node indexes */
};
int stree_rows(const struct stree *t, struct srow *rows, int max);
/* What a stage of the stage model measures, in plain words; NULL if unknown. */
const char *stage_describe(const char *path);
/* "pingpong_64B_cpu-same" (folded frame, sep '_') or "pingpong-64B-same" (file name, '-'). */
void pair_tag(const struct pair_result *pr, bool file_name, char *buf, size_t len);
/* Why a transport has no stages, for messages ("the run was untraced (--no-trace)"). */
const char *no_stages_reason(const struct comparison *cmp);
/* A reason not to put this pair on a slide (probes more than doubled the latency, the
 * probe-cost correction pushed stages below zero...), or "" when there is none. */
const char *pair_caveat(const struct comparison *cmp, const struct pair_result *pr, char *buf,
			size_t len);

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
/* Create DIR (one level) and write report.md, report.json, *.folded and *.svg into it. */
int report_out(const struct comparison *cmp, const char *dir);

#endif
