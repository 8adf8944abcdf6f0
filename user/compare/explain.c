// SPDX-License-Identifier: GPL-2.0
/*
 * The plain-language explanation under each comparison, as claims computed from the numbers
 * only: which transport is faster and whether that is beyond the noise this run measured,
 * what each pays per message, which stages only TCP has and what share of the difference
 * they make. A causal phrase is added only where a counter of the same run supports it
 * (docs/REPORTS.md, "The explanation"); tests/integration/test_explain_claims.py re-derives
 * every claim from the JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "util.h"

/* The largest piece one chunk carries: a UDS skb (32 KiB of pages + its head), a TCP GSO
 * segment. A message larger than this necessarily crosses in several. */
#define UDS_PIECE_MAX 36864
#define TCP_PIECE_MAX 65536
/* Stages where UDS pays this much more than TCP are listed (below: timer noise). */
#define PAYS_MORE_NS 20

struct pair_ctx {
	const struct comparison *cmp;
	const struct pair_result *pr;
	const struct trace_result *u, *t;
	struct claims *cl;
};

static const char *const tr_word[TR__COUNT] = { "UDS", "TCP" };

static double stage_sum(const struct trace_result *t, const char *prefix)
{
	double sum = 0;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && !strncmp(t->stages[i].name, prefix, strlen(prefix)))
			sum += t->stages[i].ns_per_msg;
	return sum;
}

static double stage_ns(const struct trace_result *t, const char *name)
{
	const struct stage_stat *s = trace_stage(t, name);

	return s ? s->ns_per_msg : 0;
}

static double tcp_only_ns(const struct trace_result *t)
{
	double sum = 0;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && stage_tcp_only(t->stages[i].name))
			sum += t->stages[i].ns_per_msg;
	return sum;
}

/* The message itself: send() entry to recv() return, without the application gap. */
static double message_ns(const struct trace_result *t)
{
	return t->stage_sum_ns - stage_ns(t, "app;gap");
}

static const struct stage_stat *largest_stage(const struct trace_result *t)
{
	const struct stage_stat *best = NULL;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && (!best || t->stages[i].ns_per_msg > best->ns_per_msg))
			best = &t->stages[i];
	return best;
}

static const char *dur(double ns, char *buf)
{
	return fmt_dur(ns, false, buf, 32);
}

/*
 * Is the difference between u and t (ns per unit, lower is faster) beyond the run-to-run noise
 * this run measured? In order: --repeat's ranges of the two transports overlap; a traced run
 * was faster than its untraced twin by at least the difference; the difference is under
 * NOISE_FLOOR. The rule and its numbers go into the claim; why it is noise into why.
 */
static bool within_noise(const struct pair_result *pr, double u, double t, struct claim *c,
			 char *why, size_t len)
{
	const struct transport_result *x = &pr->tr[TR_UNIX], *y = &pr->tr[TR_TCP];
	double diff = fabs(u - t), rel = diff / MAX(MAX(u, t), 1), faster = 0;
	int tr, slow = -1;
	char a[32], b[32], d[32], e[32];

	why[0] = 0;
	claim_num(c, "rel_diff", rel);
	if (x->runs > 1 && y->runs > 1) {
		bool overlap = x->untraced_ns.min <= y->untraced_ns.max &&
			       y->untraced_ns.min <= x->untraced_ns.max;

		claim_str(c, "noise_rule", "repeat");
		claim_num(c, "repeat_runs", MIN(x->runs, y->runs));
		claim_num(c, "unix_min_ns", x->untraced_ns.min);
		claim_num(c, "unix_max_ns", x->untraced_ns.max);
		claim_num(c, "tcp_min_ns", y->untraced_ns.min);
		claim_num(c, "tcp_max_ns", y->untraced_ns.max);
		if (overlap)
			snprintf(why, len, "over %d repeats the two ranges overlap: UDS %s-%s, TCP "
				 "%s-%s per %s", MIN(x->runs, y->runs), dur(x->untraced_ns.min, a),
				 dur(x->untraced_ns.max, b), dur(y->untraced_ns.min, d),
				 dur(y->untraced_ns.max, e), pr->mode == WL_CONNECT ? "connection" : "message");
		claim_bool(c, "noise", overlap);
		return overlap;
	}
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;

		if (r->valid && -r->overhead_ns > faster) {
			faster = -r->overhead_ns;
			slow = tr;
		}
	}
	claim_num(c, "traced_faster_ns", faster);
	if (slow >= 0 && diff <= faster) {
		claim_str(c, "noise_rule", "traced_faster");
		snprintf(why, len, "the traced %s run was %s faster than its untraced twin, so one "
			 "run's noise is at least that, more than the %s between them", tr_word[slow],
			 dur(faster, a), dur(diff, b));
	} else if (rel < NOISE_FLOOR) {
		claim_str(c, "noise_rule", "floor");
		snprintf(why, len, "one unrepeated run spreads about %.0f %%", 100 * NOISE_FLOOR);
	} else {
		claim_str(c, "noise_rule", "none");
	}
	claim_bool(c, "noise", why[0] != 0);
	return why[0] != 0;
}

/* The caveat when the winner stands but a traced run came out faster than its untraced twin. */
static void disturbed(const struct pair_ctx *x, double diff)
{
	int tr;
	char a[32], b[32];

	if (x->pr->tr[TR_UNIX].runs > 1)
		return;
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &x->pr->tr[tr].trace;
		struct claim *c;

		if (!r->valid || r->overhead_ns >= 0)
			continue;
		c = claim_add(x->cl, "noise", "The traced %s run was %s faster than its untraced twin: "
			      "the untraced figures carry at least that much run-to-run noise (less than "
			      "the %s difference); --repeat 5 measures it.", tr_word[tr],
			      dur(-r->overhead_ns, a), dur(diff, b));
		claim_str(c, "transport", transport_names[tr]);
		claim_num(c, "traced_faster_ns", -r->overhead_ns);
		claim_num(c, "diff_ns", diff);
	}
}

/*
 * --think: the client's work per round trip is in both transports' round trips; the
 * transport's difference stays the same in time and shrinks as a share of the whole
 * (the connection-pool question: a pooled connection's requests are this case).
 */
static void explain_think(const struct pair_ctx *x)
{
	const struct pair_result *pr = x->pr;
	double think = pr->tr[TR_UNIX].cfg.think_ns;
	/* medians: robust to the scheduler's outliers, which a mean of a busy machine is not */
	double u = 2.0 * pr->tr[TR_UNIX].untraced.latency.p50, t = 2.0 * pr->tr[TR_TCP].untraced.latency.p50;
	double u0 = u - think, t0 = t - think;
	char a[32], b[32], c[32], d[32], e[32];
	struct claim *cl;

	if (!think || t <= 0 || t0 <= 0)
		return;
	cl = claim_add(x->cl, "think", "With %s of application work per round trip (--think), a "
		       "round trip takes UDS %s and TCP %s (medians): UDS saves %.0f%% of it, against "
		       "%.0f%% of the transport's part alone (%s vs %s). The difference stays about "
		       "the same in time; as the application's own time grows, it becomes a smaller "
		       "share of each request.", dur(think, a), dur(u, b), dur(t, c),
		       100 * (1 - u / t), 100 * (1 - u0 / t0), dur(u0, d), dur(t0, e));
	claim_num(cl, "think_ns", think);
	claim_num(cl, "unix_round_trip_ns", u);
	claim_num(cl, "tcp_round_trip_ns", t);
}

/* "with no application work", "with 100 us of application work per round trip" */
static const char *work_words(uint64_t think, char *buf, size_t len)
{
	char d[32];

	if (!think)
		snprintf(buf, len, "with no application work");
	else
		snprintf(buf, len, "with %s of application work per round trip", dur(think, d));
	return buf;
}

void explain_think_claims(const struct comparison *cmp, struct claims *out)
{
	const struct pair_result *p[MAX_THINKS];
	int n = think_curve(cmp, p, MAX_THINKS), k;
	double u[2], t[2], save[2];
	long pct[2];
	char w[2][96], a[32], b[32], c[32], d[32];
	struct claim *cl;

	if (n < 2)
		return;
	for (k = 0; k < 2; k++) {
		const struct pair_result *pr = p[k ? n - 1 : 0];

		/* the round trip the client measures, work included: medians */
		u[k] = 2.0 * pr->tr[TR_UNIX].untraced.latency.p50;
		t[k] = 2.0 * pr->tr[TR_TCP].untraced.latency.p50;
		if (u[k] <= 0 || t[k] <= 0)
			return;
		save[k] = t[k] - u[k];
		pct[k] = lround(100 * (1 - u[k] / t[k]));
		work_words(pair_think(pr), w[k], sizeof(w[k]));
	}
	cl = claim_add(out, "think_curve", "Across think times (pingpong, %llu B, cpu=%s; round-trip "
		       "medians): %s, UDS's round trip is %ld%% %s than TCP's (%s vs %s); %s, it is "
		       "%ld%% %s (%s vs %s). ", (unsigned long long)p[0]->msg_size,
		       place_names[p[0]->place], w[0], labs(pct[0]), pct[0] >= 0 ? "shorter" : "longer",
		       dur(u[0], a), dur(t[0], b), w[1], labs(pct[1]),
		       pct[1] >= 0 ? "shorter" : "longer", dur(u[1], c), dur(t[1], d));
	dur(fabs(save[0]), a);
	dur(fabs(save[1]), b);
	if (pct[1] < pct[0])
		claim_more(cl, "The advantage shrinks as the application's own time grows: TCP's round "
			   "trip is %s%s longer with the least work and %s%s with the most, a smaller "
			   "share of a longer round trip.", save[0] < 0 ? "-" : "", a,
			   save[1] < 0 ? "-" : "", b);
	else
		claim_more(cl, "Here the advantage did not shrink (%ld%% to %ld%%): the work's own "
			   "variation outweighs the transport's difference in these runs; rerun with a "
			   "larger --count or --repeat.", pct[0], pct[1]);
	for (k = 0; k < 2; k++) {
		claim_num(cl, k ? "most_think_ns" : "least_think_ns", pair_think(p[k ? n - 1 : 0]));
		claim_num(cl, k ? "most_unix_ns" : "least_unix_ns", u[k]);
		claim_num(cl, k ? "most_tcp_ns" : "least_tcp_ns", t[k]);
	}
}

void explain_think_curve(const struct comparison *cmp, FILE *f)
{
	struct claims *cl = calloc(1, sizeof(*cl));

	if (!cl)
		return;
	explain_think_claims(cmp, cl);
	claims_print(cl, f);
	free(cl);
}

/*
 * Stream and connect are CPU-bound: what each transport's processes spent per message
 * (connection), from the kernel's accounting of the untraced run.
 */
static void explain_cpu(const struct pair_ctx *x)
{
	const struct wl_result *r[TR__COUNT] = { &x->pr->tr[TR_UNIX].untraced,
						 &x->pr->tr[TR_TCP].untraced };
	const char *per = x->pr->mode == WL_CONNECT ? "connection" : "message";
	char s[6][32];
	struct claim *c;
	int tr;

	if (x->pr->mode == WL_PINGPONG || !r[0]->has_cpu || !r[1]->has_cpu)
		return;
	c = claim_add(x->cl, "cpu", "Per %s, the client and server processes used UDS %s of CPU "
		      "and TCP %s (user %s + system %s, and %s + %s: the split is sampled by the "
		      "timer tick)", per, dur(r[0]->user_ns + r[0]->sys_ns, s[0]),
		      dur(r[1]->user_ns + r[1]->sys_ns, s[1]), dur(r[0]->user_ns, s[2]),
		      dur(r[0]->sys_ns, s[3]), dur(r[1]->user_ns, s[4]), dur(r[1]->sys_ns, s[5]));
	claim_more(c, "; softirq counted on their CPUs: %s and %s (tick-sampled, any work there).",
		   dur(r[0]->softirq_ns, s[0]), dur(r[1]->softirq_ns, s[1]));
	for (tr = 0; tr < TR__COUNT; tr++) {
		char key[CLAIM_STR];

		snprintf(key, sizeof(key), "%s_user_ns", transport_names[tr]);
		claim_num(c, key, r[tr]->user_ns);
		snprintf(key, sizeof(key), "%s_system_ns", transport_names[tr]);
		claim_num(c, key, r[tr]->sys_ns);
		snprintf(key, sizeof(key), "%s_softirq_ns", transport_names[tr]);
		claim_num(c, key, r[tr]->softirq_ns);
	}
}

/* The first claim: which transport is faster, untraced, and whether that is beyond noise. */
static void headline(const struct pair_ctx *x)
{
	const struct pair_result *pr = x->pr;
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;
	unsigned long long size = pr->msg_size;
	double un, tn;		/* ns per unit, lower is faster */
	char a[32], b[32], why[256];
	struct claim *c;
	bool noise;
	int fast;

	switch (pr->mode) {
	case WL_PINGPONG:
		un = u->latency.p50;
		tn = t->latency.p50;
		c = claim_add(x->cl, "latency", "UDS delivers a %llu B message in %s (median one-way), "
			      "TCP in %s", size, dur(un, a), dur(tn, b));
		claim_num(c, "unix_p50_ns", un);
		claim_num(c, "tcp_p50_ns", tn);
		break;
	case WL_STREAM:
		un = u->msgs_per_sec > 0 ? 1e9 / u->msgs_per_sec : 0;
		tn = t->msgs_per_sec > 0 ? 1e9 / t->msgs_per_sec : 0;
		c = claim_add(x->cl, "throughput", "Streaming %llu B messages, UDS moves %.2fx TCP's "
			      "messages per second", size, u->msgs_per_sec / MAX(t->msgs_per_sec, 1));
		claim_num(c, "unix_msgs_per_sec", u->msgs_per_sec);
		claim_num(c, "tcp_msgs_per_sec", t->msgs_per_sec);
		break;
	case WL_CONNECT:
		un = u->conns_per_sec > 0 ? 1e9 / u->conns_per_sec : 0;
		tn = t->conns_per_sec > 0 ? 1e9 / t->conns_per_sec : 0;
		c = claim_add(x->cl, "connections", "Connection set-up plus one request/response: UDS "
			      "does %.2fx TCP's connections per second", u->conns_per_sec /
			      MAX(t->conns_per_sec, 1));
		claim_num(c, "unix_conns_per_sec", u->conns_per_sec);
		claim_num(c, "tcp_conns_per_sec", t->conns_per_sec);
		break;
	default:
		return;
	}
	if (un <= 0 || tn <= 0) {
		claim_more(c, ".");
		return;
	}
	noise = within_noise(pr, un, tn, c, why, sizeof(why));
	fast = un < tn ? TR_UNIX : TR_TCP;
	claim_str(c, "faster", noise ? "none" : transport_names[fast]);
	if (noise)
		claim_more(c, ": a %.0f%% difference, within run-to-run noise (%s); rerun with %s to "
			   "tell them apart.", 100 * fabs(un - tn) / MAX(un, tn), why,
			   pr->tr[TR_UNIX].runs > 1 ? "a larger --repeat or --count" : "--repeat 5");
	else if (pr->mode == WL_PINGPONG)
		claim_more(c, ": %s takes %.0f%% less time.", tr_word[fast],
			   100 * (1 - MIN(un, tn) / MAX(un, tn)));
	else
		claim_more(c, ": %s is faster.", tr_word[fast]);
	if (!noise)
		disturbed(x, fabs(un - tn));
	if (pr->mode == WL_PINGPONG)
		explain_think(x);
	explain_cpu(x);
}

/* The payload copy stages, as the stage table marks them. */
static double copy_ns(const struct trace_result *t)
{
	double sum = 0;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && stage_is_copy(t->stages[i].name))
			sum += t->stages[i].ns_per_msg;
	return sum;
}

/*
 * Did a message cross in several pieces on this transport? Pingpong and connect count one
 * message's own chunks; a stream send() call's count also holds earlier calls' data that left
 * during it, so there only a message larger than one piece is said to cross in several (also
 * where its chunks went uncounted: no data-ready boundary, NET_RX deferred).
 */
static bool in_pieces(const struct pair_result *pr, const struct trace_result *r, int tr)
{
	if (!r->bulk_messages)
		return false;
	if (pr->mode == WL_STREAM)
		return pr->msg_size > (tr == TR_UNIX ? UDS_PIECE_MAX : TCP_PIECE_MAX);
	return r->chunks_counted && r->chunks_per_msg >= 1.05;
}

/* Large messages: how each transport cut them up, who waited, what the copies cost. */
static void explain_chunks(const struct pair_ctx *x)
{
	const struct pair_result *pr = x->pr;
	const struct trace_result *r[TR__COUNT] = { x->u, x->t };
	static const char *const piece[TR__COUNT] = { "skbs on UDS (at most ~36 KiB each)",
						      "segments on TCP (up to 64 KiB with GSO)" };
	const char *per = pr->mode == WL_STREAM ? "send() call" : "message";
	bool pieces[TR__COUNT], any = false;
	char a[32], b[32], c[32], d[32];
	struct claim *cl = NULL;
	int tr;

	if (!x->u->bulk_messages && !x->t->bulk_messages)
		return;
	for (tr = 0; tr < TR__COUNT; tr++) {
		pieces[tr] = in_pieces(pr, r[tr], tr);
		if (!pieces[tr])
			continue;
		if (!cl)
			cl = claim_add(x->cl, "pieces", "A %llu B %s crosses in several pieces: ",
				       (unsigned long long)pr->msg_size,
				       pr->mode == WL_STREAM ? "send() call" : "message");
		else
			claim_more(cl, " and ");
		if (r[tr]->chunks_counted) {
			claim_more(cl, "%.1f", r[tr]->chunks_per_msg);
			claim_num(cl, tr ? "tcp_chunks_per_msg" : "unix_chunks_per_msg",
				  r[tr]->chunks_per_msg);
		} else {
			claim_more(cl, "uncounted");
		}
		claim_more(cl, " %s per sliced %s (%llu of %llu)", piece[tr], per,
			   (unsigned long long)r[tr]->bulk_messages, (unsigned long long)r[tr]->messages);
		any = true;
	}
	if (cl)
		claim_more(cl, ".");
	for (tr = 0; tr < TR__COUNT; tr++) {
		if (pieces[tr] || !r[tr]->bulk_messages)
			continue;
		/* sliced for another reason: more than one data-ready or a sleep in the call */
		cl = claim_add(x->cl, "sliced", "%llu of %s's %llu %ss saw more than one data-ready "
			       "or slept for buffer space before they ended; their time after the "
			       "first data-ready is in the bulk;* rows.",
			       (unsigned long long)r[tr]->bulk_messages, tr_word[tr],
			       (unsigned long long)r[tr]->messages, per);
		claim_str(cl, "transport", transport_names[tr]);
		claim_num(cl, "bulk_messages", r[tr]->bulk_messages);
		claim_num(cl, "messages", r[tr]->messages);
	}
	for (tr = 0; tr < TR__COUNT; tr++) {
		if (r[tr]->sleeps_per_msg < 0.05)
			continue;
		cl = claim_add(x->cl, "sleeps", "On %s the sender slept %.1f times per sliced %s "
			       "waiting for send-buffer space.", tr_word[tr], r[tr]->sleeps_per_msg, per);
		claim_str(cl, "transport", transport_names[tr]);
		claim_num(cl, "sleeps_per_msg", r[tr]->sleeps_per_msg);
	}
	if (!any)
		return;
	cl = claim_add(x->cl, "copies", "Payload copies take UDS %s of its %s and TCP %s of its %s.",
		       dur(copy_ns(x->u), a), dur(message_ns(x->u), b), dur(copy_ns(x->t), c),
		       dur(message_ns(x->t), d));
	claim_num(cl, "unix_copy_ns", copy_ns(x->u));
	claim_num(cl, "unix_ns", message_ns(x->u));
	claim_num(cl, "tcp_copy_ns", copy_ns(x->t));
	claim_num(cl, "tcp_ns", message_ns(x->t));
}

/* Do "phase;a+b" and "phase;b+c" share a boundary leaf? */
static bool leaves_overlap(const char *x, const char *y)
{
	const char *sx = strchr(x, ';'), *sy = strchr(y, ';'), *p, *q;

	if (!sx || !sy || sx - x != sy - y || strncmp(x, y, sx - x))
		return false;
	for (p = sx + 1; *p; p += strcspn(p, "+"), p += *p == '+')
		for (q = sy + 1; *q; q += strcspn(q, "+"), q += *q == '+')
			if (strcspn(p, "+") == strcspn(q, "+") && !strncmp(p, q, strcspn(p, "+")))
				return true;
	return false;
}

/*
 * A stage comparable across the transports: both have it, or the other has nothing that holds
 * part of it. Where a mode merged boundaries on one transport only (tracepoint: UDS's
 * send;syscall+sock against TCP's send;syscall and send;sock+tcp_ip_out), neither side's
 * stage is compared alone.
 */
static bool comparable(const struct trace_result *other, const char *name)
{
	int i;

	if (!strcmp(name, "app;gap"))
		return false;
	if (trace_stage(other, name))
		return true;
	for (i = 0; i < other->n_stages; i++)
		if (!other->stages[i].extra && leaves_overlap(name, other->stages[i].name))
			return false;
	return true;
}

/* The one comparable stage that moves the difference most, whichever way it goes. */
static void explain_largest_difference(const struct pair_ctx *x)
{
	const struct trace_result *r[TR__COUNT] = { x->u, x->t };
	const char *name = NULL;
	double best = 0;
	char a[32];
	struct claim *c;
	int tr, i;

	for (tr = 0; tr < TR__COUNT; tr++)
		for (i = 0; i < r[tr]->n_stages; i++) {
			const char *n = r[tr]->stages[i].name;
			double d = stage_ns(x->t, n) - stage_ns(x->u, n);

			if (r[tr]->stages[i].extra || !comparable(r[!tr], n))
				continue;
			if (fabs(d) > fabs(best)) {
				best = d;
				name = n;
			}
		}
	if (!name)
		return;
	if (!trace_stage(x->u, name) || !trace_stage(x->t, name))
		c = claim_add(x->cl, "largest_difference", "The largest single difference is %s: %s "
			      "per %s that only %s has.", name, dur(fabs(best), a),
			      x->pr->mode == WL_STREAM ? "call" : "message", best > 0 ? "TCP" : "UDS");
	else
		c = claim_add(x->cl, "largest_difference", "The largest single difference is %s: %s "
			      "%s on TCP than on UDS.", name, dur(fabs(best), a),
			      best > 0 ? "longer" : "shorter");
	claim_str(c, "stage", name);
	claim_num(c, "unix_ns", stage_ns(x->u, name));
	claim_num(c, "tcp_ns", stage_ns(x->t, name));
}

/* Share of the stages in `calls` of n: "82 of 2000 send() calls (4%)". */
static double share(uint64_t calls, uint64_t n)
{
	return n ? (double)calls / n : 0;
}

/* Stream: per send() call, how often TCP transmitted inside the call and woke the receiver. */
static void explain_stream(const struct pair_ctx *x, bool noise, int fast)
{
	const struct trace_result *u = x->u, *t = x->t;
	const struct stage_stat *wu = trace_stage(u, "deliver;enqueue_wakeup"),
				*wt = trace_stage(t, "deliver;enqueue_wakeup");
	double send_u = stage_sum(u, "send;") + stage_sum(u, "deliver;") + stage_sum(u, "bulk;"),
	       send_t = stage_sum(t, "send;") + stage_sum(t, "deliver;") + stage_sum(t, "rx_softirq;") +
			stage_sum(t, "bulk;");
	double fu = wu ? share(wu->count, u->messages) : 0, ft = wt ? share(wt->count, t->messages) : 0;
	char a[32], b[32], c[32];
	struct claim *cl;

	cl = claim_add(x->cl, "stream_send_side", "Per send() call, TCP spends %s in stages UDS "
		       "does not have (TCP/IP output, loopback device, receive softirq); per call the "
		       "send side costs UDS %s and TCP %s.", dur(tcp_only_ns(t), a), dur(send_u, b),
		       dur(send_t, c));
	claim_num(cl, "tcp_only_ns", tcp_only_ns(t));
	claim_num(cl, "unix_send_ns", send_u);
	claim_num(cl, "tcp_send_ns", send_t);
	if (t->messages && t->recv_calls) {
		cl = claim_add(x->cl, "stream_xmit", "TCP put a segment on the loopback device in "
			       "%.0f%% of its send() calls (%llu of %llu)", 100 * share(t->xmit_calls,
			       t->messages), (unsigned long long)t->xmit_calls,
			       (unsigned long long)t->messages);
		claim_more(cl, t->xmit_calls < t->messages ? "; the others' data waited in its write "
			   "queue and left outside the call." : ".");
		claim_num(cl, "xmit_calls", t->xmit_calls);
		claim_num(cl, "messages", t->messages);
	}
	if (!wu || !wt || !u->messages || !t->messages)
		return;
	cl = claim_add(x->cl, "stream_wakeups", "The receiver's data-ready callback "
		       "(deliver;enqueue_wakeup, which wakes a sleeping receiver) ran in %.0f%% of UDS's "
		       "send() calls (%llu of %llu) and %.0f%% of TCP's (%llu of %llu).", 100 * fu,
		       (unsigned long long)wu->count, (unsigned long long)u->messages, 100 * ft,
		       (unsigned long long)wt->count, (unsigned long long)t->messages);
	claim_num(cl, "unix_calls", wu->count);
	claim_num(cl, "unix_messages", u->messages);
	claim_num(cl, "tcp_calls", wt->count);
	claim_num(cl, "tcp_messages", t->messages);
	/* the cause, only where the counters of this run point to one */
	if (noise)
		return;
	if (fast == TR_TCP && ft < fu / 2) {
		cl = claim_add(x->cl, "stream_cause", "TCP's lead goes with fewer receiver wakeups: "
			       "it ran the data-ready callback in %.0f%% of its send() calls against "
			       "UDS's %.0f%%, batching several messages per wakeup.", 100 * ft, 100 * fu);
		claim_str(cl, "faster", "tcp");
		claim_num(cl, "unix_wakeup_share", fu);
		claim_num(cl, "tcp_wakeup_share", ft);
	} else if (fast == TR_UNIX && send_u < send_t) {
		cl = claim_add(x->cl, "stream_cause", "UDS's lead goes with a cheaper send side per "
			       "call (%s vs %s).", dur(send_u, a), dur(send_t, b));
		claim_str(cl, "faster", "unix");
		claim_num(cl, "unix_send_ns", send_u);
		claim_num(cl, "tcp_send_ns", send_t);
	}
}

/* Stages both have where UDS pays more. */
static double explain_uds_pays_more(const struct pair_ctx *x)
{
	const struct trace_result *u = x->u, *t = x->t;
	struct claim *c = NULL;
	double sum = 0;
	int i;

	for (i = 0; i < u->n_stages; i++) {
		double tn = stage_ns(t, u->stages[i].name), un = u->stages[i].ns_per_msg;

		if (u->stages[i].extra || tn <= 0 || un - tn < PAYS_MORE_NS)
			continue;
		if (!c)
			c = claim_add(x->cl, "uds_pays_more", "Where UDS pays more than TCP: ");
		else
			claim_more(c, ", ");
		claim_more(c, "%s (+%.0f ns)", u->stages[i].name, un - tn);
		claim_num(c, u->stages[i].name, un - tn);
		sum += un - tn;
	}
	if (c)
		claim_more(c, ".");
	return sum;
}

/* TCP-only stages and their share of the per-message difference. */
static void explain_tcp_only(const struct pair_ctx *x, double diff, double big)
{
	const struct trace_result *t = x->t;
	const struct stage_stat *inl = trace_stage(t, "rx_softirq;backlog"),
				*def = trace_stage(t, "rx_softirq;deferred");
	double only = tcp_only_ns(t);
	char a[32], b[32], d[32];
	struct claim *c;

	if (only <= 0)
		return;
	c = claim_add(x->cl, "tcp_only", "TCP pays %s per message in stages UDS does not have: "
		      "TCP/IP output, the loopback device and the NET_RX softirq that runs IP and TCP "
		      "input", dur(only, a));
	claim_num(c, "tcp_only_ns", only);
	claim_num(c, "diff_ns", diff);
	if (inl && t->messages) {
		claim_more(c, " (inside the sender's send() for %llu of %llu messages%s)",
			   (unsigned long long)inl->count, (unsigned long long)t->messages,
			   def && def->count ? ", deferred to ksoftirqd or a later interrupt exit for "
			   "the rest" : "");
		claim_num(c, "softirq_inline", inl->count);
		claim_num(c, "softirq_deferred", def ? def->count : 0);
		claim_num(c, "messages", t->messages);
	}
	if (x->cmp->stage_granularity && !strcmp(x->cmp->stage_granularity, "tracepoint"))
		claim_more(c, "; in tracepoint mode send;sock+tcp_ip_out also holds TCP's copy from user");
	if (fabs(diff) < NOISE_FLOOR * big) {
		claim_more(c, ". The two messages differ by only %s (under %.0f %%), so no share of "
			   "the difference is given.", dur(fabs(diff), b), 100 * NOISE_FLOOR);
		return;
	}
	if (diff <= 0) {
		claim_more(c, ", yet its message is %s shorter than UDS's: UDS loses more than that "
			   "in the other stages.", dur(-diff, b));
		return;
	}
	claim_num(c, "share_pct", 100 * only / diff);
	if (only <= diff)
		claim_more(c, ". That is %.0f%% of the difference; the rest is in the other stages.",
			   100 * only / diff);
	else
		claim_more(c, ". That is %.0f%% of the difference: UDS pays %s of it back in the other "
			   "stages, where it is slower than TCP.", 100 * only / diff,
			   dur(only - diff, d));
}

/* Waiting for a CPU as both transports' largest stage, with the placement actually used. */
static void explain_wait_cpu(const struct pair_ctx *x)
{
	const struct stage_stat *big_u = largest_stage(x->u), *big_t = largest_stage(x->t);
	const struct wl_result *wu = &x->pr->tr[TR_UNIX].untraced, *wt = &x->pr->tr[TR_TCP].untraced;
	double su = stage_sum(x->u, "sched;"), st = stage_sum(x->t, "sched;"), only = tcp_only_ns(x->t);
	char a[32], b[32];
	struct claim *c;

	if (!big_u || !big_t || strcmp(big_u->name, "sched;wait_cpu") ||
	    strcmp(big_t->name, "sched;wait_cpu"))
		return;
	c = claim_add(x->cl, "wait_cpu", "Waiting for a CPU is the largest stage for both (UDS %s, "
		      "TCP %s)", dur(su, a), dur(st, b));
	claim_num(c, "unix_ns", su);
	claim_num(c, "tcp_ns", st);
	claim_num(c, "client_cpu", wu->client_cpu);
	claim_num(c, "server_cpu", wu->server_cpu);
	if (wu->client_cpu < 0 || wt->client_cpu < 0 || wu->server_cpu < 0 || wt->server_cpu < 0 ||
	    (wu->client_cpu == wu->server_cpu) != (wt->client_cpu == wt->server_cpu)) {
		claim_more(c, ".");
		return;
	}
	if (wu->client_cpu == wu->server_cpu) {
		claim_more(c, ": client and server ran on one CPU, so the receiver runs only once the "
			   "sender yields it.");
		return;
	}
	claim_more(c, ": client and server ran on different CPUs, so the receiver waits for a "
		   "cross-CPU wakeup");
	if (st > only && only > 0) {
		claim_more(c, ", which costs TCP more than its stages UDS does not have (%s).",
			   dur(only, a));
		claim_num(c, "tcp_only_ns", only);
	} else {
		claim_more(c, ".");
	}
}

/*
 * Connect mode: a connection is connect(), the request and the response (two messages) and
 * the rest (close(), the server's turn-around, the programs' code between calls), which is
 * what the stages leave of the traced connection time. accept() overlaps connect() and the
 * request, so it is reported beside them, not added.
 */
static void explain_connection(const struct pair_ctx *x)
{
	const struct trace_result *r[TR__COUNT] = { x->u, x->t };
	double part[TR__COUNT][3], whole[TR__COUNT], acc[TR__COUNT], d[3], diff;
	static const char *const part_name[3] = { "connect()", "the request and response",
						  "the rest" };
	static const char *const part_key[3] = { "connect", "messages", "rest" };
	char key[CLAIM_STR];
	char s[8][32];
	struct claim *c;
	int tr, k, top = 0;

	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct stage_stat *conn = trace_stage(r[tr], "conn;connect");

		if (!conn || !conn->count || !r[tr]->traced.latency.mean)
			return;
		whole[tr] = r[tr]->traced.latency.mean;
		part[tr][0] = conn->ns_per_msg;
		part[tr][1] = message_ns(r[tr]) * r[tr]->messages / conn->count;
		part[tr][2] = whole[tr] - part[tr][0] - part[tr][1];
		acc[tr] = stage_ns(r[tr], "conn;accept");
	}
	c = claim_add(x->cl, "connection", "Per connection (traced means): connect() takes UDS %s "
		      "and TCP %s, the request and response (send() entry to recv() return, %.1f and "
		      "%.1f messages) %s and %s, the rest (close(), the server's turn-around, code "
		      "between the calls) %s and %s, adding up to the measured %s and %s; the stages "
		      "cover %.0f%% and %.0f%% of it.", dur(part[0][0], s[0]), dur(part[1][0], s[1]),
		      (double)x->u->messages / trace_stage(x->u, "conn;connect")->count,
		      (double)x->t->messages / trace_stage(x->t, "conn;connect")->count,
		      dur(part[0][1], s[2]), dur(part[1][1], s[3]), dur(part[0][2], s[4]),
		      dur(part[1][2], s[5]), dur(whole[0], s[6]), dur(whole[1], s[7]),
		      100 * (part[0][0] + part[0][1]) / whole[0], 100 * (part[1][0] + part[1][1]) / whole[1]);
	for (tr = 0; tr < TR__COUNT; tr++) {
		for (k = 0; k < 3; k++) {
			snprintf(key, sizeof(key), "%s_%s_ns", transport_names[tr], part_key[k]);
			claim_num(c, key, part[tr][k]);
		}
		snprintf(key, sizeof(key), "%s_connection_ns", transport_names[tr]);
		claim_num(c, key, whole[tr]);
	}
	c = claim_add(x->cl, "accept", "The server's accept() returned UDS %s and TCP %s after the "
		      "client's connect() began; that overlaps connect() and the request, so it is not "
		      "added.", dur(acc[0], s[0]), dur(acc[1], s[1]));
	claim_num(c, "unix_accept_ns", acc[0]);
	claim_num(c, "tcp_accept_ns", acc[1]);

	diff = whole[1] - whole[0];
	for (k = 0; k < 3; k++) {
		d[k] = part[1][k] - part[0][k];
		if (diff > 0 ? d[k] > d[top] : d[k] < d[top])
			top = k;
	}
	if (fabs(diff) < NOISE_FLOOR * MAX(whole[0], whole[1])) {
		c = claim_add(x->cl, "connection_difference", "Traced, the connections differ by only "
			      "%s (under %.0f %%), so no part is named as the difference.",
			      dur(fabs(diff), s[0]), 100 * NOISE_FLOOR);
		claim_num(c, "diff_ns", diff);
		return;
	}
	c = claim_add(x->cl, "connection_difference", "Of the %s by which %s's traced connection "
		      "is longer, connect() makes %s, the request and response %s, the rest %s: the "
		      "largest part is %s", dur(fabs(diff), s[0]), diff > 0 ? "TCP" : "UDS",
		      dur(d[0] * (diff > 0 ? 1 : -1), s[1]), dur(d[1] * (diff > 0 ? 1 : -1), s[2]),
		      dur(d[2] * (diff > 0 ? 1 : -1), s[3]), part_name[top]);
	claim_num(c, "diff_ns", diff);
	for (k = 0; k < 3; k++) {
		snprintf(key, sizeof(key), "%s_ns", part_key[k]);
		claim_num(c, key, d[k]);
	}
	claim_str(c, "largest", part_key[top]);
	if (fabs(d[top]) > fabs(diff))
		claim_more(c, " (more than all of it: the parts where %s is faster pay %s back)",
			   diff > 0 ? "TCP" : "UDS", dur(fabs(d[top]) - fabs(diff), s[4]));
	claim_more(c, ".");
}

void explain_pair_claims(const struct comparison *cmp, const struct pair_result *pr,
			 struct claims *out)
{
	struct pair_ctx x = { cmp, pr, &pr->tr[TR_UNIX].trace, &pr->tr[TR_TCP].trace, out };
	double diff, msg_u, msg_t;
	char a[32], b[32], c[32];
	const struct claim_value *nv, *fv;
	struct claim *cl;

	memset(out, 0, sizeof(*out));
	headline(&x);
	if (!x.u->valid || !x.t->valid)
		return;
	nv = out->n ? claim_get(&out->c[0], "noise") : NULL;
	fv = out->n ? claim_get(&out->c[0], "faster") : NULL;
	if (pr->mode == WL_STREAM) {
		explain_stream(&x, !nv || nv->num, fv && !strcmp(fv->str, "tcp") ? TR_TCP : TR_UNIX);
		explain_chunks(&x);
		explain_largest_difference(&x);
		return;
	}
	if (pr->mode == WL_CONNECT)
		explain_connection(&x);
	msg_u = message_ns(x.u);
	msg_t = message_ns(x.t);
	diff = msg_t - msg_u;
	cl = claim_add(out, "message_cost", "Traced, a message costs UDS %s and TCP %s from send() "
		       "entry to recv() return (difference %s).", dur(msg_u, a), dur(msg_t, b),
		       dur(diff, c));
	claim_num(cl, "unix_ns", msg_u);
	claim_num(cl, "tcp_ns", msg_t);
	explain_tcp_only(&x, diff, MAX(msg_u, msg_t));
	explain_uds_pays_more(&x);
	explain_chunks(&x);
	explain_largest_difference(&x);
	explain_wait_cpu(&x);
}

void explain_pair(const struct comparison *cmp, const struct pair_result *pr, FILE *f)
{
	struct claims *cl = calloc(1, sizeof(*cl));

	if (!cl)
		return;
	explain_pair_claims(cmp, pr, cl);
	claims_print(cl, f);
	free(cl);
}
