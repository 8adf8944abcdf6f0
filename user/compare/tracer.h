/* The tracer: loads stages.bpf.c in one attach mode, attributes a run, names its stages. */
#ifndef UDSPROBE_TRACER_H
#define UDSPROBE_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "attach.h"
#include "stage_table.h"	/* STAGE_NAME_LEN, stages_list() */
#include "workload.h"

#define MAX_STAGES 64

struct stages_bpf;
struct bpf_program;

/* One stage of the message path, exclusive (self) time. */
struct stage_stat {
	char name[STAGE_NAME_LEN];	/* folded path below the transport: "send;sock" or
					 * "send;sock;tcp_sendmsg_locked" (function level) */
	double ns_per_msg;		/* mean over attributed messages, as traced */
	double corrected_ns_per_msg;	/* minus its probe hits x calibrated probe cost */
	uint64_t count;			/* messages with this stage */
	uint64_t p50_ns, p99_ns;	/* from the in-kernel log2 histogram */
	bool extra;			/* per connection (conn;*), outside the message sum */
};

/* What tracing one run saw. */
struct trace_result {
	bool valid;
	struct wl_result traced;	/* the workload's own numbers while traced */
	uint64_t messages;		/* messages attributed end to end */
	int n_stages;
	struct stage_stat stages[MAX_STAGES];
	double stage_sum_ns;		/* sum of ns_per_msg over stages */
	double latency_ns;		/* traced end-to-end latency per message (mean) */
	double coverage;		/* stage_sum_ns / latency_ns */
	double overhead_ns;		/* traced - untraced latency per message */
	double overhead_pct;
	double corrected_sum_ns;	/* sum of corrected_ns_per_msg */
	double probe_hits_per_msg;
	uint64_t misses, out_of_order;	/* from the BPF .bss counters */
	uint64_t kernel_misses;		/* program runs the kernel skipped (recursion_misses) */
	uint64_t bulk_messages;		/* messages in several chunks, sliced (bulk;*) */
	uint64_t recv_calls;		/* stream: the receiver's recv() calls that returned data */
	uint64_t xmit_calls;		/* stream, TCP: send() calls that put a segment on the device */
	double syscall_hit_ns;		/* calibrated cost of a syscall-tracepoint hit */
	double chunks_per_msg;		/* of those: skbs (UDS) or segments (TCP) per message */
	uint64_t chunks_counted;	/* of those, the ones whose chunks were seen (0: uncounted) */
	double sleeps_per_msg;		/* of those: the sender's sleeps for buffer space */
};

/* The stage of r named name, or NULL. */
const struct stage_stat *trace_stage(const struct trace_result *r, const char *name);

struct tracer;

/* Which attach modes work for the tracer: one stages program loaded and attached per mode
 * (--check: every mode; tracer_probe_mode: the one attach_choose asks about). */
void tracer_probe(struct attach_caps *caps, int verbose);
int tracer_probe_mode(enum attach_mode mode, void *ctx, char *why, size_t len);
/* Detect, choose the mode, load. 0 or -errno (message printed). */
int tracer_open(enum attach_mode req, int verbose, struct tracer **out);
void tracer_close(struct tracer *tr);

enum attach_mode tracer_mode(const struct tracer *tr);
const char *tracer_reason(const struct tracer *tr);
const char *tracer_granularity(const struct tracer *tr);
/* Boundaries this mode cannot see on this kernel (merged into neighbours), as text. */
const char *tracer_missing(const struct tracer *tr);

/* Cost of one probe hit in this mode, measured now (ns). */
double tracer_calibrate(struct tracer *tr);

/* Attach the mode's programs on transport t's path / detach them; *_ns: how long it took. */
int tracer_attach(struct tracer *tr, enum transport t, uint64_t *attach_ns);
void tracer_detach(struct tracer *tr, uint64_t *detach_ns);
/* The programs tracer_attach attaches for transport t in mode on this kernel, without opening a
 * tracer (the bench's floor, scripts/hooks_floor.c); returns how many, -E2BIG past max. */
int tracer_path_programs(struct stages_bpf *skel, enum attach_mode mode, enum transport t,
			 struct bpf_program **out, int max);

/* Per run: reset state and register the workload's two tasks. */
int tracer_begin_run(struct tracer *tr, const struct wl_config *cfg, pid_t client, pid_t server);
/* From the client child: tracing on/off around the measured loop (shared .bss). */
void tracer_measure(struct tracer *tr, bool on);
/* Read the run's stages into res (names, ns/msg, counts, percentiles, hits). */
int tracer_collect(struct tracer *tr, const struct wl_config *cfg, double probe_cost_ns,
		   struct trace_result *res);

#endif
