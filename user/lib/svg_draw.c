// SPDX-License-Identifier: GPL-2.0
/*
 * SVG drawing primitives shared by udsprobe's pictures (report_svg.c: flame and diff views,
 * report_sweep.c: the size curve): escaping, text that fits, colours, the phase palette.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg_draw.h"
#include "util.h"


void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s < ' ' && *s != '\n' && *s != '\t')
				fputc('?', f);	/* not allowed in XML 1.0 */
			else
				fputc(*s, f);
		}
	}
}

int utf8_len(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Largest prefix of s (UTF-8 safe, ".." appended when cut) that fits in px at size; "" if none. */
void fit(const char *s, double px, double size, char *out, size_t len)
{
	int max = (int)((px - 10) / (size * CHAR_W)), n = 0;
	const char *p;

	out[0] = 0;
	if (utf8_len(s) <= max) {
		snprintf(out, len, "%s", s);
		return;
	}
	if (max < 4)
		return;
	for (p = s; *p && n < max - 2; p++)
		if (((unsigned char)p[1] & 0xc0) != 0x80)
			n++;
	snprintf(out, len, "%.*s..", (int)(p - s), s);
}

void text(FILE *f, double x, double y, double size, const char *anchor, const char *style,
		 const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\"%s%s%s %s>", x, y, size,
		anchor ? " text-anchor=\"" : "", anchor ? anchor : "", anchor ? "\"" : "",
		style ? style : "");
	esc(f, s);
	fputs("</text>\n", f);
}

struct rgb hex(unsigned v)
{
	return (struct rgb){ (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff };
}

struct rgb mix(struct rgb a, struct rgb b, double t)
{
	return (struct rgb){ a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t };
}

const char *css(struct rgb c, char *buf)
{
	sprintf(buf, "#%02x%02x%02x", (int)lround(c.r), (int)lround(c.g), (int)lround(c.b));
	return buf;
}

/* Phase colours: Paul Tol's colour-blind-safe "light" scheme, without its blue and orange
 * (those mean "cheaper"/"costlier" in the diff view). */
const struct svg_phase svg_phases[] = {
	{ "send", "sender's send()", 0x44bb99 },
	{ "rx_softirq", "receive softirq", 0xeedd88 },
	{ "deliver", "queue + wake receiver", 0xffaabb },
	{ "sched", "receiver waits for CPU", 0xbbcc33 },
	{ "recv", "receiver's recv()", 0x99ddff },
	{ "app", "user space between messages", 0xdddddd },
	{ "bulk", "large message: sender and receiver take turns", 0xcc99cc },
	{ "unattributed", "not attributed", 0xcccccc },
};
const size_t svg_n_phases = ARRAY_SIZE(svg_phases);
static const unsigned other_rgb[] = { 0xaaaa00, 0xdddddd, 0xe5c3f0 };

struct rgb phase_color(const char *path, int depth)
{
	size_t i, len = strcspn(path, ";");
	unsigned v = other_rgb[(len + (unsigned char)path[0]) % ARRAY_SIZE(other_rgb)];
	struct rgb white = { 255, 255, 255 };

	for (i = 0; i < svg_n_phases; i++)
		if (strlen(svg_phases[i].phase) == len && !strncmp(svg_phases[i].phase, path, len)) {
			v = svg_phases[i].rgb;
			break;
		}
	return mix(hex(v), white, depth <= 1 ? 0 : depth == 2 ? 0.35 : 0.6);
}

/* 1, 2, 5 x 10^k giving 5..10 ticks up to max. */
double nice_step(double max)
{
	double step = pow(10, floor(log10(max > 0 ? max : 1)));

	while (max / step < 5)
		step /= 2;
	while (max / step > 10)
		step *= 2;
	return step;
}
