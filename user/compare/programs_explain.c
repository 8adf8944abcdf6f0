// SPDX-License-Identifier: GPL-2.0
/*
 * The explanation under a --compare of programs, from its numbers: which run was faster and
 * by how much, how much of each run messages were in flight (the rest is the programs' own
 * work and connection set-up, which --trace does not count as messages), and for the busiest
 * flow which stage holds the per-message difference.
 */
#include <math.h>
#include <string.h>

#include "programs_report.h"
#include "util.h"

/* Why a stage differs between the transports (docs/TRACE.md, docs/STAGES.md). */
static const char *const stage_why[FS__COUNT] = {
	[FS_SEND] = "TCP's send() runs TCP/IP output, the loopback device and the receive softirq "
		    "inside the sender's own call, where UDS queues the data on the peer",
	[FS_EPOLL] = "the receiver left its epoll/poll wait later: wakeup and getting a CPU",
	[FS_BUSY] = "the receiver was running other work (other connections, its event loop) "
		    "before it read",
	[FS_RECV_BLOCKED] = "the receiver, already in recv(), was woken, scheduled and copied later",
	[FS_RECV] = "recv() itself: TCP's receive path (ACKs, window updates) is longer than "
		    "UDS's copy from the queue",
};

static void headline(const struct program_compare *pc, FILE *f)
{
	double u = pc->side[PG_UNIX].wall_ns, t = pc->side[PG_TCP].wall_ns;
	uint64_t mu = programs_messages(&pc->side[PG_UNIX]), mt = programs_messages(&pc->side[PG_TCP]);
	char a[32], b[32];

	fmt_dur(u, false, a, sizeof(a));
	fmt_dur(t, false, b, sizeof(b));
	if (t >= 1.02 * u)
		fprintf(f, "The TCP run took %.2fx as long as the unix run (%s vs %s).", t / u, b, a);
	else if (u >= 1.02 * t)
		fprintf(f, "The unix run took %.2fx as long as the TCP run (%s vs %s): UDS does not "
			"win here.", u / t, a, b);
	else
		fprintf(f, "Both runs took about as long (%s vs %s, within 2 %%): the transport is not "
			"what limits this pair.", a, b);
	if (mu && mt && fabs((double)mu - mt) > 0.02 * MAX(mu, mt))
		fprintf(f, " They did not exchange the same number of messages (%llu vs %llu): "
			"compare per message, not run times.", (unsigned long long)mu,
			(unsigned long long)mt);
	fputc('\n', f);
}

/* How much of each run messages were in flight, and what the rest is. */
static void in_flight(const struct program_compare *pc, FILE *f)
{
	const struct program_side *u = &pc->side[PG_UNIX], *t = &pc->side[PG_TCP];
	double su = programs_socket_ns(u), st = programs_socket_ns(t);
	double ou = u->wall_ns - su, ot = t->wall_ns - st;
	char a[32], b[32], c[32], d[32];

	if (su > 1.05 * u->wall_ns || st > 1.05 * t->wall_ns) {
		fprintf(f, "Messages overlapped (several connections or requests at once): their "
			"latencies add up to %.1fx (unix) and %.1fx (TCP) the run time, so the run time, "
			"not one message's latency, is the throughput.\n", su / u->wall_ns,
			st / t->wall_ns);
		return;
	}
	fprintf(f, "Messages were in flight %.0f %% of the unix run and %.0f %% of the TCP run; the "
		"rest (%s vs %s) is the programs' own work, scheduling between them and what "
		"--trace does not count as a message: connect(), accept() and close() (on TCP: the "
		"handshake and TIME_WAIT).", 100 * su / u->wall_ns, 100 * st / t->wall_ns,
		fmt_dur(ou, false, a, sizeof(a)), fmt_dur(ot, false, b, sizeof(b)));
	if (t->wall_ns > u->wall_ns)
		fprintf(f, " Of the %s the TCP run took longer, %s is message latency and %s the "
			"rest.", fmt_dur((double)t->wall_ns - u->wall_ns, false, c, sizeof(c)),
			fmt_dur(st - su, false, d, sizeof(d)), fmt_dur(ot - ou, false, a, sizeof(a)));
	fprintf(f, " The more of a run is the programs' own time, the less the transport's "
		"difference shows: this is why real programs gain less than the bare 64 B ping-pong "
		"(docs/RECIPES.md).\n");
}

/* The stage of the busiest flow pair that holds most of the per-message difference. */
static void busiest_flow(const struct program_compare *pc, FILE *f)
{
	struct flow_pair pairs[PG_MAX_PAIRS];
	int n = programs_pairs(pc, pairs, PG_MAX_PAIRS), i, st, top = -1;
	const struct flow *u = NULL, *t = NULL;
	double diff, best = 0;
	char a[32], b[32], c[32], d[32];

	for (i = 0; i < n && !u; i++)
		if (pairs[i].f[PG_UNIX] && pairs[i].f[PG_TCP]) {
			u = pairs[i].f[PG_UNIX];
			t = pairs[i].f[PG_TCP];
		}
	if (!u)
		return;
	diff = t->mean - u->mean;
	for (st = 0; st < FS__COUNT; st++) {
		double dst = t->stages[st].ns_per_msg - u->stages[st].ns_per_msg;

		if (top < 0 || (diff >= 0 ? dst > best : dst < best)) {
			best = dst;
			top = st;
		}
	}
	fprintf(f, "Per message of %s -> %s, %s takes %s longer on average (%s vs %s over TCP), "
		"most of it in %s (%s%s): %s.\n", u->sender.comm, u->receiver.comm,
		diff >= 0 ? "TCP" : "UDS", fmt_dur(fabs(diff), false, a, sizeof(a)),
		fmt_dur(u->mean, false, b, sizeof(b)), fmt_dur(t->mean, false, c, sizeof(c)),
		fl_stage_names[top], best >= 0 ? "+" : "", fmt_dur(best, false, d, sizeof(d)),
		stage_why[top]);
}

void programs_explain(const struct program_compare *pc, FILE *f)
{
	if (!pc->side[PG_UNIX].ran || !pc->side[PG_TCP].ran || !pc->side[PG_UNIX].wall_ns ||
	    !pc->side[PG_TCP].wall_ns)
		return;
	fprintf(f, "What this means:\n");
	headline(pc, f);
	in_flight(pc, f);
	busiest_flow(pc, f);
}
