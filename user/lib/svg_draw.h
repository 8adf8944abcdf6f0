/* SVG drawing primitives shared by the picture writers (svg_draw.c). */
#ifndef UDSPROBE_SVG_DRAW_H
#define UDSPROBE_SVG_DRAW_H

#include <stddef.h>
#include <stdio.h>

#define CHAR_W	0.58		/* average glyph width / font size, DejaVu Sans / Verdana */
#define FONTS	"DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"

struct rgb {
	double r, g, b;
};

/* Colour per top-level stage ("phase"): Paul Tol's colour-blind-safe "light" scheme. */
struct svg_phase {
	const char *phase, *what;
	unsigned rgb;
};
extern const struct svg_phase svg_phases[];
extern const size_t svg_n_phases;

void esc(FILE *f, const char *s);		/* XML-escaped text */
int utf8_len(const char *s);
/* Largest prefix of s (UTF-8 safe, ".." appended when cut) that fits in px at size. */
void fit(const char *s, double px, double size, char *out, size_t len);
void text(FILE *f, double x, double y, double size, const char *anchor, const char *style,
	  const char *s);
struct rgb hex(unsigned v);
struct rgb mix(struct rgb a, struct rgb b, double t);
const char *css(struct rgb c, char *buf);	/* buf: 8 bytes */
struct rgb phase_color(const char *path, int depth);
double nice_step(double max);			/* 1, 2, 5 x 10^k: 5..10 ticks up to max */

#endif
