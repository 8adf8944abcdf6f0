/* --backlog's BPF side: mode choice, load/attach, iterators (layer 3). */
#ifndef UDSPROBE_BACKLOG_BPF_H
#define UDSPROBE_BACKLOG_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "attach.h"
#include "backlog.h"	/* enum bl_source */
#include "../bpf/backlog.h"

struct backlog_bpf;
struct bpf_link;

#define BL_MAX_PROGS	24	/* programs one mode attaches, at most */

struct bl_bpf {
	struct backlog_bpf *skel;
	struct bpf_link *links[BL_MAX_PROGS];
	int n_links;
	struct bpf_link *iter_unix, *iter_tcp;
	enum attach_mode mode;
	int reason;		/* TCP_LISTEN_OVERFLOW value, or -1 */
	bool v6;		/* tcp_v6_syn_recv_sock exists (IPv6 built in or loaded) */
	char why[512];		/* how the mode was chosen */
	enum bl_source source;	/* asked for (set before bl_bpf_setup) */
	bool unix_diag;		/* chosen: AF_UNIX listeners from sock_diag, no iter_unix */
	char source_why[96];	/* why sock_diag (empty with iter/unix) */
	bool tcp_drops;		/* TCP listen drops are counted (not: tracepoint mode, old kernel) */
	char tcp_drops_why[160];	/* why not (empty when counted) */
	bool unix_depth;	/* AF_UNIX arrival depths are seen (not: tracepoint mode before 6.6) */
	const struct bl_listener *iter_out;	/* the listeners array map, mmapped */
	size_t iter_len;
};

/* Choose the mode (auto: fentry -> kprobe -> tracepoint) and the AF_UNIX source (b->source),
 * load and attach its programs and the iterators. 0, or -errno after saying why on stderr. */
int bl_bpf_setup(struct bl_bpf *b, enum attach_mode want);
void bl_bpf_close(struct bl_bpf *b);
/* The programs of one mode, by skeleton field, into p[] (room for BL_MAX_PROGS); *n of them.
 * v6: also tcp_v6_syn_recv_sock's; tcp_drops: tracepoint mode's TCP drop programs too. */
struct bpf_program;
/* Tracepoint mode can count TCP listen drops here (tp_consume_skb and tp_kfree_skb load:
 * BPF compare-and-exchange, kfree_skb's drop reason); false with why. */
bool bl_tp_tcp_drops(char *why, size_t len);
void bl_mode_programs(struct backlog_bpf *skel, enum attach_mode mode, bool v6, bool tcp_drops,
		      struct bpf_program **p, int *n);

#endif
