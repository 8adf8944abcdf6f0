#!/usr/bin/env bash
# Regenerate vmlinux/<arch>/vmlinux.h from a kernel's BTF (default: the running kernel).
# CO-RE relocates field offsets at load time, so one header serves every 5.8+ kernel with BTF.
set -euo pipefail

usage() {
	cat <<USAGE
usage: $0 [BTF_FILE] [ARCH]
  BTF_FILE  kernel BTF blob or vmlinux ELF (default: /sys/kernel/btf/vmlinux)
  ARCH      header directory under vmlinux/ (default: x86 for x86_64)
example: $0 /sys/kernel/btf/vmlinux x86
USAGE
}
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && { usage; exit 0; }

btf=${1:-/sys/kernel/btf/vmlinux}
arch=${2:-$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')}
bpftool=${BPFTOOL:-bpftool}
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/vmlinux/$arch/vmlinux.h"

[ -r "$btf" ] || { echo "gen-vmlinux: cannot read BTF '$btf': boot a kernel with CONFIG_DEBUG_INFO_BTF=y or pass a BTF file" >&2; exit 1; }
command -v "$bpftool" >/dev/null || { echo "gen-vmlinux: bpftool not found: run scripts/install-deps.sh" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
"$bpftool" btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines) from $btf"
