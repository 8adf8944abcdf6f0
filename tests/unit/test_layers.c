// SPDX-License-Identifier: GPL-2.0
/*
 * The rules of docs/ARCHITECTURE.md, checked against the code.
 * Includes: every file under user/ has a layer in that page's file table and includes only
 * headers of its own layer or below (a .c file without a row takes its header's layer).
 * Calls, read from the objects' symbols (nm): lib/ calls only lib/; a job folder calls itself,
 * lib/, and another job only through that job's public header user/<job>/<job>.h; nothing
 * calls the top (udsprobe.c, options.c); no cycle between files. Headers outside user/
 * (bpf/x.h, skeletons, system headers) stand outside the rules. Reads the files relative to
 * the repository root, like the golden tests.
 */
#include <ctype.h>
#include <dirent.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#ifndef USER_OBJ_DIR
#define USER_OBJ_DIR ".output/user"
#endif

#define MAX_NAMES 128
#define MAX_FILES 160
#define MAX_SYMS 4096

/*
 * What the rules forbid and the code still does: none since issue 32. An exception would be
 * listed here, a cycle by call by its files ("cycle a b"), a call across folders as
 * "call caller -> callee: symbol"; the check fails on anything else, and on an entry that no
 * longer happens.
 */
static const char *const known[] = { NULL };	/* NULL ends the list */
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

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

/* ---- calls ---------------------------------------------------------------------------- */

struct sym {
	char name[64];
	int mod;
};

struct graph {
	char mods[MAX_FILES][64];	/* "lib/util": a .c file under user/ without .c */
	int nmods;
	struct sym defs[MAX_SYMS];	/* global symbols and the module defining each */
	int ndefs;
	struct sym uses[MAX_SYMS * 2];	/* undefined symbols and the module using each */
	int nuses;
	bool edge[MAX_FILES][MAX_FILES];
	bool seen[N_KNOWN];		/* the known[] entries that happened */
};

/* "lib" of "lib/util", "" of "udsprobe" (the top). */
static void folder_of(const char *mod, char *out, size_t len)
{
	const char *slash = strchr(mod, '/');

	snprintf(out, len, "%.*s", slash ? (int)(slash - mod) : 0, mod);
}

/* Is name a whole word of the file at path? */
static bool file_has_word(const char *path, const char *name)
{
	char line[1024], *p;
	size_t len = strlen(name);
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		for (p = line; !found && (p = strstr(p, name)); p += len)
			found = (p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
				!(isalnum((unsigned char)p[len]) || p[len] == '_');
	fclose(f);
	return found;
}

/* NULL if the rule allows from's use of to's symbol, else which part of it does not. */
static const char *call_forbidden(const char *from, const char *to, const char *sym)
{
	char ff[64], ft[64], pub[192];

	folder_of(from, ff, sizeof(ff));
	folder_of(to, ft, sizeof(ft));
	if (!strcmp(ff, ft) || !strcmp(ft, "lib"))
		return NULL;
	if (!ft[0])
		return "nothing calls the top (udsprobe.c, options.c)";
	if (!strcmp(ff, "lib"))
		return "lib/ calls only lib/";
	if (!ff[0])
		return NULL;	/* main dispatches to every job */
	snprintf(pub, sizeof(pub), "user/%s/%s.h", ft, ft);
	if (file_has_word(pub, sym))
		return NULL;
	return "a job calls another only through its public header user/<job>/<job>.h";
}

static int known_index(const char *what)
{
	size_t i;

	for (i = 0; known[i]; i++)
		if (!strcmp(known[i], what))
			return i;
	return -1;
}

/* Read every module's symbols from its object; false (said) when one is missing. */
static bool read_symbols(struct graph *g)
{
	char cmd[512], line[512], name[256], type[8];
	int m;

	for (m = 0; m < g->nmods; m++) {
		FILE *p;

		snprintf(cmd, sizeof(cmd), "nm -P %s/%s.o 2>&1", USER_OBJ_DIR, g->mods[m]);
		p = popen(cmd, "r");
		if (!p)
			return false;
		while (fgets(line, sizeof(line), p)) {
			if (sscanf(line, "%255s %7s", name, type) != 2 || strlen(name) >= 64)
				continue;
			if (!strcmp(type, "U") && g->nuses < MAX_SYMS * 2) {
				snprintf(g->uses[g->nuses].name, 64, "%s", name);
				g->uses[g->nuses++].mod = m;
			} else if (isupper((unsigned char)type[0]) && type[1] == 0 &&
				   g->ndefs < MAX_SYMS) {
				snprintf(g->defs[g->ndefs].name, 64, "%s", name);
				g->defs[g->ndefs++].mod = m;
			}
		}
		if (pclose(p)) {
			unit_fail(__FILE__, __LINE__, "nm cannot read %s/%s.o: build it first "
				  "(make %s/%s.o)", USER_OBJ_DIR, g->mods[m], USER_OBJ_DIR, g->mods[m]);
			return false;
		}
	}
	return true;
}

/* Check every use against the rule; returns the violations not in known[]. */
static int check_calls(struct graph *g, bool report)
{
	char what[256];
	int u, d, bad = 0, k;

	for (u = 0; u < g->nuses; u++)
		for (d = 0; d < g->ndefs; d++) {
			const char *from = g->mods[g->uses[u].mod], *to = g->mods[g->defs[d].mod];
			const char *why;

			if (strcmp(g->uses[u].name, g->defs[d].name))
				continue;
			g->edge[g->uses[u].mod][g->defs[d].mod] = true;
			why = call_forbidden(from, to, g->uses[u].name);
			if (!why)
				continue;
			snprintf(what, sizeof(what), "call %s -> %s: %s", from, to, g->uses[u].name);
			k = known_index(what);
			if (k >= 0) {
				g->seen[k] = true;
				continue;
			}
			if (report)
				unit_fail(__FILE__, __LINE__, "user/%s.c uses %s of user/%s.c: %s "
					  "(docs/ARCHITECTURE.md)", from, g->uses[u].name, to, why);
			bad++;
		}
	return bad;
}

/* Tarjan's strongly connected components: each of more than one module is a cycle. */
struct tarjan {
	struct graph *g;
	int index[MAX_FILES], low[MAX_FILES], stack[MAX_FILES], sp, next;
	bool on[MAX_FILES];
	int bad;
	bool report;
};

static void strong(struct tarjan *t, int v)
{
	char what[2048];
	int w, comp[MAX_FILES], nc = 0, i, j, k;

	t->index[v] = t->low[v] = ++t->next;
	t->stack[t->sp++] = v;
	t->on[v] = true;
	for (w = 0; w < t->g->nmods; w++) {
		if (!t->g->edge[v][w] || w == v)
			continue;
		if (!t->index[w]) {
			strong(t, w);
			if (t->low[w] < t->low[v])
				t->low[v] = t->low[w];
		} else if (t->on[w] && t->index[w] < t->low[v]) {
			t->low[v] = t->index[w];
		}
	}
	if (t->low[v] != t->index[v])
		return;
	do {
		w = t->stack[--t->sp];
		t->on[w] = false;
		comp[nc++] = w;
	} while (w != v);
	if (nc < 2)
		return;
	for (i = 0; i < nc; i++)	/* sorted by name, as known[] lists them */
		for (j = i + 1; j < nc; j++)
			if (strcmp(t->g->mods[comp[j]], t->g->mods[comp[i]]) < 0) {
				k = comp[i];
				comp[i] = comp[j];
				comp[j] = k;
			}
	snprintf(what, sizeof(what), "cycle");
	for (i = 0; i < nc; i++)
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s", t->g->mods[comp[i]]);
	k = known_index(what);
	if (k >= 0) {
		t->g->seen[k] = true;
		return;
	}
	if (t->report)
		unit_fail(__FILE__, __LINE__, "a cycle by call: %s: modules call each other only "
			  "downwards (docs/ARCHITECTURE.md)", what + strlen("cycle "));
	t->bad++;
}

static int check_cycles(struct graph *g, bool report)
{
	static struct tarjan t;
	int v;

	memset(&t, 0, sizeof(t));
	t.g = g;
	t.report = report;
	for (v = 0; v < g->nmods; v++)
		if (!t.index[v])
			strong(&t, v);
	return t.bad;
}

TEST(layers_calls_cross_folders_only_through_lib_or_public_headers)
{
	static char files[MAX_FILES][64];
	static struct graph g;
	int nfiles = list_user_files(files, MAX_FILES), i;
	size_t k;

	REQUIRE(nfiles > 20);
	memset(&g, 0, sizeof(g));
	for (i = 0; i < nfiles; i++) {
		size_t len = strlen(files[i]);

		if (!strcmp(files[i] + len - 2, ".c"))
			snprintf(g.mods[g.nmods++], 64, "%.*s", (int)len - 2, files[i]);
	}
	REQUIRE(read_symbols(&g));
	REQUIRE(g.ndefs > 100 && g.nuses > 100);	/* nm answered */
	check_calls(&g, true);
	check_cycles(&g, true);
	for (k = 0; known[k]; k++)
		if (!g.seen[k])
			unit_fail(__FILE__, __LINE__, "known exception \"%s\" no longer happens: "
				  "delete it from known[] in %s", known[k], __FILE__);
}

/* The rule itself, on names. */
TEST(layers_call_rule)
{
	CHECK(call_forbidden("compare/report_md", "compare/explain", "explain_pair") == NULL);
	CHECK(call_forbidden("backlog/backlog", "lib/util", "parse_u64") == NULL);
	CHECK(call_forbidden("udsprobe", "trace/trace_report", "trace_main") == NULL);
	CHECK(call_forbidden("lib/util", "compare/workload", "mode_names") != NULL);
	CHECK(call_forbidden("trace/trace", "options", "options_parse") != NULL);
	/* through the public header (trace.h declares trace_run) or not */
	CHECK(call_forbidden("compare/programs", "trace/trace", "trace_run") == NULL);
	CHECK(call_forbidden("backlog/backlog_out", "compare/tracer", "trace_stage") != NULL);
}
