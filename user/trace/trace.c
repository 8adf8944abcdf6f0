// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe --trace: load flows.bpf.c (trace_bpf.c), optionally run a
 * command with its children followed in the kernel, wait for --duration,
 * Ctrl-C or the command's exit, then collect the flows (trace_collect.c); the
 * command that calls this and writes the reports is trace_main.c.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "capability.h"
#include "flows.h"	/* before the skeleton: its .bss has struct fl_bulk_slot */
#include "flows.skel.h"
#include "interrupt.h"
#include "trace.h"
#include "trace_bpf.h"
#include "metrics_http.h"
#include "trace_collect.h"
#include "trace_live.h"
#include "trace_metrics.h"
#include "trace_outliers.h"
#include "util.h"

/* ------------------------------------------------------------------ options */

enum { OPT_TRACE = 1200, OPT_COMM, OPT_SLOWER_THAN, OPT_DETAIL, OPT_LIVE, OPT_MAX_FLOWS };

static const struct argp_option tr_options[] = {
	{ "trace", OPT_TRACE, NULL, 0,
	  "Trace the messages of running programs on AF_UNIX stream and loopback TCP sockets, "
	  "grouped into flows (until --duration, Ctrl-C or the end of -- COMMAND)", 1 },
	{ NULL, 0, NULL, 0, "Trace (--trace; --pid, --port, --unix, --duration, --json apply):", 5 },
	{ "comm", OPT_COMM, "NAME", 0,
	  "Only messages one of whose ends is a process named NAME (repeatable, up to 8; as the "
	  "report prints it: \\\\ and \\xHH escapes)" },
	{ "slower-than", OPT_SLOWER_THAN, "DUR", 0,
	  "Also report each message slower than DUR (e.g. 500us, 2ms; at most 60s) with its "
	  "stage timeline: in the text report, in --json's \"outliers\" and in --out DIR's "
	  "slow.jsonl" },
	{ "detail", OPT_DETAIL, "LEVEL", 0,
	  "syscall (--trace's default): the five syscall-level stages; full (--compare of "
	  "programs' default): they are also cut into "
	  "--compare's kernel stages (the send's TCP/IP output, device, receive softirq, wakeup; "
	  "the receiver's wait for a CPU, copy, return), nine more tracepoints, ~5 % more CPU "
	  "(docs/BENCHMARKS.md)" },
	{ "live", OPT_LIVE, NULL, 0,
	  "A full-screen table of the flows, redrawn every --interval S (default 1): keys m, p, "
	  "b, s sort by msgs/s, p99, bytes, top stage; t shows unix, tcp or all; q quits and "
	  "prints the report. Not a terminal: the table as plain text every interval" },
	{ "max-flows", OPT_MAX_FLOWS, "N", 0,
	  "Flows the kernel keeps at once (1 to 65536; default: up to 4096, as many as 128 MiB "
	  "holds: a flow takes 8 KiB of kernel memory per CPU). A flow beyond it is counted in "
	  "flow_map_full" },
	{},
};

static error_t tr_parse(int key, char *arg, struct argp_state *state)
{
	struct trace_cmd_opts *topts = state->input;
	static uint64_t given;

	if (key == OPT_SLOWER_THAN || key == OPT_DETAIL || key == OPT_MAX_FLOWS)	/* --comm is repeatable */
		option_once(tr_options, key, &given);
	switch (key) {
	case OPT_TRACE:
		topts->enabled = true;
		break;
	case OPT_COMM: {
		/* the name as the report prints it (str_escape): \\, \xHH; no NUL in a comm */
		static char names[FL_MAX_COMMS][FL_COMM_LEN];
		char *name = names[topts->n_comms < FL_MAX_COMMS ? topts->n_comms : 0];
		int n = topts->n_comms < FL_MAX_COMMS ? str_unescape(arg, name, FL_COMM_LEN - 1) : 0;

		if (n <= 0 || memchr(name, 0, n)) {
			say_error("--comm: '%s' is not a process name of 1 to 15 "
				"bytes (as the report prints it: \\\\ and \\xHH escapes), or more "
				"than 8 were given", arg);
			exit(2);
		}
		name[n] = 0;
		topts->comms[topts->n_comms++] = name;
		break;
	}
	case OPT_SLOWER_THAN:
		if (parse_duration_ns(arg, 60000000000ull, &topts->slower_than_ns))
			usage_exit("--slower-than: '%s' is not a duration with a unit "
				"(ns, us, ms, s) in (0, 60s], e.g. 2ms", arg);
		break;
	case OPT_LIVE:
		topts->live = true;
		break;
	case OPT_MAX_FLOWS: {
		uint64_t n;

		if (parse_u64(arg, 1, TR_FLOW_MAP_MAX, &n))
			usage_exit("--max-flows: '%s' is not a number of flows from 1 to %d", arg,
				   TR_FLOW_MAP_MAX);
		topts->max_flows = n;
		break;
	}
	case OPT_DETAIL:
		if (strcmp(arg, "full") && strcmp(arg, "syscall"))
			usage_exit("--detail: '%s' is not a detail level: full or "
				"syscall", arg);
		topts->detail = !strcmp(arg, "full") ? TRACE_DETAIL_FULL : TRACE_DETAIL_SYSCALL;
		break;
	case ARGP_KEY_ARG:
		if (!topts->enabled)
			return ARGP_ERR_UNKNOWN;
		/* -- COMMAND [ARG...]: the rest of the line */
		topts->argv = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		/* "--" and nothing after it: not a run of the whole host until Ctrl-C */
		if (topts->enabled && !topts->argv && state->quoted && state->quoted >= state->argc)
			usage_exit("--trace: nothing after '--': give the command to run "
				"(-- COMMAND [ARG...]), or drop the '--'");
		/* --detail: also --compare of programs (options.c checks) */
		if (!topts->enabled && (topts->n_comms || topts->slower_than_ns || topts->live ||
					topts->max_flows))
			usage_exit("%s needs --trace",
				topts->n_comms ? "--comm" : topts->live ? "--live" :
				topts->max_flows ? "--max-flows" : "--slower-than");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp trace_argp = { .options = tr_options, .parser = tr_parse };

/* ------------------------------------------------------------------ run */

/* How often the flows of exited processes move to user space: well before a long run's
 * new processes fill the flow map (trace_flow_map_entries). */
#define TR_HARVEST_NS	(10 * 1000000000ull)

/* Listening TCP ports now (/proc/net/tcp, tcp6): the server side of a connection. */
static void seed_listen_ports(struct flows_bpf *skel)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512];
	unsigned port, st;
	__u8 one = 1;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		FILE *f = fopen(files[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			/* "  0: 0100007F:1F90 00000000:0000 0A ..." */
			if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &port, &st) == 2 &&
			    st == 0x0A) {
				__u16 p = port;

				bpf_map__update_elem(skel->maps.lports, &p, sizeof(p), &one, sizeof(one),
						     BPF_ANY);
			}
		}
		fclose(f);
	}
}

/* Tasks keep whether their process is in tgids until this generation moves. */
static void tgids_changed(struct flows_bpf *skel)
{
	__atomic_add_fetch(&skel->bss->tgids_gen, 1, __ATOMIC_SEQ_CST);
}

static int add_tgid(struct flows_bpf *skel, __u32 tgid)
{
	__u8 one = 1;
	int err;

	err = bpf_map__update_elem(skel->maps.tgids, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);
	tgids_changed(skel);
	return err;
}

/* --cgroup PATH: the cgroup the kernel tests each end's task against. 0 or -errno. */
static int set_cgroup(struct flows_bpf *skel, const char *path)
{
	__u32 zero = 0;
	int fd, err = 0;

	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || bpf_map__update_elem(skel->maps.cgroup_filter, &zero, sizeof(zero), &fd,
					   sizeof(fd), BPF_ANY)) {
		err = -errno;
		say_error("--trace: cannot use --cgroup %s: %s", path,
			strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return err;
}

/* Fork the command into its own process group, held on a pipe until tracing runs (write to
 * *go_fd); *err_fd reads execvp's errno if it fails, EOF once the command runs
 * (close-on-exec). */
static pid_t spawn(char **argv, int *go_fd, int *err_fd)
{
	pid_t pid, parent = getpid();
	int p[2], e[2];
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (pipe2(e, O_CLOEXEC)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		close(e[0]);
		close(e[1]);
		return -1;
	}
	if (pid == 0) {
		int err;

		close(p[1]);
		close(e[0]);
		setpgid(0, 0);
		/* udsprobe killed outright (SIGKILL, a second Ctrl-C): the command goes too, as the
		 * workload's processes do, and the janitor stops the rest of its group; a run that
		 * ends gives the group SIGTERM first (stop_group) */
		if (!child_dies_with_parent(parent, SIGKILL, true))
			_exit(127);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		err = errno;
		say_error("--trace: cannot run '%s': %s", argv[0], strerror(err));
		/* the parent then exits 1; if this write fails it sees EOF and only exit status 127 */
		if (write(e[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);	/* both sides: whichever runs first */
	close(p[0]);
	close(e[1]);
	*go_fd = p[1];
	*err_fd = e[0];
	return pid;
}

/*
 * The controlling terminal, when udsprobe is its foreground job (run from a shell's prompt),
 * else -1. The command's group takes it over, as a shell's job would: it reads the terminal,
 * Ctrl-C and Ctrl-Z reach it (docs/TRACE.md, "The command's processes").
 */
static int terminal_held(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0 && tcgetpgrp(fd) == getpgrp())
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The terminal from group `from` to group `to`, if `from` holds it: never taken from the
 * shell once it has taken it back (`bg`, `kill %1`). SIGTTOU is ignored meanwhile, as shells
 * do: udsprobe takes it back from the background. */
static void terminal_move(int tty, pid_t from, pid_t to)
{
	if (tty >= 0 && tcgetpgrp(tty) == from)
		tcsetpgrp(tty, to);
}

/* Ctrl-Z stopped the command, the terminal's foreground job: stop udsprobe too, so the shell
 * sees its job stopped; at `fg`, the terminal goes back to the command; it continues. */
static void command_stopped(int tty, pid_t pgid)
{
	terminal_move(tty, pgid, getpgrp());
	raise(SIGTSTP);		/* discarded in an orphaned process group: continue at once */
	terminal_move(tty, getpgrp(), pgid);
	kill(-pgid, SIGCONT);
}

/* Reap what of group pgid is ours (the command, orphans we took as the subreaper), keeping
 * the command's exit status. True once nothing of the group is left. */
static bool group_gone(pid_t pgid, struct trace_run *run)
{
	int status;
	pid_t r;

	while ((r = waitpid(-pgid, &status, WNOHANG)) > 0)
		if (r == pgid)
			run->exit_status = exit_code(status);
	return kill(-pgid, 0) && errno == ESRCH;
}

/*
 * The run is over: the command's process group (the command if it still runs, and whatever
 * it started there) gets SIGTERM, and SIGKILL if anything is left 2 s later; all of it ours
 * is reaped. leader_runs: the command itself has not exited.
 */
static void stop_group(const struct trace_opts *o, pid_t pgid, bool leader_runs,
		       struct trace_run *run)
{
	const char *name = o->argv ? o->argv[0] : "the command";
	uint64_t give_up = now_ns() + 2000000000ull;
	int status;

	if (kill(-pgid, SIGTERM))
		return;		/* nothing left */
	if (!leader_runs)
		say_error("--trace: '%s' exited and left processes running in its "
			"process group; stopping them", name);
	while (!group_gone(pgid, run) && now_ns() < give_up)
		usleep(20000);
	if (group_gone(pgid, run))
		return;
	/* something ignores SIGTERM: do not wait for it forever */
	leader_runs = run->exit_status < 0;
	say_error("--trace: %s'%s' did not exit within 2 s of SIGTERM; killed",
		leader_runs ? "" : "processes started by ", name);
	kill(-pgid, SIGKILL);
	if (leader_runs && waitpid(pgid, &status, 0) == pgid)
		run->exit_status = exit_code(status);
	give_up = now_ns() + 1000000000ull;	/* a process in D state may take a while */
	while (!group_gone(pgid, run) && now_ns() < give_up)
		usleep(20000);
}

/* Until --duration, Ctrl-C or the command's end, taking in outliers (ol) as they come
 * and, every TR_HARVEST_NS, the flows of processes that have exited; then the command's
 * group is stopped. tty: the terminal handed to the command's group, or -1. */
struct scrape {
	struct flows_bpf *skel;
	const struct trace_opts *o;
	const struct trace_run *run;
};

/* GET /metrics: the flows so far, from a snapshot (the run and the map unchanged). */
static void scrape_body(void *ctx, FILE *f)
{
	const struct scrape *c = ctx;
	struct trace_run snap;
	int err = trace_snapshot(c->skel, c->o, c->run, &snap);

	if (err) {
		fprintf(f, "# udsprobe: reading the flow map failed: %s\n", strerror(-err));
		return;
	}
	trace_metrics_write(&snap, f);
	trace_run_free(&snap);
}

static void prom_body(void *ctx, FILE *f)
{
	trace_metrics_write(ctx, f);
}

/* Every --interval (and --prom once more at the end): one snapshot of the flows so far (the
 * run and the map unchanged) for the live view and the --prom file. */
static void interval_tick(struct flows_bpf *skel, const struct trace_opts *o,
			  const struct trace_run *run, struct trace_live *live, bool stats,
			  uint64_t t0, bool *prom_failed)
{
	struct trace_live_head h = {
		.attach_mode = run->attach_mode, .elapsed_ns = now_ns() - t0,
		.outliers_dropped = run->outliers_dropped,
	};
	struct trace_run snap;
	int err;

	if (trace_snapshot(skel, o, run, &snap))
		return;		/* this interval is skipped; the next tries again */
	if (live) {
		h.cost_known = stats && trace_bpf_cost(skel, &h.cost_ns);
		trace_live_frame(live, &snap, &h);
	}
	if (o->prom_path && (err = metrics_file_write(o->prom_path, prom_body, &snap)) &&
	    !*prom_failed) {	/* said once; later intervals try again */
		say_error("cannot write --prom %s: %s", o->prom_path,
			err == -EEXIST ? "it is no longer a regular file" : strerror(-err));
		*prom_failed = true;
	}
	trace_run_free(&snap);
}

/* t0: the command's release (its run time starts there, not after its exec), else 0: now */
static int wait_loop(struct flows_bpf *skel, const struct trace_opts *o, pid_t child, int tty,
		     struct trace_outliers *ol, struct metrics_http *http, bool stats,
		     uint64_t t0, struct trace_run *run)
{
	struct scrape sc = { .skel = skel, .o = o, .run = run };
	uint64_t end, harvest, frame;
	struct trace_live *live = o->live ? trace_live_open() : NULL;
	bool leader_runs = child > 0, quit = false, prom_failed = false;
	/* the command's exit wakes the idle wait at once: its run time (--compare of programs'
	 * wall time) to the microsecond, not to the loop's 20 ms tick */
	int status, err = 0, exited_fd = child > 0 ? (int)syscall(SYS_pidfd_open, child, 0) : -1;
	uint64_t t_exit = 0;

	t0 = t0 ? t0 : now_ns();
	end = o->duration_s ? t0 + (uint64_t)(o->duration_s * 1e9) : 0;
	harvest = t0 + TR_HARVEST_NS;
	frame = t0;
	run->exit_status = -1;
	/* once more well after the adds: a program that read the last bump before it saw the
	 * new tgids (a weakly ordered CPU) cached its answer under a generation now gone */
	usleep(20000);
	tgids_changed(skel);
	while (!udsprobe_stop) {
		if (end && now_ns() >= end)
			break;
		if (now_ns() >= harvest) {
			harvest = now_ns() + TR_HARVEST_NS;
			if ((err = trace_harvest(skel, o, run))) {
				say_error("--trace: reading the flow map failed: %s",
					strerror(-err));
				break;
			}
		}
		if (leader_runs) {
			pid_t r = waitpid(child, &status, WNOHANG | (tty >= 0 ? WUNTRACED : 0));

			if (r == child && WIFSTOPPED(status)) {
				command_stopped(tty, child);
			} else if (r == child) {
				run->exit_status = exit_code(status);
				leader_runs = false;
				t_exit = t_exit ? t_exit : now_ns();
				break;
			}
		}
		if ((live || o->prom_path) && now_ns() >= frame) {
			frame = now_ns() + (uint64_t)(o->interval_s * 1e9);
			interval_tick(skel, o, run, live, stats, t0, &prom_failed);
		}
		/* one of them waits the 20 ms, the others 0 (with all waiting 0 ms the loop spun
		 * a whole CPU): the ring buffer, the scrapes, the keys, else a sleep */
		if (ol && (err = trace_outliers_poll(ol, 20))) {
			say_error("--slower-than: reading the ring buffer failed: %s",
				strerror(-err));
			break;
		}
		if (http)
			metrics_http_wait(http, now_ns() + (ol ? 0 : 20000000), scrape_body, &sc);
		if (live && (quit = trace_live_keys(live, ol || http ? 0 : 20)))
			break;
		if (!ol && !http && !(live && trace_live_screen(live))) {
			struct pollfd p = { .fd = exited_fd, .events = POLLIN };

			if (exited_fd < 0 || !leader_runs)
				usleep(20000);
			else if (poll(&p, 1, 20) == 1 && !t_exit)
				t_exit = now_ns();
		}
	}
	if (exited_fd >= 0)
		close(exited_fd);
	trace_live_close(live);		/* the terminal as it was, before the report */
	if (o->prom_path)		/* the file ends with the run's totals */
		interval_tick(skel, o, run, NULL, false, t0, &prom_failed);
	run->interrupted = udsprobe_stop || quit;
	run->duration_ns = (t_exit ? t_exit : now_ns()) - t0;
	terminal_move(tty, child, getpgrp());
	if (child > 0)
		stop_group(o, child, leader_runs, run);
	return err;
}

int trace_run(const struct trace_opts *o, struct trace_run *run)
{
	struct flows_bpf *skel = NULL;
	struct trace_outliers *ol = NULL;
	enum attach_mode mode;
	pid_t child = 0;
	struct metrics_http *http = NULL;
	char why[256];
	int i, err, go = -1, exec_err = -1, tty = -1, stats = -1;
	uint64_t t_go = 0;	/* the command released: its run time starts */

	memset(run, 0, sizeof(*run));
	run->argv = o->argv;
	run->exit_status = -1;
	libbpf_setup(o->verbose);
	/* attached already: until the tgids below are in, filtered runs count nothing */
	err = trace_bpf_open(o, &skel, &mode);
	if (err)
		return err;
	run->attach_mode = attach_mode_names[mode];
	run->kstages = skel->rodata->kstages;
	run->rkstages = skel->rodata->rkstages;
	run->detail = o->kernel_stages ? "full" : "syscall";
	run->flow_map_entries = bpf_map__max_entries(skel->maps.flows);
	run->flow_map_cpus = libbpf_num_possible_cpus();
	for (i = 0; i < o->n_pids; i++)
		add_tgid(skel, o->pids[i]);
	err = set_cgroup(skel, o->cgroup);
	if (err)
		goto out;
	seed_listen_ports(skel);
	err = trace_outliers_open(skel, o, run, &ol);
	if (err)
		goto out;
	/* before the command starts: a --prom path that cannot be a file stops here */
	if (o->prom_path && metrics_file_target_ok(o->prom_path, why, sizeof(why))) {
		say_error("cannot write --prom %s: %s", o->prom_path, why);
		err = -EINVAL;
		goto out;
	}
	/* before the command starts: a port in use stops here */
	if (o->metrics_addr && (err = metrics_http_open(o->metrics_addr, &http, why, sizeof(why)))) {
		say_error("cannot serve --metrics %s: %s", o->metrics_addr, why);
		goto out;
	}
	if (o->argv) {
		child = spawn(o->argv, &go, &exec_err);
		if (child < 0) {
			err = -errno;
			say_error("--trace: cannot start '%s': %s", o->argv[0],
				strerror(errno));
			goto out;
		}
		add_tgid(skel, child);
		run->pid = child;
		if (o->guard)
			tmpdir_guard(o->guard, child);
		if (o->terminal && (tty = terminal_held()) >= 0) {
			signal(SIGTTOU, SIG_IGN);	/* ours only: the command has forked */
			terminal_move(tty, getpgrp(), child);
		}
	}
	if (child > 0) {
		t_go = now_ns();
		if (write(go, "g", 1) != 1)
			say_error("--trace: the command did not start");
		close(go);
		go = -1;
		/* EOF: it runs; an errno: execvp failed (said by the child) */
		if (read(exec_err, &run->exec_errno, sizeof(run->exec_errno)) !=
		    sizeof(run->exec_errno))
			run->exec_errno = 0;
	} else {
		say_error("tracing%s; Ctrl-C to stop",
			o->duration_s ? " for --duration" : "");
	}
	/* on while the fd is open: the kernel-stage programs' cost per hit (--if-unix), the
	 * hooks' cost so far (--live) */
	if ((o->kernel_stages && o->hit_costs) || o->live)
		stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	err = wait_loop(skel, o, child, tty, ol, http, stats >= 0, t_go, run);
	child = 0;
	if (stats >= 0) {	/* host-wide while on: off as soon as the run ends */
		if (o->kernel_stages && o->hit_costs)
			trace_bpf_hit_ns(skel, run->kstage_hit_ns);
		close(stats);
		stats = -1;
	}
	trace_outliers_close(ol);
	ol = NULL;
	if (!err)
		err = trace_collect(skel, o, run);
out:
	if (go >= 0)
		close(go);
	if (exec_err >= 0)
		close(exec_err);
	if (child > 0) {	/* failed before the command ran */
		kill(-child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (tty >= 0) {
		signal(SIGTTOU, SIG_DFL);
		close(tty);
	}
	trace_outliers_close(ol);
	if (stats >= 0)
		close(stats);
	metrics_http_close(http);
	if (skel)
		skeleton_links_destroy(skel->skeleton);
	flows_bpf__destroy(skel);
	return err;
}

void trace_run_free(struct trace_run *run)
{
	int i;

	for (i = 0; i < run->n_flows; i++)
		trace_flow_free(&run->flows[i]);
	free(run->flows);
	run->flows = NULL;
	run->n_flows = run->flows_cap = 0;
	free(run->outliers);
	run->outliers = NULL;
	run->n_outliers = 0;
	free(run->names);
	run->names = NULL;
	run->n_names = run->names_cap = 0;
}
