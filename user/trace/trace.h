/* udsprobe --trace: messages of real programs on AF_UNIX and loopback TCP, by flow. */
#ifndef UDSPROBE_TRACE_H
#define UDSPROBE_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/types.h>

#include "attach.h"
#include "flows.h"
#include "stage_table.h"	/* STAGE_NAME_LEN: kernel stages named as --compare names them */
#include "tmpdir.h"

#define TR_MAX_PIDS	16	/* pids kept per flow end */
#define TR_MAX_FLOWS	4096	/* flows kept; more: counted in flow_map_full */
#define TR_MAX_NAMES	65536	/* unix endpoint names kept (~120 B each) */

/* --detail: syscall (--trace's default), full (--compare of programs' default) */
enum trace_detail { TRACE_DETAIL_DEFAULT, TRACE_DETAIL_SYSCALL, TRACE_DETAIL_FULL };

/* --trace's own options: trace_argp (a child of the command line's parser) fills the struct
 * its parent hands it; the filters and metrics options are watch_opts.h's. */
struct trace_cmd_opts {
	bool enabled;			/* --trace */
	const char *comms[FL_MAX_COMMS];	/* --comm, unescaped */
	int n_comms;
	uint64_t slower_than_ns;	/* --slower-than (0: not given) */
	enum trace_detail detail;
	bool live;			/* --live: the flows on a full-screen view */
	uint32_t max_flows;		/* --max-flows (0: as many as TR_FLOW_MAP_BYTES holds) */
	char **argv;			/* -- COMMAND [ARG...], or NULL */
};
extern const struct argp trace_argp;
/* send;call cut into kernel stages: --detail full, or dflt without --detail */
static inline bool trace_kernel_stages(enum trace_detail d, bool dflt)
{
	return d == TRACE_DETAIL_DEFAULT ? dflt : d == TRACE_DETAIL_FULL;
}

struct trace_opts {
	const int *pids;
	int n_pids;
	const unsigned *ports;
	int n_ports;
	const char *const *unix_paths;
	int n_unix;
	const char *comms[FL_MAX_COMMS];
	int n_comms;
	const char *cgroup;	/* --cgroup PATH (a cgroup v2 directory), or NULL */
	double duration_s;
	const char *metrics_addr;	/* --metrics ADDR:PORT: the flows so far at each scrape */
	const char *prom_path;	/* --prom PATH: the same text written there every interval */
	bool live;		/* --live: the flows on a full-screen view every interval */
	double interval_s;	/* --interval (default 1 s): the live view's, --prom's */
	uint64_t slower_than_ns;	/* --slower-than (0: no outliers) */
	bool kernel_stages;	/* --detail full: send;call cut into kernel stages */
	/* with kernel_stages: BPF run-time statistics on while tracing, each kernel-stage
	 * program's time per hit kept (trace_run.kstage_hit_ns; --if-unix wants them) */
	bool hit_costs;
	uint32_t max_flows;	/* the kernel's flow map (0: trace_flow_map_entries' default) */
	enum attach_mode attach;	/* --attach (ATTACH_AUTO: the best that works) */
	char **argv;		/* -- COMMAND [ARG...], NULL-terminated, or NULL */
	/* The command runs in its own process group, stopped whole at the end (a shell's
	 * children too); this janitor stops it should udsprobe die (NULL: none) */
	struct tmpdir *guard;
	/* the controlling terminal goes to the command's group while it runs, when udsprobe is
	 * the terminal's foreground job (--trace -- COMMAND; programs mode's clients: no) */
	bool terminal;
	int verbose;
};

/* A task name as printed: str_escape()d (any local user picks his own process's name). */
#define TR_COMM_TXT (FL_COMM_LEN * 4)

struct flow_end {
	char comm[TR_COMM_TXT];
	uint32_t pids[TR_MAX_PIDS];
	int n_pids;
};

struct flow_stage {
	const char *name;
	double ns_per_msg;	/* sum / messages of the flow */
	uint64_t count;		/* messages that spent time in it */
	uint64_t p50_ns, p99_ns;
};

/* A histogram of FL_NBUCKETS buckets kept sparse: a flow fills a few dozen of them, and a
 * long run keeps up to TR_MAX_FLOWS flows of six histograms each. */
struct sparse_hist {
	uint16_t *bucket;	/* ascending */
	uint64_t *count;
	int n, cap;
};

struct ep_name {
	uint64_t id;		/* name_hash of flows.bpf.c, fl_key.ep_id */
	struct fl_uaddr ua;
};

/* send;call's kernel stages, and three receiver's stages cut in two or three (each measured
 * child and a rest), the slices under four stages, and wait;busy's rest (app;busy) */
#define TR_MAX_KSTAGES (FK__COUNT + FR__COUNT + 3 + FBO__COUNT * FBK__COUNT + 1)

/* What a TCP flow would cost over AF_UNIX on this host (predict/predict.c fills it, docs/PREDICT.md). */
struct flow_if_unix {
	bool predicted;		/* else why says why not (a unix flow: not asked, why "") */
	char why[200];
	double mean, p50, p99;	/* predicted latency per message, ns */
	double mean_lo, mean_hi;	/* its range */
	double saved, saved_lo, saved_hi;	/* per message: measured mean - predicted */
	double saved_frac;	/* saved / the measured mean */
	double waits_saved;	/* of saved: the waits for a process that would spend less time */
	double stage_ns[FS__COUNT];	/* the stages over AF_UNIX, per message: they add up to mean */
	/* per connection, beyond its messages (connect, accept, close): saved, and its range */
	double conn_saved, conn_saved_lo, conn_saved_hi;
	double path_ns;		/* measured: send;call + the receive's copy and return */
	double path_unix_ns;	/* that path over AF_UNIX, predicted: kernel CPU per message */
	double noise_ns;	/* run-to-run noise at this latency (the calibration's spread) */
	uint64_t size_used;	/* the calibration size its ratios come from */
	bool recv_measured;	/* the copy inside recv;blocked measured (--detail full) */
	char mostly[120];	/* the largest TCP-only stages, or the send path in words */
};

struct flow {
	int transport;		/* enum fl_transport */
	char endpoint[160];
	struct flow_end sender, receiver;
	uint64_t messages, bytes, misses;
	uint64_t cross_cpu;	/* messages read on another CPU than the sender's at the handover */
	uint64_t conns;		/* connections that carried them (this direction of each) */
	uint64_t conns_to_srv;	/* TCP: of those, towards the listener's port: the sender connected */
	uint64_t p50, p90, p99;
	double mean;
	double coverage;
	struct flow_stage stages[FS__COUNT];
	/* stages cut at the kernel boundaries the run saw, in path order (docs/TRACE.md):
	 * send;call's, then the receiver's inside recv;blocked, wait;epoll, recv;copy+return */
	struct flow_kstage {
		char name[STAGE_NAME_LEN];
		int of;		/* enum fl_stage it is part of */
		double ns_per_msg;
	} kstages[TR_MAX_KSTAGES];
	int n_kstages;
	/* merged histograms while aggregating */
	struct flow_if_unix if_unix;
	uint64_t lat_sum, st_sum[FS__COUNT], st_cnt[FS__COUNT], k_sum[FK__COUNT];
	uint64_t rk_sum[FR__COUNT];
	uint64_t bk_sum[FBO__COUNT][FBK__COUNT];	/* sliced messages' slices (enum fl_bulk_of) */
	uint64_t bulk_msgs;	/* messages sliced (sent in several chunks) */
	struct sparse_hist lat_hist, st_hist[FS__COUNT];
};

/* --slower-than: one message slower than the threshold, with its stage timeline. */
struct trace_outlier {
	uint64_t time_ns;	/* its send() entry, wall clock (ns since the epoch) */
	int transport;		/* enum fl_transport */
	char endpoint[160];
	char s_comm[TR_COMM_TXT], r_comm[TR_COMM_TXT];
	uint32_t s_pid, s_tid, r_pid, r_tid;
	uint64_t bytes, latency_ns;
	uint32_t stages;	/* bit per enum fl_stage the message passed through */
	uint32_t unseen;	/* enum fl_unseen: boundaries not seen */
	uint64_t stage_ns[FS__COUNT];
	uint64_t k[FK__COUNT], rk[FR__COUNT];	/* its kernel stages' values, as the flows' */
	uint64_t bk[FBO__COUNT][FBK__COUNT];	/* its slices, if it was sliced */
	uint32_t kseen, rkseen;	/* the run's kstages and rkstages */
};

/* The kernel's flow map is preallocated per possible CPU (sizeof(struct fl_stats) a flow, the
 * histograms): by default as many flows as this many bytes hold, up to TR_FLOW_MAP_DEFAULT
 * (docs/TRACE.md, "Kernel memory"); --max-flows sets it, up to TR_FLOW_MAP_MAX. */
#define TR_FLOW_MAP_BYTES	(128u << 20)
#define TR_FLOW_MAP_DEFAULT	4096
#define TR_FLOW_MAP_MIN		64
#define TR_FLOW_MAP_MAX		65536
uint32_t trace_flow_map_entries(int ncpus, uint32_t asked);
/* What that map takes: preallocated, a flow's statistics per possible CPU. */
uint64_t trace_flow_map_bytes(uint32_t entries, int ncpus);

#define TR_MAX_OUTLIERS	100000	/* kept in memory; more are counted, not kept */

struct trace_run {
	uint64_t duration_ns;
	struct flow *flows;	/* busiest first */
	int n_flows;
	int flows_cap;		/* allocated */
	uint64_t misses[FM__COUNT];
	uint64_t dirs_evicted;	/* direction states the LRU evicted (closed connections', mostly) */
	uint64_t runs_skipped;	/* program runs the kernel skipped (attach_runs_skipped) */
	uint64_t flows_not_kept;	/* messages of flows beyond TR_MAX_FLOWS */
	uint32_t flow_map_entries;	/* the kernel's flow map: flows, */
	int flow_map_cpus;		/* each per possible CPU */
	struct ep_name *names;	/* unix endpoint names moved out of the uaddrs map, by id */
	int n_names, names_cap;
	uint64_t names_lost;	/* names neither the map nor names had room for */
	uint64_t bulk_unsliced;	/* messages in several chunks not sliced: no free slot */
	uint64_t procs_exited;		/* followed processes that exited (--pid, -- COMMAND) */
	uint64_t procs_unfollowed;	/* their children not followed: the process map was full */
	const char *attach_mode;
	uint32_t kstages;	/* bit per enum fl_kstage whose boundary was attached */
	uint32_t rkstages;	/* enum fl_rkstage_seen bits: the receiver's boundaries attached */
	double kstage_hit_ns[FK__COUNT];	/* run time per hit of each kstage program (0: unknown) */
	const char *detail;	/* "full" or "syscall" (--detail) */
	char **argv;		/* the command, or NULL */
	pid_t pid;		/* the command's process (its process group too with a guard), or 0 */
	int exit_status;	/* the command's: exit code, or 128 + signal; -1 if still running */
	int exec_errno;		/* the command could not be run (execvp failed): its errno, else 0 */
	bool interrupted;
	uint64_t slower_than_ns;	/* --slower-than, 0: not asked */
	struct trace_outlier *outliers;	/* in the order they completed */
	int n_outliers;
	uint64_t outliers_dropped;	/* the ring buffer was full */
	uint64_t outliers_not_kept;	/* beyond TR_MAX_OUTLIERS */
	/* the AF_UNIX calibration the TCP flows' if_unix rests on (predict/predict.c) */
	struct if_unix_basis {
		bool asked;		/* --if-unix not off and a TCP flow to predict */
		char file[256];		/* its cache file */
		char date[32];		/* when it ran, UTC */
		char cpu[128];
		bool fresh;		/* run during this run (else read from file) */
		int runs;
		uint64_t sizes[8];
		int n_sizes;
		/* --detail full: what its TCP-only probes cost a message (0: not full, or the
		 * run times unknown and the traced stages stood in) */
		double tcp_probes_ns;
	} basis;
};

const char *trace_transport_name(int transport);	/* "unix", "tcp" */
extern const char *const fl_stage_names[FS__COUNT];
/* wait;epoll's part after the receiver runs again: the poll call's own return */
#define EPOLL_RETURN_STAGE "wait;epoll_return"
/* wait;busy's part that a sliced message's slices do not cover: the receiver's own work */
#define BUSY_OTHER_STAGE "app;busy"
/* The boundary of the stage table (enum boundary) that ends each kernel stage (enum
 * fl_kstage): its name and its tracepoint (TCP's marker) come from the table. */
extern const int kstage_boundary[FK__COUNT];
/* What the kernel stages of a flow (sums) or of one message (per = 1) are cut from. */
struct kstage_in {
	int transport;		/* enum fl_transport */
	uint32_t seen, rseen;	/* the run's kstages and rkstages bits */
	const uint64_t *k, *rk;	/* enum fl_kstage, enum fl_rkstage */
	const uint64_t (*bk)[FBK__COUNT];	/* enum fl_bulk_of x enum fl_bulk */
	const uint64_t *st_sum;	/* enum fl_stage */
	uint32_t st_mask;	/* the stages passed through */
	double per;		/* divide by: messages */
};
/* The kernel stages, named as --compare names its stages, in path order; returns how many
 * (at most TR_MAX_KSTAGES). */
int trace_kstages_cut(const struct kstage_in *in, struct flow_kstage *out);
/* kstage_in.st_mask of messages' summed stage counts (enum fl_stage): the stages passed. */
uint32_t trace_stages_passed(const uint64_t *st_cnt);
extern const char *const fl_miss_names[FM__COUNT];
extern const char *const fl_miss_meanings[FM__COUNT];

/* Upper bound in ns of histogram bucket b (the value reported for a percentile). */
uint64_t fl_bucket_value(int b);
/* The value at quantile q (0..1) of a histogram of n buckets, 0 when empty. */
uint64_t fl_hist_quantile(const uint64_t *hist, int n, double q);

/* Trace until --duration, Ctrl-C or the command's exit; fills run (trace_run_free). */
int trace_run(const struct trace_opts *o, struct trace_run *run);
void trace_run_free(struct trace_run *run);
/* What one flow holds (its histograms). */
void trace_flow_free(struct flow *f);
/* Add a kernel histogram (dense, FL_NBUCKETS buckets) into a kept one; -ENOMEM (h then holds
 * the buckets below the one that failed). */
int trace_hist_merge(struct sparse_hist *h, const __u32 *dense);
/* A copy of a kept histogram into to (its own arrays); -ENOMEM (free to's arrays then). */
int trace_hist_copy(struct sparse_hist *to, const struct sparse_hist *from);
/* The value at quantile q of a kept histogram: fl_hist_quantile of it made dense. */
uint64_t trace_hist_quantile(const struct sparse_hist *h, double q);

/* A flow's pictures, for --trace --out and --compare of programs' --out: its flame graph
 * (trace_svg.c) drawn at px_per_ns, one scale for every flow of a report (trace_svg_scale_of:
 * the px/ns that fits max_ns); its folded stacks, "phase;stage <ns per message>", a stage as
 * its kernel stages where the run cut it (trace_out.c). */
void trace_svg_write(const struct trace_run *run, const struct flow *fl, double px_per_ns,
		     FILE *f);
double trace_svg_scale_of(double max_ns);
void trace_flow_folded(const struct flow *fl, FILE *f);

/* One flow as an object of the "flows" array (docs/TRACE.md), for other documents too
 * (trace_report.c). */
struct jw;
void trace_flow_json(struct jw *w, const struct flow *fl);

/* The --trace command as t, w and p (--if-unix) say, in mode attach (--attach): run, then the
 * reports (text, --json PATH, --out DIR), in trace_main.c. 0, or -errno (said). */
struct watch_opts;
struct predict_opts;
int trace_main(const struct trace_cmd_opts *t, const struct watch_opts *w,
	       const struct predict_opts *p, const char *json_path, const char *out_dir,
	       double duration_s, enum attach_mode attach, int verbose);

#endif
