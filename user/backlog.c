// SPDX-License-Identifier: GPL-2.0
/*
 * udsprobe --backlog: who overflows which listen queue.
 *
 * The kernel side (bpf/backlog.bpf.c) counts overflow events per (listener,
 * client process) in per-CPU maps and enumerates listeners with BPF iterators.
 * This side picks the attach mode, samples listener queues every 100 ms, reads
 * the counters once per --interval, and prints, writes JSON lines and a
 * Prometheus textfile. Nothing here runs per event.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../bpf/backlog.h"	/* shared with the BPF side (user/backlog.h is this module's API) */
#include "attach.h"
#include "backlog.h"
#include "backlog.skel.h"
#include "json_writer.h"
#include "util.h"

#define SAMPLE_NS	100000000ull	/* queue sampling period */
#define MAX_FILTERS	16
#define MAX_HOLDERS	64


/* ------------------------------------------------------------------ options */

static struct bl_opts {
	bool enabled;
	const char *unix_paths[MAX_FILTERS];
	int n_unix;
	unsigned ports[MAX_FILTERS];
	int n_ports;
	int pids[MAX_FILTERS];
	int n_pids;
	double interval_s;
	const char *prom_path;
	const char *attach;
	bool quiet;
} opts;

enum {
	OPT_BACKLOG = 1100,
	OPT_UNIX,
	OPT_PORT,
	OPT_PID,
	OPT_INTERVAL,
	OPT_PROM,
	OPT_BL_ATTACH,
	OPT_QUIET,
};

static const struct argp_option bl_options[] = {
	{ "backlog", OPT_BACKLOG, NULL, 0,
	  "Watch listen queues: AF_UNIX connect EAGAIN, TCP listen overflows (until --duration "
	  "or Ctrl-C; --json PATH writes JSON lines)", 1 },
	{ NULL, 0, NULL, 0, "Backlog watch (--backlog):", 4 },
	{ "unix", OPT_UNIX, "PATH", 0, "Watch the AF_UNIX listener bound to PATH (repeatable; "
	  "@NAME for an abstract name)" },
	{ "port", OPT_PORT, "N", 0, "Watch the TCP listener(s) on local port N (repeatable)" },
	{ "pid", OPT_PID, "P", 0, "Watch the listeners process P holds (repeatable)" },
	{ "interval", OPT_INTERVAL, "S", 0, "Live view every S seconds (default 1)" },
	{ "prom", OPT_PROM, "PATH", 0, "Write Prometheus text to PATH every interval, atomically "
	  "(for node_exporter's textfile collector)" },
	{ "backlog-attach", OPT_BL_ATTACH, "MODE", 0,
	  "auto (default), fentry, kprobe or tracepoint" },
	{ "quiet", OPT_QUIET, NULL, 0, "No live view; only the summary at exit" },
	{},
};

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "udsprobe: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'udsprobe --help' for more information.\n");
	exit(2);
	return 0;
}

int parse_unix_addr(const char *arg, char *path, uint32_t *len);

static error_t bl_parse(int key, char *arg, struct argp_state *state)
{
	char path[BL_PATH_LEN];
	uint32_t len;
	uint64_t v;

	switch (key) {
	case OPT_BACKLOG:
		opts.enabled = true;
		break;
	case OPT_UNIX:
		if (opts.n_unix == MAX_FILTERS)
			bad_usage("--unix: at most 16 paths", NULL);
		if (parse_unix_addr(arg, path, &len))
			bad_usage("--unix: '%s' is not a socket path (1 to 107 bytes, or @NAME; "
				  "\\\\, \\0 and \\xHH escapes)", arg);
		opts.unix_paths[opts.n_unix++] = arg;
		break;
	case OPT_PORT:
		if (opts.n_ports == MAX_FILTERS)
			bad_usage("--port: at most 16 ports", NULL);
		if (parse_u64(arg, 1, 65535, &v))
			bad_usage("--port: '%s' is not a port number from 1 to 65535", arg);
		opts.ports[opts.n_ports++] = v;
		break;
	case OPT_PID:
		if (opts.n_pids == MAX_FILTERS)
			bad_usage("--pid: at most 16 pids", NULL);
		if (parse_u64(arg, 1, 4194304, &v))
			bad_usage("--pid: '%s' is not a process id", arg);
		opts.pids[opts.n_pids++] = v;
		break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 86400, &opts.interval_s) || opts.interval_s < 0.1)
			bad_usage("--interval: '%s' is not a number of seconds in [0.1, 86400]", arg);
		break;
	case OPT_PROM:
		if (!*arg)
			bad_usage("--prom needs a path", NULL);
		opts.prom_path = arg;
		break;
	case OPT_BL_ATTACH:
		opts.attach = arg;
		break;
	case OPT_QUIET:
		opts.quiet = true;
		break;
	case ARGP_KEY_END:
		if (!opts.enabled && (opts.n_unix || opts.n_ports || opts.n_pids ||
				      opts.interval_s || opts.prom_path || opts.attach || opts.quiet))
			bad_usage("--unix, --port, --pid, --interval, --prom, --backlog-attach and "
				  "--quiet need --backlog", NULL);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp backlog_argp = { .options = bl_options, .parser = bl_parse };

bool backlog_requested(void)
{
	return opts.enabled;
}

/* ------------------------------------------------------------------ attach modes */

/*
 * The functions probed in fentry/kprobe mode, with their programs as skeleton
 * fields (offsets in struct backlog_bpf; 0 = no such program): one list for the
 * capability checks and for enabling the programs.
 */
#define PROG(name) offsetof(struct backlog_bpf, progs.name)
#define ENTRY(f, v6) { #f, v6, PROG(fe_##f), 0, PROG(kp_##f), 0 }
#define ENTRY_RET(f, v6) { #f, v6, PROG(fe_##f), PROG(fx_##f), PROG(kp_##f), PROG(kr_##f) }

static const struct probe_target {
	const char *func;
	bool v6;		/* only when the kernel has IPv6 (tcp_v6_syn_recv_sock) */
	size_t fe, fx, kp, kr;
} probe_targets[] = {
	ENTRY_RET(unix_stream_connect, false),
	ENTRY_RET(unix_wait_for_peer, false),
	ENTRY_RET(tcp_conn_request, false),
	ENTRY_RET(tcp_v4_syn_recv_sock, false),
	ENTRY_RET(tcp_v6_syn_recv_sock, true),
	ENTRY(tcp_connect, false),
	ENTRY(tcp_retransmit_skb, false),
};

/* Can `mode` be used here for the backlog targets? 0, or -EOPNOTSUPP with the reason. */
static int mode_usable(enum attach_mode mode, bool with_v6, char *why, size_t len)
{
	const char *fns[ARRAY_SIZE(probe_targets)];
	int n = 0, i, err;
	char sym[256];

	for (i = 0; i < (int)ARRAY_SIZE(probe_targets); i++)
		if (with_v6 || !probe_targets[i].v6)
			fns[n++] = probe_targets[i].func;

	switch (mode) {
	case ATTACH_FENTRY:
		for (i = 0; i < n; i++) {
			if (!btf_has_func(fns[i])) {
				snprintf(why, len, "no BTF for %s", fns[i]);
				return -EOPNOTSUPP;
			}
		}
		for (i = 0; i < n; i++) {	/* some kernels refuse some targets (6.1: ENOTSUPP) */
			err = fentry_can_attach(fns[i]);
			if (err) {
				snprintf(why, len, "a test fentry program on %s failed: %s", fns[i],
					 err == -524 ? "not supported (ENOTSUPP)" : strerror(-err));
				return -EOPNOTSUPP;
			}
		}
		return 0;
	case ATTACH_KPROBE:
		if (!kprobe_supported()) {
			snprintf(why, len, "kernel has no kprobe PMU (CONFIG_KPROBES unset?)");
			return -EOPNOTSUPP;
		}
		for (i = 0; i < n; i++) {
			if (!ksym_resolve(fns[i], sym, sizeof(sym))) {
				snprintf(why, len, "%s is not in /proc/kallsyms (inlined?)", fns[i]);
				return -EOPNOTSUPP;
			}
		}
		return 0;
	case ATTACH_TRACEPOINT:
		if (!kernel_has_btf()) {
			snprintf(why, len, "no kernel BTF (/sys/kernel/btf/vmlinux) for tp_btf");
			return -EOPNOTSUPP;
		}
		err = ensure_tracefs();
		if (err) {
			snprintf(why, len, "cannot mount tracefs: %s", strerror(-err));
			return -EOPNOTSUPP;
		}
		if (!tracefs_has_event("syscalls", "sys_enter_connect")) {
			snprintf(why, len, "no syscalls:sys_enter_connect tracepoint "
				 "(CONFIG_FTRACE_SYSCALLS unset?)");
			return -EOPNOTSUPP;
		}
		return 0;
	default:
		snprintf(why, len, "unknown mode");
		return -EINVAL;
	}
}

static void mode_programs(struct backlog_bpf *skel, enum attach_mode mode, bool v6,
			  struct bpf_program **p, int *n)
{
	bool fentry = mode == ATTACH_FENTRY;
	size_t i, k;

	*n = 0;
	switch (mode) {
	case ATTACH_FENTRY:
	case ATTACH_KPROBE:
		for (i = 0; i < ARRAY_SIZE(probe_targets); i++) {
			const struct probe_target *t = &probe_targets[i];
			size_t off[2] = { fentry ? t->fe : t->kp, fentry ? t->fx : t->kr };

			if (t->v6 && !v6)
				continue;
			for (k = 0; k < 2; k++)
				if (off[k])
					p[(*n)++] = *(struct bpf_program **)((char *)skel + off[k]);
		}
		break;
	default:
		p[(*n)++] = skel->progs.tp_sys_enter_connect;
		p[(*n)++] = skel->progs.tp_sys_exit_connect;
		p[(*n)++] = skel->progs.tp_sched_switch;
		p[(*n)++] = skel->progs.tp_consume_skb;
		p[(*n)++] = skel->progs.tp_kfree_skb;
		p[(*n)++] = skel->progs.tp_inet_sock_set_state;
		p[(*n)++] = skel->progs.tp_tcp_retransmit_skb;
		break;
	}
}

struct bl_bpf {
	struct backlog_bpf *skel;
	struct bpf_link *links[16];
	int n_links;
	struct bpf_link *iter_unix, *iter_tcp;
	enum attach_mode mode;
	int reason;		/* TCP_LISTEN_OVERFLOW value, or -1 */
	bool v6;		/* tcp_v6_syn_recv_sock exists (IPv6 built in or loaded) */
	char why[512];		/* how the mode was chosen */
	const struct bl_listener *iter_out;	/* the listeners array map, mmapped */
	size_t iter_len;
};

static void bl_bpf_close(struct bl_bpf *b)
{
	int i;

	for (i = 0; i < b->n_links; i++)
		bpf_link__destroy(b->links[i]);
	b->n_links = 0;
	bpf_link__destroy(b->iter_unix);
	bpf_link__destroy(b->iter_tcp);
	b->iter_unix = b->iter_tcp = NULL;
	if (b->iter_out)
		munmap((void *)b->iter_out, b->iter_len);
	b->iter_out = NULL;
	backlog_bpf__destroy(b->skel);
	b->skel = NULL;
}

/* Open, load and attach one mode's programs plus the iterators; all or nothing. */
static int bl_bpf_open(struct bl_bpf *b, enum attach_mode mode, char *err_msg, size_t len)
{
	struct bpf_program *progs[16];
	int n, i, err;

	b->skel = backlog_bpf__open();
	if (!b->skel) {
		snprintf(err_msg, len, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	b->skel->rodata->listen_overflow_reason = b->reason > 0 ? b->reason : 0;
	b->skel->rodata->self_tgid = getpid();
	mode_programs(b->skel, mode, b->v6, progs, &n);
	for (i = 0; i < n; i++)
		bpf_program__set_autoload(progs[i], true);
	err = backlog_bpf__load(b->skel);
	if (err) {
		snprintf(err_msg, len, "cannot load the %s programs: %s", attach_mode_names[mode],
			 strerror(-err));
		goto fail;
	}
	for (i = 0; i < n; i++) {
		b->links[b->n_links] = bpf_program__attach(progs[i]);
		if (!b->links[b->n_links]) {
			err = -errno;
			snprintf(err_msg, len, "cannot attach %s: %s", bpf_program__name(progs[i]),
				 strerror(-err));
			goto fail;
		}
		b->n_links++;
	}
	b->iter_unix = bpf_program__attach_iter(b->skel->progs.iter_unix, NULL);
	b->iter_tcp = bpf_program__attach_iter(b->skel->progs.iter_tcp, NULL);
	if (!b->iter_unix || !b->iter_tcp) {
		err = -errno;
		snprintf(err_msg, len, "cannot attach the iter/unix and iter/tcp programs: %s "
			 "(needs Linux 5.17+)", strerror(-err));
		goto fail;
	}
	b->iter_len = BL_MAX_LISTENERS * sizeof(struct bl_listener);
	b->iter_out = mmap(NULL, b->iter_len, PROT_READ, MAP_SHARED,
			   bpf_map__fd(b->skel->maps.listeners), 0);
	if (b->iter_out == MAP_FAILED) {
		err = -errno;
		b->iter_out = NULL;
		snprintf(err_msg, len, "cannot map the listeners array: %s", strerror(-err));
		goto fail;
	}
	b->mode = mode;
	return 0;
fail:
	bl_bpf_close(b);
	return err ? err : -EINVAL;
}

/* attach_choose's probe for backlog: the targets are there, and the mode's
 * programs load and attach (then b stays open in that mode). */
struct mode_try {
	struct bl_bpf *b;
	bool open_failed;	/* usable, but loading or attaching failed */
};

static int mode_try(enum attach_mode mode, void *ctx, char *why, size_t len)
{
	struct mode_try *t = ctx;
	int err;

	t->open_failed = false;
	err = mode_usable(mode, t->b->v6, why, len);
	if (err)
		return err;
	err = bl_bpf_open(t->b, mode, why, len);
	t->open_failed = err != 0;
	return err;
}

/* auto: fentry -> kprobe -> tracepoint; a forced mode fails with the reason. */
static int bl_bpf_setup(struct bl_bpf *b, enum attach_mode want)
{
	struct mode_try t = { .b = b };
	char reason[512];
	long long v;
	int err;

	b->reason = btf_enum_value("SKB_DROP_REASON_TCP_LISTEN_OVERFLOW", &v) ? -1 : (int)v;
	b->v6 = ksym_resolve("tcp_v6_syn_recv_sock", reason, sizeof(reason));
	if (want != ATTACH_AUTO) {	/* say which of the two went wrong */
		err = mode_try(want, &t, reason, sizeof(reason));
		if (err && !t.open_failed) {
			fprintf(stderr, "udsprobe: --attach %s is not available here: %s\n"
				"Try --attach auto to use the best mode this kernel has.\n",
				attach_mode_names[want], reason);
			return -ENOTSUP;
		}
		if (err) {
			fprintf(stderr, "udsprobe: --attach %s: %s\n", attach_mode_names[want], reason);
			return -EINVAL;
		}
		b->mode = want;
		snprintf(b->why, sizeof(b->why), "forced with --attach %s", attach_mode_names[want]);
		return 0;
	}
	err = attach_choose(want, mode_try, &t, &b->mode, b->why, sizeof(b->why));
	if (err) {
		fprintf(stderr, "udsprobe: no attach mode works on this kernel (%s)\n", b->why);
		return -ENOTSUP;
	}
	return 0;
}

/* ------------------------------------------------------------------ listeners */

#define COMM_TXT	(BL_COMM_LEN * 4 + 1)	/* a comm after str_escape */

struct client {
	uint32_t tgid;
	char comm[COMM_TXT];
	struct bl_val v;
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
	struct client *clients;		/* this read: gone + live */
	int n_clients, cap_clients;
	struct client *gone;		/* evicted: dead clients, or the listener closed */
	int n_gone, cap_gone;
	bool retired;			/* closed and reported: counts kept, no more lines */
	uint64_t prev_drops;
	char owner_comm[COMM_TXT];
};

static struct state {
	struct listener *ls;
	int n, cap;
	int somaxconn;
	uint32_t netns, mntns;		/* udsprobe's own */
	uint64_t start_ns;
	unsigned long long netstat0[2], netstat[2];	/* ListenOverflows, ListenDrops */
	bool netstat_ok;
	uint64_t missed;
	uint64_t missed_shown;		/* missed already said in the live view */
	uint64_t listeners_missed;	/* more listeners than the iterator array holds */
	bool owners_dirty;
	uint64_t last_owner_scan;
} st;

/* Inode number of /proc/PID/ns/NAME (PID 0 = self), or 0. */
static uint32_t ns_inode(int pid, const char *name)
{
	char path[64];
	struct stat sb;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &sb) ? 0 : (uint32_t)sb.st_ino;
}

/*
 * The display form of a unix name, lossless and printable (docs/BACKLOG.md,
 * "Names"): a pathname as str_escape makes it, with a leading '@' written \x40
 * so it never reads as an abstract name; an abstract name as '@' and the escaped
 * bytes after its leading NUL (so "\0a\0b" is "@a\0b" and "\0a@b" is "@a@b").
 */
void fmt_unix_addr(const char *path, size_t len, char *out, size_t out_len)
{
	if (!len || out_len < 5) {
		if (out_len)
			out[0] = 0;
		return;
	}
	if (path[0] == '@') {
		snprintf(out, out_len, "\\x40");
		str_escape(path + 1, len - 1, out + 4, out_len - 4);
	} else if (path[0]) {
		str_escape(path, len, out, out_len);
	} else {
		out[0] = '@';
		str_escape(path + 1, len - 1, out + 1, out_len - 1);
	}
}

/* --unix ARG (the display form above) -> name bytes; -EINVAL if it is not one. */
int parse_unix_addr(const char *arg, char *path, uint32_t *len)
{
	char raw[BL_PATH_LEN + 1];
	int n;

	memset(path, 0, BL_PATH_LEN);
	if (arg[0] == '@') {	/* abstract: a leading NUL, then the name */
		n = str_unescape(arg + 1, raw, BL_PATH_LEN - 1);
		if (n < 0)
			return -EINVAL;
		memcpy(path + 1, raw, n);
		*len = n + 1;
		return 0;
	}
	n = str_unescape(arg, raw, BL_PATH_LEN);
	if (n <= 0 || memchr(raw, 0, n))	/* a pathname ends at its first NUL */
		return -EINVAL;
	memcpy(path, raw, n);
	*len = n;
	return 0;
}

static struct listener *add_listener(int family)
{
	struct listener *l;

	if (st.n == st.cap) {
		int cap = st.cap ? st.cap * 2 : 64;
		void *p = realloc(st.ls, cap * sizeof(*st.ls));

		if (!p)
			return NULL;
		st.ls = p;
		st.cap = cap;
	}
	l = &st.ls[st.n++];
	memset(l, 0, sizeof(*l));
	l->family = family;
	return l;
}

static bool same_name(const struct listener *l, const char *path, uint32_t len)
{
	return l->path_len == len && !memcmp(l->path, path, len);
}

static bool match_filters(struct listener *l)
{
	char path[BL_PATH_LEN];
	uint32_t len;
	int i, j;

	if (!opts.n_unix && !opts.n_ports && !opts.n_pids)
		return true;
	for (i = 0; i < opts.n_unix && l->family == BL_UNIX; i++)
		if (!parse_unix_addr(opts.unix_paths[i], path, &len) && same_name(l, path, len))
			return true;
	for (i = 0; i < opts.n_ports && l->family == BL_TCP; i++)
		if (opts.ports[i] == l->port)
			return true;
	for (i = 0; i < opts.n_pids; i++)
		for (j = 0; j < l->n_holders; j++)
			if (opts.pids[i] == l->holders[j])
				return true;
	return false;
}

/* The text form of where a listener is when that is not udsprobe's own namespace. */
static void set_addr(struct listener *l, const struct bl_listener *r)
{
	char ip[INET6_ADDRSTRLEN];

	if (l->family == BL_UNIX) {
		fmt_unix_addr(l->path, l->path_len, l->addr, sizeof(l->addr));
	} else if (r) {
		inet_ntop(r->v6 ? AF_INET6 : AF_INET, r->addr, ip, sizeof(ip));
		snprintf(l->addr, sizeof(l->addr), r->v6 ? "[%s]:%u" : "%s:%u", ip, r->port);
	} else {
		snprintf(l->addr, sizeof(l->addr), "*:%u", l->port);
	}
}

/*
 * Run one iterator to its end. The programs write listeners to the mmapped
 * listeners array, not to the seq_file, so the read() below returns no data:
 * see iter_put() in backlog.bpf.c for why (issue 16 item 5).
 */
static int run_iter(struct bl_bpf *b, struct bpf_link *link, void (*fn)(const struct bl_listener *))
{
	char buf[64];
	uint32_t i, n;
	ssize_t got;
	int fd;

	b->skel->bss->iter_n = 0;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	while ((got = read(fd, buf, sizeof(buf))) != 0)
		if (got < 0 && errno != EINTR && errno != EAGAIN)
			break;
	if (got < 0)
		got = -errno;
	close(fd);
	if (got < 0)
		return got;
	n = b->skel->bss->iter_n;
	if (n > BL_MAX_LISTENERS) {
		st.listeners_missed = MAX(st.listeners_missed, (uint64_t)(n - BL_MAX_LISTENERS));
		n = BL_MAX_LISTENERS;
	}
	for (i = 0; i < n; i++)
		fn(&b->iter_out[i]);
	return 0;
}

static void add_ino(struct listener *l, uint64_t ino)
{
	int i;

	for (i = 0; i < l->n_inos; i++)
		if (l->inos[i] == ino)
			return;
	if (l->n_inos < (int)ARRAY_SIZE(l->inos)) {
		l->inos[l->n_inos++] = ino;
		l->owner_done = false;
		st.owners_dirty = true;
	}
}

static struct listener *find_sock(int family, uint64_t ino)
{
	int i;

	for (i = 0; i < st.n; i++)
		if (st.ls[i].family == family && st.ls[i].ino == ino)
			return &st.ls[i];
	return NULL;
}

static struct listener *find_tcp(uint32_t netns, unsigned port, bool live)
{
	int i;

	for (i = 0; i < st.n; i++)
		if (st.ls[i].family == BL_TCP && st.ls[i].netns == netns && st.ls[i].port == port &&
		    !!st.ls[i].ino == live)
			return &st.ls[i];
	return NULL;
}

static void on_listener(const struct bl_listener *r)
{
	struct listener *l;

	if (r->family == BL_UNIX) {
		if (!r->path_len)
			return;	/* unbound listener: nobody can connect to it by name */
		l = find_sock(BL_UNIX, r->ino);
		if (!l) {
			l = add_listener(BL_UNIX);
			if (!l)
				return;
			l->ino = r->ino;
			l->netns = r->netns;
			memcpy(l->path, r->path, BL_PATH_LEN);
			l->path_len = MIN(r->path_len, (uint32_t)BL_PATH_LEN);
			if (l->path[0])	/* pathname: the kernel stores the NUL; stop at it */
				l->path_len = strnlen(l->path, l->path_len);
			l->file_ino = r->file_ino;
			l->file_dev = makedev(r->file_dev >> 20, r->file_dev & 0xfffff);
			set_addr(l, r);
		}
	} else {
		l = find_tcp(r->netns, r->port, true);
		if (l)
			l->retired = false;	/* the port has a listener again */
		if (!l) {
			l = add_listener(BL_TCP);
			if (!l)
				return;
			l->port = r->port;
			l->netns = r->netns;
			l->ino = r->ino;
		}
		if (!l->seen_now)
			set_addr(l, r);
	}
	if (!l->seen_now) {
		l->seen_now = true;
		l->qlen = 0;
		l->n_socks = 0;
		l->drops_now = 0;
		l->sk = r->sk;
		l->sk_drops0 = r->drops;
	}
	l->n_socks++;
	l->qlen = MAX(l->qlen, r->qlen);
	l->limit = r->limit;
	l->drops_now += r->drops;
	add_ino(l, r->ino);
}

/* One queue sample: both iterators, then bookkeeping. */
static int sample_listeners(struct bl_bpf *b)
{
	struct bl_port pv;
	int i, err;

	for (i = 0; i < st.n; i++)
		st.ls[i].seen_now = false;
	err = run_iter(b, b->iter_unix, on_listener);
	if (!err)
		err = run_iter(b, b->iter_tcp, on_listener);
	if (err)
		return err;
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];
		bool was = l->present;

		l->present = l->seen_now;
		if (!l->present) {
			l->qlen = 0;
			if (was && l->family == BL_TCP)
				bpf_map__delete_elem(b->skel->maps.tcp_ports, &l->port,
						     sizeof(l->port), 0);
			continue;
		}
		if (l->family == BL_TCP) {
			if (!was && !l->prev_drops && !l->drops_base)
				l->drops_base = l->drops_now;	/* first sight: baseline */
			l->prev_drops = l->drops_now;
		}
		l->peak = MAX(l->peak, l->qlen);
		l->watched = match_filters(l);
		if (l->family == BL_TCP && l->watched && b->mode == ATTACH_TRACEPOINT &&
		    (bpf_map__lookup_elem(b->skel->maps.tcp_ports, &l->port, sizeof(l->port),
					  &pv, sizeof(pv), 0) || pv.sk != l->sk)) {
			/* new (or replaced) listener: start counting from its sk_drops now */
			pv.sk = l->sk;
			pv.last_drops = l->sk_drops0;
			bpf_map__update_elem(b->skel->maps.tcp_ports, &l->port, sizeof(l->port),
					     &pv, sizeof(pv), BPF_ANY);
		}
	}
	return 0;
}

/* /proc/PID/comm, escaped (a comm may hold ESC, BEL or a newline: issue 16 item 3). */
static void proc_comm(int pid, char *out)
{
	char path[64], raw[BL_COMM_LEN + 1];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, sizeof(raw));
		close(fd);
	}
	if (n > 0 && raw[n - 1] == '\n')	/* the kernel's line end, not the comm's */
		n--;
	str_escape(raw, n > 0 ? n : 0, out, COMM_TXT);
}

/* Fill holders/owner of listeners with new inodes from /proc/PID/fd. */
static void resolve_owners(void)
{
	DIR *proc, *fds;
	struct dirent *p, *f;
	char dir[64], lnk[320], target[64];
	unsigned long long ino;
	int i, j, pid;
	ssize_t n;

	proc = opendir("/proc");
	if (!proc)
		return;
	for (i = 0; i < st.n; i++)
		if (!st.ls[i].owner_done)
			st.ls[i].n_holders = 0;
	while ((p = readdir(proc))) {
		pid = atoi(p->d_name);
		if (pid <= 0)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
		fds = opendir(dir);
		if (!fds)
			continue;
		while ((f = readdir(fds))) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(lnk, sizeof(lnk), "%s/%s", dir, f->d_name);
			n = readlink(lnk, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			if (sscanf(target, "socket:[%llu]", &ino) != 1)
				continue;
			for (i = 0; i < st.n; i++) {
				struct listener *l = &st.ls[i];

				if (l->owner_done)
					continue;
				for (j = 0; j < l->n_inos; j++)
					if (l->inos[j] == ino)
						break;
				if (j == l->n_inos)
					continue;
				for (j = 0; j < l->n_holders; j++)
					if (l->holders[j] == pid)
						break;
				if (j == l->n_holders && l->n_holders < MAX_HOLDERS)
					l->holders[l->n_holders++] = pid;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];
		int owner = 0;

		if (l->owner_done)
			continue;
		l->owner_done = true;
		for (j = 0; j < l->n_holders; j++)	/* the lowest pid: the master of a pool */
			if (!owner || l->holders[j] < owner)
				owner = l->holders[j];
		if (l->n_holders) {
			proc_comm(owner, l->owner_comm);
			/* keep the owner first in holders */
			for (j = 0; j < l->n_holders; j++)
				if (l->holders[j] == owner) {
					l->holders[j] = l->holders[0];
					l->holders[0] = owner;
					break;
				}
		}
		l->watched = l->present ? match_filters(l) : l->watched;
	}
	st.owners_dirty = false;
	st.last_owner_scan = now_ns();
}

static int owner_pid(const struct listener *l)
{
	return l->n_holders ? l->holders[0] : 0;
}

/* ------------------------------------------------------------------ counters */

static void comm_of(struct bl_bpf *b, uint32_t tgid, char *comm)
{
	char raw[BL_COMM_LEN] = {};

	if (!tgid) {
		strcpy(comm, "?");
		return;
	}
	if (bpf_map__lookup_elem(b->skel->maps.comms, &tgid, sizeof(tgid), raw, BL_COMM_LEN, 0)) {
		proc_comm(tgid, comm);
		return;
	}
	str_escape(raw, strnlen(raw, BL_COMM_LEN), comm, COMM_TXT);
}

static void val_add(struct bl_val *a, const struct bl_val *b)
{
	a->overflows += b->overflows;
	a->ack_overflows += b->ack_overflows;
	a->other_drops += b->other_drops;
	a->waits += b->waits;
	a->wait_ns += b->wait_ns;
	a->syn_retrans += b->syn_retrans;
}

static uint64_t overflows_of(const struct bl_val *v)
{
	return v->overflows + v->ack_overflows;
}

/*
 * The socket file a client's path named: stat the path in the client's mount
 * namespace (through /proc/PID/root of the client or of any process in that
 * namespace). Relative paths are not resolved (the client's cwd is unknown).
 */
static bool resolve_file(const struct bl_key *k, dev_t *dev, uint64_t *ino)
{
	static int last_pid;	/* the process that resolved the last foreign namespace */
	char p[BL_PATH_LEN + 48];
	struct dirent *e;
	struct stat sb;
	int pid = 0;
	DIR *d;

	if (k->path[0] != '/' || k->path_len >= BL_PATH_LEN)
		return false;
	if (k->mntns != st.mntns) {
		if (k->tgid && ns_inode(k->tgid, "mnt") == k->mntns)
			pid = k->tgid;
		else if (last_pid && ns_inode(last_pid, "mnt") == k->mntns)
			pid = last_pid;
		for (d = pid ? NULL : opendir("/proc"); d && (e = readdir(d));)
			if (atoi(e->d_name) > 0 && ns_inode(atoi(e->d_name), "mnt") == k->mntns)
				pid = atoi(e->d_name);
		if (d)
			closedir(d);
		if (!pid)
			return false;	/* nobody left in that namespace */
		last_pid = pid;
	}
	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/root%.*s", pid, (int)k->path_len, k->path);
	else
		snprintf(p, sizeof(p), "%.*s", (int)k->path_len, k->path);
	if (stat(p, &sb) || !S_ISSOCK(sb.st_mode))
		return false;
	*dev = sb.st_dev;
	*ino = sb.st_ino;
	return true;
}

/* The listener a count key belongs to: the live socket when one matches, else a
 * listener keyed like the count (created here). */
static struct listener *listener_of(const struct bl_key *k)
{
	struct listener *l;
	uint64_t ino;
	dev_t dev;
	int i;

	if (k->family == BL_TCP) {
		l = find_tcp(k->netns, k->port, true);
		if (!l)
			l = find_tcp(k->netns, k->port, false);
		if (l)
			return l;
		l = add_listener(BL_TCP);
		if (!l)
			return NULL;
		l->netns = k->netns;
		l->port = k->port;
		set_addr(l, NULL);
	} else {
		bool abstract = !k->path[0];
		bool file = !abstract && resolve_file(k, &dev, &ino);

		struct listener *closed = NULL;

		for (i = 0; i < st.n; i++) {
			l = &st.ls[i];
			if (l->family != BL_UNIX || !l->ino)
				continue;
			if (abstract ? l->netns == k->netns && same_name(l, k->path, k->path_len) :
			    file && l->file_ino == ino && l->file_dev == dev) {
				if (l->present)
					return l;
				closed = l;	/* a live one of that name wins */
			}
		}
		if (closed)
			return closed;
		for (i = 0; i < st.n; i++) {
			l = &st.ls[i];
			if (l->family == BL_UNIX && !l->ino && same_name(l, k->path, k->path_len) &&
			    (abstract ? l->netns == k->netns : l->mntns == k->mntns))
				return l;
		}
		l = add_listener(BL_UNIX);
		if (!l)
			return NULL;
		memcpy(l->path, k->path, BL_PATH_LEN);
		l->path_len = MIN(k->path_len, (uint32_t)BL_PATH_LEN);
		if (abstract)
			l->netns = k->netns;
		else
			l->mntns = k->mntns;
		set_addr(l, NULL);
	}
	l->owner_done = true;
	l->watched = match_filters(l);
	return l;
}

static struct client *client_add(struct client **arr, int *n, int *cap)
{
	struct client *c;

	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 8;

		c = realloc(*arr, nc * sizeof(*c));
		if (!c)
			return NULL;
		*arr = c;
		*cap = nc;
	}
	c = &(*arr)[(*n)++];
	memset(c, 0, sizeof(*c));
	return c;
}

/*
 * Keep an evicted client's counts (issue 16 item 6): per process for the first
 * MAX_GONE of a listener, then summed per comm with pid unknown, so a storm of
 * short-lived clients costs bounded memory.
 */
#define MAX_GONE 256

static void keep_gone(struct listener *l, const struct client *c)
{
	struct client *g;
	int i;

	if (l->n_gone >= MAX_GONE) {
		for (i = 0; i < l->n_gone; i++)
			if (!l->gone[i].tgid && !strcmp(l->gone[i].comm, c->comm)) {
				val_add(&l->gone[i].v, &c->v);
				return;
			}
	}
	g = client_add(&l->gone, &l->n_gone, &l->cap_gone);
	if (!g)
		return;
	*g = *c;
	if (l->n_gone > MAX_GONE)
		g->tgid = 0;
}

static bool process_gone(uint32_t tgid)
{
	return tgid && kill(tgid, 0) && errno == ESRCH;
}

/*
 * Read every counter; totals and client lists are rebuilt (the maps are
 * cumulative) on top of what was evicted. Keys of dead clients and of retired
 * listeners are deleted after reading, so the map holds live clients only.
 */
static int read_counts(struct bl_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus(), i, c, n_dead = 0, cap_dead = 0;
	struct bl_key key, next, *prev = NULL, *dead = NULL, *dk;
	struct bl_val *vals, sum;
	struct listener *l;
	struct client *cl;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < st.n; i++) {
		l = &st.ls[i];
		memset(&l->tot, 0, sizeof(l->tot));
		l->n_clients = 0;
		for (c = 0; c < l->n_gone; c++) {
			cl = client_add(&l->clients, &l->n_clients, &l->cap_clients);
			if (!cl)
				break;
			*cl = l->gone[c];
			val_add(&l->tot, &cl->v);
		}
	}
	while (!bpf_map__get_next_key(b->skel->maps.counts, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(b->skel->maps.counts, &key, sizeof(key), vals,
					 ncpu * sizeof(*vals), 0))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (c = 0; c < ncpu; c++)
			val_add(&sum, &vals[c]);
		l = listener_of(&key);
		if (!l)
			continue;
		val_add(&l->tot, &sum);
		cl = client_add(&l->clients, &l->n_clients, &l->cap_clients);
		if (!cl)
			continue;
		cl->tgid = key.tgid;
		cl->v = sum;
		comm_of(b, key.tgid, cl->comm);
		if (l->retired || process_gone(key.tgid)) {
			keep_gone(l, cl);
			if (n_dead == cap_dead) {
				cap_dead = cap_dead ? cap_dead * 2 : 64;
				dk = realloc(dead, cap_dead * sizeof(*dead));
				if (!dk)
					break;
				dead = dk;
			}
			dead[n_dead++] = key;
		}
	}
	/* after the walk: deleting during get_next_key would restart it */
	for (i = 0; i < n_dead; i++)
		bpf_map__delete_elem(b->skel->maps.counts, &dead[i], sizeof(dead[i]), 0);
	free(dead);
	free(vals);
	st.missed = b->skel->bss->missed_map_full;
	return 0;
}

static void read_netstat(unsigned long long out[2])
{
	char hdr[4096], val[4096], *hs, *vs, *h, *v;
	FILE *f = fopen("/proc/net/netstat", "r");

	st.netstat_ok = false;
	if (!f)
		return;
	while (fgets(hdr, sizeof(hdr), f) && fgets(val, sizeof(val), f)) {
		if (strncmp(hdr, "TcpExt:", 7))
			continue;
		h = strtok_r(hdr, " \n", &hs);
		v = strtok_r(val, " \n", &vs);
		while ((h = strtok_r(NULL, " \n", &hs)) && (v = strtok_r(NULL, " \n", &vs))) {
			if (!strcmp(h, "ListenOverflows"))
				out[0] = strtoull(v, NULL, 10);
			else if (!strcmp(h, "ListenDrops"))
				out[1] = strtoull(v, NULL, 10);
		}
		st.netstat_ok = true;
	}
	fclose(f);
}

static int cmp_clients(const void *a, const void *b)
{
	uint64_t x = overflows_of(&((const struct client *)a)->v) +
		     ((const struct client *)a)->v.waits;
	uint64_t y = overflows_of(&((const struct client *)b)->v) +
		     ((const struct client *)b)->v.waits;

	return x < y ? 1 : x > y ? -1 : 0;
}

static uint64_t listen_drops(const struct listener *l)
{
	return l->family == BL_TCP && l->prev_drops >= l->drops_base ?
	       l->prev_drops - l->drops_base : 0;
}

/* ------------------------------------------------------------------ output */

static void fmt_owner(const struct listener *l, char *buf, size_t len)	/* len >= COMM_TXT + 16 */
{
	if (owner_pid(l))
		snprintf(buf, len, "%s/%d%s", l->owner_comm, owner_pid(l),
			 l->n_holders > 1 ? "+" : "");
	else
		snprintf(buf, len, "-");
}

/* "comm/pid:n ..." in buf, whole entries only (never half an escape or character). */
static void fmt_clients(const struct listener *l, char *buf, size_t len, bool waits)
{
	char one[COMM_TXT + 48];
	size_t off = 0, k;
	int i;

	buf[0] = 0;
	for (i = 0; i < l->n_clients; i++) {
		const struct client *c = &l->clients[i];
		uint64_t n = waits ? c->v.waits : overflows_of(&c->v);

		if (!n)
			continue;
		if (c->tgid)
			k = snprintf(one, sizeof(one), "%s%s/%u:%llu", off ? " " : "", c->comm, c->tgid,
				     (unsigned long long)n);
		else if (strcmp(c->comm, "?"))	/* exited, counted per comm */
			k = snprintf(one, sizeof(one), "%s%s/exited:%llu", off ? " " : "", c->comm,
				     (unsigned long long)n);
		else
			k = snprintf(one, sizeof(one), "%sunknown:%llu", off ? " " : "",
				     (unsigned long long)n);
		if (off + k + 4 >= len) {
			snprintf(buf + off, len - off, " ...");
			return;
		}
		memcpy(buf + off, one, k + 1);
		off += k;
	}
	if (!off)
		snprintf(buf, len, "-");
}

/* The address as text, with the namespace when it is not udsprobe's own. */
static const char *addr_text(const struct listener *l, char *buf, size_t len)
{
	if (l->netns && l->netns != st.netns)
		snprintf(buf, len, "%s (netns %u)", l->addr, l->netns);
	else if (l->mntns && l->mntns != st.mntns)
		snprintf(buf, len, "%s (mntns %u)", l->addr, l->mntns);
	else
		snprintf(buf, len, "%s", l->addr);
	return buf;
}

static const char *family_name(int f)
{
	return f == BL_UNIX ? "unix" : "tcp";
}

static unsigned lines_since_header;

static void print_interval(FILE *out, double t)
{
	char owner[COMM_TXT + 16], clients[256], tbuf[16], addr[sizeof(st.ls->addr) + 32];
	time_t now = time(NULL);
	struct tm tm;
	bool any = false;
	int i;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];
		uint64_t d_ovf = overflows_of(&l->tot) - overflows_of(&l->prev);
		uint64_t d_wait = l->tot.waits - l->prev.waits;
		uint64_t d_syn = l->tot.syn_retrans - l->prev.syn_retrans;

		if (!l->watched || l->retired || (!d_ovf && !d_wait && !d_syn && !l->qlen))
			continue;
		if (!any && lines_since_header++ % 20 == 0)
			fprintf(out, "%-8s %-4s %-32s %-20s %5s %5s %5s %9s %6s %6s  %s\n", "TIME",
				"FAM", "ADDRESS", "OWNER", "QUEUE", "PEAK", "LIMIT", "OVERFLOWS",
				"WAITS", "SYNRTX", "CLIENTS (overflows, cumulative)");
		any = true;
		fmt_owner(l, owner, sizeof(owner));
		fmt_clients(l, clients, sizeof(clients), false);
		fprintf(out, "%-8s %-4s %-32s %-20s %5u %5u %5u %9llu %6llu %6llu  %s\n", tbuf,
			family_name(l->family), addr_text(l, addr, sizeof(addr)), owner, l->qlen,
			l->peak, l->limit, (unsigned long long)d_ovf, (unsigned long long)d_wait,
			(unsigned long long)d_syn, clients);
	}
	if (st.missed > st.missed_shown) {
		fprintf(out, "%-8s warning: %llu events not counted in this interval (a BPF map "
			"was full; %llu since start)\n", tbuf,
			(unsigned long long)(st.missed - st.missed_shown),
			(unsigned long long)st.missed);
		st.missed_shown = st.missed;
	}
	if (!any) {
		fprintf(out, "%-8s no overflows, no queued connections (%.0f s)\n", tbuf, t);
		lines_since_header = 0;	/* next active line gets a header */
	}
	fflush(out);
}

static void json_listener_common(struct jw *w, const struct listener *l)
{
	jw_str(w, "family", family_name(l->family));
	jw_str(w, "address", l->addr);
	if (l->netns)
		jw_u64(w, "netns", l->netns);
	else
		jw_null(w, "netns");	/* a pathname known only from counts */
	if (owner_pid(l)) {
		jw_i64(w, "owner_pid", owner_pid(l));
		jw_str(w, "owner_comm", l->owner_comm);
	} else {
		jw_null(w, "owner_pid");
		jw_null(w, "owner_comm");
	}
	jw_u64(w, "limit", l->limit);
}

static void json_clients(struct jw *w, const struct listener *l)
{
	int i;

	jw_arr_begin(w, "clients");
	for (i = 0; i < l->n_clients; i++) {
		if (!overflows_of(&l->clients[i].v))
			continue;
		jw_obj_begin(w, NULL);
		if (l->clients[i].tgid)
			jw_i64(w, "pid", l->clients[i].tgid);
		else
			jw_null(w, "pid");
		if (strcmp(l->clients[i].comm, "?"))	/* pid null, comm set: exited, per comm */
			jw_str(w, "comm", l->clients[i].comm);
		else
			jw_null(w, "comm");
		jw_u64(w, "count", overflows_of(&l->clients[i].v));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void json_interval(FILE *f, double t)
{
	struct jw w;
	int i;

	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];

		if (!l->watched || l->retired)
			continue;
		jw_init(&w, f, false);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "event", "interval");
		jw_double(&w, "time_s", t);
		json_listener_common(&w, l);
		if (l->ino && !l->present)
			jw_bool(&w, "closed", true);	/* its last line */
		jw_u64(&w, "queue", l->qlen);
		jw_u64(&w, "peak_queue", l->peak);
		jw_u64(&w, "overflows", overflows_of(&l->tot));
		jw_u64(&w, "overflows_delta", overflows_of(&l->tot) - overflows_of(&l->prev));
		if (l->family == BL_UNIX) {
			jw_u64(&w, "connect_waits", l->tot.waits);
			jw_double(&w, "connect_wait_s", l->tot.wait_ns / 1e9);
		} else {
			jw_u64(&w, "syn_overflows", l->tot.overflows);
			jw_u64(&w, "ack_overflows", l->tot.ack_overflows);
			jw_u64(&w, "other_listen_drops", l->tot.other_drops);
			jw_u64(&w, "listen_drops", listen_drops(l));
			jw_u64(&w, "syn_retransmits", l->tot.syn_retrans);
		}
		json_clients(&w, l);
		jw_obj_end(&w);	/* ends the line */
	}
	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "event", "stats");
	jw_double(&w, "time_s", t);
	jw_u64(&w, "dropped_events", st.missed);
	jw_u64(&w, "listeners_missed", st.listeners_missed);
	jw_obj_end(&w);
	fflush(f);
}

static void json_summary(FILE *f, struct bl_bpf *b, double t)
{
	struct jw w;
	int i;

	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];

		if (!l->watched)
			continue;
		jw_init(&w, f, false);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "event", "summary");
		json_listener_common(&w, l);
		jw_u64(&w, "peak_queue", l->peak);
		jw_u64(&w, "overflows", overflows_of(&l->tot));
		json_clients(&w, l);
		jw_obj_end(&w);	/* ends the line */
	}
	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "event", "run");
	jw_str(&w, "attach_mode", attach_mode_names[b->mode]);
	jw_str(&w, "attach_reason", b->why);
	jw_str(&w, "kernel", kernel_release());
	jw_double(&w, "duration_s", t);
	jw_bool(&w, "tcp_listen_overflow_reason", b->reason > 0);
	if (st.netstat_ok) {
		jw_u64(&w, "netstat_listen_overflows", st.netstat[0] - st.netstat0[0]);
		jw_u64(&w, "netstat_listen_drops", st.netstat[1] - st.netstat0[1]);
	}
	jw_u64(&w, "missed", st.missed);
	jw_u64(&w, "dropped_events", st.missed);
	jw_u64(&w, "listeners_missed", st.listeners_missed);
	jw_u64(&w, "somaxconn", st.somaxconn);
	jw_obj_end(&w);
	fflush(f);
}

static void prom_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* The netns label: two listeners of one name in two namespaces are two series. */
static void prom_netns(FILE *f, const struct listener *l)
{
	if (l->netns)
		fprintf(f, "netns=\"%u\"", l->netns);
	else
		fprintf(f, "netns=\"\"");
}

static void prom_labels(FILE *f, const struct listener *l)
{
	fprintf(f, "{family=\"%s\",address=\"", family_name(l->family));
	prom_label(f, l->addr);
	fprintf(f, "\",owner_comm=\"");
	prom_label(f, owner_pid(l) ? l->owner_comm : "");
	fprintf(f, "\",owner_pid=\"%d\",", owner_pid(l));
	prom_netns(f, l);
	fputc('}', f);
}

static void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP udsprobe_backlog_%s %s\n# TYPE udsprobe_backlog_%s %s\n", name, help,
		name, type);
}

/*
 * --prom PATH must be a regular file or not exist yet: rename() would replace a
 * device node (/dev/full) or a symlink planted there. 0, or -EEXIST with msg set.
 */
static int prom_target_ok(const char *path, char *msg, size_t len)
{
	struct stat sb;

	if (lstat(path, &sb)) {
		if (errno == ENOENT)
			return 0;
		snprintf(msg, len, "%s", strerror(errno));
		return -errno;
	}
	if (S_ISREG(sb.st_mode))
		return 0;
	snprintf(msg, len, "it exists and is not a regular file (%s); give the path of a regular "
		 "file, e.g. in node_exporter's textfile directory",
		 S_ISLNK(sb.st_mode) ? "a symbolic link" : S_ISDIR(sb.st_mode) ? "a directory" :
		 S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a special file");
	return -EEXIST;
}

/*
 * A new temp file beside PATH: mkstemp's O_CREAT|O_EXCL never opens an existing
 * name, so a symlink planted in a shared directory is not followed, and the
 * name is not predictable. Mode 0644 so the textfile collector can read it.
 */
static FILE *prom_tmpfile(const char *path, char *tmp, size_t len)
{
	const char *slash = strrchr(path, '/');
	int fd, n;
	FILE *f;

	if (slash)
		n = snprintf(tmp, len, "%.*s/.%s.tmp.XXXXXX", (int)(slash - path), path, slash + 1);
	else
		n = snprintf(tmp, len, ".%s.tmp.XXXXXX", path);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		return NULL;
	if (fchmod(fd, 0644) || !(f = fdopen(fd, "w"))) {
		n = errno;
		close(fd);
		unlink(tmp);
		errno = n;
		return NULL;
	}
	return f;
}

static int write_prom(const char *path, struct bl_bpf *b)
{
	char tmp[4200], msg[256];
	FILE *f;
	int i, j, k;
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "limit", "gauge", "Listen queue limit (sk_max_ack_backlog)." },
		{ "queue_length", "gauge", "Connections waiting in the listen queue now." },
		{ "queue_peak", "gauge", "Highest listen queue length seen since udsprobe started." },
		{ "overflows_total", "counter",
		  "Connection attempts refused (unix EAGAIN) or dropped (tcp) at a full listen queue." },
		{ "connect_waits_total", "counter",
		  "Blocking AF_UNIX connects that slept waiting for room in the queue." },
		{ "connect_wait_seconds_total", "counter", "Time those connects slept." },
		{ "syn_retransmits_total", "counter", "Local clients' SYN retransmits to this port." },
		{ "listen_drops_total", "counter",
		  "Kernel per-socket drop counter (sk_drops) of a TCP listener, since start." },
	};

	if (prom_target_ok(path, msg, sizeof(msg)))
		return -EEXIST;		/* replaced since start: checked and said there */
	f = prom_tmpfile(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	for (k = 0; k < (int)ARRAY_SIZE(m); k++) {
		prom_head(f, m[k].name, m[k].type, m[k].help);
		for (i = 0; i < st.n; i++) {
			const struct listener *l = &st.ls[i];
			double v;

			if (!l->watched || l->retired)
				continue;
			if ((k == 4 || k == 5) && l->family != BL_UNIX)
				continue;
			if ((k == 6 || k == 7) && l->family != BL_TCP)
				continue;
			switch (k) {
			case 0: v = l->limit; break;
			case 1: v = l->qlen; break;
			case 2: v = l->peak; break;
			case 3: v = overflows_of(&l->tot); break;
			case 4: v = l->tot.waits; break;
			case 5: v = l->tot.wait_ns / 1e9; break;
			case 6: v = l->tot.syn_retrans; break;
			default: v = listen_drops(l); break;
			}
			fprintf(f, "udsprobe_backlog_%s", m[k].name);
			prom_labels(f, l);
			fprintf(f, " %.9g\n", v);
		}
	}
	prom_head(f, "client_overflows_total", "counter",
		    "Overflows per listener and client command (all its processes).");
	for (i = 0; i < st.n; i++) {
		const struct listener *l = &st.ls[i];

		if (!l->watched || l->retired)
			continue;
		for (j = 0; j < l->n_clients; j++) {
			uint64_t n = 0;
			int x;

			/* sum clients of the same comm; print at the first of them */
			for (x = 0; x < j; x++)
				if (!strcmp(l->clients[x].comm, l->clients[j].comm))
					break;
			if (x < j)
				continue;
			for (x = j; x < l->n_clients; x++)
				if (!strcmp(l->clients[x].comm, l->clients[j].comm))
					n += overflows_of(&l->clients[x].v);
			if (!n)
				continue;
			fprintf(f, "udsprobe_backlog_client_overflows_total{family=\"%s\",address=\"",
				family_name(l->family));
			prom_label(f, l->addr);
			fprintf(f, "\",client_comm=\"");
			prom_label(f, l->clients[j].comm);
			fprintf(f, "\",");
			prom_netns(f, l);
			fprintf(f, "} %llu\n", (unsigned long long)n);
		}
	}
	if (st.netstat_ok) {
		prom_head(f, "netstat_listen_overflows_total", "counter",
			    "TcpExt ListenOverflows of this network namespace, since start.");
		fprintf(f, "udsprobe_backlog_netstat_listen_overflows_total %llu\n",
			st.netstat[0] - st.netstat0[0]);
		prom_head(f, "netstat_listen_drops_total", "counter",
			    "TcpExt ListenDrops of this network namespace, since start.");
		fprintf(f, "udsprobe_backlog_netstat_listen_drops_total %llu\n",
			st.netstat[1] - st.netstat0[1]);
	}
	prom_head(f, "dropped_events_total", "counter",
		    "Events not counted because a BPF map was full (should stay 0).");
	fprintf(f, "udsprobe_backlog_dropped_events_total %llu\n", (unsigned long long)st.missed);
	prom_head(f, "info", "gauge", "Attach mode udsprobe uses.");
	fprintf(f, "udsprobe_backlog_info{attach_mode=\"%s\",kernel=\"", attach_mode_names[b->mode]);
	prom_label(f, kernel_release());
	fprintf(f, "\"} 1\n");
	prom_head(f, "last_update_timestamp_seconds", "gauge", "When udsprobe wrote this file.");
	fprintf(f, "udsprobe_backlog_last_update_timestamp_seconds %lld\n", (long long)time(NULL));
	if (ferror(f) | fclose(f)) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

static void print_recommendations(FILE *out, const struct listener *l)
{
	bool php = strstr(l->owner_comm, "php") != NULL;
	bool capped = st.somaxconn > 0 && l->limit == (unsigned)st.somaxconn;
	uint64_t ovf = overflows_of(&l->tot);
	int i;

	if (ovf) {
		fprintf(out, "  - %s's listen queue (limit %u) was full %llu times: ",
			owner_pid(l) ? l->owner_comm : "the listener", l->limit,
			(unsigned long long)ovf);
		if (l->family == BL_UNIX)
			fprintf(out, "each was a connect() that failed at once with EAGAIN "
				"(nginx logs \"(11: Resource temporarily unavailable) while connecting "
				"to upstream\" and answers 502).\n");
		else
			fprintf(out, "each was a SYN or handshake ACK the kernel dropped; clients retry "
				"SYNs after 1 s, 2 s, 4 s..., so this shows up as latency, not errors.\n");
		if (capped)
			fprintf(out, "  - The limit equals net.core.somaxconn (%d): the program probably "
				"asked for more and the kernel capped it. Raise it: sysctl -w "
				"net.core.somaxconn=%d (and persist it in /etc/sysctl.d/).\n",
				st.somaxconn, st.somaxconn * 4);
		else if (php)
			fprintf(out, "  - Raise listen.backlog in the php-fpm pool (now %u; up to "
				"net.core.somaxconn = %d) so bursts wait in the queue instead of failing.\n",
				l->limit, st.somaxconn);
		else
			fprintf(out, "  - Raise the listen() backlog of %s (now %u; the kernel caps it at "
				"net.core.somaxconn = %d).\n", owner_pid(l) ? l->owner_comm : "the server",
				l->limit, st.somaxconn);
		if (php)
			fprintf(out, "  - The queue fills when every php-fpm worker is busy: raise "
				"pm.max_children (check memory per worker first), or make the slow "
				"requests faster; a bigger queue only buys time.\n");
		else
			fprintf(out, "  - The queue fills when the server accepts slower than clients "
				"connect: add workers or accept threads to %s.\n",
				owner_pid(l) ? l->owner_comm : "the server");
		for (i = 0; i < l->n_clients; i++)
			if (strstr(l->clients[i].comm, "nginx") && overflows_of(&l->clients[i].v)) {
				fprintf(out, "  - nginx opens a new upstream connection per request: "
					"an upstream block with `keepalive N;` (plus `fastcgi_keep_conn on;` "
					"or `proxy_http_version 1.1;` and an empty Connection header) reuses "
					"connections and takes most connects off this queue.\n");
				break;
			}
	}
	if (l->tot.waits)
		fprintf(out, "  - %llu blocking connects waited for room, %.3f ms on average: the "
			"queue was full and callers stalled instead of failing.\n",
			(unsigned long long)l->tot.waits, l->tot.wait_ns / 1e6 / l->tot.waits);
	if (l->tot.syn_retrans && !ovf)
		fprintf(out, "  - Clients retransmitted %llu SYNs to this port: a full queue "
			"or a lost SYN; each retransmit costs the client at least 1 s.\n",
			(unsigned long long)l->tot.syn_retrans);
}

static int cmp_listeners(const void *a, const void *b)
{
	const struct listener *x = a, *y = b;
	uint64_t ox = overflows_of(&x->tot) + x->tot.waits, oy = overflows_of(&y->tot) + y->tot.waits;

	if (ox != oy)
		return ox < oy ? 1 : -1;
	if (x->family != y->family)
		return x->family - y->family;
	return strcmp(x->addr, y->addr);
}

static void print_summary(FILE *out, struct bl_bpf *b, double t)
{
	char owner[COMM_TXT + 16], clients[512], addr[sizeof(st.ls->addr) + 32];
	int i, shown = 0;
	bool any = false;

	fprintf(out, "\nSummary after %.1f s (attach mode %s):\n", t, attach_mode_names[b->mode]);
	fprintf(out, "%-4s %-36s %-22s %5s %5s %9s %6s  %s\n", "FAM", "ADDRESS", "OWNER", "LIMIT",
		"PEAK", "OVERFLOWS", "WAITS", "CLIENTS (overflows)");
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];

		if (!l->watched)
			continue;
		shown++;
		fmt_owner(l, owner, sizeof(owner));
		fmt_clients(l, clients, sizeof(clients), false);
		fprintf(out, "%-4s %-36s %-22s %5u %5u %9llu %6llu  %s\n", family_name(l->family),
			addr_text(l, addr, sizeof(addr)), owner, l->limit, l->peak, (unsigned long long)overflows_of(&l->tot),
			(unsigned long long)l->tot.waits, clients);
	}
	if (!shown)
		fprintf(out, "(no listener matched %s)\n",
			opts.n_unix || opts.n_ports || opts.n_pids ? "the filters" : "");
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];

		if (!l->watched)
			continue;
		if (l->family == BL_UNIX && l->tot.waits) {
			fmt_clients(l, clients, sizeof(clients), true);
			fprintf(out, "%s: %llu blocking connects waited %.3f ms in total (%s)\n",
				addr_text(l, addr, sizeof(addr)),
				(unsigned long long)l->tot.waits, l->tot.wait_ns / 1e6, clients);
		}
		if (l->family == BL_TCP && (overflows_of(&l->tot) || listen_drops(l) ||
					    l->tot.other_drops || l->tot.syn_retrans))
			fprintf(out, "%s: %llu overflows = %llu SYNs + %llu handshake ACKs dropped at a "
				"full accept queue; %llu other listen drops; the listener's own drop "
				"counter (sk_drops) +%llu; client SYN retransmits %llu\n",
				addr_text(l, addr, sizeof(addr)),
				(unsigned long long)overflows_of(&l->tot),
				(unsigned long long)l->tot.overflows,
				(unsigned long long)l->tot.ack_overflows,
				(unsigned long long)l->tot.other_drops,
				(unsigned long long)listen_drops(l),
				(unsigned long long)l->tot.syn_retrans);
	}
	if (st.netstat_ok)
		fprintf(out, "TCP namespace counters: ListenOverflows +%llu, ListenDrops +%llu\n",
			st.netstat[0] - st.netstat0[0], st.netstat[1] - st.netstat0[1]);
	if (st.missed)
		fprintf(out, "warning: %llu events not counted (a BPF map was full)\n",
			(unsigned long long)st.missed);
	if (st.listeners_missed)
		fprintf(out, "warning: more than %d listeners: %llu were not watched\n",
			BL_MAX_LISTENERS, (unsigned long long)st.listeners_missed);
	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];

		if (!l->watched || !(overflows_of(&l->tot) || l->tot.waits || l->tot.syn_retrans))
			continue;
		if (!any)
			fprintf(out, "\nRecommendations:\n");
		any = true;
		fprintf(out, "%s %s:\n", family_name(l->family), addr_text(l, addr, sizeof(addr)));
		print_recommendations(out, l);
	}
	if (!any)
		fprintf(out, "\nNo listen queue overflowed%s.\n",
			st.netstat_ok && st.netstat[0] != st.netstat0[0] ?
			" among the watched listeners (ListenOverflows rose elsewhere)" : "");
	fflush(out);
}

/* ------------------------------------------------------------------ main loop */

static void listener_free(struct listener *l)
{
	free(l->clients);
	free(l->gone);
}

/*
 * Listeners that closed were reported once (this interval, "closed": true) and
 * are now forgotten (issue 16 item 7): a listener created and closed every 5 ms
 * must not grow every later line. One that overflowed stays for the summary,
 * retired: its counts move to user space (read_counts evicts its keys).
 */
static void retire_closed(struct bl_bpf *b)
{
	int i, n = 0;

	for (i = 0; i < st.n; i++) {
		struct listener *l = &st.ls[i];
		const struct bl_val *t = &l->tot;
		bool events = t->overflows || t->ack_overflows || t->other_drops || t->waits ||
			      t->syn_retrans || listen_drops(l);

		if (l->ino && !l->present) {
			if (!events) {
				listener_free(l);
				continue;
			}
			l->retired = true;
		}
		if (n != i)
			st.ls[n] = *l;
		n++;
	}
	st.n = n;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	if (stop) {	/* second Ctrl-C: leave now */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	stop = 1;
}

static int read_somaxconn(void)
{
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

int backlog_main(const char *json_path, double duration_s, const char *attach, int verbose)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct bl_bpf b = {};
	enum attach_mode want = ATTACH_AUTO;
	FILE *json = NULL, *out = stdout;
	uint64_t next_sample, next_report, end_ns = 0, t0;
	double interval = opts.interval_s ? opts.interval_s : 1.0;
	int i, err, ret = 1;
	bool write_failed = false;

	if (!attach)
		attach = opts.attach;
	if (attach) {
		i = attach_mode_parse(attach);
		if (i < 0) {
			fprintf(stderr, "udsprobe: --attach: unknown mode '%s' (valid: auto fentry "
				"kprobe tracepoint)\nTry 'udsprobe --help' for more information.\n",
				attach);
			return 2;
		}
		want = i;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "udsprobe: --backlog needs root (CAP_BPF and CAP_PERFMON): run it "
			"with sudo\n");
		return 1;
	}
	if (json_path) {
		if (!strcmp(json_path, "-")) {
			json = stdout;
			out = stderr;	/* keep stdout pure JSON lines */
		} else {
			json = fopen(json_path, "w");
			if (!json) {
				fprintf(stderr, "udsprobe: cannot write --json %s: %s\n", json_path,
					strerror(errno));
				return 1;
			}
		}
	}
	if (opts.prom_path) {
		char msg[256];

		if (prom_target_ok(opts.prom_path, msg, sizeof(msg))) {
			fprintf(stderr, "udsprobe: cannot write --prom %s: %s\n", opts.prom_path, msg);
			if (json && json != stdout)
				fclose(json);
			return 1;
		}
	}
	libbpf_setup(verbose);	/* -v: libbpf warnings, -vv: debug (as for --compare) */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&st, 0, sizeof(st));
	st.somaxconn = read_somaxconn();
	st.netns = ns_inode(0, "net");
	st.mntns = ns_inode(0, "mnt");
	err = bl_bpf_setup(&b, want);
	if (err)
		goto out;
	read_netstat(st.netstat0);
	memcpy(st.netstat, st.netstat0, sizeof(st.netstat));
	err = sample_listeners(&b);
	if (err) {
		fprintf(stderr, "udsprobe: reading listeners failed: %s\n", strerror(-err));
		goto out;
	}
	resolve_owners();
	if (opts.prom_path && (err = write_prom(opts.prom_path, &b))) {
		fprintf(stderr, "udsprobe: cannot write --prom %s: %s\n", opts.prom_path,
			strerror(-err));
		goto out;
	}
	{
		int n = 0;

		for (i = 0; i < st.n; i++)
			n += st.ls[i].watched;
		fprintf(out, "udsprobe --backlog: attach mode %s (%s); kernel %s; watching %d "
			"listener%s; %s\n", attach_mode_names[b.mode], b.why, kernel_release(), n,
			n == 1 ? "" : "s", duration_s ? "until --duration" : "Ctrl-C to stop");
		if (b.reason <= 0 && b.mode == ATTACH_TRACEPOINT)
			fprintf(out, "note: this kernel has no TCP_LISTEN_OVERFLOW drop reason: a dropped "
				"handshake ACK counts once per segment (see docs/BACKLOG.md)\n");
		fflush(out);
	}

	t0 = st.start_ns = now_ns();
	next_sample = t0 + SAMPLE_NS;
	next_report = t0 + (uint64_t)(interval * 1e9);
	if (duration_s)
		end_ns = t0 + (uint64_t)(duration_s * 1e9);
	while (!stop) {
		uint64_t now = now_ns(), wake = MIN(next_sample, next_report);
		struct timespec ts;

		if (end_ns && now >= end_ns)
			break;
		if (end_ns)
			wake = MIN(wake, end_ns);
		if (wake > now) {
			ts.tv_sec = (wake - now) / 1000000000ull;
			ts.tv_nsec = (wake - now) % 1000000000ull;
			nanosleep(&ts, NULL);	/* EINTR on Ctrl-C: loop re-checks */
			continue;
		}
		if (now >= next_sample) {
			if (sample_listeners(&b) == 0 && st.owners_dirty &&
			    now - st.last_owner_scan > 1000000000ull)
				resolve_owners();
			next_sample += SAMPLE_NS;
			if (next_sample <= now)
				next_sample = now + SAMPLE_NS;
		}
		if (now >= next_report) {
			double t = (now - t0) / 1e9;

			read_counts(&b);
			read_netstat(st.netstat);
			for (i = 0; i < st.n; i++)	/* an overflow means qlen > limit then */
				if (overflows_of(&st.ls[i].tot) > overflows_of(&st.ls[i].prev))
					st.ls[i].peak = MAX(st.ls[i].peak, st.ls[i].limit + 1);
			if (!opts.quiet)
				print_interval(out, t);
			if (json && json != stdout)
				json_interval(json, t);
			if (opts.prom_path && (err = write_prom(opts.prom_path, &b)) &&
			    !write_failed) {
				fprintf(stderr, "udsprobe: cannot write --prom %s: %s\n",
					opts.prom_path, err == -EEXIST ? "it is no longer a regular "
					"file" : strerror(-err));
				write_failed = true;
			}
			for (i = 0; i < st.n; i++)
				st.ls[i].prev = st.ls[i].tot;
			retire_closed(&b);
			next_report += (uint64_t)(interval * 1e9);
			if (next_report <= now)
				next_report = now + (uint64_t)(interval * 1e9);
		}
	}

	/* final read: everything counted up to now */
	sample_listeners(&b);
	if (st.owners_dirty)
		resolve_owners();
	read_counts(&b);
	read_netstat(st.netstat);
	for (i = 0; i < st.n; i++) {
		if (overflows_of(&st.ls[i].tot))
			st.ls[i].peak = MAX(st.ls[i].peak, st.ls[i].limit + 1);
		if (st.ls[i].n_clients)
			qsort(st.ls[i].clients, st.ls[i].n_clients, sizeof(struct client),
			      cmp_clients);
	}
	qsort(st.ls, st.n, sizeof(*st.ls), cmp_listeners);
	{
		double t = (now_ns() - t0) / 1e9;

		print_summary(out, &b, t);
		if (json)
			json_summary(json, &b, t);
		if (opts.prom_path && (err = write_prom(opts.prom_path, &b))) {
			fprintf(stderr, "udsprobe: cannot write --prom %s: %s\n", opts.prom_path,
				err == -EEXIST ? "it is no longer a regular file" : strerror(-err));
			write_failed = true;
		}
	}
	if (json && (ferror(json) || fflush(json))) {
		fprintf(stderr, "udsprobe: writing --json %s failed\n", json_path);
		write_failed = true;
	}
	ret = write_failed ? 1 : 0;
out:
	bl_bpf_close(&b);
	capability_free();
	for (i = 0; i < st.n; i++)
		listener_free(&st.ls[i]);
	free(st.ls);
	memset(&st, 0, sizeof(st));
	if (json && json != stdout)
		fclose(json);
	return ret;
}
