/* SPDX-License-Identifier: GPL-2.0 */
/*
 * udsprobe's command line: the actions, the options every action shares and --compare's, their
 * parsing, validation and --help text. The other commands parse their own options as argp
 * children into their structs here (backlog.h, trace.h, watch_opts.h, predict.h, programs.h).
 */
#ifndef UDSPROBE_OPTIONS_H
#define UDSPROBE_OPTIONS_H

#include <stdbool.h>

#include "backlog.h"
#include "compare.h"
#include "predict.h"
#include "programs.h"
#include "trace.h"
#include "watch_opts.h"

enum action { ACT_NONE, ACT_COMPARE, ACT_BACKLOG, ACT_CHECK, ACT_LIST_STAGES, ACT_TRACE, ACT__COUNT };

/* The option that chooses each action ("--compare"), for messages. */
extern const char *const action_options[ACT__COUNT];

/* Every option, each command's in its own struct (filled by its argp child). */
struct options {
	enum action action;
	struct compare_opts cmp;	/* --compare's, plus --attach and --duration for others */
	const char *json_path;
	const char *folded_path, *svg_path, *out_dir;	/* reports.h */
	int verbose;
	struct backlog_opts bl;
	struct trace_cmd_opts tr;
	struct watch_opts watch;	/* --backlog's and --trace's filters and metrics */
	struct predict_opts pr;		/* --if-unix: --trace's, --compare of programs' */
	struct programs_opts pg;	/* --compare of programs */
};

/*
 * Parse argv into *opts, fill --compare's defaults and check that the options fit the chosen
 * action. Returns 0, or -EINVAL after saying what is wrong (exit status 2); argp's own errors
 * and --help/--version exit from inside, as argp does.
 */
int options_parse(int argc, char **argv, struct options *opts);

#endif
