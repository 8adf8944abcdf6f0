#!/usr/bin/env bash
# vm-run.sh — run a command inside a qemu guest booted from another kernel (docs/KERNELS.md).
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

usage() {
	cat <<EOF
Usage: $PROG [options] -- CMD [ARGS...]

Boot a kernel in qemu (TCG), share the host / read-only and the work dir read-write at the same
path, run CMD there as root and exit with its status. An arm64 kernel (debian-X.Y-arm64) boots
in qemu-system-aarch64 -M virt with an arm64 root instead of the host's / (--root; default
scripts/vm-arm64-root.sh's Debian 12 arm64 userland).

  -k, --kernel SPEC   debian-6.1 (default), debian-6.12, a kernel .deb, a vmlinuz/vmlinux path
                      or a cache dir from scripts/vm-kernel.sh (see its --help)
      --modules DIR   modules for a bare vmlinuz/vmlinux SPEC (passed to vm-kernel.sh)
      --root DIR      share DIR as the guest's root instead of the host's / (read-only, under
                      the same overlay); it must hold /bin/sh for the kernel's architecture
  -t, --timeout SEC   kill the guest after SEC seconds, boot included (default 600): exit 124
  -m, --mem MB        guest memory (default 2048)
  -c, --cpus N        guest CPUs (default 2)
  -w, --workdir DIR   shared read-write and used as cwd (default: the git work tree of the
                      current directory, else the current directory)
  -e, --env NAME=VAL  set a variable in the guest (repeatable); -E NAME passes the host's value
  -E, --pass-env NAME (e.g. -E PATH to keep pyenv/venv tools in the guest's PATH)
      --no-overlay    root is the read-only host / (default: a tmpfs overlay on it, so the
                      guest can write anywhere; writes outside the work dir are discarded)
      --bzimage       boot the compressed vmlinuz instead of the extracted vmlinux (slower)
  -v, --verbose       show the whole serial console (kernel log, init steps)
  -h, --help          this help

CMD: one argument is a shell command line run with sh -c ('make test && ./x'); several
arguments are a command and its arguments, passed unchanged.
Guest environment: PATH=$GUEST_PATH, HOME=/root, LANG=C.UTF-8, TERM=dumb,
UDSVM=1, cwd = the work dir, stdin /dev/null, stdout and stderr (a pipe) go to our stdout.

Exit status: CMD's status; 124 timeout (qemu killed); 125 VM failure (qemu did not start,
kernel panic, guest never reported a status) and for usage errors. Killing this script
(INT/TERM/HUP) kills qemu; if it is SIGKILLed, qemu still dies at the timeout.

Examples:
  $PROG -- uname -r
  $PROG --kernel debian-6.12 -- 'sudo -n true; ./udsprobe --check'
  $PROG -E PATH -- python3 -m pytest tests/integration
EOF
}

die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 125; }
usage_err() { printf '%s: %s (see --help)\n' "$PROG" "$*" >&2; exit 125; }

# POSIX sh single-quoting (the guest runs the command with the chroot's /bin/sh)
shq() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

KSPEC=debian-6.1 TIMEOUT=600 MEM=2048 CPUS=2 WORKDIR='' VERBOSE=0 OVERLAY=1 BZIMAGE=0 KMODS='' ROOT=''
ENVS=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	-k | --kernel) [ $# -ge 2 ] || usage_err "$1 needs a value"; KSPEC=$2; shift ;;
	--kernel=*) KSPEC=${1#*=} ;;
	--modules) [ $# -ge 2 ] || usage_err "$1 needs a value"; KMODS=$2; shift ;;
	--root) [ $# -ge 2 ] || usage_err "$1 needs a value"; ROOT=$2; shift ;;
	-t | --timeout) [ $# -ge 2 ] || usage_err "$1 needs a value"; TIMEOUT=$2; shift ;;
	--timeout=*) TIMEOUT=${1#*=} ;;
	-m | --mem) [ $# -ge 2 ] || usage_err "$1 needs a value"; MEM=$2; shift ;;
	--mem=*) MEM=${1#*=} ;;
	-c | --cpus) [ $# -ge 2 ] || usage_err "$1 needs a value"; CPUS=$2; shift ;;
	--cpus=*) CPUS=${1#*=} ;;
	-w | --workdir) [ $# -ge 2 ] || usage_err "$1 needs a value"; WORKDIR=$2; shift ;;
	--workdir=*) WORKDIR=${1#*=} ;;
	-e | --env) [ $# -ge 2 ] || usage_err "$1 needs NAME=VALUE"; ENVS+=("$2"); shift ;;
	-E | --pass-env)
		[ $# -ge 2 ] || usage_err "$1 needs NAME"
		[ -n "${!2+x}" ] || usage_err "$1 $2: not set on the host"
		ENVS+=("$2=${!2}"); shift ;;
	--no-overlay) OVERLAY=0 ;;
	--bzimage) BZIMAGE=1 ;;
	-v | --verbose) VERBOSE=1 ;;
	--) shift; break ;;
	*) usage_err "unknown argument '$1'; put the command after --" ;;
	esac
	shift
done
[ $# -gt 0 ] || usage_err "no command given: $PROG [options] -- CMD [ARGS...]"
for n in "$TIMEOUT" "$MEM" "$CPUS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || usage_err "'$n' is not a positive integer"
done
for e in ${ENVS[@]+"${ENVS[@]}"}; do
	[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_err "--env '$e': expected NAME=VALUE"
done

if [ -z "$WORKDIR" ]; then
	WORKDIR=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
fi
[ -d "$WORKDIR" ] || usage_err "--workdir $WORKDIR: not a directory"
WORKDIR=$(cd "$WORKDIR" && pwd -P)
case $WORKDIR in /) usage_err "--workdir / is not allowed (the host root is shared read-only)" ;; esac

# ---- kernel and initramfs (cached) ----
if [ -f "$KSPEC/.complete" ]; then
	KDIR=$(cd "$KSPEC" && pwd -P)
else
	KDIR=$("$HERE/vm-kernel.sh" ${KMODS:+--modules "$KMODS"} "$KSPEC") ||
		die "could not get kernel '$KSPEC' (vm-kernel.sh failed, see above)"
fi
KREL=$(cat "$KDIR/release")
KARCH=$(cat "$KDIR/arch" 2>/dev/null || echo amd64)
case $KARCH in
amd64)
	QEMU_BIN=qemu-system-x86_64 QPKG=qemu-system-x86 CONSOLE=ttyS0
	MACHINE=(-M pc -cpu max)
	APPEND_ARCH="8250.nr_uarts=1 tsc=reliable no_timer_check" ;;
arm64)
	# pauth-impdef: QEMU's cheap pointer-authentication hash instead of the architected QARMA
	# (TCG spends much of its time in it otherwise); the guest cannot tell the difference
	QEMU_BIN=qemu-system-aarch64 QPKG=qemu-system-arm CONSOLE=ttyAMA0
	MACHINE=(-M virt -cpu max,pauth-impdef=on)
	APPEND_ARCH=''
	if [ -z "$ROOT" ]; then
		ROOT=$("$HERE/vm-arm64-root.sh" -q) || die "could not build the arm64 root (vm-arm64-root.sh failed, see above)"
	fi
	[ -x "$ROOT/bin/busybox" ] && export BUSYBOX=${BUSYBOX:-$ROOT/bin/busybox} ;;
*) die "$KDIR: kernel architecture '$KARCH' not supported (amd64, arm64)" ;;
esac
[ -z "$ROOT" ] || [ -e "$ROOT/bin/sh" ] || die "--root $ROOT: no /bin/sh there"
QEMU=${QEMU:-$QEMU_BIN}
export QEMU_REAL=${QEMU_REAL:-$QEMU_BIN}	# for a wrapper as QEMU (tests/vm/qemu-tcg-single.sh)
command -v "$QEMU" >/dev/null || die "$QEMU not found: apt-get install $QPKG"
INITRD=$("$HERE/vm-initramfs.sh" "$KDIR") || die "could not build the initramfs (see above)"
if [ "$KARCH" = arm64 ]; then
	KIMG=$KDIR/Image	# qemu-system-aarch64 boots the raw Image
elif [ "$BZIMAGE" = 1 ]; then
	[ -f "$KDIR/vmlinuz" ] || die "$KDIR has no vmlinuz for --bzimage"
	KIMG=$KDIR/vmlinuz
else
	KIMG=$KDIR/vmlinux
fi

# ---- control dir: config, command script, status, console log ----
CTL=$(mktemp -d "${TMPDIR:-/tmp}/udsvm.XXXXXX")
QPID=''
cleanup() {
	if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then
		kill -TERM "$QPID" 2>/dev/null || true
		sleep 0.3
		kill -KILL "$QPID" 2>/dev/null || true
	fi
	rm -rf "$CTL"
}
trap cleanup EXIT
trap 'echo "$PROG: interrupted, stopping the guest" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

{
	printf 'KREL=%s\n' "$(shq "$KREL")"
	printf 'WORKDIR=%s\n' "$(shq "$WORKDIR")"
	printf 'OVERLAY=%s\n' "$OVERLAY"
} >"$CTL/config"
if [ -f "$KDIR/config" ]; then cp "$KDIR/config" "$CTL/kconfig"; fi
{
	echo "export PATH=$(shq "$GUEST_PATH") HOME=/root LANG=C.UTF-8 TERM=dumb UDSVM=1"
	echo "export UDSVM_KERNEL=$(shq "$KREL")"
	for e in ${ENVS[@]+"${ENVS[@]}"}; do echo "export ${e%%=*}=$(shq "${e#*=}")"; done
	echo "cd $(shq "$WORKDIR") || exit 125"
	if [ $# -eq 1 ]; then
		echo "exec /bin/sh -c $(shq "$1")"
	else
		printf 'exec'
		for a in "$@"; do printf ' %s' "$(shq "$a")"; done
		echo
	fi
} >"$CTL/cmd.sh"

# ---- boot ----
# loglevel=5: a kernel warning (WARN, refcount underflow) reaches the console, so an oops that
# follows it in a CI log comes with its cause; a stock boot prints none after the start marker
# rcu_expedited: a kprobe's or perf event's detach waits for an RCU grace period, which under
# TCG takes long; expedited, the kernel matrix's kprobe runs took 9-16 % less (docs/KERNELS.md)
APPEND="console=$CONSOLE quiet loglevel=5 panic=-1 oops=panic rdinit=/init $APPEND_ARCH mitigations=off rcupdate.rcu_expedited=1"
[ "$VERBOSE" = 1 ] && APPEND="${APPEND/ quiet loglevel=5/ loglevel=7} udsvm.verbose=1"
vfs() { printf 'local,path=%s,mount_tag=%s,security_model=none,multidevs=remap%s' "$1" "$2" "${3:-}"; }
QARGS=(-accel tcg "${MACHINE[@]}" -smp "$CPUS" -m "$MEM"
	-nodefaults -no-user-config -display none -no-reboot
	-chardev stdio,id=con,signal=off -serial chardev:con
	-kernel "$KIMG" -initrd "$INITRD" -append "$APPEND"
	-virtfs "$(vfs "$CTL" udsctl)"
	-virtfs "$(vfs "${ROOT:-/}" hostroot ,readonly=on)"
	-virtfs "$(vfs "$WORKDIR" work)")
[ -d "$KDIR/modules/" ] && QARGS+=(-virtfs "$(vfs "$(readlink -f "$KDIR/modules")" kmods ,readonly=on)")

START=$(date +%s%N)
# console: everything to $CTL/console.log; to stdout after the start marker (all of it with -v).
# timeout(1) enforces the deadline even if this script is SIGKILLed.
timeout -k 3 "$TIMEOUT" "$QEMU" "${QARGS[@]}" </dev/null 2>"$CTL/qemu.err" > >(
	if [ "$VERBOSE" = 1 ]; then tee "$CTL/console.log"
	else tee "$CTL/console.log" | sed -u -e '0,/^@@UDSVM-START@@\r\?$/d' -e '/^\[ *[0-9.]*\] reboot: Power down\r\?$/d'; fi
) &
QPID=$!
qrc=0
wait "$QPID" || qrc=$?
QPID=''
wait 2>/dev/null || true # the console filter
if [ -n "${UDSVM_TIMING:-}" ]; then
	ms=$((($(date +%s%N) - START) / 1000000))
	printf '%s: guest ran %d.%03ds (%s)\n' "$PROG" $((ms / 1000)) $((ms % 1000)) "$KREL" >&2
fi

if [ -s "$CTL/status" ]; then
	rc=$(tr -dc '0-9' <"$CTL/status")
	exit "${rc:-125}"
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "$PROG: timeout: the guest ran longer than ${TIMEOUT}s and was killed" >&2
	exit 124
fi
# no status: say why
{
	echo "$PROG: VM failure: the guest ($KREL) did not report an exit status (qemu exit $qrc)"
	if [ -s "$CTL/qemu.err" ]; then sed 's/^/  qemu: /' "$CTL/qemu.err"; fi
	if grep -q '@@UDSVM-FAIL@@' "$CTL/console.log" 2>/dev/null; then
		sed -n 's/^.*@@UDSVM-FAIL@@ /  guest init: /p' "$CTL/console.log"
		[ -d "$KDIR/modules/" ] ||
			echo "  $KDIR has no modules: the kernel needs VIRTIO_PCI, NET_9P, NET_9P_VIRTIO and 9P_FS built in, or give --modules DIR"
	elif grep -q 'Kernel panic' "$CTL/console.log" 2>/dev/null; then
		grep -m1 'Kernel panic' "$CTL/console.log" | sed 's/^/  /'
	fi
	# the console up to the command's start was hidden: show its end
	if [ "$VERBOSE" = 0 ] && [ -s "$CTL/console.log" ] && ! grep -q '^@@UDSVM-START@@' "$CTL/console.log"; then
		echo "  last console lines (-v shows the whole console):"
		tail -n 20 "$CTL/console.log" | sed 's/^/  | /'
	fi
} >&2
exit 125
