/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The options --backlog and --trace share: which sockets and processes (--unix, --port, --pid,
 * --netns, --cgroup) and how often and where the metrics go (--interval, --prom, --metrics).
 * watch_argp, a child of the command line's parser, fills the struct its parent hands it;
 * which action takes which of them is the command line's check (options.c).
 */
#ifndef UDSPROBE_WATCH_OPTS_H
#define UDSPROBE_WATCH_OPTS_H

#include <argp.h>
#include <stdint.h>

#include "cgroup.h"	/* CGROUP_TXT */

#define MAX_FILTERS	16

struct watch_filters {
	const char *unix_paths[MAX_FILTERS];	/* as given: the escaped form (fmt_unix_addr) */
	int n_unix;
	unsigned ports[MAX_FILTERS];
	int n_ports;
	int pids[MAX_FILTERS];
	int n_pids;
	uint32_t netns;			/* --netns: its inode (0: any) */
	const char *netns_path;		/* ... when given as a file (/run/netns/NAME) */
	const char *cgroup;		/* --cgroup as given (NULL: any) */
	char cgroup_rel[CGROUP_TXT];	/* its path in the hierarchy, as /proc/PID/cgroup says */
	uint64_t cgroup_id;		/* its inode = the kernel's cgroup id */
};

struct watch_opts {
	struct watch_filters f;
	double interval_s;		/* --interval S (0: not given; 1 s then) */
	const char *prom_path;		/* --prom PATH, or NULL */
	const char *metrics_addr;	/* --metrics ADDR:PORT, or NULL */
};

extern const struct argp watch_argp;
/* The first filter, --metrics or --prom given (by name: "--unix"), or NULL. */
const char *watch_filter_given(const struct watch_opts *o);

#endif
