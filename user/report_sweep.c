// SPDX-License-Identifier: GPL-2.0
/*
 * The size curve: one SVG across message sizes, for a talk. Panels, top to bottom, all on
 * one log2 size axis so they line up:
 *   1. one-way latency (pingpong, untraced p50) of both transports, log scale;
 *   2. the UDS/TCP latency ratio (below 1: UDS faster), where the curves cross;
 *   3. throughput (stream, untraced bytes/s) of both transports, log scale, if measured;
 *   4. per size, the stage composition of each transport's traced message time (share of
 *      each phase: send, softirq, deliver, sched, recv, bulk), so the reader sees which
 *      stages make the curves cross (copies and buffer waits at large sizes).
 * Points carry <title> tooltips with the exact figures.
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

static const unsigned tr_rgb[TR__COUNT] = { 0x117733, 0xcc6677 };	/* Tol: green, rose */
static const char *const tr_name[TR__COUNT] = { "UDS", "TCP" };

struct sweep_pt {
	uint64_t size;
	const struct pair_result *pp;	/* pingpong pair, or NULL */
	const struct pair_result *st;	/* stream pair, or NULL */
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

/* The sizes measured at one placement (the first pingpong pair's), ascending. */
static int collect(const struct comparison *cmp, struct sweep_pt *pts, int max, enum cpu_place *place)
{
	int i, j, n = 0;

	*place = CPU__COUNT;
	for (i = 0; i < cmp->n_pairs; i++)
		if (cmp->pairs[i].mode == WL_PINGPONG) {
			*place = cmp->pairs[i].place;
			break;
		}
	if (*place == CPU__COUNT)
		return 0;
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];

		if (pr->place != *place || (pr->mode != WL_PINGPONG && pr->mode != WL_STREAM))
			continue;
		for (j = 0; j < n && pts[j].size != pr->msg_size; j++)
			;
		if (j == n) {
			if (n == max)
				continue;
			memset(&pts[n], 0, sizeof(pts[n]));
			pts[n++].size = pr->msg_size;
		}
		if (pr->mode == WL_PINGPONG)
			pts[j].pp = pr;
		else
			pts[j].st = pr;
	}
	for (i = 1; i < n; i++)	/* insertion sort by size */
		for (j = i; j > 0 && pts[j].size < pts[j - 1].size; j--) {
			struct sweep_pt t = pts[j];

			pts[j] = pts[j - 1];
			pts[j - 1] = t;
		}
	return n;
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

static double xpos(const struct sweep_pt *pts, int n, int i)
{
	double lo = log2((double)pts[0].size), hi = log2((double)pts[n - 1].size);

	/* inset, so the composition bars of the end sizes stay inside the frame */
	return SML + 60 + (hi > lo ? (SPW - 120) * (log2((double)pts[i].size) - lo) / (hi - lo) :
			   (SPW - 120) / 2.0);
}

static void panel_frame(FILE *f, const struct axis *a, const char *title, const char *unit_note,
			const struct sweep_pt *pts, int n)
{
	char buf[64];
	int i;

	text(f, SML, a->y0 - 22, 22, NULL, "font-weight=\"bold\"", title);
	text(f, SML + SPW, a->y0 - 22, 16, "end", "fill=\"#555\"", unit_note);
	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"#999\"/>\n", SML, a->y0, SPW, PANEL_H);
	for (i = 0; i < n; i++) {
		double x = xpos(pts, n, i);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
			x, a->y0, x, a->y0 + PANEL_H);
		text(f, x, a->y0 + PANEL_H + 22, 15, "middle", NULL, size_words(pts[i].size, buf, sizeof(buf)));
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

/* One polyline per transport through the points that have a value; tooltips on the dots. */
static void series(FILE *f, const struct axis *a, const struct sweep_pt *pts, int n,
		   double (*value)(const struct sweep_pt *, int), const char *(*fmt)(double, char *, size_t))
{
	char col[8], v[32], sz[32];
	int tr, i;

	for (tr = 0; tr < TR__COUNT; tr++) {
		css(hex(tr_rgb[tr]), col);
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"4\" points=\"", col);
		for (i = 0; i < n; i++)
			if (value(&pts[i], tr) > 0)
				fprintf(f, "%.1f,%.1f ", xpos(pts, n, i), ypos(a, value(&pts[i], tr)));
		fputs("\"/>\n", f);
		for (i = 0; i < n; i++) {
			if (value(&pts[i], tr) <= 0)
				continue;
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"%s\"><title>",
				xpos(pts, n, i), ypos(a, value(&pts[i], tr)), col);
			fprintf(f, "%s, %s: ", tr_name[tr], size_words(pts[i].size, sz, sizeof(sz)));
			esc(f, fmt(value(&pts[i], tr), v, sizeof(v)));
			fputs("</title></circle>\n", f);
		}
	}
}

static double latency_of(const struct sweep_pt *p, int tr)
{
	return p->pp && p->pp->tr[tr].untraced.has_latency ? (double)p->pp->tr[tr].untraced.latency.p50 : 0;
}

static double throughput_of(const struct sweep_pt *p, int tr)
{
	return p->st ? p->st->tr[tr].untraced.bytes_per_sec : 0;
}

static void range_of(const struct sweep_pt *pts, int n, double (*value)(const struct sweep_pt *, int),
		     struct axis *a)
{
	double lo = INFINITY, hi = 0;
	int i, tr;

	for (i = 0; i < n; i++)
		for (tr = 0; tr < TR__COUNT; tr++) {
			double v = value(&pts[i], tr);

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

static double ratio_panel(FILE *f, const struct sweep_pt *pts, int n, double y0)
{
	struct axis a = { .lo = 0, .hi = 1.5, .log = false, .y0 = y0 };
	char buf[96], sz[32];
	double y1;
	int i;

	for (i = 0; i < n; i++)
		if (latency_of(&pts[i], TR_UNIX) > 0 && latency_of(&pts[i], TR_TCP) > 0)
			a.hi = MAX(a.hi, ceil(4 * latency_of(&pts[i], TR_UNIX) / latency_of(&pts[i], TR_TCP)) / 4);
	panel_frame(f, &a, "UDS / TCP one-way latency", "below 1: UDS faster; above 1: TCP faster",
		    pts, n);
	y1 = ypos(&a, 1.0);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" "
		"stroke-dasharray=\"8 6\"/>\n", SML, y1, SML + SPW, y1);
	text(f, SML - 8, y1 + 5, 15, "end", NULL, "1.0");
	text(f, SML - 8, ypos(&a, a.lo) + 5, 15, "end", NULL, "0");
	snprintf(buf, sizeof(buf), "%.2g", a.hi);
	text(f, SML - 8, ypos(&a, a.hi) + 5, 15, "end", NULL, buf);
	fputs("<polyline fill=\"none\" stroke=\"#444\" stroke-width=\"4\" points=\"", f);
	for (i = 0; i < n; i++)
		if (latency_of(&pts[i], TR_UNIX) > 0 && latency_of(&pts[i], TR_TCP) > 0)
			fprintf(f, "%.1f,%.1f ", xpos(pts, n, i),
				ypos(&a, latency_of(&pts[i], TR_UNIX) / latency_of(&pts[i], TR_TCP)));
	fputs("\"/>\n", f);
	for (i = 0; i < n; i++) {
		double r;

		if (latency_of(&pts[i], TR_UNIX) <= 0 || latency_of(&pts[i], TR_TCP) <= 0)
			continue;
		r = latency_of(&pts[i], TR_UNIX) / latency_of(&pts[i], TR_TCP);
		snprintf(buf, sizeof(buf), "%s: UDS/TCP = %.2f (%s)", size_words(pts[i].size, sz, sizeof(sz)),
			 r, r < 1 ? "UDS faster" : r > 1 ? "TCP faster" : "equal");
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"%s\"><title>", xpos(pts, n, i),
			ypos(&a, r), r <= 1 ? "#117733" : "#cc6677");
		esc(f, buf);
		fputs("</title></circle>\n", f);
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

		if (s->extra || !strcmp(s->name, "app;gap"))
			continue;
		/* a large message's slices show as what they are: the sender's or the receiver's
		 * work, or waiting */
		if (!strncmp(s->name, "bulk;", 5)) {
			phase = !strncmp(s->name + 5, "send", 4) ? "send" :
				!strncmp(s->name + 5, "recv", 4) ? "recv" : "sched";
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

static double composition_panel(FILE *f, const struct sweep_pt *pts, int n, double y0)
{
	struct axis a = { .lo = 0, .hi = 1, .log = false, .y0 = y0 };
	double share[16], bw = MIN(40.0, SPW / (2.5 * n));
	char col[8], sz[32], buf[160];
	int i, tr, k = 0;
	size_t p;

	panel_frame(f, &a, "Where a message's time goes (traced)", "bars: UDS | TCP; bulk slices "
		    "as send, recv, sched", pts, n);
	for (i = 0; i < n; i++) {
		for (tr = 0; tr < TR__COUNT; tr++) {
			const struct trace_result *t = pts[i].pp ? &pts[i].pp->tr[tr].trace : NULL;
			double x = xpos(pts, n, i) + (tr == TR_UNIX ? -bw - 2 : 2), y = y0 + PANEL_H;

			if (!t || !t->valid)
				continue;
			phase_shares(t, share);
			for (p = 0; p < svg_n_phases; p++) {
				double h = share[p] * PANEL_H;

				if (h <= 0)
					continue;
				y -= h;
				snprintf(buf, sizeof(buf), "%s, %s: %s %.0f%% (%s)", tr_name[tr],
					 size_words(pts[i].size, sz, sizeof(sz)), svg_phases[p].phase,
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
	struct sweep_pt pts[MAX_SIZES];
	enum cpu_place place;

	return collect(cmp, pts, MAX_SIZES, &place);
}

int sweep_svg_write(const struct comparison *cmp, FILE *f)
{
	struct sweep_pt pts[MAX_SIZES];
	enum cpu_place place;
	struct axis lat, thr;
	bool has_stream = false, traced = false;
	char head[256];
	double y = 150;
	int n = collect(cmp, pts, MAX_SIZES, &place), i;

	if (n < 2)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		has_stream |= pts[i].st != NULL;
		traced |= pts[i].pp && pts[i].pp->tr[TR_UNIX].trace.valid;
	}
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"%s\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", SW,
		(int)(150 + (PANEL_H + GAP) * (2 + has_stream + traced)), SW,
		(int)(150 + (PANEL_H + GAP) * (2 + has_stream + traced)), FONTS);
	text(f, SML, 44, 30, NULL, "font-weight=\"bold\"", "UDS vs TCP loopback across message sizes");
	snprintf(head, sizeof(head), "%s, %d CPUs, kernel %s; placement %s; untraced medians of one run "
		 "each", cmp->cpu_model, cmp->n_cpus, kernel_release(), place_names[place]);
	text(f, SML, 78, 18, NULL, "fill=\"#555\"", head);

	range_of(pts, n, latency_of, &lat);
	lat.y0 = y;
	panel_frame(f, &lat, "One-way latency (pingpong, p50)", "log scale", pts, n);
	log_ticks(f, &lat, dur_label);
	series(f, &lat, pts, n, latency_of, dur_label);
	legend(f, y + 20);
	y += PANEL_H + GAP;
	y = ratio_panel(f, pts, n, y);
	if (has_stream) {
		range_of(pts, n, throughput_of, &thr);
		thr.y0 = y;
		panel_frame(f, &thr, "Throughput (stream)", "log scale", pts, n);
		log_ticks(f, &thr, rate_label);
		series(f, &thr, pts, n, throughput_of, rate_label);
		legend(f, y + 20);
		y += PANEL_H + GAP;
	}
	if (traced)
		composition_panel(f, pts, n, y);
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
