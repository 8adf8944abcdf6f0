// SPDX-License-Identifier: GPL-2.0
/* --compare's stage attribution: docs/STAGES.md, "The model" and "Attach modes". */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.bpf.h"
#include "stages.h"
#include "syscalls.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* All state in .bss, tid-filtered; settings, counters and each CPU's hits on their own
 * cache lines (docs/STAGES.md, "Correlation (how a boundary finds its message)"). */
#define CACHE_LINE 64
#define HITS_STRIDE (CACHE_LINE / sizeof(__u64))
__u32 tracing __attribute__((aligned(CACHE_LINE)));	/* the measured loop runs */
__u32 attribution;		/* enum attribution */
__u32 transport;
__u32 task_tid[NR_SLOTS];	/* client, server */
/* no data-ready boundary (6.1 tracepoints): slice from send entry */
__u32 slice_from_send;
/* bit per enum boundary this mode sees */
__u64 avail_mask;
__u64 msgs_done __attribute__((aligned(CACHE_LINE)));
__u64 msgs_unmatched;		/* recv data, no message */
__u64 msgs_overwritten;		/* send before the last was received */
__u64 msgs_wrong_sock;		/* data-ready sk != copy's sk */
__u64 calib_hits;
const volatile long calib_nr;
/* per CPU, a line each: probe-cost correction */
__u64 cpu_hits[MAX_CPUS * HITS_STRIDE] __attribute__((aligned(CACHE_LINE)));

struct task_info tasks[NR_SLOTS];
/* indexed by the receiver's slot */
struct msg_state msgs[NR_SLOTS];
/* written only by that slot's task: plain adds */
struct stage_acc stats[NR_SLOTS * SLOT_STRIDE];

static __always_inline __u64 *hits_of(__u32 cpu)
{
	return &cpu_hits[(cpu & (MAX_CPUS - 1)) * HITS_STRIDE];
}

static __always_inline __u32 count_hits(__u64 weight)
{
	__u32 cpu = bpf_get_smp_processor_id();

	*hits_of(cpu) += weight;
	return cpu;
}

static __always_inline __u32 count_hit(void)
{
	return count_hits(1);
}

static __always_inline int slot_of(__u32 tid)
{
	if (!tid)
		return -1;
	if (tid == task_tid[0])
		return 0;
	if (tid == task_tid[1])
		return 1;
	return -1;
}

/* Not a tid kept by sched_switch: on a shared machine that missed switches. */
static __always_inline int current_slot(void)
{
	return slot_of((__u32)bpf_get_current_pid_tgid());
}

static __always_inline void stamp_at(struct msg_state *m, __u32 b, __u64 now, __u32 cpu)
{
	if (b >= B__COUNT || m->t[b])
		return;		/* first crossing wins */
	m->t[b] = now;
	m->cpu[b] = cpu;
	m->hits[b] = *hits_of(cpu);
}

static __always_inline void stamp(struct msg_state *m, __u32 b, __u32 cpu)
{
	stamp_at(m, b, bpf_ktime_get_ns(), cpu);
}

/* CPU and hit count in one word: two CPUs may tick one message at once. */
#define MARK_HITS 0xffffffull
static __always_inline __u64 hit_mark(__u32 cpu, __u64 hits)
{
	return (__u64)(cpu & 0xffff) << 48 | ((hits >> 32) & MARK_HITS) << 24 | (hits & MARK_HITS);
}

/* across CPUs: one hit, as attribute() counts */
static __always_inline __u64 hits_between(__u64 from, __u64 to)
{
	if (from >> 48 != to >> 48)
		return 1;
	return (((to >> 24) - (from >> 24)) & MARK_HITS) << 32 | ((to - from) & MARK_HITS);
}

static __always_inline void slice_from(struct msg_state *m, __u32 b)
{
	if (b >= B__COUNT)
		return;
	m->slice_t = m->t[b];
	m->slice_mark = hit_mark(m->cpu[b], m->hits[b]);
}

static __always_inline int account_inline(int slot, __u32 stage, __u64 ns, __u64 hits, __u64 book_ns)
{
	struct stage_acc *acc;
	__u32 idx, hist;

	if (slot < 0 || stage >= SLOT__COUNT)
		return 0;
	idx = (slot & 1) * SLOT_STRIDE + stage;
	/* keep the mask clang drops as redundant: 6.1's verifier needs it */
	barrier_var(idx);
	acc = &stats[idx & (NR_SLOTS * SLOT_STRIDE - 1)];
	acc->sum_ns += ns;
	acc->count++;
	acc->hits += (__u32)hits + (hits >> 32);
	acc->sys_hits += hits >> 32;
	acc->book_ns += book_ns;
	hist = log2_slot(ns);
	if (hist >= HIST_SLOTS)
		hist = HIST_SLOTS - 1;
	/* same */
	barrier_var(hist);
	acc->hist[hist & (HIST_SLOTS - 1)]++;
	return 0;
}

/* global: verified once, not per caller */
__noinline int account_book(int slot, __u32 stage, __u64 ns, __u64 hits, __u64 book_ns)
{
	return account_inline(slot, stage, ns, hits, book_ns);
}

static __always_inline int account(int slot, __u32 stage, __u64 ns, __u64 hits)
{
	return account_book(slot, stage, ns, hits, 0);
}

/* Each stamped boundary gets the time since the previous one, clamped monotonic
 * across CPUs; unrolled so every index is a constant for the verifier. */
static __always_inline void attribute(int slot, int rslot, const __u32 first, const __u32 last)
{
	struct msg_state *m = &msgs[rslot & 1];
	__u64 prev = m->t[first], prev_hits = m->hits[first];
	__u32 prev_cpu = m->cpu[first], b;

#pragma unroll
	for (b = first + 1; b <= last; b++) {
		__u64 t = m->t[b], hits;

		if (!t)
			continue;
		if (t < prev)
			t = prev;
		hits = m->cpu[b] == prev_cpu && m->hits[b] >= prev_hits ? m->hits[b] - prev_hits : 1;
		/* deferred NET_RX: its wait is its own stage */
		account_inline(slot, b == B_SOFTIRQ && m->softirq_deferred ? C_SOFTIRQ_DEFERRED : b,
			       t - prev, hits, 0);
		prev = t;
		prev_hits = m->hits[b];
		prev_cpu = m->cpu[b];
	}
}

__noinline int attribute_message(int slot)
{
	attribute(slot & 1, slot & 1, B_SEND_ENTER, B_RECV_EXIT);
	return 0;
}

__noinline int attribute_send_call(int slot)
{
	attribute(slot & 1, (slot ^ 1) & 1, B_SEND_ENTER, B_SEND_EXIT);
	return 0;
}

__noinline int attribute_first_chunk(int slot)
{
	attribute(slot & 1, slot & 1, B_SEND_ENTER, B_DATA_READY);
	return 0;
}

static __always_inline bool in_flight(const struct msg_state *m)
{
	return m->t[B_SEND_ENTER] && !m->t[B_RECV_EXIT];
}

/* NULL outside the task's send and once its message is complete (the receiver can
 * finish and reply before the send returns). */
static __always_inline struct msg_state *sending_msg(void)
{
	int s = current_slot();
	struct msg_state *m;

	if (s < 0 || !tasks[s & 1].in_send)
		return NULL;
	m = &msgs[(s ^ 1) & 1];
	return in_flight(m) ? m : NULL;
}

/* handler bodies */

static __always_inline void on_send_enter(int s, __u32 cpu)
{
	struct msg_state *m = &msgs[(s ^ 1) & 1];
	struct task_info *ti = &tasks[s & 1];
	__u64 now;

	if (!tracing)
		return;
	now = bpf_ktime_get_ns();	/* before the reset: it is not timed */
	/* stream: the server's final ack is not a message */
	if (attribution == ATTR_PER_CALL && s != 0)
		return;
	if (m->t[B_SEND_ENTER] && !m->t[B_RECV_EXIT] && attribution == ATTR_MESSAGE)
		__sync_fetch_and_add(&msgs_overwritten, 1);
	/* hits[], cpu[] are read only where t[] is set: no reset, half the stores */
	__builtin_memset(m->t, 0, sizeof(m->t));
	__builtin_memset(&m->skb, 0, sizeof(*m) - offsetof(struct msg_state, skb));
	tasks[s & 1].in_send = 1;
	stamp_at(m, B_SEND_ENTER, now, cpu);
	/* stream: a call whose chunks all leave later (ACK-clocked) */
	if (slice_from_send || attribution == ATTR_PER_CALL)
		slice_from(m, B_SEND_ENTER);
	if (ti->recv_exit && attribution == ATTR_MESSAGE) {
		m->gap_ns = m->t[B_SEND_ENTER] - ti->recv_exit;
		m->gap_hits = ti->recv_exit_cpu == cpu ? m->hits[B_SEND_ENTER] - ti->recv_exit_hits : 1;
		/* our bookkeeping inside the gap */
		m->gap_book_ns = ti->book_ns;
	}
	ti->recv_exit = 0;
}

/* their functions also run for the other transport */
#define UNIX_ONLY ((1ull << B_U_ALLOC) | (1ull << B_U_COPY) | (1ull << B_U_QUEUE))
#define TCP_ONLY ((1ull << B_T_LOCKED) | (1ull << B_T_XMIT) | (1ull << B_T_TRANSMIT) |		\
		  (1ull << B_T_IPQ) | (1ull << B_T_IPOUT2) | (1ull << B_DEV_QUEUE) |		\
		  (1ull << B_T_LOXMIT) | (1ull << B_T_NETIF_RX) | (1ull << B_SOFTIRQ) |		\
		  (1ull << B_T_BACKLOG) | (1ull << B_NETIF_RECEIVE) | (1ull << B_T_IP_RCV) |	\
		  (1ull << B_T_IP_LOCAL) | (1ull << B_T_TCP_V4_RCV) | (1ull << B_T_ESTABLISHED))

static __always_inline bool on_path(__u32 b)
{
	__u64 other = transport == TRANSPORT_UNIX ? TCP_ONLY : UNIX_ONLY;

	return !(other & (1ull << b));
}

static __always_inline void on_sender_boundary(__u32 b)
{
	__u32 cpu = count_hit();
	struct msg_state *m = sending_msg();

	if (m && on_path(b))
		stamp(m, b, cpu);
}

/* TCP receive side: follow the skb; addresses are recycled, so only an in-flight
 * message may match. */
static __always_inline void on_skb_boundary(__u32 b, void *skb)
{
	__u32 cpu = count_hit();
	__u64 key = (__u64)skb;

	if (!key)
		return;
	if (msgs[0].skb == key && in_flight(&msgs[0]))
		stamp(&msgs[0], b, cpu);
	else if (msgs[1].skb == key && in_flight(&msgs[1]))
		stamp(&msgs[1], b, cpu);
}

/* In-flight TCP message past `need` on this CPU (or run by its receiver if receiver_ok),
 * not yet at `unset` or `before`: skb-less receive boundaries outside the send
 * (docs/STAGES.md, "Correlation (how a boundary finds its message)"). */
static __always_inline struct msg_state *rx_msg(__u32 need, __u32 unset, __u32 before, __u32 cpu,
						bool receiver_ok)
{
	int cur = current_slot();
	__u32 i;

	if (transport != TRANSPORT_TCP || attribution != ATTR_MESSAGE)
		return NULL;
#pragma unroll
	for (i = 0; i < NR_SLOTS; i++) {
		struct msg_state *m = &msgs[i];

		if (in_flight(m) && m->t[need] && !m->t[unset] && !m->t[before] &&
		    (m->cpu[need] == cpu || (receiver_ok && cur == (int)i)))
			return m;
	}
	return NULL;
}

static __always_inline void on_dev_queue(void *skb)
{
	__u32 cpu = count_hit();
	struct msg_state *m = sending_msg();

	if (!m || m->t[B_DEV_QUEUE] || transport != TRANSPORT_TCP)
		return;
	stamp(m, B_DEV_QUEUE, cpu);
	m->skb = (__u64)skb;
}

/* Boundary b after `after`: in the send, else via rx_msg(); returns m when stamped
 * outside the send. */
static __always_inline struct msg_state *rx_boundary(__u32 b, __u32 after)
{
	__u32 cpu = count_hit();
	struct msg_state *m = sending_msg();

	if (m && m->t[after]) {
		stamp(m, b, cpu);
		return NULL;
	}
	m = rx_msg(after, b, B_T_IP_RCV, cpu, false);
	if (m)
		stamp(m, b, cpu);
	return m;
}

/* NET_RX left to ksoftirqd or a later irq exit: C_SOFTIRQ_DEFERRED */
static __always_inline void on_softirq(void)
{
	struct msg_state *m = rx_boundary(B_SOFTIRQ, B_DEV_QUEUE);

	if (m)
		m->softirq_deferred = 1;
}

static __always_inline void on_backlog(void)
{
	rx_boundary(B_T_BACKLOG, B_SOFTIRQ);
}

/* A later TCP chunk of an in-flight message, in any context, matched by its socket;
 * a FIN also calls data-ready and is no chunk. */
static __always_inline struct msg_state *later_chunk_msg(const struct sock *sk)
{
	__u32 i;

	if (transport != TRANSPORT_TCP || attribution != ATTR_MESSAGE)
		return NULL;
#pragma unroll
	for (i = 0; i < NR_SLOTS; i++) {
		struct msg_state *m = &msgs[i];

		if (in_flight(m) && m->t[B_DATA_READY] && m->rsk == (__u64)sk)
			return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & RCV_SHUTDOWN ? NULL : m;
	}
	return NULL;
}

static __always_inline void on_data_ready(const struct sock *sk)
{
	__u32 cpu = count_hit();
	struct msg_state *m = sending_msg();

	/* TCP outside the send: deferred softirq or the receiver's release_sock */
	if (!m)
		m = rx_msg(B_T_IP_RCV, B_DATA_READY, B_RECV_EXIT, cpu, true);
	if (!m)
		m = later_chunk_msg(sk);
	if (!m)
		return;
	if (m->t[B_DATA_READY]) {
		if (m->rsk == (__u64)sk)
			m->chunks++;
		return;
	}
	m->chunks = 1;
	stamp(m, B_DATA_READY, cpu);
	m->rsk = (__u64)sk;
	slice_from(m, B_DATA_READY);
	/* a late bulk_tick on the other CPU may have written the previous message's slice */
	__builtin_memset(m->bulk, 0, sizeof(m->bulk));
	__builtin_memset(m->bulk_hits, 0, sizeof(m->bulk_hits));
}

static __always_inline void on_wake_end(__u32 for_transport)
{
	__u32 cpu = count_hit();
	struct msg_state *m = sending_msg();

	if (transport != for_transport)
		return;
	/* TCP outside the send: the callback's return, same CPU */
	if (!m)
		m = rx_msg(B_DATA_READY, B_WAKE_END, B_RECV_EXIT, cpu, false);
	if (!m && !bpf_core_type_exists(btf_trace_sk_data_ready))
		m = rx_msg(B_T_IP_RCV, B_WAKE_END, B_RECV_EXIT, cpu, false);
	if (!m)
		return;
	/* 6.1 lacks the sk_data_ready tracepoint: require netif_receive_skb, else the merged
	 * stage's time lands in send;return */
	if (m->t[B_DATA_READY] ||
	    (!bpf_core_type_exists(btf_trace_sk_data_ready) && m->t[B_T_IP_RCV]))
		stamp(m, B_WAKE_END, cpu);
}

/* docs/STAGES.md, "Messages in several chunks (large sizes)" */
static __always_inline void bulk_tick(int r, __u64 now, __u32 cpu)
{
	struct msg_state *m = &msgs[r & 1];
	const struct task_info *snd = &tasks[(r ^ 1) & 1], *rcv = &tasks[r & 1];
	__u64 mark;
	__u32 k;

	/* no mark: a tick on another CPU raced the next message's reset */
	if (!m->slice_t || !m->slice_mark || !in_flight(m) || now < m->slice_t)
		return;
	if (snd->in_send && snd->on_cpu)
		k = 0;
	else if (rcv->in_recv && rcv->on_cpu)
		k = 1;
	else if (snd->in_send && snd->blocked)
		k = 2;
	else
		k = 3;
	k &= NR_BULK - 1;
	m->bulk[k] += now - m->slice_t;
	mark = hit_mark(cpu, *hits_of(cpu));
	m->bulk_hits[k] += hits_between(m->slice_mark, mark);
	m->slice_t = now;
	m->slice_mark = mark;
}

/* The latest switch-in before the copy is when the receiver ran (now 0: read the clock). */
static __always_inline void on_switch_in(__u32 next_tid, __u32 cpu, __u64 now)
{
	int s = slot_of(next_tid);
	struct task_info *ti;
	struct msg_state *m;

	if (s < 0)
		return;
	ti = &tasks[s & 1];
	if (!ti->in_recv)
		return;
	ti->switch_in = now ?: bpf_ktime_get_ns();
	m = &msgs[s & 1];
	if (!m->t[B_SEND_ENTER] || m->t[B_COPY_START] || m->t[B_COPY_DONE])
		return;
	m->t[B_RUN] = ti->switch_in;
	m->cpu[B_RUN] = cpu;
	m->hits[B_RUN] = *hits_of(cpu);
}

/* for_transport TRANSPORT__COUNT: any; returns the message the copy belongs to */
static __always_inline struct msg_state *on_copy(__u32 b, bool last_wins, __u32 for_transport)
{
	__u32 cpu = count_hit();
	int s = current_slot();
	struct task_info *ti;
	struct msg_state *m;
	__u64 now;

	if (s < 0 || (for_transport != TRANSPORT__COUNT && transport != for_transport))
		return NULL;
	ti = &tasks[s & 1];
	if (!ti->in_recv)
		return NULL;
	now = bpf_ktime_get_ns();
	if (b == B_COPY_DONE)
		ti->copy_done = now;
	m = &msgs[s & 1];
	if (!m->t[B_SEND_ENTER] || m->t[B_RECV_EXIT])
		return NULL;
	if (b == B_COPY_DONE)
		m->copies++;
	if (last_wins)
		m->t[b] = 0;
	stamp_at(m, b, now, cpu);
	return m;
}

/* msgs_wrong_sock, checked in the copy's own probe: no extra hit */
static __always_inline void check_copy_sock(const struct msg_state *m, __u64 rsk)
{
	if (m && rsk && m->rsk && m->rsk != rsk)
		__sync_fetch_and_add(&msgs_wrong_sock, 1);
}

static __always_inline void account_slices(int s, const struct msg_state *m, __u32 chunks)
{
	__u32 k;

#pragma unroll
	for (k = 0; k < NR_BULK; k++)
		account(s, C_BULK_SEND_COPY + k, m->bulk[k], m->bulk_hits[k]);
	/* 0: every data-ready ran outside the call (deferred NET_RX): uncounted, not zero */
	if (chunks)
		account(s, C_CHUNKS, chunks, 0);
	account(s, C_SLEEPS, m->sender_slept, 0);
}

static __always_inline void finish_bulk(int s, __u64 now, __u32 cpu)
{
	struct msg_state *m = &msgs[s & 1];

	m->t[B_RECV_EXIT] = 0;	/* still in flight for the last tick */
	bulk_tick(s, now, cpu);
	m->t[B_RECV_EXIT] = now;
	if (!slice_from_send)
		attribute_first_chunk(s);
	account_slices(s, m, m->chunks > 1 ? m->chunks : m->copies);
}

static __always_inline void copy_stamp(struct msg_state *m, __u32 to, __u32 from)
{
	if (to >= B__COUNT || from >= B__COUNT)
		return;
	m->t[to] = m->t[from];
	m->cpu[to] = m->cpu[from];
	m->hits[to] = m->hits[from];
}

/* B takes the last earlier stamp (a zero-length stage) when the receiver finished first:
 * off the critical path (docs/STAGES.md, "The critical path and the scheduler stage").
 * One function per boundary, each verified once. */
#define FILL_FROM_PREVIOUS(fn, B)						\
__noinline int fn(int s)							\
{										\
	struct msg_state *m = &msgs[s & 1];					\
	__u32 i;								\
										\
	_Pragma("unroll")							\
	for (i = (B) - 1; i > B_SEND_ENTER; i--)				\
		if (m->t[i]) {							\
			copy_stamp(m, (B), i);					\
			return 0;						\
		}								\
	copy_stamp(m, (B), B_SEND_ENTER);					\
	return 0;								\
}
FILL_FROM_PREVIOUS(fill_data_ready, B_DATA_READY)
FILL_FROM_PREVIOUS(fill_wake_end, B_WAKE_END)
FILL_FROM_PREVIOUS(fill_send_exit, B_SEND_EXIT)

static __always_inline void finish_message(int s, struct task_info *ti, __u32 cpu)
{
	struct msg_state *m = &msgs[s & 1];
	__u64 now = bpf_ktime_get_ns(), run;

	if (!m->t[B_SEND_ENTER] || m->t[B_RECV_EXIT]) {
		if (tracing)
			__sync_fetch_and_add(&msgs_unmatched, 1);
		return;
	}
	stamp_at(m, B_RECV_EXIT, now, cpu);
	/* several chunks: seen at data-ready, or by copies or sender sleeps */
	if (m->slice_t && (m->chunks > 1 ||
			   (slice_from_send && (m->sender_slept || m->copies > 1)))) {
		finish_bulk(s, now, cpu);
		goto done;
	}
	if (!m->t[B_DATA_READY] && (avail_mask & (1ull << B_DATA_READY)))
		fill_data_ready(s);
	if (!m->t[B_WAKE_END] && (avail_mask & (1ull << B_WAKE_END)))
		fill_wake_end(s);
	if (!m->t[B_SEND_EXIT])
		fill_send_exit(s);
	run = m->t[B_DATA_READY] ? m->t[B_DATA_READY] : m->t[B_SEND_ENTER];
	if (ti->recv_enter > run)
		run = ti->recv_enter;
	if (m->t[B_RUN] < run) {
		m->t[B_RUN] = run;
		if (run == ti->recv_enter) {
			m->cpu[B_RUN] = ti->recv_enter_cpu;
			m->hits[B_RUN] = ti->recv_enter_hits;
		} else if (m->t[B_DATA_READY]) {
			m->cpu[B_RUN] = m->cpu[B_DATA_READY];
			m->hits[B_RUN] = m->hits[B_DATA_READY];
		} else {
			m->cpu[B_RUN] = m->cpu[B_SEND_ENTER];
			m->hits[B_RUN] = m->hits[B_SEND_ENTER];
		}
	}
	/* critical path: sender time after the receiver runs is off it */
	if (m->t[B_SEND_EXIT] > m->t[B_RUN]) {
		m->t[B_SEND_EXIT] = m->t[B_RUN];
		m->cpu[B_SEND_EXIT] = m->cpu[B_RUN];
		m->hits[B_SEND_EXIT] = m->hits[B_RUN];
	}
	attribute_message(s);
done:
	/* inline: two calls fewer on every message's last hit */
	account_inline(s, C_TOTAL, now - m->t[B_SEND_ENTER], 0, 0);
	if (m->gap_ns)
		account_inline(s, C_GAP, m->gap_ns, m->gap_hits, m->gap_book_ns);
	__sync_fetch_and_add(&msgs_done, 1);
	ti->recv_exit = now;
	ti->recv_exit_cpu = cpu;
	ti->recv_exit_hits = m->hits[B_RECV_EXIT];
	ti->book_ns = bpf_ktime_get_ns() - now;
}

__noinline int attribute_first_chunk_of_call(int slot)
{
	attribute(slot & 1, (slot ^ 1) & 1, B_SEND_ENTER, B_DATA_READY);
	return 0;
}

/* Stream: one send() call; a large one is sliced (docs/STAGES.md, "Stream and connect
 * modes"). */
#define MAX_CHUNK_BYTES 65536	/* TCP GSO max; a UDS skb holds ~36 KiB */
static __always_inline void finish_send_call(int s, long sent)
{
	struct msg_state *m = &msgs[(s ^ 1) & 1];

	if (!m->t[B_SEND_ENTER])
		return;
	if (m->chunks > 1 || m->bulk[C_BULK_WAIT_SPACE - C_BULK_SEND_COPY] || sent > MAX_CHUNK_BYTES) {
		if (m->t[B_DATA_READY])
			attribute_first_chunk_of_call(s);
		account_slices(s, m, m->chunks);
	} else {
		attribute_send_call(s);
	}
	m->t[B_SEND_ENTER] = 0;
}

static __always_inline void finish_recv_call(int s, struct task_info *ti)
{
	__u64 now = bpf_ktime_get_ns(), run = ti->recv_enter, copy;

	if (!tracing || !run || s != 1)
		return;
	if (ti->switch_in > run)
		run = ti->switch_in;
	copy = ti->copy_done > run ? ti->copy_done : run;
	account(s, B_RUN, run - ti->recv_enter, 1);
	account(s, B_COPY_DONE, copy - run, 1);
	account(s, B_RECV_EXIT, now > copy ? now - copy : 0, 1);
	account(s, C_TOTAL, now - ti->recv_enter, 0);
	__sync_fetch_and_add(&msgs_done, 1);
}

/* Only send/recv carry messages: read/write are the go pipe and stderr (a read taken
 * for a recv ended the first message with --warmup 0). */
static __always_inline bool is_send(__u32 nr)
{
	return nr == NR_sendto || nr == NR_sendmsg;
}

static __always_inline bool is_recv(__u32 nr)
{
	return nr == NR_recvfrom || nr == NR_recvmsg;
}

static __always_inline void on_sys_enter(long nr)
{
	__u32 cpu = count_hits(SYS_HIT);
	int s = current_slot();
	struct task_info *ti;

	if (s < 0)
		return;
	ti = &tasks[s & 1];
	ti->cur_syscall = nr;
	ti->on_cpu = 1;
	if (is_send(nr)) {
		on_send_enter(s, cpu);
	} else if (is_recv(nr)) {
		ti->in_recv = 1;
		ti->switch_in = 0;
		ti->copy_done = 0;
		/* entered before the send: cannot be when the receiver ran; no clock read */
		if (attribution == ATTR_MESSAGE && !in_flight(&msgs[s & 1])) {
			ti->recv_enter = 0;
			return;
		}
		ti->recv_enter = bpf_ktime_get_ns();
		ti->recv_enter_cpu = cpu;
		ti->recv_enter_hits = *hits_of(cpu);
	} else if (nr == NR_connect && tracing) {
		ti->conn_enter = bpf_ktime_get_ns();
		tasks[(s ^ 1) & 1].peer_conn_enter = ti->conn_enter;
	}
}

static __always_inline void on_sys_exit(long ret)
{
	__u32 cpu = count_hits(SYS_HIT), nr;
	int s = current_slot();
	struct task_info *ti;

	if (s < 0)
		return;
	ti = &tasks[s & 1];
	nr = ti->cur_syscall;
	if (is_send(nr) && ti->in_send) {
		stamp(&msgs[(s ^ 1) & 1], B_SEND_EXIT, cpu);
		bulk_tick(s ^ 1, msgs[(s ^ 1) & 1].t[B_SEND_EXIT], cpu);
		if (attribution == ATTR_PER_CALL)
			finish_send_call(s, ret);
		ti->in_send = 0;
	} else if (is_recv(nr) && ti->in_recv) {
		if (ret > 0) {
			if (attribution == ATTR_PER_CALL)
				finish_recv_call(s, ti);
			else
				finish_message(s, ti, cpu);
		}
		ti->in_recv = 0;
	} else if (nr == NR_connect && ti->conn_enter) {
		if (ret == 0)
			account(s, C_CONNECT, bpf_ktime_get_ns() - ti->conn_enter, 1);
		ti->conn_enter = 0;
	} else if ((nr == NR_accept || nr == NR_accept4) && ti->peer_conn_enter) {
		if (ret >= 0)
			account(s, C_ACCEPT, bpf_ktime_get_ns() - ti->peer_conn_enter, 1);
		ti->peer_conn_enter = 0;
	}
}

static __always_inline void on_calibrate(void)
{
	__u32 cpu = count_hit();
	int s = current_slot();
	struct msg_state *m;

	if (s < 0)
		return;
	m = &msgs[s & 1];
	m->t[B_PROTO] = 0;
	stamp(m, B_PROTO, cpu);
	calib_hits++;
}

/* tracepoints, every mode */

SEC("?tp_btf/sys_enter")
int BPF_PROG(tp_sys_enter, struct pt_regs *regs, long id)
{
	on_sys_enter(id);
	return 0;
}

SEC("?tp_btf/sys_exit")
int BPF_PROG(tp_sys_exit, struct pt_regs *regs, long ret)
{
	on_sys_exit(ret);
	return 0;
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = count_hit();
	int p = slot_of(prev->pid), n = slot_of(next->pid);
	__u64 now;

	if (p < 0 && n < 0)
		return 0;
	now = bpf_ktime_get_ns();
	bulk_tick(0, now, cpu);
	bulk_tick(1, now, cpu);
	if (p >= 0) {
		tasks[p & 1].on_cpu = 0;
		tasks[p & 1].blocked = switched_to_sleep(preempt, prev);
		if (tasks[p & 1].blocked && tasks[p & 1].in_send && in_flight(&msgs[(p ^ 1) & 1]))
			msgs[(p ^ 1) & 1].sender_slept++;
	}
	if (n >= 0) {
		tasks[n & 1].on_cpu = 1;
		tasks[n & 1].blocked = 0;
		on_switch_in(next->pid, cpu, now);
	}
	return 0;
}

/* kprobe mode without kernel BTF (--btf FILE): tp_btf needs it, raw_tp does not */
SEC("?raw_tp/sys_enter")
int BPF_PROG(rtp_sys_enter, struct pt_regs *regs, long id)
{
	on_sys_enter(id);
	return 0;
}

SEC("?raw_tp/sys_exit")
int BPF_PROG(rtp_sys_exit, struct pt_regs *regs, long ret)
{
	on_sys_exit(ret);
	return 0;
}

SEC("?raw_tp/sched_switch")
int BPF_PROG(rtp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = count_hit();

	on_switch_in(BPF_CORE_READ(next, pid), cpu, 0);
	return 0;
}

/* tracepoint mode's calibration probe */
SEC("?tp_btf/sys_enter")
int BPF_PROG(tp_calib, struct pt_regs *regs, long id)
{
	if (id == calib_nr)
		on_calibrate();
	return 0;
}

/* tracepoint mode */

SEC("?tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tp_tcp_sendmsg_locked)
{
	on_sender_boundary(B_PROTO);
	return 0;
}

SEC("?tp_btf/net_dev_queue")
int BPF_PROG(tp_net_dev_queue, struct sk_buff *skb)
{
	on_dev_queue(skb);
	return 0;
}

SEC("?tp_btf/softirq_entry")
int BPF_PROG(tp_softirq_entry, unsigned int vec)
{
	if (vec == NET_RX_SOFTIRQ_VEC)
		on_softirq();
	return 0;
}

SEC("?tp_btf/netif_receive_skb")
int BPF_PROG(tp_netif_receive_skb, struct sk_buff *skb)
{
	/* start of __netif_receive_skb_core: the demux into IP */
	on_skb_boundary(B_T_IP_RCV, skb);
	return 0;
}

SEC("?tp_btf/sk_data_ready")
int BPF_PROG(tp_sk_data_ready, const struct sock *sk)
{
	on_data_ready(sk);
	return 0;
}

SEC("?tp_btf/sock_send_length")
int BPF_PROG(tp_sock_send_length, struct sock *sk, int ret, int flags)
{
	on_wake_end(TRANSPORT_UNIX);
	return 0;
}

SEC("?tp_btf/softirq_exit")
int BPF_PROG(tp_softirq_exit, unsigned int vec)
{
	if (vec == NET_RX_SOFTIRQ_VEC)
		on_wake_end(TRANSPORT_TCP);
	return 0;
}

/* UDS: the consumed skb's owner (the sender) must peer with the signalled socket.
 * unix_sock.peer is beyond struct sock, no direct load: a probe read, once per pair
 * (peers are fixed at connect). */
static __always_inline void check_unix_copy(struct msg_state *m, struct sk_buff *skb)
{
	struct task_info *ti = &tasks[m == &msgs[1]];
	struct sock *snd = skb->sk;
	struct sock *peer = NULL;

	if (!snd || !m->rsk || snd->__sk_common.skc_family != AF_UNIX)
		return;
	if (ti->ok_snd == (__u64)snd && ti->ok_rsk == m->rsk)
		return;
	bpf_core_read(&peer, sizeof(peer), &((struct unix_sock *)snd)->peer);
	check_copy_sock(m, (__u64)peer);
	if ((__u64)peer == m->rsk) {
		ti->ok_snd = (__u64)snd;
		ti->ok_rsk = m->rsk;
	}
}

SEC("?tp_btf/consume_skb")
int BPF_PROG(tp_consume_skb, struct sk_buff *skb)
{
	/* UDS: consumed right after the copy */
	struct msg_state *m = on_copy(B_COPY_DONE, false, TRANSPORT_UNIX);

	if (m)
		check_unix_copy(m, skb);
	return 0;
}

SEC("?tp_btf/tcp_rcv_space_adjust")
int BPF_PROG(tp_tcp_rcv_space_adjust, struct sock *sk)
{
	check_copy_sock(on_copy(B_COPY_DONE, false, TRANSPORT_TCP), (__u64)sk);
	return 0;
}

/* fentry/fexit and kprobe/kretprobe modes */

#define SENDER_PROBE(func, b) FENTRY_KPROBE(func, on_sender_boundary(b))
#define SKB_PROBE(func, b) FENTRY_KPROBE(func, on_skb_boundary(b, skb), struct sk_buff *skb)

SENDER_PROBE(unix_stream_sendmsg, B_PROTO)
SENDER_PROBE(tcp_sendmsg, B_PROTO)
SENDER_PROBE(sock_alloc_send_pskb, B_U_ALLOC)
SENDER_PROBE(skb_copy_datagram_from_iter, B_U_COPY)
SENDER_PROBE(skb_queue_tail, B_U_QUEUE)
SENDER_PROBE(tcp_sendmsg_locked, B_T_LOCKED)
SENDER_PROBE(tcp_write_xmit, B_T_XMIT)
SENDER_PROBE(__tcp_transmit_skb, B_T_TRANSMIT)
SENDER_PROBE(__ip_queue_xmit, B_T_IPQ)
SENDER_PROBE(ip_finish_output2, B_T_IPOUT2)
SENDER_PROBE(loopback_xmit, B_T_LOXMIT)
SENDER_PROBE(__netif_rx, B_T_NETIF_RX)
SKB_PROBE(__netif_receive_skb, B_NETIF_RECEIVE)
SKB_PROBE(ip_rcv, B_T_IP_RCV)
SKB_PROBE(ip_local_deliver, B_T_IP_LOCAL)
SKB_PROBE(tcp_v4_rcv, B_T_TCP_V4_RCV)

FENTRY_KPROBE(__dev_queue_xmit, on_dev_queue(skb), struct sk_buff *skb)
FENTRY_KPROBE(net_rx_action, on_softirq())
FENTRY_KPROBE(process_backlog, on_backlog())
FENTRY_KPROBE(tcp_rcv_established, on_skb_boundary(B_T_ESTABLISHED, skb),
	      struct sock *sk, struct sk_buff *skb)
FENTRY_KPROBE(sock_def_readable, on_data_ready(sk), struct sock *sk)
FEXIT_KRETPROBE_NORET(sock_def_readable, on_wake_end(transport))
FENTRY_KPROBE(skb_copy_datagram_iter, on_copy(B_COPY_START, false, TRANSPORT__COUNT))
FEXIT_KRETPROBE_NORET(skb_copy_datagram_iter, on_copy(B_COPY_DONE, true, TRANSPORT__COUNT))

/* fe_calib/kp_calib: target picked at run time among this kernel's syscall wrappers */
FENTRY_KPROBE_AS(calib, __x64_sys_getppid, on_calibrate())
