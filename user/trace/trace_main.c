// SPDX-License-Identifier: GPL-2.0
/*
 * The --trace command: its options gathered, privileges, the janitor of -- COMMAND's process
 * group, the run (trace_collect.c), then the reports (trace_report.c, trace_out.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include "capability.h"
#include "outfile.h"
#include "predict.h"
#include "trace.h"
#include "trace_report.h"
#include "util.h"
#include "watch_opts.h"

int trace_main(const struct trace_cmd_opts *t, const struct watch_opts *w,
	       const struct predict_opts *p, const char *json_path, const char *out_dir,
	       double duration_s, enum attach_mode attach, int verbose)
{
	const struct watch_filters *f = &w->f;
	struct trace_opts o = {
		.pids = f->pids, .n_pids = f->n_pids,
		.ports = f->ports, .n_ports = f->n_ports,
		.unix_paths = f->unix_paths, .n_unix = f->n_unix,
		.cgroup = f->cgroup,
		.duration_s = duration_s, .slower_than_ns = t->slower_than_ns,
		.metrics_addr = w->metrics_addr,
		.prom_path = w->prom_path,
		.live = t->live,
		.interval_s = w->interval_s ? w->interval_s : 1.0,
		.kernel_stages = trace_kernel_stages(t->detail, false),
		.hit_costs = p->mode != IFU_OFF,
		.max_flows = t->max_flows,
		.attach = attach, .argv = t->argv,
		.verbose = verbose,
	};
	struct outdir od = { .fd = -1 };
	struct trace_run run = {};
	struct tmpdir janitor = { .fd = -1 };
	int err, e, n;

	memcpy(o.comms, t->comms, sizeof(o.comms));
	o.n_comms = t->n_comms;
	if ((err = privileges_check("--trace", "as a service given those (udsprobe-trace.service)")))
		return err;
	if (out_dir && (err = outdir_open(&od, "--out", out_dir)))
		return err;
	if (o.argv) {
		/* the command's process group is stopped should udsprobe be killed; what leaves
		 * the group (a daemon's setsid) comes to us when its parent exits, not to init */
		err = tmpdir_create(&janitor, NULL, 0);
		if (err) {
			tmpdir_say_failure(&janitor, "--trace: ", "", err);
			goto out;
		}
		o.guard = &janitor;
		o.terminal = !o.live;	/* the live view reads the keys */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	}
	err = trace_run(&o, &run);
	if (o.argv && (n = stop_leftovers(&janitor.janitor, 1)) > 0)
		say_error("--trace: %d process%s '%s' started outside its process "
			"group (a daemon) %s still running; stopped", n, n == 1 ? "" : "es",
			o.argv[0], n == 1 ? "was" : "were");
	if (err)
		goto out;
	if (run.exec_errno)
		err = -run.exec_errno;	/* the command never ran (said above) */
	predict_if_unix(&run, p->mode, attach, verbose);
	if (!json_path || strcmp(json_path, "-"))
		trace_report_text(&run, &o, stdout);
	if (json_path && (e = trace_report_json(&run, json_path)))
		err = err ? err : e;
	if (od.fd >= 0 && (e = trace_out_at(&run, &od)))
		err = err ? err : e;
out:
	/* a directory udsprobe created for --out but never wrote into goes again */
	if (od.fd >= 0)
		outdir_close(&od, true);
	tmpdir_remove(&janitor);
	trace_run_free(&run);
	return err;
}
