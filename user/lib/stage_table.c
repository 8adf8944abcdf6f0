// SPDX-License-Identifier: GPL-2.0
/*
 * The stage table: one row per boundary of bpf/stages.h, naming the stage that ends there on
 * each transport and what marks it in each attach mode, so the three modes and both transports
 * line up. docs/STAGES.md explains the model.
 */
#include <stdio.h>
#include <string.h>

#include "stage_table.h"

const char *const stage_bulk_names[STAGE_NR_BULK] = {
	[STAGE_BULK_SEND_COPY] = "bulk;send_copy", [STAGE_BULK_RECV_COPY] = "bulk;recv_copy",
	[STAGE_BULK_WAIT_SPACE] = "bulk;wait_space", [STAGE_BULK_WAIT_CPU] = "bulk;wait_cpu",
};

int stage_bulk_slice(const char *name)
{
	int i;

	for (i = 0; i < STAGE_NR_BULK; i++)
		if (!strcmp(name, stage_bulk_names[i]))
			return i;
	return -1;
}

#define BOTH(x) { x, x }
static const struct stage_boundary boundaries[B__COUNT] = {
	[B_SEND_ENTER] = { .always = true, .doc = "send syscall entry (message starts)" },
	[B_PROTO] = { BOTH("send;syscall"), { "unix_stream_sendmsg", "tcp_sendmsg" },
		      { NULL, "tcp_sendmsg_locked" }, .doc = "syscall entry to the protocol's sendmsg" },
	[B_U_ALLOC] = { { "send;sock" }, { "sock_alloc_send_pskb" }, .leaf = { "unix_stream_sendmsg" },
			.doc = "unix_stream_sendmsg up to skb allocation" },
	[B_U_COPY] = { { "send;sock" }, { "skb_copy_datagram_from_iter" },
		       .leaf = { "sock_alloc_send_pskb" }, .doc = "skb allocation" },
	[B_U_QUEUE] = { { "send;sock" }, { "skb_queue_tail" }, .leaf = { "skb_copy_datagram_from_iter" },
			.copy = true, .doc = "copy from user into the skb" },
	[B_T_LOCKED] = { { NULL, "send;sock" }, { NULL, "tcp_sendmsg_locked" },
			 .leaf = { NULL, "tcp_sendmsg" }, .doc = "tcp_sendmsg: lock_sock" },
	[B_T_XMIT] = { { NULL, "send;sock" }, { NULL, "tcp_write_xmit" },
		       .leaf = { NULL, "tcp_sendmsg_locked" }, .doc = "tcp_sendmsg_locked: copy, segment, push" },
	[B_T_TRANSMIT] = { { NULL, "send;tcp_ip_out" }, { NULL, "__tcp_transmit_skb" },
			   .leaf = { NULL, "tcp_write_xmit" }, .doc = "tcp_write_xmit" },
	[B_T_IPQ] = { { NULL, "send;tcp_ip_out" }, { NULL, "__ip_queue_xmit" },
		      .leaf = { NULL, "__tcp_transmit_skb" }, .doc = "build the TCP header, clone" },
	[B_T_IPOUT2] = { { NULL, "send;tcp_ip_out" }, { NULL, "ip_finish_output2" },
			 .leaf = { NULL, "__ip_queue_xmit" }, .doc = "IP output: route, header, netfilter" },
	[B_DEV_QUEUE] = { { NULL, "send;tcp_ip_out" }, { NULL, "__dev_queue_xmit" },
			  { NULL, "net_dev_queue" }, .leaf = { NULL, "ip_finish_output2" },
			  .doc = "neighbour output to the device queue" },
	[B_T_LOXMIT] = { { NULL, "send;dev_xmit" }, { NULL, "loopback_xmit" },
			 .leaf = { NULL, "__dev_queue_xmit" }, .doc = "qdisc bypass to the driver" },
	[B_T_NETIF_RX] = { { NULL, "send;dev_xmit" }, { NULL, "__netif_rx" },
			   .leaf = { NULL, "loopback_xmit" }, .doc = "loopback: orphan skb, hand to rx" },
	[B_SOFTIRQ] = { { NULL, "send;dev_xmit" }, { NULL, "net_rx_action" }, { NULL, "softirq_entry" },
			.leaf = { NULL, "__netif_rx" }, .doc = "enqueue_to_backlog, raise and enter NET_RX" },
	[B_T_BACKLOG] = { { NULL, "rx_softirq;backlog" }, { NULL, "process_backlog" },
			  .leaf = { NULL, "net_rx_action" }, .doc = "softirq: poll list" },
	[B_NETIF_RECEIVE] = { { NULL, "rx_softirq;backlog" }, { NULL, "__netif_receive_skb" },
			      .leaf = { NULL, "process_backlog" },
			      .doc = "dequeue from the CPU backlog" },
	[B_T_IP_RCV] = { { NULL, "rx_softirq;backlog" }, { NULL, "ip_rcv" }, { NULL, "netif_receive_skb" },
			 .leaf = { NULL, "__netif_receive_skb" }, .doc = "protocol demux" },
	[B_T_IP_LOCAL] = { { NULL, "rx_softirq;ip_tcp_in" }, { NULL, "ip_local_deliver" },
			   .leaf = { NULL, "ip_rcv" }, .doc = "IP receive, route input" },
	[B_T_TCP_V4_RCV] = { { NULL, "rx_softirq;ip_tcp_in" }, { NULL, "tcp_v4_rcv" },
			     .leaf = { NULL, "ip_local_deliver" }, .doc = "local delivery" },
	[B_T_ESTABLISHED] = { { NULL, "rx_softirq;ip_tcp_in" }, { NULL, "tcp_rcv_established" },
			      .leaf = { NULL, "tcp_v4_rcv" }, .doc = "socket lookup, checks" },
	[B_DATA_READY] = { { "send;sock", "rx_softirq;ip_tcp_in" }, BOTH("sock_def_readable"),
			   BOTH("sk_data_ready"), { "skb_queue_tail", "tcp_rcv_established" },
			   .doc = "queue on the receiver (TCP: ACK processing, queue)" },
	[B_WAKE_END] = { BOTH("deliver;enqueue_wakeup"), BOTH("sock_def_readable"),
			 { "sock_send_length", "softirq_exit" }, BOTH("sock_def_readable"),
			 .doc = "data-ready callback, receiver wakeup" },
	[B_SEND_EXIT] = { BOTH("send;return"), .always = true,
			  .doc = "rest of the send syscall (release_sock, softirq exit)" },
	[B_RUN] = { BOTH("sched;wait_cpu"), .always = true,
		    .doc = "from the later of send return and data ready/receiver runnable to the "
			   "receiver running" },
	[B_COPY_START] = { BOTH("recv;copy"), BOTH("skb_copy_datagram_iter"),
			   .leaf = { "unix_stream_read_generic", "tcp_recvmsg_locked" },
			   .copy = true, .doc = "receiver: back from schedule, lock, find the skb" },
	[B_COPY_DONE] = { BOTH("recv;copy"), BOTH("skb_copy_datagram_iter"),
			  { "consume_skb", "tcp_rcv_space_adjust" }, BOTH("skb_copy_datagram_iter"),
			  .copy = true, .doc = "copy to user" },
	[B_RECV_EXIT] = { BOTH("recv;return"), .always = true,
			  .doc = "consume skb, write-space wakeup, syscall return" },
};

const struct stage_boundary *stage_boundary(int b)
{
	return b >= 0 && b < B__COUNT ? &boundaries[b] : NULL;
}

/* Functions renamed between kernels: the table names today's; older kernels have the same
 * place on the path under the old name. */
static const struct {
	const char *name, *older;
} renamed[] = {
	{ "__netif_rx", "netif_rx" },	/* 5.18 split netif_rx into __netif_rx + a bh-safe wrapper */
};

const char *stage_func_older(const char *func)
{
	size_t i;

	for (i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++)
		if (!strcmp(func, renamed[i].name))
			return renamed[i].older;
	return NULL;
}

const char *stage_marker(int b, enum transport t, bool tracepoint)
{
	const struct stage_boundary *d = stage_boundary(b);

	return !d ? NULL : tracepoint ? d->tp[t] : d->func[t];
}

/* "a;b" + "a;c" -> "a;b+c": the stage ending at `last`, absorbing those since `prev`. */
void stage_name(enum transport t, int prev, int last, bool per_call, bool function_level,
		char *out, size_t len)
{
	const struct stage_boundary *d = &boundaries[last];
	char parent[STAGE_NAME_LEN] = "", leaves[STAGE_NAME_LEN] = "";
	const char *seen_leaf = NULL;
	size_t n = 0;
	int b, on_path = 0;

	if (per_call && last == B_RUN) {
		snprintf(out, len, "recv;wait");
		return;
	}
	for (b = prev + 1; b <= last; b++)
		on_path += boundaries[b].stage[t] != NULL;
	if (on_path == 1) {
		if (function_level && d->leaf[t] && !per_call)
			snprintf(out, len, "%s;%s", d->stage[t], d->leaf[t]);
		else
			snprintf(out, len, "%s", d->stage[t]);
		return;
	}
	for (b = prev + 1; b <= last; b++) {
		const char *s = boundaries[b].stage[t], *semi;

		if (!s)
			continue;
		semi = strrchr(s, ';');
		if (!parent[0])
			snprintf(parent, sizeof(parent), "%.*s", (int)(semi - s), s);
		if (seen_leaf && !strcmp(seen_leaf, semi + 1))
			continue;
		n += snprintf(leaves + n, n < sizeof(leaves) ? sizeof(leaves) - n : 0, "%s%s",
			      n ? "+" : "", semi + 1);
		seen_leaf = semi + 1;
	}
	snprintf(out, len, "%s;%s", parent, leaves);
}

/* Is parent;leaf (lengths pl, ll) a stage of TCP's path in the table and of none of UDS's? */
static bool tcp_only_leaf(const char *parent, size_t pl, const char *leaf, size_t ll)
{
	bool tcp = false;
	int b, t;

	for (b = 0; b < B__COUNT; b++)
		for (t = 0; t < TR__COUNT; t++) {
			const char *s = boundaries[b].stage[t];

			if (!s || strlen(s) != pl + 1 + ll || strncmp(s, parent, pl) || s[pl] != ';' ||
			    strncmp(s + pl + 1, leaf, ll))
				continue;
			if (t == TR_UNIX)
				return false;
			tcp = true;
		}
	return tcp;
}

bool stage_tcp_only(const char *name)
{
	const char *semi = strchr(name, ';'), *leaf, *end;
	size_t n;

	if (!strncmp(name, SOFTIRQ_DEFERRED_STAGE, strlen(SOFTIRQ_DEFERRED_STAGE)))
		return true;
	if (!semi)
		return false;
	/* "parent;leaf+leaf[;function]": TCP's when one of its leaves is */
	end = strchr(semi + 1, ';');
	end = end ? end : name + strlen(name);
	for (leaf = semi + 1; leaf < end; leaf += n + 1) {
		n = strcspn(leaf, "+;");
		if (leaf + n > end)
			n = end - leaf;
		if (tcp_only_leaf(name, semi - name, leaf, n))
			return true;
	}
	return false;
}

/* Is leaf (length ll) a stage leaf of the table, every row of it a copy? Any parent: a merged
 * name keeps its first stage's parent ("send;sock+...+copy"). */
static bool copy_leaf(const char *leaf, size_t ll)
{
	bool copy = false;
	int b, t;

	for (b = 0; b < B__COUNT; b++)
		for (t = 0; t < TR__COUNT; t++) {
			const char *s = boundaries[b].stage[t], *l = s ? strchr(s, ';') + 1 : NULL;

			if (!l || strlen(l) != ll || strncmp(l, leaf, ll))
				continue;
			if (!boundaries[b].copy)
				return false;
			copy = true;
		}
	return copy;
}

bool stage_is_copy(const char *name)
{
	const char *semi = strchr(name, ';'), *func, *leaf;
	int b, t;
	size_t n;

	b = stage_bulk_slice(name);
	if (b >= 0)	/* the sender's send() or the receiver's recv() runs */
		return b == STAGE_BULK_SEND_COPY || b == STAGE_BULK_RECV_COPY;
	if (!semi)
		return false;
	func = strchr(semi + 1, ';');
	if (func) {	/* function level: the row's own stage;leaf */
		for (b = 0; b < B__COUNT; b++)
			for (t = 0; t < TR__COUNT; t++) {
				const struct stage_boundary *d = &boundaries[b];

				if (d->copy && d->stage[t] && d->leaf[t] &&
				    !strncmp(name, d->stage[t], func - name) &&
				    !d->stage[t][func - name] && !strcmp(func + 1, d->leaf[t]))
					return true;
			}
		return false;
	}
	/* "parent;leaf+leaf": a copy when one of its leaves is one in every row */
	for (leaf = semi + 1; *leaf; leaf += n + (leaf[n] == '+')) {
		n = strcspn(leaf, "+");
		if (copy_leaf(leaf, n))
			return true;
	}
	return false;
}

void stages_list(FILE *f)
{
	int b, t;

	fprintf(f, "Stages, in message order. A message runs from the sender's send() entry to the\n"
		   "receiver's recv() return; its stages partition that time. Each stage ends at a\n"
		   "boundary: a function entry in fentry/kprobe mode (which names the stage down to\n"
		   "the function, a third frame), a tracepoint in tracepoint mode. A boundary the\n"
		   "mode cannot see merges its stage into the next one (shown as \"a;b+c\").\n");
	for (t = 0; t < TR__COUNT; t++) {
		fprintf(f, "\n%s path                                  fentry/kprobe ends at       tracepoint ends at\n",
			t == TR_UNIX ? "AF_UNIX" : "TCP loopback");
		for (b = B_SEND_ENTER + 1; b < B__COUNT; b++) {
			const struct stage_boundary *d = &boundaries[b];
			char name[STAGE_NAME_LEN], func[64];

			if (!d->stage[t])
				continue;
			snprintf(name, sizeof(name), "%s%s%s", d->stage[t], d->leaf[t] ? ";" : "",
				 d->leaf[t] ? d->leaf[t] : "");

			/* fexit/kretprobe marks these two */
			snprintf(func, sizeof(func), "%s%s", d->always ? "(syscall/scheduler)" : d->func[t],
				 b == B_WAKE_END || b == B_COPY_DONE ? " ret" : "");
			fprintf(f, "  %-44s %-27s %s\n      %s\n", name, func,
				d->always ? "(syscall/scheduler)" : d->tp[t] ? d->tp[t] : "- (merged into next)",
				d->doc);
		}
	}
	fprintf(f, "\nstream mode attributes per call instead: send-side stages per send(), and\n"
		   "recv;wait (recv entry to running), recv;copy, recv;return per recv().\n"
		   "connect mode adds per-connection stages outside the message sum:\n"
		   "conn;connect (client connect() duration) and conn;accept (client connect() entry\n"
		   "to the server's accept() return).\n"
		   "TCP messages whose NET_RX softirq did not run at the end of the send (ksoftirqd was\n"
		   "already running on that CPU, or a later irq exit ran it) have rx_softirq;deferred\n"
		   "instead of the stage ending at the softirq: from the enqueue on the CPU backlog\n"
		   "until the softirq runs, the sender's return included; shown when it happened.\n"
		   "A message delivered in several chunks (UDS skbs, TCP segments: large sizes) keeps\n"
		   "the stages up to its first data-ready; from there to the recv() return its time is\n"
		   "sliced by who runs: bulk;send_copy (the sender's send() runs), bulk;recv_copy (the\n"
		   "receiver's recv() runs while the sender does not), bulk;wait_space (the sender\n"
		   "sleeps for send-buffer space, the receiver is not running yet), bulk;wait_cpu\n"
		   "(neither runs); shown when it happened.\n"
		   "pingpong adds app;gap: from a task's recv() return to its next send() entry (the\n"
		   "application, plus udsprobe's own bookkeeping at recv exit), so that the stages\n"
		   "add up to the one-way latency (a round trip is two messages and two gaps).\n");
}
