// SPDX-License-Identifier: GPL-2.0
/*
 * --compare of real programs: fill {unix}, {port}, {port2} and {dir} with a private socket
 * path and free loopback ports, start --server (program_server.c) and wait until it accepts,
 * then run --client-unix and --client-tcp one after the other, each under --trace
 * (trace_run: the client and its children followed, the server's process group added), and
 * keep the flows on the transport's own endpoint. The server is stopped and the directory
 * removed on every path out, Ctrl-C included.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interrupt.h"
#include "program_server.h"
#include "predict.h"
#include "programs.h"
#include "tmpdir.h"
#include "util.h"

#define MAX_SERVER_PIDS	256

enum { OPT_SERVER = 1300, OPT_CLIENT_UNIX, OPT_CLIENT_TCP, OPT_READY_TIMEOUT };

static const struct argp_option pg_options[] = {
	{ NULL, 0, NULL, 0,
	  "Real programs (--compare with --server/--client-*): {unix}, {port}, {port2}, {dir} in "
	  "the commands are replaced by a private socket path, free loopback ports and the private "
	  "directory; each command runs through /bin/sh:", 6 },
	{ "server", OPT_SERVER, "CMD", 0,
	  "Start CMD first, in the foreground, and wait until it accepts on {unix}, {port} and "
	  "{port2} (those it names); stopped at the end" },
	{ "client-unix", OPT_CLIENT_UNIX, "CMD", 0,
	  "The client over the unix socket; traced (without it: predicted from the TCP run)" },
	{ "client-tcp", OPT_CLIENT_TCP, "CMD", 0, "The same client over TCP loopback; traced" },
	{ "ready-timeout", OPT_READY_TIMEOUT, "S", 0,
	  "How long --server may take to accept connections (default 10)" },
	{},
};

static error_t pg_parse(int key, char *arg, struct argp_state *state)
{
	struct programs_opts *popts = state->input;
	static uint64_t given;

	if (key == ARGP_KEY_INIT) {
		popts->ready_timeout_s = 10;
		return 0;
	}
	option_once(pg_options, key, &given);
	switch (key) {
	case OPT_SERVER:
	case OPT_CLIENT_UNIX:
	case OPT_CLIENT_TCP:
		if (!*arg) {
			say_error("--%s needs a command",
				key == OPT_SERVER ? "server" : key == OPT_CLIENT_UNIX ? "client-unix" :
				"client-tcp");
			exit(2);
		}
		*(key == OPT_SERVER ? &popts->server : &popts->client[key - OPT_CLIENT_UNIX]) = arg;
		break;
	case OPT_READY_TIMEOUT:
		if (parse_seconds(arg, 600, &popts->ready_timeout_s)) {
			say_error("--ready-timeout: '%s' is not a number of seconds in "
				"(0, 600]", arg);
			exit(2);
		}
		popts->ready_timeout_given = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp programs_argp = { .options = pg_options, .parser = pg_parse };

bool programs_requested(const struct programs_opts *o)
{
	return o->server || o->client[PG_UNIX] || o->client[PG_TCP] || o->ready_timeout_given;
}

int programs_check(const struct programs_opts *o)
{
	if (!o->client[PG_TCP])
		return usage_error("--compare of programs needs --client-tcp, and --client-unix "
			"to measure the switch (the same client, once per transport); with --client-tcp "
			"alone the unix side is predicted (docs/PREDICT.md)");
	if (!o->client[PG_UNIX] && o->server && !strstr(o->server, "{port}"))
		return usage_error("with --client-tcp alone, --server must listen on {port}");
	if (!o->client[PG_UNIX] && o->if_unix == IFU_OFF)
		return usage_error("--compare of programs with --client-tcp alone predicts the "
			"unix side, which --if-unix off (or UDSPROBE_IF_UNIX=off) turns off: give "
			"--client-unix too, or --trace for a trace alone");
	if (o->server && !strstr(o->server, "{unix}") && !strstr(o->server, "{port}"))
		return usage_error("--server names neither {unix} nor {port}: udsprobe "
			"waits until the server accepts there and traces that endpoint");
	return 0;
}

const char *programs_client_opt(int side)
{
	return side == PG_UNIX ? "--client-unix" : "--client-tcp";
}

/* ------------------------------------------------------------------ set-up */

/* A loopback port free now, different from avoid (the kernel picks it). */
static int free_port(unsigned avoid, unsigned *out)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(in);
	int tries, fd;

	for (tries = 0; tries < 8; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		in.sin_port = 0;
		if (bind(fd, (struct sockaddr *)&in, sizeof(in)) ||
		    getsockname(fd, (struct sockaddr *)&in, &len)) {
			int err = -errno;

			close(fd);
			return err;
		}
		close(fd);
		*out = ntohs(in.sin_port);
		if (*out != avoid)
			return 0;
	}
	return -EADDRINUSE;
}

/* tmpl with every {unix}, {port}, {port2} and {dir} replaced; other braces stay. */
static char *fill(const char *tmpl, const struct program_compare *pc)
{
	char port[16], port2[16];
	const struct { const char *name, *value; } ph[] = {
		{ "{unix}", pc->unix_path }, { "{port}", port }, { "{port2}", port2 },
		{ "{dir}", pc->dir.path },
	};
	size_t cap = strlen(tmpl) + 1, len = 0, i;
	const char *p;
	char *out;

	snprintf(port, sizeof(port), "%u", pc->port);
	snprintf(port2, sizeof(port2), "%u", pc->port2);
	for (p = tmpl; *p; p++)
		if (*p == '{')
			cap += PATH_MAX;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (p = tmpl; *p;) {
		for (i = 0; i < ARRAY_SIZE(ph); i++)
			if (!strncmp(p, ph[i].name, strlen(ph[i].name)))
				break;
		if (i < ARRAY_SIZE(ph)) {
			len += snprintf(out + len, cap - len, "%s", ph[i].value);
			p += strlen(ph[i].name);
		} else {
			out[len++] = *p++;
		}
	}
	out[len] = 0;
	return out;
}

static int setup(struct program_compare *pc)
{
	int err, s;

	/* others may pass through to the socket by its name (servers that drop privileges,
	 * php-fpm pools, nginx workers) but not list the directory */
	err = tmpdir_create(&pc->dir, "udsprobe-compare", 0711);
	if (err) {
		tmpdir_say_failure(&pc->dir, "--compare: ", "cannot create a private directory in /tmp",
				   err);
		return err;
	}
	snprintf(pc->unix_path, sizeof(pc->unix_path), "%s/server.sock", pc->dir.path);
	err = free_port(0, &pc->port);
	if (!err)
		err = free_port(pc->port, &pc->port2);
	if (err) {
		say_error("--compare: cannot find a free loopback port: %s",
			strerror(-err));
		return err;
	}
	snprintf(pc->endpoint[PG_UNIX], sizeof(pc->endpoint[PG_UNIX]), "%s", pc->unix_path);
	snprintf(pc->endpoint[PG_TCP], sizeof(pc->endpoint[PG_TCP]), "127.0.0.1:%u", pc->port);
	if (pc->o->server && !(pc->server_cmd = fill(pc->o->server, pc)))
		return -ENOMEM;
	for (s = 0; s < PG__COUNT; s++)	/* no --client-unix: that side is predicted */
		if (pc->o->client[s] && !(pc->side[s].cmd = fill(pc->o->client[s], pc)))
			return -ENOMEM;
	return 0;
}

/* ------------------------------------------------------------------ clients */

static void read_output(struct program_side *sd, const char *path)
{
	char *buf = malloc(PG_OUTPUT_MAX + 1);
	struct stat st;

	if (!buf)
		return;
	sd->output = buf;
	sd->output_len = file_tail(path, buf, PG_OUTPUT_MAX + 1);
	sd->output_cut = !stat(path, &st) && st.st_size > PG_OUTPUT_MAX;
	unlink(path);
}

/* One client under --trace: its output to a file in the private directory. */
static int run_client(struct program_compare *pc, int s, const int *pids, int n_pids,
		      int verbose)
{
	struct program_side *sd = &pc->side[s];
	char out_path[PATH_MAX + 32], *script;
	char *argv[] = { "/bin/sh", "-c", NULL, NULL };
	const char *unix_paths[] = { pc->unix_path };
	unsigned ports[] = { pc->port };
	struct trace_opts o = {
		.pids = pids, .n_pids = n_pids, .verbose = verbose, .argv = argv,
		.guard = &pc->dir,	/* its own process group, which dies with udsprobe */
		/* a comparison, not production: the full stages unless --detail syscall */
		.kernel_stages = pc->o->kernel_stages,
		/* the prediction from the TCP run (docs/PREDICT.md) */
		.hit_costs = pc->o->if_unix != IFU_OFF,
	};
	int err;

	if (s == PG_UNIX) {
		o.unix_paths = unix_paths;
		o.n_unix = 1;
	} else {
		o.ports = ports;
		o.n_ports = 1;
	}
	snprintf(out_path, sizeof(out_path), "%s/client-%s.out", pc->dir.path,
		 s == PG_UNIX ? "unix" : "tcp");
	/* the path is ours (mkdtemp: no quote in it); the command follows as sh code */
	if (asprintf(&script, "exec </dev/null >'%s' 2>&1\n%s", out_path, sd->cmd) < 0)
		return -ENOMEM;
	argv[2] = script;
	err = trace_run(&o, &sd->run);
	free(script);
	if (err)
		return err;
	sd->ran = true;
	sd->exit_status = sd->run.exit_status;
	sd->wall_ns = sd->run.duration_ns;
	sd->run.argv = NULL;	/* argv was ours; the report names sd->cmd */
	read_output(sd, out_path);
	pc->attach_mode = sd->run.attach_mode;
	if (sd->run.interrupted) {
		pc->interrupted = true;
		return -EINTR;
	}
	return 0;
}

static int check_client(const struct program_compare *pc, int s)
{
	const struct program_side *sd = &pc->side[s];

	if (sd->exit_status == 0)
		return 0;
	say_error("%s '%s' failed with exit status %d%s", programs_client_opt(s),
		sd->cmd, sd->exit_status, sd->output_len ? "; it printed (the end):" : " and printed nothing");
	if (sd->output_len) {
		size_t from = sd->output_len > 2000 ? sd->output_len - 2000 : 0;

		fwrite(sd->output + from, 1, sd->output_len - from, stderr);
		if (sd->output[sd->output_len - 1] != '\n')
			fputc('\n', stderr);
	}
	return -ECHILD;
}

/* ------------------------------------------------------------------ the run */

/* User and system time of the server's processes and their reaped children so far, in ns. */
static void server_cpu(const struct program_server *srv, double *user, double *sys)
{
	int pids[MAX_SERVER_PIDS], n = srv->pid > 0 ? server_group_pids(srv, pids, MAX_SERVER_PIDS) : 0;
	double hz = sysconf(_SC_CLK_TCK);
	char path[64], buf[1024], *p;
	unsigned long long ut, st, cut, cst;
	int i, fd;
	ssize_t len;

	*user = *sys = 0;
	for (i = 0; i < n && hz > 0; i++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", pids[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		/* after "(comm)": state is field 3, utime..cstime are 14..17 */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
				&ut, &st, &cut, &cst) == 4) {
			*user += (ut + cut) * 1e9 / hz;
			*sys += (st + cst) * 1e9 / hz;
		}
	}
}

static double tv_ns(const struct timeval *tv)
{
	return tv->tv_sec * 1e9 + tv->tv_usec * 1e3;
}

static int run_clients(struct program_compare *pc, struct program_server *srv, int verbose)
{
	int pids[MAX_SERVER_PIDS], n_pids = 0, s, err;
	struct rusage r0, r1;
	double su0, ss0, su1, ss1;

	for (s = 0; s < PG__COUNT; s++) {
		struct program_side *sd = &pc->side[s];

		if (!sd->cmd)
			continue;
		if (srv->pid > 0)	/* its workers forked so far; later ones are followed */
			n_pids = server_group_pids(srv, pids, MAX_SERVER_PIDS);
		getrusage(RUSAGE_CHILDREN, &r0);
		server_cpu(srv, &su0, &ss0);
		err = run_client(pc, s, pids, n_pids, verbose);
		server_cpu(srv, &su1, &ss1);
		stop_leftovers((pid_t[]){ srv->pid, pc->dir.janitor }, 2);
		getrusage(RUSAGE_CHILDREN, &r1);
		sd->has_cpu = true;
		sd->client_user_ns = tv_ns(&r1.ru_utime) - tv_ns(&r0.ru_utime);
		sd->client_sys_ns = tv_ns(&r1.ru_stime) - tv_ns(&r0.ru_stime);
		sd->server_user_ns = su1 - su0;
		sd->server_sys_ns = ss1 - ss0;
		tmpdir_forget(&pc->dir, pc->side[s].run.pid);	/* its group is empty now */
		if (err)
			return err;
		err = check_client(pc, s);
		if (err)
			return err;
		if (srv->pid > 0 && !server_alive(srv)) {
			say_error("--server '%s' exited (status %d) during the %s run",
				srv->cmd, srv->exit_status, s == PG_UNIX ? "unix" : "tcp");
			return -ECHILD;
		}
	}
	return 0;
}

/* Until the server accepts on each of {unix}, {port}, {port2} its command names. */
static int wait_server(struct program_compare *pc, struct program_server *srv)
{
	unsigned ports[2];
	int n = 0;

	if (strstr(pc->o->server, "{port}"))
		ports[n++] = pc->port;
	if (strstr(pc->o->server, "{port2}"))
		ports[n++] = pc->port2;
	return server_wait_ready(srv, strstr(pc->o->server, "{unix}") ? pc->unix_path : NULL, ports,
				 n, pc->o->ready_timeout_s);
}

int programs_run(struct program_compare *pc, const struct programs_opts *o, int verbose)
{
	struct program_server srv = { .pid = 0 };
	char out_path[PATH_MAX + 16];
	int err;

	memset(pc, 0, sizeof(*pc));
	pc->o = o;
	pc->dir.fd = -1;
	pc->side[PG_UNIX].exit_status = pc->side[PG_TCP].exit_status = -1;
	/* processes the server or a client leave behind when their parent exits come to us
	 * (not init), so none outlives the run: stop_leftovers(), server_stop() */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	err = setup(pc);
	if (err)
		goto out;
	if (pc->server_cmd) {
		snprintf(out_path, sizeof(out_path), "%s/server.out", pc->dir.path);
		err = server_start(&srv, pc->server_cmd, out_path, &pc->dir);
		if (!err)
			err = wait_server(pc, &srv);
	}
	if (!err)
		err = run_clients(pc, &srv, verbose);
out:
	server_stop(&srv);
	stop_leftovers(&pc->dir.janitor, 1);	/* what left the server's tree when its parent died */
	tmpdir_remove(&pc->dir);
	if (err == -EINTR)
		pc->interrupted = true;
	return err;
}

void programs_free(struct program_compare *pc)
{
	int s;

	free(pc->server_cmd);
	for (s = 0; s < PG__COUNT; s++) {
		free(pc->side[s].cmd);
		free(pc->side[s].output);
		trace_run_free(&pc->side[s].run);
	}
	memset(pc, 0, sizeof(*pc));
}
