// SPDX-License-Identifier: GPL-2.0
/* --trace: docs/TRACE.md, "The model". */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "common.bpf.h"
#include "syscall_wrapper.h"
#include "flows.h"
#include "syscalls.bpf.h"

#define SOCK_STREAM	1
#define E2BIG		7
#define MSG_PEEK	2
#define TCP_CLOSE	7
#define TCP_LISTEN	10

/* unix_sock.inq_len is newer than the arm64 vmlinux.h: name it in a CO-RE flavor */
struct unix_sock___inq {
	int inq_len;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "GPL";

/* 6.2+, weak: only SK_BTF_CAST uses it; no bpf_skc_to_*_sock call */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define SK_CAST(sk, type) ((type *)bpf_rdonly_cast((sk), bpf_core_type_id_kernel(type)))

const volatile __u32 filter_procs;		/* --pid, --comm, --cgroup */
const volatile __u32 filter_cgroup;
const volatile __u32 n_comms;
const volatile char comms[FL_MAX_COMMS][FL_COMM_LEN];
/* endpoint filters a direction decides; user space applies them exactly */
const volatile __u32 n_ports;
const volatile __u16 ports[FL_MAX_PORTS];
const volatile __u32 n_unix;
const volatile __u64 slower_than_ns;
/* 0: the tid-keyed tasks hash */
const volatile __u32 task_storage;
/* bit per enum fl_kstage attached */
const volatile __u32 kstages;
/* enum fl_rkstage_seen bits */
const volatile __u32 rkstages;
/* slicing: needs sk_data_ready, sched_switch */
const volatile __u32 bulk;

__u64 misses[16];		/* enum fl_miss */
__u64 outliers_dropped;
__u64 dirs_made, dirs_deleted;	/* the LRU evicted the rest */
__u64 names_lost;		/* uaddrs full */
__u64 procs_exited;
__u64 procs_unfollowed;	/* tgids full */
__u64 bulk_unsliced;		/* no free slot */

struct fl_bulk_slot bulk_slots[FL_BULK_SLOTS];
__u64 bulk_active;		/* 0 keeps switches and syscall entries cheap */
/* bumped by user space after adding to tgids: cached answers go stale */
__u32 tgids_gen;

struct task_st {
	__u64 sys_ts;		/* send/recv syscall entry */
	__u64 poll_pend;	/* poll call in progress */
	__u64 poll_entry;	/* last completed poll call */
	__u64 poll_exit;
	__u64 call_sk;		/* function modes: sock of the call */
	__u32 sys_nr;
	__u32 call_flags;
	__u32 tgids_gen;	/* tgids_gen + 1 when read (0: never) */
	__u32 followed;
	__u64 k_sys;		/* the send k_acc is cutting */
	__u64 k_last;
	__u32 k_acc[FK__COUNT];	/* ns per enum fl_kstage */
	__u64 run_ts;		/* last switch-in */
	__u64 poll_run;		/* run_ts at the last poll return */
	__u64 copy_ts;		/* last copy-done, */
	__u64 copy_sys;		/* in that syscall */
	__u64 dr_sys;		/* bulk: send past its first data-ready */
	__u64 dr_t;
	__u64 dr_sk;
	__u32 k_dr[FK__COUNT];	/* k_acc then */
	__u32 bslot;		/* 1 + slot (0: none) */
	__u32 dr_chunks;
	__u32 dr_slept;
	__u32 dr_skip;		/* not sliced: not tried again */
};

struct msg_ent {
	__u64 t0;
	__u64 t1;		/* handover */
	__u32 end;		/* last byte's position + 1 */
	__u32 tgid;
	__u32 bytes;
	__u32 match;		/* sender counts for the filters */
	__u32 tid;
	__u32 cpu;		/* at the handover */
	char comm[FL_COMM_LEN];
	__u32 k[FK__COUNT];	/* enum fl_kstage: sum t1 - t0 */
	__u32 bk_pre[FBK__COUNT];	/* slices up to the handover */
	__u32 bslot;		/* 1 + bulk slot (0: none) */
};

struct rcv_info {
	__u64 ret_ts, entry_ts, poll_entry, poll_exit;
	__u64 run_ts, poll_run, copy_ts;	/* 0: unseen */
	__u32 tgid, match;
	__u32 tid, cpu;		/* cpu: of the return */
	char comm[FL_COMM_LEN];
};

struct dir_st {
	__u64 sender_sk;	/* reuse check */
	__u64 recv_sk;		/* TCP reuse check */
	__u64 first_rcv;
	__u64 sender_ino;	/* new pairs get old pairs' addresses */
	__u64 sent;		/* unix: bytes queued */
	__u64 writer;		/* 1 while a sender appends */
	__u32 rpos;		/* unix: bytes read; TCP: copied_seq */
	__u64 rpos_ts;		/* written before rpos (rpos_read) */
	__u64 head, tail;
	__u64 dropped;
	__u8 transport, v6;
	__u16 port;
	__u32 addr[4];
	__u64 ep_id;
	__u8 s_match, r_match;	/* enum end_match */
	__u8 ep_out;		/* endpoint filters exclude it */
	__u8 counted;		/* fl_stats.conns */
	__u8 to_srv;		/* TCP: towards the listener's port */
	__u32 closed_seq;	/* TCP: read position at close */
	__u64 rclosed;		/* 1: closed, send boundary pending; 2: ended */
	__u64 unknown;		/* made by a socket_unknown receive */
	__u64 born;		/* first send boundary over, when (0: running) */
	__u64 born_t0;
	__u32 born_tid;
	__s64 straddle;		/* unix: bytes the first boundary found, less those taken */
	struct rcv_info last;
	struct msg_ent ents[FL_FIFO];
};

/* does an end count for --pid, --comm, --cgroup */
enum end_match { END_UNKNOWN, END_YES, END_NO };

struct dir_key {
	__u32 kind;
	__u16 sport, dport;	/* TCP, as the sender sees them */
	__u64 sk;		/* unix: receiving sock */
	__u64 peer;		/* unix: sending sock */
	__u32 saddr[4], daddr[4];
};

/* task local storage (a few loads) where supported, else an LRU hash by tid */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_st);
} task_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);	/* set from user space */
	__type(key, __u32);
	__type(value, struct task_st);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);	/* set from user space */
	__type(key, struct dir_key);
	__type(value, struct dir_st);
} dirs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);	/* set from user space */
	__type(key, struct fl_key);
	__type(value, struct fl_stats);
} flows SEC(".maps");

/* unix names by name_hash; user space drains it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* set from user space */
	__type(key, __u64);
	__type(value, struct fl_uaddr);
} uaddrs SEC(".maps");

/* seeded from /proc/net/tcp*, then inet_sock_set_state */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u16);
	__type(value, __u8);
} lports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* followed processes (--pid, -- COMMAND, children) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);	/* set from user space */
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* set from user space */
} outliers SEC(".maps");

struct scratch {
	struct fl_outlier o;
	struct msg_ent e;
	struct rcv_info r;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline struct scratch *scratch_get(void)
{
	return bpf_map_lookup_elem(&scratch, &(__u32){ 0 });
}

/* too large for the stack */
static const struct fl_stats zero_stats;
static const struct dir_st zero_dir;
static const struct task_st zero_task;

static __always_inline void miss(int reason)
{
	__sync_fetch_and_add(&misses[reason & 15], 1);
}

/* exact below 8, then 8 per power of two */
static __always_inline __u32 bucket(__u64 v)
{
	__u32 e, b;

	if (v < (1 << FL_SUB_BITS))
		return v;
	e = log2_slot(v);
	b = (e - FL_SUB_BITS + 1) * (1 << FL_SUB_BITS) +
	    ((v >> (e - FL_SUB_BITS)) & ((1 << FL_SUB_BITS) - 1));
	return b < FL_NBUCKETS ? b : FL_NBUCKETS - 1;
}

static __always_inline bool is_poll_nr(long nr)
{
	return nr == NR_epoll_wait || nr == NR_epoll_pwait || nr == NR_epoll_pwait2 ||
	       nr == NR_poll || nr == NR_ppoll || nr == NR_select || nr == NR_pselect6;
}

static __always_inline bool is_io_nr(long nr)
{
	return nr == NR_read || nr == NR_write || nr == NR_readv || nr == NR_writev ||
	       nr == NR_sendto || nr == NR_recvfrom || nr == NR_sendmsg || nr == NR_recvmsg ||
	       nr == NR_sendmmsg || nr == NR_recvmmsg || nr == NR_sendfile || nr == NR_splice;
}

static __always_inline bool is_send_nr(long nr)
{
	return nr == NR_write || nr == NR_writev || nr == NR_sendto || nr == NR_sendmsg ||
	       nr == NR_sendmmsg || nr == NR_sendfile || nr == NR_splice;
}

/* task: the current task, fetched once by the caller (a helper call) */
static __always_inline struct task_st *task_find(struct task_struct *task)
{
	__u32 tid;

	if (task_storage)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	tid = (__u32)bpf_get_current_pid_tgid();
	return bpf_map_lookup_elem(&tasks, &tid);
}

static __always_inline struct task_st *task_get(void)
{
	struct task_st *t;
	__u32 tid;

	if (task_storage) {
		t = bpf_task_storage_get(&task_store, bpf_get_current_task_btf(), NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
	} else {
		tid = (__u32)bpf_get_current_pid_tgid();
		t = lookup_or_try_init(&tasks, &tid, &zero_task);
	}
	if (!t)
		miss(FM_TASK_FULL);
	return t;
}

/* the stamped entry if it is the current syscall's (never a stale one) */
static __always_inline __u64 cur_entry(struct task_st *t, struct task_struct *task)
{
	struct pt_regs *regs;

	if (!t || !t->sys_ts)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (SYSNR(regs) != t->sys_nr)
		return 0;
	return t->sys_ts;
}

static __always_inline bool v4_loopback(__u32 a)
{
	return (a & 0xff) == 127;
}

static __always_inline bool v6_loopback(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

static __always_inline bool v6_mapped(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

/* tracepoint mode's sock is a BTF pointer: plain loads, not a probe read per field */
enum sk_access {
	SK_PROBE,
	SK_BTF,		/* bpf_skc_to_* (inet_sock_set_state) */
	SK_BTF_CAST,	/* SK_CAST (sock_send/recv_length: 6.3+) */
};

#define SK_RD(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))
#define SK_RD_INTO(direct, dst, p, field)					\
	do {									\
		if (direct)							\
			__builtin_memcpy(dst, (p)->field, sizeof(*(dst)));	\
		else								\
			BPF_CORE_READ_INTO(dst, p, field);			\
	} while (0)

static __always_inline __u64 unix_peer(struct sock *sk, int direct)
{
	struct unix_sock *u;

	if (!direct)
		return (__u64)BPF_CORE_READ((struct unix_sock *)sk, peer);
	u = direct == SK_BTF_CAST ? SK_CAST(sk, struct unix_sock) : bpf_skc_to_unix_sock(sk);
	return u ? (__u64)u->peer : 0;
}

/* Not skc_num: closing zeroes it while the last bytes may still be read. */
static __always_inline int tcp_port_seq(struct sock *sk, bool sending, int direct,
					__u16 *lport, __u32 *seq)
{
	struct tcp_sock *tp;

	if (!direct) {
		tp = (struct tcp_sock *)sk;
		*lport = BPF_CORE_READ((struct inet_sock *)sk, inet_sport);
		*seq = sending ? BPF_CORE_READ(tp, write_seq) : BPF_CORE_READ(tp, copied_seq);
		return 1;
	}
	tp = direct == SK_BTF_CAST ? SK_CAST(sk, struct tcp_sock) : bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	*lport = tp->inet_conn.icsk_inet.inet_sport;
	*seq = sending ? tp->write_seq : tp->copied_seq;
	return 1;
}

/* 0 unless sk is a connected AF_UNIX stream or loopback TCP socket. */
static __always_inline int dir_key_of(struct sock *sk, bool sending, int direct,
				      struct dir_key *k, __u32 *seq)
{
	__u16 family = SK_RD(direct, sk, __sk_common.skc_family);
	__u32 l[4] = {}, r[4] = {};
	__u16 lport, rport;

	if (SK_RD(direct, sk, sk_type) != SOCK_STREAM)
		return 0;
	if (family == AF_UNIX) {
		/* both socks: a closed pair's addresses are reused, often swapped
		 * (docs/TRACE.md, "The model") */
		__u64 peer = unix_peer(sk, direct);

		k->kind = FL_UNIX;
		k->sk = sending ? peer : (__u64)sk;
		k->peer = sending ? (__u64)sk : peer;
		return peer ? 1 : 0;
	}
	if ((family != AF_INET && family != AF_INET6) ||
	    SK_RD(direct, sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	if (family == AF_INET6)
		SK_RD_INTO(direct, &r, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
	if (family == AF_INET6 && !v6_mapped(r)) {
		SK_RD_INTO(direct, &l, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32);
		if (!v6_loopback(r))
			return 0;
	} else {
		l[0] = SK_RD(direct, sk, __sk_common.skc_rcv_saddr);
		r[0] = SK_RD(direct, sk, __sk_common.skc_daddr);
		r[1] = r[2] = r[3] = 0;
		if (!v4_loopback(r[0]))
			return 0;
	}
	if (!tcp_port_seq(sk, sending, direct, &lport, seq))
		return 0;
	lport = bpf_ntohs(lport);
	rport = bpf_ntohs(SK_RD(direct, sk, __sk_common.skc_dport));
	k->kind = FL_TCP;
	if (sending) {
		__builtin_memcpy(k->saddr, l, 16);
		__builtin_memcpy(k->daddr, r, 16);
		k->sport = lport;
		k->dport = rport;
	} else {
		__builtin_memcpy(k->saddr, r, 16);
		__builtin_memcpy(k->daddr, l, 16);
		k->sport = rport;
		k->dport = lport;
	}
	return 1;
}

/* FNV-1a; never 0 (a socketpair's id) */
static __always_inline __u64 name_hash(const struct fl_uaddr *ua)
{
	__u64 h = 0xcbf29ce484222325ull;
	int i;

	for (i = 0; i < FL_PATH_LEN; i++) {
		if (i >= ua->len)
			break;
		h = (h ^ (__u8)ua->path[i]) * 0x100000001b3ull;
	}
	return h | 1;
}

static __always_inline void endpoint_of(struct sock *sk, const struct dir_key *k,
					struct dir_st *d)
{
	d->transport = k->kind;
	if (k->kind == FL_UNIX) {
		struct unix_sock *u = (struct unix_sock *)sk;
		struct unix_sock *p = (struct unix_sock *)BPF_CORE_READ(u, peer);
		struct unix_address *a = BPF_CORE_READ(u, addr), *pa = p ? BPF_CORE_READ(p, addr) : NULL;
		struct fl_uaddr ua = {};
		__u64 id;
		int len;

		/* the accepted side holds the listener's address; prefer a path name */
		if (!a || (pa && BPF_CORE_READ(a, name[0].sun_path[0]) == 0 &&
			   BPF_CORE_READ(pa, name[0].sun_path[0]) != 0))
			a = pa;
		d->ep_id = 0;	/* socketpair */
		if (!a)
			return;
		/* by name: a freed unix_address's memory is reused for other names */
		len = BPF_CORE_READ(a, len) - 2;	/* minus sun_family */
		ua.len = len <= 0 ? 0 : len < FL_PATH_LEN ? len : FL_PATH_LEN;
		BPF_CORE_READ_INTO(&ua.path, a, name[0].sun_path);
		id = name_hash(&ua);
		d->ep_id = id;
		/* full: counted, the flows show "unix:unnamed" */
		if (ua.len && bpf_map_update_elem(&uaddrs, &id, &ua, BPF_NOEXIST) == -E2BIG)
			__sync_fetch_and_add(&names_lost, 1);
		return;
	}
	{
		__u16 sp = k->sport, dp = k->dport;
		bool srv_is_dst = bpf_map_lookup_elem(&lports, &dp) ||
				  (!bpf_map_lookup_elem(&lports, &sp) && dp < sp);

		d->port = srv_is_dst ? dp : sp;
		d->to_srv = srv_is_dst;
		__builtin_memcpy(d->addr, srv_is_dst ? k->daddr : k->saddr, 16);
		d->v6 = (k->daddr[1] | k->daddr[2] | k->daddr[3]) != 0;	/* IPv4 fills [0] only */
	}
}

static __always_inline bool comm_eq(const char *a, const volatile char *b)
{
	int i;

	for (i = 0; i < FL_COMM_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

/* cached until user space adds a tgid: nothing else changes it while the task lives */
static __always_inline bool tgid_followed(__u32 tgid, struct task_st *t)
{
	__u32 gen = *(volatile __u32 *)&tgids_gen;
	bool in;

	if (t && t->tgids_gen == gen + 1)
		return t->followed;
	barrier();
	in = bpf_map_lookup_elem(&tgids, &tgid) != NULL;
	if (t) {
		t->followed = in;
		t->tgids_gen = gen + 1;
	}
	return in;
}

static __always_inline bool proc_match(__u32 tgid, const char *comm, __u32 in_cg,
				       struct task_st *t)
{
	int i;

	if (in_cg || tgid_followed(tgid, t))
		return true;
	for (i = 0; i < FL_MAX_COMMS; i++) {
		if (i >= n_comms)
			break;
		if (comm_eq(comm, comms[i]))
			return true;
	}
	return false;
}

/* without the barrier clang bounds one copy and indexes with another (6.1: "unbounded
 * memory access") */
static __always_inline void hist_add(__u32 *hist, __u64 v)
{
	__u64 b = bucket(v);

	barrier_var(b);
	if (b < FL_NBUCKETS)
		hist[b] += 1;
}

static __always_inline void add_stage(struct fl_stats *s, int st, __u64 ns)
{
	s->st_sum[st & 7] += ns;
	s->st_cnt[st & 7] += 1;
	hist_add(s->st_hist[st & 7], ns);
}

/* docs/TRACE.md, "Messages in several chunks: `bulk;*`"; the exchange makes two CPUs'
 * ticks partition the time */
static __always_inline void bulk_tick(struct fl_bulk_slot *b, __u64 now)
{
	__u64 from = __sync_lock_test_and_set(&b->slice_t, now);
	__u32 k;

	if (!from || now <= from)
		return;
	if (!b->handed && b->snd_on)
		k = FBK_SEND_COPY;
	else if (b->rcv_on && b->rcv_in)
		k = FBK_RECV_COPY;
	else if (!b->handed && b->snd_asleep)
		k = FBK_WAIT_SPACE;
	else
		k = FBK_WAIT_CPU;
	__sync_fetch_and_add(&b->acc[k & (FBK__COUNT - 1)], now - from);
}

static __always_inline struct fl_bulk_slot *bulk_slot_of(__u32 bslot)
{
	return &bulk_slots[(bslot - 1) & (FL_BULK_SLOTS - 1)];
}

/* NULL once reclaimed as stale */
static __always_inline struct fl_bulk_slot *bulk_of(const struct msg_ent *e)
{
	struct fl_bulk_slot *b;

	if (!e->bslot)
		return NULL;
	b = bulk_slot_of(e->bslot);
	return b->sys == e->t0 && b->snd_tid == e->tid ? b : NULL;
}

static __always_inline struct fl_bulk_slot *bulk_own(const struct task_st *t, __u32 tid)
{
	struct fl_bulk_slot *b;

	if (!t->bslot)
		return NULL;
	b = bulk_slot_of(t->bslot);
	return b->sys == t->dr_sys && b->snd_tid == tid ? b : NULL;
}

static __always_inline void bulk_free(struct fl_bulk_slot *b)
{
	if (b && __sync_lock_test_and_set(&b->sys, 0))
		__sync_fetch_and_add(&bulk_active, -1);
}

static __always_inline void bulk_release(struct task_st *t, struct fl_bulk_slot *b)
{
	bulk_free(b);
	t->bslot = 0;
	t->dr_sys = 0;
}

/* Stages partition t0 (send entry) -> t3 (the recv return of the last byte) on one
 * monotonic path. */
static __always_inline void cut_stages(const struct msg_ent *e, const struct rcv_info *r,
				       struct fl_outlier *o)
{
	__u64 t3 = r->ret_ts, t0 = e->t0, t1 = e->t1, re, pe, px;

	o->unseen = (e->t0 == e->t1 ? FU_SEND_ENTRY : 0) | (r->entry_ts ? 0 : FU_RECV_ENTRY);
	if (t0 > t3)	/* two CPUs' clocks */
		t0 = t3;
	if (t1 < t0)
		t1 = t0;
	if (t1 > t3)	/* receiver done before the sender's tracepoint */
		t1 = t3;
	o->bound[FB_SEND_ENTRY] = t0;
	o->bound[FB_HANDOVER] = t1;
	o->bound[FB_RECV_RETURN] = t3;
	o->latency_ns = t3 - t0;
	o->stage_ns[FS_SEND] = t1 - t0;
	o->stages = 1 << FS_SEND;
	re = r->entry_ts;
	if (!re || re <= t1) {	/* already in recv(), or entry unknown */
		o->bound[FB_RECV_ENTRY] = re;
		o->stage_ns[FS_RECV_BLOCKED] = t3 - t1;
		o->stages |= 1 << FS_RECV_BLOCKED;
		return;
	}
	if (re > t3)
		re = t3;
	o->bound[FB_RECV_ENTRY] = re;
	px = r->poll_exit;
	pe = r->poll_entry;
	if (px > t1 && px <= re) {	/* an epoll/poll/select returned in between */
		if (pe < t1)
			pe = t1;
		if (pe > px)
			pe = px;
		o->bound[FB_POLL_ENTRY] = pe;
		o->bound[FB_POLL_EXIT] = px;
		o->stage_ns[FS_EPOLL] = px - pe;
		o->stage_ns[FS_BUSY] = (pe - t1) + (re - px);
		o->stages |= 1 << FS_EPOLL | 1 << FS_BUSY;
	} else {
		o->stage_ns[FS_BUSY] = re - t1;
		o->stages |= 1 << FS_BUSY;
	}
	o->stage_ns[FS_RECV] = t3 - re;
	o->stages |= 1 << FS_RECV;
}

/* clamped in path order: they add up to send;call */
static __always_inline void cut_kstages(struct fl_outlier *o, const struct msg_ent *e,
					bool sliced)
{
	__u64 v, send = o->stage_ns[FS_SEND];
	int i;

	for (i = 0; i < FK__COUNT; i++) {
		v = e->k[i] < send ? e->k[i] : send;
		o->k[i] = v;
		send -= v;
	}
	for (i = 0; sliced && i < FBK__COUNT; i++) {
		v = e->bk_pre[i] < send ? e->bk_pre[i] : send;
		o->bk[FBO_SEND][i] = v;
		send -= v;
	}
	o->k[FK__COUNT - 1] += send;	/* an entry cut by another syscall's stamp */
}

static __always_inline void cut_bulk_span(struct fl_outlier *o, int of, int st,
					  const __u64 *from, const __u64 *to)
{
	__u64 left = o->stage_ns[st & 7], v;
	int i;

	for (i = 0; i < FBK__COUNT; i++) {
		v = to[i] > from[i] ? to[i] - from[i] : 0;
		v = v < left ? v : left;
		o->bk[of & 3][i] = v;
		left -= v;
	}
}

/* Slices after the handover, under the receiver's stage; -1: an epoll wait in between. */
static __always_inline int cut_bulk_after(struct fl_outlier *o, const struct msg_ent *e,
					  struct fl_bulk_slot *b)
{
	__u64 pre[FBK__COUNT], at[FBK__COUNT];
	int i;

	bulk_tick(b, o->bound[FB_RECV_RETURN]);
	for (i = 0; i < FBK__COUNT; i++) {
		pre[i] = e->bk_pre[i];
		at[i] = b->at_entry[i];
	}
	if (o->stages & (1 << FS_RECV_BLOCKED)) {
		cut_bulk_span(o, FBO_BLOCKED, FS_RECV_BLOCKED, pre, b->acc);
		return FS_RECV_BLOCKED;
	}
	if (!(o->stages & (1 << FS_RECV)) || (o->stages & (1 << FS_EPOLL)) ||
	    b->entry_ts != o->bound[FB_RECV_ENTRY])
		return -1;
	cut_bulk_span(o, FBO_BUSY, FS_BUSY, pre, at);
	cut_bulk_span(o, FBO_RECV, FS_RECV, at, b->acc);
	return FS_RECV;
}

/* a partial read's copy-done did not fire: all copy */
static __always_inline __u64 copy_end(__u64 copy_ts, __u64 from, __u64 to)
{
	return copy_ts >= from && copy_ts <= to ? copy_ts : to;
}

/* sliced: the stage holding slices, else -1 */
static __always_inline void cut_rkstages(struct fl_outlier *o, const struct rcv_info *r,
					 int sliced)
{
	__u64 t1 = o->bound[FB_HANDOVER], t3 = o->bound[FB_RECV_RETURN], from;

	if ((o->stages & (1 << FS_RECV_BLOCKED)) && sliced != FS_RECV_BLOCKED) {
		from = t1;
		if ((rkstages & FRS_RUN) && r->run_ts > t1 && r->run_ts <= t3) {
			o->rk[FR_BLOCKED_RUN] = r->run_ts - t1;
			from = r->run_ts;
		}
		if (rkstages & FRS_COPY)
			o->rk[FR_BLOCKED_COPY] = copy_end(r->copy_ts, from, t3) - from;
	}
	if ((o->stages & (1 << FS_EPOLL)) && (rkstages & FRS_RUN) &&
	    r->poll_run > o->bound[FB_POLL_ENTRY] && r->poll_run <= o->bound[FB_POLL_EXIT])
		o->rk[FR_EPOLL_RUN] = r->poll_run - o->bound[FB_POLL_ENTRY];
	if ((o->stages & (1 << FS_RECV)) && (rkstages & FRS_COPY) && sliced != FS_RECV) {
		from = o->bound[FB_RECV_ENTRY];
		o->rk[FR_RECV_COPY] = copy_end(r->copy_ts, from, t3) - from;
	}
}

static __always_inline void emit_outlier(const struct fl_outlier *o)
{
	struct fl_outlier *rec = bpf_ringbuf_reserve(&outliers, sizeof(*rec), 0);

	if (!rec) {
		__sync_fetch_and_add(&outliers_dropped, 1);
		return;
	}
	__builtin_memcpy(rec, o, sizeof(*rec));
	bpf_ringbuf_submit(rec, 0);
}

/* Global, so verified once: inlined, its loops were verified for each of complete()'s
 * FL_FIFO turns on every path into it (tp_sock_send_length: 303k insns processed, not 50k).
 * Its message is the per-CPU scratch's; d the only pointer it takes (a map value's). */
__noinline int record(struct dir_st *d, __u64 dropped)
{
	struct scratch *x = scratch_get();
	const struct msg_ent *e;
	const struct rcv_info *r;
	struct fl_bulk_slot *b;
	struct fl_outlier *o;
	struct fl_key *fkp;
	int st, sliced = -1, i;
	struct fl_stats *s;

	if (!d || !x)
		return 0;
	e = &x->e;
	r = &x->r;
	o = &x->o;
	fkp = &o->key;
	b = bulk ? bulk_of(e) : NULL;
	if (!e->match && !r->match) {
		bulk_free(b);
		return 0;
	}
	__builtin_memset(o, 0, sizeof(*o));
	fkp->transport = d->transport;
	fkp->v6 = d->v6;
	fkp->port = d->port;
	__builtin_memcpy(fkp->addr, d->addr, 16);
	fkp->ep_id = d->ep_id;
	fkp->s_tgid = e->tgid;
	fkp->r_tgid = r->tgid;
	__builtin_memcpy(fkp->s_comm, e->comm, FL_COMM_LEN);
	__builtin_memcpy(fkp->r_comm, r->comm, FL_COMM_LEN);
	s = lookup_or_try_init(&flows, fkp, &zero_stats);
	if (!s) {
		miss(FM_FLOW_FULL);
		bulk_free(b);
		return 0;
	}
	cut_stages(e, r, o);
	s->msgs++;
	s->bytes += e->bytes;
	s->lat_sum += o->latency_ns;
	s->misses += dropped;
	s->cross_cpu += e->cpu != r->cpu;
	if (!d->counted) {	/* the connection's first message */
		d->counted = 1;
		s->conns++;
		s->conns_to_srv += d->to_srv;
	}
	hist_add(s->lat_hist, o->latency_ns);
	for (st = 0; st < FS__COUNT; st++)
		if (o->stages & (1 << st))
			add_stage(s, st, o->stage_ns[st]);
	if (kstages) {
		cut_kstages(o, e, b);
		for (st = 0; st < FK__COUNT; st++)
			s->k_sum[st] += o->k[st];
	}
	if (b) {
		sliced = cut_bulk_after(o, e, b);
		bulk_free(b);
		s->bulk_msgs++;
		for (st = 0; st < FBO__COUNT; st++)
			for (i = 0; i < FBK__COUNT; i++)
				s->bk_sum[st][i] += o->bk[st][i];
	}
	if (rkstages) {
		cut_rkstages(o, r, sliced);
		for (st = 0; st < FR__COUNT; st++)
			s->rk_sum[st] += o->rk[st];
	}
	if (slower_than_ns && o->latency_ns > slower_than_ns) {
		o->bytes = e->bytes;
		o->s_tid = e->tid;
		o->r_tid = r->tid;
		emit_outlier(o);
	}
	return 0;
}

/* Complete every send whose end the receiver passed. */
static __always_inline void complete(struct dir_st *d, struct scratch *x)
{
	struct msg_ent *e = &x->e;
	__u64 h, dropped;
	int i;

	for (i = 0; i < FL_FIFO; i++) {
		h = d->head;
		if (h == d->tail)
			break;
		__builtin_memcpy(e, &d->ents[h & (FL_FIFO - 1)], sizeof(*e));
		if ((int)(d->rpos - e->end) < 0)
			break;
		if (__sync_val_compare_and_swap(&d->head, h, h + 1) != h)
			break;	/* the other side took it */
		dropped = d->dropped;
		if (dropped)
			__sync_fetch_and_sub(&d->dropped, dropped);
		record(d, dropped);
	}
}

/* 1 when this end counts for the filters (always without them) */
static __always_inline __u32 fill_task(char *comm, __u32 *tgid, __u32 *tid, struct task_st *t,
				       struct task_struct *task)
{
	__u32 in_cg;

	/* loads: bpf_get_current_comm's copy loop was a good part of a hit's cost */
	__builtin_memcpy(comm, task->comm, FL_COMM_LEN);
	*tgid = task->tgid;
	*tid = task->pid;
	if (!filter_procs)
		return 1;
	in_cg = filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) == 1;
	return proc_match(*tgid, comm, in_cg, t);
}

/* only what is certain; user space applies them exactly */
static __always_inline __u8 endpoint_out(const struct dir_st *d)
{
	int i;

	if (!n_ports && !n_unix)
		return 0;
	if (d->transport == FL_UNIX)
		return !n_unix;
	if (!n_ports)
		return 1;
	if (n_ports > FL_MAX_PORTS)
		return 0;
	for (i = 0; i < FL_MAX_PORTS; i++) {
		if (i >= n_ports)
			break;
		if (d->port == ports[i])
			return 0;
	}
	return 1;
}

/* made and deleted are counted: user space reports the LRU's evictions */
static __always_inline struct dir_st *dir_new(const struct dir_key *k)
{
	struct dir_st *d;

	if (!bpf_map_update_elem(&dirs, k, &zero_dir, BPF_NOEXIST))
		__sync_fetch_and_add(&dirs_made, 1);
	d = bpf_map_lookup_elem(&dirs, k);
	if (!d)
		miss(FM_DIR_FULL);
	return d;
}

static __always_inline void dir_delete(const struct dir_key *k)
{
	if (!bpf_map_delete_elem(&dirs, k))
		__sync_fetch_and_add(&dirs_deleted, 1);
}

/* unique while addresses are reused; via the file: plain loads (kernel sockets have none) */
static __always_inline __u64 sock_ino(struct sock *sk, bool direct)
{
	struct socket *so = SK_RD(direct, sk, sk_socket);
	struct file *f;

	if (!so)
		return 0;
	f = direct ? so->file : NULL;
	if (f)
		return f->f_inode->i_ino;
	return BPF_CORE_READ((struct socket_alloc *)so, vfs_inode.i_ino);
}

/* Receiver closed: unread messages counted (TCP: read but unseen apart); state goes. */
static __always_inline void closed_unread(struct dir_st *d, const struct dir_key *k,
					  bool has_seq, __u32 read_seq)
{
	__u64 h = d->head, tail = d->tail, unread = 0, unseen = 0;
	__u32 all = d->r_match == END_YES, seen = has_seq, c, past;
	int i;

	/* no branches per entry: the verifier walks each 16 times */
	for (i = 0; i < FL_FIFO; i++) {
		if (h + i == tail)
			break;
		c = d->ents[(h + i) & (FL_FIFO - 1)].match | all;
		past = ~(read_seq - d->ents[(h + i) & (FL_FIFO - 1)].end) >> 31 & seen;
		unseen += c & past;
		unread += c & ~past;
	}
	if (unread)
		__sync_fetch_and_add(&misses[FM_CLOSED], unread);
	if (unseen)
		__sync_fetch_and_add(&misses[FM_RECV_UNSEEN], unseen);
	dir_delete(k);
}

/* an old connection's state: its messages in flight are misses */
static __always_inline struct dir_st *forget_dir(const struct dir_st *d, const struct dir_key *k)
{
	if (d->head != d->tail)
		miss(FM_REUSED);
	dir_delete(k);
	return NULL;
}

/* rpos before rpos_ts, ordered by the locked no-op (issue 36 item 3) */
static __always_inline __u32 rpos_read(struct dir_st *d, __u64 t0, bool *since_t0)
{
	__u32 rpos = *(volatile __u32 *)&d->rpos;

	__sync_fetch_and_add(&d->writer, 0);
	*since_t0 = d->rpos_ts >= t0;
	return rpos;
}

/* AF_UNIX: is sk new at d's addresses? true: drop the old state (bytes unread); else
 * adopt it (docs/TRACE.md, "The model"). */
static __always_inline bool unix_new_pair(struct dir_st *d, struct sock *sk,
					  const struct dir_key *k, bool direct)
{
	__u64 ino = sock_ino(sk, direct), t0;
	struct task_struct *task;
	bool read_since;
	__u32 rpos;

	if (ino == d->sender_ino)
		return false;
	task = bpf_get_current_task_btf();
	t0 = cur_entry(task_find(task), task);
	if (!t0)
		t0 = bpf_ktime_get_ns();
	if (d->head != d->tail || (int)(d->sent - d->rpos) > 0) {
		if (d->last.ret_ts >= t0)
			miss(FM_REUSED);
		return true;
	}
	/* no read since this send began: start where the receiver is (issue 36 item 3) */
	rpos = rpos_read(d, t0, &read_since);
	if (!read_since)
		d->sent = rpos;
	d->sender_ino = ino;
	endpoint_of(sk, k, d);
	d->ep_out = endpoint_out(d);
	d->r_match = END_UNKNOWN;
	d->counted = 0;		/* another connection */
	return false;
}

/* a receiver not seen yet does not count: never-read traffic would */
static __always_inline void send_lost(struct dir_st *d, __u32 match, int reason)
{
	if (match || d->r_match == END_YES)
		miss(reason);
	__sync_fetch_and_add(&d->dropped, 1);
}

/* the receiver made d and read this send: undo its socket_unknown once */
static __always_inline void unknown_taken_back(struct dir_st *d, __u64 t0)
{
	if (d->unknown && d->first_rcv >= t0 &&
	    __sync_val_compare_and_swap(&d->unknown, 1, 0) == 1)
		__sync_fetch_and_sub(&misses[FM_NO_DIR], 1);
}

/* outside a traced syscall: the handover */
static __always_inline __u64 send_t0(__u64 now, struct task_st *t, struct task_struct *task,
				     __u32 match)
{
	__u64 t0 = cur_entry(t, task);

	if (t0)
		return t0;
	if (match)
		miss(FM_NO_ENTRY);
	return now;
}

/* Time since the send syscall's last kernel boundary goes to stage fk. */
static __always_inline struct task_st *kstage_mark(int fk)
{
	struct task_st *t = task_find(bpf_get_current_task_btf());
	__u64 now;

	if (!t || !t->sys_ts || !is_send_nr(t->sys_nr) || fk < 0 || fk >= FK__COUNT)
		return NULL;
	now = bpf_ktime_get_ns();
	if (t->k_sys != t->sys_ts) {	/* this syscall's first boundary */
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		t->k_sys = t->sys_ts;
		t->k_last = t->sys_ts;
	}
	/* first crossing ends the stage, as --compare stamps it (TCP re-enters per skb) */
	if (t->k_acc[fk])
		return t;
	if (now > t->k_last)
		t->k_acc[fk] += now - t->k_last;
	t->k_last = now;
	return t;
}

/* Filtered sends only; no free slot: take one held over a second, else bulk_unsliced. */
static __always_inline void bulk_start(struct task_st *t, __u32 tid, __u64 now)
{
	struct fl_bulk_slot *b = NULL;
	struct dir_key k = {};
	struct dir_st *d = NULL;
	char comm[FL_COMM_LEN];
	__u32 seq, i, slot = 0, tgid, ctid;

	if (dir_key_of((struct sock *)t->dr_sk, false, SK_PROBE, &k, &seq))
		d = bpf_map_lookup_elem(&dirs, &k);
	if ((d && d->ep_out) ||
	    (!(d && d->r_match == END_YES) &&
	     !fill_task(comm, &tgid, &ctid, t, bpf_get_current_task_btf()))) {
		t->dr_skip = 1;
		return;
	}
	for (i = 0; i < FL_BULK_SLOTS && !slot; i++)
		if (!__sync_val_compare_and_swap(&bulk_slots[i].sys, 0, t->dr_sys)) {
			slot = i + 1;
			__sync_fetch_and_add(&bulk_active, 1);
		}
	for (i = 0; i < FL_BULK_SLOTS && !slot; i++) {
		__u64 old = bulk_slots[i].sys;

		if (old && bulk_slots[i].start + 1000000000ULL < now &&
		    __sync_val_compare_and_swap(&bulk_slots[i].sys, old, t->dr_sys) == old)
			slot = i + 1;
	}
	if (slot)
		b = bulk_slot_of(slot);
	if (!b) {
		__sync_fetch_and_add(&bulk_unsliced, 1);
		t->dr_skip = 1;
		return;
	}
	__builtin_memset(b->acc, 0, sizeof(b->acc));
	b->start = now;
	b->entry_ts = 0;
	b->rsk = t->dr_sk;
	b->snd_tid = tid;
	b->rcv_tid = d && d->last.ret_ts ? d->last.tid : 0;
	b->snd_on = 1;
	b->snd_asleep = b->handed = b->rcv_on = 0;
	b->rcv_in = 1;	/* a reader not known yet is most likely waiting in its read */
	b->slice_t = t->dr_t;
	bulk_tick(b, now);
	t->bslot = slot;
}

static __always_inline void bulk_switch(__u32 prev, __u32 next, bool prev_asleep, __u64 now)
{
	struct fl_bulk_slot *b;
	__u32 i;

	for (i = 0; i < FL_BULK_SLOTS; i++) {
		b = &bulk_slots[i];
		if (!b->sys)
			continue;
		if (prev == b->snd_tid) {
			bulk_tick(b, now);
			b->snd_on = 0;
			b->snd_asleep = prev_asleep;
		} else if (b->rcv_tid && prev == b->rcv_tid) {
			bulk_tick(b, now);
			b->rcv_on = 0;
		}
		if (next == b->snd_tid) {
			bulk_tick(b, now);
			b->snd_on = 1;
		} else if (b->rcv_tid && next == b->rcv_tid) {
			bulk_tick(b, now);
			b->rcv_on = 1;
		}
	}
}

/* the reader of every slot on sk */
static __always_inline void bulk_read(__u64 sk, __u32 tid, __u64 run_ts, __u64 now)
{
	struct fl_bulk_slot *b;
	__u32 i;

	for (i = 0; i < FL_BULK_SLOTS; i++) {
		b = &bulk_slots[i];
		if (!b->sys || b->rsk != sk)
			continue;
		if (b->rcv_tid != tid) {	/* not known, or another thread reads now */
			b->rcv_tid = tid;
			b->rcv_on = 0;
		}
		if (!b->rcv_on && run_ts > b->slice_t && run_ts < now)
			bulk_tick(b, run_ts);
		b->rcv_on = 1;
		bulk_tick(b, now);
		b->rcv_in = 0;
	}
}

/* where its last recv() stage begins */
static __always_inline void bulk_entry(__u32 tid, __u64 now)
{
	struct fl_bulk_slot *b;
	__u32 i;

	for (i = 0; i < FL_BULK_SLOTS; i++) {
		b = &bulk_slots[i];
		if (!b->sys || b->rcv_tid != tid)
			continue;
		bulk_tick(b, now);
		b->rcv_in = 1;
		__builtin_memcpy(b->at_entry, b->acc, sizeof(b->acc));
		b->entry_ts = now;
	}
}

/* Cut the send begun at t0 into k at its handover; the next message starts here. */
static __always_inline void kstages_take(struct task_st *t, __u64 t0, __u64 now, __u32 kind,
					 __u32 *k, __u32 *e_pre, __u32 *bslot)
{
	struct fl_bulk_slot *b = bulk && t ? bulk_own(t, (__u32)bpf_get_current_pid_tgid()) : NULL;
	int last = kind == FL_UNIX ? FK_WAKE_END : FK_SEND_EXIT;
	__u64 from = t0;

	__builtin_memset(k, 0, FK__COUNT * sizeof(*k));
	if (b && t->dr_sys == t0 && (t->dr_chunks > 1 || t->dr_slept)) {
		/* several chunks (or a sleep for space): sliced from its first data-ready */
		int i;

		bulk_tick(b, now);
		b->handed = 1;
		__builtin_memcpy(k, t->k_dr, sizeof(t->k_dr));
		for (i = 0; i < FBK__COUNT; i++)
			e_pre[i] = b->acc[i];
		*bslot = t->bslot;
		t->bslot = 0;
		t->dr_sys = 0;
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		t->k_last = now;
		return;
	}
	/* one chunk (preempted): not sliced */
	if (t)
		bulk_release(t, b);
	if (t && t->sys_ts && t->k_sys == t->sys_ts && t->sys_ts == t0) {
		__builtin_memcpy(k, t->k_acc, sizeof(t->k_acc));
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		from = t->k_last;
		t->k_last = now;
	} else if (t && t->sys_ts == t0) {	/* no boundary yet */
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		t->k_sys = t0;
		t->k_last = now;
	}
	if (now > from)
		k[last] += now - from;
}

/* AF_UNIX first-send positions (docs/TRACE.md, "The model"); inq_len: 6.18, not 6.12 */
static __always_inline __u32 start_position(struct dir_st *d, struct sock *sk, int ret, __u64 t0)
{
	/* counted: rpos holds a read returned since t0 */
	bool counted;
	__u32 rpos = rpos_read(d, t0, &counted);
	bool rcv_first = rpos || d->first_rcv;

	if (bpf_core_field_exists(struct unix_sock___inq, inq_len)) {
		/* bytes queued before this send's */
		struct unix_sock___inq *p = (void *)BPF_CORE_READ((struct unix_sock *)sk, peer);
		int q = BPF_CORE_READ(p, inq_len) - ret;

		d->sent = rpos + (q > 0 || (q < 0 && counted) ? q : 0);
		/* queued or already read: a writer whose boundary is still to come may own them */
		return (int)d->sent > 0 ? d->sent : 0;
	}
	/* every byte counted came after t0: they are its first */
	if (rcv_first && d->first_rcv >= t0)
		d->sent = 0;
	else
		d->sent = counted ? rpos - ret : rpos;
	return 0;
}

/* filtered out: AF_UNIX keeps its byte position, to match again once an end counts */
static __always_inline int on_send(struct sock *sk, int ret, int direct)
{
	__u64 now, t0 = 0, tail;
	struct dir_key k = {};
	struct task_struct *task;
	struct msg_ent *e;
	struct task_st *t;
	struct dir_st *d;
	__u32 end, seq = 0, tgid, tid, match;
	char comm[FL_COMM_LEN];

	if (ret <= 0 || !dir_key_of(sk, true, direct, &k, &seq))
		return 0;
	now = bpf_ktime_get_ns();
	d = bpf_map_lookup_elem(&dirs, &k);
	if (d && d->sender_sk && d->sender_sk != (__u64)sk)	/* a closed socket's address, reused */
		d = forget_dir(d, &k);
	else if (d && d->sender_sk && k.kind == FL_UNIX && unix_new_pair(d, sk, &k, direct))
		d = forget_dir(d, &k);
	else if (d && d->rclosed && d->sender_sk && sock_ino(sk, direct) != d->sender_ino)
		d = forget_dir(d, &k);	/* receiver closed: another connection */
	if (!d) {	/* a lookup per send costs: only when new */
		d = dir_new(&k);
		if (!d)
			return 0;
	}
	task = bpf_get_current_task_btf();
	t = task_find(task);
	match = fill_task(comm, &tgid, &tid, t, task);
	/* first traced send (two writers may meet here) */
	if (!d->sender_sk && !__sync_val_compare_and_swap(&d->sender_sk, 0, (__u64)sk)) {
		d->sender_ino = sock_ino(sk, direct);
		endpoint_of(sk, &k, d);
		d->ep_out = endpoint_out(d);
		t0 = send_t0(now, t, task, match);
		if (k.kind == FL_UNIX)
			__sync_fetch_and_add(&d->straddle, start_position(d, sk, ret, t0));
		d->born_t0 = t0;
		d->born_tid = tid;
		/* stamped after the queue was read: a writer whose bytes it counted entered
		 * its syscall before; a locked add: the receiver that made d sees born_t0 */
		__sync_fetch_and_add(&d->born, bpf_ktime_get_ns());
		unknown_taken_back(d, t0);
	} else if (k.kind == FL_UNIX && !d->born) {
		/* first boundary still running elsewhere: its bytes are among those it finds */
		__sync_fetch_and_sub(&d->straddle, ret);
		send_lost(d, match, FM_CONCURRENT);
		return 0;
	} else if (k.kind == FL_UNIX && d->straddle >= ret && tid != d->born_tid &&
		   (t0 = cur_entry(t, task)) && t0 < d->born) {
		/* another writer's earlier send: these bytes were most likely counted there */
		__sync_fetch_and_sub(&d->straddle, ret);
		send_lost(d, match, FM_CONCURRENT);
		return 0;
	}
	if (d->ep_out)
		goto position_only;
	d->s_match = match ? END_YES : END_NO;
	if (!match && d->r_match == END_NO) {
		/* the receiver's verdict holds only for the same sender socket */
		__u64 ino = sock_ino(sk, direct);

		if (ino == d->sender_ino)
			goto position_only;
		d->sender_ino = ino;
		d->r_match = END_UNKNOWN;
		d->counted = 0;
	}
	if (!t0)
		t0 = send_t0(now, t, task, match);
	/* one sender at a time takes a position and a FIFO slot; no locks in BPF: the other
	 * is a miss */
	if (__sync_val_compare_and_swap(&d->writer, 0, 1) != 0) {
		if (k.kind == FL_UNIX)
			__sync_fetch_and_add(&d->sent, ret);
		send_lost(d, match, FM_CONCURRENT);
		return 0;
	}
	end = k.kind == FL_UNIX ? __sync_fetch_and_add(&d->sent, ret) + ret : seq;
	tail = d->tail;
	if (tail - d->head >= FL_FIFO) {
		__sync_val_compare_and_swap(&d->writer, 1, 0);
		send_lost(d, match, FM_FIFO_FULL);
		return 0;
	}
	e = &d->ents[tail & (FL_FIFO - 1)];
	e->t0 = t0;
	e->t1 = now;
	e->cpu = bpf_get_smp_processor_id();
	e->end = end;
	e->bytes = ret;
	e->tgid = tgid;
	e->tid = tid;
	e->match = match;
	__builtin_memcpy(e->comm, comm, FL_COMM_LEN);
	e->bslot = 0;
	if (kstages)
		kstages_take(t, t0, now, k.kind, e->k, e->bk_pre, &e->bslot);
	__sync_fetch_and_add(&d->tail, 1);
	__sync_val_compare_and_swap(&d->writer, 1, 0);
	/* the receiver may have returned the last byte first */
	if ((int)(d->rpos - end) >= 0 && d->last.ret_ts) {
		struct scratch *x = scratch_get();

		if (!x)
			return 0;
		__builtin_memcpy(&x->r, &d->last, sizeof(x->r));
		complete(d, x);
	}
	/* TCP: receiver closed first: end once the sends cover what it read */
	if (d->rclosed == 1 && (int)(end - d->closed_seq) >= 0 &&
	    __sync_val_compare_and_swap(&d->rclosed, 1, 2) == 1)
		closed_unread(d, &k, true, d->closed_seq);
	return 0;
position_only:
	if (k.kind == FL_UNIX)
		__sync_fetch_and_add(&d->sent, ret);
	return 0;
}

/* TCP: an earlier connection's state on this 4-tuple: not for this receiver. */
static __always_inline bool stale_for_receiver(const struct dir_st *d, struct sock *sk)
{
	return (d->recv_sk && d->recv_sk != (__u64)sk) || d->rclosed;
}

static __always_inline int on_recv(struct sock *sk, int ret, int flags, int direct)
{
	__u64 now;
	struct dir_key k = {};
	struct scratch *x;
	struct task_struct *task;
	struct rcv_info *r;
	struct task_st *t;
	struct dir_st *d;
	__u32 seq = 0, pos;
	bool unknown = false;

	/* failed and peeking reads first: cheap and common */
	if (ret <= 0 || (flags & MSG_PEEK) || !dir_key_of(sk, false, direct, &k, &seq))
		return 0;
	now = bpf_ktime_get_ns();
	x = scratch_get();
	if (!x)
		return 0;
	r = &x->r;
	d = bpf_map_lookup_elem(&dirs, &k);
	if (d && stale_for_receiver(d, sk))
		d = forget_dir(d, &k);
	if (!d) {
		/* kept so that a late sender still matches */
		d = dir_new(&k);
		if (!d)
			return 0;
		unknown = true;
	}
	if (!d->first_rcv) {
		d->recv_sk = (__u64)sk;
		d->first_rcv = now;
	}
	pos = k.kind == FL_UNIX ? ret : seq - d->rpos;
	if (d->ep_out) {
		__sync_fetch_and_add(&d->rpos, pos);
		return 0;
	}
	r->ret_ts = now;
	r->cpu = bpf_get_smp_processor_id();
	task = bpf_get_current_task_btf();
	t = task_find(task);
	r->match = fill_task(r->comm, &r->tgid, &r->tid, t, task);
	d->r_match = r->match ? END_YES : END_NO;
	if (bulk && bulk_active)
		bulk_read((__u64)sk, r->tid, t ? t->run_ts : 0, now);
	if (unknown && r->match) {
		miss(FM_NO_DIR);
		/* a first send boundary since dir_new did not see it */
		__sync_val_compare_and_swap(&d->unknown, 0, 1);
		if (d->born)
			unknown_taken_back(d, d->born_t0);
	}
	if (!r->match && d->s_match == END_NO && d->head == d->tail) {
		/* neither end counts, nothing in flight: only what a late sender needs */
		r->entry_ts = r->poll_entry = r->poll_exit = 0;
		__builtin_memcpy(&d->last, r, sizeof(*r));
		d->rpos_ts = now;
		__sync_fetch_and_add(&d->rpos, pos);
		return 0;
	}
	r->entry_ts = cur_entry(t, task);
	r->poll_entry = t ? t->poll_entry : 0;
	r->poll_exit = t ? t->poll_exit : 0;
	if (rkstages && t) {
		r->run_ts = t->run_ts;
		r->poll_run = t->poll_run;
		r->copy_ts = t->copy_sys == t->sys_ts ? t->copy_ts : 0;
	}
	__builtin_memcpy(&d->last, r, sizeof(*r));
	d->rpos_ts = now;
	/* rpos last, by a locked add: a late sender and this cannot both miss the other */
	__sync_fetch_and_add(&d->rpos, pos);
	complete(d, x);
	return 0;
}

/* A socket-I/O or poll-family syscall's entry (nr constant in the per-syscall programs). */
static __always_inline void on_sys_enter(long nr)
{
	struct task_st *t;
	bool io = is_io_nr(nr);

	if (!io && !is_poll_nr(nr))
		return;
	t = task_get();
	if (!t)
		return;
	if (io) {
		if (bulk && t->bslot)	/* its last send had no handover */
			bulk_release(t, bulk_own(t, (__u32)bpf_get_current_pid_tgid()));
		t->sys_ts = bpf_ktime_get_ns();
		t->sys_nr = nr;
		if (bulk && bulk_active && !is_send_nr(nr))
			bulk_entry((__u32)bpf_get_current_pid_tgid(), t->sys_ts);
	} else {
		t->poll_pend = bpf_ktime_get_ns();
	}
}

/* tracepoint mode, and function modes on a kernel without the syscall wrappers below */
SEC("?tp_btf/sys_enter")
int BPF_PROG(tp_sys_enter, struct pt_regs *regs, long nr)
{
	on_sys_enter(nr);
	return 0;
}

static __always_inline void on_poll_exit(void)
{
	struct task_st *t = task_find(bpf_get_current_task_btf());

	if (!t || !t->poll_pend)
		return;
	t->poll_entry = t->poll_pend;
	t->poll_exit = bpf_ktime_get_ns();
	t->poll_run = t->run_ts;
	t->poll_pend = 0;
}

/* without syscall tracepoints (CONFIG_FTRACE_SYSCALLS) */
SEC("?tp_btf/sys_exit")
int BPF_PROG(tp_sys_exit, struct pt_regs *regs, long ret)
{
	if (is_poll_nr(SYSNR(regs)))
		on_poll_exit();
	return 0;
}

/* a raw sys_exit costs every syscall ~100 ns, even empty (docs/TRACE.md, "Overhead") */
#define POLL_EXIT(name)								\
SEC("?tracepoint/syscalls/sys_exit_" #name)					\
int tp_exit_##name(void *ctx) { on_poll_exit(); return 0; }

POLL_EXIT(epoll_wait)
POLL_EXIT(epoll_pwait)
POLL_EXIT(epoll_pwait2)
POLL_EXIT(poll)
POLL_EXIT(ppoll)
POLL_EXIT(select)
POLL_EXIT(pselect6)

/* Function modes: each such syscall's own wrapper, entry (and return for the poll family),
 * where sys_enter would run for every syscall of every task and put all of them on the
 * syscall-tracing slow path (docs/TRACE.md, "Hooks per attach mode"). */

/* func: the wrapper's name where it is not the syscall's (sendfile: sys_sendfile64) */
#define SYSCALL_ENTRY_AS(name, func)						\
SEC("?fentry/" SYSCALL_WRAPPER #func)						\
int BPF_PROG(fe_sys_##name) { on_sys_enter(NR_##name); return 0; }		\
SEC("?kprobe/" SYSCALL_WRAPPER #func)						\
int BPF_KPROBE(kp_sys_##name) { on_sys_enter(NR_##name); return 0; }

#define SYSCALL_ENTRY(name) SYSCALL_ENTRY_AS(name, name)

#define SYSCALL_POLL(name)							\
SYSCALL_ENTRY(name)								\
SEC("?fexit/" SYSCALL_WRAPPER #name)						\
int BPF_PROG(fx_sys_##name) { on_poll_exit(); return 0; }			\
SEC("?kretprobe/" SYSCALL_WRAPPER #name)						\
int BPF_KRETPROBE(kr_sys_##name) { on_poll_exit(); return 0; }

SYSCALL_ENTRY(read)
SYSCALL_ENTRY(write)
SYSCALL_ENTRY(readv)
SYSCALL_ENTRY(writev)
SYSCALL_ENTRY(sendto)
SYSCALL_ENTRY(recvfrom)
SYSCALL_ENTRY(sendmsg)
SYSCALL_ENTRY(recvmsg)
SYSCALL_ENTRY(sendmmsg)
SYSCALL_ENTRY(recvmmsg)
SYSCALL_ENTRY_AS(sendfile, sendfile64)
SYSCALL_ENTRY(splice)
SYSCALL_POLL(epoll_wait)
SYSCALL_POLL(epoll_pwait)
SYSCALL_POLL(epoll_pwait2)
SYSCALL_POLL(poll)
SYSCALL_POLL(ppoll)
SYSCALL_POLL(select)
SYSCALL_POLL(pselect6)

/* kprobe mode where the kernel has kprobe.multi (5.18+, CONFIG_FPROBE): the wrappers above as
 * one link each way instead of a kprobe each, every address's cookie its syscall's number */
SEC("?kprobe.multi")
int BPF_KPROBE(kpm_sys_enter) { on_sys_enter(bpf_get_attach_cookie(ctx)); return 0; }
SEC("?kretprobe.multi")
int BPF_KRETPROBE(kpm_sys_poll_exit) { on_poll_exit(); return 0; }

/* kernel stages of the send */

/* NET_RX only: the other vectors fire all the time */
#define KSTAGE_TP(tp, fk)						\
SEC("?tp_btf/" #tp)							\
int BPF_PROG(tp_k_##tp)							\
{									\
	kstage_mark(fk);						\
	return 0;							\
}

#define KSTAGE_SOFTIRQ_TP(tp, fk)					\
SEC("?tp_btf/" #tp)							\
int BPF_PROG(tp_k_##tp, unsigned int vec)				\
{									\
	if (vec == NET_RX_SOFTIRQ_VEC)					\
		kstage_mark(fk);					\
	return 0;							\
}

KSTAGE_TP(tcp_sendmsg_locked, FK_PROTO)
KSTAGE_TP(net_dev_queue, FK_DEV_QUEUE)
KSTAGE_SOFTIRQ_TP(softirq_entry, FK_SOFTIRQ)
KSTAGE_TP(netif_receive_skb, FK_IP_RCV)

/* first data-ready in a send: slicing may start; a second on sk: several chunks */
SEC("?tp_btf/sk_data_ready")
int BPF_PROG(tp_k_sk_data_ready, struct sock *sk)
{
	struct task_st *t = kstage_mark(FK_DATA_READY);

	if (!bulk || !t)
		return 0;
	if (t->dr_sys != t->sys_ts) {
		t->dr_sys = t->sys_ts;
		t->dr_t = t->k_last;
		t->dr_sk = (__u64)sk;
		__builtin_memcpy(t->k_dr, t->k_acc, sizeof(t->k_acc));
		t->bslot = 0;
		t->dr_chunks = 1;
		t->dr_slept = 0;
		t->dr_skip = 0;
	} else if (t->dr_sk == (__u64)sk) {
		t->dr_chunks++;
		if (!t->bslot && !t->dr_skip)
			bulk_start(t, (__u32)bpf_get_current_pid_tgid(), t->k_last);
	}
	return 0;
}
KSTAGE_SOFTIRQ_TP(softirq_exit, FK_WAKE_END)

/* kernel stages of the receiver (--detail full) */

static __always_inline struct task_st *task_find_other(struct task_struct *task)
{
	__u32 tid = task->pid;

	if (task_storage)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	return bpf_map_lookup_elem(&tasks, &tid);
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(tp_k_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct task_st *t = task_find_other(next);
	__u64 now;
	bool slept;

	if (!t && !bulk)
		return 0;
	now = bpf_ktime_get_ns();
	if (t)
		t->run_ts = now;
	if (!bulk)
		return 0;
	slept = switched_to_sleep(preempt, prev);
	/* a sender leaving the CPU inside a send past its first chunk */
	t = task_find_other(prev);
	if (t && t->dr_sys && t->dr_sys == t->sys_ts) {
		t->dr_slept |= slept;
		if (!t->bslot && !t->dr_skip)
			bulk_start(t, prev->pid, now);
	}
	if (bulk_active)
		bulk_switch(prev->pid, next->pid, slept, now);
	return 0;
}

/* the last copy-done in the syscall counts */
static __always_inline void copy_done(void)
{
	struct task_st *t = task_find(bpf_get_current_task_btf());

	if (!t || !t->sys_ts || is_send_nr(t->sys_nr))
		return;
	t->copy_ts = bpf_ktime_get_ns();
	t->copy_sys = t->sys_ts;
}

SEC("?tp_btf/tcp_rcv_space_adjust")
int BPF_PROG(tp_k_tcp_rcv_space_adjust)
{
	copy_done();
	return 0;
}

/* AF_UNIX only: TCP frees ACKs in its recv() too */
SEC("?tp_btf/consume_skb")
int BPF_PROG(tp_k_consume_skb, struct sk_buff *skb)
{
	struct sock *sk = skb->sk;

	if (sk && sk->__sk_common.skc_family == AF_UNIX)
		copy_done();
	return 0;
}

/* send and receive boundaries, per mode */

SEC("?tp_btf/sock_send_length")
int BPF_PROG(tp_sock_send_length, struct sock *sk, int ret, int flags)
{
	return on_send(sk, ret, SK_BTF_CAST);
}

SEC("?tp_btf/sock_recv_length")
int BPF_PROG(tp_sock_recv_length, struct sock *sk, int ret, int flags)
{
	return on_recv(sk, ret, flags, SK_BTF_CAST);
}

/* kretprobes have no arguments: the entry keeps sock and flags */
static __always_inline void on_call_entry(struct socket *sock, int flags)
{
	struct task_st *t = task_get();

	if (!t)
		return;
	t->call_sk = (__u64)BPF_CORE_READ(sock, sk);
	t->call_flags = flags;
}

static __always_inline void on_call_exit(int ret, bool sending)
{
	struct task_st *t = task_find(bpf_get_current_task_btf());
	struct sock *sk;

	if (!t || !t->call_sk)
		return;
	sk = (struct sock *)t->call_sk;
	t->call_sk = 0;
	if (sending)
		on_send(sk, ret, SK_PROBE);
	else
		on_recv(sk, ret, t->call_flags, SK_PROBE);
}

#define SEND_FUNC(func)								\
FENTRY_KPROBE(func, on_call_entry(sock, 0), struct socket *sock)		\
FEXIT_KRETPROBE(func, int, on_call_exit(ret, true),				\
		struct socket *sock, struct msghdr *msg, size_t len, int ret)

#define RECV_FUNC(func)								\
FENTRY_KPROBE(func, on_call_entry(sock, flags),					\
	      struct socket *sock, struct msghdr *msg, size_t len, int flags)	\
FEXIT_KRETPROBE(func, int, on_call_exit(ret, false),				\
		struct socket *sock, struct msghdr *msg, size_t len, int flags, int ret)

SEND_FUNC(unix_stream_sendmsg)
SEND_FUNC(inet_sendmsg)
SEND_FUNC(inet6_sendmsg)
RECV_FUNC(unix_stream_recvmsg)
RECV_FUNC(inet_recvmsg)
RECV_FUNC(inet6_recvmsg)

/* every mode */

/* TCP: read past the last send boundary, which is still to come (issue 36 item 3) */
static __always_inline bool send_boundary_pending(const struct dir_st *d, __u32 read_seq)
{
	__u64 tail = d->tail;

	if (!d->first_rcv || d->ep_out || tail != d->head)
		return false;
	return !tail || (int)(read_seq - d->ents[(tail - 1) & (FL_FIFO - 1)].end) > 0;
}

/* TCP_CLOSE: the state goes now, not by the LRU evicting a live one (docs/TRACE.md, "The model") */
static __always_inline void on_tcp_close(struct sock *sk)
{
	struct dir_key k = {};
	struct dir_st *d;
	__u32 seq = 0;

	if (!dir_key_of(sk, false, SK_BTF, &k, &seq))
		return;
	d = bpf_map_lookup_elem(&dirs, &k);
	if (!d || stale_for_receiver(d, sk))
		return;
	/* a FIN the reader took counts one in copied_seq: no send's byte */
	if ((BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & RCV_SHUTDOWN) &&
	    seq == BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt))
		seq--;
	if (send_boundary_pending(d, seq)) {
		/* one of this and the late boundary ends it */
		d->closed_seq = seq;
		if (__sync_val_compare_and_swap(&d->rclosed, 0, 1) != 0 ||
		    send_boundary_pending(d, seq) ||
		    __sync_val_compare_and_swap(&d->rclosed, 1, 2) != 1)
			return;
	}
	/* still held and readable (half-closed): left to the LRU */
	if (d->tail != d->head && sk->sk_socket &&
	    (sk->sk_receive_queue.qlen ||
	     (int)(seq - d->ents[d->head & (FL_FIFO - 1)].end) >= 0))
		return;
	closed_unread(d, &k, true, seq);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tp_inet_sock_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__u16 port;
	__u8 one = 1;

	if (newstate == TCP_CLOSE) {
		on_tcp_close((struct sock *)sk);
		return 0;
	}
	if (newstate != TCP_LISTEN)
		return 0;
	port = sk->__sk_common.skc_num;
	bpf_map_update_elem(&lports, &port, &one, BPF_ANY);
	return 0;
}

/* AF_UNIX: no close tracepoint; unread skbs are freed after sock_orphan */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tp_kfree_skb, struct sk_buff *skb)
{
	/* probe reads: skb->sk is an RCU pointer the bpf_skc_to_* helpers refuse */
	struct sock *sk = BPF_CORE_READ(skb, sk), *rcv;
	struct dir_key k = {};
	struct dir_st *d;
	__u32 seq;

	if (!sk || BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX ||
	    !dir_key_of(sk, true, SK_PROBE, &k, &seq))
		return 0;
	rcv = (struct sock *)k.sk;
	if (BPF_CORE_READ(rcv, sk_socket))
		return 0;
	d = bpf_map_lookup_elem(&dirs, &k);
	if (d)
		closed_unread(d, &k, false, 0);
	return 0;
}

/* signal->live drops before this tracepoint (do_exit's group_dead) */
SEC("?tp_btf/sched_process_exit")
int BPF_PROG(tp_sched_process_exit, struct task_struct *task)
{
	__u32 tid = task->pid, tgid = task->tgid;

	if (!task_storage)	/* task local storage goes with the task */
		bpf_map_delete_elem(&tasks, &tid);
	if (filter_procs && BPF_CORE_READ(task, signal, live.counter) == 0 &&
	    !bpf_map_delete_elem(&tgids, &tgid))
		__sync_fetch_and_add(&procs_exited, 1);
	return 0;
}

SEC("?tp_btf/sched_process_fork")
int BPF_PROG(tp_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&tgids, &ptgid))
		return 0;
	if (bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY))
		__sync_fetch_and_add(&procs_unfollowed, 1);
	return 0;
}
