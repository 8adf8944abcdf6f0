// SPDX-License-Identifier: GPL-2.0
/* The options --backlog and --trace share (watch_opts.h): parsed and checked one by one here. */
#include <stdint.h>
#include <sys/socket.h>

#include "metrics_http.h"
#include "unix_name.h"
#include "util.h"
#include "watch_opts.h"

enum {
	OPT_UNIX = 1500,
	OPT_PORT,
	OPT_PID,
	OPT_INTERVAL,
	OPT_PROM,
	OPT_METRICS,
	OPT_NETNS,
	OPT_CGROUP,
};

/* group 4: listed with --backlog's own options under its heading in --help */
static const struct argp_option watch_options[] = {
	{ "unix", OPT_UNIX, "PATH", 0, "Watch the AF_UNIX listener bound to PATH (repeatable; "
	  "@NAME for an abstract name)", 4 },
	{ "port", OPT_PORT, "N", 0, "Watch the TCP listener(s) on local port N (repeatable)" },
	{ "pid", OPT_PID, "P", 0, "Watch the listeners process P holds (repeatable)" },
	{ "netns", OPT_NETNS, "PATH|INODE", 0, "Only listeners in this network namespace "
	  "(/proc/PID/ns/net, /run/netns/NAME or the inode number)" },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only listeners whose owner is in this cgroup v2 "
	  "directory or below (e.g. /sys/fs/cgroup/system.slice/php8.2-fpm.service); with "
	  "--trace: only messages one of whose ends is a task in it" },
	{ "interval", OPT_INTERVAL, "S", 0, "Live view (and --prom) every S seconds (default 1; "
	  "--backlog's, and --trace --live's or --prom's)" },
	{ "prom", OPT_PROM, "PATH", 0, "Write Prometheus text to PATH every interval, atomically "
	  "(for node_exporter's textfile collector; --trace too: its flows so far, and once more "
	  "at the end)" },
	{ "metrics", OPT_METRICS, "ADDR:PORT", 0, "Serve the Prometheus metrics over HTTP at "
	  "http://ADDR:PORT/metrics while running (e.g. 127.0.0.1:9464; :9464 = all addresses; "
	  "--trace too: its flows so far)" },
	{},
};

static error_t watch_parse(int key, char *arg, struct argp_state *state)
{
	struct watch_opts *o = state->input;
	struct watch_filters *f = &o->f;
	char path[UNIX_NAME_LEN], why[160];
	static uint64_t given;
	uint32_t len;
	uint64_t v;

	if (key != OPT_UNIX && key != OPT_PORT && key != OPT_PID)	/* these are repeatable */
		option_once(watch_options, key, &given);
	switch (key) {
	case OPT_UNIX:
		if (f->n_unix == MAX_FILTERS)
			usage_exit("--unix: at most 16 paths");
		if (parse_unix_addr(arg, path, &len))
			usage_exit("--unix: '%s' is not a socket path (1 to 107 bytes, or @NAME; "
				  "\\\\, \\0 and \\xHH escapes)", arg);
		f->unix_paths[f->n_unix++] = arg;
		break;
	case OPT_PORT:
		if (f->n_ports == MAX_FILTERS)
			usage_exit("--port: at most 16 ports");
		if (parse_u64(arg, 1, 65535, &v))
			usage_exit("--port: '%s' is not a port number from 1 to 65535", arg);
		f->ports[f->n_ports++] = v;
		break;
	case OPT_PID:
		if (f->n_pids == MAX_FILTERS)
			usage_exit("--pid: at most 16 pids");
		if (parse_u64(arg, 1, 4194304, &v))
			usage_exit("--pid: '%s' is not a process id", arg);
		f->pids[f->n_pids++] = v;
		break;
	case OPT_NETNS:
		if (netns_parse(arg, &f->netns, why, sizeof(why)))
			usage_exit("--netns: '%s': %s", arg, why);
		if (parse_u64(arg, 1, UINT32_MAX, &v))
			f->netns_path = arg;
		break;
	case OPT_CGROUP:
		if (cgroup_parse(arg, f->cgroup_rel, sizeof(f->cgroup_rel), &f->cgroup_id, why,
				 sizeof(why)))
			usage_exit("--cgroup: '%s': %s", arg, why);
		f->cgroup = arg;
		break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 86400, &o->interval_s) || o->interval_s < 0.1)
			usage_exit("--interval: '%s' is not a number of seconds in [0.1, 86400]", arg);
		break;
	case OPT_PROM:
		if (!*arg)
			usage_exit("--prom needs a path");
		o->prom_path = arg;
		break;
	case OPT_METRICS: {
		struct sockaddr_storage sa;
		unsigned int salen;

		if (metrics_http_parse(arg, &sa, &salen))
			usage_exit("--metrics: '%s' is not ADDR:PORT (a numeric IPv4 address, [IPv6] "
				  "or nothing for all, and a port from 1 to 65535)", arg);
		o->metrics_addr = arg;
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp watch_argp = { .options = watch_options, .parser = watch_parse };

const char *watch_filter_given(const struct watch_opts *o)
{
	return o->f.n_unix ? "--unix" : o->f.n_ports ? "--port" : o->f.n_pids ? "--pid" :
	       o->f.cgroup ? "--cgroup" : o->metrics_addr ? "--metrics" :
	       o->prom_path ? "--prom" : NULL;
}
