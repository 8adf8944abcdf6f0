// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe: why AF_UNIX sockets beat TCP loopback, measured stage by stage in
 * the running kernel; and why unix-socket listeners overflow under load.
 *
 * This file dispatches: options.c parses the command line into each command's options, the
 * command table below runs one command, which returns 0 or -errno, and main maps that to the
 * exit status.
 */
#include <stdio.h>
#include <stdlib.h>

#include "options.h"
#include "compare.h"
#include "interrupt.h"
#include "outfile.h"
#include "programs_report.h"
#include "stage_table.h"
#include "trace.h"
#include "util.h"
#include "workload.h"

static int cmd_compare(const struct options *o)
{
	const struct compare_outputs out = {
		.json_path = o->json_path, .folded_path = o->folded_path,
		.svg_path = o->svg_path, .out_dir = o->out_dir,
	};

	if (programs_requested(&o->pg))
		return programs_main(&o->pg, o->json_path, o->out_dir, o->verbose);
	return compare_main(&o->cmp, &out);
}

static int cmd_backlog(const struct options *o)
{
	int err;

	if (o->json_path && (err = outfile_check("--json", o->json_path)))
		return err;
	return backlog_main(&o->bl, &o->watch, o->json_path, o->cmp.duration_s, o->verbose);
}

static int cmd_check(const struct options *o)
{
	return check_main(o->cmp.attach, o->verbose);
}

static int cmd_list_stages(const struct options *o)
{
	(void)o;
	stages_list(stdout);
	return 0;
}

static int cmd_trace(const struct options *o)
{
	int err;

	if (o->json_path && (err = outfile_check("--json", o->json_path)))
		return err;
	return trace_main(&o->tr, &o->watch, &o->pr, o->json_path, o->out_dir, o->cmp.duration_s,
			  o->cmp.attach, o->verbose);
}

/* The commands, as bpftool's cmds[]: each returns 0 or -errno; main maps that to the exit status. */
static int (*const cmds[ACT__COUNT])(const struct options *o) = {
	[ACT_COMPARE] = cmd_compare,
	[ACT_BACKLOG] = cmd_backlog,
	[ACT_CHECK] = cmd_check,
	[ACT_LIST_STAGES] = cmd_list_stages,
	[ACT_TRACE] = cmd_trace,
};

int main(int argc, char **argv)
{
	struct options o;
	int err;

	stdio_fds_guard();
	/* stdout errors (a full disk, > /dev/full) turn any exit into exit 1, help included */
	atexit(close_stdout);
	if (options_parse(argc, argv, &o))
		return 2;
	interrupt_setup(workload_interrupt);
	/* usage errors exit 2 while parsing; a command's -errno is a runtime failure */
	err = cmds[o.action](&o);
	return err ? 1 : 0;
}
