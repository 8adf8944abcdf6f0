// SPDX-License-Identifier: GPL-2.0
/* The bench's floor (scripts/hooks_floor.c): an empty program on every hook --trace or
 * --compare attaches in tracepoint mode (docs/TRACE.md, "Overhead"). Sections match flows.bpf.c's
 * and stages.bpf.c's: the loader pairs them by name. Not loaded by udsprobe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define EMPTY_TP_BTF(hook)					\
SEC("?tp_btf/" #hook)						\
int floor_##hook(void *ctx) { return 0; }

EMPTY_TP_BTF(sys_enter)
EMPTY_TP_BTF(sys_exit)
EMPTY_TP_BTF(sock_send_length)
EMPTY_TP_BTF(sock_recv_length)
EMPTY_TP_BTF(inet_sock_set_state)
EMPTY_TP_BTF(sched_process_exit)
EMPTY_TP_BTF(sched_process_fork)
EMPTY_TP_BTF(kfree_skb)
EMPTY_TP_BTF(sched_switch)
EMPTY_TP_BTF(sk_data_ready)
EMPTY_TP_BTF(consume_skb)
EMPTY_TP_BTF(tcp_sendmsg_locked)
EMPTY_TP_BTF(net_dev_queue)
EMPTY_TP_BTF(softirq_entry)
EMPTY_TP_BTF(softirq_exit)
EMPTY_TP_BTF(netif_receive_skb)
EMPTY_TP_BTF(tcp_rcv_space_adjust)

/* one program, a link per syscalls: event */
SEC("?tracepoint")
int floor_tracepoint(void *ctx) { return 0; }
