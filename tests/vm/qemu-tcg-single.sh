#!/usr/bin/env bash
# tests/vm/qemu-tcg-single.sh — qemu with single-threaded TCG (one host thread for all vCPUs).
# run-matrix.sh passes it as QEMU to vm-run.sh (UDSPROBE_VM_SINGLE_TCG, default: every guest).
# Under multi-threaded TCG (qemu 7.2) Debian's 6.1 guest soft-locks up (both vCPUs stuck at
# do_syscall_64+0x3e) within ~1 min of a loop of `udsprobe --attach tracepoint` runs (its probe
# calibration attaches and detaches tp_btf/sys_enter 10 times while the other vCPU makes
# syscalls), and once hung silently in fentry mode; with thread=single the same 40-run loop
# passes, and the matrix takes no longer (docs/KERNELS.md).
args=()
for a in "$@"; do
	[ "$a" = tcg ] && a=tcg,thread=single
	args+=("$a")
done
exec "${QEMU_REAL:-qemu-system-x86_64}" "${args[@]}"
