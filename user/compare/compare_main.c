// SPDX-License-Identifier: GPL-2.0
/*
 * The --compare command with the built-in workload: what can be checked before a long run, one
 * --compare at a time on a host, the runs (compare.c), then the reports (reports.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "compare.h"
#include "interrupt.h"
#include "outfile.h"
#include "reports.h"
#include "util.h"
#include "workload.h"

/*
 * One --compare at a time on a host: two would share CPU 0 and each one's probes would fire
 * in the other's untraced baseline. The second one waits, saying for whom (Ctrl-C gives up):
 * waiting, not refusing, so two scripts or test suites on one machine both finish with clean
 * numbers. A root-only lock file (0600: another user cannot hold it to stall root's runs);
 * runs without root cannot open it and are not serialised.
 */
int compare_lock(void)
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
static int compare_precheck(const struct compare_opts *o, const struct compare_outputs *out,
			    struct outdir *out_dir)
{
	int p, err;

	for (p = 0; p < CPU__COUNT; p++)
		if (o->places[p] && (err = workload_check_place(p)))
			return err;
	if (out->json_path && (err = outfile_check("--json", out->json_path)))
		return err;
	if (out->folded_path && (err = outfile_check("--folded", out->folded_path)))
		return err;
	if (out->svg_path && (err = outfile_check("--svg", out->svg_path)))
		return err;
	if (out->out_dir && (err = outdir_open(out_dir, "--out", out->out_dir)))
		return err;
	return 0;
}

static int write_outputs(const struct comparison *cmp, const struct compare_outputs *out,
			 struct outdir *out_dir)
{
	int err = 0, e;

	if ((!out->json_path || strcmp(out->json_path, "-")) &&
	    (!out->folded_path || strcmp(out->folded_path, "-"))) {
		report_text(cmp, stdout);
		report_bars(cmp, stdout, bars_use_color(stdout), 0);
		err = stdout_flush_report();	/* a full disk or a closed pipe: said once */
	}
	if (out->json_path && (e = report_json(cmp, out->json_path)))
		err = err ? err : e;
	if (out->folded_path && (e = report_folded(cmp, out->folded_path)))
		err = err ? err : e;
	if (out->svg_path && (e = report_svg(cmp, out->svg_path)))
		err = err ? err : e;
	if (out->out_dir && (e = report_out_at(cmp, out_dir)))
		err = err ? err : e;
	return err;
}

int compare_main(const struct compare_opts *o, const struct compare_outputs *out)
{
	struct outdir out_dir = { .fd = -1 };
	struct comparison cmp = {};
	int err, e;

	if (o->trace && (err = privileges_check("traced --compare", PRIVILEGES_SETCAP
						 ", or add --no-trace to run the workload only")))
		return err;
	err = compare_precheck(o, out, &out_dir);
	if (!err)
		err = compare_lock();
	if (err)
		goto out;

	err = compare_run(o, &cmp);
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
		e = write_outputs(&cmp, out, &out_dir);
		err = err ? err : e;
	}
out:
	/* a directory udsprobe created for --out but never wrote into goes again */
	if (out_dir.fd >= 0)
		outdir_close(&out_dir, true);
	comparison_free(&cmp);
	return err;
}
