// SPDX-License-Identifier: GPL-2.0
/*
 * The curves: one SVG across a parameter of the pingpong/stream runs, for a talk.
 *
 * sweep.svg, across message sizes. Panels, top to bottom, all on one log2 size axis so they
 * line up:
 *   1. one-way latency (pingpong, untraced p50) of both transports, log scale;
 *   2. the UDS/TCP latency ratio (below 1: UDS faster), where the curves cross;
 *   3. throughput (stream, untraced bytes/s) of both transports, log scale, if measured;
 *   4. per size, the stage composition of each transport's traced message time (share of
 *      each phase: send, softirq, deliver, sched, recv, bulk), so the reader sees which
 *      stages make the curves cross (copies and buffer waits at large sizes).
 * think.svg, across the client's work per round trip (--think LIST): the round trip (untraced
 * p50 x 2) of both transports on a log scale, and their ratio, against the think time on a
 * log axis with 0 (no work) set apart at its left.
 * Points carry <title> tooltips with the exact figures, and data-x (size in bytes or think
 * time in ns) and data-v (the value drawn) for tests.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_common.h"
#include "reports.h"
#include "svg_draw.h"
#include "util.h"

#define SW	1600
#define SML	150		/* left margin: axis labels */
#define SMR	220		/* right margin: legend */
#define SPW	(SW - SML - SMR)
#define PANEL_H	260
#define GAP	90
#define ZGAP	(SPW * 0.14)	/* think.svg: 0 (no work) this far left of the log axis */
#define MAX_PTS	(MAX_SIZES > MAX_THINKS ? MAX_SIZES : MAX_THINKS)

static const unsigned tr_rgb[TR__COUNT] = { 0x117733, 0xcc6677 };	/* Tol: green, rose */
static const char *const tr_name[TR__COUNT] = { "UDS", "TCP" };

enum curve_kind { CURVE_SIZE, CURVE_THINK };

struct sweep_pt {
	uint64_t x;			/* message size in bytes, or think time in ns */
	const struct pair_result *pp;	/* pingpong pair, or NULL */
	const struct pair_result *st;	/* stream pair, or NULL */
};

/* The points of one chart, ascending in x, all at one placement (and, think: one size). */
struct curve {
	enum curve_kind kind;
	enum cpu_place place;
	uint64_t size;			/* think: the pingpong message size */
	int n;
	struct sweep_pt pts[MAX_PTS];
};

static const char *size_words(uint64_t b, char *buf, size_t len)
{
	if (b >= (1 << 20) && !(b % (1 << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	return buf;
}

/* A point's x in words: on the axis ("64 KiB", "0", "100 us") or in a tooltip ("no work",
 * "100 us of work"). */
static const char *x_words(const struct curve *c, int i, bool axis, char *buf, size_t len)
{
	char d[32];

	if (c->kind == CURVE_SIZE)
		return size_words(c->pts[i].x, buf, len);
	if (!c->pts[i].x)
		snprintf(buf, len, "%s", axis ? "0" : "no work");
	else
		snprintf(buf, len, "%s%s", fmt_dur(c->pts[i].x, true, d, sizeof(d)), axis ? "" : " of work");
	return buf;
}

static void sort_pts(struct curve *c)
{
	int i, j;

	for (i = 1; i < c->n; i++)	/* insertion sort by x */
		for (j = i; j > 0 && c->pts[j].x < c->pts[j - 1].x; j--) {
			struct sweep_pt t = c->pts[j];

			c->pts[j] = c->pts[j - 1];
			c->pts[j - 1] = t;
		}
}

/* The first pingpong pair: its placement (and think time) choose sweep.svg's runs. */
static const struct pair_result *first_pingpong(const struct comparison *cmp)
{
	int i;

	for (i = 0; i < cmp->n_pairs; i++)
		if (cmp->pairs[i].mode == WL_PINGPONG)
			return &cmp->pairs[i];
	return NULL;
}

/* sweep.svg: the sizes measured at the first pingpong pair's placement and think time. */
static int collect_sizes(const struct comparison *cmp, struct curve *c)
{
	const struct pair_result *first = first_pingpong(cmp);
	int i, j;

	memset(c, 0, sizeof(*c));
	c->kind = CURVE_SIZE;
	if (!first)
		return 0;
	c->place = first->place;
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];

		if (pr->place != c->place || (pr->mode != WL_PINGPONG && pr->mode != WL_STREAM) ||
		    (pr->mode == WL_PINGPONG && pair_think(pr) != pair_think(first)))
			continue;
		for (j = 0; j < c->n && c->pts[j].x != pr->msg_size; j++)
			;
		if (j == c->n) {
			if (c->n == MAX_PTS)
				continue;
			c->pts[c->n++].x = pr->msg_size;
		}
		if (pr->mode == WL_PINGPONG)
			c->pts[j].pp = pr;
		else
			c->pts[j].st = pr;
	}
	sort_pts(c);
	return c->n;
}

/* think.svg: the think times of pingpong at the first pingpong pair's placement and size. */
static int collect_thinks(const struct comparison *cmp, struct curve *c)
{
	const struct pair_result *pp[MAX_PTS];
	int i;

	memset(c, 0, sizeof(*c));
	c->kind = CURVE_THINK;
	c->n = think_curve(cmp, pp, MAX_PTS);
	for (i = 0; i < c->n; i++) {
		c->pts[i].x = pair_think(pp[i]);
		c->pts[i].pp = pp[i];
	}
	if (c->n) {
		c->place = pp[0]->place;
		c->size = pp[0]->msg_size;
	}
	return c->n;
}

struct axis {
	double lo, hi;		/* log10 of the value range, or linear range */
	bool log;
	double y0;		/* panel top */
};

static double ypos(const struct axis *a, double v)
{
	double t = a->log ? (log10(MAX(v, 1e-9)) - a->lo) / (a->hi - a->lo) : (v - a->lo) / (a->hi - a->lo);

	return a->y0 + PANEL_H * (1 - MIN(MAX(t, 0.0), 1.0));
}

/* Sizes: log2 across the inset plot. Think times: log10, with 0 set apart at the left. */
static double xpos(const struct curve *c, int i)
{
	double left = SML + 60, right = SML + SPW - 60, lo, hi, v;
	bool zero = c->kind == CURVE_THINK && !c->pts[0].x;
	int first = zero;

	if (zero && i == 0)
		return left;
	if (zero)
		left += ZGAP;
	if (c->kind == CURVE_SIZE) {
		lo = log2((double)c->pts[first].x);
		hi = log2((double)c->pts[c->n - 1].x);
		v = log2((double)c->pts[i].x);
	} else {
		lo = log10((double)c->pts[first].x);
		hi = log10((double)c->pts[c->n - 1].x);
		v = log10((double)c->pts[i].x);
	}
	/* inset, so the composition bars of the end sizes stay inside the frame */
	return left + (hi > lo ? (right - left) * (v - lo) / (hi - lo) : (right - left) / 2.0);
}

static void panel_frame(FILE *f, const struct axis *a, const char *title, const char *unit_note,
			const struct curve *c)
{
	char buf[64];
	int i;

	text(f, SML, a->y0 - 22, 22, NULL, "font-weight=\"bold\"", title);
	text(f, SML + SPW, a->y0 - 22, 16, "end", "fill=\"#555\"", unit_note);
	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"#999\"/>\n", SML, a->y0, SPW, PANEL_H);
	for (i = 0; i < c->n; i++) {
		double x = xpos(c, i);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
			x, a->y0, x, a->y0 + PANEL_H);
		text(f, x, a->y0 + PANEL_H + 22, 15, "middle", NULL, x_words(c, i, true, buf, sizeof(buf)));
	}
	if (c->kind == CURVE_THINK && c->n > 1 && !c->pts[0].x) {
		/* the break between 0 and the log axis: two slashes on the bottom edge */
		double x = xpos(c, 0) + ZGAP / 2, y = a->y0 + PANEL_H;

		for (i = -1; i <= 1; i += 2)
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
				"stroke-width=\"2\"/>\n", x + 5 * i - 4, y + 8, x + 5 * i + 4, y - 8);
	}
}

/* Log axis ticks at each power of ten, labelled by `label`. */
static void log_ticks(FILE *f, const struct axis *a, const char *(*label)(double, char *, size_t))
{
	char buf[32];
	int e;

	for (e = (int)ceil(a->lo); e <= (int)floor(a->hi); e++) {
		double y = ypos(a, pow(10, e));

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			SML, y, SML + SPW, y);
		text(f, SML - 8, y + 5, 15, "end", NULL, label(pow(10, e), buf, sizeof(buf)));
	}
}

static const char *dur_label(double v, char *buf, size_t len)
{
	return fmt_dur(v, true, buf, len);
}

static const char *rate_label(double v, char *buf, size_t len)
{
	char r[32];

	snprintf(buf, len, "%sB/s", fmt_rate(v, r, sizeof(r)));
	return buf;
}

/* A dot with its tooltip and, for tests, its x and the value drawn. */
static void dot(FILE *f, const struct curve *c, int i, double y, const char *fill, double v,
		const char *title)
{
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"%s\" data-x=\"%llu\" "
		"data-v=\"%.6g\"><title>", xpos(c, i), y, fill, (unsigned long long)c->pts[i].x, v);
	esc(f, title);
	fputs("</title></circle>\n", f);
}

/* One polyline per transport through the points that have a value; tooltips on the dots.
 * what: the value's name in a tooltip ("round trip "), or "". */
static void series(FILE *f, const struct axis *a, const struct curve *c,
		   double (*value)(const struct sweep_pt *, int), const char *(*fmt)(double, char *, size_t),
		   const char *what)
{
	char col[8], v[32], xw[48], title[128];
	int tr, i;

	for (tr = 0; tr < TR__COUNT; tr++) {
		css(hex(tr_rgb[tr]), col);
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"4\" points=\"", col);
		for (i = 0; i < c->n; i++)
			if (value(&c->pts[i], tr) > 0)
				fprintf(f, "%.1f,%.1f ", xpos(c, i), ypos(a, value(&c->pts[i], tr)));
		fputs("\"/>\n", f);
		for (i = 0; i < c->n; i++) {
			double val = value(&c->pts[i], tr);

			if (val <= 0)
				continue;
			snprintf(title, sizeof(title), "%s, %s: %s%s", tr_name[tr],
				 x_words(c, i, false, xw, sizeof(xw)), what, fmt(val, v, sizeof(v)));
			dot(f, c, i, ypos(a, val), col, val, title);
		}
	}
}

static double latency_of(const struct sweep_pt *p, int tr)
{
	return p->pp && p->pp->tr[tr].untraced.has_latency ? (double)p->pp->tr[tr].untraced.latency.p50 : 0;
}

/* think.svg: the round trip the client measures, work included (one-way p50 x 2). */
static double round_trip_of(const struct sweep_pt *p, int tr)
{
	return 2 * latency_of(p, tr);
}

static double throughput_of(const struct sweep_pt *p, int tr)
{
	return p->st ? p->st->tr[tr].untraced.bytes_per_sec : 0;
}

static void range_of(const struct curve *c, double (*value)(const struct sweep_pt *, int),
		     struct axis *a)
{
	double lo = INFINITY, hi = 0;
	int i, tr;

	for (i = 0; i < c->n; i++)
		for (tr = 0; tr < TR__COUNT; tr++) {
			double v = value(&c->pts[i], tr);

			if (v > 0) {
				lo = MIN(lo, v);
				hi = MAX(hi, v);
			}
		}
	a->log = true;
	a->lo = hi > 0 ? floor(log10(lo)) : 0;
	a->hi = hi > 0 ? ceil(log10(hi)) : 1;
	if (a->hi <= a->lo)
		a->hi = a->lo + 1;
}

static void legend(FILE *f, double y)
{
	char col[8];
	int tr;

	for (tr = 0; tr < TR__COUNT; tr++) {
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"26\" height=\"8\" fill=\"%s\"/>\n",
			SML + SPW + 24, y + 30 * tr - 4, css(hex(tr_rgb[tr]), col));
		text(f, SML + SPW + 58, y + 30 * tr + 5, 17, NULL, NULL,
		     tr == TR_UNIX ? "UDS (AF_UNIX)" : "TCP 127.0.0.1");
	}
}

/* Two values of both transports on a log scale: a panel of lines with the legend. */
static double value_panel(FILE *f, const struct curve *c, double y0, const char *title,
			  double (*value)(const struct sweep_pt *, int),
			  const char *(*fmt)(double, char *, size_t), const char *what)
{
	struct axis a;

	range_of(c, value, &a);
	a.y0 = y0;
	panel_frame(f, &a, title, "log scale", c);
	log_ticks(f, &a, fmt);
	series(f, &a, c, value, fmt, what);
	legend(f, y0 + 20);
	return y0 + PANEL_H + GAP;
}

static double ratio_panel(FILE *f, const struct curve *c, double y0)
{
	struct axis a = { .lo = 0, .hi = 1.5, .log = false, .y0 = y0 };
	char buf[96], xw[48];
	double y1;
	int i;

	for (i = 0; i < c->n; i++)
		if (latency_of(&c->pts[i], TR_UNIX) > 0 && latency_of(&c->pts[i], TR_TCP) > 0)
			a.hi = MAX(a.hi, ceil(4 * latency_of(&c->pts[i], TR_UNIX) / latency_of(&c->pts[i], TR_TCP)) / 4);
	panel_frame(f, &a, c->kind == CURVE_THINK ? "UDS / TCP round trip" : "UDS / TCP one-way latency",
		    "below 1: UDS faster; above 1: TCP faster", c);
	y1 = ypos(&a, 1.0);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" "
		"stroke-dasharray=\"8 6\"/>\n", SML, y1, SML + SPW, y1);
	text(f, SML - 8, y1 + 5, 15, "end", NULL, "1.0");
	text(f, SML - 8, ypos(&a, a.lo) + 5, 15, "end", NULL, "0");
	snprintf(buf, sizeof(buf), "%.2g", a.hi);
	text(f, SML - 8, ypos(&a, a.hi) + 5, 15, "end", NULL, buf);
	fputs("<polyline fill=\"none\" stroke=\"#444\" stroke-width=\"4\" points=\"", f);
	for (i = 0; i < c->n; i++)
		if (latency_of(&c->pts[i], TR_UNIX) > 0 && latency_of(&c->pts[i], TR_TCP) > 0)
			fprintf(f, "%.1f,%.1f ", xpos(c, i),
				ypos(&a, latency_of(&c->pts[i], TR_UNIX) / latency_of(&c->pts[i], TR_TCP)));
	fputs("\"/>\n", f);
	for (i = 0; i < c->n; i++) {
		double r;

		if (latency_of(&c->pts[i], TR_UNIX) <= 0 || latency_of(&c->pts[i], TR_TCP) <= 0)
			continue;
		r = latency_of(&c->pts[i], TR_UNIX) / latency_of(&c->pts[i], TR_TCP);
		snprintf(buf, sizeof(buf), "%s: UDS/TCP = %.2f (%s)", x_words(c, i, false, xw, sizeof(xw)),
			 r, r < 1 ? "UDS faster" : r > 1 ? "TCP faster" : "equal");
		dot(f, c, i, ypos(&a, r), r <= 1 ? "#117733" : "#cc6677", r, buf);
	}
	return y0 + PANEL_H + GAP;
}
/* Share of each phase (first name component) in a transport's traced message time. */
static void phase_shares(const struct trace_result *t, double *share)
{
	double total = 0;
	size_t p;
	int i;

	memset(share, 0, sizeof(double) * svg_n_phases);
	for (i = 0; i < t->n_stages; i++) {
		const struct stage_stat *s = &t->stages[i];
		size_t len = strcspn(s->name, ";");
		const char *phase = s->name;
		int slice;

		if (s->extra || !strcmp(s->name, "app;gap"))
			continue;
		/* a large message's slices show as what they are: the sender's or the receiver's
		 * work, or waiting */
		if ((slice = stage_bulk_slice(s->name)) >= 0) {
			phase = slice == STAGE_BULK_SEND_COPY ? "send" :
				slice == STAGE_BULK_RECV_COPY ? "recv" : "sched";
			len = strlen(phase);
		}
		for (p = 0; p < svg_n_phases; p++)
			if (strlen(svg_phases[p].phase) == len && !strncmp(svg_phases[p].phase, phase, len))
				break;
		if (p == svg_n_phases)
			continue;
		share[p] += s->ns_per_msg;
		total += s->ns_per_msg;
	}
	for (p = 0; p < svg_n_phases; p++)
		share[p] = total > 0 ? share[p] / total : 0;
}

static double composition_panel(FILE *f, const struct curve *c, double y0)
{
	struct axis a = { .lo = 0, .hi = 1, .log = false, .y0 = y0 };
	double share[16], bw = MIN(40.0, SPW / (2.5 * c->n));
	char col[8], sz[32], buf[160];
	int i, tr, k = 0;
	size_t p;

	panel_frame(f, &a, "Where a message's time goes (traced)", "bars: UDS | TCP; bulk slices "
		    "as send, recv, sched", c);
	for (i = 0; i < c->n; i++) {
		for (tr = 0; tr < TR__COUNT; tr++) {
			const struct trace_result *t = c->pts[i].pp ? &c->pts[i].pp->tr[tr].trace : NULL;
			double x = xpos(c, i) + (tr == TR_UNIX ? -bw - 2 : 2), y = y0 + PANEL_H;

			if (!t || !t->valid)
				continue;
			phase_shares(t, share);
			for (p = 0; p < svg_n_phases; p++) {
				double h = share[p] * PANEL_H;

				if (h <= 0)
					continue;
				y -= h;
				snprintf(buf, sizeof(buf), "%s, %s: %s %.0f%% (%s)", tr_name[tr],
					 size_words(c->pts[i].x, sz, sizeof(sz)), svg_phases[p].phase,
					 100 * share[p], svg_phases[p].what);
				fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
					"fill=\"%s\" stroke=\"#fff\"><title>", x, y, bw, h,
					css(hex(svg_phases[p].rgb), col));
				esc(f, buf);
				fputs("</title></rect>\n", f);
			}
		}
	}
	for (p = 0; p < svg_n_phases; p++) {
		if (!strcmp(svg_phases[p].phase, "bulk") || !strcmp(svg_phases[p].phase, "app"))
			continue;	/* shown as send/recv/sched; left out */
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"18\" height=\"18\" fill=\"%s\"/>\n",
			SML + SPW + 24, y0 + 26.0 * k, css(hex(svg_phases[p].rgb), col));
		text(f, SML + SPW + 50, y0 + 26.0 * k++ + 15, 16, NULL, NULL, svg_phases[p].phase);
	}
	return y0 + PANEL_H + GAP;
}

int sweep_sizes(const struct comparison *cmp)
{
	struct curve c;

	return collect_sizes(cmp, &c);
}

int think_points(const struct comparison *cmp)
{
	struct curve c;

	return collect_thinks(cmp, &c);
}

static void svg_begin(FILE *f, int height, const char *title, const char *sub)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"%s\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", SW,
		height, SW, height, FONTS);
	text(f, SML, 44, 30, NULL, "font-weight=\"bold\"", title);
	text(f, SML, 78, 18, NULL, "fill=\"#555\"", sub);
}

int sweep_svg_write(const struct comparison *cmp, FILE *f)
{
	struct curve c;
	bool has_stream = false, traced = false;
	char head[256];
	double y = 150;
	int i;

	if (collect_sizes(cmp, &c) < 2)
		return -EINVAL;
	for (i = 0; i < c.n; i++) {
		has_stream |= c.pts[i].st != NULL;
		traced |= c.pts[i].pp && c.pts[i].pp->tr[TR_UNIX].trace.valid;
	}
	snprintf(head, sizeof(head), "%s, %d CPUs, kernel %s; placement %s; untraced medians of one run "
		 "each", cmp->cpu_model, cmp->n_cpus, kernel_release(), place_names[c.place]);
	svg_begin(f, (int)(150 + (PANEL_H + GAP) * (2 + has_stream + traced)),
		  "UDS vs TCP loopback across message sizes", head);
	y = value_panel(f, &c, y, "One-way latency (pingpong, p50)", latency_of, dur_label, "");
	y = ratio_panel(f, &c, y);
	if (has_stream)
		y = value_panel(f, &c, y, "Throughput (stream)", throughput_of, rate_label, "");
	if (traced)
		composition_panel(f, &c, y);
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}

int think_svg_write(const struct comparison *cmp, FILE *f)
{
	struct curve c;
	char head[320];
	double y = 150;

	if (collect_thinks(cmp, &c) < 2)
		return -EINVAL;
	snprintf(head, sizeof(head), "%s, %d CPUs, kernel %s; pingpong, %llu-byte messages, placement "
		 "%s; untraced medians of one run each", cmp->cpu_model, cmp->n_cpus, kernel_release(),
		 (unsigned long long)c.size, place_names[c.place]);
	svg_begin(f, 150 + (PANEL_H + GAP) * 2, "The UDS advantage as the application's own time grows",
		  head);
	y = value_panel(f, &c, y, "Round trip, the client's work included (p50 \u00d7 2)",
			round_trip_of, dur_label, "round trip ");
	y = ratio_panel(f, &c, y);
	text(f, SML, y - GAP + 56, 17, NULL, "fill=\"#555\"", "x: the client's work per round trip "
	     "(--think), log scale; 0 (no work) set apart at the left, past the break");
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
