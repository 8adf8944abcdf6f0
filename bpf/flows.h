/* SPDX-License-Identifier: GPL-2.0 */
/* --trace (docs/TRACE.md, "The model"); shared with user/trace/. */
#ifndef UDSPROBE_FLOWS_H
#define UDSPROBE_FLOWS_H

#define FL_FIFO		16	/* sends in flight per direction (power of two) */
#define FL_COMM_LEN	16
#define FL_PATH_LEN	108	/* sun_path */
#define FL_MAX_COMMS	8
#define FL_MAX_PORTS	8	/* more: user space only */
#define FL_SUB_BITS	3	/* 8 sub-buckets per power of two */
#define FL_NBUCKETS	320	/* up to 2^40 ns, then the last */

enum fl_transport { FL_UNIX = 1, FL_TCP = 2 };

/* partition send() entry -> recv() return */
enum fl_stage {
	FS_SEND,	/* -> handover (sock_send_length) */
	FS_EPOLL,	/* in epoll_wait/poll/select */
	FS_BUSY,	/* receiver busy before recv() */
	FS_RECV_BLOCKED,/* in recv(): handover -> return */
	FS_RECV,	/* recv() entry -> return */
	FS__COUNT,
};

/* send;call (docs/TRACE.md, "Kernel stages") */
enum fl_kstage {
	FK_PROTO,
	FK_DEV_QUEUE,
	FK_SOFTIRQ,
	FK_IP_RCV,
	FK_DATA_READY,
	FK_WAKE_END,	/* TCP: NET_RX exit; unix: handover */
	FK_SEND_EXIT,
	FK__COUNT,
};

/* the receiver's kernel stages (--detail full) */
enum fl_rkstage {
	FR_BLOCKED_RUN,	/* recv;blocked: -> it runs */
	FR_BLOCKED_COPY,/* recv;blocked: -> copy done */
	FR_EPOLL_RUN,	/* wait;epoll: -> it runs */
	FR_RECV_COPY,	/* recv;copy+return: -> copy done */
	FR__COUNT,
};

/* several chunks (docs/TRACE.md, "Messages in several chunks: `bulk;*`") */
enum fl_bulk {
	FBK_SEND_COPY,	/* sender in send() */
	FBK_RECV_COPY,	/* else receiver in recv() */
	FBK_WAIT_SPACE,	/* else sender asleep in send() */
	FBK_WAIT_CPU,	/* neither */
	FBK__COUNT,
};

/* parents of the slices */
enum fl_bulk_of { FBO_SEND, FBO_BUSY, FBO_BLOCKED, FBO_RECV, FBO__COUNT };

#define FL_BULK_SLOTS	4	/* more: not sliced, counted */

/* sys 0: free; found by tid, no lookup */
struct fl_bulk_slot {
	__u64 sys;		/* its message's t0 */
	__u64 slice_t;
	__u64 rsk;
	__u64 acc[FBK__COUNT];	/* since the first data-ready */
	__u64 at_entry[FBK__COUNT];	/* acc at its last syscall entry, */
	__u64 entry_ts;		/* its time */
	__u64 start;		/* claimed at */
	__u32 snd_tid, rcv_tid;	/* rcv_tid 0: unknown */
	__u8 snd_on, snd_asleep, handed, rcv_on;
	__u8 rcv_in;		/* receiver in a syscall */
	__u8 pad[3];
};

/* rodata rkstages bits */
enum fl_rkstage_seen { FRS_RUN = 1, FRS_COPY = 2 };

/* .bss misses[], in order */
enum fl_miss {
	FM_FIFO_FULL,	/* > FL_FIFO in flight */
	FM_NO_DIR,	/* socket opened before the run */
	FM_DIR_FULL,
	FM_FLOW_FULL,
	FM_NO_ENTRY,	/* io_uring, kernel sender */
	FM_REUSED,	/* address reused, messages in flight */
	FM_TASK_FULL,
	FM_CLOSED,	/* receiver closed, unread */
	FM_CONCURRENT,	/* two writers at once */
	FM_RECV_UNSEEN,	/* TCP read, closed unseen */
	FM__COUNT,
};

struct fl_key {
	__u8 transport;
	__u8 v6;
	__u16 port;		/* TCP: listener port, host order */
	__u32 s_tgid;
	__u32 r_tgid;
	__u32 addr[4];		/* TCP: IPv4 in addr[0], network order */
	__u32 pad;
	__u64 ep_id;		/* unix: listener name hash (0: socketpair) */
	char s_comm[FL_COMM_LEN];
	char r_comm[FL_COMM_LEN];
};

/* per CPU, summed in user space */
struct fl_stats {
	__u64 msgs;
	__u64 bytes;
	__u64 lat_sum;
	__u64 misses;		/* sends lost */
	__u64 cross_cpu;	/* read on another CPU */
	__u64 conns;		/* direction states carrying it */
	__u64 conns_to_srv;	/* TCP: of those, towards the listener's port */
	__u64 st_sum[FS__COUNT];
	__u64 st_cnt[FS__COUNT];
	__u64 k_sum[FK__COUNT];	/* sum st_sum[FS_SEND] */
	__u64 rk_sum[FR__COUNT];	/* parts of receiver stages */
	__u64 bk_sum[FBO__COUNT][FBK__COUNT];	/* by parent */
	__u64 bulk_msgs;
	__u32 lat_hist[FL_NBUCKETS];
	__u32 st_hist[FS__COUNT][FL_NBUCKETS];
};

/* ns (bpf_ktime_get_ns) */
enum fl_bound {
	FB_SEND_ENTRY,	/* t0 */
	FB_HANDOVER,	/* t1: sock_send_length */
	FB_POLL_ENTRY,	/* last poll entry (0: none) */
	FB_POLL_EXIT,
	FB_RECV_ENTRY,	/* recv() with the last byte */
	FB_RECV_RETURN,	/* t3: its return */
	FB__COUNT,
};

/* fl_outlier.unseen bits */
enum fl_unseen {
	FU_SEND_ENTRY = 1,	/* send;call starts at the handover */
	FU_RECV_ENTRY = 2,	/* its time counts in recv;blocked */
};

/* --slower-than */
struct fl_outlier {
	struct fl_key key;
	__u64 bound[FB__COUNT];	/* clamped monotonic */
	__u64 stage_ns[FS__COUNT];	/* sum latency_ns */
	__u64 latency_ns;
	__u64 k[FK__COUNT];	/* --detail full */
	__u64 rk[FR__COUNT];
	__u64 bk[FBO__COUNT][FBK__COUNT];
	__u32 stages;		/* bit per enum fl_stage crossed */
	__u32 unseen;
	__u32 bytes;
	__u32 s_tid, r_tid;
	__u32 pad;
};

struct fl_uaddr {
	__u32 len;		/* abstract: leading NUL included */
	char path[FL_PATH_LEN];
};

#endif
