// SPDX-License-Identifier: GPL-2.0
/*
 * The numbers of a --compare of programs (flows paired by name, messages, time in flight) and
 * the explanation under it, as claims (claims.h) from them: which
 * run was faster and by how much, how much of each run messages were in flight (the rest is
 * the programs' own work and connection set-up, which --trace does not count as messages),
 * and for the busiest flow which stage holds the per-message difference.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "programs_report.h"
#include "stage_table.h"
#include "util.h"

/* ---- the numbers the report and the explanation read (programs_report.h) ---- */

int programs_pairs(const struct program_compare *pc, struct flow_pair *out, int max)
{
	const struct trace_run *u = &pc->side[PG_UNIX].run, *t = &pc->side[PG_TCP].run;
	int n = 0, i, j;
	bool *used = calloc(t->n_flows + 1, sizeof(*used));

	if (!used)
		return 0;
	for (i = 0; i < u->n_flows && n < max; i++) {
		out[n].f[PG_UNIX] = &u->flows[i];
		out[n].f[PG_TCP] = NULL;
		for (j = 0; j < t->n_flows; j++)
			if (!used[j] && !strcmp(t->flows[j].sender.comm, u->flows[i].sender.comm) &&
			    !strcmp(t->flows[j].receiver.comm, u->flows[i].receiver.comm)) {
				out[n].f[PG_TCP] = &t->flows[j];
				used[j] = true;
				break;
			}
		n++;
	}
	for (j = 0; j < t->n_flows && n < max; j++)
		if (!used[j]) {
			out[n].f[PG_UNIX] = NULL;
			out[n++].f[PG_TCP] = &t->flows[j];
		}
	free(used);
	return n;
}

double programs_socket_ns(const struct program_side *sd)
{
	double sum = 0;
	int i;

	for (i = 0; i < sd->run.n_flows; i++)
		sum += sd->run.flows[i].mean * sd->run.flows[i].messages;
	return sum;
}

uint64_t programs_messages(const struct program_side *sd)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < sd->run.n_flows; i++)
		n += sd->run.flows[i].messages;
	return n;
}

bool programs_busiest_pair(const struct program_compare *pc, struct flow_pair *p)
{
	struct flow_pair pairs[PG_MAX_PAIRS];
	int n = programs_pairs(pc, pairs, PG_MAX_PAIRS), i;

	for (i = 0; i < n; i++)
		if (pairs[i].f[PG_UNIX] && pairs[i].f[PG_TCP]) {
			*p = pairs[i];
			return true;
		}
	return false;
}

/* ---- the explanation ---- */

/* What a stage holds on each transport (docs/TRACE.md, docs/STAGES.md). */
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

static void headline(const struct program_compare *pc, struct claims *cl)
{
	double u = pc->side[PG_UNIX].wall_ns, t = pc->side[PG_TCP].wall_ns;
	uint64_t mu = programs_messages(&pc->side[PG_UNIX]), mt = programs_messages(&pc->side[PG_TCP]);
	char a[32], b[32];
	struct claim *c;

	fmt_dur(u, false, a, sizeof(a));
	fmt_dur(t, false, b, sizeof(b));
	/* one run each: a difference under NOISE_FLOOR is not told from run-to-run noise */
	if (t >= (1 + NOISE_FLOOR) * u)
		c = claim_add(cl, "run_time", "The TCP run took %.2fx as long as the unix run (%s vs "
			      "%s).", t / u, b, a);
	else if (u >= (1 + NOISE_FLOOR) * t)
		c = claim_add(cl, "run_time", "The unix run took %.2fx as long as the TCP run (%s vs "
			      "%s): UDS does not win here.", u / t, a, b);
	else
		c = claim_add(cl, "run_time", "Both runs took about as long (%s vs %s, within %.0f %%, "
			      "inside one run's run-to-run noise; rerun to tell them apart).", a, b,
			      100 * NOISE_FLOOR);
	claim_num(c, "unix_wall_ns", u);
	claim_num(c, "tcp_wall_ns", t);
	if (mu && mt && fabs((double)mu - mt) > 0.02 * MAX(mu, mt)) {
		c = claim_add(cl, "messages", "They did not exchange the same number of messages (%llu "
			      "vs %llu): compare per message, not run times.", (unsigned long long)mu,
			      (unsigned long long)mt);
		claim_num(c, "unix_messages", mu);
		claim_num(c, "tcp_messages", mt);
	}
}

/* How much of each run messages were in flight, and what the rest is. */
static void in_flight(const struct program_compare *pc, struct claims *cl)
{
	const struct program_side *u = &pc->side[PG_UNIX], *t = &pc->side[PG_TCP];
	double su = programs_socket_ns(u), st = programs_socket_ns(t);
	double ou = u->wall_ns - su, ot = t->wall_ns - st;
	char a[32], b[32], c[32], d[32];
	struct claim *cm;

	if (su > 1.05 * u->wall_ns || st > 1.05 * t->wall_ns) {
		cm = claim_add(cl, "overlap", "Messages overlapped (several connections or requests "
			       "at once): their latencies add up to %.1fx (unix) and %.1fx (TCP) the run "
			       "time, so the run time, not one message's latency, is the throughput.",
			       su / u->wall_ns, st / t->wall_ns);
		claim_num(cm, "unix_in_flight_ns", su);
		claim_num(cm, "tcp_in_flight_ns", st);
		return;
	}
	cm = claim_add(cl, "in_flight", "Messages were in flight %.0f %% of the unix run and %.0f %% "
		       "of the TCP run; the rest (%s vs %s) is the programs' own work, scheduling "
		       "between them and what --trace does not count as a message: connect(), "
		       "accept() and close() (on TCP: the handshake and TIME_WAIT).",
		       100 * su / u->wall_ns, 100 * st / t->wall_ns, fmt_dur(ou, false, a, sizeof(a)),
		       fmt_dur(ot, false, b, sizeof(b)));
	claim_num(cm, "unix_in_flight_ns", su);
	claim_num(cm, "tcp_in_flight_ns", st);
	if (t->wall_ns > u->wall_ns)
		claim_more(cm, " Of the %s the TCP run took longer, %s is message latency and %s the "
			   "rest.", fmt_dur((double)t->wall_ns - u->wall_ns, false, c, sizeof(c)),
			   fmt_dur(st - su, false, d, sizeof(d)), fmt_dur(ot - ou, false, a, sizeof(a)));
	/* the general lesson only where this run shows it: most of a run outside the messages */
	if (ou > su && ot > st)
		claim_more(cm, " Most of each run is the programs' own time, so the transport's "
			   "difference shows less than in the bare 64 B ping-pong (docs/RECIPES.md).");
}

/* The busiest TCP flow's send;call kernel stages UDS does not have, and their share of the
 * per-message difference (where the run cut send;call: --compare of programs always does). */
static void tcp_only(const struct flow *u, const struct flow *t, struct claims *cl)
{
	double only = 0, diff = t->mean - u->mean;
	char a[32], b[32], names[160] = "";
	size_t n = 0;
	struct claim *cm;
	int i;

	for (i = 0; i < t->n_kstages; i++) {
		const struct flow_kstage *k = &t->kstages[i];

		if (k->of != FS_SEND || !stage_tcp_only(k->name))
			continue;
		only += k->ns_per_msg;
		n += snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0, "%s%s %s",
			      n ? ", " : "", k->name, fmt_dur(k->ns_per_msg, false, a, sizeof(a)));
	}
	if (only <= 0)
		return;
	cm = claim_add(cl, "tcp_only", "Of each TCP message's send(), %s is in stages UDS does not "
		       "have (%s)", fmt_dur(only, false, a, sizeof(a)), names);
	claim_num(cm, "tcp_only_ns", only);
	claim_num(cm, "diff_ns", diff);
	claim_num(cm, "tcp_mean_ns", t->mean);
	if (fabs(diff) < NOISE_FLOOR * MAX(u->mean, t->mean))
		claim_more(cm, "; the two messages differ by only %s, so no share of the difference "
			   "is given.", fmt_dur(fabs(diff), false, b, sizeof(b)));
	else if (diff < 0)
		claim_more(cm, ", yet the UDS message is %s longer: UDS loses more than that in the "
			   "other stages.", fmt_dur(-diff, false, b, sizeof(b)));
	else if (only <= diff)
		claim_more(cm, ": %.0f %% of the per-message difference; the rest is in the other "
			   "stages.", 100 * only / diff);
	else
		claim_more(cm, ": more than the whole per-message difference (%s); UDS pays the rest "
			   "back in the other stages.", fmt_dur(diff, false, b, sizeof(b)));
}

/* The stage of the busiest flow pair that holds most of the per-message difference. */
static void busiest_flow(const struct program_compare *pc, struct claims *cl)
{
	struct flow_pair bp;
	const struct flow *u, *t;
	int st, top = -1;
	double diff, best = 0;
	char a[32], b[32], c[32], d[32];
	struct claim *cm;

	if (!programs_busiest_pair(pc, &bp))
		return;
	u = bp.f[PG_UNIX];
	t = bp.f[PG_TCP];
	diff = t->mean - u->mean;
	for (st = 0; st < FS__COUNT; st++) {
		double dst = t->stages[st].ns_per_msg - u->stages[st].ns_per_msg;

		if (top < 0 || (diff >= 0 ? dst > best : dst < best)) {
			best = dst;
			top = st;
		}
	}
	cm = claim_add(cl, "busiest_flow", "Per message of %s -> %s, %s takes %s longer on average "
		       "(%s vs %s over TCP), most of it in %s (%s%s): %s.", u->sender.comm,
		       u->receiver.comm, diff >= 0 ? "TCP" : "UDS",
		       fmt_dur(fabs(diff), false, a, sizeof(a)), fmt_dur(u->mean, false, b, sizeof(b)),
		       fmt_dur(t->mean, false, c, sizeof(c)), fl_stage_names[top], best >= 0 ? "+" : "",
		       fmt_dur(best, false, d, sizeof(d)), stage_why[top]);
	claim_str(cm, "stage", fl_stage_names[top]);
	claim_num(cm, "unix_mean_ns", u->mean);
	claim_num(cm, "tcp_mean_ns", t->mean);
	claim_num(cm, "stage_diff_ns", best);
	tcp_only(u, t, cl);
}

/* CPU the client's and the server's processes used per message, from the kernel's accounting. */
static void cpu(const struct program_compare *pc, struct claims *cl)
{
	const struct program_side *sd[PG__COUNT] = { &pc->side[PG_UNIX], &pc->side[PG_TCP] };
	double m[PG__COUNT], tot[PG__COUNT];
	char a[32], b[32], c[32], d[32];
	struct claim *cm;
	int s;

	for (s = 0; s < PG__COUNT; s++) {
		m[s] = programs_messages(sd[s]);
		if (!sd[s]->has_cpu || !m[s])
			return;
		tot[s] = sd[s]->client_user_ns + sd[s]->client_sys_ns + sd[s]->server_user_ns +
			 sd[s]->server_sys_ns;
	}
	cm = claim_add(cl, "cpu", "Per message, the client%s used %s of CPU over unix and %s over "
		       "TCP, of it system time %s and %s (the kernel's accounting; the user/system "
		       "split is sampled by the timer tick).", pc->server_cmd ? " and the server" : "",
		       fmt_dur(tot[PG_UNIX] / m[PG_UNIX], false, a, sizeof(a)),
		       fmt_dur(tot[PG_TCP] / m[PG_TCP], false, b, sizeof(b)),
		       fmt_dur((sd[PG_UNIX]->client_sys_ns + sd[PG_UNIX]->server_sys_ns) / m[PG_UNIX],
			       false, c, sizeof(c)),
		       fmt_dur((sd[PG_TCP]->client_sys_ns + sd[PG_TCP]->server_sys_ns) / m[PG_TCP],
			       false, d, sizeof(d)));
	claim_num(cm, "unix_cpu_ns_per_msg", tot[PG_UNIX] / m[PG_UNIX]);
	claim_num(cm, "tcp_cpu_ns_per_msg", tot[PG_TCP] / m[PG_TCP]);
}

void programs_claims(const struct program_compare *pc, struct claims *out)
{
	memset(out, 0, sizeof(*out));
	if (!pc->side[PG_UNIX].ran || !pc->side[PG_TCP].ran || !pc->side[PG_UNIX].wall_ns ||
	    !pc->side[PG_TCP].wall_ns)
		return;
	headline(pc, out);
	in_flight(pc, out);
	cpu(pc, out);
	busiest_flow(pc, out);
}

void programs_explain(const struct program_compare *pc, FILE *f)
{
	struct claims *cl = calloc(1, sizeof(*cl));

	if (!cl)
		return;
	programs_claims(pc, cl);
	if (cl->n) {
		fprintf(f, "What this means:\n");
		claims_print(cl, f);
	}
	free(cl);
}
