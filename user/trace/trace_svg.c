// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --out: one flame graph (icicle: root on top) per flow. Row 1 is the mean latency
 * of a message, row 2 its phases (send, wait, recv), row 3 the stages of docs/TRACE.md,
 * row 4 (--detail full) the kernel stages each is cut into, as --compare names them; each
 * frame as wide as its mean time per message. Every flow of a run is drawn at ONE px/ns
 * scale (trace_svg_scale), with the same axis, so widths compare across the files. Colours
 * and text come from svg_draw.c, as in --compare's pictures; hovering shows the numbers.
 */
#include <stdio.h>
#include <string.h>

#include "svg_draw.h"
#include "trace_report.h"
#include "util.h"

#define W	1600		/* canvas width, px */
#define ML	40		/* left margin */
#define MR	60
#define PW	(W - ML - MR)	/* plot width: the slowest drawn flow's mean latency */
#define ROW	40		/* row height */
#define FS	21		/* frame label font size */

/* The phases of the stages (enum fl_stage), in the order they happen. */
static const struct { const char *name; int first, last; } phases[] = {
	{ "send", FS_SEND, FS_SEND },
	{ "wait", FS_EPOLL, FS_BUSY },
	{ "recv", FS_RECV_BLOCKED, FS_RECV },
};

double trace_svg_scale_of(double max_ns)
{
	return max_ns > 0 ? PW / max_ns : 0;
}

double trace_svg_scale(const struct trace_run *run, int n)
{
	double max = 0;
	int i;

	for (i = 0; i < run->n_flows && i < n; i++) {
		max = MAX(max, run->flows[i].mean);
		if (run->flows[i].if_unix.predicted)	/* slower over AF_UNIX: drawn too */
			max = MAX(max, run->flows[i].if_unix.mean);
	}
	return trace_svg_scale_of(max);
}

/* One frame: a bar with its hover title, its label inside when it fits, else after it
 * (beside: there is room after it on its row). */
static void frame_at(FILE *f, double x, double y, double w, const char *fill, const char *ink,
		     const char *label, const char *title, bool beside)
{
	char fitted[160];

	fputs("<g class=\"f\"><title>", f);
	esc(f, title);
	fputs("</title>", f);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"3\" fill=\"%s\"/>",
		x, y, w > 0.5 ? w : 0.5, ROW - 3, fill);
	fit(label, w, FS, fitted, sizeof(fitted));
	if (fitted[0])
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"%s\">", x + 6,
			y + ROW / 2.0 + FS * 0.32, FS, ink);
	else if (beside && x + w + 16 + utf8_len(label) * FS * CHAR_W < W)	/* narrow: beside it */
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"#000\">", x + w + 6,
			y + ROW / 2.0 + FS * 0.32, FS);
	else {	/* the title has it */
		fputs("</g>\n", f);
		return;
	}
	esc(f, fitted[0] ? fitted : label);
	fputs("</text></g>\n", f);
}

static void frame(FILE *f, double x, double y, double w, const char *fill, const char *ink,
		  const char *label, const char *title)
{
	frame_at(f, x, y, w, fill, ink, label, title, true);
}

static void stage_title(const struct flow *fl, const char *path, double ns, const char *what,
			char *buf, size_t len)
{
	char a[32], b[32];

	snprintf(buf, len, "%s: %s per message (%.1f%% of %s)%s", path,
		 fmt_dur(ns, true, a, sizeof(a)), fl->mean > 0 ? 100 * ns / fl->mean : 0,
		 fmt_dur(fl->mean, true, b, sizeof(b)), what);
}

/* Row 4: the kernel stages stage st is cut into, from x. */
static void kstage_frames(const struct flow *fl, int st, double x, double y, double scale, FILE *f)
{
	char a[32], lab[200], title[400], fill[8];
	int i;

	for (i = 0; i < fl->n_kstages; i++) {
		const struct flow_kstage *k = &fl->kstages[i];

		if (k->of != st)
			continue;
		if (k->ns_per_msg * scale >= 0.5) {
			snprintf(lab, sizeof(lab), "%s %s", strchr(k->name, ';') + 1,
				 fmt_dur(k->ns_per_msg, true, a, sizeof(a)));
			stage_title(fl, k->name, k->ns_per_msg, "\na kernel stage (docs/STAGES.md)",
				    title, sizeof(title));
			/* many narrow neighbours: a label inside or none (the title has it) */
			frame_at(f, x, y, k->ns_per_msg * scale, css(phase_color(k->name, 3), fill),
				 "#000", lab, title, false);
		}
		x += k->ns_per_msg * scale;
	}
}

/* A TCP flow's prediction over AF_UNIX (docs/PREDICT.md) under its measured rows, on the same
 * scale: the predicted message and its stages, the saving beside them. Returns the next y. */
#define PRED_H (3 * ROW + 50)
static double predicted_rows(const struct flow *fl, double scale, double y, FILE *f)
{
	const struct flow_if_unix *u = &fl->if_unix;
	char a[32], b[32], c[32], lab[300], title[400], fill[8];
	double x = ML, w;
	int st;

	snprintf(lab, sizeof(lab), "over a unix socket, predicted from this trace: %s instead of "
		 "%s (range %s to %s; docs/PREDICT.md)", fmt_dur(u->mean, true, a, sizeof(a)),
		 fmt_dur(fl->mean, true, b, sizeof(b)), fmt_dur(u->mean_lo, true, c, sizeof(c)),
		 fmt_dur(u->mean_hi, true, title, sizeof(title)));
	text(f, 24, y, 19, NULL, "font-weight=\"bold\" fill=\"#333\"", lab);
	y += 14;
	snprintf(lab, sizeof(lab), "unix, predicted %s", fmt_dur(u->mean, true, a, sizeof(a)));
	snprintf(title, sizeof(title), "predicted over AF_UNIX: mean %s, p50 %s, p99 %s",
		 fmt_dur(u->mean, true, a, sizeof(a)), fmt_dur(u->p50, true, b, sizeof(b)),
		 fmt_dur(u->p99, true, c, sizeof(c)));
	frame(f, ML, y, MAX(u->mean, 0.0) * scale, "#6b6b6b", "#fff", lab, title);
	for (st = 0; st < FS__COUNT; st++) {
		w = MAX(u->stage_ns[st], 0.0) * scale;
		if (w < 0.5)
			continue;
		snprintf(lab, sizeof(lab), "%s %s", strchr(fl_stage_names[st], ';') + 1,
			 fmt_dur(u->stage_ns[st], true, a, sizeof(a)));
		snprintf(title, sizeof(title), "%s over AF_UNIX, predicted: %s per message (TCP: %s)",
			 fl_stage_names[st], fmt_dur(u->stage_ns[st], true, a, sizeof(a)),
			 fmt_dur(fl->stages[st].ns_per_msg, true, b, sizeof(b)));
		frame(f, x, y + ROW, w, css(phase_color(fl_stage_names[st], 2), fill), "#000", lab, title);
		x += w;
	}
	/* what goes: drawn after the predicted message, as wide as the saving */
	if (u->saved * scale >= 0.5) {
		snprintf(lab, sizeof(lab), "saved %s", fmt_dur(u->saved, true, a, sizeof(a)));
		snprintf(title, sizeof(title), "saved over AF_UNIX: %s per message, mostly %s",
			 fmt_dur(u->saved, true, a, sizeof(a)), u->mostly);
		fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"3\" "
			"fill=\"none\" stroke=\"#b00\" stroke-dasharray=\"6 4\" stroke-width=\"2\"/>\n",
			ML + u->mean * scale, y, u->saved * scale, 2 * ROW - 3);
		frame_at(f, ML + u->mean * scale, y + 2 * ROW, u->saved * scale, "#fff", "#b00", lab,
			 title, true);
	}
	return y + 3 * ROW + 36;
}

void trace_svg_write(const struct trace_run *run, const struct flow *fl, double scale, FILE *f)
{
	char a[32], b[32], c[32], lab[400], title[400], fill[8], sub[400];
	double max = scale > 0 ? PW / scale : 0, step = nice_step(max), v, x, y = 150, h;
	int rows = fl->n_kstages ? 4 : 3;
	size_t p;
	int st;

	h = y + 40 + rows * ROW + 150 + (fl->if_unix.predicted ? PRED_H : 0);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"%s\">\n", W, h, W, h, FONTS);
	fputs("<style>.f:hover rect{stroke:#000;stroke-width:2}</style>\n", f);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n", f);
	snprintf(lab, sizeof(lab), "%s %s: %s \u2192 %s", trace_transport_name(fl->transport),
		 fl->endpoint, fl->sender.comm, fl->receiver.comm);
	fit(lab, W - 48, 32, sub, sizeof(sub));
	text(f, 24, 46, 32, NULL, "font-weight=\"bold\"", sub);
	snprintf(lab, sizeof(lab), "%llu messages, %llu bytes \u00b7 latency p50 %s, p99 %s, "
		 "mean %s", (unsigned long long)fl->messages, (unsigned long long)fl->bytes,
		 fmt_dur(fl->p50, true, a, sizeof(a)), fmt_dur(fl->p99, true, b, sizeof(b)),
		 fmt_dur(fl->mean, true, c, sizeof(c)));
	text(f, 24, 80, 20, NULL, "fill=\"#333\"", lab);
	snprintf(sub, sizeof(sub), "udsprobe %s --trace \u00b7 Linux %s \u00b7 attach: %s \u00b7 "
		 "one scale for every flow-*.svg of this report: the full width is %s", UDSPROBE_VERSION,
		 kernel_release(), run->attach_mode, fmt_dur(max, true, a, sizeof(a)));
	text(f, 24, 108, 17, NULL, "fill=\"#555\"", sub);
	/* the axis, the same in every flow's picture */
	for (v = 0; max > 0 && v <= max * 1.0001; v += step) {
		x = ML + v * scale;
		text(f, x, y, 17, v == 0 ? "start" : "middle", "fill=\"#444\"",
		     fmt_dur(v, true, a, sizeof(a)));
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c8c8c8\" "
			"stroke-width=\"1.5\"/>\n", x, y + 8, x, y + 14 + rows * ROW);
	}
	y += 14;
	snprintf(lab, sizeof(lab), "message %s (mean)", fmt_dur(fl->mean, true, a, sizeof(a)));
	snprintf(title, sizeof(title), "send() entry \u2192 recv() return: mean %s, p50 %s, p99 %s",
		 fmt_dur(fl->mean, true, a, sizeof(a)), fmt_dur(fl->p50, true, b, sizeof(b)),
		 fmt_dur(fl->p99, true, c, sizeof(c)));
	frame(f, ML, y, fl->mean * scale, "#3b3b3b", "#fff", lab, title);
	for (x = ML, p = 0; p < ARRAY_SIZE(phases); p++) {
		double pw = 0, sx = x;

		for (st = phases[p].first; st <= phases[p].last; st++)
			pw += fl->stages[st].ns_per_msg;
		if (pw * scale < 0.5)
			continue;
		snprintf(lab, sizeof(lab), "%s %s", phases[p].name, fmt_dur(pw, true, a, sizeof(a)));
		stage_title(fl, phases[p].name, pw, "", title, sizeof(title));
		frame(f, x, y + ROW, pw * scale, css(phase_color(phases[p].name, 1), fill), "#000", lab,
		      title);
		for (st = phases[p].first; st <= phases[p].last; st++) {
			const struct flow_stage *g = &fl->stages[st];
			char what[160];

			if (g->ns_per_msg * scale < 0.5)
				continue;
			snprintf(lab, sizeof(lab), "%s %s", strchr(g->name, ';') + 1,
				 fmt_dur(g->ns_per_msg, true, a, sizeof(a)));
			snprintf(what, sizeof(what), "\n%llu messages passed it: p50 %s, p99 %s",
				 (unsigned long long)g->count, fmt_dur(g->p50_ns, true, b, sizeof(b)),
				 fmt_dur(g->p99_ns, true, c, sizeof(c)));
			stage_title(fl, g->name, g->ns_per_msg, what, title, sizeof(title));
			frame(f, sx, y + 2 * ROW, g->ns_per_msg * scale,
			      css(phase_color(g->name, 2), fill), "#000", lab, title);
			kstage_frames(fl, st, sx, y + 3 * ROW, scale, f);
			sx += g->ns_per_msg * scale;
		}
		x += pw * scale;
	}
	y += rows * ROW + 40;
	if (fl->if_unix.predicted)
		y = predicted_rows(fl, scale, y, f);
	text(f, 24, y, 18, NULL, "fill=\"#333\"",
	     "send: the sender's send() until the data is handed over \u00b7 wait: the receiver in "
	     "epoll/poll/select, or busy elsewhere \u00b7 recv: its recv() until the last byte");
	text(f, 24, y + 30, 18, NULL, "fill=\"#555\"",
	     fl->n_kstages ? "widths are mean ns per message (the stages add up to the mean latency; "
	     "the last row: the kernel stages they are cut into) \u00b7 hover for the numbers \u00b7 "
	     "stages: docs/TRACE.md" : "widths are mean ns per message (the stages add up to the "
	     "mean latency) \u00b7 hover for p50/p99 \u00b7 stages: docs/TRACE.md");
	fputs("</svg>\n", f);
}
