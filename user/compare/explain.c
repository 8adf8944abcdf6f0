// SPDX-License-Identifier: GPL-2.0
/*
 * The plain-language explanation under each comparison, generated from the
 * numbers only: what each transport pays per message, which stages only TCP
 * has, and what share of the difference they explain. It says so when UDS
 * does not win, and why, rather than telling the expected story.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "util.h"

/* Stages on TCP's network path: UDS hands the skb straight to the peer's queue. */
static bool tcp_only_stage(const char *name)
{
	return strstr(name, "tcp_ip_out") || strstr(name, "dev_xmit") || !strncmp(name, "rx_softirq", 10);
}

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

static const struct stage_stat *largest_stage(const struct trace_result *t)
{
	const struct stage_stat *best = NULL;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && (!best || t->stages[i].ns_per_msg > best->ns_per_msg))
			best = &t->stages[i];
	return best;
}

/*
 * --think: the client's work per round trip is in both transports' round trips; the
 * transport's difference stays the same in time and shrinks as a share of the whole
 * (the connection-pool question: a pooled connection's requests are this case).
 */
static void explain_think(const struct pair_result *pr, FILE *f)
{
	double think = pr->tr[TR_UNIX].cfg.think_ns;
	/* medians: robust to the scheduler's outliers, which a mean of a busy machine is not */
	double u = 2.0 * pr->tr[TR_UNIX].untraced.latency.p50, t = 2.0 * pr->tr[TR_TCP].untraced.latency.p50;
	double u0 = u - think, t0 = t - think;
	char a[32], b[32], c[32], d[32], e[32];

	if (!think || t <= 0 || t0 <= 0)
		return;
	fprintf(f, "With %s of application work per round trip (--think), a round trip takes UDS %s "
		"and TCP %s (medians): UDS saves %.0f%% of it, against %.0f%% of the transport's part "
		"alone (%s vs %s). The difference stays about the same in time; as the application's "
		"own time grows, it becomes a smaller share of each request.\n",
		fmt_dur(think, false, a, sizeof(a)), fmt_dur(u, false, b, sizeof(b)),
		fmt_dur(t, false, c, sizeof(c)), 100 * (1 - u / t), 100 * (1 - u0 / t0),
		fmt_dur(u0, false, d, sizeof(d)), fmt_dur(t0, false, e, sizeof(e)));
}

/* "with no application work", "with 100 us of application work per round trip" */
static const char *work_words(uint64_t think, char *buf, size_t len)
{
	char d[32];

	if (!think)
		snprintf(buf, len, "with no application work");
	else
		snprintf(buf, len, "with %s of application work per round trip",
			 fmt_dur(think, false, d, sizeof(d)));
	return buf;
}

void explain_think_curve(const struct comparison *cmp, FILE *f)
{
	const struct pair_result *p[MAX_THINKS];
	int n = think_curve(cmp, p, MAX_THINKS), k;
	double u[2], t[2], save[2];
	long pct[2];
	char w[2][96], a[32], b[32], c[32], d[32];

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
	fprintf(f, "Across think times (pingpong, %llu B, cpu=%s; round-trip medians): %s, UDS's "
		"round trip is %ld%% %s than TCP's (%s vs %s); %s, it is %ld%% %s (%s vs %s). ",
		(unsigned long long)p[0]->msg_size, place_names[p[0]->place], w[0], labs(pct[0]),
		pct[0] >= 0 ? "shorter" : "longer", fmt_dur(u[0], false, a, sizeof(a)),
		fmt_dur(t[0], false, b, sizeof(b)), w[1], labs(pct[1]),
		pct[1] >= 0 ? "shorter" : "longer", fmt_dur(u[1], false, c, sizeof(c)),
		fmt_dur(t[1], false, d, sizeof(d)));
	fmt_dur(fabs(save[0]), false, a, sizeof(a));
	fmt_dur(fabs(save[1]), false, b, sizeof(b));
	if (pct[1] < pct[0])
		fprintf(f, "The advantage shrinks as the application's own time grows: TCP's round "
			"trip is %s%s longer with the least work and %s%s with the most, a smaller share "
			"of a longer round trip.\n", save[0] < 0 ? "-" : "", a, save[1] < 0 ? "-" : "", b);
	else
		fprintf(f, "Here the advantage did not shrink (%ld%% to %ld%%): the work's own "
			"variation outweighs the transport's difference in these runs; rerun with a "
			"larger --count or --repeat.\n", pct[0], pct[1]);
}

static void explain_untraced(const struct pair_result *pr, FILE *f)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced, *t = &pr->tr[TR_TCP].untraced;
	char a[32], b[32];

	switch (pr->mode) {
	case WL_PINGPONG:
		if (u->latency.p50 < t->latency.p50)
			fprintf(f, "UDS delivers a %llu B message in %s (median one-way), TCP in %s: UDS takes "
				"%.0f%% less time.\n", (unsigned long long)pr->msg_size,
				fmt_dur(u->latency.p50, false, a, sizeof(a)),
				fmt_dur(t->latency.p50, false, b, sizeof(b)),
				100.0 * (1 - (double)u->latency.p50 / t->latency.p50));
		else
			fprintf(f, "UDS does not win here: median one-way %s vs TCP %s.\n",
				fmt_dur(u->latency.p50, false, a, sizeof(a)),
				fmt_dur(t->latency.p50, false, b, sizeof(b)));
		explain_think(pr, f);
		break;
	case WL_STREAM:
		fprintf(f, "Streaming %llu B messages, UDS moves %.2fx TCP's messages per second%s.\n",
			(unsigned long long)pr->msg_size, u->msgs_per_sec / MAX(t->msgs_per_sec, 1),
			u->msgs_per_sec < t->msgs_per_sec ?
			" (TCP wins: on one CPU it batches segments while the receiver sleeps, and "
			"each UDS send is its own skb and wakeup)" : "");
		break;
	case WL_CONNECT:
		fprintf(f, "Connection set-up plus one request/response: UDS does %.2fx TCP's connections "
			"per second (no handshake segments, no SYN/accept queue processing in softirq).\n",
			u->conns_per_sec / MAX(t->conns_per_sec, 1));
		break;
	default:
		break;
	}
}

/* The copy stages: payload copies are in stages whose names say "copy". */
static double copy_ns(const struct trace_result *t)
{
	double sum = 0;
	int i;

	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && strstr(t->stages[i].name, "copy"))
			sum += t->stages[i].ns_per_msg;
	return sum;
}

/* Large messages: how each transport cut them up, who waited, what the copies cost. */
static void explain_chunks(const struct pair_result *pr, const struct trace_result *u,
			   const struct trace_result *t, FILE *f)
{
	char a[32], b[32], c[32], d[32];

	if (!u->bulk_messages && !t->bulk_messages)
		return;
	const char *per = pr->mode == WL_STREAM ? "send() call" : "message";
	char nu[16] = "uncounted", nt[16] = "uncounted";

	/* chunks are counted at data-ready: none where the mode cannot see it */
	if (u->chunks_per_msg > 0)
		snprintf(nu, sizeof(nu), "%.1f", u->chunks_per_msg);
	if (t->chunks_per_msg > 0)
		snprintf(nt, sizeof(nt), "%.1f", t->chunks_per_msg);
	fprintf(f, "A %llu B message crosses in several pieces: %s skbs on UDS (at most ~36 KiB each) "
		"and %s segments on TCP (up to 64 KiB with GSO) per %s; the sender slept %.1f "
		"(UDS) and %.1f (TCP) times per %s waiting for send-buffer space while the receiver "
		"copied. Payload copies take UDS %s of its %s and TCP %s of its %s.\n",
		(unsigned long long)pr->msg_size, nu, nt, per,
		u->sleeps_per_msg, t->sleeps_per_msg, per,
		fmt_dur(copy_ns(u), false, a, sizeof(a)),
		fmt_dur(u->stage_sum_ns - stage_ns(u, "app;gap"), false, b, sizeof(b)),
		fmt_dur(copy_ns(t), false, c, sizeof(c)),
		fmt_dur(t->stage_sum_ns - stage_ns(t, "app;gap"), false, d, sizeof(d)));
}

/* The one stage that moves the difference most, whichever way it goes. */
static void explain_largest_difference(const struct trace_result *u, const struct trace_result *t,
				       FILE *f)
{
	const char *name = NULL;
	double best = 0;
	char a[32];
	int i;

	for (i = 0; i < t->n_stages; i++) {
		double d;

		if (t->stages[i].extra || !strcmp(t->stages[i].name, "app;gap"))
			continue;
		d = t->stages[i].ns_per_msg - stage_ns(u, t->stages[i].name);
		if (fabs(d) > fabs(best)) {
			best = d;
			name = t->stages[i].name;
		}
	}
	for (i = 0; i < u->n_stages; i++) {
		double d;

		if (u->stages[i].extra || !strcmp(u->stages[i].name, "app;gap") ||
		    trace_stage(t, u->stages[i].name))
			continue;
		d = -u->stages[i].ns_per_msg;
		if (fabs(d) > fabs(best)) {
			best = d;
			name = u->stages[i].name;
		}
	}
	if (!name)
		return;
	if (!trace_stage(u, name) || !trace_stage(t, name))
		fprintf(f, "The largest single difference is %s: %s per message that only %s has.\n",
			name, fmt_dur(fabs(best), false, a, sizeof(a)), best > 0 ? "TCP" : "UDS");
	else
		fprintf(f, "The largest single difference is %s: %s %s on TCP than on UDS.\n", name,
			fmt_dur(fabs(best), false, a, sizeof(a)), best > 0 ? "longer" : "shorter");
}

/* Stream: per send() call, and how often TCP transmitted inside the call. */
static void explain_stream(const struct trace_result *u, const struct trace_result *t, double tcp_only,
			   FILE *f)
{
	char a[32], b[32], c[32];

	fprintf(f, "Per send() call, TCP spends %s in stages UDS does not have (TCP/IP output, "
		"loopback device, receive softirq); per call the send side costs UDS %s and TCP %s.\n",
		fmt_dur(tcp_only, false, a, sizeof(a)),
		fmt_dur(stage_sum(u, "send;") + stage_sum(u, "deliver;") + stage_sum(u, "bulk;"),
			false, b, sizeof(b)),
		fmt_dur(stage_sum(t, "send;") + stage_sum(t, "deliver;") + stage_sum(t, "rx_softirq;") +
			stage_sum(t, "bulk;"), false, c, sizeof(c)));
	if (t->messages && t->recv_calls)
		fprintf(f, "TCP put a segment on the loopback device in %.0f%% of its send() calls "
			"(in the others the data waited in the socket's write queue and went out "
			"later, clocked by ACKs and window updates, several messages per segment at "
			"small sizes); %s\n", 100.0 * t->xmit_calls / t->messages,
			u->bulk_messages ? "a UDS send() of this size queues several skbs, each with a "
			"receiver wakeup (below)." : "every UDS send() queues an skb of its own and runs "
			"the receiver's wakeup.");
}

/* Stages both have where UDS pays more: why TCP-only stages can exceed 100% of the difference. */
static void explain_uds_pays_more(const struct trace_result *u, const struct trace_result *t, FILE *f)
{
	size_t n = 0;
	char list[512] = "";
	int i;

	for (i = 0; i < u->n_stages; i++) {
		double tn = stage_ns(t, u->stages[i].name), un = u->stages[i].ns_per_msg;

		if (u->stages[i].extra || tn <= 0 || un - tn < 20 || n >= sizeof(list))
			continue;
		n += snprintf(list + n, sizeof(list) - n, "%s%s (+%.0f ns)", n ? ", " : "",
			      u->stages[i].name, un - tn);
	}
	if (n)
		fprintf(f, "Where UDS pays more than TCP: %s%s.\n", list,
			strstr(list, "recv;return") ? "; on UDS, consuming the skb also runs "
			"unix_write_space, which wakes the peer" : "");
}

/* The largest stages: waiting for a CPU, or TCP's biggest when UDS does not win. */
static void explain_largest(const struct pair_result *pr, const struct trace_result *u,
			    const struct trace_result *t, double diff, FILE *f)
{
	const struct stage_stat *big_u = largest_stage(u), *big_t = largest_stage(t);
	char a[32], b[32];

	if (diff <= 0)
		fprintf(f, "UDS does not win on this placement (cpu=%s): ", place_names[pr->place]);
	if (big_u && big_t && !strcmp(big_u->name, "sched;wait_cpu") && !strcmp(big_t->name, "sched;wait_cpu"))
		fprintf(f, "waiting for the CPU is the largest stage for both (UDS %s, TCP %s): %s\n",
			fmt_dur(stage_sum(u, "sched;"), false, a, sizeof(a)),
			fmt_dur(stage_sum(t, "sched;"), false, b, sizeof(b)),
			pr->place == CPU_SPLIT ? "a cross-CPU wakeup (an IPI, expensive in a VM) costs more "
			"than the whole protocol stack." :
			"the receiver runs only once the sender yields the CPU, and other work on that CPU "
			"adds to it.");
	else if (diff <= 0 && big_t)
		fprintf(f, "TCP's largest stage is %s (%s).\n", big_t->name,
			fmt_dur(big_t->ns_per_msg, false, a, sizeof(a)));
}

void explain_pair(const struct comparison *cmp, const struct pair_result *pr, FILE *f)
{
	const struct trace_result *u = &pr->tr[TR_UNIX].trace, *t = &pr->tr[TR_TCP].trace;
	double diff, msg_u, msg_t, tcp_only = 0;
	char a[32], b[32], c[32];
	int i;

	explain_untraced(pr, f);
	if (!u->valid || !t->valid)
		return;
	for (i = 0; i < t->n_stages; i++)
		if (!t->stages[i].extra && tcp_only_stage(t->stages[i].name))
			tcp_only += t->stages[i].ns_per_msg;
	if (pr->mode == WL_STREAM) {
		explain_stream(u, t, tcp_only, f);
		explain_chunks(pr, u, t, f);
		return;
	}
	/* the message itself: send() entry to recv() return, without the application gap */
	msg_u = u->stage_sum_ns - stage_ns(u, "app;gap");
	msg_t = t->stage_sum_ns - stage_ns(t, "app;gap");
	diff = msg_t - msg_u;
	fprintf(f, "Traced, a message costs UDS %s and TCP %s from send() entry to recv() return "
		"(difference %s).\n", fmt_dur(msg_u, false, a, sizeof(a)),
		fmt_dur(msg_t, false, b, sizeof(b)), fmt_dur(diff, false, c, sizeof(c)));
	if (tcp_only > 0)
		fprintf(f, "TCP pays %s per message in stages UDS does not have: TCP/IP output, the "
			"loopback device and the NET_RX softirq that runs IP and TCP input in the sender's "
			"context%s. That is %.0f%% of the difference.\n", fmt_dur(tcp_only, false, a, sizeof(a)),
			cmp->stage_granularity && !strcmp(cmp->stage_granularity, "tracepoint") ?
			" (in tracepoint mode the send;sock+tcp_ip_out stage also holds TCP's copy from user)" : "",
			diff > 0 ? 100.0 * tcp_only / diff : 0.0);
	explain_uds_pays_more(u, t, f);
	explain_chunks(pr, u, t, f);
	explain_largest_difference(u, t, f);
	explain_largest(pr, u, t, diff, f);
	if (pr->mode == WL_CONNECT)
		fprintf(f, "Per connection, connect() takes UDS %s and TCP %s.\n",
			fmt_dur(stage_ns(u, "conn;connect"), false, a, sizeof(a)),
			fmt_dur(stage_ns(t, "conn;connect"), false, b, sizeof(b)));
}
