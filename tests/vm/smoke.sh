#!/usr/bin/env bash
# tests/vm/smoke.sh — prove the qemu guest harness: run it inside the guest, e.g.
#   scripts/vm-run.sh --kernel debian-6.1 -- tests/vm/smoke.sh
# Checks: kernel release, /sys/kernel/btf/vmlinux, the mounts the tool needs, that a kprobe
# (tracefs and BPF) and an fentry BPF program attach to unix_stream_sendmsg and count the sends
# of a UDS socketpair, and that binaries run from the 9p shares. Exits non-zero on any failure.
# Needs in the guest (host root): bpftool, python3, clang + libbpf-dev (for the tiny BPF object).
set -euo pipefail

FUNC=${SMOKE_FUNC:-unix_stream_sendmsg}
N=50
fails=0
ok() { printf 'ok    %s\n' "$*"; }
bad() { printf 'FAIL  %s\n' "$*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }

if [ "$(id -u)" != 0 ]; then echo "smoke.sh: must run as root (inside scripts/vm-run.sh)" >&2; exit 2; fi
if [ -z "${UDSVM:-}" ]; then echo "smoke.sh: warning: not inside the vm-run.sh guest (UDSVM unset)" >&2; fi

echo "kernel: $(uname -r) ($(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB)"
check "BTF: /sys/kernel/btf/vmlinux exists" test -s /sys/kernel/btf/vmlinux
for m in /proc /sys /dev /tmp /sys/fs/bpf /sys/kernel/debug /sys/kernel/tracing; do
	check "mounted: $m" mountpoint -q "$m"
done
check "/tmp writable" sh -c 'echo x >/tmp/.smoke && rm /tmp/.smoke'
check "work dir writable: $PWD" sh -c 'echo x >.smoke.$$ && rm .smoke.$$'
check "two CPUs online" test "$(nproc)" -ge 2
check "bpftool runs from the read-only host root" /usr/sbin/bpftool version
check "python3 runs" /usr/bin/python3 -c 'import json, socket, ctypes'

# bpftool's view (prog types and the kernel config it finds in /boot/config-$(uname -r))
probe=$(bpftool feature probe kernel 2>/dev/null || true)
for want in 'eBPF program_type kprobe is available' 'eBPF program_type tracing is available' \
	'CONFIG_KPROBE_EVENTS is set to y' 'CONFIG_BPF_EVENTS is set to y' 'CONFIG_DEBUG_INFO_BTF is set to y'; do
	if grep -qF "$want" <<<"$probe"; then ok "bpftool feature probe: $want"; else bad "bpftool feature probe: $want"; fi
done

# kprobe through tracefs: no BPF involved
T=/sys/kernel/tracing
if echo "p:udsvm_smoke $FUNC" >>$T/kprobe_events 2>/dev/null; then
	echo 1 >$T/events/kprobes/udsvm_smoke/enable
	python3 -c "
import socket
a, b = socket.socketpair()
for _ in range($N): a.send(b'x'); b.recv(1)"
	hits=$(awk '$1 == "udsvm_smoke" {print $2}' $T/kprobe_profile)
	echo 0 >$T/events/kprobes/udsvm_smoke/enable
	echo "-:udsvm_smoke" >>$T/kprobe_events
	if [ "${hits:-0}" -ge "$N" ]; then ok "tracefs kprobe on $FUNC: $hits hits"; else bad "tracefs kprobe on $FUNC: ${hits:-0} hits (want >= $N)"; fi
else
	bad "tracefs kprobe on $FUNC: cannot create (no CONFIG_KPROBES?)"
fi

# BPF kprobe and fentry programs, loaded by bpftool, attached by a few lines of ctypes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /sys/fs/bpf/udsvm_smoke' EXIT
cat >"$tmp/smoke.bpf.c" <<EOF
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("kprobe/$FUNC") int smoke_kprobe(void *ctx) { return 0; }
SEC("fentry/$FUNC") int smoke_fentry(void *ctx) { return 0; }
char LICENSE[] SEC("license") = "GPL";
EOF
if ! command -v clang >/dev/null; then
	bad "BPF: clang not found on the host root: cannot build the test object (apt-get install clang libbpf-dev)"
elif ! clang -g -O2 -target bpf -I/usr/include/"$(uname -m)"-linux-gnu -c "$tmp/smoke.bpf.c" -o "$tmp/smoke.bpf.o" 2>"$tmp/cc.err"; then
	bad "BPF: clang failed: $(cat "$tmp/cc.err")"
elif ! bpftool prog loadall "$tmp/smoke.bpf.o" /sys/fs/bpf/udsvm_smoke 2>"$tmp/load.err"; then
	bad "BPF: bpftool prog loadall failed: $(tail -3 "$tmp/load.err")"
else
	ok "BPF: kprobe and fentry programs loaded (bpftool prog loadall)"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	python3 - "$N" <<'PY' || fails=$((fails + 1))
import ctypes, json, os, socket, struct, subprocess, sys

n = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
SYS_bpf, SYS_perf_event_open = 321, 298   # x86_64
BPF_OBJ_GET, BPF_RAW_TRACEPOINT_OPEN = 7, 17
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_SET_BPF = 0x2400, 0x40042408

def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    fd = libc.syscall(SYS_bpf, cmd, buf, 128)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return fd

def obj_get(path):
    p = ctypes.create_string_buffer(path.encode())
    return bpf(BPF_OBJ_GET, struct.pack("QII", ctypes.addressof(p), 0, 0)), p

def run_cnt(path):
    out = subprocess.run(["bpftool", "-j", "prog", "show", "pinned", path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out).get("run_cnt", 0)

def send(k):
    a, b = socket.socketpair()
    for _ in range(k):
        a.send(b"x"); b.recv(1)

fails = 0
keep = []
base = "/sys/fs/bpf/udsvm_smoke/"
func = os.environ.get("SMOKE_FUNC", "unix_stream_sendmsg")
# fentry: BPF_RAW_TRACEPOINT_OPEN with no name attaches a tracing program to its BTF target
try:
    pfd, keep_p = obj_get(base + "smoke_fentry"); keep.append(keep_p)
    lfd = bpf(BPF_RAW_TRACEPOINT_OPEN, struct.pack("QI", 0, pfd))
    before = run_cnt(base + "smoke_fentry"); send(n); got = run_cnt(base + "smoke_fentry") - before
    os.close(lfd)
    print(("ok   " if got >= n else "FAIL ") + f" BPF fentry/{func}: attached, ran {got} times for {n} sends")
    fails += got < n
except OSError as e:
    print(f"FAIL  BPF fentry/{func}: attach failed: {e}"); fails += 1
# kprobe: a perf kprobe event (PMU 'kprobe') with the program set on it
try:
    pfd, keep_p = obj_get(base + "smoke_kprobe"); keep.append(keep_p)
    ptype = int(open("/sys/bus/event_source/devices/kprobe/type").read())
    name = ctypes.create_string_buffer(func.encode())
    attr = struct.pack("IIQQQQQIIQQ", ptype, 128, 0, 0, 0, 0, 0, 0, 0, ctypes.addressof(name), 0)
    attr = ctypes.create_string_buffer(attr, 128)
    efd = libc.syscall(SYS_perf_event_open, attr, -1, 0, -1, 8)
    if efd < 0:
        raise OSError(ctypes.get_errno(), "perf_event_open: " + os.strerror(ctypes.get_errno()))
    if libc.ioctl(efd, PERF_EVENT_IOC_SET_BPF, pfd) < 0 or libc.ioctl(efd, PERF_EVENT_IOC_ENABLE, 0) < 0:
        raise OSError(ctypes.get_errno(), "ioctl: " + os.strerror(ctypes.get_errno()))
    before = run_cnt(base + "smoke_kprobe"); send(n); got = run_cnt(base + "smoke_kprobe") - before
    os.close(efd)
    print(("ok   " if got >= n else "FAIL ") + f" BPF kprobe/{func}: attached, ran {got} times for {n} sends")
    fails += got < n
except OSError as e:
    print(f"FAIL  BPF kprobe/{func}: attach failed: {e}"); fails += 1
sys.exit(1 if fails else 0)
PY
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
fi

if [ "$fails" -eq 0 ]; then echo "smoke: all checks passed on $(uname -r)"; else echo "smoke: $fails check(s) FAILED on $(uname -r)"; fi
[ "$fails" -eq 0 ]
