// SPDX-License-Identifier: GPL-2.0
/*
 * The layering rule of docs/ARCHITECTURE.md, checked against the code: every header in user/
 * has a layer in that page's table, and includes only headers of its own layer or below; a
 * .c file likewise (its layer is its header's). Headers that are not in user/ (bpf/stages.h,
 * skeletons, system headers) stand outside the layers. Reads the files relative to the
 * repository root, like the golden tests.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#define MAX_NAMES 64

struct layer_name {
	char pat[64];		/* "tracer.h", "backlog_*.h", "report_*.c" */
	int layer;
};

/* The rows "| N | `a.h`, `b.h` | ... |" of the table after the "<!-- layers" marker. */
static int read_layers(const char *path, struct layer_name *out, int max)
{
	char line[4096];	/* a layer row lists many files */
	int n = 0, in_table = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *cell, *end, *p;
		int layer;

		if (strstr(line, "<!-- layers"))
			in_table = 1;
		if (!in_table)
			continue;
		if (line[0] != '|' && n)
			break;	/* the table ended */
		if (sscanf(line, "| %d |", &layer) != 1)
			continue;
		cell = strchr(line + 1, '|') + 1;
		end = strchr(cell, '|');
		if (!end)
			continue;
		*end = 0;
		for (p = cell; (p = strchr(p, '`')) && n < max; ) {
			char *close = strchr(p + 1, '`');

			if (!close)
				break;
			snprintf(out[n].pat, sizeof(out[n].pat), "%.*s", (int)(close - p - 1), p + 1);
			out[n++].layer = layer;
			p = close + 1;
		}
	}
	fclose(f);
	return n;
}

static int layer_of(const struct layer_name *names, int n, const char *file)
{
	char h[256];
	int i;

	for (i = 0; i < n; i++)
		if (!fnmatch(names[i].pat, file, 0))
			return names[i].layer;
	/* x.c sits in x.h's layer */
	if (strlen(file) > 2 && !strcmp(file + strlen(file) - 2, ".c")) {
		snprintf(h, sizeof(h), "%.*s.h", (int)strlen(file) - 2, file);
		for (i = 0; i < n; i++)
			if (!fnmatch(names[i].pat, h, 0))
				return names[i].layer;
	}
	return -1;
}

static int exists_in_user(const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "user/%s", name);
	f = fopen(path, "r");
	if (f)
		fclose(f);
	return f != NULL;
}

/* Every `#include "x.h"` of user/file whose x.h is in user/ has a layer <= file's. Returns the
 * violations; report: record each as a failure of the running case. */
static int check_file(const struct layer_name *names, int n, const char *file, bool report)
{
	char path[512], line[512], inc[256];
	int own = layer_of(names, n, file), bad = 0, lower;
	FILE *f;

	if (own < 0) {
		if (report)
			unit_fail(__FILE__, __LINE__, "user/%s has no layer: add it to the table "
				  "in docs/ARCHITECTURE.md", file);
		return 1;
	}
	snprintf(path, sizeof(path), "user/%s", file);
	f = fopen(path, "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "#include \"%255[^\"]\"", inc) != 1 || strchr(inc, '/') ||
		    !exists_in_user(inc))
			continue;
		lower = layer_of(names, n, inc);
		if (lower <= own)
			continue;
		if (report)
			unit_fail(__FILE__, __LINE__, "user/%s (layer %d) includes %s (layer %d): a "
				  "lower layer must not know a higher one (docs/ARCHITECTURE.md)",
				  file, own, inc, lower);
		bad++;
	}
	fclose(f);
	return bad;
}

TEST(layers_every_user_file_respects_the_rule)
{
	struct layer_name names[MAX_NAMES];
	int n = read_layers("docs/ARCHITECTURE.md", names, MAX_NAMES), files = 0;
	struct dirent *de;
	DIR *d;

	REQUIRE(n > 10);	/* the table is there and parsed */
	CHECK_INT(layer_of(names, n, "util.h"), 0);
	CHECK_INT(layer_of(names, n, "udsprobe.c"), 6);
	d = opendir("user");
	REQUIRE(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 3 || (strcmp(de->d_name + len - 2, ".h") && strcmp(de->d_name + len - 2, ".c")))
			continue;
		check_file(names, n, de->d_name, true);
		files++;
	}
	closedir(d);
	CHECK(files > 20);
}

/* The checker itself catches an upward include and an unplaced file. */
TEST(layers_checker_flags_an_upward_include)
{
	struct layer_name names[] = {
		{ "attach.h", 2 }, { "workload.h", 3 }, { "tracer.h", 3 }, { "compare.h", 0 },
	};

	CHECK_INT(layer_of(names, 4, "tracer.c"), 3);
	CHECK_INT(layer_of(names, 4, "nowhere.h"), -1);
	CHECK_INT(check_file(names, 4, "tracer.h", false), 0);
	/* compare.h includes tracer.h: wrong if compare were layer 0 */
	CHECK(check_file(names, 4, "compare.h", false) >= 1);
	CHECK_INT(check_file(names, 4, "util.h", false), 1);	/* not in the table */
}
