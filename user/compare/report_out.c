// SPDX-License-Identifier: GPL-2.0
/*
 * --compare --out DIR: the report directory (report.md, report.json, folded stacks, SVGs),
 * written through lib/out_set.c as --trace's is.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out_set.h"
#include "outfile.h"
#include "report_common.h"
#include "reports.h"
#include "util.h"

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
	char name[OUT_NAME_LEN], tag[64];
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
