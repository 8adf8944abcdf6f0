/*
 * The stage table: which boundary ends which stage on each transport, what marks it in each
 * attach mode, how merged stages are named, and the --list-stages text. Pure data and string
 * work, no BPF: the stage tracer (compare/tracer.c), --trace's flows (trace/trace_collect.c)
 * and the unit tests use it.
 */
#ifndef UDSPROBE_STAGE_TABLE_H
#define UDSPROBE_STAGE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>	/* stages.h uses __u32/__u64 and includes nothing */

#include "stages.h"	/* enum boundary, shared with stages.bpf.c */

/* The two transports every stage is named for (the workload's, and --trace's flows). */
enum transport { TR_UNIX, TR_TCP, TR__COUNT };

#define STAGE_NAME_LEN 96
/* TCP: the wait for a NET_RX softirq that ran outside the send (ksoftirqd, a later irq exit);
 * replaces the stage ending at the softirq for those messages (function modes add ";wait"). */
#define SOFTIRQ_DEFERRED_STAGE "rx_softirq;deferred"

/* What marks each boundary, and the name of the stage that ends there. */
struct stage_boundary {
	const char *stage[TR__COUNT];	/* stage ending here; NULL: not on this transport's path */
	const char *func[TR__COUNT];	/* fentry/kprobe mode: function marking it */
	const char *tp[TR__COUNT];	/* tracepoint mode: tracepoint marking it */
	const char *leaf[TR__COUNT];	/* function-level leaf of the stage ending here */
	bool always;			/* syscalls, scheduler, computed: every mode */
	bool copy;			/* the stage ending here moves the payload (leaf level) */
	const char *doc;
};

/* Boundary b (enum boundary, 0 .. B__COUNT-1). */
const struct stage_boundary *stage_boundary(int b);
/* The function (tracepoint == false) or tracepoint marking b on t, or NULL. */
const char *stage_marker(int b, enum transport t, bool tracepoint);
/* The older name of a marker function renamed since 5.10 (netif_rx for __netif_rx), or NULL:
 * the tracer probes it on kernels that lack the new name. */
const char *stage_func_older(const char *func);
/*
 * Name of the stage ending at boundary last on t, absorbing the boundaries after prev that
 * the mode cannot see: "send;syscall", "send;syscall+sock" (merged), with function_level
 * "send;sock;tcp_sendmsg" (the leaf function). per_call: stream mode's per-call attribution.
 */
void stage_name(enum transport t, int prev, int last, bool per_call, bool function_level,
		char *out, size_t len);
/* A stage on TCP's network path only (TCP/IP output, loopback device, receive softirq, merged
 * names too), from the table: a leaf of it is a stage of TCP's path and of none of UDS's. UDS
 * hands the skb straight to the peer's queue. */
bool stage_tcp_only(const char *name);
/* A payload copy stage, from the table's copy column: recv;copy (and its leaves), UDS's
 * send;sock;skb_copy_datagram_from_iter at function level, bulk;send_copy and bulk;recv_copy. */
bool stage_is_copy(const char *name);
/* The slices of a message sent in several chunks, in --compare's C_BULK_* and --trace's
 * enum fl_bulk order (sender running, receiver running, sender asleep for space, neither). */
#define STAGE_NR_BULK 4
extern const char *const stage_bulk_names[STAGE_NR_BULK];
enum { STAGE_BULK_SEND_COPY, STAGE_BULK_RECV_COPY, STAGE_BULK_WAIT_SPACE, STAGE_BULK_WAIT_CPU };
/* Which slice name is (STAGE_BULK_*), or -1 for a stage that is not a slice. */
int stage_bulk_slice(const char *name);
/* --list-stages */
void stages_list(FILE *f);

#endif
