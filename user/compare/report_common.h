/*
 * The report model (report_common.c): what the writers of reports.h share. The stage tree of
 * a pair (both transports' stages merged in message order, parents implied by the paths), the
 * rows that compare honestly across transports, pair tags, caveats and stage descriptions.
 */
#ifndef UDSPROBE_REPORT_COMMON_H
#define UDSPROBE_REPORT_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "compare.h"

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
/* "pingpong_64B_cpu-same" (folded frame, sep '_') or "pingpong-64B-same" (file name, '-');
 * with --think work "..._think100us" / "...-think100us". */
void pair_tag(const struct pair_result *pr, bool file_name, char *buf, size_t len);
/* ", think 100 us" for a pair with --think work per round trip, else "" (headings). */
const char *think_words(const struct pair_result *pr, char *buf, size_t len);
/* Why a transport has no stages, for messages ("the run was untraced (--no-trace)"). */
const char *no_stages_reason(const struct comparison *cmp);
/* --folded or --svg (opt) PATH: what write draws of the stages, through outfile; -ENODATA
 * (said, nothing written) for a run without stages. 0 or -errno. */
int stages_file_write(const struct comparison *cmp, const char *opt, const char *path,
		      int (*write)(const struct comparison *cmp, FILE *f));
/* A reason not to put this pair on a slide (probes more than doubled the latency, the
 * probe-cost correction pushed stages below zero...), or "" when there is none. */
const char *pair_caveat(const struct comparison *cmp, const struct pair_result *pr, char *buf,
			size_t len);

/*
 * The placement in words: "client and server pinned to one CPU", "... on different CPUs",
 * "CPU placement left to the scheduler"; cpus: name the CPUs the workload ran on.
 */
const char *place_words(const struct pair_result *pr, bool cpus, char *buf, size_t len);
/* What a run of this mode counts: "round trips", "messages", "connections". */
const char *mode_count_noun(enum wl_mode mode);

/*
 * The probe overhead in words: "3.10 us (+49%)", or, when the traced run was faster than the
 * untraced one, that the probes' cost is within run-to-run noise (never a negative cost).
 */
const char *overhead_words(const struct trace_result *r, bool utf8, char *buf, size_t len);

/* One number of the workload's own results, as the text report and report.md show it. */
struct metric_row {
	const char *label;		/* text report: "one-way p50" */
	const char *md_label;		/* report.md: "one-way latency p50" */
	const char *md_unit;		/* report.md, after a rate: "B" makes "109.19 MB" */
	bool rate;			/* a rate (higher is better), else a duration (lower) */
	double (*value)(const struct wl_result *r);
};
/* The rows of one mode, in report order; returns how many (*rows NULL for none). */
int metric_rows(enum wl_mode mode, const struct metric_row **rows);
/* CPU per message (connect: per connection) of a pair, when both transports measured it. */
int cpu_rows(const struct pair_result *pr, const struct metric_row **rows);

#endif
