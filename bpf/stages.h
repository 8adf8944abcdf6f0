/* Shared by stages.bpf.c and user space: stage boundaries, stats layout, counters. */
#ifndef UDSPROBE_STAGES_H
#define UDSPROBE_STAGES_H

/*
 * Boundaries along one message's path, in causal order. The stage "ending at"
 * boundary b runs from the previous boundary the message stamped up to b; a
 * boundary not seen (not attachable in this mode, or skipped by this message)
 * merges its stage into the next one. User space names the stages (user/stage_table.c).
 */
enum boundary {
	B_SEND_ENTER,		/* sender: send syscall entry (message start) */
	B_PROTO,		/* unix_stream_sendmsg / tcp_sendmsg (tp: tcp_sendmsg_locked) */
	B_U_ALLOC,		/* sock_alloc_send_pskb */
	B_U_COPY,		/* skb_copy_datagram_from_iter */
	B_U_QUEUE,		/* skb_queue_tail */
	B_T_LOCKED,		/* tcp_sendmsg_locked */
	B_T_XMIT,		/* tcp_write_xmit */
	B_T_TRANSMIT,		/* __tcp_transmit_skb */
	B_T_IPQ,		/* __ip_queue_xmit */
	B_T_IPOUT2,		/* ip_finish_output2 */
	B_DEV_QUEUE,		/* __dev_queue_xmit (tp: net_dev_queue) */
	B_T_LOXMIT,		/* loopback_xmit */
	B_T_NETIF_RX,		/* __netif_rx */
	B_SOFTIRQ,		/* net_rx_action (tp: softirq_entry NET_RX) */
	B_T_BACKLOG,		/* process_backlog */
	B_NETIF_RECEIVE,	/* __netif_receive_skb (tp: netif_receive_skb) */
	B_T_IP_RCV,		/* ip_rcv */
	B_T_IP_LOCAL,		/* ip_local_deliver */
	B_T_TCP_V4_RCV,		/* tcp_v4_rcv */
	B_T_ESTABLISHED,	/* tcp_rcv_established */
	B_DATA_READY,		/* sock_def_readable (tp: sk_data_ready) */
	B_WAKE_END,		/* sock_def_readable return (tp: UDS sock_send_length, TCP softirq_exit) */
	B_SEND_EXIT,		/* sender: send syscall exit (clipped to B_RUN on the critical path) */
	B_RUN,			/* receiver runs: max(data ready, switched in, recv entry) */
	B_COPY_START,		/* skb_copy_datagram_iter entry */
	B_COPY_DONE,		/* skb_copy_datagram_iter return (tp: UDS consume_skb, TCP tcp_rcv_space_adjust) */
	B_RECV_EXIT,		/* receiver: recv syscall exit (message end) */
	B__COUNT,
};

/* Per-connection stages of connect mode, outside the message partition. */
enum conn_stage {
	C_CONNECT = B__COUNT,	/* client connect() entry to return */
	C_ACCEPT,		/* client connect() entry to server accept() return */
	C_TOTAL,		/* message total: send entry to recv exit */
	C_GAP,			/* pingpong: the sender's previous recv exit to this send entry */
	C_SOFTIRQ_DEFERRED,	/* TCP: instead of B_SOFTIRQ's stage when NET_RX ran outside the send */
	/*
	 * A message delivered in several chunks (UDS skbs, TCP segments): from its first
	 * data-ready to the receiver's recv() return, sender and receiver take turns, so the
	 * time is sliced by who runs then (enum bulk_slice) instead of by boundaries.
	 */
	C_BULK_SEND_COPY,
	C_BULK_RECV_COPY,
	C_BULK_WAIT_SPACE,
	C_BULK_WAIT_CPU,
	C_CHUNKS,		/* per sliced message: sum_ns holds its chunks (skbs/segments) */
	C_SLEEPS,		/* per sliced message: sum_ns holds the sender's sleeps in send() */
	SLOT__COUNT,
};

enum { TRANSPORT_UNIX, TRANSPORT_TCP, TRANSPORT__COUNT };

/* How messages are attributed in this run. */
enum attribution {
	ATTR_MESSAGE,		/* one message in flight per direction: critical path */
	ATTR_PER_CALL,		/* stream: send side per send(), receive side per recv() */
};

#define HIST_SLOTS 32
#define SLOT_STRIDE 64		/* >= SLOT__COUNT, a power of two the verifier can mask */
#define NR_BULK 4		/* C_BULK_SEND_COPY .. C_BULK_WAIT_CPU */
#define MAX_CPUS 512
/* The workload's two tasks: slot 0 client, slot 1 server; each sends to the other. */
#define NR_SLOTS 2

/*
 * Probe hits are counted per CPU in one packed u64: syscall-tracepoint hits (which also turn
 * on the kernel's syscall-tracing slow path, a cost of their own) in the high half, every
 * other hit in the low half, so one subtraction gives both kinds for an interval.
 */
#define SYS_HIT (1ull << 32)

struct stage_acc {
	__u64 sum_ns;
	__u64 count;
	__u64 hits;		/* probe hits inside the stage, for overhead correction */
	__u64 sys_hits;		/* of which syscall-tracepoint hits (counted apart, cost apart) */
	__u64 book_ns;		/* measured udsprobe bookkeeping inside the stage */
	__u64 hist[HIST_SLOTS];	/* log2(ns) */
};

/* A workload task's state, kept by BPF. */
struct task_info {
	__u32 cur_syscall;
	__u32 in_send;
	__u32 in_recv;
	__u32 on_cpu;		/* switched in (sched_switch), for bulk slicing */
	__u64 recv_enter;
	__u64 switch_in;
	__u64 copy_done;
	__u64 copy_done_hits;
	__u64 conn_enter;
	__u64 peer_conn_enter;
	__u64 recv_exit;	/* last recv() return with data, for C_GAP */
	__u64 book_ns;		/* bookkeeping done after recv_exit (attribution) */
	__u64 recv_exit_hits;
	__u32 recv_exit_cpu;
	__u32 blocked;		/* switched out asleep (not preempted) */
	__u64 recv_enter_hits;
	__u32 recv_enter_cpu;
	__u32 pad;
	__u64 ok_snd, ok_rsk;	/* UDS: a sender's socket and the one it sends to, checked */
};

/* One message's boundary stamps. */
struct msg_state {
	__u64 t[B__COUNT];	/* ns; 0 = not crossed */
	__u64 hits[B__COUNT];	/* probe hits on that CPU so far */
	__u32 cpu[B__COUNT];
	/* from here to the end: reset at each send entry with t[] (hits[], cpu[] are not) */
	__u64 skb;		/* TCP: the segment carrying this message */
	__u64 rsk;		/* receiving socket at data-ready */
	__u64 gap_ns;		/* C_GAP of this message, 0 if none */
	__u64 gap_book_ns;
	__u64 gap_hits;
	__u32 softirq_deferred;	/* NET_RX ran outside the sender's send (ksoftirqd, later irq exit) */
	__u32 chunks;		/* data-ready callbacks for this message (skbs or segments queued) */
	__u32 copies;		/* skbs the receiver copied (tracepoint mode: consumed) */
	__u32 sender_slept;	/* times the sender slept inside this send() (send buffer full) */
	__u64 slice_t;		/* bulk slicing: time of the last slice boundary, 0 = not started */
	__u64 slice_mark;	/* its CPU and that CPU's hit counter (hit_mark) */
	__u64 bulk[NR_BULK];	/* ns per slice kind since the first data-ready */
	__u64 bulk_hits[NR_BULK];	/* probe hits in those slices, for the correction */
};

#endif
