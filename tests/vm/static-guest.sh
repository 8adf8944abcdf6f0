#!/usr/bin/env bash
# tests/vm/static-guest.sh — proof that `make static`'s udsprobe-static needs no library: boot a
# kernel whose initramfs holds only that file, a static busybox (to mount /proc and friends and
# power off) and /init, and run `--check` and a traced `--compare` there.
#
#   tests/vm/static-guest.sh [--arch arm64] [KERNEL]   (run-matrix.sh runs it; default debian-6.1)
#
# --arch arm64: `make ARCH=arm64 static`'s .output/arm64/udsprobe-static, busybox-static:arm64
# (apt-get download, cached in .output/vm/arm64/), a debian-X.Y-arm64 kernel (default
# debian-6.12-arm64) booted by qemu-system-aarch64 -M virt under TCG: the arm64 check.
#
# The guest has no /lib, /usr, ld.so or libc: a binary that needs any shared library cannot
# even start. Checks, each one test: the binary is a static ELF (no PT_INTERP, no NEEDED); the
# guest really has no shared library; `udsprobe-static --check` exits 0 with a working mode;
# `udsprobe-static --compare --mode pingpong --count 200 --json` exits 0, traced (attach_mode
# set) with messages attributed on both transports (UDSPROBE_STATIC_MODES=each: one forced run
# per mode --check accepts, and a reason for each it rejects; default auto on x86, each on
# arm64, where no other test runs). On arm64 two more checks per mode: the stage tests
# (tests/integration/test_stages.py's checks of a pingpong run, applied on the host to the
# JSON and text of the guest's --count 500 run: UDSPROBE_STAGES_RUN) and a backlog overflow
# count (tests/backlog's listen_noaccept and connect_burst, built static for arm64: listen(fd,
# 4), 20 non-blocking connects, exactly 15 EAGAIN counted, limit 4, peak 5, the client named;
# on 5.10 through sock_diag, unix_diag.ko loaded from the kernel's modules). Prints one line per
# check and, last, "N passed, N failed". Exit 1 if any failed.
# Environment: UDSPROBE_STATIC (binary, default ./udsprobe-static, built if missing),
#   UDSPROBE_VM_TIMEOUT (seconds, default 300; 900 for arm64: 288 s idle, 541 s on a loaded 2-vCPU host), UDSPROBE_VM_RESULTS (default .output/vm/matrix).
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
	QEMU=(qemu-system-aarch64 -accel tcg,thread=single -M virt -cpu max)
	CONSOLE=ttyAMA0
	MODES=${UDSPROBE_STATIC_MODES:-each}
	COUNT=500	# test_stages.py's count in a guest
	BACKLOG=1	# the backlog overflow check per mode (no other backlog test runs there)
	TIMEOUT=${UDSPROBE_VM_TIMEOUT:-1200} ;;
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
	bb=$PWD/.output/vm/arm64
	if [ ! -x "$bb/bin/busybox" ]; then
		mkdir -p "$bb" && rm -f "$bb"/*.deb &&
			(cd "$bb" && apt-get download -q -o APT::Sandbox::User=root busybox-static:arm64 >/dev/null) &&
			dpkg-deb -x "$bb"/busybox-static_*.deb "$bb" ||
			{ bad "cannot get busybox-static:arm64 (dpkg --add-architecture arm64; apt-get update)"; finish; }
	fi
	BUSYBOX=$bb/bin/busybox
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
if [ -n "${BACKLOG:-}" ]; then	# static helpers for the backlog check, and unix_diag for < 5.17
	for h in listen_noaccept connect_burst; do
		aarch64-linux-gnu-gcc -static -O2 -o "$tmp/root/bin/$h" "tests/backlog/$h.c" ||
			{ bad "cannot build tests/backlog/$h.c for arm64 (static)"; finish; }
	done
	if grep -qx 'CONFIG_UNIX_DIAG=m' "$kdir/config"; then
		ko=$(find -L "$kdir/modules/" -name 'unix_diag.ko*' | head -1)
		case $ko in
		*.xz) xz -dc "$ko" >"$tmp/root/unix_diag.ko" ;;
		*.zst) zstd -qdc "$ko" >"$tmp/root/unix_diag.ko" ;;
		?*) cp "$ko" "$tmp/root/unix_diag.ko" ;;
		*) bad "CONFIG_UNIX_DIAG=m but no unix_diag.ko in $kdir/modules"; finish ;;
		esac
	fi
fi
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
[ -f /unix_diag.ko ] && { $B insmod /unix_diag.ko; echo "@@INSMOD@@ unix_diag rc=$?"; }
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
	[ -x /bin/listen_noaccept ] || continue
	# backlog: listen(fd, 4), --backlog watching it, 20 non-blocking connects, Ctrl-C
	/bin/listen_noaccept unix /tmp/bl-$m.sock 4 >/tmp/ln.txt 2>&1 &
	lp=$!
	t0=$($B cut -d' ' -f1 /proc/uptime)
	/udsprobe --backlog --backlog-attach $m --unix /tmp/bl-$m.sock --interval 1 --json /tmp/bl.json >/tmp/bl.txt 2>&1 &
	bp=$!
	i=0
	until $B grep -q '^udsprobe --backlog: attach mode' /tmp/bl.txt && $B grep -q ready /tmp/ln.txt; do
		i=$((i + 1)); [ $i -lt 600 ] && $B kill -0 $bp 2>/dev/null || break; $B sleep 0.2
	done
	/bin/connect_burst unix /tmp/bl-$m.sock 20 --exit >/tmp/burst.txt 2>&1
	$B sleep 2	# one more queue sample and interval
	$B kill -INT $bp; wait $bp
	echo "@@BACKLOG@@ $m rc=$? burst=$($B cat /tmp/burst.txt)"
	echo "@@SECS@@ $m backlog $t0 $($B cut -d' ' -f1 /proc/uptime)"
	$B kill $lp
	$B sed "s/^/@@BT@@ $m /" /tmp/bl.txt
	$B sed "s/^/@@BJ@@ $m /" /tmp/bl.json
	$B rm -f /tmp/bl.json /tmp/bl.txt
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

# the stage tests on the guest's pingpong run (the guest has no python: its JSON and text,
# checked here by test_stages.py's own assertions); one check, its counts in the line
stages_check() {	# stages_check MODE
	local m=$1 d=$RES/stages-$1 counts
	mkdir -p "$d" && cp "$RES/compare-$m.json" "$d/pp.json" && cp "$RES/compare-$m.txt" "$d/pp.txt"
	UDSPROBE_ATTACH=$m UDSPROBE_STAGES_RUN=$d UDSPROBE_STAGES_COUNT=$COUNT PYTHONDONTWRITEBYTECODE=1 \
		timeout 300 python3 -m pytest -q -p no:cacheprovider --junitxml="$d/junit.xml" \
		tests/integration/test_stages.py >"$d/pytest.txt" 2>&1
	local prc=$?
	counts=$(tail -n 1 "$d/pytest.txt")
	if [ "$prc" -eq 0 ] && grep -q ' passed' <<<"$counts"; then
		ok "stage tests $m (tests/integration/test_stages.py on the guest's run): $counts"
	else
		bad "stage tests $m (tests/integration/test_stages.py on the guest's run): exit $prc, $counts"
		grep -E '^(FAILED|ERROR|E  )' "$d/pytest.txt" | head -n 15 | sed 's/^/        /'
	fi
}

# the backlog check: exactly the overflows the client saw, the listener's limit and depth
backlog_check() {	# backlog_check MODE
	local m=$1 v
	sed -n "s/^@@BT@@ $m //p" "$log" >"$RES/backlog-$m.txt"
	sed -n "s/^@@BJ@@ $m //p" "$log" >"$RES/backlog-$m.jsonl"
	v=$(python3 - "$RES/backlog-$m.jsonl" "$m" "$krel" "$(sed -n "s/^@@BACKLOG@@ $m //p" "$log")" <<-'EOF' 2>&1
		import json, re, sys
		path, mode, krel, status = sys.argv[1:5]
		assert status.startswith("rc=0 "), f"udsprobe --backlog: {status}"
		assert "burst=ok=5 eagain=15 inprogress=0 other=0" in status, status
		ev = [json.loads(l) for l in open(path) if l.strip()]
		run = [e for e in ev if e["event"] == "run"][-1]
		assert run["attach_mode"] == mode, run
		major, minor = map(int, re.match(r"(\d+)\.(\d+)", krel).groups())
		src = "iter/unix" if (major, minor) >= (5, 17) else "sock_diag"
		assert run["unix_queue_source"] == src, run
		# before 5.17 tracepoint mode loads without its TCP drop programs, and says so
		assert run["tcp_overflows_counted"] is (mode != "tracepoint" or (major, minor) >= (5, 17)), run
		s = [e for e in ev if e["event"] == "summary" and e["address"].endswith(f"/bl-{mode}.sock")]
		assert len(s) == 1, ev
		s = s[0]
		got = (s["overflows"], s["limit"], s["peak_queue"], [(c["comm"], c["count"]) for c in s["clients"]])
		assert got == (15, 4, 5, [("connect_burst", 15)]), got
		print(f"15 of 20 connects overflowed and were counted, limit 4, peak 5, client connect_burst; queues from {src}")
	EOF
	)
	if [ $? -eq 0 ]; then
		ok "backlog $m: $v"
	else
		bad "backlog $m: $v"
		tail -n 15 "$RES/backlog-$m.txt" | sed 's/^/        /'
	fi
}

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
	[ -n "${BACKLOG:-}" ] || continue
	stages_check "$m"
	backlog_check "$m"
done
[ "$ran" -gt 0 ] || bad "no traced run: --check found no working mode"
# guest seconds per mode and step (uptime in the guest: what a CI budget needs)
awk '$1 == "@@SECS@@" {t[$2] = t[$2] sprintf(" %s %.0f s", $3, $5 - $4)} END {for (m in t) print "  time  " m ":" t[m]}' "$log" | sort
finish
