// SPDX-License-Identifier: GPL-2.0
/*
 * --svg: a self-contained SVG drawn by udsprobe, made to be projected.
 *
 * Per (mode, size, placement) two views:
 *  - "flame": one icicle graph per transport (root on top, stages below, exclusive widths
 *    summed into their parents) on ONE shared ns axis, so TCP's bar is as much longer than
 *    UDS's as TCP is slower. Colour = phase of the message path (send, softirq, deliver,
 *    sched, recv), the same in both graphs. Hover shows ns and share; click zooms (small
 *    inline script; viewers without scripts get the static picture).
 *  - "diff": one row per stage, a bar of TCP - UDS ns/msg from a zero line, coloured on a
 *    blue-orange diverging scale (colour-blind safe): orange = TCP costs more.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "report_common.h"
#include "reports.h"
#include "svg_draw.h"
#include "util.h"

#define W	1600		/* canvas width, px */
#define ML	200		/* left column: transport labels */
#define MR	60
#define PW	(W - ML - MR)	/* plot width */
#define ROW	40		/* flame row height */
#define FS	21		/* frame label font size */

static const char *const tr_label[TR__COUNT] = { "UDS", "TCP" };
static const char *const tr_sub[TR__COUNT] = { "AF_UNIX stream", "127.0.0.1 loopback" };

/* Diverging scale for TCP - UDS: blue (TCP cheaper) .. light grey .. orange (TCP costlier). */
static struct rgb diff_color(double d, double maxabs)
{
	static const unsigned neg = 0x2f6fb0, mid = 0xeeeeee, pos = 0xe0701a;
	double t = maxabs > 0 ? d / maxabs : 0;

	if (t > 1)
		t = 1;
	if (t < -1)
		t = -1;
	/* sqrt: small differences still get a visible tint */
	return t >= 0 ? mix(hex(mid), hex(pos), sqrt(t)) : mix(hex(mid), hex(neg), sqrt(-t));
}


/* ---- the flame view ---- */

struct layout {
	double x[STREE_MAX][TR__COUNT];	/* left edge in ns from the transport's origin */
};

static void lay_out(const struct stree *t, int tr, struct layout *L)
{
	double next[STREE_MAX + 1] = { 0 };	/* next free offset under each parent (+1: root) */
	int i;

	for (i = 0; i < t->n; i++) {
		const struct snode *nd = &t->node[i];
		int p = nd->parent;
		double base = p < 0 ? 0 : L->x[p][tr];

		L->x[i][tr] = base + next[p + 1];
		next[p + 1] += nd->total[tr];
	}
}

static void frame_title(FILE *f, const struct stree *t, const struct snode *nd, int tr)
{
	char a[32], b[32], c[32];
	int o = !tr;
	const char *what = stage_describe(nd->path);
	const struct stage_stat *st = nd->st[tr];

	fprintf(f, "<title>%s: ", tr_label[tr]);
	esc(f, nd->path);
	fprintf(f, "\n%s per message (%.1f%% of %s's %s)", fmt_dur(nd->total[tr], true, a, sizeof(a)),
		t->sum[tr] > 0 ? 100 * nd->total[tr] / t->sum[tr] : 0, tr_label[tr],
		fmt_dur(t->sum[tr], true, b, sizeof(b)));
	if (nd->self[tr] > 0 && nd->self[tr] < nd->total[tr] - 0.5)
		fprintf(f, ", self %s", fmt_dur(nd->self[tr], true, a, sizeof(a)));
	if (t->has[o]) {
		double d = nd->total[tr] - nd->total[o];

		fprintf(f, "\n%s: %s (%s %s)", tr_label[o], fmt_dur(nd->total[o], true, a, sizeof(a)),
			d >= 0 ? "+" : "\u2212", fmt_dur(fabs(d), true, c, sizeof(c)));
	}
	if (t->corrected)
		fprintf(f, "\nas traced (probes included): %s",
			fmt_dur(nd->raw_total[tr], true, a, sizeof(a)));
	if (st && st->count)
		fprintf(f, "\np50 %s, p99 %s as traced (log2 histogram)", fmt_dur(st->p50_ns, true, a, sizeof(a)),
			fmt_dur(st->p99_ns, true, b, sizeof(b)));
	if (what) {
		fputc('\n', f);
		esc(f, what);
	}
	fputs("</title>", f);
}

static void frame(FILE *f, double x, double y, double w, const char *fill, const char *ink,
		  const char *label)
{
	char fitted[STAGE_NAME_LEN + 32];

	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"3\" fill=\"%s\"/>",
		x, y, w, ROW - 3, fill);
	fit(label, w, FS, fitted, sizeof(fitted));
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"%s\">", x + 6,
		y + ROW / 2.0 + FS * 0.32, FS, ink);
	esc(f, fitted);
	fputs("</text>", f);
}

/* Rows of one transport: the total bar, then depth 1..max_depth. Returns the height used. */
static double flame_block(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			  const struct stree *t, int tr, double y, double scale, double x_other_end)
{
	const struct trace_result *r = &pr->tr[tr].trace;
	char cov[96] = "";
	char a[32], b[32], lab[STAGE_NAME_LEN + 48], fill[8];
	struct layout L;
	double h = ROW * (1 + (t->max_depth ? t->max_depth : 1));
	int i;

	text(f, 24, y + 30, 30, NULL, "font-weight=\"bold\"", tr_label[tr]);
	text(f, 24, y + 56, 16, NULL, "fill=\"#555\"", tr_sub[tr]);
	if (!t->has[tr]) {
		snprintf(lab, sizeof(lab), "no stage data for %s: %s", tr_label[tr],
			 no_stages_reason(cmp));
		text(f, ML + 8, y + ROW / 2.0 + 7, 20, NULL, "fill=\"#a00\"", lab);
		return ROW * 2;
	}
	lay_out(t, tr, &L);
	fprintf(f, "<g class=\"fg\" data-pw=\"%d\" data-ml=\"%d\">\n", PW, ML);
	/* total bar: click resets the zoom */
	fprintf(f, "<g class=\"f r\" data-x=\"0\" data-w=\"%.2f\">", t->sum[tr] * scale);
	fprintf(f, "<title>%s: all stages, %s per message%s (mean; %s as traced)</title>",
		tr_label[tr], fmt_dur(t->sum[tr], true, a, sizeof(a)),
		t->corrected ? " with the probe cost removed" : "",
		fmt_dur(t->raw_sum[tr], true, b, sizeof(b)));
	if (t->corrected)
		snprintf(cov, sizeof(cov), " \u00b7 %s as traced", fmt_dur(t->raw_sum[tr], true, b,
									  sizeof(b)));
	else if (r->coverage > 0 && r->coverage < 0.995 && r->latency_ns > 0)
		snprintf(cov, sizeof(cov), " \u00b7 %.0f%% of the %s traced", 100 * r->coverage,
			 fmt_dur(r->latency_ns, true, b, sizeof(b)));
	if (t->has[!tr] && tr == TR_TCP && t->sum[!tr] > 0)
		snprintf(lab, sizeof(lab), "%s per message: %.2f\u00d7 UDS (%s%s)%s",
			 fmt_dur(t->sum[tr], true, a, sizeof(a)), t->sum[tr] / t->sum[!tr],
			 t->sum[tr] >= t->sum[!tr] ? "+" : "\u2212",
			 fmt_dur(fabs(t->sum[tr] - t->sum[!tr]), true, b, sizeof(b)), cov);
	else
		snprintf(lab, sizeof(lab), "%s per message%s", fmt_dur(t->sum[tr], true, a, sizeof(a)),
			 cov);
	if (cov[0] && utf8_len(lab) * FS * CHAR_W > t->sum[tr] * scale - 10)
		*strstr(lab, cov) = 0;	/* the coverage is in the footer too */
	frame(f, ML, y, t->sum[tr] * scale, "#3b3b3b", "#fff", lab);
	fputs("</g>\n", f);
	for (i = 0; i < t->n; i++) {
		const struct snode *nd = &t->node[i];
		double x = ML + L.x[i][tr] * scale, w = nd->total[tr] * scale;

		if (w < 0.5)
			continue;
		snprintf(lab, sizeof(lab), "%s %s", nd->name,
			 fmt_dur(nd->total[tr], true, a, sizeof(a)));
		fprintf(f, "<g class=\"f\" data-x=\"%.2f\" data-w=\"%.2f\" data-l=\"", x - ML, w);
		esc(f, lab);
		fputs("\" data-s=\"", f);
		esc(f, nd->name);
		fputs("\">", f);
		if (utf8_len(lab) * FS * CHAR_W > w - 10)
			snprintf(lab, sizeof(lab), "%s", nd->name);
		frame_title(f, t, nd, tr);
		frame(f, x, y + ROW * nd->depth, w, css(phase_color(nd->path, nd->depth), fill), "#000",
		      lab);
		fputs("</g>\n", f);
	}
	fputs("</g>\n", f);
	/* where the other (shorter) transport ends, for the eye */
	if (x_other_end > 0) {
		fprintf(f, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#000\" stroke-width=\"2.5\" stroke-dasharray=\"8 6\" opacity=\"0.7\"/>\n",
			x_other_end, y - 14, x_other_end, y + h - 2);
	}
	return h;
}

static double flame_view(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			 const struct stree *t, double y)
{
	double max = MAX(t->sum[TR_UNIX], t->sum[TR_TCP]), scale = max > 0 ? PW / max : 0;
	double step = nice_step(max), v, y0, h;
	char a[32];
	size_t i;
	int tr;

	text(f, ML, y + 4, 18, NULL, "fill=\"#333\"", t->corrected ?
	     "Mean time per message in each stage (exclusive, probe cost removed), both "
	     "transports on one scale:" :
	     "Mean time per message in each stage (exclusive), both transports on one scale:");
	y += 36;
	/* axis */
	y0 = y;
	for (v = 0; v <= max * 1.0001 && max > 0; v += step) {
		double x = ML + v * scale;

		text(f, x, y0, 17, v == 0 ? "start" : "middle", "fill=\"#444\"",
		     fmt_dur(v, true, a, sizeof(a)));
	}
	y += 12;
	h = 0;
	for (tr = 0; tr < TR__COUNT; tr++)
		h += (t->has[tr] ? ROW * (1 + (t->max_depth ? t->max_depth : 1)) : ROW * 2) + 26;
	for (v = 0; v <= max * 1.0001 && max > 0; v += step) {
		double x = ML + v * scale;

		fprintf(f, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#c8c8c8\" stroke-width=\"1.5\"/>\n", x, y, x, y + h - 16);
	}
	for (tr = 0; tr < TR__COUNT; tr++) {
		double other = 0;

		if (tr == TR_TCP && t->has[TR_UNIX] && t->has[TR_TCP] &&
		    t->sum[TR_UNIX] < t->sum[TR_TCP])
			other = ML + t->sum[TR_UNIX] * scale;
		y += flame_block(f, cmp, pr, t, tr, y, scale, other) + 26;
	}
	/* legend: the phases present, wrapped to the width */
	{
		double x = 24;

		for (i = 0; i < svg_n_phases; i++) {
			char fill[8], lab[64];
			double w;

			if (stree_find(t, svg_phases[i].phase) < 0)
				continue;
			snprintf(lab, sizeof(lab), "%s: %s", svg_phases[i].phase, svg_phases[i].what);
			w = 48 + utf8_len(lab) * 18 * 0.53;
			if (x > 24 && x + w > W - MR) {
				x = 24;
				y += 34;
			}
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"24\" rx=\"3\" "
				"fill=\"%s\" stroke=\"#555\"/>\n", x, y - 6, css(hex(svg_phases[i].rgb), fill));
			text(f, x + 32, y + 13, 18, NULL, NULL, lab);
			x += w;
		}
		y += 34;
		if (t->has[TR_UNIX] && t->has[TR_TCP] && t->sum[TR_UNIX] < t->sum[TR_TCP]) {
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" "
				"stroke-width=\"2.5\" stroke-dasharray=\"8 6\"/>\n", 24, y + 6, 64, y + 6);
			text(f, 76, y + 12, 18, NULL, NULL, "where UDS's total ends");
		}
		text(f, W - MR, y + 12, 18, "end", "fill=\"#555\"",
		     "lower rows split a stage further \u00b7 hover for numbers \u00b7 click to zoom");
		y += 30;
	}
	return y;
}

/* ---- the diff view ---- */

static int grad_id;	/* one gradient per diff view: ids must be unique in the document */

#define DX_NAME	40
#define DX_UDS	560	/* right edge of the UDS column */
#define DX_TCP	690
#define DX_BARS	730	/* bars area: DX_BARS .. W - MR */
#define DROW	40

static void diff_title(FILE *f, const struct stree *t, const struct srow *row)
{
	char a[32], b[32];
	const char *what = row->n_members == 1 ? stage_describe(row->name) : NULL;
	int i, m, tr;

	fputs("<title>", f);
	esc(f, row->name);
	fprintf(f, "\nUDS %s, TCP %s per message", fmt_dur(row->v[TR_UNIX], true, a, sizeof(a)),
		fmt_dur(row->v[TR_TCP], true, b, sizeof(b)));
	if (what) {
		fputc('\n', f);
		esc(f, what);
	}
	if (row->n_members > 1)
		fputs("\none row: the transports' probes split this stretch differently", f);
	/* the stages in it and the function-level stages below, so every stage is named */
	for (m = 0; m < row->n_members; m++) {
		int g = row->member[m];

		for (i = g; i < t->n; i++) {
			int k = i;

			while (k >= 0 && k != g)
				k = t->node[k].parent;
			if (k != g || (i == g && row->n_members == 1))
				continue;
			fputs("\n  ", f);
			esc(f, t->node[i].path);
			for (tr = 0; tr < TR__COUNT; tr++)
				fprintf(f, "%s %s %s", tr ? "," : ":", tr_label[tr],
					t->node[i].total[tr] > 0 || t->node[i].st[tr] ?
					fmt_dur(t->node[i].total[tr], true, a, sizeof(a)) : "\u2014");
		}
	}
	fputs("</title>", f);
}

static double diff_row(FILE *f, const struct stree *t, const char *name, double u, double c,
		       bool has_u, bool has_c, const struct srow *row, double y, double x0,
		       double scale, double maxabs, bool stripe, bool bold)
{
	char a[32], lab[STAGE_NAME_LEN * 2 + 8], fill[8];
	const char *wt = bold ? "font-weight=\"bold\"" : NULL;
	double d = c - u, w = fabs(d) * scale, x = d >= 0 ? x0 : x0 - w;

	fputs("<g>", f);
	if (row)
		diff_title(f, t, row);
	if (stripe)
		fprintf(f, "<rect x=\"20\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#f2f2f2\"/>",
			y, W - 40, DROW);
	fit(name, DX_UDS - 110 - DX_NAME, 20, lab, sizeof(lab));
	text(f, DX_NAME, y + 27, 20, NULL, wt, lab);
	text(f, DX_UDS, y + 27, 20, "end", wt, has_u ? fmt_dur(u, true, a, sizeof(a)) : "\u2014");
	text(f, DX_TCP, y + 27, 20, "end", wt, has_c ? fmt_dur(c, true, a, sizeof(a)) : "\u2014");
	if (w >= 0.5)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
			"stroke=\"#666\" stroke-width=\"0.8\"/>", x, y + 6, w, DROW - 12,
			css(diff_color(d, maxabs), fill));
	snprintf(lab, sizeof(lab), "%s%s", d > 0.5 ? "+" : d < -0.5 ? "\u2212" : "\u00b1",
		 fmt_dur(fabs(d), true, a, sizeof(a)));
	if (d >= 0)
		text(f, x0 + w + 8, y + 27, 20, NULL, wt, lab);
	else
		text(f, x0 - w - 8, y + 27, 20, "end", wt, lab);
	fputs("</g>\n", f);
	return DROW;
}

static double diff_view(FILE *f, const struct stree *t, double y, double flame_scale)
{
	struct srow *rows = calloc(MAX_STAGES * 2, sizeof(*rows));
	int n = rows ? stree_rows(t, rows, MAX_STAGES * 2) : 0, i;
	double maxpos = 0, maxneg = 0, maxabs, scale, x0, avail = W - MR - DX_BARS - 2 * 110;
	double dsum = t->sum[TR_TCP] - t->sum[TR_UNIX];
	char fill[8], a[32];

	text(f, DX_NAME - 16, y + 8, 26, NULL, "font-weight=\"bold\"", t->corrected ?
	     "TCP \u2212 UDS, stage by stage (probe cost removed)" :
	     "TCP \u2212 UDS, stage by stage");
	y += 24;
	if (!t->has[TR_UNIX] || !t->has[TR_TCP]) {
		text(f, DX_NAME, y + 26, 20, NULL, "fill=\"#a00\"",
		     "the difference needs stage data for both transports");
		free(rows);
		return y + 50;
	}
	for (i = 0; i < n; i++) {
		double d = rows[i].v[TR_TCP] - rows[i].v[TR_UNIX];

		maxpos = MAX(maxpos, d);
		maxneg = MAX(maxneg, -d);
	}
	maxabs = MAX(maxpos, maxneg);
	/* the total row's bar may be the longest */
	maxpos = MAX(maxpos, dsum);
	maxneg = MAX(maxneg, -dsum);
	scale = maxpos + maxneg > 0 ? MIN(flame_scale, avail / (maxpos + maxneg)) : 0;
	x0 = DX_BARS + 110 + maxneg * scale;

	y += 16;
	text(f, DX_NAME, y + 22, 18, NULL, "fill=\"#444\"", "stage (ns per message)");
	text(f, DX_UDS, y + 22, 18, "end", "fill=\"#444\" font-weight=\"bold\"", "UDS");
	text(f, DX_TCP, y + 22, 18, "end", "fill=\"#444\" font-weight=\"bold\"", "TCP");
	text(f, x0 - 8, y + 22, 18, "end", "fill=\"#2f6fb0\" font-weight=\"bold\"",
	     "\u25c0 TCP cheaper");
	text(f, x0 + 8, y + 22, 18, NULL, "fill=\"#b0530c\" font-weight=\"bold\"",
	     "TCP costlier \u25b6");
	y += 32;
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
		"stroke-width=\"2\"/>\n", x0, y, x0, y + DROW * (n + 1) + 4);
	for (i = 0; i < n; i++)
		y += diff_row(f, t, rows[i].name, rows[i].v[TR_UNIX], rows[i].v[TR_TCP],
			      rows[i].has[TR_UNIX], rows[i].has[TR_TCP], &rows[i], y, x0, scale,
			      maxabs, i % 2 == 0, false);
	free(rows);
	fprintf(f, "<line x1=\"20\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n", y + 2,
		W - 20, y + 2);
	y += 4;
	y += diff_row(f, t, "all stages", t->sum[TR_UNIX], t->sum[TR_TCP], true, true, NULL, y, x0,
		      scale, MAX(maxabs, fabs(dsum)), false, true);
	/* colour legend */
	y += 20;
	fprintf(f, "<defs><linearGradient id=\"dg%d\">", ++grad_id);
	for (i = 0; i <= 10; i++)
		fprintf(f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", i * 10,
			css(diff_color((i - 5) / 5.0 * maxabs, maxabs), fill));
	fputs("</linearGradient></defs>\n", f);
	text(f, DX_NAME, y + 22, 18, NULL, NULL, "colour = TCP \u2212 UDS:");
	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"360\" height=\"26\" fill=\"url(#dg%d)\" "
		"stroke=\"#666\"/>\n", DX_NAME + 230, y + 2, grad_id);
	{
		char lab[48];

		snprintf(lab, sizeof(lab), "\u2212%s", fmt_dur(maxabs, true, a, sizeof(a)));
		text(f, DX_NAME + 230, y + 50, 17, "start", "fill=\"#444\"", lab);
		text(f, DX_NAME + 410, y + 50, 17, "middle", "fill=\"#444\"", "0");
		snprintf(lab, sizeof(lab), "+%s", fmt_dur(maxabs, true, a, sizeof(a)));
		text(f, DX_NAME + 590, y + 50, 17, "end", "fill=\"#444\"", lab);
		text(f, DX_NAME + 620, y + 22, 18, NULL, NULL,
		     "blue: TCP spends less there, orange: more; \u2014 = stage absent");
	}
	return y + 64;
}

/* ---- document ---- */

static const char zoom_js[] =
"<script><![CDATA[\n"
"// click a frame: zoom its transport's graph to it; click the total bar: reset\n"
"document.addEventListener('click',function(e){\n"
" var f=e.target.closest&&e.target.closest('.f'),g=f&&f.closest('.fg');if(!g)return;\n"
" var P=+g.dataset.pw,M=+g.dataset.ml,r=f.classList.contains('r');\n"
" var fx=r?0:+f.dataset.x,k=r?1:P/+f.dataset.w;\n"
" g.querySelectorAll('.f').forEach(function(n){\n"
"  var x=(+n.dataset.x-fx)*k,l=Math.max(0,x),w=Math.min(P,x+(+n.dataset.w)*k)-l;\n"
"  var R=n.querySelector('rect'),T=n.querySelector('text'),s=n.dataset.l;\n"
"  if(w<0.5&&!n.classList.contains('r')){n.style.display='none';return;}\n"
"  n.style.display='';R.setAttribute('x',M+l);R.setAttribute('width',w);T.setAttribute('x',M+l+6);\n"
"  var m=Math.floor((w-10)/12.6);if(s&&s.length>m)s=n.dataset.s;\n"
"  if(s)T.textContent=s.length<=m?s:(m<4?'':s.slice(0,m-2)+'..');\n"
" });\n"
" document.querySelectorAll('.ax').forEach(function(a){a.style.opacity=r?1:0.15;});\n"
"});\n"
"]]></script>\n";

/* Under a run: messages, coverage and probe overhead per transport. Returns the new y. */
static double trust_lines(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			  const struct stree *t, double y)
{
	char head[400], a[32], b[32], ow[96];
	int tr, n;

	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;

		if (!t->has[tr])
			continue;
		if (r->coverage > 0)
			snprintf(b, sizeof(b), "%.0f%%", 100 * r->coverage);
		n = snprintf(head, sizeof(head), "%s: %llu messages traced%s%s%s; the probes %s "
			     "%s%s", tr_label[tr], (unsigned long long)r->messages,
			     r->coverage > 0 ? ", stages cover " : "", r->coverage > 0 ? b : "",
			     r->coverage > 0 ? " of the traced latency" : "",
			     r->overhead_ns < 0 ? "cost per message is" : "added",
			     overhead_words(r, true, ow, sizeof(ow)), r->overhead_ns < 0 ? "" : " per message");
		if (t->corrected) {
			text(f, 24, y + 18, 17, NULL, "fill=\"#555\"", head);
			y += 24;
			/* each kind of hit at its own calibrated cost, plus bookkeeping: no single
			 * "hits x cost" product is what was removed */
			n = snprintf(head, sizeof(head), "removing the calibrated cost of %.1f probe "
				     "hits per message leaves %s", r->probe_hits_per_msg,
				     fmt_dur(t->sum[tr], true, a, sizeof(a)));
		}
		if (t->corrected && pr->mode == WL_PINGPONG && pr->tr[tr].untraced.has_latency &&
		    n > 0 && n < (int)sizeof(head))
			snprintf(head + n, sizeof(head) - n, "; the untraced one-way latency was %s",
				 fmt_dur(pr->tr[tr].untraced.latency.mean, true, a, sizeof(a)));
		if (t->corrected) {	/* the second line of this transport, indented */
			text(f, 54, y + 18, 17, NULL, "fill=\"#555\"", head);
			y += 26;
			continue;
		}
		text(f, 24, y + 18, 17, NULL, "fill=\"#555\"", head);
		y += 26;
	}
	return y;
}

static double pair_section(FILE *f, const struct comparison *cmp, const struct pair_result *pr,
			   unsigned views, double y)
{
	struct stree *t = calloc(1, sizeof(*t));
	double max, scale;
	char head[400], caveat[240], place[64], think[48], a[32];
	int tr;

	if (!t)
		return y;
	stree_build(pr, show_corrected(cmp), t);
	max = MAX(t->sum[TR_UNIX], t->sum[TR_TCP]);
	scale = max > 0 ? PW / max : 0;
	snprintf(head, sizeof(head), "%s, %llu-byte messages, %s%s", mode_names[pr->mode],
		 (unsigned long long)pr->msg_size, place_words(pr, false, place, sizeof(place)),
		 think_words(pr, think, sizeof(think)));
	text(f, 24, y + 28, 28, NULL, "font-weight=\"bold\"", head);
	y += 58;
	if (*pair_caveat(cmp, pr, caveat, sizeof(caveat))) {
		char line[sizeof(caveat) + 16], fitted[sizeof(line)];

		snprintf(line, sizeof(line), "\u26a0 Caution: %s.", caveat);
		fit(line, W - 40, 19 * 1.08, fitted, sizeof(fitted));	/* bold is wider */
		text(f, 24, y + 4, 19, NULL, "fill=\"#b00\" font-weight=\"bold\"", fitted);
		y += 34;
	}
	if (views & SVG_FLAME)
		y = flame_view(f, cmp, pr, t, y) + 24;
	if (views & SVG_DIFF)
		y = diff_view(f, t, y + 10, scale) + 10;
	y = trust_lines(f, cmp, pr, t, y);
	/* per-connection stages (connect mode) are not part of a message: named, not drawn */
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;
		int i;

		for (i = 0; t->has[tr] && i < r->n_stages; i++) {
			if (!r->stages[i].extra)
				continue;
			snprintf(head, sizeof(head), "%s, per connection (not in the bars): %s %s",
				 tr_label[tr], r->stages[i].name,
				 fmt_dur(r->stages[i].ns_per_msg, true, a, sizeof(a)));
			text(f, 24, y + 18, 17, NULL, "fill=\"#555\"", head);
			y += 26;
		}
	}
	free(t);
	return y + 10;
}

int svg_write(const struct comparison *cmp, int pair, unsigned views, FILE *f)
{
	char *body = NULL, sub[400];
	size_t body_len = 0;
	FILE *m;
	double y = 110;
	int i, drawn = 0;

	grad_id = 0;
	m = open_memstream(&body, &body_len);
	if (!m)
		return -errno;
	for (i = 0; i < cmp->n_pairs; i++) {
		if ((pair >= 0 && i != pair) || !pair_has_stages(&cmp->pairs[i]))
			continue;
		if (drawn++)
			fprintf(m, "<line x1=\"20\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" "
				"stroke-width=\"2\"/>\n", y - 6, W - 20, y - 6), y += 20;
		y = pair_section(m, cmp, &cmp->pairs[i], views, y);
	}
	if (!drawn) {
		text(m, 24, y + 30, 26, NULL, "fill=\"#a00\"", "No stages to draw:");
		text(m, 24, y + 66, 22, NULL, NULL, no_stages_reason(cmp));
		y += 90;
	}
	fclose(m);

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"%s\">\n", W, y + 10, W, y + 10, FONTS);
	fputs("<style>.f{cursor:pointer}.f:hover rect{stroke:#000;stroke-width:2}</style>\n", f);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
	text(f, 24, 50, 36, NULL, "font-weight=\"bold\"",
	     "Where a message's time goes: Unix domain socket vs TCP loopback");
	snprintf(sub, sizeof(sub), "udsprobe %s \u00b7 Linux %s \u00b7 %s, %d CPUs \u00b7 attach: %s",
		 UDSPROBE_VERSION, kernel_release(), cmp->cpu_model, cmp->n_cpus,
		 cmp->attach_mode ? cmp->attach_mode : "none (untraced)");
	text(f, 24, 84, 19, NULL, "fill=\"#555\"", sub);
	if (views & SVG_FLAME && drawn)
		fputs(zoom_js, f);
	fwrite(body, 1, body_len, f);
	fputs("</svg>\n", f);
	free(body);
	return drawn ? 0 : -ENODATA;
}

static int svg_all(const struct comparison *cmp, FILE *f)
{
	return svg_write(cmp, -1, SVG_BOTH, f);
}

int report_svg(const struct comparison *cmp, const char *path)
{
	return stages_file_write(cmp, "--svg", path, svg_all);
}
