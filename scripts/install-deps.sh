#!/usr/bin/env bash
# Install every build and test dependency of udsprobe on Debian 12 / Ubuntu with apt-get.
# Idempotent: when everything is present it installs nothing and prints one line.
# Mounting tracefs/bpffs is not done here: udsprobe mounts them itself at run time.
set -euo pipefail

# build: clang/llvm for BPF, bpftool for skeletons, libbpf/libelf/zlib to link
# tests: python3 + pytest, iproute2 (ss), procps; VM matrix: qemu, busybox, kmod, xz
# backlog tests: nginx, php-fpm, wrk; prometheus: promtool (checks the metrics text and the
# alert rules) and the server that scrapes --metrics
# trace tests: redis-server, redis-tools (redis-benchmark, redis-cli); make bench uses all of
# the above (trace-overhead: redis, nginx, php-fpm, wrk)
# pictures (tests/integration/svgcheck.py, test_browser.py): librsvg2-bin (rsvg-convert),
# python3-pil (is the raster blank?), chromium and python3-websocket (headless Chromium over
# its DevTools protocol); chromium with its libraries: 124 MB download, 413 MB installed
# setcap (libcap2-bin): the test of a binary given only CAP_BPF and CAP_PERFMON
# arm64 (make ARCH=arm64, the arm64 guest of the VM matrix): cross gcc, :arm64 libraries,
# qemu-system-aarch64; on Debian only (dpkg --add-architecture arm64 from the same archive)
arm64_packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libbpf-dev:arm64 libelf-dev:arm64
	zlib1g-dev:arm64 libncurses-dev:arm64 qemu-system-arm)
packages=(
	make gcc clang llvm pkg-config libbpf-dev libelf-dev zlib1g-dev libncurses-dev bpftool
	python3 python3-pytest iproute2 procps util-linux
	qemu-system-x86 busybox-static kmod xz-utils cpio
	nginx-light php-fpm wrk librsvg2-bin prometheus redis-server redis-tools
	python3-pil chromium python3-websocket tmux
	debhelper man-db bash-completion libcap2-bin
)

debian=0
grep -qx 'ID=debian' /etc/os-release 2>/dev/null && debian=1
[ "$debian" = 1 ] && packages+=("${arm64_packages[@]}")
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [ "$debian" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts daemons on install; our tests run their own nginx/php-fpm/redis instances.
for svc in nginx php*-fpm prometheus redis-server; do
	if command -v systemctl >/dev/null && systemctl is-active -q "$svc" 2>/dev/null; then
		$sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true
	fi
done
echo "install-deps: done"
