/* --backlog's outputs (layer 3): text, JSON lines, Prometheus (backlog_prom.c). */
#ifndef UDSPROBE_BACKLOG_OUT_H
#define UDSPROBE_BACKLOG_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "backlog_table.h"

const char *bl_family_name(int family);
/* l's overflows are not counted (a TCP listener where the drop programs cannot load): every
 * output says n/a, null or nothing for them, never 0. */
bool bl_overflows_unknown(const struct bl_state *s, const struct listener *l);
/* l's queue depths on arrival are not seen (an AF_UNIX listener in tracepoint mode before
 * 6.6): null in JSON, n/a in the text, no histogram in Prometheus. */
bool bl_depth_unknown(const struct bl_state *s, const struct listener *l);
/* The address as text, with the namespace when it is not udsprobe's own. */
const char *bl_addr_text(struct bl_state *s, const struct listener *l, char *buf, size_t len);

/* One live-view block: a line per active listener, t seconds after the start. */
void bl_print_interval(struct bl_state *s, FILE *out, double t);
/* The full-screen view (when stdout is a terminal): every watched listener, v's order and
 * family, t seconds after the start. */
struct live;
enum { BL_LIVE_BY_OVERFLOWS, BL_LIVE_BY_QUEUE, BL_LIVE_BY_WAITS };
enum { BL_LIVE_ALL, BL_LIVE_UNIX, BL_LIVE_TCP };
struct bl_live_view {
	int sort, only;
	char note[96];		/* an unknown key said, until the next known one */
};
void bl_live_frame(struct bl_state *s, struct live *scr, const struct bl_live_view *v, double t);
/* The summary table, TCP detail, netstat deltas and recommendations. */
void bl_print_summary(struct bl_state *s, FILE *out, double t);
/* JSON lines: "interval" per watched listener and "stats"; "summary" lines and "run". */
void bl_json_interval(struct bl_state *s, FILE *f, double t);
void bl_json_summary(struct bl_state *s, FILE *f, double t);

/* Prometheus text to PATH, atomically (a mkstemp file beside it, renamed): 0 or -errno;
 * -EEXIST: PATH exists and is not a regular file. */
int bl_write_prom(struct bl_state *s, const char *path);
/* The Prometheus text itself (now: the timestamp written). */
void bl_prom_print(struct bl_state *s, FILE *f, long long now);

#endif
