/* Shared between bpf/backlog.bpf.c and user/backlog.c: listen-queue overflow counting. */
#ifndef UDSPROBE_BPF_BACKLOG_H
#define UDSPROBE_BPF_BACKLOG_H

#define BL_PATH_LEN	108	/* sizeof(sun_path) */
#define BL_COMM_LEN	16
#define BL_MAX_LISTENERS 16384	/* listeners one iterator run can report */

enum bl_family {
	BL_UNIX = 1,
	BL_TCP = 2,
};

/*
 * Counters per (listener, client process). The listener is named the way the
 * kernel finds it, never by name alone (issue 16 item 4):
 * - unix abstract name: (netns, name bytes, path_len): abstract names are per netns;
 * - unix pathname: (path up to the first NUL within addrlen, mntns of the client):
 *   user space resolves it to the socket file (dev, inode) in that mount namespace;
 * - tcp: (netns, local port).
 * tgid 0 = client not known (remote peer, or handled outside the client's task).
 */
struct bl_key {
	__u32 family;
	__u32 tgid;
	__u32 port;
	__u32 path_len;		/* unix: bytes of path that name it (abstract: leading \0 included) */
	__u32 netns;		/* network namespace inode (abstract unix, tcp) */
	__u32 mntns;		/* client's mount namespace inode (unix pathname), else 0 */
	char path[BL_PATH_LEN];
};

/* Value of the comms map: who a client process is, taken in its connect(). */
struct bl_comm {
	char comm[BL_COMM_LEN];
	__u64 cgroup;		/* cgroup v2 id (the directory's inode) */
	__u32 netns;		/* network namespace inode */
	__u32 pad;
};

/* Per-CPU values; user space sums them. */
struct bl_val {
	__u64 overflows;	/* unix: connect() -> EAGAIN on a full queue;
				 * tcp: SYN dropped at a full accept queue */
	__u64 ack_overflows;	/* tcp: handshake-completing ACK dropped at a full accept queue */
	__u64 other_drops;	/* tcp: listen drops while the accept queue was not full */
	__u64 waits;		/* unix: blocking connects that slept waiting for room */
	__u64 wait_ns;		/* unix: total time those connects slept */
	__u64 syn_retrans;	/* tcp: client SYN retransmits towards this port */
};

/*
 * Per listener (a bl_key with tgid 0): how long accepted connections waited in
 * the queue (queued -> accept()), and the queue depth each queued connect found
 * ahead of it. Log2 slots, the last one open-ended (both 32: a power of two, so
 * the BPF side masks the index for the verifier); user space sums the per-CPU
 * copies (max: the largest).
 */
#define BL_WAIT_SLOTS	32	/* slot k: [2^k, 2^(k+1)) us; slot 0 from 0 */
#define BL_DEPTH_SLOTS	32	/* 0..15 exact, then slot 12+k: [2^k, 2^(k+1)), k = 4..19 */

struct bl_hist {
	__u64 wait_slots[BL_WAIT_SLOTS];
	__u64 accepted;		/* connections accepted that were seen queued */
	__u64 wait_ns;		/* their total wait */
	__u64 wait_max_ns;
	__u64 depth_slots[BL_DEPTH_SLOTS];
	__u64 queued;		/* connects that entered the queue */
	__u64 depth_sum;
	__u64 depth_max;
};

/* One listening socket, written by the iter/unix and iter/tcp programs into the
 * listeners array map (not the seq_file: see iter_put in backlog.bpf.c). */
struct bl_listener {
	__u32 family;
	__u32 qlen;		/* unix: sk_receive_queue length; tcp: sk_ack_backlog */
	__u32 limit;		/* sk_max_ack_backlog */
	__u32 drops;		/* sk_drops (tcp: every listen drop at this socket) */
	__u64 ino;		/* socket inode, as in /proc/PID/fd -> socket:[ino] */
	__u64 sk;		/* kernel address, for the port -> listener map */
	__u32 port;		/* tcp, host order */
	__u32 v6;
	__u8 addr[16];		/* tcp: local address (v4 in the first 4 bytes) */
	__u32 path_len;		/* unix: bytes of sun_path (0 = unbound) */
	__u32 netns;		/* network namespace inode */
	__u64 file_ino;		/* unix pathname: inode of the socket file */
	__u32 file_dev;		/* ... and its filesystem (kernel dev_t: major << 20 | minor) */
	__u32 pad;
	char path[BL_PATH_LEN];
};

/* Value of the tcp_ports map (TCP listeners watched in tracepoint mode): one port's
 * listeners, one per network namespace, in up to BL_PORT_SLOTS namespaces (a freed
 * segment does not say its netns; the listener whose sk_drops moved does). */
#define BL_PORT_SLOTS	4
struct bl_port_sk {
	__u64 sk;		/* 0: a free slot */
	__u64 last_drops;	/* sk_drops already counted (set from the iterator at insert) */
	__u32 netns;
	__u32 pad;
};

struct bl_port {
	struct bl_port_sk s[BL_PORT_SLOTS];
};

#endif
