/* Shared with user/compare/ and user/lib/stage_table.c. */
#ifndef UDSPROBE_STAGES_H
#define UDSPROBE_STAGES_H

/* causal order (docs/STAGES.md, "The model"); functions: stages.bpf.c's probes */
enum boundary {
	B_SEND_ENTER,		/* message start */
	B_PROTO,
	B_U_ALLOC,
	B_U_COPY,
	B_U_QUEUE,
	B_T_LOCKED,
	B_T_XMIT,
	B_T_TRANSMIT,
	B_T_IPQ,
	B_T_IPOUT2,
	B_DEV_QUEUE,
	B_T_LOXMIT,
	B_T_NETIF_RX,
	B_SOFTIRQ,
	B_T_BACKLOG,
	B_NETIF_RECEIVE,
	B_T_IP_RCV,
	B_T_IP_LOCAL,
	B_T_TCP_V4_RCV,
	B_T_ESTABLISHED,
	B_DATA_READY,
	B_WAKE_END,		/* sock_def_readable return */
	B_SEND_EXIT,		/* clipped to B_RUN */
	B_RUN,			/* max(data ready, switched in, recv entry) */
	B_COPY_START,
	B_COPY_DONE,		/* skb_copy_datagram_iter return */
	B_RECV_EXIT,		/* message end */
	B__COUNT,
};

/* connect mode, per connection */
enum conn_stage {
	C_CONNECT = B__COUNT,	/* connect() call */
	C_ACCEPT,		/* connect() entry -> accept() return */
	C_TOTAL,		/* send entry -> recv exit */
	C_GAP,			/* pingpong: previous recv exit -> send entry */
	C_SOFTIRQ_DEFERRED,	/* NET_RX ran outside the send */
	/* sliced by who runs (docs/STAGES.md, "Messages in several chunks (large sizes)") */
	C_BULK_SEND_COPY,
	C_BULK_RECV_COPY,
	C_BULK_WAIT_SPACE,
	C_BULK_WAIT_CPU,
	C_CHUNKS,		/* sum_ns: chunks per sliced message */
	C_SLEEPS,		/* sum_ns: sender sleeps */
	SLOT__COUNT,
};

enum { TRANSPORT_UNIX, TRANSPORT_TCP, TRANSPORT__COUNT };

enum attribution {
	ATTR_MESSAGE,		/* critical path */
	ATTR_PER_CALL,		/* stream */
};

#define HIST_SLOTS 32
#define SLOT_STRIDE 64		/* a power of two the verifier can mask */
#define NR_BULK 4
#define MAX_CPUS 512
/* 0 client, 1 server */
#define NR_SLOTS 2

/* high half: syscall-tracepoint hits; low: the rest */
#define SYS_HIT (1ull << 32)

struct stage_acc {
	__u64 sum_ns;
	__u64 count;
	__u64 hits;		/* for the overhead correction */
	__u64 sys_hits;		/* of which syscall tracepoints */
	__u64 book_ns;		/* our bookkeeping inside it */
	__u64 hist[HIST_SLOTS];	/* log2(ns) */
};

struct task_info {
	__u32 cur_syscall;
	__u32 in_send;
	__u32 in_recv;
	__u32 on_cpu;		/* for bulk slicing */
	__u64 recv_enter;
	__u64 switch_in;
	__u64 copy_done;
	__u64 copy_done_hits;
	__u64 conn_enter;
	__u64 peer_conn_enter;
	__u64 recv_exit;	/* for C_GAP */
	__u64 book_ns;		/* after recv_exit */
	__u64 recv_exit_hits;
	__u32 recv_exit_cpu;
	__u32 blocked;		/* switched out asleep */
	__u64 recv_enter_hits;
	__u32 recv_enter_cpu;
	__u32 pad;
	__u64 ok_snd, ok_rsk;	/* UDS: pair checked (check_unix_copy) */
};

struct msg_state {
	__u64 t[B__COUNT];	/* ns; 0 = not crossed */
	__u64 hits[B__COUNT];	/* that CPU's hits so far */
	__u32 cpu[B__COUNT];
	/* reset at send entry from here */
	__u64 skb;		/* TCP: the segment */
	__u64 rsk;		/* at data-ready */
	__u64 gap_ns;		/* 0: none */
	__u64 gap_book_ns;
	__u64 gap_hits;
	__u32 softirq_deferred;	/* NET_RX ran outside the send */
	__u32 chunks;		/* data-ready callbacks */
	__u32 copies;		/* skbs copied (tp: consumed) */
	__u32 sender_slept;	/* sender sleeps in this send() */
	__u64 slice_t;		/* bulk: last slice boundary, 0: none */
	__u64 slice_mark;	/* its CPU and hits (hit_mark) */
	__u64 bulk[NR_BULK];	/* ns per slice kind */
	__u64 bulk_hits[NR_BULK];
};

#endif
