// SPDX-License-Identifier: GPL-2.0
/*
 * The layering rule of docs/ARCHITECTURE.md, checked against the code: every file under user/
 * has a layer in that page's file table, and includes only headers of its own layer or below
 * (a .c file without a row takes its header's layer). Headers outside user/ (bpf/x.h,
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

#define MAX_NAMES 128
#define MAX_FILES 160

struct layer_name {
	char pat[64];		/* "lib/util.[ch]", "compare/tracer_int.h" (paths under user/) */
	int layer;
};

/* The rows "| N | `a`, `b` | ... |" of the table after the "<!-- layers" marker. */
static int read_layers(const char *path, struct layer_name *out, int max)
{
	char line[4096];
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

/* The .c and .h files of user/ and its folders, as paths under user/ ("lib/util.h"). */
static int list_user_files(char files[][64], int max)
{
	const char *dirs[16] = { "" };
	char names[16][32], path[128];
	int nd = 1, n = 0, i;
	struct dirent *de;
	DIR *d = opendir("user");

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' && nd < 16) {
			snprintf(names[nd], sizeof(names[nd]), "%.30s/", de->d_name);
			dirs[nd] = names[nd];
			nd++;
		}
	closedir(d);
	for (i = 0; i < nd; i++) {
		snprintf(path, sizeof(path), "user/%s", dirs[i]);
		d = opendir(path);
		if (!d)
			return -1;
		while ((de = readdir(d)) && n < max) {
			size_t len = strlen(de->d_name);

			if (len < 3 || de->d_type != DT_REG ||
			    (strcmp(de->d_name + len - 2, ".h") && strcmp(de->d_name + len - 2, ".c")))
				continue;
			snprintf(files[n++], 64, "%s%s", dirs[i], de->d_name);
		}
		closedir(d);
	}
	return n;
}

/* The path under user/ of the header `#include "name"` finds, or NULL (not ours). */
static const char *find_header(char files[][64], int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++) {
		const char *base = strrchr(files[i], '/');

		if (!strcmp(base ? base + 1 : files[i], name))
			return files[i];
	}
	return NULL;
}

/* Every `#include "x.h"` of user/file whose x.h is ours has a layer <= file's. Returns the
 * violations; report: record each as a failure of the running case. */
static int check_file(const struct layer_name *names, int n, char files[][64], int nfiles,
		      const char *file, bool report)
{
	char path[512], line[512], inc[256];
	int own = layer_of(names, n, file), bad = 0, lower;
	const char *hdr;
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
		    !(hdr = find_header(files, nfiles, inc)))
			continue;
		lower = layer_of(names, n, hdr);
		if (lower <= own)
			continue;
		if (report)
			unit_fail(__FILE__, __LINE__, "user/%s (layer %d) includes %s (layer %d): a "
				  "lower layer must not know a higher one (docs/ARCHITECTURE.md)",
				  file, own, hdr, lower);
		bad++;
	}
	fclose(f);
	return bad;
}

TEST(layers_every_user_file_respects_the_rule)
{
	struct layer_name names[MAX_NAMES];
	int n = read_layers("docs/ARCHITECTURE.md", names, MAX_NAMES), i, j;
	static char files[MAX_FILES][64];
	int nfiles = list_user_files(files, MAX_FILES);

	REQUIRE(n > 10);	/* the table is there and parsed */
	REQUIRE(nfiles > 20);
	CHECK_INT(layer_of(names, n, "lib/util.h"), 0);
	CHECK_INT(layer_of(names, n, "udsprobe.c"), 6);
	for (i = 0; i < nfiles; i++) {
		const char *bi = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];

		check_file(names, n, files, nfiles, files[i], true);
		/* every folder is on the include path: one name, one file */
		for (j = i + 1; j < nfiles; j++) {
			const char *bj = strrchr(files[j], '/') ? strrchr(files[j], '/') + 1 : files[j];

			if (!strcmp(bi, bj))
				unit_fail(__FILE__, __LINE__, "user/%s and user/%s have one name: "
					  "#include \"%s\" would find either", files[i], files[j], bi);
		}
	}
}

/* The checker itself catches an upward include and an unplaced file. */
TEST(layers_checker_flags_an_upward_include)
{
	struct layer_name names[] = {
		{ "lib/attach.[ch]", 2 }, { "compare/workload.h", 3 }, { "compare/tracer.h", 3 },
		{ "compare/compare.h", 0 },
	};
	static char files[MAX_FILES][64];
	int nfiles = list_user_files(files, MAX_FILES);

	REQUIRE(nfiles > 20);
	CHECK_INT(layer_of(names, 4, "compare/tracer.c"), 3);
	CHECK_INT(layer_of(names, 4, "lib/attach.c"), 2);
	CHECK_INT(layer_of(names, 4, "nowhere.h"), -1);
	CHECK_INT(check_file(names, 4, files, nfiles, "compare/tracer.h", false), 0);
	/* compare.h includes tracer.h: wrong if compare were layer 0 */
	CHECK(check_file(names, 4, files, nfiles, "compare/compare.h", false) >= 1);
	CHECK_INT(check_file(names, 4, files, nfiles, "lib/util.h", false), 1);	/* no row */
}
