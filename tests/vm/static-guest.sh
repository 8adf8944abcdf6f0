#!/usr/bin/env bash
# tests/vm/static-guest.sh — proof that `make static`'s udsprobe-static needs no library: boot a
# kernel whose initramfs holds only that file, a static busybox (to mount /proc and friends and
# power off) and /init, and run `--check` and a traced `--compare` there.
#
#   tests/vm/static-guest.sh [--arch arm64] [KERNEL]   (run-matrix.sh runs it; default debian-6.1)
#
# --arch arm64: `make ARCH=arm64 static`'s .output/arm64/udsprobe-static, the busybox of
# scripts/vm-arm64-root.sh's arm64 root, a debian-X.Y-arm64 kernel (default debian-6.12-arm64)
# booted by qemu-system-aarch64 -M virt under TCG.
#
# The guest has no /lib, /usr, ld.so or libc: a binary that needs any shared library cannot
# even start. Checks, each one test: the binary is a static ELF (no PT_INTERP, no NEEDED); the
# guest really has no shared library; `udsprobe-static --check` exits 0 with a working mode;
# `udsprobe-static --compare --mode pingpong --count 200 --json` exits 0, traced (attach_mode
# set) with messages attributed on both transports (UDSPROBE_STATIC_MODES=each: one forced run
# per mode --check accepts, and a reason for each it rejects; default auto: udsprobe's choice;
# the stage and backlog tests run in every mode in the matrix's arm64 and amd64 guests). Prints
# one line per check and, last, "N passed, N failed". Exit 1 if any failed.
# Environment: UDSPROBE_STATIC (binary, default ./udsprobe-static, built if missing),
#   UDSPROBE_VM_TIMEOUT (seconds, default 300, 600 for arm64), UDSPROBE_VM_RESULTS (default
#   .output/vm/matrix).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
PROG=tests/vm/static-guest.sh
case ${1:-} in -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
ARCH=x86
if [ "${1:-}" = --arch ]; then ARCH=${2:?--arch needs arm64}; shift 2; fi
TIMEOUT=${UDSPROBE_VM_TIMEOUT:-300}
case $ARCH in
x86)
	SPEC=${1:-debian-6.1}
	BIN=${UDSPROBE_STATIC:-./udsprobe-static}
	BUSYBOX=${BUSYBOX:-/bin/busybox}
	RES=${UDSPROBE_VM_RESULTS:-$PWD/.output/vm/matrix}/static
	QEMU=(qemu-system-x86_64 -accel tcg,thread=single -M pc -cpu max)
	CONSOLE=ttyS0
	MODES=${UDSPROBE_STATIC_MODES:-auto}
	COUNT=200 ;;
arm64)
	SPEC=${1:-debian-6.12-arm64}
	BIN=${UDSPROBE_STATIC:-.output/arm64/udsprobe-static}
	RES=${UDSPROBE_VM_RESULTS:-$PWD/.output/vm/matrix}/static-arm64-$SPEC
	QEMU=(qemu-system-aarch64 -accel tcg,thread=single -M virt -cpu max,pauth-impdef=on)
	CONSOLE=ttyAMA0
	MODES=${UDSPROBE_STATIC_MODES:-auto}
	COUNT=200
	TIMEOUT=${UDSPROBE_VM_TIMEOUT:-600} ;;
*) echo "$PROG: --arch $ARCH: only arm64 (x86 is the default)" >&2; exit 2 ;;
esac
pass=0 fail=0
ok() { echo "  PASS  $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

if [ -z "${UDSPROBE_STATIC:-}" ]; then
	make -s ARCH=$ARCH static || { bad "make ARCH=$ARCH static failed"; finish; }
fi
if [ "$ARCH" = arm64 ] && [ -z "${BUSYBOX:-}" ]; then
	root=$(scripts/vm-arm64-root.sh -q) || { bad "cannot build the arm64 root (scripts/vm-arm64-root.sh)"; finish; }
	BUSYBOX=$root/bin/busybox
fi
[ -x "$BIN" ] || { bad "$BIN: not an executable"; finish; }
rm -rf "$RES" && mkdir -p "$RES" || { bad "cannot create $RES"; finish; }

# 1. the file itself: no program interpreter, no shared library dependency
hdr=$(readelf -lW -d "$BIN" 2>&1)
if grep -q 'INTERP' <<<"$hdr" || grep -q '(NEEDED)' <<<"$hdr"; then
	bad "$BIN is dynamically linked: $(grep -E 'INTERP|NEEDED' <<<"$hdr" | tr -s ' ' | paste -sd';')"
else
	ok "$BIN: static ELF (no PT_INTERP, no NEEDED), $(stat -c %s "$BIN") bytes"
fi

kdir=$(scripts/vm-kernel.sh -q "$SPEC") || { bad "could not fetch kernel $SPEC"; finish; }
krel=$(cat "$kdir/release")
KIMG=$kdir/vmlinux
[ "$ARCH" = arm64 ] && KIMG=$kdir/Image

# 2. an initramfs with three files: /init, a static busybox, udsprobe-static
tmp=$(mktemp -d "${TMPDIR:-/tmp}/udsstatic.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/bin"
cp "$BUSYBOX" "$tmp/root/bin/busybox"
cp "$BIN" "$tmp/root/udsprobe"
echo "$MODES" >"$tmp/root/modes"
echo "$COUNT" >"$tmp/root/count"
cat >"$tmp/root/init" <<'INIT'
#!/bin/busybox sh
# only /bin/busybox and /udsprobe in this root; busybox's applets live inside it, not as files
B=/bin/busybox
$B mkdir -p /proc /sys /dev /tmp
$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
$B mount -t tmpfs tmpfs /tmp
$B mount -t bpf bpf /sys/fs/bpf
$B ip link set lo up
echo 1 >/proc/sys/kernel/softlockup_panic
echo "@@FILES@@ $($B find / -xdev -type f | $B tr '\n' ' ')"
echo "@@SHLIBS@@ $($B find / -xdev \( -name '*.so*' -o -name 'ld-linux*' \) | $B wc -l)"
/udsprobe --check >/tmp/check.txt 2>&1
echo "@@CHECK@@ rc=$?"
$B sed 's/^/@@C@@ /' /tmp/check.txt
ms=$($B cat /modes)
[ "$ms" = each ] && ms="fentry kprobe tracepoint"
for m in $ms; do
	# "each": every mode --check says works, forced; "auto": udsprobe's own choice
	if [ "$m" != auto ]; then $B grep -q "^$m  *yes" /tmp/check.txt || continue; fi
	t0=$($B cut -d' ' -f1 /proc/uptime)
	/udsprobe --compare --attach $m --mode pingpong --count $($B cat /count) --json /tmp/r.json >/tmp/cmp.txt 2>&1
	echo "@@COMPARE@@ $m rc=$?"
	echo "@@SECS@@ $m compare $t0 $($B cut -d' ' -f1 /proc/uptime)"
	$B sed "s/^/@@T@@ $m /" /tmp/cmp.txt
	echo "@@JSON@@ $m $($B tr -d '\n' </tmp/r.json 2>/dev/null)"
	$B rm -f /tmp/r.json
done
echo "@@END@@"
$B poweroff -f
INIT
chmod +x "$tmp/root/init"
(cd "$tmp/root" && find . | LC_ALL=C sort | /bin/busybox cpio -o -H newc 2>/dev/null) >"$tmp/initrd.cpio" ||
	{ bad "cpio failed"; finish; }

# 3. boot it (single-threaded TCG, as the matrix; tests/vm/qemu-tcg-single.sh says why)
echo "-- $krel: initramfs with only /init, /bin/busybox (static) and /udsprobe ($BIN)"
t0=$(date +%s)
timeout -k 3 "$TIMEOUT" "${QEMU[@]}" -smp 2 -m 1024 \
	-nodefaults -no-user-config -display none -no-reboot -serial stdio \
	-kernel "$KIMG" -initrd "$tmp/initrd.cpio" \
	-append "console=$CONSOLE quiet loglevel=1 panic=-1 oops=panic rdinit=/init tsc=reliable mitigations=off" \
	</dev/null 2>"$RES/qemu.err" | tr -d '\r' >"$RES/console.log"
qrc=${PIPESTATUS[0]}
echo "guest ran $(($(date +%s) - t0))s (qemu exit $qrc); console in ${RES#"$PWD"/}/console.log"
log=$RES/console.log
grep -q '^@@END@@' "$log" || bad "the guest did not finish (qemu exit $qrc$([ "$qrc" = 124 ] && echo ", timeout ${TIMEOUT}s"))"

files=$(sed -n 's/^@@FILES@@ //p' "$log")
nlibs=$(sed -n 's/^@@SHLIBS@@ //p' "$log")
if [ -n "$files" ] && [ "$nlibs" = 0 ]; then
	ok "guest root holds only: $files(no shared library, no ld.so)"
else
	bad "guest root: files '$files', shared libraries: '${nlibs:-?}'"
fi

sed -n 's/^@@C@@ //p' "$log" >"$RES/check.txt"
if grep -qx '@@CHECK@@ rc=0' "$log" && grep -Eq '^(fentry|kprobe|tracepoint) +yes' "$RES/check.txt"; then
	ok "--check in the empty guest: exit 0, $(grep -E '^chosen:' "$RES/check.txt")"
else
	bad "--check in the empty guest: $(sed -n 's/^@@CHECK@@ //p' "$log"); output:"
	sed 's/^/        /' "$RES/check.txt"
fi

# 4. one traced run per mode (MODES=each) or udsprobe's own choice (auto); with "each", a mode
# --check rejects must carry its reason (the clear degradation, e.g. no fentry on arm64 < 6.0)
ran=0
for m in $( [ "$MODES" = each ] && echo fentry kprobe tracepoint || echo auto); do
	if [ "$m" != auto ] && ! grep -Eq "^$m +yes" "$RES/check.txt"; then
		why=$(grep -E "^$m +no +." "$RES/check.txt" | sed -E "s/^$m +no +//")
		if [ -n "$why" ]; then ok "$m: not supported by $krel, --check says why: $why"
		else bad "$m: neither working nor a reason in --check's output"; fi
		continue
	fi
	ran=$((ran + 1))
	sed -n "s/^@@T@@ $m //p" "$log" >"$RES/compare-$m.txt"
	sed -n "s/^@@JSON@@ $m //p" "$log" >"$RES/compare-$m.json"
	verdict=$(python3 - "$RES/compare-$m.json" "$m" "$COUNT" <<-'EOF' 2>&1
		import json, sys
		d = json.load(open(sys.argv[1]))
		mode = d.get("attach_mode")
		assert mode in ("fentry", "kprobe", "tracepoint"), f"attach_mode {mode!r}"
		assert sys.argv[2] in ("auto", mode), f"asked for {sys.argv[2]}, ran {mode}"
		msgs = {r["transport"]: r.get("messages") or 0 for r in d["results"]}
		assert set(msgs) == {"unix", "tcp"}, f"transports {sorted(msgs)}"
		n = int(sys.argv[3])
		assert all(r["count"] == n for r in d["results"]), f"count != {n}"
		assert all(m >= n for m in msgs.values()), f"messages attributed {msgs}"
		print(f"{mode} mode, messages attributed unix {msgs['unix']}, tcp {msgs['tcp']}")
	EOF
	)
	vrc=$?
	if grep -qx "@@COMPARE@@ $m rc=0" "$log" && [ "$vrc" -eq 0 ]; then
		ok "traced --compare --attach $m --mode pingpong --count $COUNT in the empty guest: $verdict"
	else
		bad "traced --compare --attach $m in the empty guest: $(sed -n "s/^@@COMPARE@@ $m //p" "$log"); $verdict"
		tail -n 15 "$RES/compare-$m.txt" | sed 's/^/        /'
	fi
done
[ "$ran" -gt 0 ] || bad "no traced run: --check found no working mode"
# guest seconds per mode and step (uptime in the guest: what a CI budget needs)
awk '$1 == "@@SECS@@" {t[$2] = t[$2] sprintf(" %s %.0f s", $3, $5 - $4)} END {for (m in t) print "  time  " m ":" t[m]}' "$log" | sort
finish
