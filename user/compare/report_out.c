// SPDX-License-Identifier: GPL-2.0
/*
 * --out DIR: the report directory (report.md, report.json, folded stacks, SVGs; --trace's
 * files through the same out_set). Every file goes through outfile.c (temp name,
 * O_EXCL|O_NOFOLLOW, rename). A manifest of what udsprobe
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
		snprintf(ns->name[ns->n++], NAME_LEN, "%.*s", NAME_LEN - 1, name);
}

/* Only names udsprobe itself gives its files: a doctored manifest cannot name others. */
static bool our_name(const char *name)
{
	static const char *const fixed[] = {
		"report.md", "report.json", "stages.folded", "unix.folded", "tcp.folded",
		"udsprobe.svg", "sweep.svg", "think.svg", "trace.json", "slow.jsonl",
		"client-unix.out", "client-tcp.out",
	};
	size_t i;

	if (strchr(name, '/') || name[0] == '.')
		return false;
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(name, fixed[i]))
			return true;
	return !fnmatch("flame-*.svg", name, 0) || !fnmatch("diff-*.svg", name, 0) ||
	       !fnmatch("flow-*.svg", name, 0) || !fnmatch("flow-*.folded", name, 0);
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

/* ---- what one run writes into a directory (reports.h) ---- */

struct out_set {
	struct outdir *od;
	struct names old, now;
};

struct out_set *out_set_begin(struct outdir *od)
{
	struct out_set *s = calloc(1, sizeof(*s));

	if (!s) {
		say_error("--out: out of memory");
		return NULL;
	}
	s->od = od;
	manifest_read(od->fd, &s->old);
	return s;
}

int out_set_write(struct out_set *s, const char *name, out_write_fn fn, const void *ctx,
		  int arg)
{
	struct outfile of;
	int err = outfile_begin_at(&of, "--out", s->od->fd, s->od->path, name);

	if (err)
		return err;
	err = outfile_commit(&of, fn(of.f, ctx, arg));
	if (!err)
		names_add(&s->now, name);
	return err == -ENODATA ? 0 : err;
}

bool out_set_has(const struct out_set *s, const char *name)
{
	return names_has(&s->now, name);
}

int out_set_end(struct out_set *s)
{
	int err;

	remove_stale(s->od->fd, &s->old, &s->now);
	err = manifest_write(s->od, &s->now);
	free(s);
	return err;
}

/* ---- --compare's directory ---- */

enum out_kind { OUT_MD, OUT_JSON, OUT_FOLDED, OUT_SVG, OUT_SWEEP, OUT_THINK };

struct cmp_file {
	const struct comparison *cmp;
	enum out_kind kind;
	unsigned view;
};

/* One file of --compare's directory; -ENODATA: nothing to draw (no file). */
static int cmp_write(FILE *f, const void *ctx, int arg)
{
	const struct cmp_file *c = ctx;

	switch (c->kind) {
	case OUT_MD:
		md_write(c->cmp, f);
		return 0;
	case OUT_JSON:
		json_write(c->cmp, f);
		return 0;
	case OUT_FOLDED:
		folded_write(c->cmp, arg, c->cmp->n_pairs > 1, f);
		return 0;
	case OUT_SVG:
		return svg_write(c->cmp, arg, c->view, f);
	case OUT_SWEEP:
		/* one size is no curve: no file */
		return sweep_svg_write(c->cmp, f) == -EINVAL ? -ENODATA : 0;
	case OUT_THINK:
		/* one think time is no curve either */
		return think_svg_write(c->cmp, f) == -EINVAL ? -ENODATA : 0;
	}
	return 0;
}

static int write_one(const struct comparison *cmp, struct out_set *set, const char *name,
		     enum out_kind kind, int arg, unsigned view)
{
	struct cmp_file c = { .cmp = cmp, .kind = kind, .view = view };

	return out_set_write(set, name, cmp_write, &c, arg);
}

int report_out_at(const struct comparison *cmp, struct outdir *od)
{
	static const char *const kind[] = { "flame", "diff" };
	struct out_set *set = out_set_begin(od);
	char name[NAME_LEN], tag[64];
	bool sweep, think;
	int err = 0, e, i, t, v;

	if (!set)
		return -ENOMEM;
#define KEEP(x) do { e = (x); err = err ? err : e; } while (0)
	KEEP(write_one(cmp, set, "report.md", OUT_MD, 0, 0));
	KEEP(write_one(cmp, set, "report.json", OUT_JSON, 0, 0));
	KEEP(write_one(cmp, set, "sweep.svg", OUT_SWEEP, 0, 0));
	KEEP(write_one(cmp, set, "think.svg", OUT_THINK, 0, 0));
	if (comparison_has_stages(cmp)) {
		KEEP(write_one(cmp, set, "stages.folded", OUT_FOLDED, -1, 0));
		for (t = 0; t < TR__COUNT; t++) {
			snprintf(name, sizeof(name), "%s.folded", transport_names[t]);
			KEEP(write_one(cmp, set, name, OUT_FOLDED, t, 0));
		}
		KEEP(write_one(cmp, set, "udsprobe.svg", OUT_SVG, -1, SVG_BOTH));
		for (i = 0; i < cmp->n_pairs; i++) {
			if (!pair_has_stages(&cmp->pairs[i]))
				continue;
			pair_tag(&cmp->pairs[i], true, tag, sizeof(tag));
			for (v = 0; v < 2; v++) {
				snprintf(name, sizeof(name), "%s-%s.svg", kind[v], tag);
				KEEP(write_one(cmp, set, name, OUT_SVG, i, v ? SVG_DIFF : SVG_FLAME));
			}
		}
	}
	sweep = out_set_has(set, "sweep.svg");
	think = out_set_has(set, "think.svg");
	KEEP(out_set_end(set));
#undef KEEP
	if (!comparison_has_stages(cmp))
		say_error("wrote %s/report.md and report.json%s%s; no stage SVG or "
			"folded stacks: %s", od->path, sweep ? ", sweep.svg" : "",
			think ? ", think.svg" : "", no_stages_reason(cmp));
	else if (!err)
		say_error("wrote %s/: report.md, report.json, %s%sstages.folded, "
			"unix.folded, tcp.folded, udsprobe.svg and per-run flame-*.svg, diff-*.svg",
			od->path, sweep ? "sweep.svg (the size curve), " : "",
			think ? "think.svg (across think times), " : "");
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
