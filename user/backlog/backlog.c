// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe --backlog: who overflows which listen queue. Options and the main loop.
 *
 * The kernel side (bpf/backlog.bpf.c) counts overflow events per (listener,
 * client process) in per-CPU maps and enumerates listeners with BPF iterators.
 * The user side picks the attach mode and loads it (backlog_bpf.c), samples
 * listener queues every 100 ms into the listener table (backlog_table.c, owners
 * in backlog_owners.c), reads the counters once per --interval
 * (backlog_counts.c), and prints, writes JSON lines (backlog_out.c) and a
 * Prometheus textfile (backlog_prom.c). Nothing here runs per event.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>
#include <linux/capability.h>

#include "attach.h"
#include "capability.h"
#include "backlog.h"
#include "interrupt.h"
#include "live.h"
#include "backlog_bpf.h"
#include "backlog_out.h"
#include "backlog_table.h"
#include "metrics_http.h"
#include "outfile.h"
#include "util.h"
#include "unix_name.h"

#define SAMPLE_NS	100000000ull	/* queue sampling period */

/* ------------------------------------------------------------------ options */

enum {
	OPT_BACKLOG = 1100,
	OPT_BL_ATTACH,
	OPT_QUIET,
	OPT_SOURCE,
};

/* the filters, --interval, --prom and --metrics are the shared ones (watch_opts.h) */
static const struct argp_option bl_options[] = {
	{ "backlog", OPT_BACKLOG, NULL, 0,
	  "Watch listen queues: AF_UNIX connect EAGAIN, TCP listen overflows (until --duration "
	  "or Ctrl-C; --json PATH writes JSON lines)", 1 },
	{ NULL, 0, NULL, 0, "Backlog watch (--backlog):", 4 },
	{ "backlog-attach", OPT_BL_ATTACH, "MODE", 0,
	  "auto (default), fentry, kprobe or tracepoint" },
	{ "backlog-source", OPT_SOURCE, "SRC", 0,
	  "Where AF_UNIX listeners and queue depths come from: auto (default: iter/unix on "
	  "Linux 5.17+, else sock_diag), iter or diag (sock_diag even where iter/unix exists; "
	  "e.g. --backlog --backlog-source diag)" },
	{ "quiet", OPT_QUIET, NULL, 0, "No live view; only the summary at exit" },
	{},
};

static error_t bl_parse(int key, char *arg, struct argp_state *state)
{
	struct backlog_opts *o = state->input;
	static uint64_t given;

	option_once(bl_options, key, &given);
	switch (key) {
	case OPT_BACKLOG:
		o->enabled = true;
		break;
	case OPT_SOURCE:
		if (!strcmp(arg, "auto"))
			o->source = BL_SOURCE_AUTO;
		else if (!strcmp(arg, "iter"))
			o->source = BL_SOURCE_ITER;
		else if (!strcmp(arg, "diag"))
			o->source = BL_SOURCE_DIAG;
		else
			usage_exit("--backlog-source: '%s' is not auto, iter or diag", arg);
		o->source_given = true;
		break;
	case OPT_BL_ATTACH:
		o->attach = arg;
		break;
	case OPT_QUIET:
		o->quiet = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp backlog_argp = { .options = bl_options, .parser = bl_parse };

const char *backlog_option_given(const struct backlog_opts *o)
{
	return o->attach ? "--backlog-attach" : o->source_given ? "--backlog-source" :
	       o->quiet ? "--quiet" : NULL;
}

/* ------------------------------------------------------------------ main loop */

/* One run: its outputs and where it is. */
struct bl_loop {
	struct bl_state s;
	struct bl_bpf b;
	FILE *out, *json;
	const char *json_path;
	struct metrics_http *http;	/* --metrics */
	uint64_t t0, end_ns;
	double interval;
	bool write_failed;
	FILE *gone;		/* out or json, once writing it failed: no more is written there */
	struct live *live;	/* the full-screen view (stdout a terminal), else NULL: text */
	struct bl_live_view view;
	double last_t;		/* the last frame's, for a redraw on a key */
	bool quit;		/* q in the full-screen view */
	const struct backlog_opts *o;
	const struct watch_opts *w;
};

static void prom_write(struct bl_loop *r)
{
	int err;

	if (!r->w->prom_path)
		return;
	err = bl_write_prom(&r->s, r->w->prom_path);
	if (err && !r->write_failed) {	/* said once; later intervals try again */
		say_error("cannot write --prom %s: %s", r->w->prom_path,
			err == -EEXIST ? "it is no longer a regular file" : strerror(-err));
		r->write_failed = true;
	}
}

int backlog_check_attach(struct backlog_opts *o, enum attach_mode attach)
{
	int m;

	o->want = attach;
	if (!o->attach)
		return 0;
	m = attach_mode_parse(o->attach);
	if (m < 0)
		return usage_error("--backlog-attach: unknown mode '%s' (valid: auto fentry kprobe "
				   "tracepoint)", o->attach);
	if (attach != ATTACH_AUTO && m != ATTACH_AUTO && m != (int)attach)
		return usage_error("--attach %s and --backlog-attach %s disagree: give one of them",
				   attach_mode_names[attach], o->attach);
	if (m != ATTACH_AUTO)
		o->want = m;
	return 0;
}

/* Privileges and the output files: 0, or -errno (said). */
static int check_args(struct bl_loop *r)
{
	char msg[256];
	int err;

	if ((err = privileges_check("--backlog",
				    "as a service given those (udsprobe-backlog.service)")))
		return err;
	if (r->w->prom_path && metrics_file_target_ok(r->w->prom_path, msg, sizeof(msg))) {
		say_error("cannot write --prom %s: %s", r->w->prom_path, msg);
		return -EINVAL;
	}
	if (r->w->metrics_addr &&
	    (err = metrics_http_open(r->w->metrics_addr, &r->http, msg, sizeof(msg)))) {
		say_error("cannot serve --metrics %s: %s%s", r->w->metrics_addr, msg,
			err == -EADDRINUSE ? "; another process listens there (ss -ltnp names it): "
			"stop it or give --metrics another port" : err == -EADDRNOTAVAIL ?
			"; no interface of this host has that address" : "");
		return err;
	}
	if (r->json_path && !strcmp(r->json_path, "-")) {
		r->json = stdout;
		r->out = stderr;	/* keep stdout pure JSON lines */
	} else if (r->json_path && !(r->json = fopen(r->json_path, "w"))) {
		err = -errno;
		say_error("cannot write --json %s: %s", r->json_path,
			strerror(-err));
		return err;
	}
	return 0;
}

/* Load, first sample, the start line. 0 or -errno (said on stderr). */
static int start(struct bl_loop *r, enum attach_mode want)
{
	struct bl_state *s = &r->s;
	int i, n = 0, err;

	s->somaxconn = bl_read_somaxconn();
	r->b.source = r->o->source;
	err = bl_bpf_setup(&r->b, want);
	if (err)
		return err;
	s->run.attach_mode = attach_mode_names[r->b.mode];
	s->run.attach_reason = r->b.why;
	s->run.listen_overflow_reason = r->b.reason > 0;
	s->run.unix_source = r->b.unix_diag ? "sock_diag" : "iter/unix";
	s->run.unix_source_reason = r->b.unix_diag ? r->b.source_why : NULL;
	s->run.tcp_drops_missing = r->b.tcp_drops ? NULL : r->b.tcp_drops_why;
	s->run.unix_depth_missing = r->b.unix_depth ? NULL :
		"this kernel has no sk_data_ready tracepoint (Linux 6.6+)";
	bl_read_netstat(s, s->netstat0);
	memcpy(s->netstat, s->netstat0, sizeof(s->netstat));
	bl_netns_scan(s, true);
	err = bl_sample(s, &r->b);
	if (err) {
		say_error("reading listeners failed: %s", strerror(-err));
		return err;
	}
	bl_resolve_owners(s);
	if (r->w->prom_path && (err = bl_write_prom(s, r->w->prom_path))) {
		say_error("cannot write --prom %s: %s", r->w->prom_path,
			strerror(-err));
		return err;
	}
	for (i = 0; i < s->n; i++)
		n += s->ls[i].watched;
	fprintf(r->out, "udsprobe --backlog: attach mode %s (%s); kernel %s; watching %d "
		"listener%s; %s\n", s->run.attach_mode, s->run.attach_reason, kernel_release(), n,
		n == 1 ? "" : "s", r->end_ns ? "until --duration" : "Ctrl-C to stop");
	if (r->b.unix_diag)
		fprintf(r->out, "note: AF_UNIX queue depth from sock_diag: %s (docs/BACKLOG.md, "
			"\"Where listeners come from\")\n", r->b.source_why);
	if (!process_has_cap(CAP_SYS_PTRACE))
		fprintf(r->out, "note: no CAP_SYS_PTRACE: other users' processes cannot be read in "
			"/proc, so owners and pathname listeners they hold stay unresolved and "
			"their overflows may go unattributed (docs/BACKLOG.md, \"Run it as a "
			"service\")\n");
	if (s->run.tcp_drops_missing)
		fprintf(r->out, "note: TCP listen overflows are not counted in tracepoint mode here: "
			"%s; they show as n/a (the listener's sk_drops and ListenOverflows still count "
			"them); use --backlog-attach kprobe or fentry to count them per listener and "
			"client\n", s->run.tcp_drops_missing);
	else if (!s->run.listen_overflow_reason && r->b.mode == ATTACH_TRACEPOINT)
		fprintf(r->out, "note: this kernel has no TCP_LISTEN_OVERFLOW drop reason: a dropped "
			"handshake ACK counts once per segment (see docs/BACKLOG.md)\n");
	if (s->run.unix_depth_missing)
		fprintf(r->out, "note: AF_UNIX queue depth on arrival is not seen in tracepoint mode "
			"here: %s; it shows as n/a, accept waits are measured from connect's return; "
			"use --backlog-attach kprobe or fentry to see it\n", s->run.unix_depth_missing);
	fflush_noted(r->out);
	return 0;
}

/* Every --interval: counters, live view, JSON, Prometheus, then forget closed listeners. */
static void report(struct bl_loop *r, uint64_t now)
{
	struct bl_state *s = &r->s;
	double t = (now - r->t0) / 1e9;
	int i;

	bl_read_counts(s, &r->b);
	bl_read_netstat(s, s->netstat);
	for (i = 0; i < s->n; i++) {	/* an overflow means qlen > limit then */
		if (bl_overflows(&s->ls[i].tot) > bl_overflows(&s->ls[i].prev))
			s->ls[i].peak = MAX(s->ls[i].peak, s->ls[i].limit + 1);
		s->ls[i].shown_from = s->ls[i].prev;	/* a key's redraw shows the same */
	}
	if (r->live)
		bl_live_frame(s, r->live, &r->view, t);
	else if (!r->o->quiet)
		bl_print_interval(s, r->out, t);
	r->last_t = t;
	if (r->json)
		bl_json_interval(s, r->json, t);
	prom_write(r);
	for (i = 0; i < s->n; i++)
		s->ls[i].prev = s->ls[i].tot;
	bl_retire_closed(s, &r->b);
	/* Listener churn frees client arrays of every size between long-lived ones:
	 * give the free pages back, or RSS creeps up with the heap's holes
	 * (docs/BENCHMARKS.md, backlog long run). */
	malloc_trim(0);
}

/* GET /metrics: the Prometheus text as of the last interval. */
static void http_body(void *ctx, FILE *f)
{
	struct bl_loop *r = ctx;

	bl_prom_print(&r->s, f, (long long)time(NULL));
}

/* The full-screen view's keys, waiting up to ms for the first: the order, the family, q. */
static void live_keys(struct bl_loop *r, int ms)
{
	int k;

	while ((k = live_key(r->live, ms))) {
		ms = 0;
		switch (k) {
		case 'q': case 'Q': r->quit = true; return;
		case 'o': r->view.sort = BL_LIVE_BY_OVERFLOWS; break;
		case 'd': r->view.sort = BL_LIVE_BY_QUEUE; break;
		case 'w': r->view.sort = BL_LIVE_BY_WAITS; break;
		case 't': r->view.only = (r->view.only + 1) % 3; break;
		case LIVE_KEY_RESIZE: break;
		default:
			live_key_unknown(k, r->view.note, sizeof(r->view.note), "o d w sort, t "
					 "filters, q quits");
			bl_live_frame(&r->s, r->live, &r->view, r->last_t);
			continue;
		}
		if (k != LIVE_KEY_RESIZE)
			r->view.note[0] = 0;
		bl_live_frame(&r->s, r->live, &r->view, r->last_t);
	}
}

/* Until wake: serving --metrics if asked, reading the view's keys, else asleep. EINTR on
 * Ctrl-C returns early. */
static void wait_until(struct bl_loop *r, uint64_t now, uint64_t wake)
{
	struct timespec ts;

	if (r->live) {		/* keys at least every 50 ms */
		if (r->http)
			metrics_http_wait(r->http, MIN(wake, now + 50000000ull), http_body, r);
		live_keys(r, r->http ? 0 : (int)MIN((wake - now) / 1000000 + 1, 50));
		return;
	}
	if (r->http) {
		metrics_http_wait(r->http, wake, http_body, r);
		return;
	}
	ts.tv_sec = (wake - now) / 1000000000ull;
	ts.tv_nsec = (wake - now) % 1000000000ull;
	nanosleep(&ts, NULL);
}

/*
 * The live view or the JSON lines could not be written: a closed pipe (`| head`; SIGPIPE is
 * ignored) or a full disk. Said once; the watch stops, and what is still buffered for that
 * stream is dropped, or close_stdout() and finish() would fail on it again.
 */
static bool output_gone(struct bl_loop *r)
{
	FILE *f = r->json && ferror(r->json) ? r->json : ferror(r->out) ? r->out : NULL;

	if (!f)
		return false;
	say_error("--backlog: writing %s failed (%s); stopping",
		f == stdout ? "to standard output" : f == stderr ? "to standard error" : r->json_path,
		f == stdout && stdout_errno() ? strerror(stdout_errno()) :
		"a closed pipe or a full disk");
	__fpurge(f);
	clearerr(f);
	r->gone = f;
	r->write_failed = true;
	return true;
}

static void loop(struct bl_loop *r)
{
	uint64_t period = (uint64_t)(r->interval * 1e9);
	uint64_t next_sample = r->t0 + SAMPLE_NS, next_report = r->t0 + period;
	struct bl_state *s = &r->s;

	while (!udsprobe_stop && !r->quit) {	/* udsprobe's one signal handler (interrupt.c) */
		uint64_t now = now_ns(), wake = MIN(next_sample, next_report);

		if (r->end_ns && now >= r->end_ns)
			break;
		if (r->end_ns)
			wake = MIN(wake, r->end_ns);
		if (wake > now) {
			wait_until(r, now, wake);
			continue;
		}
		if (now >= next_sample) {
			if (bl_sample(s, &r->b) == 0 && s->owners_dirty &&
			    now - s->last_owner_scan > 1000000000ull)
				bl_resolve_owners(s);
			next_sample += SAMPLE_NS;
			if (next_sample <= now)
				next_sample = now + SAMPLE_NS;
		}
		if (now >= next_report) {
			report(r, now);
			next_report += period;
			if (next_report <= now)
				next_report = now + period;
			if (output_gone(r))
				break;
		}
	}
}

/* The final read: everything counted up to now, then the summary everywhere. */
static void finish(struct bl_loop *r)
{
	struct bl_state *s = &r->s;
	double t;
	int i;

	bl_sample(s, &r->b);
	if (s->owners_dirty)
		bl_resolve_owners(s);
	bl_read_counts(s, &r->b);
	bl_read_netstat(s, s->netstat);
	for (i = 0; i < s->n; i++)
		if (bl_overflows(&s->ls[i].tot))
			s->ls[i].peak = MAX(s->ls[i].peak, s->ls[i].limit + 1);
	bl_sort(s);
	t = (now_ns() - r->t0) / 1e9;
	if (r->out != r->gone)
		bl_print_summary(s, r->out, t);
	if (r->json && r->json != r->gone)
		bl_json_summary(s, r->json, t);
	prom_write(r);
	if (r->json && r->json != r->gone && (ferror(r->json) || fflush_noted(r->json))) {
		say_error("writing --json %s failed", r->json_path);
		r->write_failed = true;
	}
}

int backlog_main(const struct backlog_opts *o, const struct watch_opts *w, const char *json_path,
		 double duration_s, int verbose)
{
	struct bl_loop r = { .out = stdout, .json_path = json_path, .o = o, .w = w };
	int ret;

	ret = check_args(&r);
	if (ret)
		goto out;
	libbpf_setup(verbose);	/* -v: libbpf warnings, -vv: debug (as for --compare) */

	/* a fixed threshold: the listener table's large reallocs stay mmapped and go back
	 * whole when freed (glibc's dynamic threshold would move them into the heap) */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	bl_state_init(&r.s, &w->f);
	r.interval = w->interval_s ? w->interval_s : 1.0;
	r.t0 = now_ns();
	if (duration_s)
		r.end_ns = r.t0 + (uint64_t)(duration_s * 1e9);
	ret = start(&r, o->want);
	if (ret)
		goto out;
	r.t0 = now_ns();	/* the run starts when the start line is out */
	if (duration_s)
		r.end_ns = r.t0 + (uint64_t)(duration_s * 1e9);
	if (!o->quiet && r.out == stdout && isatty(STDOUT_FILENO)) {
		char why[160];

		r.live = live_open(why, sizeof(why));
		if (!r.live)
			say_error("--backlog: no full-screen view (%s): a block of "
				"text every interval", why);
		else
			bl_live_frame(&r.s, r.live, &r.view, 0);
	}
	loop(&r);
	live_close(r.live);	/* the terminal as it was, before the summary */
	r.live = NULL;
	finish(&r);
	ret = r.write_failed ? -EIO : 0;
out:
	metrics_http_close(r.http);
	bl_bpf_close(&r.b);
	capability_free();
	bl_state_free(&r.s);
	if (r.json && r.json != stdout)
		fclose(r.json);
	return ret;
}
