// SPDX-License-Identifier: GPL-2.0
/*
 * Terminal view: per pair, one proportional bar per transport on one scale, a letter per
 * stage (first two path components), and a key. Colour (256-colour backgrounds, the SVG's
 * phase colours) only on a tty without NO_COLOR; otherwise plain ASCII letters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "report_common.h"
#include "reports.h"
#include "util.h"

#define BAR_MAX 64
#define LABEL_W 6	/* "  unix " */

static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool bars_use_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	if (nc && *nc)		/* no-color.org: set and non-empty */
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fileno(f));
}

/* Two xterm-256 background shades per phase, close to the SVG's colours. */
static int bg_color(const char *path, int nth)
{
	static const struct {
		const char *phase;
		int c[2];
	} pal[] = {
		{ "send", { 79, 115 } },
		{ "rx_softirq", { 222, 229 } },
		{ "deliver", { 218, 225 } },
		{ "sched", { 149, 193 } },
		{ "recv", { 117, 159 } },
		{ "app", { 252, 254 } },
		{ "unattributed", { 250, 252 } },
	};
	size_t i, len = strcspn(path, ";");

	for (i = 0; i < ARRAY_SIZE(pal); i++)
		if (strlen(pal[i].phase) == len && !strncmp(pal[i].phase, path, len))
			return pal[i].c[nth & 1];
	return nth & 1 ? 187 : 186;
}

static int term_width(FILE *f)
{
	struct winsize ws;

	if (isatty(fileno(f)) && !ioctl(fileno(f), TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	return 80;
}

static void bar(FILE *f, const struct srow *rows, int n, int tr, double scale, int width,
		bool color)
{
	double cum = 0;
	int g, col = 0, len, end, i;

	fputs(color ? " " : "[", f);
	for (g = 0; g < n; g++) {
		char ch = g < (int)sizeof(letters) - 1 ? letters[g] : '?';

		cum += rows[g].v[tr];
		end = (int)lround(cum * scale);	/* cumulative rounding: the total stays exact */
		len = end - col;
		if (len <= 0)
			continue;
		if (color) {
			fprintf(f, "\033[30;48;5;%dm%c", bg_color(rows[g].name, g), ch);
			for (i = 1; i < len; i++)
				fputc(' ', f);
			fputs("\033[0m", f);
		} else {
			for (i = 0; i < len; i++)
				fputc(ch, f);
		}
		col = end;
	}
	fputs(color ? " " : "]", f);
	for (; col < width; col++)
		fputc(' ', f);
}

static void pair_bars(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
		      bool corrected, bool color, int width, int cols)
{
	struct stree *t = calloc(1, sizeof(*t));
	struct srow *rows = calloc(MAX_STAGES * 2, sizeof(*rows));
	int n, g, tr, x;
	double max, scale;
	char a[32], b[32], caveat[240], think[48];

	if (!t || !rows)
		goto out;
	stree_build(pr, corrected, t);
	n = stree_rows(t, rows, MAX_STAGES * 2);
	max = MAX(t->sum[TR_UNIX], t->sum[TR_TCP]);
	scale = max > 0 ? width / max : 0;
	fprintf(f, "\n%s %llu B cpu=%s%s: where a message's time goes (mean per message, one scale%s)\n",
		mode_names[pr->mode], (unsigned long long)pr->msg_size, place_names[pr->place],
		think_words(pr, think, sizeof(think)),
		corrected ? ", probe cost removed" : "");
	for (tr = 0; tr < TR__COUNT; tr++) {
		fprintf(f, "  %-4s ", transport_names[tr]);
		if (!t->has[tr]) {
			fprintf(f, "(no stage data)\n");
			continue;
		}
		bar(f, rows, n, tr, scale, width, color);
		fprintf(f, " %9s", fmt_dur(t->sum[tr], false, a, sizeof(a)));
		if (tr == TR_TCP && t->has[TR_UNIX] && t->sum[TR_UNIX] > 0)
			fprintf(f, "  %.2fx unix, %s%s", t->sum[TR_TCP] / t->sum[TR_UNIX],
				t->sum[TR_TCP] >= t->sum[TR_UNIX] ? "+" : "-",
				fmt_dur(fabs(t->sum[TR_TCP] - t->sum[TR_UNIX]), false, b, sizeof(b)));
		fputc('\n', f);
	}
	/* the key, wrapped to the terminal */
	x = cols;
	for (g = 0; g < n; g++) {
		int w = 3 + (int)strlen(rows[g].name);

		if (x + w > cols) {
			fputs(g ? "\n       " : "       ", f);
			x = 7;
		} else {
			fputs("  ", f);
		}
		if (color)
			fprintf(f, "\033[30;48;5;%dm%c\033[0m", bg_color(rows[g].name, g),
				g < (int)sizeof(letters) - 1 ? letters[g] : '?');
		else
			fputc(g < (int)sizeof(letters) - 1 ? letters[g] : '?', f);
		fprintf(f, " %s", rows[g].name);
		x += w;
	}
	fputc('\n', f);
	if (*pair_caveat(cmp, pr, caveat, sizeof(caveat)))
		fprintf(f, "  caution: %s\n", caveat);
out:
	free(rows);
	free(t);
}

void report_bars(const struct comparison *cmp, FILE *f, bool color, int width)
{
	int i, cols = term_width(f);

	if (width <= 0)
		width = MAX(20, MIN(BAR_MAX, cols - LABEL_W - 36));
	for (i = 0; i < cmp->n_pairs; i++)
		if (pair_has_stages(&cmp->pairs[i]))
			pair_bars(f, cmp, &cmp->pairs[i], show_corrected(cmp), color, width,
				  MAX(cols, 40));
}
