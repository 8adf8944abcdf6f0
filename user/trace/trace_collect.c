// SPDX-License-Identifier: GPL-2.0
/*
 * --trace: read flows.bpf.c's maps at the end of a run (and during it, the flows
 * of exited processes: trace_harvest, so that new processes never fill the map). The kernel keys flows
 * by (transport, endpoint, sender tgid+comm, receiver tgid+comm) per CPU; this
 * sums the CPUs, names endpoints, merges tgids of one comm pair into one flow
 * with its pid lists, applies --unix/--port and computes the percentiles.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "flows.h"	/* before the skeleton: its .bss has struct fl_bulk_slot */
#include "flows.skel.h"
#include "hist.h"
#include "trace_collect.h"
#include "util.h"
#include "unix_name.h"

const char *const fl_stage_names[FS__COUNT] = {
	[FS_SEND] = "send;call",
	[FS_EPOLL] = "wait;epoll",
	[FS_BUSY] = "wait;busy",
	[FS_RECV_BLOCKED] = "recv;blocked",
	[FS_RECV] = "recv;copy+return",
};

const char *const fl_miss_names[FM__COUNT] = {
	[FM_FIFO_FULL] = "fifo_full",
	[FM_NO_DIR] = "socket_unknown",
	[FM_DIR_FULL] = "socket_map_full",
	[FM_FLOW_FULL] = "flow_map_full",
	[FM_NO_ENTRY] = "send_outside_syscall",
	[FM_REUSED] = "socket_reused",
	[FM_TASK_FULL] = "task_map_full",
	[FM_CLOSED] = "socket_closed_unread",
	[FM_CONCURRENT] = "concurrent_send",
	[FM_RECV_UNSEEN] = "receive_unseen",
};

/* What each counter means in a run's report (docs/TRACE.md, "Not matched"). */
const char *const fl_miss_meanings[FM__COUNT] = {
	[FM_FIFO_FULL] = "sends dropped: more than 16 in flight on one connection",
	[FM_NO_DIR] = "receives on a connection whose sender was not seen sending (data sent "
		      "before the run started); not counted when that send showed up later",
	[FM_DIR_FULL] = "sends or receives lost: the connection map was full",
	[FM_FLOW_FULL] = "messages of flows the flow maps had no room for",
	[FM_NO_ENTRY] = "matched, but sent outside a traced syscall (io_uring, a kernel "
			"sender): their send;call starts at the handover",
	[FM_REUSED] = "messages in flight on a connection whose socket addresses a new one "
		      "took",
	[FM_TASK_FULL] = "sends or receives of threads whose state could not be kept",
	[FM_CLOSED] = "messages never read: their receiver closed its socket (or was killed) "
		      "with them queued",
	[FM_CONCURRENT] = "sends made while another process or thread was recording one on "
			  "the same socket",
	[FM_RECV_UNSEEN] = "messages read whose recv() boundary did not run (TCP, found when "
			   "the socket closed)",
};

uint64_t fl_bucket_value(int b)
{
	int sub = 1 << FL_SUB_BITS, e, m;
	uint64_t lo, width;

	if (b < sub)
		return b;
	e = b / sub + FL_SUB_BITS - 1;
	m = b % sub;
	width = 1ull << (e - FL_SUB_BITS);
	lo = (uint64_t)(sub + m) << (e - FL_SUB_BITS);
	return lo + width / 2;	/* the bucket's middle: within 6 % of any value in it */
}

uint64_t fl_hist_quantile(const uint64_t *hist, int n, double q)
{
	uint64_t total = 0;
	int b;

	for (b = 0; b < n; b++)
		total += hist[b];
	b = hist_quantile_bucket(hist, n, total, q);
	return b < 0 ? 0 : fl_bucket_value(b);
}

/* The kept name of unix endpoint id, else NULL; *at: where it would go (sorted by id). */
static struct ep_name *name_find(const struct trace_run *run, uint64_t id, int *at)
{
	int lo = 0, hi = run->n_names;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (run->names[mid].id == id)
			return &run->names[mid];
		if (run->names[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return NULL;
}

/* Keep a name; false when there is no room (TR_MAX_NAMES, or no memory). */
static bool name_keep(struct trace_run *run, uint64_t id, const struct fl_uaddr *ua)
{
	struct ep_name *names;
	int at;

	if (name_find(run, id, &at))
		return true;
	if (run->n_names == TR_MAX_NAMES)
		return false;
	names = grow_array(run->names, &run->names_cap, run->n_names, sizeof(*names), 64);
	if (!names)
		return false;
	run->names = names;
	memmove(&run->names[at + 1], &run->names[at], (run->n_names - at) * sizeof(*run->names));
	run->names[at].id = id;
	run->names[at].ua = *ua;
	run->n_names++;
	return true;
}

/*
 * Move the unix endpoint names out of the uaddrs map into run: the map only needs room for
 * the names made between two harvests, however many endpoints a long run sees. Keys are
 * listed first (a walk from a deleted key starts over); a name run has no room for stays.
 */
static void names_take(struct flows_bpf *skel, struct trace_run *run)
{
	uint64_t keys[256], *prev = NULL;
	struct fl_uaddr ua;
	int n, i;

	do {
		n = 0;
		prev = NULL;
		while (n < (int)ARRAY_SIZE(keys) &&
		       !bpf_map__get_next_key(skel->maps.uaddrs, prev, &keys[n], sizeof(keys[n]))) {
			prev = &keys[n];
			n++;
		}
		for (i = 0; i < n; i++) {
			if (bpf_map__lookup_elem(skel->maps.uaddrs, &keys[i], sizeof(keys[i]), &ua,
						 sizeof(ua), 0))
				continue;
			if (!name_keep(run, keys[i], &ua))
				return;
			bpf_map__delete_elem(skel->maps.uaddrs, &keys[i], sizeof(keys[i]), 0);
		}
	} while (n == (int)ARRAY_SIZE(keys));
}

void trace_endpoint_name(struct flows_bpf *skel, struct trace_run *run, const struct fl_key *k,
			 char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	struct ep_name *kept;
	struct fl_uaddr ua;
	uint32_t n;
	int at;

	if (k->transport == FL_TCP) {
		inet_ntop(k->v6 ? AF_INET6 : AF_INET, k->addr, ip, sizeof(ip));
		snprintf(out, len, k->v6 ? "[%s]:%u" : "%s:%u", ip, k->port);
		return;
	}
	if (!k->ep_id) {
		snprintf(out, len, "socketpair");
		return;
	}
	kept = name_find(run, k->ep_id, &at);
	if (kept)
		ua = kept->ua;
	else if (bpf_map__lookup_elem(skel->maps.uaddrs, &k->ep_id, sizeof(k->ep_id), &ua,
				      sizeof(ua), 0))
		ua.len = 0;
	if (!ua.len) {
		snprintf(out, len, "unix:unnamed");
		return;
	}
	n = ua.len < FL_PATH_LEN ? ua.len : FL_PATH_LEN;
	while (n > 1 && ua.path[0] && !ua.path[n - 1])	/* a path's length counts its NUL */
		n--;
	fmt_unix_addr(ua.path, n, out, len);
}

bool trace_endpoint_selected(const struct trace_opts *o, const struct fl_key *k, const char *ep)
{
	int i;

	if (!o->n_ports && !o->n_unix)
		return true;
	for (i = 0; i < o->n_ports; i++)
		if (k->transport == FL_TCP && k->port == o->ports[i])
			return true;
	for (i = 0; i < o->n_unix; i++)
		if (k->transport == FL_UNIX && !strcmp(ep, o->unix_paths[i]))
			return true;
	return false;
}

static void add_pid(struct flow_end *e, uint32_t pid)
{
	int i;

	for (i = 0; i < e->n_pids; i++)
		if (e->pids[i] == pid)
			return;
	if (e->n_pids < TR_MAX_PIDS)
		e->pids[e->n_pids++] = pid;
}

static struct flow *flow_for(struct trace_run *run, const struct fl_key *k, const char *ep)
{
	char s_comm[TR_COMM_TXT], r_comm[TR_COMM_TXT];
	struct flow *f;
	int i;

	str_escape(k->s_comm, strnlen(k->s_comm, FL_COMM_LEN), s_comm, sizeof(s_comm));
	str_escape(k->r_comm, strnlen(k->r_comm, FL_COMM_LEN), r_comm, sizeof(r_comm));
	for (i = 0; i < run->n_flows; i++) {
		f = &run->flows[i];
		if (f->transport == k->transport && !strcmp(f->endpoint, ep) &&
		    !strcmp(f->sender.comm, s_comm) && !strcmp(f->receiver.comm, r_comm))
			return f;
	}
	if (run->n_flows == TR_MAX_FLOWS)	/* a long run on a busy host: endpoints come and go */
		return NULL;
	f = grow_array(run->flows, &run->flows_cap, run->n_flows, sizeof(*f), 16);
	if (!f)
		return NULL;
	run->flows = f;
	f = &run->flows[run->n_flows++];
	memset(f, 0, sizeof(*f));
	f->transport = k->transport;
	snprintf(f->endpoint, sizeof(f->endpoint), "%s", ep);
	memcpy(f->sender.comm, s_comm, sizeof(s_comm));
	memcpy(f->receiver.comm, r_comm, sizeof(r_comm));
	return f;
}

int trace_hist_merge(struct sparse_hist *h, const __u32 *dense)
{
	int b, i;

	for (b = 0, i = 0; b < FL_NBUCKETS; b++) {
		if (!dense[b])
			continue;
		while (i < h->n && h->bucket[i] < b)
			i++;
		if (i < h->n && h->bucket[i] == b) {
			h->count[i] += dense[b];
			continue;
		}
		if (h->n == h->cap) {
			int ncap = h->cap ? h->cap * 2 : 8;
			uint16_t *nb = realloc(h->bucket, ncap * sizeof(*nb));
			uint64_t *nc;

			if (!nb)
				return -ENOMEM;
			h->bucket = nb;
			nc = realloc(h->count, ncap * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			h->count = nc;
			h->cap = ncap;
		}
		memmove(&h->bucket[i + 1], &h->bucket[i], (h->n - i) * sizeof(*h->bucket));
		memmove(&h->count[i + 1], &h->count[i], (h->n - i) * sizeof(*h->count));
		h->bucket[i] = b;
		h->count[i] = dense[b];
		h->n++;
	}
	return 0;
}

uint64_t trace_hist_quantile(const struct sparse_hist *h, double q)
{
	uint64_t dense[FL_NBUCKETS] = { 0 };
	int i;

	for (i = 0; i < h->n; i++)
		dense[h->bucket[i]] = h->count[i];
	return fl_hist_quantile(dense, FL_NBUCKETS, q);
}

void trace_flow_free(struct flow *f)
{
	int st;

	free(f->lat_hist.bucket);
	free(f->lat_hist.count);
	for (st = 0; st < FS__COUNT; st++) {
		free(f->st_hist[st].bucket);
		free(f->st_hist[st].count);
	}
}

static int add_stats(struct flow *f, const struct fl_stats *s)
{
	int st, err;

	f->messages += s->msgs;
	f->bytes += s->bytes;
	f->misses += s->misses;
	f->cross_cpu += s->cross_cpu;
	f->conns += s->conns;
	f->conns_to_srv += s->conns_to_srv;
	f->lat_sum += s->lat_sum;
	err = trace_hist_merge(&f->lat_hist, s->lat_hist);
	for (st = 0; st < FS__COUNT; st++) {
		f->st_sum[st] += s->st_sum[st];
		f->st_cnt[st] += s->st_cnt[st];
		err = err ?: trace_hist_merge(&f->st_hist[st], s->st_hist[st]);
	}
	for (st = 0; st < FK__COUNT; st++)
		f->k_sum[st] += s->k_sum[st];
	for (st = 0; st < FR__COUNT; st++)
		f->rk_sum[st] += s->rk_sum[st];
	for (st = 0; st < FBO__COUNT * FBK__COUNT; st++)
		f->bk_sum[st / FBK__COUNT][st % FBK__COUNT] += s->bk_sum[st / FBK__COUNT][st % FBK__COUNT];
	f->bulk_msgs += s->bulk_msgs;
	return err;
}

static void finish(struct flow *f)
{
	double sum = 0;
	int st;

	f->mean = f->messages ? (double)f->lat_sum / f->messages : 0;
	f->p50 = trace_hist_quantile(&f->lat_hist, 0.50);
	f->p90 = trace_hist_quantile(&f->lat_hist, 0.90);
	f->p99 = trace_hist_quantile(&f->lat_hist, 0.99);
	for (st = 0; st < FS__COUNT; st++) {
		struct flow_stage *g = &f->stages[st];

		g->name = fl_stage_names[st];
		g->count = f->st_cnt[st];
		g->ns_per_msg = f->messages ? (double)f->st_sum[st] / f->messages : 0;
		g->p50_ns = trace_hist_quantile(&f->st_hist[st], 0.50);
		g->p99_ns = trace_hist_quantile(&f->st_hist[st], 0.99);
		sum += g->ns_per_msg;
	}
	f->coverage = f->mean > 0 ? sum / f->mean : 0;
}

const int kstage_boundary[FK__COUNT] = {
	[FK_PROTO] = B_PROTO,
	[FK_DEV_QUEUE] = B_DEV_QUEUE,
	[FK_SOFTIRQ] = B_SOFTIRQ,
	[FK_IP_RCV] = B_T_IP_RCV,
	[FK_DATA_READY] = B_DATA_READY,
	[FK_WAKE_END] = B_WAKE_END,
	[FK_SEND_EXIT] = B_SEND_EXIT,
};

/* Kernel stages being cut from one message's values or a flow's sums (per: its messages). */
struct kcut {
	struct flow_kstage *out;
	int n;
	double per;
	const uint64_t *st_sum;	/* enum fl_stage */
};

static void kstage_add(struct kcut *c, int of, const char *name, uint64_t sum)
{
	struct flow_kstage *k;

	if (c->n >= TR_MAX_KSTAGES)	/* cannot happen: TR_MAX_KSTAGES counts every one */
		return;
	k = &c->out[c->n++];

	snprintf(k->name, sizeof(k->name), "%s", name);
	k->of = of;
	k->ns_per_msg = (double)sum / c->per;
}

_Static_assert(FBK__COUNT == STAGE_NR_BULK, "one list of bulk slices");

/* Did sliced messages leave slices under a stage (a row of enum fl_bulk_of, or NULL)? */
static bool bulk_any(const uint64_t *bk)
{
	int i;

	for (i = 0; bk && i < FBK__COUNT; i++)
		if (bk[i])
			return true;
	return false;
}

/* The slices of sliced messages under stage of, when it has any. */
static void bulk_kstages(struct kcut *c, int of, const uint64_t *bk)
{
	int i;

	for (i = 0; bulk_any(bk) && i < FBK__COUNT; i++)
		kstage_add(c, of, stage_bulk_names[i], bk[i]);
}

/*
 * send;call's kernel stages, named from the stage table for the transport by the boundary
 * that ends each and the last one seen before it (merged as --compare merges what a mode
 * cannot see). The handover always ends one; a boundary that does not mark the transport's
 * path (a NET_RX softirq inside an AF_UNIX send) gives its time to the next stage.
 */
static void send_kstages(struct kcut *c, enum transport t, uint32_t seen, const uint64_t *k,
			 const uint64_t *bk)
{
	int handover = t == TR_UNIX ? FK_WAKE_END : FK_SEND_EXIT, prev = B_SEND_ENTER, i;
	char name[STAGE_NAME_LEN];
	uint64_t carry = 0;

	for (i = 0; i <= handover; i++) {
		int b = kstage_boundary[i];

		carry += k[i];
		if (i != handover && (!(seen & (1u << i)) || !stage_boundary(b)->tp[t]))
			continue;
		stage_name(t, prev, b, false, false, name, sizeof(name));
		kstage_add(c, FS_SEND, name, carry);
		carry = 0;
		prev = b;
	}
	bulk_kstages(c, FS_SEND, bk);
}

/*
 * The receiver's parts of a stage: the first children's sums as measured, then the slices of
 * the sliced messages that ended in it (bk, or NULL), the last child what remains of the
 * stage (each clamped so that none goes below zero).
 */
static void recv_kstages(struct kcut *c, int of, int n, const char *const *names,
			 const uint64_t *sums, const uint64_t *bk)
{
	uint64_t left = c->st_sum[of], sliced = 0;
	int i;

	for (i = 0; bk && i < FBK__COUNT; i++)
		sliced += bk[i];
	left = left > sliced ? left - sliced : 0;
	for (i = 0; i < n - 1; i++) {
		uint64_t v = sums[i] < left ? sums[i] : left;

		kstage_add(c, of, names[i], v);
		left -= v;
	}
	bulk_kstages(c, of, bk);
	kstage_add(c, of, names[n - 1], left);
}

int trace_kstages_cut(const struct kstage_in *in, struct flow_kstage *out)
{
	enum transport t = in->transport == FL_UNIX ? TR_UNIX : TR_TCP;
	const char *run = stage_boundary(B_RUN)->stage[t], *copy = stage_boundary(B_COPY_DONE)->stage[t],
		   *ret = stage_boundary(B_RECV_EXIT)->stage[t];
	const uint64_t *rk = in->rk;
	const uint64_t (*bk)[FBK__COUNT] = in->bk;
	struct kcut c = { out, 0, in->per, in->st_sum };

	if (in->per <= 0)
		return 0;
	if (in->seen)
		send_kstages(&c, t, in->seen, in->k, bk ? bk[FBO_SEND] : NULL);
	/* a sliced message's receiver between two reads of it: the rest is its own work */
	if (bk && bulk_any(bk[FBO_BUSY]))
		recv_kstages(&c, FS_BUSY, 1, (const char *[]){ BUSY_OTHER_STAGE }, NULL,
			     bk[FBO_BUSY]);
	if ((in->rseen & FRS_RUN) && (in->rseen & FRS_COPY)) {
		if (in->st_mask & (1u << FS_RECV_BLOCKED))
			recv_kstages(&c, FS_RECV_BLOCKED, 3, (const char *[]){ run, copy, ret },
				     (uint64_t[]){ rk[FR_BLOCKED_RUN], rk[FR_BLOCKED_COPY] },
				     bk ? bk[FBO_BLOCKED] : NULL);
		if (in->st_mask & (1u << FS_RECV))
			recv_kstages(&c, FS_RECV, 2, (const char *[]){ copy, ret },
				     (uint64_t[]){ rk[FR_RECV_COPY] }, bk ? bk[FBO_RECV] : NULL);
	}
	if ((in->rseen & FRS_RUN) && (in->st_mask & (1u << FS_EPOLL)))
		recv_kstages(&c, FS_EPOLL, 2, (const char *[]){ run, EPOLL_RETURN_STAGE },
			     (uint64_t[]){ rk[FR_EPOLL_RUN] }, NULL);
	return c.n;
}

uint32_t trace_stages_passed(const uint64_t *st_cnt)
{
	uint32_t mask = 0;
	int st;

	for (st = 0; st < FS__COUNT; st++)
		if (st_cnt[st])
			mask |= 1u << st;
	return mask;
}

static void kstages_name(struct flow *f, uint32_t seen, uint32_t rseen)
{
	struct kstage_in in = { f->transport, seen, rseen, f->k_sum, f->rk_sum, f->bk_sum, f->st_sum,
				trace_stages_passed(f->st_cnt), (double)f->messages };

	f->n_kstages = trace_kstages_cut(&in, f->kstages);
}

static int by_messages(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;

	if (x->messages != y->messages)
		return x->messages < y->messages ? 1 : -1;
	return strcmp(x->endpoint, y->endpoint);
}

/* Is process tgid gone? (a zombie still counts as there: harvested later) */
static bool tgid_gone(uint32_t tgid)
{
	return tgid && kill(tgid, 0) && errno == ESRCH;
}

/* One flow key's per-CPU stats (vals: ncpu of them) into run's flow for it. */
static int merge_one(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run,
		     const struct fl_key *key, const struct fl_stats *vals, int ncpu)
{
	struct flow *f;
	char ep[160];
	int c;

	trace_endpoint_name(skel, run, key, ep, sizeof(ep));
	if (!trace_endpoint_selected(o, key, ep))
		return 0;
	f = flow_for(run, key, ep);
	if (!f && run->n_flows == TR_MAX_FLOWS) {
		for (c = 0; c < ncpu; c++)
			run->flows_not_kept += vals[c].msgs;
		return 0;
	}
	if (!f)
		return -ENOMEM;
	add_pid(&f->sender, key->s_tgid);
	add_pid(&f->receiver, key->r_tgid);
	for (c = 0; c < ncpu; c++)
		if (add_stats(f, &vals[c]))
			return -ENOMEM;
	return 0;
}

/*
 * Sum the flow map into run: every flow (gone false), or only those with an end whose
 * process has exited, which are then taken out of the map. A message such a flow still
 * completes later (its bytes read after the sender exited) makes a new entry, taken at
 * the next harvest. The keys are listed first: a walk from a deleted key starts over.
 */
static int merge_flows(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run,
		       bool gone)
{
	int ncpu = libbpf_num_possible_cpus(), n = 0, cap = 0, i, err = 0;
	struct fl_key key, *keys = NULL, *prev = NULL;
	size_t vsz = ncpu * sizeof(struct fl_stats);
	struct fl_stats *vals;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = malloc(vsz);
	if (!vals)
		return -ENOMEM;
	while (!err && !bpf_map__get_next_key(skel->maps.flows, prev, &key, sizeof(key))) {
		if (n == cap) {
			struct fl_key *k = realloc(keys, (cap = cap ? cap * 2 : 256) * sizeof(*k));

			if (!k) {
				err = -ENOMEM;
				break;
			}
			keys = k;
		}
		keys[n] = key;
		prev = &keys[n];
		if (!gone || tgid_gone(key.s_tgid) || tgid_gone(key.r_tgid))
			n++;
	}
	for (i = 0; !err && i < n; i++) {
		/* taken in one step where the kernel can (5.14+ for per-CPU hashes) */
		if (gone && !bpf_map__lookup_and_delete_elem(skel->maps.flows, &keys[i],
							      sizeof(key), vals, vsz, 0)) {
			err = merge_one(skel, o, run, &keys[i], vals, ncpu);
			continue;
		}
		if (bpf_map__lookup_elem(skel->maps.flows, &keys[i], sizeof(key), vals, vsz, 0))
			continue;
		if (gone)
			bpf_map__delete_elem(skel->maps.flows, &keys[i], sizeof(key), 0);
		err = merge_one(skel, o, run, &keys[i], vals, ncpu);
	}
	free(keys);
	free(vals);
	return err;
}

/* Direction states made and neither deleted nor still in the map: the LRU evicted them. */
static uint64_t dirs_evicted(struct flows_bpf *skel)
{
	uint64_t made = skel->bss->dirs_made, gone = skel->bss->dirs_deleted, n = 0;
	size_t ksz = bpf_map__key_size(skel->maps.dirs);
	char key[128], next[128];	/* struct dir_key, private to flows.bpf.c */
	void *prev = NULL;

	if (ksz > sizeof(key))
		return 0;
	while (!bpf_map__get_next_key(skel->maps.dirs, prev, next, ksz)) {
		memcpy(key, next, ksz);
		prev = key;
		n++;
	}
	return made > gone + n ? made - gone - n : 0;
}

int trace_harvest(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run)
{
	names_take(skel, run);
	return merge_flows(skel, o, run, true);
}

const char *trace_transport_name(int t)
{
	return t == FL_UNIX ? "unix" : "tcp";
}

int trace_hist_copy(struct sparse_hist *to, const struct sparse_hist *from)
{
	*to = (struct sparse_hist){ .n = from->n, .cap = from->n };
	if (!from->n)
		return 0;
	to->bucket = malloc(from->n * sizeof(*to->bucket));
	to->count = malloc(from->n * sizeof(*to->count));
	if (!to->bucket || !to->count)
		return -ENOMEM;
	memcpy(to->bucket, from->bucket, from->n * sizeof(*to->bucket));
	memcpy(to->count, from->count, from->n * sizeof(*to->count));
	return 0;
}

/* The kernel's miss counters into run, with the flows it had no room to keep. */
static void read_misses(struct flows_bpf *skel, struct trace_run *run)
{
	int i;

	for (i = 0; i < FM__COUNT; i++)
		run->misses[i] = skel->bss->misses[i];
	run->misses[FM_FLOW_FULL] += run->flows_not_kept;
}

int trace_snapshot(struct flows_bpf *skel, const struct trace_opts *o,
		   const struct trace_run *run, struct trace_run *out)
{
	int i, st, err = 0;

	memset(out, 0, sizeof(*out));
	out->flows = calloc(run->n_flows + 1, sizeof(*out->flows));
	out->names = malloc((run->n_names + 1) * sizeof(*out->names));
	if (!out->flows || !out->names)
		err = -ENOMEM;
	for (i = 0; !err && i < run->n_flows; i++) {
		struct flow *f = &out->flows[i];

		*f = run->flows[i];
		out->n_flows = i + 1;
		f->lat_hist = (struct sparse_hist){ 0 };
		for (st = 0; st < FS__COUNT; st++)
			f->st_hist[st] = (struct sparse_hist){ 0 };
		err = trace_hist_copy(&f->lat_hist, &run->flows[i].lat_hist);
		for (st = 0; !err && st < FS__COUNT; st++)
			err = trace_hist_copy(&f->st_hist[st], &run->flows[i].st_hist[st]);
	}
	out->flows_cap = run->n_flows + 1;
	if (!err) {
		memcpy(out->names, run->names, run->n_names * sizeof(*out->names));
		out->n_names = run->n_names;
		out->names_cap = run->n_names + 1;
		out->kstages = run->kstages;
		out->rkstages = run->rkstages;
		err = merge_flows(skel, o, out, false);
	}
	for (i = 0; !err && i < out->n_flows; i++) {
		finish(&out->flows[i]);
		kstages_name(&out->flows[i], out->kstages, out->rkstages);
	}
	if (!err && out->n_flows)
		qsort(out->flows, out->n_flows, sizeof(*out->flows), by_messages);
	out->flows_not_kept = run->flows_not_kept;
	read_misses(skel, out);
	if (err) {	/* what trace_run_free would free: flows and names only here */
		for (i = 0; i < out->n_flows; i++)
			trace_flow_free(&out->flows[i]);
		free(out->flows);
		free(out->names);
		memset(out, 0, sizeof(*out));
	}
	return err;
}

int trace_collect(struct flows_bpf *skel, const struct trace_opts *o, struct trace_run *run)
{
	int i, err;

	names_take(skel, run);
	err = merge_flows(skel, o, run, false);

	for (i = 0; i < run->n_flows; i++) {
		finish(&run->flows[i]);
		kstages_name(&run->flows[i], run->kstages, run->rkstages);
	}
	if (run->n_flows)
		qsort(run->flows, run->n_flows, sizeof(*run->flows), by_messages);
	read_misses(skel, run);
	run->dirs_evicted = dirs_evicted(skel);
	run->runs_skipped = attach_runs_skipped(skel->obj);
	run->names_lost = skel->bss->names_lost;
	run->bulk_unsliced = skel->bss->bulk_unsliced;
	run->procs_exited = skel->bss->procs_exited;
	run->procs_unfollowed = skel->bss->procs_unfollowed;
	return err;
}
