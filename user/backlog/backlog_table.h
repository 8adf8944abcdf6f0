/*
 * --backlog's listener table over an explicit state (layer 3): listeners by
 * socket identity, filters, names, the 100 ms queue sample; counts per listener
 * and client (backlog_counts.c); owners from /proc (backlog_owners.c).
 */
#ifndef UDSPROBE_BACKLOG_TABLE_H
#define UDSPROBE_BACKLOG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "../bpf/backlog.h"
#include "cgroup.h"	/* CGROUP_TXT, CONTAINER_ID_LEN */
#include "watch_opts.h"	/* struct watch_filters */

#define MAX_HOLDERS	64
#define COMM_TXT	(BL_COMM_LEN * 4 + 1)	/* a comm after str_escape */

struct bl_bpf;

/* The filters (struct watch_filters): --unix, --port, --pid: a listener is watched if it
 * matches any (none given: all); --netns and --cgroup then narrow that to one namespace, one
 * cgroup subtree. */

struct client {
	uint32_t tgid;
	uint32_t netns;		/* its network namespace, cgroup id (0: unknown), taken in */
	uint64_t cgroup;	/* its connect() by BPF */
	char comm[COMM_TXT];
	struct bl_val v;
};

/* Accept waits and arrival depths of a listener: what closed keys left (base), and
 * base plus the map at the last read (cur). Allocated at the first. */
struct bl_hists {
	struct bl_hist base, cur;
};

/*
 * A listener is a socket (issue 16 item 4): unix ones by socket inode, TCP ones
 * by (netns, port) (SO_REUSEPORT groups and v4+v6 pairs are one listener).
 * Counts the iterators never showed a socket for (another netns, already
 * closed, unresolved path) get a listener of their own with ino 0, keyed like
 * the count: (netns, name) abstract, (mntns, path) pathname, (netns, port) tcp.
 */
struct listener {
	int family;
	uint32_t netns, mntns;		/* mntns: only for a pathname known from counts */
	uint64_t ino;			/* socket inode; 0 = known from counts only */
	char path[BL_PATH_LEN];		/* unix name bytes (abstract: leading \0) */
	uint32_t path_len;
	uint64_t file_ino;		/* unix pathname: the socket file */
	dev_t file_dev;
	unsigned port;			/* tcp */
	char addr[BL_PATH_LEN * 4 + 48];	/* display: escaped, see fmt_unix_addr */
	unsigned qlen, peak, limit, n_socks;
	uint64_t drops_base, drops_now;	/* tcp: sum of sk_drops over its sockets */
	uint64_t inos[8];
	int n_inos;
	int holders[MAX_HOLDERS], n_holders;
	bool owner_done, present, seen_now, watched;
	uint64_t sk;			/* first socket, for the tcp_ports map */
	uint32_t sk_drops0;		/* its sk_drops in the latest sample */
	struct bl_val tot, prev;
	struct bl_val shown_from;	/* prev when the live view last drew: its NEW column */
	struct client *clients;		/* this read: gone + live */
	int n_clients, cap_clients;
	struct client *gone;		/* evicted: dead clients, or the listener closed */
	int n_gone, cap_gone;
	bool port_full;			/* tcp, tracepoint mode: not watched (see ports_full) */
	bool retired;			/* closed and reported: counts kept, no more lines */
	bool foldable;			/* retired an interval ago: its BPF keys are evicted */
	bool frozen;			/* foldable, clients compacted into clients[] (gone empty) */
	uint64_t prev_drops;
	char owner_comm[COMM_TXT];
	char cgroup[CGROUP_TXT];	/* the owner's cgroup v2 path, escaped ("" unknown) */
	char container[CONTAINER_ID_LEN];	/* the container id that path names, or "" */
	int somaxconn;			/* net.core.somaxconn of its netns (0 unknown) */
	struct bl_hists *h;		/* NULL: no connect seen queued or accepted */
};

/* How the BPF side runs, for the outputs. */
struct bl_run {
	const char *attach_mode;
	const char *attach_reason;
	bool listen_overflow_reason;	/* the kernel has SKB_DROP_REASON_TCP_LISTEN_OVERFLOW */
	const char *unix_source;	/* "iter/unix" or "sock_diag": AF_UNIX listeners, depths */
	const char *unix_source_reason;	/* why sock_diag; NULL with iter/unix */
	const char *tcp_drops_missing;	/* why TCP listen drops are not counted; NULL: they are */
	const char *unix_depth_missing;	/* why AF_UNIX arrival depths are not seen; NULL: they are */
};

/* Another network namespace whose listeners are read (backlog_ns.c). */
#define BL_MAX_NETNS	256
struct bl_netns {
	uint32_t inum;
	int fd;				/* to setns() into it */
	int somaxconn;
	uint64_t somaxconn_ns;		/* when it was read */
	bool seen, pinned;		/* pinned: --netns PATH, kept open */
};

/* Everything --backlog knows; one per run (bl_state_init / bl_state_free). */
struct bl_state {
	const struct watch_filters *f;
	struct bl_run run;
	struct listener *ls;
	int n, cap;
	int somaxconn;			/* of udsprobe's own netns */
	int cur_somaxconn;		/* of the netns being iterated */
	uint32_t netns, mntns;		/* udsprobe's own */
	int self_netfd;			/* udsprobe's netns, to come back to (0: none) */
	struct bl_netns nss[BL_MAX_NETNS];	/* the others */
	int n_nss;
	bool setns_denied;		/* no CAP_SYS_ADMIN: only udsprobe's netns is read */
	uint64_t last_ns_scan;
	unsigned long long netstat0[2], netstat[2];	/* ListenOverflows, ListenDrops */
	bool netstat_ok;
	uint64_t missed;		/* events not counted: a BPF map was full */
	uint64_t missed_shown;		/* missed already said in the live view */
	uint64_t wait_returns_missed;	/* unix_wait_for_peer returns a kretprobe missed (the
					 * waits then end at the next event seen) */
	uint64_t listeners_missed;	/* more listeners than the iterator array holds */
	uint64_t ports_full;		/* tcp listeners not watched: their port is in more than
					 * BL_PORT_SLOTS namespaces (tracepoint mode) */
	uint64_t folded;		/* closed listeners forgotten beyond BL_MAX_RETIRED */
	uint64_t folded_overflows;	/* the overflows they had (watched ones) */
	uint64_t clients_folded;	/* exited clients of retired listeners summed per command */
	uint64_t waits_unattributed;	/* accepts waited at listeners never seen (dropped) */
	bool owners_dirty;
	uint64_t last_owner_scan;
	unsigned lines_since_header;	/* live view */
};

void bl_state_init(struct bl_state *s, const struct watch_filters *f);
void bl_state_free(struct bl_state *s);

/* Inode number of /proc/PID/ns/NAME (PID 0 = self), or 0. */
uint32_t bl_ns_inode(int pid, const char *name);

struct listener *bl_add_listener(struct bl_state *s, int family);
struct listener *bl_find_tcp(struct bl_state *s, uint32_t netns, unsigned port, bool live);
bool bl_same_name(const struct listener *l, const char *path, uint32_t len);
bool bl_match_filters(struct bl_state *s, struct listener *l);
/* l->addr from its name (unix) or from the iterator's record r (tcp; NULL: "*:port"). */
void bl_set_addr(struct listener *l, const struct bl_listener *r);
/* One queue sample: both iterators (AF_UNIX from sock_diag without iter/unix), then
 * bookkeeping. 0 or -errno. */
int bl_sample(struct bl_state *s, struct bl_bpf *b);

/* backlog_counts.c */
void bl_val_add(struct bl_val *a, const struct bl_val *b);
uint64_t bl_overflows(const struct bl_val *v);
uint64_t bl_listen_drops(const struct listener *l);
int bl_read_counts(struct bl_state *s, struct bl_bpf *b);
void bl_read_netstat(struct bl_state *s, unsigned long long out[2]);
/*
 * Closed listeners that overflowed (or had waits, drops, retransmits) are kept
 * for the summary, at most BL_MAX_RETIRED of them: beyond that the one with the
 * fewest overflows is forgotten, counted in s->folded and s->folded_overflows,
 * so hours of listener churn keep user memory bounded.
 */
#define BL_MAX_RETIRED	1024
void bl_retire_closed(struct bl_state *s, struct bl_bpf *b);
void bl_listener_free(struct listener *l);
/* A retired TCP listener's port has a listener again: count it live again. */
void bl_unretire(struct listener *l);
/* Sort for the summary: listeners by overflows + waits, clients likewise. */
void bl_sort(struct bl_state *s);

/* Keys to delete from a map after walking it (deleting during get_next_key would
 * restart the walk): bl_doom adds one (-ENOMEM), bl_doom_apply deletes and frees. */
struct bpf_map;
struct bl_doomed {
	struct bl_key *keys;
	int n, cap;
};
int bl_doom(struct bl_doomed *d, const struct bl_key *k);
void bl_doom_apply(struct bl_doomed *d, struct bpf_map *map);

/* The listener a count key belongs to (create: a listener keyed like the count when
 * none matches), or NULL. */
struct listener *bl_listener_of(struct bl_state *s, const struct bl_key *k, bool create);

/* backlog_hist.c: accept waits and arrival depths (struct bl_hist) */
void bl_hist_add(struct bl_hist *a, const struct bl_hist *b);
int bl_read_hists(struct bl_state *s, struct bl_bpf *b);
/* Upper bound of a slot: seconds (wait), connections (depth). */
double bl_wait_le(int slot);
uint64_t bl_depth_le(int slot);
/* Upper estimates of the q-quantile (the slot's bound, at most the maximum seen). */
double bl_wait_quantile(const struct bl_hist *h, double q);
uint64_t bl_depth_quantile(const struct bl_hist *h, double q);

/* backlog_owners.c */
int bl_owner_pid(const struct listener *l);
/* /proc/PID/comm, escaped, into out[COMM_TXT]. */
void bl_proc_comm(int pid, char *out);
/* Fill holders/owner of listeners with new inodes from /proc/PID/fd. */
void bl_resolve_owners(struct bl_state *s);

/* backlog_ns.c: network namespaces, cgroups, containers */
int bl_read_somaxconn(void);
bool bl_cgroup_under(const char *cg, const char *top);
/* Find the other network namespaces (at most once a second unless force). */
void bl_netns_scan(struct bl_state *s, bool force);
/* fn(s, b) inside each of them (udsprobe's own is the caller's). 0 or -errno. */
int bl_netns_each(struct bl_state *s, struct bl_bpf *b,
		  int (*fn)(struct bl_state *, struct bl_bpf *));
/* net.core.somaxconn in force in netns (0: unknown). */
int bl_netns_somaxconn(const struct bl_state *s, uint32_t netns);
void bl_netns_free(struct bl_state *s);

#endif
