// SPDX-License-Identifier: GPL-2.0
/*
 * --out DIR: the report directory (report.md, report.json, folded stacks, SVGs). Every file
 * goes through outfile.c (temp name, O_EXCL|O_NOFOLLOW, rename). A manifest of what udsprobe
 * wrote lets the next run into the same directory remove the previous run's files that it
 * does not rewrite (an old flame-*.svg of a run no longer in the report), and nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "report_common.h"
#include "reports.h"
#include "util.h"

#define MANIFEST ".udsprobe-manifest"
#define MAX_NAMES 512
#define NAME_LEN 96

struct names {
	int n;
	char name[MAX_NAMES][NAME_LEN];
};

static bool names_has(const struct names *ns, const char *name)
{
	int i;

	for (i = 0; i < ns->n; i++)
		if (!strcmp(ns->name[i], name))
			return true;
	return false;
}

static void names_add(struct names *ns, const char *name)
{
	if (ns->n < MAX_NAMES && !names_has(ns, name))
		snprintf(ns->name[ns->n++], NAME_LEN, "%s", name);
}

/* Only names udsprobe itself gives its files: a doctored manifest cannot name others. */
static bool our_name(const char *name)
{
	static const char *const fixed[] = {
		"report.md", "report.json", "stages.folded", "unix.folded", "tcp.folded",
		"udsprobe.svg", "sweep.svg", "think.svg",
	};
	size_t i;

	if (strchr(name, '/') || name[0] == '.')
		return false;
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(name, fixed[i]))
			return true;
	return !fnmatch("flame-*.svg", name, 0) || !fnmatch("diff-*.svg", name, 0);
}

/* A file made by this user (root) or handed to the sudo user, not someone else's. */
static bool ours(const struct stat *st)
{
	uid_t uid;
	gid_t gid;

	return S_ISREG(st->st_mode) &&
	       (st->st_uid == geteuid() || (sudo_ids(&uid, &gid) && st->st_uid == uid));
}

/* The previous run's manifest, if there is a trustworthy one. */
static void manifest_read(int dirfd, struct names *old)
{
	char line[NAME_LEN + 2];
	struct stat st;
	FILE *f;
	int fd;

	old->n = 0;
	fd = openat(dirfd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !ours(&st) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (our_name(line))
			names_add(old, line);
	}
	fclose(f);
}

/* Remove the previous run's files this run did not write. */
static void remove_stale(int dirfd, const struct names *old, const struct names *now)
{
	struct stat st;
	int i;

	for (i = 0; i < old->n; i++) {
		if (names_has(now, old->name[i]))
			continue;
		if (!fstatat(dirfd, old->name[i], &st, AT_SYMLINK_NOFOLLOW) && ours(&st))
			unlinkat(dirfd, old->name[i], 0);
	}
}

static int manifest_write(struct outdir *od, const struct names *now)
{
	struct outfile of;
	int i, err = outfile_begin_at(&of, "--out", od->fd, od->path, MANIFEST);

	if (err)
		return err;
	fprintf(of.f, "# files udsprobe wrote here; the next udsprobe --out into this directory "
		"replaces exactly these\n");
	for (i = 0; i < now->n; i++)
		fprintf(of.f, "%s\n", now->name[i]);
	return outfile_commit(&of, 0);
}

enum out_kind { OUT_MD, OUT_JSON, OUT_FOLDED, OUT_SVG, OUT_SWEEP, OUT_THINK };

/* Write one file of the directory; 0, -ENODATA (nothing to draw: no file) or -errno. */
static int write_one(const struct comparison *cmp, struct outdir *od, struct names *now,
		     const char *name, enum out_kind kind, int arg, unsigned view)
{
	struct outfile of;
	int err = outfile_begin_at(&of, "--out", od->fd, od->path, name);

	if (err)
		return err;
	switch (kind) {
	case OUT_MD:
		md_write(cmp, of.f);
		break;
	case OUT_JSON:
		json_write(cmp, of.f);
		break;
	case OUT_FOLDED:
		folded_write(cmp, arg, cmp->n_pairs > 1, of.f);
		break;
	case OUT_SVG:
		err = svg_write(cmp, arg, view, of.f);
		break;
	case OUT_SWEEP:
		/* one size is no curve: no file */
		err = sweep_svg_write(cmp, of.f) == -EINVAL ? -ENODATA : 0;
		break;
	case OUT_THINK:
		/* one think time is no curve either */
		err = think_svg_write(cmp, of.f) == -EINVAL ? -ENODATA : 0;
		break;
	}
	err = outfile_commit(&of, err);
	if (!err)
		names_add(now, name);
	return err == -ENODATA ? 0 : err;
}

int report_out_at(const struct comparison *cmp, struct outdir *od)
{
	static const char *const kind[] = { "flame", "diff" };
	struct names *old = calloc(1, sizeof(*old)), *now = calloc(1, sizeof(*now));
	char name[NAME_LEN], tag[64];
	int err = 0, e, i, t, v;

	if (!old || !now) {
		free(old);
		free(now);
		fprintf(stderr, "udsprobe: --out: out of memory\n");
		return -ENOMEM;
	}
	manifest_read(od->fd, old);
#define KEEP(x) do { e = (x); err = err ? err : e; } while (0)
	KEEP(write_one(cmp, od, now, "report.md", OUT_MD, 0, 0));
	KEEP(write_one(cmp, od, now, "report.json", OUT_JSON, 0, 0));
	KEEP(write_one(cmp, od, now, "sweep.svg", OUT_SWEEP, 0, 0));
	KEEP(write_one(cmp, od, now, "think.svg", OUT_THINK, 0, 0));
	if (comparison_has_stages(cmp)) {
		KEEP(write_one(cmp, od, now, "stages.folded", OUT_FOLDED, -1, 0));
		for (t = 0; t < TR__COUNT; t++) {
			snprintf(name, sizeof(name), "%s.folded", transport_names[t]);
			KEEP(write_one(cmp, od, now, name, OUT_FOLDED, t, 0));
		}
		KEEP(write_one(cmp, od, now, "udsprobe.svg", OUT_SVG, -1, SVG_BOTH));
		for (i = 0; i < cmp->n_pairs; i++) {
			if (!pair_has_stages(&cmp->pairs[i]))
				continue;
			pair_tag(&cmp->pairs[i], true, tag, sizeof(tag));
			for (v = 0; v < 2; v++) {
				snprintf(name, sizeof(name), "%s-%s.svg", kind[v], tag);
				KEEP(write_one(cmp, od, now, name, OUT_SVG, i, v ? SVG_DIFF : SVG_FLAME));
			}
		}
	}
	remove_stale(od->fd, old, now);
	KEEP(manifest_write(od, now));
#undef KEEP
	if (!comparison_has_stages(cmp))
		fprintf(stderr, "udsprobe: wrote %s/report.md and report.json%s%s; no stage SVG or "
			"folded stacks: %s\n", od->path, names_has(now, "sweep.svg") ? ", sweep.svg" : "",
			names_has(now, "think.svg") ? ", think.svg" : "", no_stages_reason(cmp));
	else if (!err)
		fprintf(stderr, "udsprobe: wrote %s/: report.md, report.json, %s%sstages.folded, "
			"unix.folded, tcp.folded, udsprobe.svg and per-run flame-*.svg, diff-*.svg\n",
			od->path, names_has(now, "sweep.svg") ? "sweep.svg (the size curve), " : "",
			names_has(now, "think.svg") ? "think.svg (across think times), " : "");
	free(old);
	free(now);
	return err;
}

int report_out(const struct comparison *cmp, const char *dir)
{
	struct outdir od;
	int err = outdir_open(&od, "--out", dir);

	if (err)
		return err;
	err = report_out_at(cmp, &od);
	outdir_close(&od, false);
	return err;
}
