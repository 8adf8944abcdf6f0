// SPDX-License-Identifier: GPL-2.0
/*
 * --out DIR, for every action: every file goes through outfile.c (temp name,
 * O_EXCL|O_NOFOLLOW, rename). A manifest of what udsprobe wrote lets the next run into the
 * same directory remove the previous run's files that it does not rewrite (an old
 * flame-*.svg of a run no longer in the report), and nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out_set.h"
#include "outfile.h"
#include "util.h"

#define MANIFEST ".udsprobe-manifest"
#define MAX_NAMES 512
#define NAME_LEN OUT_NAME_LEN

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
