// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe: why AF_UNIX sockets beat TCP loopback, measured stage by stage in
 * the running kernel; and why unix-socket listeners overflow under load.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backlog.h"
#include "attach.h"
#include "compare.h"
#include "interrupt.h"
#include "outfile.h"
#include "reports.h"
#include "trace.h"
#include "trace_report.h"
#include "tracer.h"
#include "util.h"
#include "workload.h"

enum action { ACT_NONE, ACT_COMPARE, ACT_BACKLOG, ACT_CHECK, ACT_LIST_STAGES, ACT_TRACE, ACT__COUNT };

/* Which actions take an option, as a mask of 1 << action. */
#define FOR_COMPARE (1u << ACT_COMPARE)
#define FOR_BACKLOG (1u << ACT_BACKLOG)
#define FOR_CHECK (1u << ACT_CHECK)
#define FOR_TRACE (1u << ACT_TRACE)

static struct env {
	enum action action;
	const char *action_opt;		/* the option that chose it, for conflict messages */
	struct compare_opts cmp;
	const char *json_path;
	const char *folded_path, *svg_path, *out_dir;	/* reports.h */
	int verbose;
	bool sweep;
	/* options given that only some actions take: name and mask of those actions */
	struct { const char *name; unsigned actions; } scoped[16];
	int n_scoped;
	struct outdir out;	/* --out, opened before the run */
} env = {
	.cmp = { .warmup = UINT64_MAX, .trace = true },
	.out = { .fd = -1 },
};

const char *argp_program_version = "udsprobe " UDSPROBE_VERSION;
static const char doc[] =
"Measure, in the running kernel, why AF_UNIX stream sockets are faster than "
"TCP over loopback, and where each message's time goes.\n"
"\n"
"USAGE: udsprobe --compare|--backlog|--trace|--check|--list-stages [OPTIONS] [-- COMMAND [ARG...]]\n"
"\n"
"EXAMPLES:\n"
"  sudo ./udsprobe --compare                # UDS vs TCP loopback, explained\n"
"  sudo ./udsprobe --compare --no-trace     # the workload only, no BPF\n"
"  sudo ./udsprobe --compare --mode pingpong --size 64,4K,64K --cpu same,split\n"
"  sudo ./udsprobe --compare --out report/  # report.md, SVGs, folded, JSON\n"
"  sudo ./udsprobe --compare --duration 2 --json result.json\n"
"  sudo ./udsprobe --compare --sweep --out talk/  # the size curve, 1 B to 1 MiB\n"
"  sudo ./udsprobe --compare --mode pingpong --repeat 5  # medians and spreads\n"
"  sudo ./udsprobe --backlog                # watch listeners for overflows\n"
"  sudo ./udsprobe --backlog --unix /run/php/php-fpm.sock --interval 1\n"
"  sudo ./udsprobe --check                  # what this kernel supports\n"
"  sudo ./udsprobe --trace --duration 10    # every local UDS/TCP message, by flow\n"
"  sudo ./udsprobe --trace --comm redis-server --json trace.json\n"
"  sudo ./udsprobe --trace --unix /run/php/php-fpm.sock --port 6379 --duration 30\n"
"  sudo ./udsprobe --trace -- ./run-my-tests.sh   # the command and its children\n"
"\n"
"Exit status: 0 ok, 1 runtime failure, 2 bad usage.\n"
"\n"
"OPTIONS:";

enum {
	OPT_COMPARE = 1000,
	OPT_NO_TRACE,
	OPT_MODE,
	OPT_SIZE,
	OPT_COUNT,
	OPT_DURATION,
	OPT_WARMUP,
	OPT_CPU,
	OPT_JSON,
	OPT_FOLDED,
	OPT_SVG,
	OPT_OUT,
	OPT_ATTACH,
	OPT_CHECK,
	OPT_LIST_STAGES,
	OPT_REPEAT,
	OPT_SWEEP,
	OPT_BTF,
};

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Actions:", 1 },
	{ "compare", OPT_COMPARE, NULL, 0, "Run the paired UDS/TCP workload and compare them" },
	{ "check", OPT_CHECK, NULL, 0,
	  "Print what this kernel supports (attach modes, stages each can see); no tracing" },
	{ "list-stages", OPT_LIST_STAGES, NULL, 0, "Describe every stage and what marks it" },
	{ "attach", OPT_ATTACH, "MODE", 0,
	  "Attach mode: auto (default: fentry, else kprobe, else tracepoint), fentry, kprobe "
	  "or tracepoint; a forced mode that cannot attach is an error (exit 1)" },
	{ "btf", OPT_BTF, "FILE", 0,
	  "Kernel BTF for CO-RE and lookups when the kernel exposes none in /sys/kernel/btf/vmlinux "
	  "(raw BTF, e.g. from BTFHub, or a vmlinux ELF with .BTF); such kernels: kprobe mode only" },
	{ NULL, 0, NULL, 0, "Workload (--compare):", 2 },
	{ "no-trace", OPT_NO_TRACE, NULL, 0, "Run the workload only; attach no BPF programs" },
	{ "mode", OPT_MODE, "LIST", 0,
	  "pingpong,stream,connect (default: all three)" },
	{ "size", OPT_SIZE, "LIST", 0, "Message sizes, 1 to 1M, K/M suffixes (default: 64)" },
	{ "count", OPT_COUNT, "N", 0,
	  "Measured messages (pingpong: round trips; connect: connections) per run "
	  "(default: pingpong 200000, stream 1000000, connect 20000)" },
	{ "duration", OPT_DURATION, "S", 0, "Run each workload for S seconds instead of --count" },
	{ "warmup", OPT_WARMUP, "N", 0,
	  "Unmeasured messages first (default: min(count/10, 1000); connect 200)" },
	{ "cpu", OPT_CPU, "LIST", 0,
	  "CPU placement: same (both on one CPU, default), split (client and server on "
	  "different CPUs), none (scheduler decides)" },
	{ "repeat", OPT_REPEAT, "N", 0,
	  "Run each pair N times, untraced and traced alternating; report the median run and "
	  "the median and range of every run (default 1)" },
	{ "sweep", OPT_SWEEP, NULL, 0,
	  "The size curve: pingpong and stream at 1 B..1 MiB (8 sizes, 0.3 s per run unless "
	  "--count/--duration/--size/--mode say otherwise); --out DIR draws sweep.svg" },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "json", OPT_JSON, "PATH", 0, "Write results as JSON to PATH ('-' = stdout)" },
	{ "folded", OPT_FOLDED, "PATH", 0,
	  "Write the stages as folded stacks (ns per message) for flamegraph.pl, inferno, "
	  "speedscope ('-' = stdout)" },
	{ "svg", OPT_SVG, "PATH", 0,
	  "Draw the stages of both transports on one scale, and their difference, as an SVG" },
	{ "out", OPT_OUT, "DIR", 0,
	  "Write a report directory: report.md, SVGs, folded stacks, JSON (see docs/REPORTS.md)" },
	{ "verbose", 'v', NULL, 0, "Verbose output (libbpf debug messages)" },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show this help" },
	{},
};

static int usage_error(struct argp_state *state, const char *fmt, const char *arg)
{
	fprintf(stderr, "udsprobe: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'udsprobe --help' for more information.\n");
	exit(2);
	return 0;
}

static int lookup(const char *name, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

static void parse_name_list(struct argp_state *state, const char *opt, char *arg,
			    const char *const *names, int n, bool *out)
{
	char *items[16];
	int i, k, cnt = split_list(arg, items, ARRAY_SIZE(items));

	if (cnt <= 0)
		usage_error(state, "%s needs a comma-separated list", opt);
	for (i = 0; i < n; i++)
		out[i] = false;
	for (i = 0; i < cnt; i++) {
		k = lookup(items[i], names, n);
		if (k < 0) {
			fprintf(stderr, "udsprobe: %s: unknown value '%s' (valid:", opt, items[i]);
			for (k = 0; k < n; k++)
				fprintf(stderr, " %s", names[k]);
			fprintf(stderr, ")\n");
			exit(2);
		}
		out[k] = true;
	}
}

/* Other actions (e.g. --backlog) bring their own argp parser as a child. */
static const struct argp_child argp_children[] = {
	{ &backlog_argp, 0, NULL, 0 },
	{ &trace_argp, 0, NULL, 0 },
	{},
};

static void set_action(struct argp_state *state, enum action act, const char *opt)
{
	if (env.action != ACT_NONE && env.action != act) {
		fprintf(stderr, "udsprobe: %s and %s exclude each other: give one action\n"
			"Try 'udsprobe --help' for more information.\n", env.action_opt, opt);
		exit(2);
	}
	env.action = act;
	env.action_opt = opt;
}

/* Options that only some actions take: which, by key. */
static const struct { int key; const char *name; unsigned actions; } scoped_opts[] = {
	{ OPT_NO_TRACE, "--no-trace", FOR_COMPARE },
	{ OPT_MODE, "--mode", FOR_COMPARE },
	{ OPT_SIZE, "--size", FOR_COMPARE },
	{ OPT_COUNT, "--count", FOR_COMPARE },
	{ OPT_WARMUP, "--warmup", FOR_COMPARE },
	{ OPT_CPU, "--cpu", FOR_COMPARE },
	{ OPT_REPEAT, "--repeat", FOR_COMPARE },
	{ OPT_SWEEP, "--sweep", FOR_COMPARE },
	{ OPT_FOLDED, "--folded", FOR_COMPARE },
	{ OPT_SVG, "--svg", FOR_COMPARE },
	{ OPT_OUT, "--out", FOR_COMPARE },
	{ OPT_DURATION, "--duration", FOR_COMPARE | FOR_BACKLOG | FOR_TRACE },
	{ OPT_JSON, "--json", FOR_COMPARE | FOR_BACKLOG | FOR_TRACE },
	{ OPT_ATTACH, "--attach", FOR_COMPARE | FOR_BACKLOG | FOR_CHECK },
};

static void note_scoped(int key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(scoped_opts); i++)
		if (scoped_opts[i].key == key && env.n_scoped < (int)ARRAY_SIZE(env.scoped)) {
			env.scoped[env.n_scoped].name = scoped_opts[i].name;
			env.scoped[env.n_scoped++].actions = scoped_opts[i].actions;
		}
}

/* argp's callback: one case per option, so it grows with the option table (one place to read). */
static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *items[MAX_SIZES + 1];
	uint64_t v;
	int i, n;

	note_scoped(key);
	switch (key) {
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case 'v':
		env.verbose++;
		break;
	case OPT_COMPARE:
		set_action(state, ACT_COMPARE, "--compare");
		break;
	case OPT_CHECK:
		set_action(state, ACT_CHECK, "--check");
		break;
	case OPT_LIST_STAGES:
		set_action(state, ACT_LIST_STAGES, "--list-stages");
		break;
	case OPT_ATTACH:
		i = attach_mode_parse(arg);
		if (i < 0)
			usage_error(state, "--attach: unknown mode '%s' (valid: auto fentry kprobe tracepoint)",
				    arg);
		env.cmp.attach = i;
		break;
	case OPT_BTF:
		if (access(arg, R_OK))
			usage_error(state, "--btf %s: cannot read it", arg);
		btf_file_set(arg);
		break;
	case OPT_NO_TRACE:
		env.cmp.trace = false;
		break;
	case OPT_MODE:
		parse_name_list(state, "--mode", arg, mode_names, WL__COUNT, env.cmp.modes);
		break;
	case OPT_CPU:
		parse_name_list(state, "--cpu", arg, place_names, CPU__COUNT, env.cmp.places);
		break;
	case OPT_SIZE:
		n = split_list(arg, items, ARRAY_SIZE(items));
		if (n <= 0 || n > MAX_SIZES)
			usage_error(state, "--size takes 1 to 16 sizes, e.g. 64,4K,1M", NULL);
		for (i = 0; i < n; i++)
			if (parse_bytes(items[i], 1, WL_MAX_MSG_SIZE, &env.cmp.sizes[i]))
				usage_error(state, "--size: '%s' is not a size from 1 to 1M (e.g. 64, 4K, 1M)",
					    items[i]);
		env.cmp.n_sizes = n;
		break;
	case OPT_COUNT:
		if (parse_u64(arg, 1, 1000000000ull, &env.cmp.count))
			usage_error(state, "--count: '%s' is not a whole number from 1 to 1000000000", arg);
		break;
	case OPT_DURATION:
		if (parse_seconds(arg, 3600, &env.cmp.duration_s))
			usage_error(state, "--duration: '%s' is not a number of seconds in (0, 3600]", arg);
		break;
	case OPT_REPEAT:
		if (parse_u64(arg, 1, 100, &v))
			usage_error(state, "--repeat: '%s' is not a whole number from 1 to 100", arg);
		env.cmp.repeat = (int)v;
		break;
	case OPT_SWEEP:
		env.sweep = true;
		break;
	case OPT_WARMUP:
		if (parse_u64(arg, 0, 10000000ull, &env.cmp.warmup))
			usage_error(state, "--warmup: '%s' is not a whole number from 0 to 10000000", arg);
		break;
	case OPT_JSON:
		if (!*arg)
			usage_error(state, "--json needs a path or '-'", NULL);
		env.json_path = arg;
		break;
	case OPT_FOLDED:
	case OPT_SVG:
	case OPT_OUT:
		if (!*arg)
			usage_error(state, key == OPT_OUT ? "--out needs a directory" :
				    "--folded and --svg need a path", NULL);
		if (key == OPT_SVG && !strcmp(arg, "-"))
			usage_error(state, "--svg needs a file path", NULL);
		*(key == OPT_FOLDED ? &env.folded_path : key == OPT_SVG ? &env.svg_path :
		  &env.out_dir) = arg;
		break;
	case ARGP_KEY_ARG:
		if (trace_requested())
			return ARGP_ERR_UNKNOWN;	/* -- COMMAND: trace.c */
		usage_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Usage checks of --compare and its defaults, before anything runs; exit 2 on a problem. */
static void compare_validate(void)
{
	const char *why = NULL;
	int i;
	bool any;

	for (any = false, i = 0; i < WL__COUNT; i++)
		any |= env.cmp.modes[i];
	if (!any && env.sweep)
		env.cmp.modes[WL_PINGPONG] = env.cmp.modes[WL_STREAM] = true;
	else if (!any)
		for (i = 0; i < WL__COUNT; i++)
			env.cmp.modes[i] = true;
	if (env.sweep && !env.cmp.n_sizes) {
		static const uint64_t curve[] = { 1, 64, 1024, 4096, 16384, 65536, 262144, 1048576 };

		memcpy(env.cmp.sizes, curve, sizeof(curve));
		env.cmp.n_sizes = ARRAY_SIZE(curve);
	}
	if (env.sweep && !env.cmp.count && !env.cmp.duration_s)
		env.cmp.duration_s = 0.3;	/* 8 sizes x 2 modes x 4 runs: about a minute */
	for (any = false, i = 0; i < CPU__COUNT; i++)
		any |= env.cmp.places[i];
	if (!any)
		env.cmp.places[CPU_SAME] = true;
	if (!env.cmp.n_sizes) {
		env.cmp.sizes[0] = 64;
		env.cmp.n_sizes = 1;
	}
	if (env.cmp.count && env.cmp.duration_s)
		why = "--count and --duration exclude each other";
	else if (!env.cmp.trace && env.folded_path)
		why = "--folded draws the traced stages and --no-trace has none: drop --no-trace "
		      "(--out works with both)";
	else if (!env.cmp.trace && env.svg_path)
		why = "--svg draws the traced stages and --no-trace has none: drop --no-trace "
		      "(--out works with both)";
	else if (env.folded_path && env.json_path && !strcmp(env.folded_path, "-") &&
		 !strcmp(env.json_path, "-"))
		why = "--json - and --folded - cannot both go to stdout";
	if (why) {
		fprintf(stderr, "udsprobe: %s\n", why);
		exit(2);
	}
	env.cmp.verbose = env.verbose;
}

/*
 * One --compare at a time on a host: two would share CPU 0 and each one's probes would fire
 * in the other's untraced baseline. The second one waits, saying for whom (Ctrl-C gives up):
 * waiting, not refusing, so two scripts or test suites on one machine both finish with clean
 * numbers. A root-only lock file (0600: another user cannot hold it to stall root's runs);
 * runs without root cannot open it and are not serialised.
 */
static int compare_lock(void)
{
	static const char path[] = "/run/udsprobe.lock";
	char line[256];
	struct stat st;
	long holder = 0;
	FILE *f;
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return 0;
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return 0;	/* held until exit; the fd is never closed */
	if (errno != EWOULDBLOCK) {
		close(fd);
		return 0;
	}
	/* who holds it: /proc/locks "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF" */
	if (!fstat(fd, &st) && (f = fopen("/proc/locks", "re"))) {
		while (fgets(line, sizeof(line), f)) {
			unsigned int maj, min;
			unsigned long ino;
			long pid;

			if (sscanf(line, "%*s FLOCK %*s %*s %ld %x:%x:%lu", &pid, &maj, &min, &ino) == 4 &&
			    ino == st.st_ino && makedev(maj, min) == st.st_dev && pid != getpid()) {
				holder = pid;
				break;
			}
		}
		fclose(f);
	}
	fprintf(stderr, "udsprobe: waiting for another udsprobe --compare (pid %ld) to finish: two "
		"at once would share CPUs and trace each other's workloads (Ctrl-C gives up)\n",
		holder);
	/* poll, not a blocking flock: a Ctrl-C landing just before a blocking call would be
	 * missed until the other run ends */
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		struct timespec ts = { .tv_nsec = 50 * 1000000 };

		if (errno != EWOULDBLOCK) {
			int err = -errno;

			fprintf(stderr, "udsprobe: cannot lock %s: %s\n", path, strerror(-err));
			close(fd);
			return err;
		}
		if (udsprobe_stop) {
			fprintf(stderr, "udsprobe: interrupted while waiting\n");
			close(fd);
			return -EINTR;
		}
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* What can be known before a long run: CPUs for every placement, every output writable. */
static int compare_precheck(void)
{
	int p, err;

	for (p = 0; p < CPU__COUNT; p++)
		if (env.cmp.places[p] && (err = workload_check_place(p)))
			return err;
	if (env.json_path && (err = outfile_check("--json", env.json_path)))
		return err;
	if (env.folded_path && (err = outfile_check("--folded", env.folded_path)))
		return err;
	if (env.svg_path && (err = outfile_check("--svg", env.svg_path)))
		return err;
	if (env.out_dir && (err = outdir_open(&env.out, "--out", env.out_dir)))
		return err;
	return 0;
}

static int write_outputs(const struct comparison *cmp)
{
	int err = 0, e;

	if ((!env.json_path || strcmp(env.json_path, "-")) &&
	    (!env.folded_path || strcmp(env.folded_path, "-"))) {
		report_text(cmp, stdout);
		report_bars(cmp, stdout, bars_use_color(stdout), 0);
		/* a full disk or a closed pipe is a failure, said once, here */
		if (fflush(stdout) || ferror(stdout)) {
			err = errno ? -errno : -EIO;
			fprintf(stderr, "udsprobe: writing the report to standard output failed: %s\n",
				strerror(-err));
			clearerr(stdout);
		}
	}
	if (env.json_path && (e = report_json(cmp, env.json_path)))
		err = err ? err : e;
	if (env.folded_path && (e = report_folded(cmp, env.folded_path)))
		err = err ? err : e;
	if (env.svg_path && (e = report_svg(cmp, env.svg_path)))
		err = err ? err : e;
	if (env.out_dir && (e = report_out_at(cmp, &env.out)))
		err = err ? err : e;
	return err;
}

static int do_compare(void)
{
	struct comparison cmp = {};
	int err, e;

	if (env.cmp.trace && geteuid() != 0) {
		fprintf(stderr, "udsprobe: tracing needs root (CAP_BPF and CAP_PERFMON): run it with "
			"sudo, or add --no-trace to run the workload only\n");
		return -EPERM;
	}
	err = compare_precheck();
	if (!err)
		err = compare_lock();
	if (err)
		goto out;

	err = compare_run(&env.cmp, &cmp);
	if (err && cmp.n_pairs) {
		/* say what completed: the runs before the failure are still valid numbers */
		if (err == -EINTR)
			fprintf(stderr, "udsprobe: interrupted; the %d completed run%s follow\n",
				cmp.n_pairs, cmp.n_pairs == 1 ? "" : "s");
		else
			fprintf(stderr, "udsprobe: the run failed (above); the %d run%s completed before "
				"it follow\n", cmp.n_pairs, cmp.n_pairs == 1 ? "" : "s");
	} else if (err == -EINTR) {
		fprintf(stderr, "udsprobe: interrupted before any run completed\n");
	}
	if (!err || cmp.n_pairs) {
		e = write_outputs(&cmp);
		err = err ? err : e;
	}
out:
	/* a directory udsprobe created for --out but never wrote into goes again */
	if (env.out.fd >= 0)
		outdir_close(&env.out, true);
	comparison_free(&cmp);
	return err;
}

static int do_check(void)
{
	struct attach_caps caps;
	enum attach_mode chosen;
	char why[900];
	int m, err;

	printf("kernel %s, BTF %s%s%s\n", kernel_release(),
	       kernel_has_btf() ? "present (/sys/kernel/btf/vmlinux)" : "MISSING in /sys/kernel/btf",
	       btf_file() ? "; CO-RE from --btf " : "", btf_file() ? btf_file() : "");
	if (geteuid() != 0) {
		fprintf(stderr, "udsprobe: --check loads test programs and needs root: run it with sudo\n");
		return -EPERM;
	}
	if (!kernel_has_btf() && !btf_file()) {
		fprintf(stderr, "udsprobe: %s\n", btf_missing_hint());
		return -ENOENT;
	}
	err = ensure_tracefs();
	printf("tracefs %s\n", err ? strerror(-err) : "mounted");
	tracer_probe(&caps, env.verbose);
	for (m = ATTACH_FENTRY; m < ATTACH__COUNT; m++)
		printf("%-10s %-4s %s\n", attach_mode_names[m], caps.works[m] ? "yes" : "no",
		       caps.why[m]);
	err = attach_choose(env.cmp.attach, attach_caps_probe, &caps, &chosen, why, sizeof(why));
	if (err) {
		printf("chosen: none: %s\n", why);
		return err;
	}
	printf("chosen: %s (%s)\n", attach_mode_names[chosen], why);
	for (m = ATTACH_FENTRY; m < ATTACH__COUNT; m++) {
		struct tracer *tr;

		if (!caps.works[m])
			continue;
		err = tracer_open(m, env.verbose, &tr);
		if (err)
			return err;
		printf("%s mode: %s granularity; boundaries not visible here: %s\n",
		       attach_mode_names[m], tracer_granularity(tr),
		       *tracer_missing(tr) ? tracer_missing(tr) : "none");
		tracer_close(tr);
	}
	return 0;
}

static int do_backlog(void)
{
	int status;

	if (env.json_path && outfile_check("--json", env.json_path))
		return -EIO;
	status = backlog_main(env.json_path, env.cmp.duration_s, env.cmp.attach, env.verbose);
	/* backlog_main reports in exit statuses (2: usage, said already) */
	return status == 0 ? 0 : status == 2 ? -EINVAL : -EIO;
}

static int do_list_stages(void)
{
	stages_list(stdout);
	return 0;
}

static int do_trace(void)
{
	int status;

	if (env.json_path && outfile_check("--json", env.json_path))
		return -EIO;
	status = trace_main(env.json_path, env.cmp.duration_s, env.verbose);
	return status == 0 ? 0 : status == 2 ? -EINVAL : -EIO;
}

/* The actions, as bpftool's cmds[]: each returns 0 or -errno; main maps that to the exit status. */
static const struct cmd {
	const char *name;
	int (*fn)(void);
} cmds[ACT__COUNT] = {
	[ACT_COMPARE] = { "--compare", do_compare },
	[ACT_BACKLOG] = { "--backlog", do_backlog },
	[ACT_CHECK] = { "--check", do_check },
	[ACT_LIST_STAGES] = { "--list-stages", do_list_stages },
	[ACT_TRACE] = { "--trace", do_trace },
};

/* An option the chosen action does not take: exit 2 naming both. */
static void check_scoped(void)
{

	char takers[64];
	int i, a;

	for (i = 0; i < env.n_scoped; i++) {
		if (env.scoped[i].actions & (1u << env.action))
			continue;
		takers[0] = 0;
		for (a = 0; a < ACT__COUNT; a++)
			if (env.scoped[i].actions & (1u << a))
				snprintf(takers + strlen(takers), sizeof(takers) - strlen(takers), "%s%s",
					 takers[0] ? " and " : "", cmds[a].name);
		fprintf(stderr, "udsprobe: %s does not take %s (an option of %s only)\n"
			"Try 'udsprobe --help' for more information.\n", cmds[env.action].name,
			env.scoped[i].name, takers);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts, .parser = parse_arg, .doc = doc, .children = argp_children,
	};
	int err;

	/* stdout errors (a full disk, > /dev/full) turn any exit into exit 1, help included */
	atexit(close_stdout);
	argp_err_exit_status = 2;
	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 2;
	if (backlog_requested()) {	/* --backlog is parsed by backlog.c's argp child */
		if (env.action != ACT_NONE) {
			fprintf(stderr, "udsprobe: --backlog and %s exclude each other: give one action\n"
				"Try 'udsprobe --help' for more information.\n", env.action_opt);
			return 2;
		}
		set_action(NULL, ACT_BACKLOG, "--backlog");
	}
	if (trace_requested())	/* --trace is parsed by trace.c's argp child */
		set_action(NULL, ACT_TRACE, "--trace");
	if (env.action == ACT_NONE) {
		fprintf(stderr, "udsprobe: nothing to do: give --compare, --backlog, --trace, --check or --list-stages\n"
			"Try 'udsprobe --help' for more information.\n");
		return 2;
	}
	check_scoped();
	if (env.action == ACT_COMPARE)
		compare_validate();
	interrupt_setup();
	err = cmds[env.action].fn();
	if (err == -EINVAL && (env.action == ACT_BACKLOG || env.action == ACT_TRACE))
		return 2;
	return err ? 1 : 0;
}
