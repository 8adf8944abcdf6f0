/* --compare: the run matrix (mode x size x placement x transport) and its results. */
#ifndef UDSPROBE_COMPARE_H
#define UDSPROBE_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "attach.h"
#include "tracer.h"
#include "workload.h"

#define MAX_SIZES 16
#define MAX_THINKS 8

struct compare_opts {
	bool modes[WL__COUNT];
	bool places[CPU__COUNT];
	uint64_t sizes[MAX_SIZES];
	int n_sizes;
	uint64_t count;		/* 0: per-mode default (or duration) */
	double duration_s;	/* 0: use count */
	uint64_t warmup;	/* UINT64_MAX: automatic */
	bool trace;
	int repeat;		/* alternating untraced/traced runs per pair (0, 1: once) */
	/* pingpong: application work per round trip (--think LIST), one run per value; 0 is
	 * no work. n_thinks 0: --think not given (one run, no work) */
	uint64_t thinks[MAX_THINKS];
	int n_thinks;
	enum attach_mode attach;
	/* every untraced run first, then each transport's traced runs under one attach (no
	 * --repeat): --if-unix's calibration, where a detach per pair cost more than its runs */
	bool attach_once;
	bool quiet;
	int verbose;
};

/* Median and range over repeated runs (--repeat). */
struct spread {
	double min, median, max;
};

/* One transport's numbers for one (mode, size, placement). */
struct transport_result {
	struct wl_config cfg;
	struct wl_result untraced;
	struct trace_result trace;
	/* --repeat N > 1: the run shown is the one with the median overhead; these are over all N */
	int runs;
	struct spread untraced_ns, traced_ns, overhead_pct;	/* per message (connect: connection) */
};

/* Both transports for one (mode, size, placement): one row group of the report. */
struct pair_result {
	enum wl_mode mode;
	uint64_t msg_size;
	enum cpu_place place;
	struct transport_result tr[TR__COUNT];
};

struct comparison {
	struct pair_result *pairs;
	int n_pairs;
	const char *attach_mode;	/* "fentry", "kprobe", "tracepoint"; NULL when untraced */
	const char *attach_reason;	/* why this mode was chosen */
	const char *stage_granularity;	/* "function" or "tracepoint" */
	double probe_cost_ns;		/* calibrated cost of one probe hit */
	const char *missing;		/* boundaries this mode cannot see here ("" if none) */
	uint64_t attach_ns, detach_ns;	/* slowest attach and detach of all runs */
	int n_cpus;
	char cpu_model[128];
	bool think;			/* --think given: pingpong results carry think_ns */
};

/* Messages per run unless --count says: bounded in bytes per size, and in think time. */
uint64_t default_count(enum wl_mode mode, uint64_t msg_size, uint64_t think_ns);
uint64_t default_warmup(enum wl_mode mode, uint64_t count);
/* 0, -EINTR on Ctrl-C, other -errno on failure (message printed). */
int compare_run(const struct compare_opts *opts, struct comparison *cmp);
void comparison_free(struct comparison *cmp);
/* Where --compare's reports go (NULL: not asked for). */
struct compare_outputs {
	const char *json_path, *folded_path, *svg_path, *out_dir;
};
/* The --compare command with the built-in workload (compare_main.c): 0 or -errno (said). */
int compare_main(const struct compare_opts *o, const struct compare_outputs *out);
/* One --compare (or --compare of programs) at a time on a host: waits for another one,
 * saying for whom; 0, or -errno (-EINTR: Ctrl-C while waiting). */
int compare_lock(void);
/* The --check command (check_main.c): 0 or -errno. */
int check_main(enum attach_mode attach, int verbose);
/* A Ctrl-C that ended something else (a trace) no longer stops the runs to come. */
void compare_rearm(void);
/* Connections from other processes the workload servers refused (untraced + traced runs). */
uint64_t transport_strangers(const struct transport_result *x);
uint64_t pair_strangers(const struct pair_result *pr);
/* The client's work per round trip of a pair (--think), 0 for none. */
uint64_t pair_think(const struct pair_result *pr);
/* --think's curve: the pingpong pairs at the first pingpong pair's size and placement, by
 * think time ascending (at most max); 0 without --think. */
int think_curve(const struct comparison *cmp, const struct pair_result **out, int max);

#endif
