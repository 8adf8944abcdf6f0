// SPDX-License-Identifier: GPL-2.0
/* --backlog: docs/BACKLOG.md, "How it counts (bpf/backlog.bpf.c)", "One handler per event" and
 * "TCP: attributing overflows to the listener, and how exact it is". */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "backlog.h"
#include "common.bpf.h"

/* 0: no TCP_LISTEN_OVERFLOW drop reason (6.1, 6.12) */
const volatile __u32 listen_overflow_reason = 0;
/* never a client (a softirq may run while we are current) */
const volatile __u32 self_tgid = 0;

__u64 missed_map_full = 0;	/* a map was full */
__u64 unix_inflight = 0;	/* AF_UNIX connects in progress */
__u64 wait_returns_missed = 0;	/* unix_wait_for_peer returns unseen */
__u32 iter_n = 0;		/* listeners found; reset per run */
__u32 iter_tcp_shown = 0;	/* TCP walk: sockets shown, */
__u32 iter_tcp_stopped = 0;	/* 1: stopped at the established hash */

struct bl_conn {
	__u64 sleep_start;
	__u64 wait_ns;
	__u64 sock;		/* probe modes: for the child at exit */
	__u64 queued_ns;	/* entered the listener's queue */
	__s32 fd;		/* tracepoint mode */
	__u32 depth;		/* queued ahead of it */
	__u32 depth_known;
	__u32 waited;
	__u32 path_len;
	__u32 netns, mntns;
	char path[BL_PATH_LEN + 8];	/* + read_str's NUL after 108 bytes */
};

/* [0, iter_n) of the last iterator run */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BL_MAX_LISTENERS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bl_listener);
} listeners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct bl_key);
	__type(value, struct bl_val);
} counts SEC(".maps");

/* tgid -> counted client's comm, cgroup, netns */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct bl_comm);
} comms SEC(".maps");

/* tid -> AF_UNIX connect in progress. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct bl_conn);
} conns SEC(".maps");

/* SYN_SENT client sock -> owner tgid */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} sk_owner SEC(".maps");

/* client port -> tgid, for SYNs handled outside the client */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} port_owner SEC(".maps");

/* tid -> tgid inside an AF_INET/AF_INET6 connect (tracepoint mode) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} tcp_connecting SEC(".maps");

/* watched port -> listeners (tracepoint mode), from user space */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct bl_port);
} tcp_ports SEC(".maps");

/* child -> when and where queued; LRU: children closed before accept() age out */
struct bl_pending {
	__u64 queued_ns;
	struct bl_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct bl_pending);
} pending SEC(".maps");

/* listener -> accept wait, arrival depth */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct bl_key);
	__type(value, struct bl_hist);
} hists SEC(".maps");

/* tid -> newsock of an accept in progress */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} accepting SEC(".maps");

/* in the client's connect() */
static __always_inline void remember_comm(__u32 tgid)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct bl_comm c = {};

	if (!tgid || bpf_map_lookup_elem(&comms, &tgid))
		return;
	bpf_get_current_comm(c.comm, sizeof(c.comm));
	c.cgroup = bpf_get_current_cgroup_id();
	c.netns = BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
	bpf_map_update_elem(&comms, &tgid, &c, BPF_NOEXIST);
}

static __always_inline struct bl_val *counter(struct bl_key *key)
{
	static const struct bl_val zero;
	struct bl_val *v = lookup_or_try_init(&counts, key, &zero);

	if (!v)
		__sync_fetch_and_add(&missed_map_full, 1);
	return v;
}

/* 0 for kernel threads and udsprobe itself */
static __always_inline __u32 current_user_tgid(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tgid == self_tgid || (BPF_CORE_READ(t, flags) & PF_KTHREAD))
		return 0;
	return tgid;
}

static __always_inline __u32 sk_netns(struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

/* asm: a clamp every verifier (6.1 too) can follow */
static __always_inline __u32 bounded_len(long n)
{
	__u32 len = n < 1 ? 1 : n > BL_PATH_LEN ? BL_PATH_LEN : (__u32)n;

	asm volatile("%[len] &= 0x7f\n\t"
		     "if %[len] <= %[max] goto +1\n\t"
		     "%[len] = %[max]\n\t"
		     "if %[len] > 0 goto +1\n\t"
		     "%[len] = 1\n\t"
		     : [len] "+r"(len) : [max] "i"(BL_PATH_LEN));
	return len;
}

/* queue waits */

static __always_inline struct bl_hist *hist_of(const struct bl_key *key)
{
	static const struct bl_hist zero;
	struct bl_hist *h = lookup_or_try_init(&hists, key, &zero);

	if (!h)
		__sync_fetch_and_add(&missed_map_full, 1);
	return h;
}

/* depth_known: the listener was seen */
static __always_inline void conn_queued(__u64 child, const struct bl_key *key, __u64 when,
					__u32 depth, bool depth_known)
{
	struct bl_pending p = { .queued_ns = when };
	struct bl_hist *h;
	__u32 slot;

	if (!child)
		return;
	__builtin_memcpy(&p.key, key, sizeof(p.key));
	p.key.tgid = 0;
	bpf_map_update_elem(&pending, &child, &p, BPF_ANY);
	if (!depth_known)
		return;
	h = hist_of(&p.key);
	if (!h)
		return;
	slot = depth < 16 ? depth : 12 + log2_slot(depth);
	if (slot >= BL_DEPTH_SLOTS)
		slot = BL_DEPTH_SLOTS - 1;
	barrier_var(slot);	/* the verifier needs the mask below */
	h->depth_slots[slot & (BL_DEPTH_SLOTS - 1)]++;
	h->queued++;
	h->depth_sum += depth;
	if (depth > h->depth_max)
		h->depth_max = depth;
}

static __always_inline void conn_accepted(__u64 child)
{
	struct bl_pending *p = bpf_map_lookup_elem(&pending, &child);
	struct bl_key key;
	struct bl_hist *h;
	__u64 wait;
	__u32 slot;

	if (!p)
		return;
	wait = bpf_ktime_get_ns() - p->queued_ns;
	__builtin_memcpy(&key, &p->key, sizeof(key));
	bpf_map_delete_elem(&pending, &child);
	h = hist_of(&key);
	if (!h)
		return;
	slot = log2_slot(wait / 1000);
	if (slot >= BL_WAIT_SLOTS)
		slot = BL_WAIT_SLOTS - 1;
	barrier_var(slot);
	h->wait_slots[slot & (BL_WAIT_SLOTS - 1)]++;
	h->accepted++;
	h->wait_ns += wait;
	if (wait > h->wait_max_ns)
		h->wait_max_ns = wait;
}

/* tracepoint mode: connect's and accept's fds are sockets */
static __always_inline __u64 sock_of_fd(long fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct file **fds = BPF_CORE_READ(t, files, fdt, fd);
	unsigned int max = BPF_CORE_READ(t, files, fdt, max_fds);
	struct file *f = NULL;

	if (fd < 0 || fd >= max)
		return 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f ? (__u64)BPF_CORE_READ(f, private_data) : 0;
}

static __always_inline void accepted_sock(__u64 newsock)
{
	if (newsock)
		conn_accepted((__u64)BPF_CORE_READ((struct socket *)newsock, sk));
}

static __always_inline void accept_enter(struct socket *newsock)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 v = (__u64)newsock;

	bpf_map_update_elem(&accepting, &tid, &v, BPF_ANY);
}

static __always_inline void accept_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *v = bpf_map_lookup_elem(&accepting, &tid);

	if (!v)
		return;
	accepted_sock(*v);	/* newsock->sk is set only on success */
	bpf_map_delete_elem(&accepting, &tid);
}

/* AF_UNIX */

/* Exactly the kernel's bytes (issue 16 item 8): a pathname ends at its first NUL within
 * addrlen, an abstract name is all addrlen - 2 bytes. */
static __always_inline void unix_connect_enter(const struct sockaddr_un *sun, long addrlen,
					       bool user, __u64 sock, long fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct bl_conn c = {};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u16 family = 0;
	long n = addrlen - 2, got;
	char first = 0;
	__u32 len;

	if (!sun || n <= 0)
		return;
	if (user) {
		bpf_probe_read_user(&family, sizeof(family), &sun->sun_family);
		bpf_probe_read_user(&first, 1, sun->sun_path);
	} else {
		bpf_probe_read_kernel(&family, sizeof(family), &sun->sun_family);
		bpf_probe_read_kernel(&first, 1, sun->sun_path);
	}
	if (family == AF_INET || family == AF_INET6) {
		__u32 tgid = current_user_tgid();

		if (user && tgid)
			bpf_map_update_elem(&tcp_connecting, &tid, &tgid, BPF_ANY);
		return;
	}
	if (family != AF_UNIX)
		return;
	len = bounded_len(n);
	c.sock = sock;
	c.fd = fd;
	c.netns = BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
	if (first) {	/* pathname: up to the NUL */
		if (user)
			got = bpf_probe_read_user_str(c.path, len + 1, sun->sun_path);
		else
			got = bpf_probe_read_kernel_str(c.path, len + 1, sun->sun_path);
		if (got <= 1)
			return;
		c.path_len = got - 1;
		c.mntns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
	} else {	/* abstract: leading \0 included */
		if (user)
			bpf_probe_read_user(c.path, len, sun->sun_path);
		else
			bpf_probe_read_kernel(c.path, len, sun->sun_path);
		c.path_len = len;
	}
	if (bpf_map_update_elem(&conns, &tid, &c, BPF_ANY))
		__sync_fetch_and_add(&missed_map_full, 1);
	else
		__sync_fetch_and_add(&unix_inflight, 1);
}

/* a kretprobe misses returns beyond maxactive (docs/BACKLOG.md, "One handler per event"):
 * found at the next sleep or connect's return, the wait ends there, counted */
static __always_inline void unix_wait_missed_end(struct bl_conn *c)
{
	c->wait_ns += bpf_ktime_get_ns() - c->sleep_start;
	c->sleep_start = 0;
	c->waited = 1;
	__sync_fetch_and_add(&wait_returns_missed, 1);
}

static __always_inline void unix_connect_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct bl_key key = { .family = BL_UNIX, .tgid = id >> 32 };
	struct bl_conn *c;
	struct bl_val *v;

	c = bpf_map_lookup_elem(&conns, &tid);
	if (!c)
		return;
	if (c->sleep_start)
		unix_wait_missed_end(c);
	__builtin_memcpy(key.path, c->path, sizeof(key.path));
	key.path_len = c->path_len;
	key.netns = c->netns;
	key.mntns = c->mntns;
	if (ret == 0) {	/* queued: the child is the client's peer */
		__u64 sock = c->sock ? c->sock : sock_of_fd(c->fd);
		struct sock *sk = sock ? BPF_CORE_READ((struct socket *)sock, sk) : NULL;

		if (sk)
			conn_queued((__u64)BPF_CORE_READ((struct unix_sock *)sk, peer), &key,
				    c->queued_ns ? c->queued_ns : bpf_ktime_get_ns(), c->depth,
				    c->depth_known);
	}
	if (ret == -EAGAIN || c->waited) {
		v = counter(&key);
		if (v) {
			if (ret == -EAGAIN)
				v->overflows++;
			if (c->waited) {
				v->waits++;
				v->wait_ns += c->wait_ns;
			}
		}
		remember_comm(key.tgid);
	}
	bpf_map_delete_elem(&conns, &tid);
	__sync_fetch_and_add(&unix_inflight, -1);
}

static __always_inline void unix_wait_begin(__u32 tid)
{
	struct bl_conn *c = bpf_map_lookup_elem(&conns, &tid);

	if (!c)
		return;
	if (c->sleep_start)
		unix_wait_missed_end(c);
	c->sleep_start = bpf_ktime_get_ns();
}

static __always_inline void unix_wait_end(__u32 tid)
{
	struct bl_conn *c = bpf_map_lookup_elem(&conns, &tid);

	if (c && c->sleep_start) {
		c->wait_ns += bpf_ktime_get_ns() - c->sleep_start;
		c->sleep_start = 0;
		c->waited = 1;
	}
}

/* run by connect() right after queueing: qlen includes it */
static __always_inline void unix_listener_ready(struct sock *sk)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct bl_conn *c;
	__u32 qlen;

	if (!unix_inflight || BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX ||
	    BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_LISTEN)
		return;
	c = bpf_map_lookup_elem(&conns, &tid);
	if (!c)
		return;
	qlen = BPF_CORE_READ(sk, sk_receive_queue.qlen);
	c->queued_ns = bpf_ktime_get_ns();
	c->depth = qlen ? qlen - 1 : 0;
	c->depth_known = 1;
}

/* TCP */

/* From its connect, else the task inside connect() (loopback handles the first SYN
 * there), else 0: unknown. */
static __always_inline __u32 client_of(__u32 sport)
{
	__u32 *owner = bpf_map_lookup_elem(&port_owner, &sport);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (owner)
		return *owner;
	owner = bpf_map_lookup_elem(&tcp_connecting, &tid);
	return owner ? *owner : 0;
}

enum { TCP_SYN_DROP, TCP_ACK_DROP, TCP_SYN_RETRANS };

static __always_inline void tcp_count(__u32 netns, __u32 port, __u32 tgid, int what, bool full,
				      __u32 n)
{
	struct bl_key key = { .family = BL_TCP, .tgid = tgid, .port = port, .netns = netns };
	struct bl_val *v = counter(&key);

	if (!v)
		return;
	if (what == TCP_SYN_RETRANS)
		v->syn_retrans += n;
	else if (!full)
		v->other_drops += n;
	else if (what == TCP_SYN_DROP)
		v->overflows += n;
	else
		v->ack_overflows += n;
}

static __always_inline int skb_tcp_ports(struct sk_buff *skb, __u32 *sport, __u32 *dport,
					 __u8 *flags)
{
	__u16 proto = BPF_CORE_READ(skb, protocol);
	unsigned char *head;
	struct tcphdr th;
	__u8 l4 = 0;

	if (proto != bpf_htons(ETH_P_IP) && proto != bpf_htons(ETH_P_IPV6))
		return 0;
	head = BPF_CORE_READ(skb, head);
	if (proto == bpf_htons(ETH_P_IP))
		bpf_probe_read_kernel(&l4, 1, head + BPF_CORE_READ(skb, network_header) +
				      offsetof(struct iphdr, protocol));
	else
		bpf_probe_read_kernel(&l4, 1, head + BPF_CORE_READ(skb, network_header) +
				      offsetof(struct ipv6hdr, nexthdr));
	if (l4 != IPPROTO_TCP)
		return 0;
	if (bpf_probe_read_kernel(&th, sizeof(th), head + BPF_CORE_READ(skb, transport_header)))
		return 0;
	*sport = bpf_ntohs(th.source);
	*dport = bpf_ntohs(th.dest);
	*flags = ((__u8 *)&th)[13];
	return 1;
}

#define TH_SYN 0x02
#define TH_ACK 0x10

static __always_inline bool acceptq_full(struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_ack_backlog) > BPF_CORE_READ(sk, sk_max_ack_backlog);
}

static __always_inline __u32 sk_drops_read(struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_drops.counter);
}

static __always_inline void tcp_listen_drop(struct sock *sk, struct sk_buff *skb, int what,
					    __u32 n)
{
	__u32 sport = 0, dport;
	__u8 flags;

	skb_tcp_ports(skb, &sport, &dport, &flags);
	tcp_count(sk_netns(sk), BPF_CORE_READ(sk, __sk_common.skc_num), client_of(sport), what,
		  acceptq_full(sk), n);
}

/* depth: connections ahead */
static __always_inline void tcp_child_queued(struct sock *sk, __u64 child, bool depth_known)
{
	struct bl_key key = { .family = BL_TCP };

	key.port = BPF_CORE_READ(sk, __sk_common.skc_num);
	key.netns = sk_netns(sk);
	conn_queued(child, &key, bpf_ktime_get_ns(), BPF_CORE_READ(sk, sk_ack_backlog),
		    depth_known);
}

/* probe modes; per-CPU is safe: softirq does not nest on a CPU */
struct stash {
	__u64 conn_sk, conn_skb;
	__u32 conn_drops;
	__u32 conn_answered;	/* a SYN-ACK sent inside tcp_conn_request */
	__u64 recv_sk, recv_skb;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stash);
} stashes SEC(".maps");

static __always_inline struct stash *stash(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stashes, &zero);
}

/* SYN dropped iff sk_drops moved and no SYN-ACK was sent: sk_drops is shared with other
 * CPUs. */
static __always_inline void tcp_conn_request_enter(struct sock *sk, struct sk_buff *skb)
{
	struct stash *s = stash();

	if (!s)
		return;
	s->conn_sk = (__u64)sk;
	s->conn_skb = (__u64)skb;
	s->conn_drops = sk_drops_read(sk);
	s->conn_answered = 0;
}

/* fast open: the socket is the child; outside a call, a timer retransmit: ignored */
static __always_inline void tcp_synack_sent(void)
{
	struct stash *s = stash();

	if (s && s->conn_sk)
		s->conn_answered = 1;
}

static __always_inline void tcp_conn_request_exit(void)
{
	struct stash *s = stash();
	struct sock *sk;

	if (!s || !s->conn_sk)
		return;
	sk = (struct sock *)s->conn_sk;
	if (!s->conn_answered && sk_drops_read(sk) != s->conn_drops)
		tcp_listen_drop(sk, (struct sk_buff *)s->conn_skb, TCP_SYN_DROP, 1);
	s->conn_sk = 0;
}

static __always_inline void syn_recv_sock_enter(struct sock *sk, struct sk_buff *skb)
{
	struct stash *s = stash();

	if (s) {
		s->recv_sk = (__u64)sk;
		s->recv_skb = (__u64)skb;
	}
}

/* NULL only through tcp_listendrop(). fexit reads ret with bpf_get_func_ret (the argument
 * list differs between kernels); v4-mapped: the inner v4 exit clears the stash. */
static __always_inline void syn_recv_sock_exit(__u64 child)
{
	struct stash *s = stash();
	struct sock *sk;

	if (!s || !s->recv_sk)
		return;
	sk = (struct sock *)s->recv_sk;
	if (!child)
		tcp_listen_drop(sk, (struct sk_buff *)s->recv_skb, TCP_ACK_DROP, 1);
	else	/* queued next: depth before it */
		tcp_child_queued(sk, child, true);
	s->recv_sk = 0;
}

/* Tracepoint mode: sk_drops moved since the last freed segment; the cmpxchg gives each
 * drop to exactly one event. */
static __always_inline bool tcp_drops_claimed(struct bl_port_sk *l, __u32 sport, __u32 dport,
					      __u8 flags, __u32 reason)
{
	struct sock *sk = (struct sock *)l->sk;
	__u32 now, n, netns;
	__u64 old;
	bool full;

	if (!sk)
		return false;
	now = sk_drops_read(sk);
	old = l->last_drops;
	if ((__s32)(now - (__u32)old) <= 0)
		return false;
	if (__sync_val_compare_and_swap(&l->last_drops, old, (__u64)now) != old)
		return false;	/* another CPU took these drops */
	netns = sk_netns(sk);
	full = acceptq_full(sk) || (listen_overflow_reason && reason == listen_overflow_reason);
	n = now - (__u32)old;
	if ((flags & (TH_SYN | TH_ACK)) == TH_SYN) {
		tcp_count(netns, dport, client_of(sport), TCP_SYN_DROP, full, n);
		return true;
	}
	/* a dropped ACK moves sk_drops twice (discard_and_relse); without the reason (6.1) count
	 * the segment */
	if (!listen_overflow_reason)
		n = 1;
	else if (reason == listen_overflow_reason && n > 1)
		n--;
	tcp_count(netns, dport, client_of(sport), TCP_ACK_DROP, full, n);
	return true;
}

static __always_inline void tcp_skb_freed(struct sk_buff *skb, __u32 reason)
{
	__u32 sport, dport;
	struct bl_port *l;
	__u8 flags;
	int i;

	if (!skb_tcp_ports(skb, &sport, &dport, &flags))
		return;
	/* skb->dev is NULL, netns unknown: only the dropping listener's sk_drops moves */
	l = bpf_map_lookup_elem(&tcp_ports, &dport);
	if (!l)
		return;
	for (i = 0; i < BL_PORT_SLOTS; i++)
		if (tcp_drops_claimed(&l->s[i], sport, dport, flags, reason))
			return;
}

static __always_inline void tcp_client_connect(struct sock *sk)
{
	__u32 tgid = current_user_tgid();
	__u32 sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	__u64 key = (__u64)sk;

	if (!tgid)
		return;
	bpf_map_update_elem(&sk_owner, &key, &tgid, BPF_ANY);
	if (sport)
		bpf_map_update_elem(&port_owner, &sport, &tgid, BPF_ANY);
	remember_comm(tgid);
}

static __always_inline void tcp_retransmit(struct sock *sk)
{
	__u32 dport, sport, tgid = 0, *owner;
	__u64 key = (__u64)sk;

	if (BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_SYN_SENT)
		return;
	dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	owner = bpf_map_lookup_elem(&sk_owner, &key);
	if (owner) {
		tgid = *owner;
		bpf_map_update_elem(&port_owner, &sport, &tgid, BPF_ANY);
	}
	tcp_count(sk_netns(sk), dport, tgid, TCP_SYN_RETRANS, true, 1);
}

/* fentry/kprobe */

FENTRY_KPROBE(unix_stream_connect,
	      unix_connect_enter((const struct sockaddr_un *)uaddr, addr_len, false, (__u64)sock,
				 -1),
	      struct socket *sock, struct sockaddr *uaddr, int addr_len)
/* No kretprobe: it misses returns beyond maxactive (docs/BACKLOG.md, "One handler per
 * event"); kprobe mode uses tp_sys_exit_connect. */
SEC("?fexit/unix_stream_connect")
int BPF_PROG(fx_unix_stream_connect, struct socket *sock, struct sockaddr *uaddr, int addr_len,
	     int flags, int ret)
{
	unix_connect_exit(ret);
	return 0;
}

FENTRY_KPROBE(unix_wait_for_peer, unix_wait_begin((__u32)bpf_get_current_pid_tgid()))
FEXIT_KRETPROBE(unix_wait_for_peer, long, unix_wait_end((__u32)bpf_get_current_pid_tgid()))

FENTRY_KPROBE(tcp_conn_request, tcp_conn_request_enter(sk, skb),
	      void *rsk_ops, void *af_ops, struct sock *sk, struct sk_buff *skb)
FEXIT_KRETPROBE(tcp_conn_request, long, tcp_conn_request_exit())
FENTRY_KPROBE(tcp_v4_send_synack, tcp_synack_sent(), const struct sock *sk)
FENTRY_KPROBE(tcp_v6_send_synack, tcp_synack_sent(), const struct sock *sk)

FENTRY_KPROBE(tcp_v4_syn_recv_sock, syn_recv_sock_enter(sk, skb),
	      struct sock *sk, struct sk_buff *skb)
FEXIT_KRETPROBE_RET(tcp_v4_syn_recv_sock, syn_recv_sock_exit(ret))

FENTRY_KPROBE(tcp_v6_syn_recv_sock, syn_recv_sock_enter(sk, skb),
	      struct sock *sk, struct sk_buff *skb)
FEXIT_KRETPROBE_RET(tcp_v6_syn_recv_sock, syn_recv_sock_exit(ret))

FENTRY_KPROBE(sock_def_readable, unix_listener_ready(sk), struct sock *sk)

/* fentry/fexit only: kprobe mode uses the syscall exit, as for connect */
#define ACCEPT_FENTRY_FEXIT(f)							\
SEC("?fentry/" #f)								\
int BPF_PROG(fe_##f, struct socket *sock, struct socket *newsock)		\
{ accept_enter(newsock); return 0; }						\
SEC("?fexit/" #f)								\
int BPF_PROG(fx_##f) { accept_exit(); return 0; }

ACCEPT_FENTRY_FEXIT(unix_accept)
ACCEPT_FENTRY_FEXIT(inet_accept)

FENTRY_KPROBE(tcp_connect, tcp_client_connect(sk), struct sock *sk)
FENTRY_KPROBE(tcp_retransmit_skb, tcp_retransmit(sk), struct sock *sk)

/* tracepoints */

/* same layout as raw_syscalls' sys_enter */
SEC("?tracepoint/syscalls/sys_enter_connect")
int tp_sys_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
	unix_connect_enter((const struct sockaddr_un *)BPF_CORE_READ(ctx, args[1]),
			   (long)BPF_CORE_READ(ctx, args[2]), true, 0,
			   (long)BPF_CORE_READ(ctx, args[0]));
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_connect")
int tp_sys_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&tcp_connecting, &tid);
	if (unix_inflight)
		unix_connect_exit(BPF_CORE_READ(ctx, ret));
	return 0;
}

/* a voluntary switch inside an AF_UNIX connect is unix_wait_for_peer in practice */
SEC("?tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (!unix_inflight)
		return 0;
	if (!preempt)
		unix_wait_begin(prev->pid);
	unix_wait_end(next->pid);
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_accept4")
int tp_sys_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	long fd = BPF_CORE_READ(ctx, ret);

	if (fd >= 0)
		accepted_sock(sock_of_fd(fd));
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_accept")
int tp_sys_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	long fd = BPF_CORE_READ(ctx, ret);

	if (fd >= 0)
		accepted_sock(sock_of_fd(fd));
	return 0;
}

/* 6.6+; older kernels lack the depth */
SEC("?tp_btf/sk_data_ready")
int BPF_PROG(tp_sk_data_ready, struct sock *sk)
{
	unix_listener_ready(sk);
	return 0;
}

SEC("?tp_btf/consume_skb")
int BPF_PROG(tp_consume_skb, struct sk_buff *skb)
{
	tcp_skb_freed(skb, 0);
	return 0;
}

SEC("?tp_btf/kfree_skb")
int BPF_PROG(tp_kfree_skb, struct sk_buff *skb, void *location, __u32 reason)
{
	tcp_skb_freed(skb, reason);
	return 0;
}

SEC("?tp_btf/inet_sock_set_state")
int BPF_PROG(tp_inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
{
	struct bl_port *l;
	__u32 sport, netns, *owner;
	__u64 key = (__u64)sk;
	int i;

	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	if (newstate == TCP_SYN_SENT) {	/* in connect(): the owner, not yet the port */
		tcp_client_connect(sk);
	} else if (newstate == TCP_SYN_RECV && oldstate == TCP_LISTEN) {
		/* listener child queued next: watched ports only */
		sport = BPF_CORE_READ(sk, __sk_common.skc_num);
		l = bpf_map_lookup_elem(&tcp_ports, &sport);
		if (!l)
			return 0;
		netns = sk_netns(sk);
		for (i = 0; i < BL_PORT_SLOTS; i++)
			if (l->s[i].sk && l->s[i].netns == netns) {
				tcp_child_queued((struct sock *)l->s[i].sk, key, true);
				break;
			}
	} else if (oldstate == TCP_SYN_SENT) {	/* now the port is known */
		owner = bpf_map_lookup_elem(&sk_owner, &key);
		if (owner) {
			sport = BPF_CORE_READ(sk, __sk_common.skc_num);
			bpf_map_update_elem(&port_owner, &sport, owner, BPF_ANY);
			bpf_map_delete_elem(&sk_owner, &key);
		}
	}
	return 0;
}

SEC("?tp_btf/tcp_retransmit_skb")
int BPF_PROG(tp_tcp_retransmit_skb, struct sock *sk)
{
	tcp_retransmit(sk);
	return 0;
}

/* iterators */

/* Into the listeners array, not the seq_file: a read() ending inside a batch lost the
 * rest of it (docs/BACKLOG.md, "How it counts (bpf/backlog.bpf.c)"). */
static __always_inline void iter_put(struct bl_listener *l)
{
	__u32 i = iter_n;	/* one iterator at a time */

	iter_n = i + 1;
	if (i < BL_MAX_LISTENERS)
		bpf_map_update_elem(&listeners, &i, l, BPF_ANY);
}

SEC("iter/unix")
int iter_unix(struct bpf_iter__unix *ctx)
{
	struct unix_sock *u = ctx->unix_sk;
	struct bl_listener l = { .family = BL_UNIX };
	struct unix_address *addr;
	struct dentry *d;
	struct sock *sk;
	int len;

	if (!u)
		return 0;
	sk = &u->sk;
	if (sk->__sk_common.skc_state != TCP_LISTEN)
		return 0;
	l.qlen = sk->sk_receive_queue.qlen;
	l.limit = sk->sk_max_ack_backlog;
	l.drops = sk->sk_drops.counter;
	l.sk = (__u64)sk;
	l.ino = BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino);
	l.netns = sk_netns(sk);
	d = BPF_CORE_READ(u, path.dentry);
	if (d) {	/* the file clients' paths resolve to */
		l.file_ino = BPF_CORE_READ(d, d_inode, i_ino);
		l.file_dev = BPF_CORE_READ(d, d_inode, i_sb, s_dev);
	}
	addr = BPF_CORE_READ(u, addr);
	if (addr) {
		len = BPF_CORE_READ(addr, len) - 2;
		if (len > 0) {
			l.path_len = bounded_len(len);
			bpf_probe_read_kernel(l.path, l.path_len, addr->name[0].sun_path);
		}
	}
	iter_put(&l);
	return 0;
}

SEC("iter/tcp")
int iter_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct bl_listener l = { .family = BL_TCP };
	struct tcp_sock *tp;
	struct sock *sk;
	int state;

	if (!skc)
		return 0;
	iter_tcp_shown++;
	state = skc->skc_state;
	if (state != TCP_LISTEN && state != TCP_CLOSE) {
		/* stop at the established hash: CVE-2026-74714 (docs/BACKLOG.md, "How it counts
		 * (bpf/backlog.bpf.c)"); 1: the read() fails with EAGAIN */
		iter_tcp_stopped = 1;
		return 1;
	}
	if (state != TCP_LISTEN)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = &tp->inet_conn.icsk_inet.sk;
	l.qlen = sk->sk_ack_backlog;
	l.limit = sk->sk_max_ack_backlog;
	l.drops = sk->sk_drops.counter;
	l.sk = (__u64)sk;
	l.ino = BPF_CORE_READ(sk, sk_socket, file, f_inode, i_ino);
	l.netns = sk_netns(sk);
	l.port = skc->skc_num;
	if (skc->skc_family == AF_INET6) {
		l.v6 = 1;
		BPF_CORE_READ_INTO(&l.addr, skc, skc_v6_rcv_saddr);
	} else {
		__builtin_memcpy(l.addr, &skc->skc_rcv_saddr, 4);
	}
	iter_put(&l);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
