// SPDX-License-Identifier: GPL-2.0
/* The bench's floor (scripts/hooks_floor.c): an empty program on every hook --trace attaches
 * in tracepoint mode (docs/TRACE.md, "Overhead"). Sections match flows.bpf.c's: the loader
 * pairs them by name. Not loaded by udsprobe. */
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

/* one program, a link per syscalls: event */
SEC("?tracepoint")
int floor_tracepoint(void *ctx) { return 0; }
