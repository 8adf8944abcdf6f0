// SPDX-License-Identifier: GPL-2.0
/* --trace --live: one row per flow, redrawn every interval; keys sort and filter. */
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "trace_live.h"
#include "util.h"

enum sort_by { BY_RATE, BY_P99, BY_BYTES, BY_STAGE };
static const char *const sort_names[] = { "msgs/s", "p99", "bytes", "top stage" };
enum only { ONLY_ALL, ONLY_UNIX, ONLY_TCP };
static const char *const only_names[] = { "all", "unix", "tcp" };

struct live_row {
	uint64_t key;		/* the flow across frames: its messages/s from the last one */
	int transport;
	char flow[TR_COMM_TXT * 2 + 200];	/* "endpoint  sender -> receiver" */
	uint64_t messages, bytes, p50, p99, misses;
	double rate;
	const char *top;	/* the largest stage (a kernel stage with --detail full) */
	double top_ns, top_share;
	/* the flow's latency histogram now (owned; bucket NULL: no memory): the next frame's
	 * p50/p99 are over what it adds */
	struct sparse_hist lat;
};

struct trace_live {
	struct live *scr;	/* NULL: plain text */
	char cpu[128];
	enum sort_by sort;
	enum only only;
	struct live_row *rows, *prev;	/* this frame's, the last one's (by key) */
	int n_rows, n_prev;
	struct sparse_hist diff;	/* scratch: a flow's histogram less the last frame's */
	uint64_t prev_ns;
	struct trace_live_head head;
	uint64_t flows_not_kept, misses;
	int n_flows;
	bool framed;
	char note[96];		/* an unknown key said, until the next known one */
};

static uint64_t flow_key(const struct flow *f)
{
	uint64_t h = 1469598103934665603ull;

	h = fnv1a64(h, &f->transport, sizeof(f->transport));
	h = fnv1a64(h, f->endpoint, strlen(f->endpoint));
	h = fnv1a64(h, f->sender.comm, strlen(f->sender.comm) + 1);
	h = fnv1a64(h, f->receiver.comm, strlen(f->receiver.comm) + 1);
	if (f->sender.n_pids)
		h = fnv1a64(h, &f->sender.pids[0], sizeof(f->sender.pids[0]));
	if (f->receiver.n_pids)
		h = fnv1a64(h, &f->receiver.pids[0], sizeof(f->receiver.pids[0]));
	return h;
}

static int by_key(const void *a, const void *b)
{
	const struct live_row *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static enum sort_by sorting;	/* qsort has no context */

static int by_sort(const void *a, const void *b)
{
	const struct live_row *x = a, *y = b;
	double u = 0, v = 0;

	switch (sorting) {
	case BY_RATE: u = x->rate, v = y->rate; break;
	case BY_P99: u = x->p99, v = y->p99; break;
	case BY_BYTES: u = x->bytes, v = y->bytes; break;
	case BY_STAGE: u = x->top_ns, v = y->top_ns; break;
	}
	if (u != v)
		return u < v ? 1 : -1;
	return x->messages < y->messages ? 1 : x->messages > y->messages ? -1 :
	       strcmp(x->flow, y->flow);
}

static void row_of(const struct flow *f, struct live_row *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->key = flow_key(f);
	r->transport = f->transport;
	snprintf(r->flow, sizeof(r->flow), "%s  %s -> %s", f->endpoint, f->sender.comm,
		 f->receiver.comm);
	r->messages = f->messages;
	r->bytes = f->bytes;
	r->misses = f->misses;
	/* the finest cut the run has: a stage cut into kernel stages (--detail full) by them,
	 * the others (wait;busy, ...) as they are */
	bool cut[FS__COUNT] = {};

	for (i = 0; i < f->n_kstages; i++) {
		cut[f->kstages[i].of] = true;
		if (f->kstages[i].ns_per_msg > r->top_ns) {
			r->top_ns = f->kstages[i].ns_per_msg;
			r->top = f->kstages[i].name;
		}
	}
	for (i = 0; i < FS__COUNT; i++) {
		if (!cut[i] && f->stages[i].ns_per_msg > r->top_ns) {
			r->top_ns = f->stages[i].ns_per_msg;
			r->top = fl_stage_names[i];
		}
	}
	r->top_share = f->mean > 0 ? r->top_ns / f->mean : 0;
}

static void rows_free(struct live_row *rows, int n)
{
	int i;

	for (i = 0; rows && i < n; i++) {
		free(rows[i].lat.bucket);
		free(rows[i].lat.count);
	}
	free(rows);
}

/* r's p50 and p99 over the messages since the last frame (was: the flow's row then, NULL for
 * a new flow: all of them); 0: none. Over the run so far when memory ran out. */
static void interval_percentiles(struct trace_live *tl, struct live_row *r,
				 const struct live_row *was, const struct flow *f)
{
	const struct sparse_hist *cur = &r->lat;
	struct sparse_hist *d = &tl->diff;
	int i, j = 0;

	if (cur->n > d->cap) {
		free(d->bucket);
		free(d->count);
		d->bucket = malloc(cur->n * sizeof(*d->bucket));
		d->count = malloc(cur->n * sizeof(*d->count));
		d->cap = d->bucket && d->count ? cur->n : 0;
	}
	if ((f->lat_hist.n && !cur->bucket) || cur->n > d->cap) {
		r->p50 = f->p50;
		r->p99 = f->p99;
		return;
	}
	d->n = 0;
	for (i = 0; i < cur->n; i++) {
		uint64_t c = cur->count[i];

		while (was && j < was->lat.n && was->lat.bucket[j] < cur->bucket[i])
			j++;
		if (was && j < was->lat.n && was->lat.bucket[j] == cur->bucket[i])
			c -= MIN(c, was->lat.count[j]);	/* a flow's counts only grow */
		if (c) {
			d->bucket[d->n] = cur->bucket[i];
			d->count[d->n++] = c;
		}
	}
	r->p50 = trace_hist_quantile(d, 0.50);
	r->p99 = trace_hist_quantile(d, 0.99);
}

struct trace_live *trace_live_open(void)
{
	struct trace_live *tl = calloc(1, sizeof(*tl));
	char why[160];

	if (!tl)
		return NULL;
	cpu_model(tl->cpu, sizeof(tl->cpu));
	tl->scr = live_open(why, sizeof(why));
	if (!tl->scr)
		say_error("--live: %s: the flows as plain text every interval",
			why);
	return tl;
}

void trace_live_close(struct trace_live *tl)
{
	if (!tl)
		return;
	live_close(tl->scr);
	rows_free(tl->rows, tl->n_rows);
	free(tl->prev);		/* its rows' histograms are tl->rows' */
	free(tl->diff.bucket);
	free(tl->diff.count);
	free(tl);
}

bool trace_live_screen(const struct trace_live *tl)
{
	return tl->scr;
}

static const char *dur(uint64_t ns, char *buf, size_t len)
{
	return ns ? fmt_dur(ns, false, buf, len) : "-";
}

/* "<n> ms CPU (<p> % of one CPU)" of the hooks so far, or why not known */
static void cost_text(const struct trace_live_head *h, char *buf, size_t len)
{
	if (!h->cost_known)
		snprintf(buf, len, "unknown (BPF run-time statistics refused)");
	else
		snprintf(buf, len, "%.1f ms CPU (%.2f %% of one CPU)", h->cost_ns / 1e6,
			 h->elapsed_ns ? 100.0 * h->cost_ns / h->elapsed_ns : 0);
}

/* Plain text: the busiest flows of each interval, as a terminal of 50 lines would show */
#define TEXT_ROWS	44

/* Column header and one row, the same widths on the screen and in plain text. */
#define ROW_HEAD "TR    MSGS/S      P50      P99 TOP STAGE         SHARE MISSES  FLOW"

static void row_text(const struct live_row *r, char *buf, size_t len)
{
	char rate[16], p50[16], p99[16];

	snprintf(rate, sizeof(rate), "%.0f", r->rate);
	snprintf(buf, len, "%-4s %7s %8s %8s %-17.17s %4.0f%% %6llu  %s",
		 trace_transport_name(r->transport), rate, dur(r->p50, p50, sizeof(p50)),
		 dur(r->p99, p99, sizeof(p99)), r->top ? r->top : "-", 100 * r->top_share,
		 (unsigned long long)r->misses, r->flow);
}

static void draw(struct trace_live *tl)
{
	const struct trace_live_head *h = &tl->head;
	char cost[96], line[sizeof(tl->rows->flow) + 128];
	int i, rows = 0, cols = 0, y = 0, shown = 0;

	sorting = tl->sort;
	qsort(tl->rows, tl->n_rows, sizeof(*tl->rows), by_sort);
	cost_text(h, cost, sizeof(cost));
	for (i = 0; i < tl->n_rows; i++)
		shown += tl->only == ONLY_ALL || tl->rows[i].transport ==
			 (tl->only == ONLY_UNIX ? FL_UNIX : FL_TCP);
	if (!tl->scr) {
		printf("--- %.1f s: %d flows (%s), %llu misses, attach %s, hooks %s\n",
		       h->elapsed_ns / 1e9, tl->n_flows, only_names[tl->only],
		       (unsigned long long)tl->misses, h->attach_mode, cost);
		printf("%s\n", ROW_HEAD);
		for (i = 0; i < tl->n_rows && i < TEXT_ROWS; i++) {
			row_text(&tl->rows[i], line, sizeof(line));
			printf("%s\n", line);
		}
		if (tl->n_rows > TEXT_ROWS)
			printf("... %d more flows (the report at the end has them all)\n",
			       tl->n_rows - TEXT_ROWS);
		fflush(stdout);
		return;
	}
	live_begin(tl->scr, &rows, &cols);
	live_line(tl->scr, y++, true, "udsprobe --trace --live   %.0f s   attach %s   CPU %s",
		  h->elapsed_ns / 1e9, h->attach_mode, tl->cpu);
	live_line(tl->scr, y++, false, "hooks %s", cost);
	live_line(tl->scr, y++, false, "flows %d (%d shown: %s)   misses %llu   lost: %llu "
		  "ring buffer, %llu flows not kept", tl->n_flows, shown, only_names[tl->only],
		  (unsigned long long)tl->misses, (unsigned long long)h->outliers_dropped,
		  (unsigned long long)tl->flows_not_kept);
	if (tl->note[0])
		live_line(tl->scr, y++, true, "%s", tl->note);
	else
		live_line(tl->scr, y++, false, "sort: m msgs/s  p p99  b bytes  s top stage [%s]   "
			  "t transport [%s]   q quit and report", sort_names[tl->sort],
			  only_names[tl->only]);
	y++;
	live_line(tl->scr, y++, true, "%s", ROW_HEAD);
	for (i = 0; i < tl->n_rows && y < rows; i++) {
		if (tl->only != ONLY_ALL &&
		    tl->rows[i].transport != (tl->only == ONLY_UNIX ? FL_UNIX : FL_TCP))
			continue;
		row_text(&tl->rows[i], line, sizeof(line));
		/* the last row says how many did not fit (rows 0-5: the header) */
		if (y == rows - 1 && shown - (y - 6) > 1) {
			live_line(tl->scr, y, false, "... %d more flows (a taller terminal shows "
				  "them)", shown - (y - 6));
			break;
		}
		live_line(tl->scr, y++, false, "%s", line);
	}
	live_end(tl->scr);
}

void trace_live_frame(struct trace_live *tl, const struct trace_run *snap,
		      const struct trace_live_head *h)
{
	struct live_row *rows = calloc(snap->n_flows + 1, sizeof(*rows));
	double dt = (h->elapsed_ns - tl->prev_ns) / 1e9;
	int i;

	if (!rows)
		return;		/* this frame is skipped; the next tries again */
	for (i = 0; i < snap->n_flows; i++) {
		struct live_row key, *was;

		row_of(&snap->flows[i], &rows[i]);
		if (trace_hist_copy(&rows[i].lat, &snap->flows[i].lat_hist)) {
			free(rows[i].lat.bucket);
			free(rows[i].lat.count);
			rows[i].lat = (struct sparse_hist){ 0 };
		}
		key.key = rows[i].key;
		was = tl->prev ? bsearch(&key, tl->prev, tl->n_prev, sizeof(*tl->prev), by_key) :
			NULL;
		/* over the last interval; a new flow's since the start of the view */
		if (was && dt > 0)
			rows[i].rate = (rows[i].messages - MIN(was->messages, rows[i].messages)) / dt;
		else if (h->elapsed_ns)
			rows[i].rate = rows[i].messages / (h->elapsed_ns / 1e9);
		interval_percentiles(tl, &rows[i], was, &snap->flows[i]);
	}
	/* the next frame's rates and percentiles come from this one's rows, by key */
	rows_free(tl->rows, tl->n_rows);
	free(tl->prev);		/* its rows' histograms were tl->rows' */
	tl->rows = rows;
	tl->n_rows = snap->n_flows;
	tl->prev = malloc((tl->n_rows + 1) * sizeof(*tl->prev));
	tl->n_prev = 0;
	if (tl->prev) {
		memcpy(tl->prev, tl->rows, tl->n_rows * sizeof(*tl->rows));
		tl->n_prev = tl->n_rows;
		qsort(tl->prev, tl->n_prev, sizeof(*tl->prev), by_key);
	}
	tl->prev_ns = h->elapsed_ns;
	tl->head = *h;
	tl->n_flows = snap->n_flows;
	tl->flows_not_kept = snap->flows_not_kept;
	tl->misses = 0;
	for (i = 0; i < FM__COUNT; i++)
		tl->misses += snap->misses[i];
	tl->framed = true;
	draw(tl);
}

bool trace_live_keys(struct trace_live *tl, int ms)
{
	int k;

	if (!tl->scr)
		return false;
	while ((k = live_key(tl->scr, ms))) {
		ms = 0;		/* the rest of a burst without waiting */
		switch (k) {
		case 'q': case 'Q':
			return true;
		case 'm': tl->sort = BY_RATE; break;
		case 'p': tl->sort = BY_P99; break;
		case 'b': tl->sort = BY_BYTES; break;
		case 's': tl->sort = BY_STAGE; break;
		case 't': tl->only = (tl->only + 1) % 3; break;
		case LIVE_KEY_RESIZE: break;
		default:
			live_key_unknown(k, tl->note, sizeof(tl->note), "m p b s sort, t filters, "
					 "q quits");
			if (tl->framed)
				draw(tl);
			continue;
		}
		if (k != LIVE_KEY_RESIZE)
			tl->note[0] = 0;
		if (tl->framed)
			draw(tl);
	}
	return false;
}
