/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --trace: the message model of docs/TRACE.md for any socket. Shared between
 * flows.bpf.c and user/trace/: plain __u32/__u64, no includes.
 */
#ifndef UDSPROBE_FLOWS_H
#define UDSPROBE_FLOWS_H

#define FL_FIFO		16	/* sends in flight per direction (power of two) */
#define FL_COMM_LEN	16
#define FL_PATH_LEN	108	/* sun_path */
#define FL_MAX_COMMS	8	/* --comm filters checked in the kernel */
#define FL_MAX_PORTS	8	/* --port filters checked in the kernel (more: in user space only) */
#define FL_SUB_BITS	3	/* histogram: 8 linear sub-buckets per power of two */
#define FL_NBUCKETS	320	/* up to 2^40 ns (18 min); larger values go in the last */

enum fl_transport { FL_UNIX = 1, FL_TCP = 2 };

/* Stages of one message; they partition send() entry → recv() return. */
enum fl_stage {
	FS_SEND,	/* sender's send() entry → the data handed over (sock_send_length) */
	FS_EPOLL,	/* receiver blocked in epoll_wait/poll/select until it returned */
	FS_BUSY,	/* receiver running other work before it called recv() */
	FS_RECV_BLOCKED,/* receiver already in recv(): data handed over → recv() returns */
	FS_RECV,	/* receiver's recv() entry (after the data was there) → return */
	FS__COUNT,
};

/*
 * Kernel stages of send;call: the sender's send(), cut at the kernel boundaries its own
 * context crosses (tracepoints, when the kernel has them; docs/TRACE.md "Kernel stages").
 * Each is the time up to that boundary since the one before; user space names it from the
 * stage table (user/lib/stage_table.c) by the boundary that ends it, as --compare does.
 */
enum fl_kstage {
	FK_PROTO,	/* TCP: tcp_sendmsg_locked (B_PROTO) */
	FK_DEV_QUEUE,	/* TCP: net_dev_queue (B_DEV_QUEUE) */
	FK_SOFTIRQ,	/* TCP: softirq_entry of NET_RX (B_SOFTIRQ) */
	FK_IP_RCV,	/* TCP: netif_receive_skb (B_T_IP_RCV) */
	FK_DATA_READY,	/* sk_data_ready (B_DATA_READY) */
	FK_WAKE_END,	/* TCP: softirq_exit of NET_RX; unix: the handover (B_WAKE_END) */
	FK_SEND_EXIT,	/* TCP: the handover (B_SEND_EXIT) */
	FK__COUNT,
};

/*
 * Kernel stages of the receiver's side (--detail full): the part of a stage spent waiting
 * for a CPU after the wakeup (sched_switch in), and recv()'s copy up to its copy-done
 * boundary (TCP: tcp_rcv_space_adjust; AF_UNIX: consume_skb). The rest of each stage is its
 * last child (recv;return, the poll call's return), computed in user space.
 */
enum fl_rkstage {
	FR_BLOCKED_RUN,	/* recv;blocked: data handed over -> the receiver runs */
	FR_BLOCKED_COPY,/* recv;blocked: it runs -> copy done */
	FR_EPOLL_RUN,	/* wait;epoll: data there -> the receiver runs (its poll returns) */
	FR_RECV_COPY,	/* recv;copy+return: recv() entry -> copy done */
	FR__COUNT,
};

/*
 * A message sent in several chunks (--detail full, a kernel with sock:sk_data_ready): from
 * its first data-ready to the recv() return that ends it, its time is sliced by who runs,
 * as --compare slices it (same order as its C_BULK_*). Each slice is a child of the stage
 * it falls in: send;call up to the handover, then the receiver's last stage.
 */
enum fl_bulk {
	FBK_SEND_COPY,	/* the sender runs inside its send() */
	FBK_RECV_COPY,	/* the sender does not, the receiver runs inside its recv() */
	FBK_WAIT_SPACE,	/* neither: the sender sleeps in send() (buffer full) */
	FBK_WAIT_CPU,	/* neither runs its side */
	FBK__COUNT,
};

/* The stages a message's slices are children of (fl_bulk sums). */
enum fl_bulk_of { FBO_SEND, FBO_BUSY, FBO_BLOCKED, FBO_RECV, FBO__COUNT };

#define FL_BULK_SLOTS	4	/* messages sliced at once; more: not sliced, counted */

/* A message being sliced (enum fl_bulk); sys 0: free. Sender and receiver are known by
 * thread id, so that their switches find it without a lookup per switch. */
struct fl_bulk_slot {
	__u64 sys;		/* the sender's send syscall entry: its message's t0 */
	__u64 slice_t;		/* the last slice boundary */
	__u64 rsk;		/* the receiving sock */
	__u64 acc[FBK__COUNT];	/* slices since its first data-ready */
	__u64 at_entry[FBK__COUNT];	/* acc at the receiver's last syscall entry, */
	__u64 entry_ts;		/* that entry */
	__u64 start;		/* when it was claimed */
	__u32 snd_tid, rcv_tid;	/* rcv_tid 0: not known yet */
	__u8 snd_on, snd_asleep, handed, rcv_on;
	__u8 rcv_in;		/* the receiver is in a syscall (from its entry to its read) */
	__u8 pad[3];
};

/* Which receiver boundaries the run attached (rodata rkstages bits). */
enum fl_rkstage_seen { FRS_RUN = 1, FRS_COPY = 2 };

/* Reasons a message or a receive is not counted (.bss miss counters, same order). */
enum fl_miss {
	FM_FIFO_FULL,	/* more than FL_FIFO sends in flight on one direction */
	FM_NO_DIR,	/* bytes received on a socket never seen sending (opened before the run) */
	FM_DIR_FULL,	/* the direction map was full */
	FM_FLOW_FULL,	/* the flow map was full */
	FM_NO_ENTRY,	/* send() outside a traced syscall (io_uring, kernel sender) */
	FM_REUSED,	/* a socket address reused with messages still in flight */
	FM_TASK_FULL,	/* the task map was full */
	FM_CLOSED,	/* the receiving socket closed with messages unread */
	FM_CONCURRENT,	/* a send while another process or thread was recording one on the
			 * same direction */
	FM_RECV_UNSEEN,	/* read by a TCP socket now closed, its recv() boundary never seen */
	FM__COUNT,
};

struct fl_key {
	__u8 transport;		/* enum fl_transport */
	__u8 v6;		/* TCP endpoint is IPv6 */
	__u16 port;		/* TCP: server (listener) port, host order */
	__u32 s_tgid;
	__u32 r_tgid;
	__u32 addr[4];		/* TCP: server address (IPv4 in addr[0], network order) */
	__u32 pad;
	__u64 ep_id;		/* unix: hash of the listener's address (0: socketpair) */
	char s_comm[FL_COMM_LEN];
	char r_comm[FL_COMM_LEN];
};

/* Per flow, per CPU (summed in user space). */
struct fl_stats {
	__u64 msgs;
	__u64 bytes;
	__u64 lat_sum;
	__u64 misses;		/* this direction's sends lost before they completed */
	__u64 cross_cpu;	/* messages read on another CPU than the one that handed them over */
	__u64 conns;		/* connections (direction states) that carried its messages */
	__u64 st_sum[FS__COUNT];
	__u64 st_cnt[FS__COUNT];
	__u64 k_sum[FK__COUNT];	/* enum fl_kstage: they add up to st_sum[FS_SEND] */
	__u64 rk_sum[FR__COUNT];	/* enum fl_rkstage: parts of the receiver's stages */
	__u64 bk_sum[FBO__COUNT][FBK__COUNT];	/* sliced messages' slices, by parent */
	__u64 bulk_msgs;	/* messages sliced */
	__u32 lat_hist[FL_NBUCKETS];
	__u32 st_hist[FS__COUNT][FL_NBUCKETS];
};

/* Boundaries of one message (ns, bpf_ktime_get_ns): what its stages are cut from. */
enum fl_bound {
	FB_SEND_ENTRY,	/* t0: the sender's send() entry */
	FB_HANDOVER,	/* t1: the data handed over (sock_send_length) */
	FB_POLL_ENTRY,	/* the receiver's last epoll/poll/select entry (0: none) */
	FB_POLL_EXIT,	/* its return */
	FB_RECV_ENTRY,	/* the receiver's entry into the recv() that returned the last byte */
	FB_RECV_RETURN,	/* t3: that recv()'s return */
	FB__COUNT,
};

/* Boundaries not seen (struct fl_outlier.unseen bits). */
enum fl_unseen {
	FU_SEND_ENTRY = 1,	/* send outside a traced syscall: send;call starts at the handover */
	FU_RECV_ENTRY = 2,	/* recv() entry unknown: its time counts in recv;blocked */
};

/* --slower-than: one message slower than the threshold, from the ring buffer. */
struct fl_outlier {
	struct fl_key key;	/* transport, endpoint, sender and receiver tgid + comm */
	__u64 bound[FB__COUNT];	/* enum fl_bound, clamped to one monotonic path */
	__u64 stage_ns[FS__COUNT];	/* enum fl_stage: they add up to latency_ns */
	__u64 latency_ns;
	__u64 k[FK__COUNT];	/* enum fl_kstage: send;call cut (--detail full) */
	__u64 rk[FR__COUNT];	/* enum fl_rkstage: the receiver's stages cut */
	__u64 bk[FBO__COUNT][FBK__COUNT];	/* a sliced message's slices */
	__u32 stages;		/* bit per enum fl_stage the message passed through */
	__u32 unseen;		/* enum fl_unseen bits */
	__u32 bytes;
	__u32 s_tid, r_tid;
	__u32 pad;
};

struct fl_uaddr {
	__u32 len;		/* bytes of path (abstract: leading NUL included) */
	char path[FL_PATH_LEN];
};

#endif
