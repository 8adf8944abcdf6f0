/* Shared by bpf/backlog.bpf.c and user/backlog/. */
#ifndef UDSPROBE_BPF_BACKLOG_H
#define UDSPROBE_BPF_BACKLOG_H

#define BL_PATH_LEN	108	/* sizeof(sun_path) */
#define BL_COMM_LEN	16
#define BL_MAX_LISTENERS 16384	/* per iterator run */

enum bl_family {
	BL_UNIX = 1,
	BL_TCP = 2,
};

/* A listener as the kernel finds it (issue 16 item 4); tgid 0: client unknown. */
struct bl_key {
	__u32 family;
	__u32 tgid;
	__u32 port;
	__u32 path_len;		/* abstract: leading \0 included */
	__u32 netns;		/* abstract unix, tcp */
	__u32 mntns;		/* client's (unix pathname) */
	char path[BL_PATH_LEN];
};

/* a client, at its connect() */
struct bl_comm {
	char comm[BL_COMM_LEN];
	__u64 cgroup;		/* cgroup v2 id */
	__u32 netns;
	__u32 pad;
};

/* per CPU; user space sums */
struct bl_val {
	__u64 overflows;	/* unix: EAGAIN; tcp: SYN dropped, queue full */
	__u64 ack_overflows;	/* tcp: ACK dropped, queue full */
	__u64 other_drops;	/* tcp: queue not full */
	__u64 waits;		/* unix: connects that slept for room */
	__u64 wait_ns;
	__u64 syn_retrans;	/* tcp: client SYN retransmits */
};

/* per listener; log2 slots, the last open-ended */
#define BL_WAIT_SLOTS	32	/* [2^k, 2^(k+1)) us */
#define BL_DEPTH_SLOTS	32	/* 0..15 exact, then 12+k: [2^k, 2^(k+1)) */

struct bl_hist {
	__u64 wait_slots[BL_WAIT_SLOTS];
	__u64 accepted;		/* seen queued */
	__u64 wait_ns;
	__u64 wait_max_ns;
	__u64 depth_slots[BL_DEPTH_SLOTS];
	__u64 queued;
	__u64 depth_sum;
	__u64 depth_max;
};

/* from the iterators (iter_put) */
struct bl_listener {
	__u32 family;
	__u32 qlen;		/* unix: receive queue; tcp: sk_ack_backlog */
	__u32 limit;		/* sk_max_ack_backlog */
	__u32 drops;		/* tcp: every listen drop */
	__u64 ino;		/* socket:[ino] */
	__u64 sk;		/* for tcp_ports */
	__u32 port;		/* tcp, host order */
	__u32 v6;
	__u8 addr[16];		/* tcp; v4 in the first 4 bytes */
	__u32 path_len;		/* unix; 0 = unbound */
	__u32 netns;
	__u64 file_ino;		/* unix pathname: socket file, */
	__u32 file_dev;		/* its dev_t (major << 20 | minor) */
	__u32 pad;
	char path[BL_PATH_LEN];
};

/* tcp_ports value: one listener per netns */
#define BL_PORT_SLOTS	4
struct bl_port_sk {
	__u64 sk;		/* 0: a free slot */
	__u64 last_drops;	/* counted already */
	__u32 netns;
	__u32 pad;
};

struct bl_port {
	struct bl_port_sk s[BL_PORT_SLOTS];
};

#endif
