/* The paired workload: the same code drives AF_UNIX stream and TCP 127.0.0.1. */
#ifndef UDSPROBE_WORKLOAD_H
#define UDSPROBE_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stage_table.h"	/* enum transport */

enum wl_mode { WL_PINGPONG, WL_STREAM, WL_CONNECT, WL__COUNT };
enum cpu_place { CPU_SAME, CPU_SPLIT, CPU_NONE, CPU__COUNT };

#define WL_MAX_MSG_SIZE (16u << 20)

struct wl_config {
	enum transport transport;
	enum wl_mode mode;
	uint64_t msg_size;
	uint64_t count;		/* measured messages/connections; 0 = use duration_s */
	double duration_s;
	uint64_t warmup;	/* excluded from every result */
	enum cpu_place place;
	const char *sock_dir;	/* private 0700 directory for AF_UNIX paths */
	uint64_t think_ns;	/* pingpong: the client's application work (a busy loop) after
				 * each reply, inside the round trip it measures (--think) */
};

/* Called around the measured part so tracing sees neither warm-up nor teardown. */
struct wl_hooks {
	void *ctx;
	/* parent, after both children exist and before they start */
	int (*spawned)(void *ctx, pid_t client, pid_t server);
	/* client child, right before and right after the measured loop */
	void (*measure)(void *ctx, bool on);
};

struct wl_latency {
	uint64_t p50, p90, p99, mean, min, max;
};

struct wl_result {
	uint64_t count;		/* measured messages (pingpong: round trips) or connections */
	uint64_t elapsed_ns;
	bool has_latency;
	struct wl_latency latency;	/* pingpong: one-way (RTT/2); connect: per connection */
	double msgs_per_sec, bytes_per_sec, conns_per_sec;
	int client_cpu, server_cpu;	/* where each side ran at the end; -1 unknown */
	uint64_t strangers;	/* connections from other processes the server refused */
	pid_t client_pid, server_pid;
	/*
	 * CPU per unit (pingpong and stream: message; connect: connection), warm-up included in
	 * both the time and the units: user and system time of the client and server processes
	 * (wait4's rusage), and the softirq time /proc/stat counted on the CPUs they were pinned
	 * to (every CPU when not pinned; all work there, tick-sampled) over their lives.
	 */
	bool has_cpu;
	double user_ns, sys_ns, softirq_ns;
};

extern const char *const transport_names[TR__COUNT];
extern const char *const mode_names[WL__COUNT];
extern const char *const place_names[CPU__COUNT];

/* 0, or -errno with a message already printed to stderr. -EINTR when interrupted. */
int workload_run(const struct wl_config *cfg, const struct wl_hooks *hooks, struct wl_result *res);
/* Can this process place client and server so (affinity allows the CPUs)? 0 or -EINVAL,
 * the reason printed. workload_run checks again; this is for checking before a long run. */
int workload_check_place(enum cpu_place place);
/* Set from a signal handler: the running workload is killed, later runs return -EINTR. */
void workload_interrupt(void);
/* Later runs run again (after interrupt_rearm: a Ctrl-C that ended something else). */
void workload_interrupt_clear(void);
/* Latency summary of n samples (sorted in place). */
void latency_summary(uint64_t *samples, uint64_t n, uint64_t divisor, struct wl_latency *out);

#endif
