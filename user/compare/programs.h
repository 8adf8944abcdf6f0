/*
 * --compare of real programs (--server, --client-unix, --client-tcp): one client/server pair
 * run over both transports, each client traced with the --trace machinery (trace.h), the
 * flows on the pair's private socket and port kept. docs/PROGRAMS.md.
 */
#ifndef UDSPROBE_PROGRAMS_H
#define UDSPROBE_PROGRAMS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "predict.h"
#include "tmpdir.h"
#include "trace.h"

#define PG_OUTPUT_MAX	(64 * 1024)	/* bytes of a client's output kept (its end) */

/* The two transports, indexed as enum fl_transport - 1. */
enum { PG_UNIX, PG_TCP, PG__COUNT };

/* The options of --compare with programs: programs_argp (a child of the command line's
 * parser) fills the first four; the command line adds the two that other options set. */
struct programs_opts {
	const char *server, *client[PG__COUNT];
	double ready_timeout_s;
	bool ready_timeout_given;
	bool kernel_stages;		/* --detail full, the default here */
	enum if_unix_mode if_unix;	/* the unix side predicted from the TCP run */
};
extern const struct argp programs_argp;
/* --server, --client-unix, --client-tcp or --ready-timeout was given. */
bool programs_requested(const struct programs_opts *o);
/* Once the action is --compare: both clients given, a --server that names {unix} or {port};
 * 0, or -EINVAL after saying what is wrong. */
int programs_check(const struct programs_opts *o);

struct program_side {
	char *cmd;		/* the client command, placeholders filled */
	bool ran;		/* traced to its end (or interrupted) */
	int exit_status;	/* exit code, or 128 + signal; -1 if it never ended */
	uint64_t wall_ns;	/* from its start to its exit */
	char *output;		/* stdout and stderr together, the last PG_OUTPUT_MAX bytes */
	size_t output_len;
	bool output_cut;	/* the start was dropped */
	struct trace_run run;	/* flows on this transport's endpoint only */
	/* CPU time over this run, ns: the client's tree (RUSAGE_CHILDREN: the reaped client and
	 * what it waited for) and the server's processes (/proc/PID/stat, tick-sampled) */
	bool has_cpu;
	double client_user_ns, client_sys_ns, server_user_ns, server_sys_ns;
};

struct program_compare {
	char *server_cmd;	/* placeholders filled; NULL without --server */
	struct tmpdir dir;	/* the private directory ({dir}) and its janitor */
	char unix_path[108];	/* {unix}: fits sun_path */
	unsigned port, port2;	/* {port}, {port2} */
	char endpoint[PG__COUNT][PATH_MAX];	/* as --trace names them: the path, 127.0.0.1:PORT */
	struct program_side side[PG__COUNT];
	const char *attach_mode;
	bool interrupted;
	const struct programs_opts *o;
};

/* Run it all as o says: 0, -EINTR on Ctrl-C (what ran is in pc), other -errno (message
 * printed). */
int programs_run(struct program_compare *pc, const struct programs_opts *o, int verbose);
void programs_free(struct program_compare *pc);
/* Client options as given (with placeholders), for messages. */
const char *programs_client_opt(int side);

#endif
