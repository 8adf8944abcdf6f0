/* SPDX-License-Identifier: GPL-2.0 */
/* The prefix of a syscall's arch wrapper in kallsyms and BTF (__x64_sys_read): fentry and
 * kprobe programs probe one syscall there. Shared: flows.bpf.c's section names need it at
 * compile time, user space names the same functions. */
#ifndef UDSPROBE_SYSCALL_WRAPPER_H
#define UDSPROBE_SYSCALL_WRAPPER_H

#if defined(__TARGET_ARCH_arm64) || (!defined(__TARGET_ARCH_x86) && defined(__aarch64__))
#define SYSCALL_WRAPPER "__arm64_sys_"
#else
#define SYSCALL_WRAPPER "__x64_sys_"
#endif

#endif
