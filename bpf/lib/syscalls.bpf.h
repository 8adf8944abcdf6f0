/* Raw syscall ids per arch (syscall_64.tbl, asm-generic/unistd.h; -1: arm64 lacks it). */
#ifndef UDSPROBE_SYSCALLS_BPF_H
#define UDSPROBE_SYSCALLS_BPF_H

#if defined(__TARGET_ARCH_x86)
#define SYSNR(regs) ((regs)->orig_ax)
#define NR_read 0
#define NR_write 1
#define NR_poll 7
#define NR_readv 19
#define NR_writev 20
#define NR_select 23
#define NR_sendfile 40
#define NR_connect 42
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_epoll_wait 232
#define NR_pselect6 270
#define NR_ppoll 271
#define NR_splice 275
#define NR_epoll_pwait 281
#define NR_accept4 288
#define NR_recvmmsg 299
#define NR_sendmmsg 307
#define NR_epoll_pwait2 441
#elif defined(__TARGET_ARCH_arm64)
#define SYSNR(regs) ((regs)->syscallno)
#define NR_read 63
#define NR_write 64
#define NR_poll -1
#define NR_readv 65
#define NR_writev 66
#define NR_select -1
#define NR_sendfile 71
#define NR_accept 202
#define NR_connect 203
#define NR_sendto 206
#define NR_recvfrom 207
#define NR_sendmsg 211
#define NR_recvmsg 212
#define NR_epoll_wait -1
#define NR_pselect6 72
#define NR_ppoll 73
#define NR_splice 76
#define NR_epoll_pwait 22
#define NR_accept4 242
#define NR_recvmmsg 243
#define NR_sendmmsg 269
#define NR_epoll_pwait2 441
#else
#error "syscall numbers for this architecture are not defined (bpf/lib/syscalls.bpf.h)"
#endif

#endif
