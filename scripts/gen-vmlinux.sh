#!/usr/bin/env bash
# Regenerate vmlinux/<arch>/vmlinux.h from a kernel's BTF (default: the running kernel).
# CO-RE relocates field offsets at load time, so one header serves every 5.8+ kernel with BTF.
set -euo pipefail

usage() {
	cat <<USAGE
usage: $0 [BTF_FILE] [ARCH]
  BTF_FILE  kernel BTF blob, vmlinux ELF, or a raw kernel Image with BTF inside (Debian's arm64
            /boot/vmlinuz-*: its .BTF is found by the BTF header) (default: /sys/kernel/btf/vmlinux)
  ARCH      header directory under vmlinux/ (default: x86 for x86_64)
example: $0 /sys/kernel/btf/vmlinux x86
         $0 root/boot/vmlinuz-6.1.0-NN-arm64 arm64   (from dpkg-deb -x linux-image-6.1.0-NN-arm64_*.deb root)
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
# an Image that is neither raw BTF nor ELF: cut the BTF blob out (magic 0xeB9F, version 1, 24-byte
# header; its size is hdr_len + str_off + str_len); the largest candidate is vmlinux's
src=$btf
if [ "$(head -c 2 "$btf" | od -An -tx1 | tr -d ' ')" != 9feb ] && [ "$(head -c 4 "$btf" | od -An -c | tr -d ' ')" != '177ELF' ]; then
	blob=$(mktemp)
	trap 'rm -f "$blob"' EXIT
	python3 - "$btf" "$blob" <<-'EOF' || { echo "gen-vmlinux: no BTF found in $btf" >&2; exit 1; }
		import struct, sys
		d = open(sys.argv[1], "rb").read()
		magic, best, i = b"\x9f\xeb\x01\x00\x18\x00\x00\x00", None, 0
		while (i := d.find(magic, i)) >= 0:
		    hl, to, tl, so, sl = struct.unpack_from("<5I", d, i + 4)
		    n = hl + so + sl
		    if to + tl <= so and i + n <= len(d) and (not best or n > best[1]):
		        best = (i, n)
		    i += 1
		if not best:
		    sys.exit(1)
		open(sys.argv[2], "wb").write(d[best[0]:best[0] + best[1]])
	EOF
	btf=$blob
fi
src=${src:-$btf}
"$bpftool" btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines) from $src"
