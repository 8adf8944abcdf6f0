// SPDX-License-Identifier: GPL-2.0
/* --backlog's text and JSON: live view, summary, recommendations, JSON lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backlog_out.h"
#include "json_writer.h"
#include "live.h"
#include "outfile.h"
#include "util.h"

static void fmt_owner(const struct listener *l, char *buf, size_t len)	/* len >= COMM_TXT + 16 */
{
	if (bl_owner_pid(l))
		snprintf(buf, len, "%s/%d%s", l->owner_comm, bl_owner_pid(l),
			 l->n_holders > 1 ? "+" : "");
	else
		snprintf(buf, len, "-");
}

/* "comm/pid:n ..." in buf, whole entries only (never half an escape or character). */
static void fmt_clients(const struct listener *l, char *buf, size_t len, bool waits)
{
	char one[COMM_TXT + 48];
	size_t off = 0, k;
	int i;

	buf[0] = 0;
	for (i = 0; i < l->n_clients; i++) {
		const struct client *c = &l->clients[i];
		uint64_t n = waits ? c->v.waits : bl_overflows(&c->v);

		if (!n)
			continue;
		if (c->tgid)
			k = snprintf(one, sizeof(one), "%s%s/%u:%llu", off ? " " : "", c->comm, c->tgid,
				     (unsigned long long)n);
		else if (strcmp(c->comm, "?"))	/* exited, counted per comm */
			k = snprintf(one, sizeof(one), "%s%s/exited:%llu", off ? " " : "", c->comm,
				     (unsigned long long)n);
		else
			k = snprintf(one, sizeof(one), "%sunknown:%llu", off ? " " : "",
				     (unsigned long long)n);
		if (off + k + 4 >= len) {
			snprintf(buf + off, len - off, " ...");
			return;
		}
		memcpy(buf + off, one, k + 1);
		off += k;
	}
	if (!off)
		snprintf(buf, len, "-");
}

/* The address as text, with the namespace when it is not udsprobe's own. */
const char *bl_addr_text(struct bl_state *s, const struct listener *l, char *buf, size_t len)
{
	if (l->netns && l->netns != s->netns)
		snprintf(buf, len, "%s (netns %u)", l->addr, l->netns);
	else if (l->mntns && l->mntns != s->mntns)
		snprintf(buf, len, "%s (mntns %u)", l->addr, l->mntns);
	else
		snprintf(buf, len, "%s", l->addr);
	return buf;
}

const char *bl_family_name(int f)
{
	return f == BL_UNIX ? "unix" : "tcp";
}

bool bl_overflows_unknown(const struct bl_state *s, const struct listener *l)
{
	return l->family == BL_TCP && s->run.tcp_drops_missing;
}

/* A count as text, or "n/a" when l's overflows are not counted. */
static const char *fmt_ovf(const struct bl_state *s, const struct listener *l, uint64_t n,
			   char *buf, size_t len)
{
	if (bl_overflows_unknown(s, l))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
	return buf;
}

bool bl_depth_unknown(const struct bl_state *s, const struct listener *l)
{
	return l->family == BL_UNIX && s->run.unix_depth_missing;
}

static const char *const live_sorts[] = { "overflows", "queue depth", "waits" };
static const char *const live_families[] = { "all", "unix", "tcp" };
static const struct bl_state *live_state;	/* qsort has no context */
static int live_sort;

static double live_key_of(const struct listener *l)
{
	return live_sort == BL_LIVE_BY_QUEUE ? l->qlen * 1e6 + l->peak :
	       live_sort == BL_LIVE_BY_WAITS ? l->tot.waits :
	       bl_overflows_unknown(live_state, l) ? -1.0 : (double)bl_overflows(&l->tot);
}

static int live_order(const void *a, const void *b)
{
	const struct listener *x = *(struct listener *const *)a, *y = *(struct listener *const *)b;
	double u = live_key_of(x), v = live_key_of(y);

	if (u != v)
		return u < v ? 1 : -1;
	return strcmp(x->addr, y->addr);
}

void bl_live_frame(struct bl_state *s, struct live *scr, const struct bl_live_view *v, double t)
{
	static char cpu[128];
	char owner[COMM_TXT + 16], clients[256], addr[sizeof(s->ls->addr) + 32], ovf[24], new[24];
	struct listener **rows = calloc(s->n + 1, sizeof(*rows));
	uint64_t ovf_all = 0, ovf_new = 0, waits = 0;
	int i, n = 0, watched = 0, y = 0, lines, cols, addr_w;

	if (!rows)
		return;		/* this frame is skipped; the next tries again */
	if (!cpu[0])
		cpu_model(cpu, sizeof(cpu));
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];

		if (!l->watched || l->retired)
			continue;
		watched++;
		if (!bl_overflows_unknown(s, l)) {
			ovf_all += bl_overflows(&l->tot);
			ovf_new += bl_overflows(&l->tot) - bl_overflows(&l->shown_from);
		}
		waits += l->tot.waits;
		if (v->only == BL_LIVE_ALL || l->family == (v->only == BL_LIVE_UNIX ? BL_UNIX : BL_TCP))
			rows[n++] = l;
	}
	live_state = s;
	live_sort = v->sort;
	qsort(rows, n, sizeof(*rows), live_order);
	live_begin(scr, &lines, &cols);
	addr_w = cols >= 140 ? 56 : 24;
	live_line(scr, y++, true, "udsprobe --backlog   %.0f s   attach %s   CPU %s", t,
		  s->run.attach_mode, cpu);
	live_line(scr, y++, false, "listeners %d (%d shown: %s)   overflows %llu (%llu this "
		  "interval)   connect waits %llu   events not counted %llu", watched, n,
		  live_families[v->only], (unsigned long long)ovf_all, (unsigned long long)ovf_new,
		  (unsigned long long)waits, (unsigned long long)s->missed);
	if (v->note[0])
		live_line(scr, y++, true, "%s", v->note);
	else
		live_line(scr, y++, false, "sort: o overflows  d queue depth  w waits [%s]   t "
			  "family [%s]   q quit and summarize", live_sorts[v->sort],
			  live_families[v->only]);
	y++;
	live_line(scr, y++, true, "FAM  QUEUE  PEAK LIMIT    NEW OVERFLOWS   WAITS %-*s OWNER  "
		  "CLIENTS (overflows)", addr_w, "ADDRESS");
	for (i = 0; i < n && y < lines; i++) {
		struct listener *l = rows[i];

		if (y == lines - 1 && n - i > 1) {	/* the last row counts what did not fit */
			live_line(scr, y, false, "... %d more listeners (a taller terminal shows "
				  "them)", n - i);
			break;
		}
		fmt_owner(l, owner, sizeof(owner));
		fmt_clients(l, clients, sizeof(clients), false);
		live_line(scr, y++, false, "%-4s %5u %5u %5u %6s %9s %7llu %-*.*s %s  %s",
			  bl_family_name(l->family), l->qlen, l->peak, l->limit,
			  fmt_ovf(s, l, bl_overflows(&l->tot) - bl_overflows(&l->shown_from), new,
				  sizeof(new)),
			  fmt_ovf(s, l, bl_overflows(&l->tot), ovf, sizeof(ovf)),
			  (unsigned long long)l->tot.waits, addr_w, addr_w,
			  bl_addr_text(s, l, addr, sizeof(addr)), owner, clients);
	}
	live_end(scr);
	free(rows);
}

/* A count in JSON: null when it is not seen (never a 0 that means nothing). */
static void jw_count(struct jw *w, const char *key, uint64_t n, bool unknown)
{
	if (unknown)
		jw_null(w, key);
	else
		jw_u64(w, key, n);
}

void bl_print_interval(struct bl_state *s, FILE *out, double t)
{
	char owner[COMM_TXT + 16], clients[256], tbuf[16], addr[sizeof(s->ls->addr) + 32], ovf[24];
	time_t now = time(NULL);
	struct tm tm;
	bool any = false;
	int i;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];
		uint64_t d_ovf = bl_overflows(&l->tot) - bl_overflows(&l->prev);
		uint64_t d_wait = l->tot.waits - l->prev.waits;
		uint64_t d_syn = l->tot.syn_retrans - l->prev.syn_retrans;

		if (!l->watched || l->retired || (!d_ovf && !d_wait && !d_syn && !l->qlen))
			continue;
		if (!any && s->lines_since_header++ % 20 == 0)
			fprintf(out, "%-8s %-4s %-32s %-20s %5s %5s %5s %9s %6s %6s  %s\n", "TIME",
				"FAM", "ADDRESS", "OWNER", "QUEUE", "PEAK", "LIMIT", "OVERFLOWS",
				"WAITS", "SYNRTX", "CLIENTS (overflows, cumulative)");
		any = true;
		fmt_owner(l, owner, sizeof(owner));
		fmt_clients(l, clients, sizeof(clients), false);
		fprintf(out, "%-8s %-4s %-32s %-20s %5u %5u %5u %9s %6llu %6llu  %s\n", tbuf,
			bl_family_name(l->family), bl_addr_text(s, l, addr, sizeof(addr)), owner, l->qlen,
			l->peak, l->limit, fmt_ovf(s, l, d_ovf, ovf, sizeof(ovf)),
			(unsigned long long)d_wait, (unsigned long long)d_syn, clients);
	}
	if (s->missed > s->missed_shown) {
		fprintf(out, "%-8s warning: %llu events not counted in this interval (a BPF map "
			"was full; %llu since start)\n", tbuf,
			(unsigned long long)(s->missed - s->missed_shown),
			(unsigned long long)s->missed);
		s->missed_shown = s->missed;
	}
	if (!any) {
		fprintf(out, "%-8s no overflows, no queued connections (%.0f s)\n", tbuf, t);
		s->lines_since_header = 0;	/* next active line gets a header */
	}
	fflush_noted(out);
}

static void json_listener_common(struct jw *w, const struct listener *l)
{
	jw_str(w, "family", bl_family_name(l->family));
	jw_str(w, "address", l->addr);
	if (l->netns)
		jw_u64(w, "netns", l->netns);
	else
		jw_null(w, "netns");	/* a pathname known only from counts */
	if (bl_owner_pid(l)) {
		jw_i64(w, "owner_pid", bl_owner_pid(l));
		jw_str(w, "owner_comm", l->owner_comm);
	} else {
		jw_null(w, "owner_pid");
		jw_null(w, "owner_comm");
	}
	if (l->cgroup[0])
		jw_str(w, "cgroup", l->cgroup);
	else
		jw_null(w, "cgroup");
	if (l->container[0])
		jw_str(w, "container", l->container);
	else
		jw_null(w, "container");
	jw_u64(w, "limit", l->limit);
	if (l->somaxconn)
		jw_u64(w, "somaxconn", l->somaxconn);
	else
		jw_null(w, "somaxconn");
}

/* Accept waits and arrival depths (zeros before any connect was seen queued; the
 * depths null where they are not seen). */
static void json_waits(struct jw *w, const struct bl_state *s, const struct listener *l)
{
	static const struct bl_hist none;
	const struct bl_hist *h = l->h ? &l->h->cur : &none;
	bool no_depth = bl_depth_unknown(s, l);

	jw_u64(w, "accepts", h->accepted);
	jw_double(w, "accept_wait_p50_s", bl_wait_quantile(h, 0.5));
	jw_double(w, "accept_wait_p99_s", bl_wait_quantile(h, 0.99));
	jw_double(w, "accept_wait_max_s", h->wait_max_ns / 1e9);
	jw_count(w, "queued", h->queued, no_depth);
	jw_count(w, "queue_depth_p50", bl_depth_quantile(h, 0.5), no_depth);
	jw_count(w, "queue_depth_p99", bl_depth_quantile(h, 0.99), no_depth);
	jw_count(w, "queue_depth_max", h->depth_max, no_depth);
}

/* A client's netns, cgroup and container, as its connect() saw them (null: unknown). */
static void json_client_where(struct jw *w, const struct client *c)
{
	const char *cg = c->cgroup ? cgroup_id_path(c->cgroup) : "";
	char id[CONTAINER_ID_LEN];

	if (c->netns)
		jw_u64(w, "netns", c->netns);
	else
		jw_null(w, "netns");
	cgroup_container_id(cg, id, sizeof(id));
	if (cg[0])
		jw_str(w, "cgroup", cg);
	else
		jw_null(w, "cgroup");
	if (id[0])
		jw_str(w, "container", id);
	else
		jw_null(w, "container");
}

static void json_clients(struct jw *w, const struct listener *l)
{
	int i;

	jw_arr_begin(w, "clients");
	for (i = 0; i < l->n_clients; i++) {
		if (!bl_overflows(&l->clients[i].v))
			continue;
		jw_obj_begin(w, NULL);
		if (l->clients[i].tgid)
			jw_i64(w, "pid", l->clients[i].tgid);
		else
			jw_null(w, "pid");
		if (strcmp(l->clients[i].comm, "?"))	/* pid null, comm set: exited, per comm */
			jw_str(w, "comm", l->clients[i].comm);
		else
			jw_null(w, "comm");
		jw_u64(w, "count", bl_overflows(&l->clients[i].v));
		json_client_where(w, &l->clients[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void bl_json_interval(struct bl_state *s, FILE *f, double t)
{
	struct jw w;
	uint64_t retired = 0, kept = 0;
	int i;

	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];
		bool no_ovf = bl_overflows_unknown(s, l);

		if (!l->watched || l->retired)
			continue;
		jw_init(&w, f, false);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "event", "interval");
		jw_double(&w, "time_s", t);
		json_listener_common(&w, l);
		if (l->ino && !l->present)
			jw_bool(&w, "closed", true);	/* its last line */
		jw_u64(&w, "queue", l->qlen);
		jw_u64(&w, "peak_queue", l->peak);
		jw_count(&w, "overflows", bl_overflows(&l->tot), no_ovf);
		jw_count(&w, "overflows_delta", bl_overflows(&l->tot) - bl_overflows(&l->prev),
			 no_ovf);
		if (l->family == BL_UNIX) {
			jw_u64(&w, "connect_waits", l->tot.waits);
			jw_double(&w, "connect_wait_s", l->tot.wait_ns / 1e9);
		} else {
			jw_count(&w, "syn_overflows", l->tot.overflows, no_ovf);
			jw_count(&w, "ack_overflows", l->tot.ack_overflows, no_ovf);
			jw_count(&w, "other_listen_drops", l->tot.other_drops, no_ovf);
			jw_u64(&w, "listen_drops", bl_listen_drops(l));
			jw_u64(&w, "syn_retransmits", l->tot.syn_retrans);
		}
		json_waits(&w, s, l);
		json_clients(&w, l);
		jw_obj_end(&w);	/* ends the line */
	}
	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "event", "stats");
	jw_double(&w, "time_s", t);
	jw_u64(&w, "dropped_events", s->missed);
	jw_u64(&w, "listeners_missed", s->listeners_missed);
	for (i = 0; i < s->n; i++) {
		retired += s->ls[i].retired;
		kept += s->ls[i].n_gone + (s->ls[i].frozen ? s->ls[i].n_clients : 0);
	}
	/* the table's size, so a long run can be seen to stay flat (docs/BACKLOG.md) */
	jw_u64(&w, "listeners", s->n);
	jw_u64(&w, "listeners_retired", retired);
	jw_u64(&w, "clients_kept", kept);
	jw_u64(&w, "clients_folded", s->clients_folded);
	jw_u64(&w, "accepts_unattributed", s->waits_unattributed);
	jw_obj_end(&w);
	fflush_noted(f);
}

void bl_json_summary(struct bl_state *s, FILE *f, double t)
{
	struct jw w;
	int i;

	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];

		if (!l->watched)
			continue;
		jw_init(&w, f, false);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "event", "summary");
		json_listener_common(&w, l);
		jw_u64(&w, "peak_queue", l->peak);
		jw_count(&w, "overflows", bl_overflows(&l->tot), bl_overflows_unknown(s, l));
		json_waits(&w, s, l);
		json_clients(&w, l);
		jw_obj_end(&w);	/* ends the line */
	}
	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "event", "run");
	jw_str(&w, "attach_mode", s->run.attach_mode);
	jw_str(&w, "attach_reason", s->run.attach_reason);
	jw_str(&w, "kernel", kernel_release());
	jw_double(&w, "duration_s", t);
	jw_bool(&w, "tcp_listen_overflow_reason", s->run.listen_overflow_reason);
	if (s->run.unix_source) {
		jw_str(&w, "unix_queue_source", s->run.unix_source);
		jw_str(&w, "unix_queue_source_reason", s->run.unix_source_reason);
	}
	jw_bool(&w, "tcp_overflows_counted", !s->run.tcp_drops_missing);
	jw_str(&w, "tcp_overflows_missing_reason", s->run.tcp_drops_missing);
	jw_bool(&w, "unix_queue_depth_seen", !s->run.unix_depth_missing);
	jw_str(&w, "unix_queue_depth_missing_reason", s->run.unix_depth_missing);
	if (s->netstat_ok) {
		jw_u64(&w, "netstat_listen_overflows", s->netstat[0] - s->netstat0[0]);
		jw_u64(&w, "netstat_listen_drops", s->netstat[1] - s->netstat0[1]);
	}
	jw_u64(&w, "missed", s->missed);
	jw_u64(&w, "dropped_events", s->missed);
	jw_u64(&w, "wait_returns_missed", s->wait_returns_missed);
	jw_u64(&w, "listeners_missed", s->listeners_missed);
	jw_u64(&w, "listeners_folded", s->folded);
	jw_u64(&w, "listeners_folded_overflows", s->folded_overflows);
	jw_u64(&w, "somaxconn", s->somaxconn);
	jw_obj_end(&w);
	fflush_noted(f);
}

/*
 * Where to raise net.core.somaxconn for l: it is per network namespace, so for a
 * listener in another one (a container's) the host's sysctl changes nothing.
 */
static void print_raise_somaxconn(struct bl_state *s, FILE *out, const struct listener *l,
				  int somaxconn)
{
	int want = somaxconn * 4;

	if (!l->netns || l->netns == s->netns) {
		fprintf(out, "Raise it: sysctl -w net.core.somaxconn=%d (and persist it in "
			"/etc/sysctl.d/).\n", want);
		return;
	}
	fprintf(out, "It is set per network namespace: raise it inside the listener's (netns %u), "
		"not the host's: ", l->netns);
	if (bl_owner_pid(l))
		fprintf(out, "nsenter --net=/proc/%d/ns/net sysctl -w net.core.somaxconn=%d now; ",
			bl_owner_pid(l), want);
	fprintf(out, "for good in the container's settings (docker run --sysctl "
		"net.core.somaxconn=%d, a Kubernetes pod's securityContext.sysctls)%s.\n", want,
		l->container[0] ? "" : " or the script that creates the namespace");
}

static void print_recommendations(struct bl_state *s, FILE *out, const struct listener *l)
{
	bool php = strstr(l->owner_comm, "php") != NULL;
	int somaxconn = l->somaxconn ? l->somaxconn : bl_netns_somaxconn(s, l->netns);
	bool capped = somaxconn > 0 && l->limit == (unsigned)somaxconn;
	bool foreign = l->netns && l->netns != s->netns;
	uint64_t ovf = bl_overflows(&l->tot);
	int i;

	if (ovf) {
		fprintf(out, "  - %s's listen queue (limit %u) was full %llu times: ",
			bl_owner_pid(l) ? l->owner_comm : "the listener", l->limit,
			(unsigned long long)ovf);
		if (l->family == BL_UNIX)
			fprintf(out, "each was a connect() that failed at once with EAGAIN "
				"(nginx logs \"(11: Resource temporarily unavailable) while connecting "
				"to upstream\" and answers 502).\n");
		else
			fprintf(out, "each was a SYN or handshake ACK the kernel dropped; clients retry "
				"SYNs after 1 s, 2 s, 4 s..., so this shows up as latency, not errors.\n");
		if (capped) {
			fprintf(out, "  - The limit equals net.core.somaxconn%s (%d): the program "
				"probably asked for more and the kernel capped it. ",
				foreign ? " of its network namespace" : "", somaxconn);
			print_raise_somaxconn(s, out, l, somaxconn);
		} else if (php) {
			fprintf(out, "  - Raise listen.backlog in the php-fpm pool (now %u; up to "
				"net.core.somaxconn = %d%s) so bursts wait in the queue instead of failing.\n",
				l->limit, somaxconn, foreign ? " in its network namespace" : "");
		} else {
			fprintf(out, "  - Raise the listen() backlog of %s (now %u; the kernel caps it at "
				"net.core.somaxconn = %d%s).\n", bl_owner_pid(l) ? l->owner_comm : "the server",
				l->limit, somaxconn, foreign ? " in its network namespace" : "");
		}
		if (php)
			fprintf(out, "  - The queue fills when every php-fpm worker is busy: raise "
				"pm.max_children (check memory per worker first), or make the slow "
				"requests faster; a bigger queue only buys time.\n");
		else
			fprintf(out, "  - The queue fills when the server accepts slower than clients "
				"connect: add workers or accept threads to %s.\n",
				bl_owner_pid(l) ? l->owner_comm : "the server");
		for (i = 0; i < l->n_clients; i++)
			if (strstr(l->clients[i].comm, "nginx") && bl_overflows(&l->clients[i].v)) {
				fprintf(out, "  - nginx opens a new upstream connection per request: "
					"an upstream block with `keepalive N;` (plus `fastcgi_keep_conn on;` "
					"or `proxy_http_version 1.1;` and an empty Connection header) reuses "
					"connections and takes most connects off this queue.\n");
				break;
			}
	}
	if (l->tot.waits)
		fprintf(out, "  - %llu blocking connects waited for room, %.3f ms on average: the "
			"queue was full and callers stalled instead of failing.\n",
			(unsigned long long)l->tot.waits, l->tot.wait_ns / 1e6 / l->tot.waits);
	if (l->tot.syn_retrans && !ovf)
		fprintf(out, "  - Clients retransmitted %llu SYNs to this port: a full queue "
			"or a lost SYN; each retransmit costs the client at least 1 s.\n",
			(unsigned long long)l->tot.syn_retrans);
}

/* How long accepted connections waited in the queue, and how deep it was on arrival. */
static void print_waits(struct bl_state *s, FILE *out, const struct listener *l)
{
	char addr[sizeof(s->ls->addr) + 32];
	const struct bl_hist *h = l->h ? &l->h->cur : NULL;

	if (!h || (!h->accepted && !h->queued))
		return;
	fprintf(out, "%s: %llu accepted connections waited in the queue p50 <= %.3f ms, p99 <= "
		"%.3f ms, max %.3f ms; ", bl_addr_text(s, l, addr, sizeof(addr)),
		(unsigned long long)h->accepted, bl_wait_quantile(h, 0.5) * 1e3,
		bl_wait_quantile(h, 0.99) * 1e3, h->wait_max_ns / 1e6);
	if (bl_depth_unknown(s, l))
		fprintf(out, "queue depth on arrival n/a (not seen in this mode here; limit %u)\n",
			l->limit);
	else
		fprintf(out, "%llu queued connects found p50 <= %llu, p99 <= %llu, max %llu ahead "
			"of them (limit %u)\n", (unsigned long long)h->queued,
			(unsigned long long)bl_depth_quantile(h, 0.5),
			(unsigned long long)bl_depth_quantile(h, 0.99),
			(unsigned long long)h->depth_max, l->limit);
}

/* A listener outside udsprobe's network namespace or in a container: where it is. */
static void print_where(struct bl_state *s, FILE *out, const struct listener *l)
{
	char addr[sizeof(s->ls->addr) + 32];

	fprintf(out, "%s: netns %u%s, net.core.somaxconn there %d", bl_addr_text(s, l, addr,
		sizeof(addr)), l->netns, l->netns == s->netns ? " (udsprobe's)" : "", l->somaxconn);
	if (l->cgroup[0])
		fprintf(out, ", cgroup %s", l->cgroup);
	if (l->container[0])
		fprintf(out, ", container %.12s", l->container);
	fputc('\n', out);
}

void bl_print_summary(struct bl_state *s, FILE *out, double t)
{
	char owner[COMM_TXT + 16], clients[512], addr[sizeof(s->ls->addr) + 32], ovf[24];
	int i, shown = 0;
	bool any = false;

	fprintf(out, "\nSummary after %.1f s (attach mode %s):\n", t, s->run.attach_mode);
	fprintf(out, "%-4s %-36s %-22s %5s %5s %9s %6s  %s\n", "FAM", "ADDRESS", "OWNER", "LIMIT",
		"PEAK", "OVERFLOWS", "WAITS", "CLIENTS (overflows)");
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];

		if (!l->watched)
			continue;
		shown++;
		fmt_owner(l, owner, sizeof(owner));
		fmt_clients(l, clients, sizeof(clients), false);
		fprintf(out, "%-4s %-36s %-22s %5u %5u %9s %6llu  %s\n", bl_family_name(l->family),
			bl_addr_text(s, l, addr, sizeof(addr)), owner, l->limit, l->peak,
			fmt_ovf(s, l, bl_overflows(&l->tot), ovf, sizeof(ovf)),
			(unsigned long long)l->tot.waits, clients);
	}
	if (!shown)
		fprintf(out, "(no listener matched %s)\n",
			s->f->n_unix || s->f->n_ports || s->f->n_pids || s->f->netns || s->f->cgroup ?
			"the filters" : "");
	for (i = 0; i < s->n; i++)	/* where the listeners in containers are */
		if (s->ls[i].watched && (s->ls[i].container[0] ||
					 (s->ls[i].netns && s->ls[i].netns != s->netns)))
			print_where(s, out, &s->ls[i]);
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];

		if (!l->watched)
			continue;
		if (l->family == BL_UNIX && l->tot.waits) {
			fmt_clients(l, clients, sizeof(clients), true);
			fprintf(out, "%s: %llu blocking connects waited %.3f ms in total (%s)\n",
				bl_addr_text(s, l, addr, sizeof(addr)),
				(unsigned long long)l->tot.waits, l->tot.wait_ns / 1e6, clients);
		}
		print_waits(s, out, l);
		if (bl_overflows_unknown(s, l) && (bl_listen_drops(l) || l->tot.syn_retrans))
			fprintf(out, "%s: overflows n/a (not counted in this mode here); the "
				"listener's own drop counter (sk_drops) +%llu; client SYN retransmits "
				"%llu\n", bl_addr_text(s, l, addr, sizeof(addr)),
				(unsigned long long)bl_listen_drops(l),
				(unsigned long long)l->tot.syn_retrans);
		else if (l->family == BL_TCP && (bl_overflows(&l->tot) || bl_listen_drops(l) ||
					    l->tot.other_drops || l->tot.syn_retrans))
			fprintf(out, "%s: %llu overflows = %llu SYNs + %llu handshake ACKs dropped at a "
				"full accept queue; %llu other listen drops; the listener's own drop "
				"counter (sk_drops) +%llu; client SYN retransmits %llu\n",
				bl_addr_text(s, l, addr, sizeof(addr)),
				(unsigned long long)bl_overflows(&l->tot),
				(unsigned long long)l->tot.overflows,
				(unsigned long long)l->tot.ack_overflows,
				(unsigned long long)l->tot.other_drops,
				(unsigned long long)bl_listen_drops(l),
				(unsigned long long)l->tot.syn_retrans);
	}
	if (s->netstat_ok)
		fprintf(out, "TCP namespace counters: ListenOverflows +%llu, ListenDrops +%llu\n",
			s->netstat[0] - s->netstat0[0], s->netstat[1] - s->netstat0[1]);
	if (s->missed)
		fprintf(out, "warning: %llu events not counted (a BPF map was full)\n",
			(unsigned long long)s->missed);
	if (s->wait_returns_missed)
		fprintf(out, "note: the kretprobe on unix_wait_for_peer missed %llu returns (more "
			"connects slept at once than its slots, the kernel's maxactive): those waits "
			"ended at the next event seen, at the latest connect's return (fentry mode has "
			"no such limit)\n", (unsigned long long)s->wait_returns_missed);
	if (s->listeners_missed)
		fprintf(out, "warning: more than %d listeners: %llu were not watched\n",
			BL_MAX_LISTENERS, (unsigned long long)s->listeners_missed);
	if (s->ports_full)
		fprintf(out, "warning: %llu TCP listeners were not counted: their port has listeners "
			"in more than %d network namespaces (tracepoint mode watches %d per port)\n",
			(unsigned long long)s->ports_full, BL_PORT_SLOTS, BL_PORT_SLOTS);
	if (s->folded)
		fprintf(out, "note: %llu more closed listeners had %llu overflows in all (only the "
			"%d closed ones with the most are kept)\n", (unsigned long long)s->folded,
			(unsigned long long)s->folded_overflows, BL_MAX_RETIRED);
	for (i = 0; i < s->n; i++) {
		struct listener *l = &s->ls[i];

		if (!l->watched || !(bl_overflows(&l->tot) || l->tot.waits || l->tot.syn_retrans))
			continue;
		if (!any)
			fprintf(out, "\nRecommendations:\n");
		any = true;
		fprintf(out, "%s %s:\n", bl_family_name(l->family), bl_addr_text(s, l, addr, sizeof(addr)));
		print_recommendations(s, out, l);
	}
	if (!any && s->run.tcp_drops_missing)
		fprintf(out, "\nNo AF_UNIX listen queue overflowed; TCP overflows were not counted "
			"(%s).\n", s->run.tcp_drops_missing);
	else if (!any)
		fprintf(out, "\nNo listen queue overflowed%s.\n",
			s->netstat_ok && s->netstat[0] != s->netstat0[0] ?
			" among the watched listeners (ListenOverflows rose elsewhere)" : "");
	fflush_noted(out);
}

