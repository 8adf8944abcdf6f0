// SPDX-License-Identifier: GPL-2.0
/*
 * The report model every writer (text, folded, SVG, bars, report.md) shares: which runs have
 * stages, the merged stage tree of a pair and its comparable rows, pair tags and caveats,
 * what each stage means. Reads a finished struct comparison; writes nothing itself.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "report_common.h"
#include "util.h"

bool tr_has_stages(const struct transport_result *tr)
{
	return tr->trace.valid && tr->trace.n_stages > 0;
}

bool pair_has_stages(const struct pair_result *pr)
{
	return tr_has_stages(&pr->tr[TR_UNIX]) || tr_has_stages(&pr->tr[TR_TCP]);
}

bool comparison_has_stages(const struct comparison *cmp)
{
	int i;

	for (i = 0; i < cmp->n_pairs; i++)
		if (pair_has_stages(&cmp->pairs[i]))
			return true;
	return false;
}

const char *no_stages_reason(const struct comparison *cmp)
{
	if (!cmp->attach_mode)
		return "the run was untraced (--no-trace), so there are no stages";
	return "tracing attributed no message to stages (see the warnings above)";
}

int stages_file_write(const struct comparison *cmp, const char *opt, const char *path,
		      int (*write)(const struct comparison *cmp, FILE *f))
{
	struct outfile of;
	int err;

	if (!comparison_has_stages(cmp)) {
		say_error("%s: nothing written to '%s': %s", opt, path, no_stages_reason(cmp));
		return -ENODATA;
	}
	err = outfile_begin(&of, opt, path);
	return err ? err : outfile_commit(&of, write(cmp, of.f));
}

const char *pair_caveat(const struct comparison *cmp, const struct pair_result *pr, char *buf,
			size_t len)
{
	double worst = 0;
	int tr, i, clamped = 0;

	buf[0] = 0;
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;

		if (!tr_has_stages(&pr->tr[tr]))
			continue;
		worst = MAX(worst, r->overhead_pct);
		for (i = 0; show_corrected(cmp) && i < r->n_stages; i++)
			clamped += !r->stages[i].extra && r->stages[i].ns_per_msg > 0.5 &&
				   r->stages[i].corrected_ns_per_msg <= 0;
	}
	if (worst > 100)
		snprintf(buf, len, "the probes more than doubled the time per message (+%.0f%%): "
			 "a busy machine or a bad calibration; rerun", worst);
	else if (clamped)
		snprintf(buf, len, "%d stage%s came out below zero once the probe cost (%.0f ns per "
			 "hit) was removed: the calibration is probably too high; rerun", clamped,
			 clamped > 1 ? "s" : "", cmp->probe_cost_ns);
	return buf;
}

/* "100us", "1ms", "1500ns": a think time in a file name or frame (exact, no spaces). */
static void think_tag(uint64_t ns, char *buf, size_t len)
{
	unsigned long long v = ns;

	if (!(v % 1000000))
		snprintf(buf, len, "%llums", v / 1000000);
	else if (!(v % 1000))
		snprintf(buf, len, "%lluus", v / 1000);
	else
		snprintf(buf, len, "%lluns", v);
}

void pair_tag(const struct pair_result *pr, bool file_name, char *buf, size_t len)
{
	char think[32] = "";

	if (pair_think(pr)) {
		think_tag(pair_think(pr), think + 6, sizeof(think) - 6);
		memcpy(think, file_name ? "-think" : "_think", 6);
	}
	if (file_name)
		snprintf(buf, len, "%s-%lluB-%s%s", mode_names[pr->mode],
			 (unsigned long long)pr->msg_size, place_names[pr->place], think);
	else
		snprintf(buf, len, "%s_%lluB_cpu-%s%s", mode_names[pr->mode],
			 (unsigned long long)pr->msg_size, place_names[pr->place], think);
}

const char *think_words(const struct pair_result *pr, char *buf, size_t len)
{
	char d[32];

	buf[0] = 0;
	if (pair_think(pr))
		snprintf(buf, len, ", think %s", fmt_dur(pair_think(pr), false, d, sizeof(d)));
	return buf;
}

static const struct {
	const char *path, *what;
} stage_doc[] = {
	{ "send", "the sender's send() syscall" },
	{ "send;syscall", "send() entry up to the protocol's sendmsg" },
	{ "send;sock", "protocol sendmsg: allocate a buffer (skb), copy the data in "
		       "(unix_stream_sendmsg / tcp_sendmsg)" },
	{ "send;tcp_ip_out", "TCP and IP output: segment, headers, route "
			     "(tcp_write_xmit .. ip_finish_output2); TCP only" },
	{ "send;dev_xmit", "the loopback device: queue the packet, loopback_xmit, "
			   "hand it to the receive backlog; TCP only" },
	{ "send;return", "rest of the send syscall until it returns (release_sock, softirq exit)" },
	{ "rx_softirq", "the receive softirq (network receive, run in the sender's task); TCP only" },
	{ "rx_softirq;backlog", "receive softirq: net_rx_action, process_backlog; TCP only" },
	{ "rx_softirq;ip_tcp_in", "IP and TCP input: ip_rcv, tcp_v4_rcv, tcp_rcv_established "
				  "(checks, ACK processing, queueing); TCP only" },
	{ "deliver", "handing the data to the receiving socket" },
	{ "deliver;enqueue_wakeup", "queue the data on the receiving socket and wake the receiver" },
	{ "rx_softirq;deferred", "TCP: the NET_RX softirq ran outside the send (ksoftirqd, or a later "
				"interrupt exit): the segment waited on the CPU backlog until then" },
	{ "bulk", "a message sent in several chunks (skbs, segments), after its first chunk was "
		 "queued: sender and receiver take turns" },
	{ "bulk;send_copy", "the sender's send() runs: copying the rest of the message into skbs or "
			    "segments (TCP: with their output and receive softirq)" },
	{ "bulk;recv_copy", "the sender is not running and the receiver's recv() runs: copying queued "
			    "chunks to user memory, freeing them (TCP: sending window updates)" },
	{ "bulk;wait_space", "the sender sleeps in send() for send-buffer space and the receiver is "
			     "not running yet (being woken, waiting for a CPU)" },
	{ "bulk;wait_cpu", "neither task runs its side: the scheduler, wakeups, other work" },
	{ "sched", "the scheduler" },
	{ "sched;wait_cpu", "receiver has data and is runnable, waiting to be switched in" },
	{ "recv", "the receiver's recv() syscall" },
	{ "recv;copy", "recv(): copy the data to the receiver's memory" },
	{ "recv;return", "recv(): free the buffer, wake writers, return" },
	{ "recv;wait", "stream mode, per recv() call: from recv() entry until the receiver runs "
		       "with data" },
	{ "conn;connect", "per connection: the client's connect() call" },
	{ "conn;accept", "per connection: from the client's connect() to the server's accept() "
			 "returning" },
	{ "app", "user space, between the messages" },
	{ "app;gap", "pingpong: from a task's recv() return to its next send() (the benchmark's "
		     "own code); one-way latency = message + gap" },
	{ "unattributed", "time between the probes that no stage covers (kept, not dropped)" },
};

const char *stage_describe(const char *path)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(stage_doc); i++)
		if (!strcmp(stage_doc[i].path, path))
			return stage_doc[i].what;
	return NULL;
}

static int find_name(const char *const *list, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return i;
	return -1;
}

/*
 * Merge unix's stage order into tcp's: a stage only unix has goes right after the stage that
 * precedes it on unix. Both lists are in message order, so the merge is too.
 */
static int merge_order(const struct pair_result *pr, const char **out, int max)
{
	const struct trace_result *u = &pr->tr[TR_UNIX].trace, *t = &pr->tr[TR_TCP].trace;
	int i, j, k, n = 0, at;

	if (tr_has_stages(&pr->tr[TR_TCP]))
		for (i = 0; i < t->n_stages && n < max; i++)
			if (!t->stages[i].extra && find_name(out, n, t->stages[i].name) < 0)
				out[n++] = t->stages[i].name;
	if (!tr_has_stages(&pr->tr[TR_UNIX]))
		return n;
	for (i = 0; i < u->n_stages && n < max; i++) {
		if (u->stages[i].extra || find_name(out, n, u->stages[i].name) >= 0)
			continue;
		at = 0;
		for (j = i - 1; j >= 0; j--) {
			k = u->stages[j].extra ? -1 : find_name(out, n, u->stages[j].name);
			if (k >= 0) {
				at = k + 1;
				break;
			}
		}
		memmove(&out[at + 1], &out[at], (n - at) * sizeof(*out));
		out[at] = u->stages[i].name;
		n++;
	}
	return n;
}

int stree_find(const struct stree *t, const char *path)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->node[i].path, path))
			return i;
	return -1;
}

/* Add path and its prefixes; returns the node of path itself. */
static int stree_add(struct stree *t, const char *path)
{
	char prefix[STAGE_NAME_LEN];
	const char *p = path;
	int parent = -1, depth = 0, k;

	for (;;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - path) : strlen(path);

		snprintf(prefix, sizeof(prefix), "%.*s", (int)len, path);
		depth++;
		k = stree_find(t, prefix);
		if (k < 0) {
			struct snode *nd;
			const char *last;

			if (t->n >= STREE_MAX)
				return -1;
			nd = &t->node[t->n];
			memset(nd, 0, sizeof(*nd));
			snprintf(nd->path, sizeof(nd->path), "%s", prefix);
			last = strrchr(nd->path, ';');
			nd->name = last ? last + 1 : nd->path;
			nd->depth = depth;
			nd->parent = parent;
			if (depth > t->max_depth)
				t->max_depth = depth;
			k = t->n++;
		}
		parent = k;
		if (!semi)
			return k;
		p = semi + 1;
	}
}

bool show_corrected(const struct comparison *cmp)
{
	return cmp->attach_mode && cmp->probe_cost_ns > 0;
}

void stree_build(const struct pair_result *pr, bool corrected, struct stree *t)
{
	const char *order[MAX_STAGES * TR__COUNT];
	int i, k, tr, n;

	memset(t, 0, sizeof(*t));
	t->corrected = corrected;
	n = merge_order(pr, order, ARRAY_SIZE(order));
	for (i = 0; i < n; i++)
		stree_add(t, order[i]);
	for (tr = 0; tr < TR__COUNT; tr++) {
		const struct trace_result *r = &pr->tr[tr].trace;

		t->has[tr] = tr_has_stages(&pr->tr[tr]);
		if (!t->has[tr])
			continue;
		for (i = 0; i < r->n_stages; i++) {
			const struct stage_stat *st = &r->stages[i];
			double raw = st->ns_per_msg > 0 ? st->ns_per_msg : 0;
			double v = !corrected ? raw :
				   st->corrected_ns_per_msg > 0 ? st->corrected_ns_per_msg : 0;

			if (st->extra)
				continue;
			k = stree_find(t, st->name);
			if (k < 0)
				continue;
			t->node[k].self[tr] += v;
			t->node[k].st[tr] = st;
			t->sum[tr] += v;
			t->raw_sum[tr] += raw;
			for (; k >= 0; k = t->node[k].parent) {
				t->node[k].total[tr] += v;
				t->node[k].raw_total[tr] += raw;
			}
		}
	}
}

int stree_groups(const struct stree *t, int *idx, int max)
{
	int i, j, n = 0;
	bool leaf;

	for (i = 0; i < t->n && n < max; i++) {
		if (t->node[i].depth == 2) {
			idx[n++] = i;
			continue;
		}
		if (t->node[i].depth != 1)
			continue;
		for (leaf = true, j = i + 1; j < t->n && leaf; j++)
			leaf = t->node[j].parent != i;
		if (leaf)	/* a top-level stage such as "unattributed" */
			idx[n++] = i;
	}
	return n;
}

/* Does "phase;a+b" share a leaf with "phase;b+c"? Top-level stages ("unattributed") only
 * match themselves. */
static bool leaves_overlap(const char *x, const char *y)
{
	const char *sx = strchr(x, ';'), *sy = strchr(y, ';'), *p, *q;

	if (!sx || !sy)
		return !strcmp(x, y);
	if (sx - x != sy - y || strncmp(x, y, sx - x))
		return false;
	for (p = sx + 1; *p; p += strcspn(p, "+"), p += *p == '+') {
		size_t lp = strcspn(p, "+");

		for (q = sy + 1; *q; q += strcspn(q, "+"), q += *q == '+')
			if (strcspn(q, "+") == lp && !strncmp(p, q, lp))
				return true;
	}
	return false;
}

static int uf_find(int *up, int i)
{
	while (up[i] != i)
		i = up[i] = up[up[i]];
	return i;
}

/* Append the leaves of "phase;a+b" not yet in name ("phase;x+y"). */
static void add_leaves(char *name, size_t len, const char *path)
{
	const char *semi = strchr(path, ';'), *p;
	size_t n = strlen(name);

	if (!n || !semi) {
		if (!n)
			snprintf(name, len, "%s", path);
		return;
	}
	for (p = semi + 1; *p; p += strcspn(p, "+"), p += *p == '+') {
		size_t lp = strcspn(p, "+");
		const char *q;
		bool dup = false;

		for (q = strchr(name, ';') + 1; *q && !dup; q += strcspn(q, "+"), q += *q == '+')
			dup = strcspn(q, "+") == lp && !strncmp(p, q, lp);
		if (!dup && n + lp + 1 < len) {
			name[n++] = '+';
			memcpy(name + n, p, lp);
			n += lp;
			name[n] = 0;
		}
	}
}

int stree_rows(const struct stree *t, struct srow *rows, int max)
{
	int g[STREE_MAX], up[STREE_MAX], row_of[STREE_MAX], n, i, j, r, nrows = 0, tr;

	n = stree_groups(t, g, STREE_MAX);
	for (i = 0; i < n; i++)
		up[i] = i;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (leaves_overlap(t->node[g[i]].path, t->node[g[j]].path))
				up[uf_find(up, j)] = uf_find(up, i);
	for (i = 0; i < n; i++)
		row_of[i] = -1;
	for (i = 0; i < n; i++) {
		const struct snode *nd = &t->node[g[i]];
		int root = uf_find(up, i);
		struct srow *row;

		if (row_of[root] < 0) {
			if (nrows >= max)
				break;
			row_of[root] = nrows++;
			memset(&rows[row_of[root]], 0, sizeof(rows[0]));
		}
		row = &rows[row_of[root]];
		add_leaves(row->name, sizeof(row->name), nd->path);
		if (row->n_members < SROW_MEMBERS)
			row->member[row->n_members++] = g[i];
		for (tr = 0; tr < TR__COUNT; tr++) {
			row->v[tr] += nd->total[tr];
			row->raw[tr] += nd->raw_total[tr];
			row->has[tr] |= nd->total[tr] > 0 || nd->st[tr] != NULL;
		}
	}
	for (r = 0; r < nrows; r++)	/* a single member keeps its exact name */
		if (rows[r].n_members == 1)
			snprintf(rows[r].name, sizeof(rows[r].name), "%s",
				 t->node[rows[r].member[0]].path);
	return nrows;
}

const char *place_words(const struct pair_result *pr, bool cpus, char *buf, size_t len)
{
	const struct wl_result *u = &pr->tr[TR_UNIX].untraced;
	int n;

	switch (pr->place) {
	case CPU_SAME:
		n = snprintf(buf, len, "client and server pinned to one CPU");
		if (cpus && n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - n, " (CPU%d)", u->client_cpu);
		break;
	case CPU_SPLIT:
		if (cpus)
			snprintf(buf, len, "client on CPU%d, server on CPU%d", u->client_cpu,
				 u->server_cpu);
		else
			snprintf(buf, len, "client and server on different CPUs");
		break;
	default:
		snprintf(buf, len, "CPU placement left to the scheduler");
	}
	return buf;
}

const char *mode_count_noun(enum wl_mode mode)
{
	return mode == WL_PINGPONG ? "round trips" : mode == WL_STREAM ? "messages" : "connections";
}

static double lat_p50(const struct wl_result *r) { return r->latency.p50; }
static double lat_p90(const struct wl_result *r) { return r->latency.p90; }
static double lat_p99(const struct wl_result *r) { return r->latency.p99; }
static double lat_mean(const struct wl_result *r) { return r->latency.mean; }
static double msgs_rate(const struct wl_result *r) { return r->msgs_per_sec; }
static double bytes_rate(const struct wl_result *r) { return r->bytes_per_sec; }
static double conns_rate(const struct wl_result *r) { return r->conns_per_sec; }

static const struct metric_row pingpong_rows[] = {
	{ "one-way p50", "one-way latency p50", "", false, lat_p50 },
	{ "one-way p90", "one-way latency p90", "", false, lat_p90 },
	{ "one-way p99", "one-way latency p99", "", false, lat_p99 },
	{ "one-way mean", "one-way latency mean", "", false, lat_mean },
};
static const struct metric_row stream_rows[] = {
	{ "msgs/s", "messages per second", "", true, msgs_rate },
	{ "bytes/s", "bytes per second", "B", true, bytes_rate },
};
static const struct metric_row connect_rows[] = {
	{ "conns/s", "connections per second", "", true, conns_rate },
	{ "connection p50", "connection time p50", "", false, lat_p50 },
	{ "connection p99", "connection time p99", "", false, lat_p99 },
};

static double cpu_user(const struct wl_result *r) { return r->user_ns; }
static double cpu_sys(const struct wl_result *r) { return r->sys_ns; }
static double cpu_softirq(const struct wl_result *r) { return r->softirq_ns; }

static const struct metric_row cpu_msg_rows[] = {
	{ "user CPU/msg", "user CPU per message", "", false, cpu_user },
	{ "system CPU/msg", "system CPU per message", "", false, cpu_sys },
	{ "softirq/msg", "softirq per message (the CPUs used)", "", false, cpu_softirq },
};
static const struct metric_row cpu_conn_rows[] = {
	{ "user CPU/conn", "user CPU per connection", "", false, cpu_user },
	{ "system CPU/conn", "system CPU per connection", "", false, cpu_sys },
	{ "softirq/conn", "softirq per connection (the CPUs used)", "", false, cpu_softirq },
};

int cpu_rows(const struct pair_result *pr, const struct metric_row **rows)
{
	*rows = pr->mode == WL_CONNECT ? cpu_conn_rows : cpu_msg_rows;
	if (!pr->tr[TR_UNIX].untraced.has_cpu || !pr->tr[TR_TCP].untraced.has_cpu)
		return 0;
	return ARRAY_SIZE(cpu_msg_rows);
}

int metric_rows(enum wl_mode mode, const struct metric_row **rows)
{
	switch (mode) {
	case WL_PINGPONG:
		*rows = pingpong_rows;
		return ARRAY_SIZE(pingpong_rows);
	case WL_STREAM:
		*rows = stream_rows;
		return ARRAY_SIZE(stream_rows);
	case WL_CONNECT:
		*rows = connect_rows;
		return ARRAY_SIZE(connect_rows);
	default:
		*rows = NULL;
		return 0;
	}
}

const char *overhead_words(const struct trace_result *r, bool utf8, char *buf, size_t len)
{
	char d[32];

	if (r->overhead_ns < 0)
		snprintf(buf, len, "within run-to-run noise (the traced run was %s faster)",
			 fmt_dur(-r->overhead_ns, utf8, d, sizeof(d)));
	else
		snprintf(buf, len, "%s (%+.0f%%)", fmt_dur(r->overhead_ns, utf8, d, sizeof(d)),
			 r->overhead_pct);
	return buf;
}
