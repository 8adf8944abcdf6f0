// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe's command line (retsnoop's env.c is the model): the option table, --help, one
 * parse callback, the checks that an option fits the action, and --compare's defaults.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "attach.h"
#include "capability.h"
#include "util.h"
#include "workload.h"

/* Which actions take an option, as a mask of 1 << action. */
#define FOR_COMPARE (1u << ACT_COMPARE)
#define FOR_BACKLOG (1u << ACT_BACKLOG)
#define FOR_CHECK (1u << ACT_CHECK)
#define FOR_TRACE (1u << ACT_TRACE)

const char *const action_options[ACT__COUNT] = {
	[ACT_COMPARE] = "--compare",
	[ACT_BACKLOG] = "--backlog",
	[ACT_CHECK] = "--check",
	[ACT_LIST_STAGES] = "--list-stages",
	[ACT_TRACE] = "--trace",
};

/* What parsing needs beyond the result: argp's input. */
struct parse_state {
	struct options *opts;
	bool sweep;
	/* options given that only some actions take: name and mask of those actions */
	struct { const char *name; unsigned actions; } scoped[16];
	int n_scoped;
	uint64_t given;		/* option_once(): opts[] entries given */
};

const char *argp_program_version = "udsprobe " UDSPROBE_VERSION;
static const char doc[] =
"Measure, in the running kernel, why AF_UNIX stream sockets are faster than "
"TCP over loopback, and where each message's time goes.\n"
"\n"
"USAGE: udsprobe --compare|--backlog|--trace|--check|--list-stages [OPTIONS]\n"
"       [-- COMMAND [ARG...]]\n"
"\n"
"EXAMPLES:\n"
"  sudo ./udsprobe --compare                # UDS vs TCP loopback, explained\n"
"  sudo ./udsprobe --compare --no-trace     # the workload only, no BPF\n"
"  sudo ./udsprobe --compare --mode pingpong --size 64,4K,64K --cpu same,split\n"
"  sudo ./udsprobe --compare --out report/  # report.md, SVGs, folded, JSON\n"
"  sudo ./udsprobe --compare --duration 2 --json result.json\n"
"  sudo ./udsprobe --compare --sweep --out talk/  # size curve, 1 B to 16 MiB\n"
"  sudo ./udsprobe --compare --mode pingpong --repeat 5  # medians and spreads\n"
"  sudo ./udsprobe --compare --think 0,10us,100us,1ms --out think/\n"
"  sudo ./udsprobe --compare \\\n"
"       --server 'redis-server --port {port} --unixsocket {unix} --save \"\"' \\\n"
"       --client-unix 'redis-benchmark -s {unix} -t incr -q' \\\n"
"       --client-tcp 'redis-benchmark -p {port} -t incr -q'  # your programs\n"
"  sudo ./udsprobe --backlog                # watch listeners for overflows\n"
"  sudo ./udsprobe --backlog --unix /run/php/php-fpm.sock --interval 1\n"
"  sudo ./udsprobe --backlog --netns /run/netns/web   # one network namespace\n"
"  sudo ./udsprobe --backlog --cgroup /sys/fs/cgroup/kubepods.slice\n"
"  sudo ./udsprobe --check                  # what this kernel supports\n"
"  sudo ./udsprobe --trace --duration 10    # local UDS/TCP messages, by flow\n"
"  sudo ./udsprobe --trace --comm redis-server --json trace.json\n"
"  sudo ./udsprobe --trace --cgroup /sys/fs/cgroup/system.slice/nginx.service\n"
"  sudo ./udsprobe --trace --unix /run/php/php-fpm.sock --port 6379\n"
"  sudo ./udsprobe --trace -- ./run-my-tests.sh   # a command and its children\n"
"  sudo ./udsprobe --trace --slower-than 2ms --out rep/  # slow messages, SVGs\n"
"  sudo ./udsprobe --trace --live --comm nginx   # a table of flows, refreshed\n"
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
	OPT_THINK,
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
	{ "size", OPT_SIZE, "LIST", 0, "Message sizes, 1 to 16M, K/M suffixes (default: 64)" },
	{ "count", OPT_COUNT, "N", 0,
	  "Measured messages (pingpong: round trips; connect: connections) per run "
	  "(default: pingpong 200000, stream 1000000, connect 20000; fewer for large "
	  "sizes, at most 512 MiB (pingpong) or 4 GiB (stream) per run, and with --think, "
	  "at most 2 s of think time per run)" },
	{ "duration", OPT_DURATION, "S", 0, "Run each workload for S seconds instead of --count" },
	{ "warmup", OPT_WARMUP, "N", 0,
	  "Unmeasured messages first (default: min(count/10, 1000); connect 200; with "
	  "--duration, as for the default count of the size)" },
	{ "cpu", OPT_CPU, "LIST", 0,
	  "CPU placement: same (both on one CPU, default), split (client and server on "
	  "different CPUs), none (scheduler decides)" },
	{ "repeat", OPT_REPEAT, "N", 0,
	  "Run each pair N times, untraced and traced alternating; report the median run and "
	  "the median and range of every run (default 1)" },
	{ "think", OPT_THINK, "LIST", 0,
	  "pingpong: after each reply the client works on the CPU, inside the round trip, for "
	  "each duration of LIST in turn, one run each (e.g. 50us, or 0,10us,100us,1ms; 0: no "
	  "work; at most 100ms): how the UDS advantage shrinks as the application's own time "
	  "grows; with several values --out DIR draws think.svg" },
	{ "sweep", OPT_SWEEP, NULL, 0,
	  "The size curve: pingpong and stream at 1 B..16 MiB (10 sizes, 0.3 s per run unless "
	  "--count/--duration/--size/--mode say otherwise); --out DIR draws sweep.svg" },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "json", OPT_JSON, "PATH", 0, "Write results as JSON to PATH ('-' = stdout)" },
	{ "folded", OPT_FOLDED, "PATH", 0,
	  "Write the stages as folded stacks (ns per message) for flamegraph.pl, inferno, "
	  "speedscope ('-' = stdout)" },
	{ "svg", OPT_SVG, "PATH", 0,
	  "Draw the stages of both transports on one scale, and their difference, as an SVG" },
	{ "out", OPT_OUT, "DIR", 0,
	  "Write a report directory: report.md, SVGs, folded stacks, JSON (--compare and "
	  "--trace; see docs/REPORTS.md)" },
	{ "verbose", 'v', NULL, 0, "Verbose output (libbpf debug messages)" },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show this help" },
	{},
};

static int lookup(const char *name, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

/* split_list for option opt: an empty item ("1,,2") said here; else the count or -E2BIG. */
static int list_items(const char *opt, char *arg, char **items, int max)
{
	int n = split_list(arg, items, max);

	if (n == -EINVAL && *arg)
		usage_exit("%s: '%s' has an empty item (a comma too many)", opt, arg);
	return n;
}

static void parse_name_list(const char *opt, char *arg, const char *const *names, int n, bool *out)
{
	char *items[16];
	int i, k, cnt = list_items(opt, arg, items, ARRAY_SIZE(items));

	if (cnt <= 0)
		usage_exit("%s needs a comma-separated list", opt);
	for (i = 0; i < n; i++)
		out[i] = false;
	for (i = 0; i < cnt; i++) {
		k = lookup(items[i], names, n);
		if (k < 0) {
			char valid[128] = "";

			for (k = 0; k < n; k++)
				snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), " %s",
					 names[k]);
			say_error("%s: unknown value '%s' (valid:%s)", opt, items[i], valid);
			exit(2);
		}
		out[k] = true;
	}
}

/* Other actions (e.g. --backlog) bring their own argp parser as a child, each filling its
 * struct of struct options (child_inputs, in this order). */
static const struct argp_child argp_children[] = {
	{ &backlog_argp, 0, NULL, 0 },
	{ &trace_argp, 0, NULL, 0 },
	{ &predict_argp, 0, NULL, 0 },
	{ &programs_argp, 0, NULL, 0 },
	{ &watch_argp, 0, NULL, 0 },
	{},
};

/* Two actions given: 0 if it is the same one again, else say so and return -EINVAL. */
static int set_action(struct options *o, enum action act)
{
	if (o->action != ACT_NONE && o->action != act)
		return usage_error("%s and %s exclude each other: give one action",
				   action_options[o->action], action_options[act]);
	o->action = act;
	return 0;
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
	{ OPT_THINK, "--think", FOR_COMPARE },
	{ OPT_FOLDED, "--folded", FOR_COMPARE },
	{ OPT_SVG, "--svg", FOR_COMPARE },
	{ OPT_OUT, "--out", FOR_COMPARE | FOR_TRACE },
	{ OPT_DURATION, "--duration", FOR_COMPARE | FOR_BACKLOG | FOR_TRACE },
	{ OPT_JSON, "--json", FOR_COMPARE | FOR_BACKLOG | FOR_TRACE },
	{ OPT_ATTACH, "--attach", FOR_COMPARE | FOR_BACKLOG | FOR_CHECK | FOR_TRACE },
};

static void note_scoped(struct parse_state *ps, int key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(scoped_opts); i++)
		if (scoped_opts[i].key == key && ps->n_scoped < (int)ARRAY_SIZE(ps->scoped)) {
			ps->scoped[ps->n_scoped].name = scoped_opts[i].name;
			ps->scoped[ps->n_scoped++].actions = scoped_opts[i].actions;
		}
}

/* --size: 1 to MAX_SIZES sizes. */
static void parse_sizes(struct compare_opts *cmp, char *arg)
{
	char *items[MAX_SIZES + 1];
	int i, n = list_items("--size", arg, items, ARRAY_SIZE(items));

	if (n <= 0 || n > MAX_SIZES)
		usage_exit("--size takes 1 to 16 sizes, e.g. 64,4K,1M");
	for (i = 0; i < n; i++)
		if (parse_bytes(items[i], 1, WL_MAX_MSG_SIZE, &cmp->sizes[i]))
			usage_exit("--size: '%s' is not a size from 1 to 16M (e.g. 64, 4K, 1M)", items[i]);
	cmp->n_sizes = n;
}

/* --think: 1 to MAX_THINKS durations, each 0 (no work) or with a unit, none twice. */
static void parse_thinks(struct compare_opts *cmp, char *arg)
{
	char *items[MAX_THINKS + 1];
	int i, j, n = list_items("--think", arg, items, ARRAY_SIZE(items));

	if (n <= 0 || n > MAX_THINKS)
		usage_exit("--think takes 1 to 8 durations, e.g. 0,10us,100us,1ms");
	for (i = 0; i < n; i++) {
		if (strcmp(items[i], "0") && parse_duration_ns(items[i], 100000000ull, &cmp->thinks[i]))
			usage_exit("--think: '%s' is not 0 or a duration with a unit (ns, us, ms, s) "
				    "up to 100ms, e.g. 50us", items[i]);
		if (!strcmp(items[i], "0"))
			cmp->thinks[i] = 0;
		for (j = 0; j < i; j++)
			if (cmp->thinks[j] == cmp->thinks[i])
				usage_exit("--think: '%s' is given twice", items[i]);
	}
	cmp->n_thinks = n;
}

/* --json, --folded, --svg, --out: a path (or directory), not empty. */
static void parse_output(struct options *o, int key, char *arg)
{
	if (!*arg)
		usage_exit(key == OPT_JSON ? "--json needs a path or '-'" : key == OPT_OUT ?
			    "--out needs a directory" : "--folded and --svg need a path");
	if (key == OPT_SVG && !strcmp(arg, "-"))
		usage_exit("--svg needs a file path");
	*(key == OPT_JSON ? &o->json_path : key == OPT_FOLDED ? &o->folded_path :
	  key == OPT_SVG ? &o->svg_path : &o->out_dir) = arg;
}

/* --btf FILE: readable, BTF, the kernel's (not blamed on the kernel after loading fails). */
static void parse_btf(const char *path)
{
	char why[200];
	struct stat st;
	int err;

	if (access(path, R_OK) || stat(path, &st))
		snprintf(why, sizeof(why), "cannot read it: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode) || !st.st_size)
		snprintf(why, sizeof(why), "%s, not a BTF file", S_ISREG(st.st_mode) ? "empty" :
			 S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
	else if ((err = btf_file_set(path)) == -ENOENT)
		snprintf(why, sizeof(why), "BTF without the kernel's types (no struct task_struct): "
			 "give the kernel's own (BTFHub's file for its release, or its vmlinux)");
	else if (err)
		snprintf(why, sizeof(why), "not BTF (neither raw BTF nor an ELF with a .BTF section)");
	else
		return;
	usage_exit("--btf %s: %s", path, why);
}

/* argp's callback: one case per option, so it grows with the option table (one place to read). */
static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct parse_state *ps = state->input;
	struct options *o = ps->opts;
	uint64_t v;
	int i;

	note_scoped(ps, key);
	option_once(opts, key, &ps->given);
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->bl;
		state->child_inputs[1] = &o->tr;
		state->child_inputs[2] = &o->pr;
		state->child_inputs[3] = &o->pg;
		state->child_inputs[4] = &o->watch;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case 'v':
		o->verbose++;
		break;
	case OPT_COMPARE:
	case OPT_CHECK:
	case OPT_LIST_STAGES:
		if (set_action(o, key == OPT_COMPARE ? ACT_COMPARE : key == OPT_CHECK ? ACT_CHECK :
			       ACT_LIST_STAGES))
			exit(2);
		break;
	case OPT_ATTACH:
		i = attach_mode_parse(arg);
		if (i < 0)
			usage_exit("--attach: unknown mode '%s' (valid: auto fentry kprobe tracepoint)",
				    arg);
		o->cmp.attach = i;
		break;
	case OPT_BTF:
		parse_btf(arg);
		break;
	case OPT_NO_TRACE:
		o->cmp.trace = false;
		break;
	case OPT_MODE:
		parse_name_list("--mode", arg, mode_names, WL__COUNT, o->cmp.modes);
		break;
	case OPT_CPU:
		parse_name_list("--cpu", arg, place_names, CPU__COUNT, o->cmp.places);
		break;
	case OPT_SIZE:
		parse_sizes(&o->cmp, arg);
		break;
	case OPT_COUNT:
		if (parse_u64(arg, 1, 1000000000ull, &o->cmp.count))
			usage_exit("--count: '%s' is not a whole number from 1 to 1000000000", arg);
		break;
	case OPT_DURATION:
		if (parse_seconds(arg, 3600, &o->cmp.duration_s))
			usage_exit("--duration: '%s' is not a number of seconds in (0, 3600]", arg);
		break;
	case OPT_REPEAT:
		if (parse_u64(arg, 1, 100, &v))
			usage_exit("--repeat: '%s' is not a whole number from 1 to 100", arg);
		o->cmp.repeat = (int)v;
		break;
	case OPT_SWEEP:
		ps->sweep = true;
		break;
	case OPT_THINK:
		parse_thinks(&o->cmp, arg);
		break;
	case OPT_WARMUP:
		if (parse_u64(arg, 0, 10000000ull, &o->cmp.warmup))
			usage_exit("--warmup: '%s' is not a whole number from 0 to 10000000", arg);
		break;
	case OPT_JSON:
	case OPT_FOLDED:
	case OPT_SVG:
	case OPT_OUT:
		parse_output(o, key, arg);
		break;
	case ARGP_KEY_ARG:
		if (o->tr.enabled)
			return ARGP_ERR_UNKNOWN;	/* -- COMMAND: trace.c */
		usage_exit("unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* --compare's defaults and the options that exclude each other; -EINVAL after saying which. */
static int compare_validate(struct options *o, bool sweep)
{
	struct compare_opts *cmp = &o->cmp;
	const char *why = NULL;
	int i;
	bool any;

	for (any = false, i = 0; i < WL__COUNT; i++)
		any |= cmp->modes[i];
	if (!any && sweep)
		cmp->modes[WL_PINGPONG] = cmp->modes[WL_STREAM] = true;
	else if (!any)
		for (i = 0; i < WL__COUNT; i++)
			cmp->modes[i] = true;
	if (sweep && !cmp->n_sizes) {
		static const uint64_t curve[] = { 1, 64, 1024, 4096, 16384, 65536, 262144,
						   1 << 20, 4 << 20, 16 << 20 };

		memcpy(cmp->sizes, curve, sizeof(curve));
		cmp->n_sizes = ARRAY_SIZE(curve);
	}
	if (sweep && !cmp->count && !cmp->duration_s)
		cmp->duration_s = 0.3;	/* 10 sizes x 2 modes x 4 runs: under two minutes */
	for (any = false, i = 0; i < CPU__COUNT; i++)
		any |= cmp->places[i];
	if (!any)
		cmp->places[CPU_SAME] = true;
	if (!cmp->n_sizes) {
		cmp->sizes[0] = 64;
		cmp->n_sizes = 1;
	}
	if (cmp->count && cmp->duration_s)
		why = "--count and --duration exclude each other";
	else if (cmp->n_thinks && !cmp->modes[WL_PINGPONG])
		why = "--think is pingpong's client work: add pingpong to --mode";
	else if ((o->json_path && o->folded_path && strcmp(o->json_path, "-") &&
		  !strcmp(o->json_path, o->folded_path)) ||
		 (o->json_path && o->svg_path && !strcmp(o->json_path, o->svg_path)) ||
		 (o->folded_path && o->svg_path && !strcmp(o->folded_path, o->svg_path)))
		why = "--json, --folded and --svg need different paths (one would overwrite another)";
	else if (!cmp->trace && o->folded_path)
		why = "--folded draws the traced stages and --no-trace has none: drop --no-trace "
		      "(--out works with both)";
	else if (!cmp->trace && o->svg_path)
		why = "--svg draws the traced stages and --no-trace has none: drop --no-trace "
		      "(--out works with both)";
	else if (o->folded_path && o->json_path && !strcmp(o->folded_path, "-") &&
		 !strcmp(o->json_path, "-"))
		why = "--json - and --folded - cannot both go to stdout";
	if (why) {
		say_error("%s", why);
		return -EINVAL;
	}
	cmp->verbose = o->verbose;
	return 0;
}

/* --server/--client-*: --compare of programs, which takes --json and --out only. */
static int check_programs(const struct parse_state *ps)
{
	int i;

	if (ps->opts->action != ACT_COMPARE)
		return usage_error("--server, --client-unix, --client-tcp and --ready-timeout "
			"need --compare");
	for (i = 0; i < ps->n_scoped; i++)
		if (strcmp(ps->scoped[i].name, "--json") && strcmp(ps->scoped[i].name, "--out"))
			return usage_error("%s is an option of the built-in workload; --compare of "
				"programs (--client-unix, --client-tcp) takes --json and --out",
					   ps->scoped[i].name);
	return programs_check(&ps->opts->pg);
}

/* An option the chosen action does not take: -EINVAL after naming both. */
static int check_scoped(const struct parse_state *ps)
{
	enum action act = ps->opts->action;
	char takers[64];
	int i, a;

	for (i = 0; i < ps->n_scoped; i++) {
		if (ps->scoped[i].actions & (1u << act))
			continue;
		takers[0] = 0;
		for (a = 0; a < ACT__COUNT; a++)
			if (ps->scoped[i].actions & (1u << a))
				snprintf(takers + strlen(takers), sizeof(takers) - strlen(takers), "%s%s",
					 takers[0] ? " and " : "", action_options[a]);
		return usage_error("%s does not take %s (an option of %s only)",
				   action_options[act], ps->scoped[i].name, takers);
	}
	return 0;
}

/* An option of --backlog's alone given without it (by name), or NULL. */
static const char *backlog_only_given(const struct options *o)
{
	return o->watch.f.netns ? "--netns" : o->watch.interval_s && !o->tr.enabled ? "--interval" :
	       backlog_option_given(&o->bl);
}

int options_parse(int argc, char **argv, struct options *o)
{
	static const struct argp argp = {
		.options = opts, .parser = parse_arg, .doc = doc, .children = argp_children,
	};
	struct parse_state ps = { .opts = o };
	const char *name;
	int err;

	*o = (struct options){ .cmp = { .warmup = UINT64_MAX, .trace = true } };
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &ps))
		return -EINVAL;
	if (!o->bl.enabled && (name = backlog_only_given(o)))
		return usage_error(o->tr.enabled ? "--trace does not take %s (an option of --backlog "
				   "only)" : "%s needs --backlog", name);
	if (!o->bl.enabled && !o->tr.enabled && (name = watch_filter_given(&o->watch)))
		return usage_error("%s needs --backlog or --trace", name);
	o->pg.kernel_stages = trace_kernel_stages(o->tr.detail, true);
	o->pg.if_unix = o->pr.mode;
	if (o->bl.enabled) {	/* --backlog is parsed by backlog.c's argp child */
		if (o->action != ACT_NONE)
			return usage_error("--backlog and %s exclude each other: give one action",
					   action_options[o->action]);
		o->action = ACT_BACKLOG;
	}
	if (o->tr.enabled && (err = set_action(o, ACT_TRACE)))	/* trace.c's argp child */
		return err;
	if (programs_requested(&o->pg) && (err = check_programs(&ps)))
		return err;
	if (o->action == ACT_NONE)
		return usage_error("nothing to do: give --compare, --backlog, --trace, --check or "
				   "--list-stages");
	if ((err = check_scoped(&ps)))
		return err;
	if (o->tr.detail != TRACE_DETAIL_DEFAULT && o->action != ACT_TRACE &&
	    !(o->action == ACT_COMPARE && programs_requested(&o->pg)))
		return usage_error("--detail needs --trace or --compare of programs");
	if (o->action == ACT_TRACE && !o->tr.live && !o->watch.prom_path && o->watch.interval_s)
		return usage_error("--trace takes --interval with --live or --prom only (how "
			"often they are redrawn, rewritten)");
	if (o->tr.live && o->json_path && !strcmp(o->json_path, "-"))
		return usage_error("--live draws on stdout and --json - writes there: give "
			"--json a file");
	if (o->pr.given && o->action != ACT_TRACE &&
	    !(o->action == ACT_COMPARE && programs_requested(&o->pg)))
		return usage_error("--if-unix needs --trace or --compare of programs "
			"(--client-tcp)");
	if (o->action == ACT_BACKLOG)
		return backlog_check_attach(&o->bl, o->cmp.attach);
	if (o->action == ACT_COMPARE && programs_requested(&o->pg))
		return 0;	/* no workload to set up */
	return o->action == ACT_COMPARE ? compare_validate(o, ps.sweep) : 0;
}
