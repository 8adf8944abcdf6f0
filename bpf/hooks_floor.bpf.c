// SPDX-License-Identifier: GPL-2.0
/*
 * The bench's floor (scripts/hooks_floor.c): an empty program on every hook `udsprobe --trace`
 * attaches in tracepoint mode, so that trace-overhead.py can tell what the attachments alone
 * cost a server (the syscall-tracing slow path, the tracepoint dispatch) from what
 * flows.bpf.c's program bodies add. Nothing here is loaded by udsprobe.
 *
 * Each tp_btf program carries the section of its flows.bpf.c counterpart: the loader pairs
 * them by section name and fails when udsprobe attaches a hook this file has no program for.
 * One tracepoint program serves every syscalls:sys_exit_<poll> event udsprobe chooses.
 */
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

/* attached by name to each syscalls: event (no section target: one program, many links) */
SEC("?tracepoint")
int floor_tracepoint(void *ctx) { return 0; }
