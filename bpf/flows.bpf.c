// SPDX-License-Identifier: GPL-2.0
/*
 * --trace: every message on local AF_UNIX stream and loopback TCP sockets.
 *
 * A message is one send()-family call of N bytes; it ends when the peer's
 * recv()-family call returns its last byte (docs/TRACE.md, "The model"). Per direction of a
 * connection (keyed by the receiving and sending unix socks, or by the TCP
 * 4-tuple as the sender sees it) the sender appends (entry time, end offset) to
 * a small FIFO; the receiver's position (unix: cumulative bytes, TCP: copied_seq
 * against the sender's write_seq) completes every send whose end it passed.
 * Completed messages go to per-CPU flow stats with linear-log histograms;
 * nothing goes to user space per event. What cannot be matched is counted in
 * misses[].
 *
 * Every mode: tp_btf sys_enter, the poll-family returns (syscalls:sys_exit_* events, else
 * tp_btf sys_exit), inet_sock_set_state; sched_process_exit where there is state to drop
 * (the tid hash, the followed processes), sched_process_fork with the process filters.
 * The send and receive boundaries per mode (one body, thin wrappers): tracepoint
 * mode sock_send_length/sock_recv_length (6.3+); fentry/fexit and kprobe/
 * kretprobe mode the socket-layer functions those tracepoints wrap on the way
 * in and out (unix_stream_{send,recv}msg, inet{,6}_{send,recv}msg): the entry
 * remembers the sock, the exit has the byte count. All socket reads are CO-RE
 * reads, since in kretprobe mode the sock is a plain address.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "common.bpf.h"
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

/* A cast of a BTF pointer the verifier turns into a move (6.2+): the sock's unix or TCP
 * part after the family and protocol checks, without a bpf_skc_to_*_sock helper call.
 * Only SK_BTF_CAST reaches it (a weak ksym: absent before 6.2). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define SK_CAST(sk, type) ((type *)bpf_rdonly_cast((sk), bpf_core_type_id_kernel(type)))

/* Filters, set between open and load. */
const volatile __u32 filter_procs;		/* 1: only messages with an end in tgids, comms
						 * or the cgroup */
const volatile __u32 filter_cgroup;		/* 1: --cgroup, in cgroup_filter[0] */
const volatile __u32 n_comms;
const volatile char comms[FL_MAX_COMMS][FL_COMM_LEN];
/* The endpoint filters as far as a direction decides them (user space applies them all,
 * exactly): --port (n_ports; in ports[] when at most FL_MAX_PORTS), --unix (n_unix). */
const volatile __u32 n_ports;
const volatile __u16 ports[FL_MAX_PORTS];
const volatile __u32 n_unix;
/* --slower-than: a message slower than this goes to the outliers ring buffer (0: none) */
const volatile __u64 slower_than_ns;
/* 1: per-task state in task local storage (task_store), else in the tid-keyed tasks hash
 * (user space asks the kernel which it supports) */
const volatile __u32 task_storage;
/* Bit per enum fl_kstage whose boundary is attached (0: send;call is not cut) */
const volatile __u32 kstages;
/* enum fl_rkstage_seen bits: the receiver's boundaries attached (--detail full) */
const volatile __u32 rkstages;
/* 1: slice messages sent in several chunks (enum fl_bulk; needs sk_data_ready and the
 * receiver's switches) */
const volatile __u32 bulk;

/* Counters read at exit. */
__u64 misses[16];		/* enum fl_miss */
__u64 outliers_dropped;		/* the ring buffer was full */
__u64 dirs_made, dirs_deleted;	/* direction states (the LRU evicted the rest) */
__u64 names_lost;		/* unix endpoint names the full uaddrs map had no room for */
__u64 procs_exited;		/* followed processes whose last thread exited */
__u64 procs_unfollowed;	/* children of followed processes the full tgids map left out */
__u64 bulk_unsliced;		/* messages in several chunks no slot was free for */

struct fl_bulk_slot bulk_slots[FL_BULK_SLOTS];
__u64 bulk_active;		/* slots in use: 0 keeps every switch and syscall entry cheap */
/* Bumped by user space after it adds to tgids: a task's cached answer from before is stale. */
__u32 tgids_gen;

struct task_st {
	__u64 sys_ts;		/* entry of the current send/recv-family syscall */
	__u64 poll_pend;	/* entry of the poll-family call in progress */
	__u64 poll_entry;	/* the last completed poll-family call */
	__u64 poll_exit;
	__u64 call_sk;		/* function modes: the sock of the socket call in progress */
	__u32 sys_nr;
	__u32 call_flags;	/* its recv flags */
	__u32 tgids_gen;	/* tgids_gen + 1 when followed was found (0: never) */
	__u32 followed;		/* its process was in tgids */
	__u64 k_sys;		/* the send syscall (its sys_ts) k_acc is cutting */
	__u64 k_last;		/* its last kernel boundary */
	__u32 k_acc[FK__COUNT];	/* enum fl_kstage: ns up to each boundary since the last */
	__u64 run_ts;		/* its last switch onto a CPU (rkstages) */
	__u64 poll_run;		/* run_ts when its last poll-family call returned */
	__u64 copy_ts;		/* the last copy-done boundary in the recv-family syscall, */
	__u64 copy_sys;		/* that syscall's sys_ts */
	__u64 dr_sys;		/* bulk: the send syscall whose first data-ready ran (0 after its
				 * handover), */
	__u64 dr_t;		/* that data-ready, */
	__u64 dr_sk;		/* its receiving sock, */
	__u32 k_dr[FK__COUNT];	/* and k_acc then: the stages a sliced message keeps */
	__u32 bslot;		/* 1 + the slot slicing its message (0: none) */
	__u32 dr_chunks;	/* data-readies on dr_sk in the send */
	__u32 dr_slept;		/* it slept in the send after the first */
	__u32 dr_skip;		/* not sliced (filtered out, or no free slot): not tried again */
};

struct msg_ent {
	__u64 t0;		/* send() entry */
	__u64 t1;		/* data handed over (sock_send_length) */
	__u32 end;		/* position of the last byte + 1 */
	__u32 tgid;
	__u32 bytes;
	__u32 match;		/* the sender counts for the process filters */
	__u32 tid;
	__u32 cpu;		/* the sender's CPU at the handover */
	char comm[FL_COMM_LEN];
	__u32 k[FK__COUNT];	/* enum fl_kstage: its send;call cut (they add up to t1 - t0) */
	__u32 bk_pre[FBK__COUNT];	/* sliced: the slices up to the handover (k up to the
					 * first data-ready) */
	__u32 bslot;		/* 1 + its bulk slot (0: not sliced) */
};

struct rcv_info {
	__u64 ret_ts, entry_ts, poll_entry, poll_exit;
	__u64 run_ts, poll_run, copy_ts;	/* rkstages: switched in, copy done (0: unseen) */
	__u32 tgid, match;	/* match: the receiver counts for the process filters */
	__u32 tid, cpu;		/* cpu: where the recv() returned */
	char comm[FL_COMM_LEN];
};

struct dir_st {
	__u64 sender_sk;	/* reuse check */
	__u64 recv_sk;		/* TCP: reuse check at the receiver (unix: in the key) */
	__u64 first_rcv;	/* time of the first receive seen on this direction */
	__u64 sender_ino;	/* its inode: a new pair of sockets can get an old pair's two addresses */
	__u64 sent;		/* unix: bytes queued so far (the low 32 bits are positions) */
	__u64 writer;		/* 1 while a sender appends to the FIFO (on_send; 64 bits: the
				 * BPF atomics every kernel has) */
	__u32 rpos;		/* unix: bytes received; TCP: copied_seq */
	__u64 rpos_ts;		/* return of the last receive rpos counts (it lags the kernel's
				 * dequeue by the receiver's return path), written before the add:
				 * an rpos read first never holds a read this calls uncounted */
	__u64 head, tail;	/* FIFO: the receiver (or the late sender) advances head */
	__u64 dropped;		/* sends lost since the last completion */
	__u8 transport, v6;
	__u16 port;
	__u32 addr[4];
	__u64 ep_id;
	__u8 s_match, r_match;	/* enum end_match of the last send, the last receive */
	__u8 ep_out;		/* the endpoint filters exclude the direction */
	__u8 counted;		/* a message of this connection was recorded (fl_stats.conns) */
	__u32 closed_seq;	/* TCP: where the receiver had read to when it closed */
	__u64 rclosed;		/* 1: it closed with a send boundary still to come (whose run ends
				 * the direction); 2: ended (by one cmpxchg: one of the two does) */
	__u64 unknown;		/* made by a receive counted as socket_unknown (64 bits:
				 * taken back by one cmpxchg) */
	__u64 born;		/* the direction's first traced send boundary, */
	__u64 born_t0;		/* its send's entry, */
	__u32 born_tid;		/* its thread */
	__u64 straddle;		/* unix: bytes queued before its message, not yet claimed by a
				 * send begun before that boundary (another writer's) */
	struct rcv_info last;	/* the receive that moved rpos last */
	struct msg_ent ents[FL_FIFO];
};

/* Does an end count for the process filters (--pid, --comm, --cgroup)? */
enum end_match { END_UNKNOWN, END_YES, END_NO };

struct dir_key {
	__u32 kind;		/* enum fl_transport */
	__u16 sport, dport;	/* TCP, as the sender sees them */
	__u64 sk;		/* unix: the receiving sock */
	__u64 peer;		/* unix: the sending sock */
	__u32 saddr[4], daddr[4];
};

/* Per-task state: task local storage is a few loads off the task_struct (and is freed with
 * the task); the LRU hash by thread id, a hash lookup per syscall, where it is missing. */
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

/* Unix endpoint names by id (name_hash); user space moves them out as it goes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* set from user space */
	__type(key, __u64);
	__type(value, struct fl_uaddr);
} uaddrs SEC(".maps");

/* TCP ports in LISTEN (seeded from /proc/net/tcp*, then inet_sock_set_state). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u16);
	__type(value, __u8);
} lports SEC(".maps");

/* --cgroup: tasks in this cgroup v2 directory or below count (set from user space). */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* Processes whose messages count when filter_procs (--pid, -- COMMAND, their children). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);	/* set from user space */
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* --slower-than: one record per outlier (sized from user space). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* set from user space */
} outliers SEC(".maps");

/* Per-CPU scratch: the message being recorded, too large for the stack. */
struct scratch {
	struct fl_outlier o;	/* its flow key, boundaries and stages */
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

/* Zeroed templates too large for the stack. */
static const struct fl_stats zero_stats;
static const struct dir_st zero_dir;
static const struct task_st zero_task;

static __always_inline void miss(int reason)
{
	__sync_fetch_and_add(&misses[reason & 15], 1);
}

/* Linear-log bucket: exact below 8, then 8 sub-buckets per power of two. */
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

/* The current task's state, NULL when it has none yet. task is the current task: the
 * boundaries fetch it once (bpf_get_current_task_btf is a helper call) for every use. */
static __always_inline struct task_st *task_find(struct task_struct *task)
{
	__u32 tid;

	if (task_storage)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	tid = (__u32)bpf_get_current_pid_tgid();
	return bpf_map_lookup_elem(&tasks, &tid);
}

/* The current task's state, created zeroed when it has none (NULL: no memory, map full). */
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

/* Entry time of the syscall the current task is in, if it is one we stamp. */
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

/*
 * Reads of the sock on the hot path (direct, enum sk_access). Tracepoint mode's sock is
 * a BTF pointer, read with plain loads instead of a probe-read helper call per field, a
 * good part of a hit's cost; the function modes hold the sock as a plain address (CO-RE
 * probe reads).
 */
enum sk_access {
	SK_PROBE,	/* a plain address: probe reads */
	SK_BTF,		/* a BTF pointer; bpf_skc_to_* for the unix or TCP part (any kernel:
			 * inet_sock_set_state, which every mode attaches) */
	SK_BTF_CAST,	/* the same with SK_CAST (sock_send/recv_length: 6.3+) */
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

/* The local port (network order) and the TCP position at this boundary: the sender's
 * write_seq, the receiver's copied_seq. Not skc_num: closing zeroes it
 * (inet_put_port) while the last bytes may still be read. */
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

/*
 * The direction key of data moving through sk: sending (sk is the sender) or
 * receiving (sk is the receiver), and for TCP the position in *seq. 0 when sk is
 * not a connected AF_UNIX stream or a loopback TCP socket.
 */
static __always_inline int dir_key_of(struct sock *sk, bool sending, int direct,
				      struct dir_key *k, __u32 *seq)
{
	__u16 family = SK_RD(direct, sk, __sk_common.skc_family);
	__u32 l[4] = {}, r[4] = {};
	__u16 lport, rport;

	if (SK_RD(direct, sk, sk_type) != SOCK_STREAM)
		return 0;
	if (family == AF_UNIX) {
		/* both socks: the kernel reuses a closed pair's addresses, often swapped (the
		 * next connection's client sock where the last accepted one was); a key of the
		 * receiving sock alone then met an earlier connection's state, which one side
		 * replaced while the other was using it (seen in a 6.1 guest, nginx -> php-fpm) */
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

/* FNV-1a of a unix address's name; never 0 (0 is a socketpair's endpoint). */
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

/* The endpoint of a new direction: the listener's unix address or TCP port. */
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
		/* keyed by the name, not by the unix_address: a freed one's memory is reused
		 * for another socket's address, which must not inherit the old name */
		len = BPF_CORE_READ(a, len) - 2;	/* minus sun_family */
		ua.len = len <= 0 ? 0 : len < FL_PATH_LEN ? len : FL_PATH_LEN;
		BPF_CORE_READ_INTO(&ua.path, a, name[0].sun_path);
		id = name_hash(&ua);
		d->ep_id = id;
		/* user space moves the names out every few seconds; a name it could not keep
		 * up with is counted (its flows are reported as "unix:unnamed") */
		if (ua.len && bpf_map_update_elem(&uaddrs, &id, &ua, BPF_NOEXIST) == -E2BIG)
			__sync_fetch_and_add(&names_lost, 1);
		return;
	}
	{
		__u16 sp = k->sport, dp = k->dport;
		bool srv_is_dst = bpf_map_lookup_elem(&lports, &dp) ||
				  (!bpf_map_lookup_elem(&lports, &sp) && dp < sp);

		d->port = srv_is_dst ? dp : sp;
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

/*
 * Is the current process in tgids? A hash lookup per end of every message is a good part
 * of its cost with --pid; the answer is kept in the task's state until user space adds a
 * tgid (tgids_gen, read before the lookup). Nothing else changes it while the task lives:
 * a tgid leaves the map when its last thread exits, a child's enters at fork, before the
 * child runs.
 */
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

/* One more value v in hist. The index is bounded where it is used: without the
 * barrier clang checks one copy and indexes with another, which 6.1's verifier
 * rejects ("unbounded memory access"). */
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

/*
 * Bulk slicing: the time since the slot's last boundary goes to what ran then. The sender
 * inside its send() comes first (the message cannot end before its last byte is queued),
 * then the receiver; when neither runs, a sender asleep in send() waits for buffer space.
 * The exchange makes two CPUs' boundaries partition the time between them.
 */
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

/* The slot of message e, still its own (not reclaimed as stale), or NULL. */
static __always_inline struct fl_bulk_slot *bulk_of(const struct msg_ent *e)
{
	struct fl_bulk_slot *b;

	if (!e->bslot)
		return NULL;
	b = bulk_slot_of(e->bslot);
	return b->sys == e->t0 && b->snd_tid == e->tid ? b : NULL;
}

/* The slot of task t's send (thread tid), unless taken back as stale since, or NULL. */
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

/* Task t's send is not (or no longer) sliced: its slot, if still its own, is free again. */
static __always_inline void bulk_release(struct task_st *t, struct fl_bulk_slot *b)
{
	bulk_free(b);
	t->bslot = 0;
	t->dr_sys = 0;
}

/*
 * The stages of one message into o: they partition t0 (send entry) → t3 (the
 * recv() return that brought its last byte). o->bound gets the boundaries on one
 * monotonic path, o->stage_ns the time of each stage and o->stages a bit per
 * stage the message passed through.
 */
static __always_inline void cut_stages(const struct msg_ent *e, const struct rcv_info *r,
				       struct fl_outlier *o)
{
	__u64 t3 = r->ret_ts, t0 = e->t0, t1 = e->t1, re, pe, px;

	o->unseen = (e->t0 == e->t1 ? FU_SEND_ENTRY : 0) | (r->entry_ts ? 0 : FU_RECV_ENTRY);
	if (t0 > t3)	/* clocks of two CPUs: keep the path monotonic */
		t0 = t3;
	if (t1 < t0)
		t1 = t0;
	if (t1 > t3)	/* the receiver finished before the sender's tracepoint */
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

/* send;call's kernel stages into o->k (and a sliced message's slices up to the handover
 * into o->bk), in path order, up to its (clamped) length: they add up to it. */
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

/* The slices between two snapshots (from, to) under stage st, clamped to its time. */
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

/*
 * A sliced message after its handover: its slices up to the recv() return under the
 * receiver's stages, recv;blocked (it was in recv() at the handover), or wait;busy up to the
 * entry of the recv() that ends it (it was between two reads of it) and recv;copy+return
 * from there. An epoll wait in between: not sliced (-1). Returns the stage cut last.
 */
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

/* A copy-done time inside [from, to], else to: a recv() whose copy-done boundary did not
 * fire (a message read in part) counts all of its time as copy. */
static __always_inline __u64 copy_end(__u64 copy_ts, __u64 from, __u64 to)
{
	return copy_ts >= from && copy_ts <= to ? copy_ts : to;
}

/* The receiver's kernel stages inside the stages cut_stages gave o, into o->rk, but in the
 * stage a sliced message's slices went to (sliced: that enum fl_stage, else -1). */
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

/* --slower-than: the whole record to user space; a full ring buffer is counted. */
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

/* One message done: into its flow's stats, and to user space when slower than asked. */
static __always_inline void record(struct dir_st *d, const struct msg_ent *e,
				   const struct rcv_info *r, __u64 dropped, struct fl_outlier *o)
{
	struct fl_bulk_slot *b = bulk ? bulk_of(e) : NULL;
	struct fl_key *fkp = &o->key;
	int st, sliced = -1, i;
	struct fl_stats *s;

	if (!e->match && !r->match) {
		bulk_free(b);
		return;
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
		return;
	}
	cut_stages(e, r, o);
	s->msgs++;
	s->bytes += e->bytes;
	s->lat_sum += o->latency_ns;
	s->misses += dropped;
	s->cross_cpu += e->cpu != r->cpu;
	if (!d->counted) {	/* the connection's first message of this direction */
		d->counted = 1;
		s->conns++;
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
}

/* Complete every queued send whose end the receiver's position has passed. */
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
		record(d, e, &x->r, dropped, &x->o);
	}
}

/* Who runs this end (comm, tgid, tid), and whether it counts for the process filters
 * (always without them); --cgroup asks the kernel at that moment. */
static __always_inline __u32 fill_task(char *comm, __u32 *tgid, __u32 *tid, struct task_st *t,
				       struct task_struct *task)
{
	__u32 in_cg;

	/* loads, not bpf_get_current_comm's copy loop (a good part of a hit's cost) nor
	 * another helper call for the ids (bpf_get_current_pid_tgid reads these two) */
	__builtin_memcpy(comm, task->comm, FL_COMM_LEN);
	*tgid = task->tgid;
	*tid = task->pid;
	if (!filter_procs)
		return 1;
	in_cg = filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) == 1;
	return proc_match(*tgid, comm, in_cg, t);
}

/* Does the endpoint filter exclude a direction whose endpoint is known? Only what is
 * certain: a transport no filter names, a port not among them. */
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

/* A new direction state; made and deleted ones are counted: the rest of what was made and
 * is no longer in the map is what the LRU evicted (user space reports it). */
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

/* The inode number of sk's socket (unique while sockets come and go, unlike addresses).
 * Read on every AF_UNIX send: direct, through the socket's file (the same inode), costs
 * plain loads instead of two probe-read calls; a kernel socket has no file. */
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

/* The messages in flight on d will never be completed (their receiver closed): counted when
 * an end counts for the process filters, as a completed message would be; the state goes.
 * TCP's read position (read_seq, when has_seq) tells a message its receiver read, whose
 * recv() boundary did not run, from one never read. */
static __always_inline void closed_unread(struct dir_st *d, const struct dir_key *k,
					  bool has_seq, __u32 read_seq)
{
	__u64 h = d->head, tail = d->tail, unread = 0, unseen = 0;
	__u32 all = d->r_match == END_YES, seen = has_seq, c, past;
	int i;

	/* without branches per entry: the verifier walks each of them 16 times */
	for (i = 0; i < FL_FIFO; i++) {
		if (h + i == tail)
			break;
		c = d->ents[(h + i) & (FL_FIFO - 1)].match | all;	/* 0 or 1 */
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

/* Drop a direction state an earlier connection left on reused socket addresses (its
 * messages still in flight are misses); NULL, for the caller's d. */
static __always_inline struct dir_st *forget_dir(const struct dir_st *d, const struct dir_key *k)
{
	if (d->head != d->tail)
		miss(FM_REUSED);
	dir_delete(k);
	return NULL;
}

/*
 * The receiver's position, and whether it counts a read that returned at or after t0.
 * rpos is read before rpos_ts (a receive writes rpos_ts, then rpos by a locked add; the
 * locked no-op orders the two reads): read the other way, a receive counted in between
 * made a send end past its own bytes, never completed (issue 36 item 3).
 */
static __always_inline __u32 rpos_read(struct dir_st *d, __u64 t0, bool *since_t0)
{
	__u32 rpos = *(volatile __u32 *)&d->rpos;

	__sync_fetch_and_add(&d->writer, 0);
	*since_t0 = d->rpos_ts >= t0;
	return rpos;
}

/*
 * AF_UNIX: is sk, the sender at d's addresses, a new socket there? A new pair of sockets
 * often gets an earlier pair's two addresses (swapped too), and so the earlier state at
 * its key, with that pair's endpoint and, when its client exited with replies unread,
 * bytes outstanding that put this send's end beyond what the new receiver reads (lost:
 * redis-benchmark's CONFIG GETs, the first message of a connection, on 6.12). With bytes
 * of the old pair unread the old state goes (true; a receiver that already read this send
 * read it into the old state: that message is lost with it, counted); else the positions
 * stay exact (a receiver that read first read the new pair's bytes) and d becomes this
 * connection's: its sender, its endpoint (else its messages counted under another
 * server's path, seen with other redis-servers on the host), no receiver verdict yet.
 */
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
	/* No read returned since this send began: this pair's bytes start where the receiver
	 * is. The old pair's sent can be behind it (its receiver was inside a read at the old
	 * first boundary), and this send would then end among bytes read long ago, completed
	 * at once with that old receive (the server's own: issue 36 item 3). */
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

/* A send that gets no FIFO entry: a miss of its flow, and of the run when an end counts for
 * the process filters (a receiver not seen yet does not: another program's traffic to a
 * receiver that never reads would be counted here on every send). */
static __always_inline void send_lost(struct dir_st *d, __u32 match, int reason)
{
	if (match || d->r_match == END_YES)
		miss(reason);
	__sync_fetch_and_add(&d->dropped, 1);
}

/* The receiver that made d read the send begun at t0 before its boundary ran: matched
 * after all, its socket_unknown taken back once, by whichever of the two runs second. */
static __always_inline void unknown_taken_back(struct dir_st *d, __u64 t0)
{
	if (d->unknown && d->first_rcv >= t0 &&
	    __sync_val_compare_and_swap(&d->unknown, 1, 0) == 1)
		__sync_fetch_and_sub(&misses[FM_NO_DIR], 1);
}

/* The entry of the send() call this send is in; its handover time when outside one
 * (counted when the sender counts for the process filters). */
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

/*
 * A kernel boundary in the current task's context: the time since the last one (or since
 * the send syscall's entry) goes to the stage it ends. Only inside a send-family syscall;
 * a NET_RX softirq that runs there for other traffic is time this send spent, and counts.
 */
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
	/* a boundary's first crossing in a message ends its stage, as --compare stamps it:
	 * TCP's protocol entry fires again for each skb a large send allocates, a NET_RX
	 * softirq again for the next segment or an ACK; later crossings are inside the stages
	 * after it (and still the send's time) */
	if (t->k_acc[fk])
		return t;
	if (now > t->k_last)
		t->k_acc[fk] += now - t->k_last;
	t->k_last = now;
	return t;
}

/*
 * The send of task t (thread tid) left its first chunk and goes on (a second data-ready, or
 * it leaves the CPU inside the send): a slot slices it from that first data-ready on, the
 * sender running until now; whether it is a message in several chunks is known at its
 * handover. The receiver is the direction's last reader until one reads (bulk_read): known
 * from the start, its entry into the recv() that ends the message is seen too.
 * Only a send the filters keep (the sender counts, or the direction's last receiver does):
 * other programs' large sends took every slot. Called in the sender's context.
 * No free slot: a slot claimed a second ago belongs to a message that has not completed
 * (lost with its direction, or a reader that stopped): taken; else this one is not sliced,
 * counted.
 */
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

/* A task switch: a boundary of every slot whose sender or receiver it moves. */
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

/* The receiver of sk returns from a read at now (running since run_ts): it is the reader of
 * every slot on sk, running since its switch in. */
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

/* The receiver of a slot enters a syscall at now: where its last recv() stage begins. */
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

/*
 * The handover of a send that began at t0: its cut into k (the rest up to now ends at the
 * handover's own boundary); the next message of the same syscall starts from here.
 */
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
	/* one chunk (the sender preempted): not sliced; the next message of this syscall has
	 * its own first chunk */
	if (t)
		bulk_release(t, b);
	if (t && t->sys_ts && t->k_sys == t->sys_ts && t->sys_ts == t0) {
		__builtin_memcpy(k, t->k_acc, sizeof(t->k_acc));
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		from = t->k_last;
		t->k_last = now;
	} else if (t && t->sys_ts == t0) {	/* no boundary yet: later messages start here */
		__builtin_memset(t->k_acc, 0, sizeof(t->k_acc));
		t->k_sys = t0;
		t->k_last = now;
	}
	if (now > from)
		k[last] += now - from;
}

/*
 * AF_UNIX byte positions at a direction's first traced send of ret bytes. rpos is
 * 0, or what the receiver counted if it read first (it creates the direction
 * then: it can read a message before the sender's boundary runs, even while the
 * sender is here; it writes first_rcv, then last, then rpos). This send ends where
 * the receiver is plus what is still queued (inq_len: 6.18 has it, 6.12 not);
 * without it, at ret when the receiver's first read came after this send began
 * (its bytes are this send's first), else at the receiver's position if it read
 * since this send began, else ret after it.
 * Returns the bytes queued before this send (another writer's, or sent before the run).
 * TCP needs nothing: its positions are sequence numbers the receiver reads.
 */
static __always_inline __u32 start_position(struct dir_st *d, struct sock *sk, int ret, __u64 t0)
{
	/* counted: rpos counts a read that returned since this send began (bytes of it) */
	bool counted;
	__u32 rpos = rpos_read(d, t0, &counted);
	bool rcv_first = rpos || d->first_rcv;

	if (bpf_core_field_exists(struct unix_sock___inq, inq_len)) {
		/* bytes queued before this send were sent before the run; fewer than its own
		 * were read, and are in rpos only once that read's boundary counted them */
		struct unix_sock___inq *p = (void *)BPF_CORE_READ((struct unix_sock *)sk, peer);
		int q = BPF_CORE_READ(p, inq_len) - ret;

		d->sent = rpos + (q > 0 || (q < 0 && counted) ? q : 0);
		return q > 0 ? q : 0;
	}
	/* every byte the receiver counted came after this send began: they are its first */
	if (rcv_first && d->first_rcv >= t0)
		d->sent = 0;
	else
		d->sent = counted ? rpos - ret : rpos;
	return 0;
}

/*
 * A send of ret bytes handed over on sk. With filters, a direction the endpoint filters
 * exclude, or whose sender and last receiver both do not count, gets no per-message
 * state: only its byte position moves (AF_UNIX), so that it is matched exactly again
 * from the moment an end counts.
 */
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
		d = forget_dir(d, &k);	/* its receiver closed: another connection's sender */
	if (!d) {	/* a hash lookup per send is a good part of its cost: only when new */
		d = dir_new(&k);
		if (!d)
			return 0;
	}
	task = bpf_get_current_task_btf();
	t = task_find(task);
	match = fill_task(comm, &tgid, &tid, t, task);
	/* the direction's first traced send (one of two writers meeting here) */
	if (!d->sender_sk && !__sync_val_compare_and_swap(&d->sender_sk, 0, (__u64)sk)) {
		d->sender_ino = sock_ino(sk, direct);
		endpoint_of(sk, &k, d);
		d->ep_out = endpoint_out(d);
		t0 = send_t0(now, t, task, match);
		if (k.kind == FL_UNIX)
			d->straddle = start_position(d, sk, ret, t0);
		d->born_t0 = t0;
		d->born_tid = tid;
		/* a locked add: the receiver that made d sees born_t0, or this sees unknown */
		__sync_fetch_and_add(&d->born, now);
		unknown_taken_back(d, t0);
	} else if (k.kind == FL_UNIX && !d->born) {
		/* The first boundary is still running on another CPU (its claim made, its
		 * positions not yet): whether this send's bytes are among those it finds
		 * queued cannot be known. Added twice, they stranded the direction's last
		 * message (two writers starting together, ~1 run in 24). */
		send_lost(d, match, FM_CONCURRENT);
		return 0;
	} else if (k.kind == FL_UNIX && d->straddle >= ret && tid != d->born_tid &&
		   (t0 = cur_entry(t, task)) && t0 < d->born) {
		/* Another writer's send begun before the first boundary, with bytes queued
		 * before that boundary's message: these are most likely its own (it queued
		 * them before its boundary), counted there; adding them again would strand
		 * the direction's last message. Where its end is among them is not known. */
		__sync_fetch_and_sub(&d->straddle, ret);
		send_lost(d, match, FM_CONCURRENT);
		return 0;
	}
	if (d->ep_out)
		goto position_only;
	d->s_match = match ? END_YES : END_NO;
	if (!match && d->r_match == END_NO) {
		/* the receiver's verdict is this connection's only if the sender is the same
		 * socket, not a new one whose pair took the old pair's addresses */
		__u64 ino = sock_ino(sk, direct);

		if (ino == d->sender_ino)
			goto position_only;
		d->sender_ino = ino;
		d->r_match = END_UNKNOWN;
		d->counted = 0;
	}
	if (!t0)
		t0 = send_t0(now, t, task, match);
	/* Two processes or threads can send on one socket at once (a forked child sharing
	 * it): positions and the FIFO slot are taken by one sender at a time, else both
	 * took one position and one slot, tearing the record (two comms in one) and losing
	 * bytes. The position is an atomic add either way; a sender that finds the FIFO
	 * taken cannot wait (no locks in tracing programs): its message is a miss. The
	 * claim also keeps the FIFO's ends in order, as the receiver needs. */
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
	/* the receiver may have returned the last byte before this tracepoint ran */
	if ((int)(d->rpos - end) >= 0 && d->last.ret_ts) {
		struct scratch *x = scratch_get();

		if (!x)
			return 0;
		__builtin_memcpy(&x->r, &d->last, sizeof(x->r));
		complete(d, x);
	}
	/* TCP: the receiver closed before this boundary ran (on_tcp_close left d to it);
	 * once the sends cover what it read, the direction ends */
	if (d->rclosed == 1 && (int)(end - d->closed_seq) >= 0 &&
	    __sync_val_compare_and_swap(&d->rclosed, 1, 2) == 1)
		closed_unread(d, &k, true, d->closed_seq);
	return 0;
position_only:
	if (k.kind == FL_UNIX)
		__sync_fetch_and_add(&d->sent, ret);
	return 0;
}

/*
 * TCP: a direction state left by an earlier connection on the same 4-tuple (its
 * receiving sock is not this one, or closed: the kernel reuses addresses too). A
 * receiver that reads before the sender's boundary must not work on it: the sender
 * would then replace it and lose the bytes read. (unix keys hold both socks.)
 */
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

	/* failed and peeking reads first: cheap, and common (EAGAIN in event loops) */
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
		/* before any traced send on it: kept, so that a late sender still matches (and
		 * takes the socket_unknown back, on_send) */
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
		/* a first send boundary that ran since dir_new did not see this: taken back here */
		__sync_val_compare_and_swap(&d->unknown, 0, 1);
		if (d->born)
			unknown_taken_back(d, d->born_t0);
	}
	if (!r->match && d->s_match == END_NO && d->head == d->tail) {
		/* neither end counts and nothing is in flight: who read when is all a late
		 * sender's boundary needs (a sender that counts, racing this read) */
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
	/* last and rpos_ts, then rpos by a locked add (only this receiver writes it): a
	 * sender that sees the new rpos sees both, and the add orders them before
	 * complete()'s read of the FIFO tail. With plain stores, the late sender's check and
	 * this read could both miss the other (store buffering) and strand the message. */
	__sync_fetch_and_add(&d->rpos, pos);
	complete(d, x);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tp_sys_enter, struct pt_regs *regs, long nr)
{
	struct task_st *t;
	bool io = is_io_nr(nr);

	if (!io && !is_poll_nr(nr))
		return 0;
	t = task_get();
	if (!t)
		return 0;
	if (io) {
		if (bulk && t->bslot)	/* its last send ended without a handover (failed) */
			bulk_release(t, bulk_own(t, (__u32)bpf_get_current_pid_tgid()));
		t->sys_ts = bpf_ktime_get_ns();
		t->sys_nr = nr;
		if (bulk && bulk_active && !is_send_nr(nr))
			bulk_entry((__u32)bpf_get_current_pid_tgid(), t->sys_ts);
	} else {
		t->poll_pend = bpf_ktime_get_ns();
	}
	return 0;
}

/* A poll-family call returned: its entry and return bound the receiver's wait in it. */
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

/* Without syscall tracepoints (CONFIG_FTRACE_SYSCALLS): every syscall's return. */
SEC("?tp_btf/sys_exit")
int BPF_PROG(tp_sys_exit, struct pt_regs *regs, long ret)
{
	if (is_poll_nr(SYSNR(regs)))
		on_poll_exit();
	return 0;
}

/*
 * With them, only the poll-family returns run a program: an attached raw sys_exit costs
 * every syscall on the host ~100 ns even with an empty body (docs/TRACE.md, "Overhead"),
 * a syscalls:sys_exit_NAME event of another syscall next to nothing. A syscall the
 * architecture lacks (arm64: epoll_wait, poll, select) has no event; user space leaves
 * its program out.
 */
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

/* ---- kernel stages of the send (autoloaded when the kernel has the tracepoint) ---- */

/* A tracepoint that ends kernel stage fk wherever it fires in a send; the NET_RX ones only
 * for that softirq (the other vectors fire all the time and are not on the path). */
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

/* Data ready on sk inside a send: the first in its syscall is where a message sent in several
 * chunks starts to be sliced, the second (on the same socket) that it is one. */
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

/* ---- kernel stages of the receiver (--detail full) ---- */

/* The state of a task that is not the current one (the next task of a switch). */
static __always_inline struct task_st *task_find_other(struct task_struct *task)
{
	__u32 tid = task->pid;

	if (task_storage)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	return bpf_map_lookup_elem(&tasks, &tid);
}

/* A task with state goes onto a CPU: the end of its wait for one after a wakeup. */
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
	/* the sender leaves the CPU inside a send whose first chunk left: sliced from there
	 * on, a message in several chunks if it slept (for buffer space) or has more chunks */
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

/* Copy done in the current task's recv-family syscall: the last one it crosses counts. */
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

/* AF_UNIX: an skb read to its end is freed in the reader's recv(); other consume_skb calls
 * (TCP's ACKs freed in its recv()) do not end a copy. */
SEC("?tp_btf/consume_skb")
int BPF_PROG(tp_k_consume_skb, struct sk_buff *skb)
{
	struct sock *sk = skb->sk;

	if (sk && sk->__sk_common.skc_family == AF_UNIX)
		copy_done();
	return 0;
}

/* ---- the send and receive boundaries, per mode ---- */

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

/* Function modes: the entry of a socket-layer send/recv remembers its sock (and
 * recv flags) for the exit, which kretprobes see without arguments. */
static __always_inline void on_call_entry(struct socket *sock, int flags)
{
	struct task_st *t = task_get();

	if (!t)
		return;
	t->call_sk = (__u64)BPF_CORE_READ(sock, sk);
	t->call_flags = flags;
}

/* The exit: what sock_send_length / sock_recv_length would have said. */
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

/* ---- every mode ---- */

/*
 * TCP: has the receiver read bytes past the last send whose boundary ran? That boundary
 * is still to come: an orphaned socket reaches TCP_CLOSE as soon as its FIN is acked,
 * often while its peer is still inside the send whose bytes it read (issue 36 item 3).
 */
static __always_inline bool send_boundary_pending(const struct dir_st *d, __u32 read_seq)
{
	__u64 tail = d->tail;

	if (!d->first_rcv || d->ep_out || tail != d->head)
		return false;	/* nothing read, no messages, or the FIFO's own checks apply */
	return !tail || (int)(read_seq - d->ents[(tail - 1) & (FL_FIFO - 1)].end) > 0;
}

/*
 * A loopback TCP socket reached TCP_CLOSE: the direction towards it ends, and its state
 * goes now rather than when the LRU evicts it (which would drop a live connection's
 * state instead, silently); messages never read are counted.
 */
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
		/* that boundary ends the direction; unless it ran meanwhile (it reads rclosed
		 * after queueing: one of the two sees the other) */
		d->closed_seq = seq;
		if (__sync_val_compare_and_swap(&d->rclosed, 0, 1) != 0 ||
		    send_boundary_pending(d, seq) ||
		    __sync_val_compare_and_swap(&d->rclosed, 1, 2) != 1)
			return;
	}
	/* still held and readable: a half-closed socket gets here at the peer's FIN and its
	 * owner may still read what is queued (php-fpm reads a request's last bytes after its
	 * shutdown(SHUT_WR)), or a recv() that copied the oldest message is yet to reach its
	 * boundary; left to the LRU. A close() with data unread gets here before the socket
	 * is orphaned, its queue already purged (__tcp_close): nothing left to read. */
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

/*
 * AF_UNIX has no state-change tracepoint: a receiver that closes (exits, is killed) with
 * data unread frees the queued skbs (unix_release_sock, after sock_orphan). An skb of a
 * unix stream whose sender's peer is orphaned is such data: the direction's messages in
 * flight are never read. (A sender that closed first no longer names its peer: its
 * messages stay in flight, counted at the end of the run.)
 */
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

/*
 * A thread exits: its syscall state goes (the task map would otherwise fill with the
 * threads of exited processes until the LRU evicted live ones). The last thread of a
 * followed process takes it out of tgids: a later process given its number is not the
 * one followed, and a long -- COMMAND run's exited children do not fill the map. Every
 * kernel decrements signal->live before this tracepoint (do_exit's group_dead).
 */
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

/* A followed process forks: the child is followed too (a full map: counted, not followed). */
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
