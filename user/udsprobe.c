// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe: why AF_UNIX sockets beat TCP loopback, measured stage by stage in
 * the running kernel; and why unix-socket listeners overflow under load.
 *
 * This file dispatches: options.c parses the command line, each action below runs one mode
 * and returns 0 or -errno, and main maps that to the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "options.h"
#include "attach.h"
#include "backlog.h"
#include "capability.h"
#include "compare.h"
#include "interrupt.h"
#include "outfile.h"
#include "programs.h"
#include "programs_report.h"
#include "reports.h"
#include "trace.h"
#include "trace_report.h"
#include "tracer.h"
#include "util.h"
#include "workload.h"

/* The parsed command line (options.c) and --out's directory, opened before the run. */
static struct options env;
static struct outdir out_dir = { .fd = -1 };

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
	char line[256], who[32] = "";
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
	/* no pid: /proc/locks shows 0 once the locker has exited while a forked child of it
	 * still holds the open file (seen as one run ends and the next starts) */
	if (holder)
		snprintf(who, sizeof(who), " (pid %ld)", holder);
	say_error("waiting for another udsprobe --compare%s to finish: two at once "
		"would share CPUs and trace each other's workloads (Ctrl-C gives up)", who);
	/* poll, not a blocking flock: a Ctrl-C landing just before a blocking call would be
	 * missed until the other run ends */
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		struct timespec ts = { .tv_nsec = 50 * 1000000 };

		if (errno != EWOULDBLOCK) {
			int err = -errno;

			say_error("cannot lock %s: %s", path, strerror(-err));
			close(fd);
			return err;
		}
		if (udsprobe_stop) {
			say_error("interrupted while waiting");
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
	if (env.out_dir && (err = outdir_open(&out_dir, "--out", env.out_dir)))
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
		err = stdout_flush_report();	/* a full disk or a closed pipe: said once */
	}
	if (env.json_path && (e = report_json(cmp, env.json_path)))
		err = err ? err : e;
	if (env.folded_path && (e = report_folded(cmp, env.folded_path)))
		err = err ? err : e;
	if (env.svg_path && (e = report_svg(cmp, env.svg_path)))
		err = err ? err : e;
	if (env.out_dir && (e = report_out_at(cmp, &out_dir)))
		err = err ? err : e;
	return err;
}

static int do_compare(void)
{
	struct comparison cmp = {};
	int err, e;

	if (programs_requested()) {
		/* your programs' runs are traced too: the same one-at-a-time rule */
		err = compare_lock();
		return err ? err : programs_main(env.json_path, env.out_dir, env.verbose);
	}
	if (env.cmp.trace && (err = privileges_check("traced --compare", PRIVILEGES_SETCAP
						      ", or add --no-trace to run the workload only")))
		return err;
	err = compare_precheck();
	if (!err)
		err = compare_lock();
	if (err)
		goto out;

	err = compare_run(&env.cmp, &cmp);
	if (err && cmp.n_pairs) {
		/* say what completed: the runs before the failure are still valid numbers */
		if (err == -EINTR)
			say_error("interrupted; the %d completed run%s follow",
				cmp.n_pairs, cmp.n_pairs == 1 ? "" : "s");
		else
			say_error("the run failed (above); the %d run%s completed before "
				"it follow", cmp.n_pairs, cmp.n_pairs == 1 ? "" : "s");
	} else if (err == -EINTR) {
		say_error("interrupted before any run completed");
	}
	if (!err || cmp.n_pairs) {
		e = write_outputs(&cmp);
		err = err ? err : e;
	}
out:
	/* a directory udsprobe created for --out but never wrote into goes again */
	if (out_dir.fd >= 0)
		outdir_close(&out_dir, true);
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
	if ((err = privileges_check("--check (it loads test programs)", PRIVILEGES_SETCAP)))
		return err;
	if (!kernel_has_btf() && !btf_file()) {
		say_error("%s", btf_missing_hint());
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
	int err;

	if (env.json_path && (err = outfile_check("--json", env.json_path)))
		return err;
	return backlog_main(env.json_path, env.cmp.duration_s, env.verbose);
}

static int do_list_stages(void)
{
	stages_list(stdout);
	return 0;
}

static int do_trace(void)
{
	int err;

	if (env.json_path && (err = outfile_check("--json", env.json_path)))
		return err;
	return trace_main(env.json_path, env.out_dir, env.cmp.duration_s, env.cmp.attach,
			  env.verbose);
}

/* The actions, as bpftool's cmds[]: each returns 0 or -errno; main maps that to the exit status. */
static int (*const cmds[ACT__COUNT])(void) = {
	[ACT_COMPARE] = do_compare,
	[ACT_BACKLOG] = do_backlog,
	[ACT_CHECK] = do_check,
	[ACT_LIST_STAGES] = do_list_stages,
	[ACT_TRACE] = do_trace,
};

int main(int argc, char **argv)
{
	int err;

	stdio_fds_guard();
	/* stdout errors (a full disk, > /dev/full) turn any exit into exit 1, help included */
	atexit(close_stdout);
	if (options_parse(argc, argv, &env))
		return 2;
	interrupt_setup(workload_interrupt);
	/* usage errors exit 2 while parsing; a command's -errno is a runtime failure */
	err = cmds[env.action]();
	return err ? 1 : 0;
}
