/* Syscall numbers the BPF programs compare raw sys_enter ids with, per target architecture
 * (x86-64: arch/x86/entry/syscalls/syscall_64.tbl; arm64: include/uapi/asm-generic/unistd.h). */
#ifndef UDSPROBE_SYSCALLS_BPF_H
#define UDSPROBE_SYSCALLS_BPF_H

#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_write 1
#define NR_connect 42
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_accept4 288
#elif defined(__TARGET_ARCH_arm64)
#define NR_read 63
#define NR_write 64
#define NR_accept 202
#define NR_connect 203
#define NR_sendto 206
#define NR_recvfrom 207
#define NR_sendmsg 211
#define NR_recvmsg 212
#define NR_accept4 242
#else
#error "syscall numbers for this architecture are not defined (bpf/syscalls.bpf.h)"
#endif

#endif
