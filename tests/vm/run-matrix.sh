#!/usr/bin/env bash
# tests/vm/run-matrix.sh — the kernel matrix: udsprobe's traced integration tests inside stock
# kernels under qemu, once per attach mode each kernel supports (docs/KERNELS.md, "Kernel matrix").
#
#   tests/vm/run-matrix.sh [KERNEL...]          (make test-vm = tests/run.sh vm runs this)
#
# KERNEL: debian-6.1, debian-6.12, a linux-image .deb, a vmlinuz/vmlinux (see scripts/vm-kernel.sh).
# Default: $UDSPROBE_VM_KERNELS, else "debian-5.10 debian-6.1 debian-6.12". The host's own kernel (6.18,
# tracepoint only here) is covered by the host integration run of tests/run.sh, not here.
#
# Per kernel: one boot (one per mode set for a kernel in UDSPROBE_VM_SPLIT); in the guest
# `./udsprobe --check` says which modes work, and for each (fentry, kprobe, tracepoint) pytest
# runs with UDSPROBE_ATTACH=<mode> on test_stages.py and
# test_attach_modes.py, plus test_backlog*.py in the modes UDSPROBE_VM_BACKLOG gives. Prints a
# per-kernel, per-mode table and, last, "N passed, N failed". Exit 1 on any failed test, a mode
# a stock kernel should have but lacks, a timeout (vm-run.sh 124) or a VM failure (125).
#
# Environment:
#   UDSPROBE_VM_KERNELS       kernels to run (args win; "none": the arm64 ones only)
#   UDSPROBE_VM_MODES         only these modes (default: every mode the kernel supports)
#   UDSPROBE_VM_EXPECT_MODES  modes every kernel must support (default: all three for debian-*,
#                             none for other kernels); a missing one counts as a failure
#   UDSPROBE_VM_BACKLOG       where test_backlog*.py runs: "SPEC=MODE[,MODE] ..." or "all" or
#                             "none" (default "debian-5.10=kprobe,tracepoint debian-6.1=kprobe
#                             debian-6.12=fentry debian-6.12-arm64=fentry
#                             debian-5.10-arm64=kprobe,tracepoint"; kernels not named: every
#                             mode; on 5.10,
#                             which lacks iter/unix, AF_UNIX queues come from sock_diag, and
#                             tracepoint mode counts no TCP overflows and must say so).
#                             ~60-200 s per mode under TCG.
#   UDSPROBE_VM_BACKLOG_ONLY  which test_backlog*.py files, per kernel: "SPEC=FILE[,FILE] ...",
#                             a FILE@MODE[+MODE] in those modes only (default
#                             "debian-5.10=test_backlog.py,test_backlog_metrics.py@tracepoint";
#                             kernels not named: all)
#   UDSPROBE_VM_TRACE         where test_trace.py's redis test (-c 1) and the kernel-stage echo pairs,
#                             connections and churn run: "SPEC=MODE[,MODE] ..."
#                             or "all" or "none" (default "debian-6.1=kprobe debian-6.12=fentry,kprobe";
#                             kernels not named: none; 5.10 lacks bpf_task_pt_regs and BPF cmpxchg, which --trace
#                             needs). ~70-85 s per mode under TCG. kprobe mode on both: 6.1 has no
#                             fprobe (a kprobe per syscall wrapper), 6.12 takes them as kprobe.multi.
#   UDSPROBE_VM_TRACE_DEEP    where test_trace_kstages.py's granularity checks (slots beside other
#                             programs' sends, --detail syscall, the same stages as --compare) run:
#                             "SPEC=MODE[,MODE] ..." or "all" or "none" (default
#                             "debian-6.12=fentry"; the other UDSPROBE_VM_TRACE guests run the
#                             echo pairs, connections and churn)
#   UDSPROBE_VM_PREDICT       where test_predict.py (--if-unix: its calibration, BPF run-time
#                             statistics, --compare of programs' TCP run alone) runs: "SPEC=MODE
#                             ..." or "all" or "none" (default "debian-6.12=kprobe"; kernels not
#                             named: none). ~3-5 min under TCG, the calibration ~1.5-2.5 of them
#   UDSPROBE_VM_SINGLE_TCG    which modes boot with single-threaded TCG: "all" (default), "none", or
#                             "SPEC=MODE[,MODE] ..." (those in a second boot). Multi-threaded TCG
#                             (qemu 7.2) hangs the guest now and then while udsprobe attaches and
#                             detaches (see tests/vm/qemu-tcg-single.sh); single is as fast here.
#   UDSPROBE_VM_TIMEOUT       per guest, boot included (default 90 s + each mode's pytest bound)
#   PYTEST_TIMEOUT_PER_FILE   a mode's pytest bound is this times its number of test files
#                             (arm64 guests: PYTEST_TIMEOUT_PER_FILE_ARM64, default twice it:
#                             aarch64 under TCG on x86-64 is the slower guest)
#                             (default 240 s: the slowest file took ~150 s under TCG on a loaded host)
#   UDSPROBE_VM_JOBS          guests run at once (default 2, at most one per 2.5 GB of available
#                             memory). A single-threaded TCG guest kept its host
#                             CPU only 45-70 % busy: it idles on timers and on the RCU-tasks grace
#                             periods of fentry detaches (the job table's cpu and busy columns). On
#                             2 vCPUs three at a time kept them 89 % busy and took the matrix from
#                             1,125 to 817 s; four, 879 s and a timing check (--trace against
#                             --compare, test_trace_kstages.py) out of its slack. Not the default:
#                             at three, 2 of 3 fresh-clone CIs had a guest timing check out
#                             (test_same_stages_as_compare, test_stages.py's coverage 0.948).
#                             Jobs start longest first (longest-processing-time order): their
#                             expected seconds are the last full run's (RESULTS/durations), else the
#                             rows of tests/vm/expected-times.tsv for this CPU
#   UDSPROBE_VM_SPLIT         kernels whose modes run in separate guests, a job each, so that one
#                             long kernel does not hold a slot while the other idles: "SPEC=MODES/
#                             MODES ..." (default "debian-6.12=fentry/kprobe,tracepoint": its fentry
#                             guest carries the backlog and trace tests); "none": one guest each
#   UDSPROBE_VM_CORE          where test_stages.py and test_backlog.py run their core sets only
#                             (-m "not deep": the pingpong attribution, stage names, coverage and
#                             exit checks, not the size-, placement- and signal-dependent ones;
#                             the backlog hooks' synthetic counts and waits, not the iterators and
#                             real servers): "SPEC=MODE[,MODE] ..."
#                             or "none" (default "debian-5.10=kprobe debian-6.1=fentry
#                             debian-6.12=kprobe debian-6.12-arm64=kprobe,tracepoint
#                             debian-5.10-arm64=tracepoint": every amd64 kernel runs the whole file
#                             in one function mode and in tracepoint mode, every arm64 kernel in
#                             one function mode)
#   UDSPROBE_VM_ONCE_MODE     the one mode per kernel in which guest tests that check nothing of the
#                             mode run (test_stages.py's --repeat aggregation; default tracepoint,
#                             the fastest); "" runs them in every mode
#   UDSPROBE_VM_RESULTS       results dir (default .output/vm/matrix): check.txt, junit XML per mode
#   UDSPROBE_VM_ARM64         arm64 kernels (default "debian-6.12-arm64 debian-5.10-arm64"),
#                             "none" to skip them: run as the amd64 ones (the same files, modes,
#                             UDSPROBE_VM_* specs; fentry expected from 6.0 only) in
#                             qemu-system-aarch64 with scripts/vm-arm64-root.sh's Debian arm64
#                             userland as root and `make ARCH=arm64`'s udsprobe (UDSPROBE)
#   UDSPROBE_VM_STATIC        kernel for the static-binary guest (tests/vm/static-guest.sh: `make
#                             static`'s file alone in an initramfs; default: the first kernel),
#                             "none" to skip it
#   UDSPROBE_VM_STATIC_ARM64  the same for `make ARCH=arm64 static` (default: the first arm64
#                             kernel), "none" to skip it
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
IT=tests/integration
PROG=tests/vm/run-matrix.sh
PYTHON=${PYTHON:-/usr/bin/python3}
KERNELS=("$@")
[ ${#KERNELS[@]} -gt 0 ] || read -r -a KERNELS <<<"${UDSPROBE_VM_KERNELS:-debian-5.10 debian-6.1 debian-6.12}"
[ "${KERNELS[*]}" != none ] || KERNELS=()	# the arm64 ones only
VM_TIMEOUT=${UDSPROBE_VM_TIMEOUT:-}
PER_FILE=${PYTEST_TIMEOUT_PER_FILE:-240}
PER_FILE_ARM64=${PYTEST_TIMEOUT_PER_FILE_ARM64:-$((PER_FILE * 2))}
mem_jobs=$(awk '$1 == "MemAvailable:" {print int($2 / 2500000)}' /proc/meminfo 2>/dev/null)
JOBS=${UDSPROBE_VM_JOBS:-2}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
[ -n "${UDSPROBE_VM_JOBS:-}" ] || [ "${mem_jobs:-1}" -ge "$JOBS" ] || JOBS=$((mem_jobs > 1 ? mem_jobs : 1))
# 5.10 has no iter/unix: --backlog reads AF_UNIX queues through sock_diag there
# (test_kernel_limits.py asserts it says so, test_backlog.py that it works)
# tracepoint mode too: before 5.17 it loads without its TCP drop programs (test_backlog.py checks
# the AF_UNIX counts and that TCP overflows are reported as not counted; the storm of
# test_backlog_metrics.py runs in the mode under test: 31,995 = 31,995 there, 7 passed in 193 s);
# on 5.10 arm64 as on amd64
BACKLOG=${UDSPROBE_VM_BACKLOG:-debian-5.10=kprobe,tracepoint debian-6.1=kprobe debian-6.12=fentry debian-6.12-arm64=fentry debian-5.10-arm64=kprobe,tracepoint}
# on 5.10 not test_backlog_ns.py, for CI time (it passes there in kprobe mode: 13 in 157 s; 6.1
# runs it in kprobe mode); test_backlog_metrics.py's storm takes ~100 s in that guest (25 passed
# with test_backlog.py in 386 s, load ~6)
# arm64: test_backlog.py alone (the other two for CI time; amd64 runs them)
# 5.10: test_backlog_metrics.py in tracepoint mode only (its storm counts in kprobe mode on 6.1,
# its export does not depend on the mode; ~200 s a mode under TCG)
BACKLOG_ONLY=${UDSPROBE_VM_BACKLOG_ONLY:-debian-5.10=test_backlog.py,test_backlog_metrics.py@tracepoint debian-6.12-arm64=test_backlog.py debian-5.10-arm64=test_backlog.py}
TRACE=${UDSPROBE_VM_TRACE:-debian-6.1=kprobe debian-6.12=fentry,kprobe}
# the deep checks depend on the kernel's functions and the stage granularity, not on how a function
# is entered (fentry and kprobe probe the same functions with the same handler bodies; the core
# set hits every wrapper): once per kernel in a function mode and in tracepoint mode (5.10's
# fentry keeps its links: deep there)
CORE=${UDSPROBE_VM_CORE:-debian-5.10=kprobe debian-6.1=fentry debian-6.12=kprobe debian-6.12-arm64=kprobe,tracepoint debian-5.10-arm64=tracepoint}
SPLIT=${UDSPROBE_VM_SPLIT:-debian-6.12=fentry/kprobe,tracepoint debian-6.12-arm64=fentry/kprobe,tracepoint}
ONCE=${UDSPROBE_VM_ONCE_MODE-tracepoint}
# kprobe: the prediction depends on no attach mode, and there it fills the shorter 6.12 guest
PREDICT=${UDSPROBE_VM_PREDICT:-debian-6.12=kprobe}
TRACE_TEST=$IT/test_trace.py::test_redis_both_transports[1]
# the kernel stages per mode and kernel (names merged where a tracepoint is missing); their
# timings against --compare's only on the host (TCG times are not representative); and a
# connection per small message, whose close and reuse races the matcher must survive per mode;
# and the syscall hooks of the mode (the function modes: the wrappers, no syscall tracepoint)
KSTAGE_TESTS="$IT/test_trace_kstages.py::test_echo_pair_kernel_stages $IT/test_trace_kstages.py::test_redis_connection_per_incr $IT/test_trace_kstages.py::test_connection_per_greeting $IT/test_trace.py::test_small_request_churn_exact $IT/test_trace.py::test_hooks_per_attach_mode"
# slots beside other programs' sends, --detail syscall and the same stages as --compare depend on
# the stage granularity, not on how a function is entered (one handler body per boundary, thin
# fentry and kprobe wrappers, which the tests above hit): once in a function mode
KSTAGE_DEEP_TESTS="$IT/test_trace_kstages.py::test_other_programs_large_sends_take_no_slot $IT/test_trace_kstages.py::test_detail_syscall $IT/test_trace_kstages.py::test_same_stages_as_compare"
TRACE_DEEP=${UDSPROBE_VM_TRACE_DEEP:-debian-6.12=fentry}
SINGLE_TCG=${UDSPROBE_VM_SINGLE_TCG:-all}
RESULTS=${UDSPROBE_VM_RESULTS:-$REPO/.output/vm/matrix}
ALL_MODES="fentry kprobe tracepoint"
read -r -a ARM64 <<<"${UDSPROBE_VM_ARM64:-debian-6.12-arm64 debian-5.10-arm64}"
[ "${ARM64[*]}" != none ] || ARM64=()
STATIC_ARM64=${UDSPROBE_VM_STATIC_ARM64:-${ARM64[0]:-none}}

case ${1:-} in -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", b - a}'; }

t_start=$(now)
if [ ! -x ./udsprobe ]; then
	echo "$PROG: ./udsprobe missing: building it"
	make -s udsprobe || { echo "$PROG: build failed"; echo "0 passed, 1 failed"; exit 1; }
fi
command -v "$PYTHON" >/dev/null || { echo "$PROG: $PYTHON not found"; echo "0 passed, 1 failed"; exit 1; }

# ---- which test files run in the guest, and in which modes ----
guest_all=()	# every mode
for f in test_stages.py test_attach_modes.py; do
	if [ -f "$IT/$f" ]; then guest_all+=("$IT/$f"); else echo "note: $IT/$f does not exist (yet): not run"; fi
done
backlog_files=()
for f in "$IT"/test_backlog*.py; do [ -f "$f" ] && backlog_files+=("$f"); done
host_only=()
for f in "$IT"/test_*.py; do
	case " ${guest_all[*]} ${backlog_files[*]} $IT/test_btf.py $IT/test_kernel_limits.py " in *" $f "*) ;; *) host_only+=("${f##*/}") ;; esac
done

modes_for() {	# modes_for "SPEC=MODE,.. ..." SPEC DEFAULT -> modes (space-separated)
	local e
	case $1 in all) echo "$ALL_MODES"; return ;; none) return ;; esac
	for e in $1; do
		if [ "${e%%=*}" = "$2" ]; then echo "${e#*=}" | tr ',' ' '; return; fi
	done
	echo "$3"
}
backlog_modes() { modes_for "$BACKLOG" "$1" "$ALL_MODES"; }
backlog_only() { modes_for "$BACKLOG_ONLY" "$1" ""; }	# empty: every test_backlog*.py
trace_modes() { modes_for "$TRACE" "$1" ""; }
trace_deep_modes() { modes_for "$TRACE_DEEP" "$1" ""; }
predict_modes() { modes_for "$PREDICT" "$1" ""; }
backlog_file_in() {	# backlog_file_in FILE MODE "ONLY ...": ONLY is FILE or FILE@MODE[+MODE]; empty: all
	local e
	[ -z "$3" ] && return 0
	for e in $3; do
		[ "${e%%@*}" = "$1" ] || continue
		case $e in *@*) in_list "$2" "${e#*@}" || in_list "$2" "$(tr '+' ' ' <<<"${e#*@}")" && return 0 ;; *) return 0 ;; esac
	done
	return 1
}
core_modes() { modes_for "$CORE" "$1" ""; }
single_modes() { modes_for "$SINGLE_TCG" "$1" ""; }
split_parts() {	# split_parts SPEC -> its guests' mode sets ("fentry kprobe,tracepoint"), empty: one guest
	local e
	[ "$SPLIT" = none ] && return
	for e in $SPLIT; do
		if [ "${e%%=*}" = "$1" ]; then echo "${e#*=}" | tr '/' ' '; return; fi
	done
}
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
mode_files() {	# mode_files MODE MODE_FILES... -> how many files run in MODE (as guest-suite.sh picks)
	local m=$1 n=0 f
	shift
	for f in "$@"; do
		case $f in *:*) [ "${f%%:*}" = "$m" ] && n=$((n + 1)) ;; *) n=$((n + 1)) ;; esac
	done
	echo "$n"
}

echo "== kernel matrix: ${KERNELS[*]}${ARM64[*]:+ (arm64: ${ARM64[*]})} =="
echo "in every supported mode: ${guest_all[*]##*/}; in kprobe mode: test_btf.py (BTF hidden, --btf FILE); in tracepoint mode: test_kernel_limits.py"
if [ ${#backlog_files[@]} -gt 0 ]; then
	for k in "${KERNELS[@]}" "${ARM64[@]}"; do
		m=$(backlog_modes "$k")
		echo "$(f=$(backlog_only "$k"); echo "${f:-${backlog_files[*]##*/}}") on $k: ${m:-not run}" \
			"(~60 s per mode under TCG; every mode on every kernel would break the 10-minute" \
			"budget; UDSPROBE_VM_BACKLOG=all runs them all)"
	done
fi
for k in "${KERNELS[@]}" "${ARM64[@]}"; do
	m=$(core_modes "$k")
	[ -z "$m" ] || echo "test_stages.py and test_backlog.py on $k: core set only (-m \"not deep\") in: $m (UDSPROBE_VM_CORE)"
done
for k in "${KERNELS[@]}" "${ARM64[@]}"; do
	m=$(trace_modes "$k")
	echo "${TRACE_TEST#"$IT"/}, test_trace_kstages.py's echo pairs and connection per INCR and per greeting, and the mode's syscall hooks on $k: ${m:-not run} (~70-85 s per mode under TCG; UDSPROBE_VM_TRACE)"
	m=$(trace_deep_modes "$k")
	[ -z "$m" ] || echo "test_trace_kstages.py's slots beside other programs' sends, --detail syscall and the same stages as --compare on $k: $m (~50 s under TCG; UDSPROBE_VM_TRACE_DEEP)"
done
for k in "${KERNELS[@]}" "${ARM64[@]}"; do
	m=$(predict_modes "$k")
	[ -z "$m" ] || echo "test_predict.py on $k: $m (~5 min per mode under TCG; UDSPROBE_VM_PREDICT)"
done
[ ${#host_only[@]} -eq 0 ] || echo "not run in the guest: ${host_only[*]}: CLI, untraced workload, cleanup and" \
	"report rendering do not depend on the attach mode; the host integration run covers them"
echo "the host kernel ($(uname -r), tracepoint mode here) is covered by tests/run.sh's host integration run"

ARCH=$(uname -m)
ROWS=/dev/null	# each job's rows file (run_job sets it)
row() {	# row KERNEL MODE PASSED FAILED SKIPPED SECS NOTE
	printf '%s\t%s\t%s\t%s\n' "$3" "$4" "$5" \
		"$(printf '%-28s %-7s %-11s %6s %6s %7s %5s  %s' "$1" "${ROW_ARCH:-$ARCH}" "$2" "$3" "$4" "$5" "$6" "$7")" >>"$ROWS"
}

junit_counts() {	# junit_counts FILE -> "passed failed skipped", empty if unreadable
	"$PYTHON" - "$1" <<-'EOF' 2>/dev/null
		import sys, xml.etree.ElementTree as ET
		root = ET.parse(sys.argv[1]).getroot()
		suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
		t = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
		print(t["tests"] - t["failures"] - t["errors"] - t["skipped"], t["failures"] + t["errors"], t["skipped"])
	EOF
}

run_kernel() {	# run_kernel N SPEC [MODES]: boot SPEC, run its modes (or MODES, "a,b"), write rows
	local i=$1 spec=$2 part=${3:-} label res kdir krel karch bin per_file fetch t0 expect files want single multi boot_failed
	local boot bmodes qemu guest_timeout vrc=0 took=- mode works why prc msecs nfiles counts note m own
	label=$spec
	case $spec in */*) label=${spec##*/} ;; esac
	res=$RESULTS/$i-$(tr -c 'A-Za-z0-9._-' '_' <<<"$label" | sed 's/_$//')${part:+-${part//,/+}}
	own=${part//,/ }
	own=${own:-$ALL_MODES}	# the modes this job boots and reports
	rm -rf "$res" && mkdir -p "$res" || { row "$label" - 0 1 0 0 "cannot create $res"; return; }

	echo
	echo "==== kernel $i: $spec${part:+ (modes $own; UDSPROBE_VM_SPLIT)} ===="
	t0=$(now)
	if ! kdir=$(scripts/vm-kernel.sh "$spec"); then
		row "$label" - 0 1 0 "$(secs "$t0" "$(now)")" "could not fetch the kernel (vm-kernel.sh failed)"
		return
	fi
	krel=$(cat "$kdir/release")
	karch=$(cat "$kdir/arch" 2>/dev/null || echo amd64)
	# an arm64 kernel boots with the arm64 root (vm-run.sh) and runs the arm64 build
	bin=$REPO/udsprobe per_file=$PER_FILE
	if [ "$karch" = arm64 ]; then
		ROW_ARCH=aarch64 bin=$REPO/.output/arm64/udsprobe per_file=$PER_FILE_ARM64
		[ -x "$bin" ] || { row "$krel ($spec)" - 0 1 0 - "$bin missing: make ARCH=arm64 failed"; return; }
	fi
	label="$krel"
	[ "$spec" = "${spec#*/}" ] && label="$krel ($spec)"
	fetch=$(secs "$t0" "$(now)")
	echo "kernel $krel ready in ${fetch}s ($kdir)"

	if [ -n "${UDSPROBE_VM_EXPECT_MODES+x}" ]; then expect=${UDSPROBE_VM_EXPECT_MODES//,/ }
	else case $spec in debian-*) expect=$ALL_MODES ;; *) expect='' ;; esac; fi
	# arm64 has BPF trampolines (fentry) from 6.0 only
	[ "$karch" = arm64 ] && [ "$(printf '%s\n' "$krel" 6.0 | sort -V | head -1)" != 6.0 ] &&
		expect=${expect//fentry/}
	files=("${guest_all[@]}")
	# no kernel BTF (hidden) + --btf FILE: kprobe mode is the one that can work then; the
	# kernel-limits checks do not depend on the mode
	[ -f "$IT/test_btf.py" ] && files+=("kprobe:$IT/test_btf.py")
	[ -f "$IT/test_kernel_limits.py" ] && files+=("tracepoint:$IT/test_kernel_limits.py")
	for m in $(backlog_modes "$spec"); do
		for f in "${backlog_files[@]}"; do
			backlog_file_in "${f##*/}" "$m" "$(backlog_only "$spec")" && files+=("$m:$f")
		done
	done
	if [ -f "$IT/test_trace.py" ]; then
		for m in $(trace_modes "$spec"); do
			files+=("$m:$TRACE_TEST")
			for t in $KSTAGE_TESTS; do files+=("$m:$t"); done
		done
		for m in $(trace_deep_modes "$spec"); do
			for t in $KSTAGE_DEEP_TESTS; do files+=("$m:$t"); done
		done
	fi
	if [ -f "$IT/test_predict.py" ]; then
		for m in $(predict_modes "$spec"); do files+=("$m:$IT/test_predict.py"); done
	fi

	# one boot for most modes; the UDSPROBE_VM_SINGLE_TCG ones in a second, single-threaded TCG boot
	want=${UDSPROBE_VM_MODES:-$ALL_MODES}
	want=${want//,/ }
	single='' multi='' boot_failed=''
	for m in $want; do
		in_list "$m" "$own" || continue
		if in_list "$m" "$(single_modes "$spec")"; then single+=" $m"; else multi+=" $m"; fi
	done
	for boot in multi single; do
		bmodes=${!boot}
		[ -n "$bmodes" ] || continue
		qemu=()
		[ $boot = single ] && qemu=(env QEMU="$REPO/tests/vm/qemu-tcg-single.sh")
		# a loaded host slows TCG: each mode has its own pytest bound (and 30 s to stop at it),
		# the boot the sum
		guest_timeout=90
		for m in $bmodes; do guest_timeout=$((guest_timeout + $(mode_files "$m" "${files[@]}") * per_file + 30)); done
		guest_timeout=${VM_TIMEOUT:-$guest_timeout}
		echo "-- boot ($boot-threaded TCG) for:$bmodes (timeout ${guest_timeout}s)"
		t0=$(now)
		"${qemu[@]}" scripts/vm-run.sh -k "$kdir" -t "$guest_timeout" \
			-e UDSPROBE_EXPECT_MODES="$expect" -e PYTEST_TIMEOUT_PER_FILE="$per_file" \
			-e UDSPROBE_VM_MODES="${bmodes# }" -e UDSPROBE=$bin \
			$([ -f "$kdir/vmlinux" ] && echo "-e UDSPROBE_VMLINUX=$kdir/vmlinux") \
			-e UDSPROBE_VM_ONCE_MODE="$ONCE" -e UDSPROBE_VM_CORE_MODES="$(core_modes "$spec")" \
			-- tests/vm/guest-suite.sh "$res" "${files[@]}"
		vrc=$?
		took=$(secs "$t0" "$(now)")
		echo "guest $krel ($boot-threaded TCG:$bmodes): exit $vrc after ${took}s"
		[ "$vrc" -eq 0 ] || boot_failed+=" $bmodes"
		case $vrc in
		0) ;;
		124) row "$label" "${bmodes# }" 0 1 0 "$took" "TIMEOUT: guest killed after ${guest_timeout}s (vm-run.sh 124)" ;;
		125) row "$label" "${bmodes# }" 0 1 0 "$took" "VM FAILURE (vm-run.sh 125, reason above)" ;;
		*) row "$label" "${bmodes# }" 0 1 0 "$took" "guest suite failed (exit $vrc; udsprobe --check failed?)" ;;
		esac
	done
	if [ -z "$single$multi" ]; then	# UDSPROBE_VM_MODES leaves none of this job's modes
		for mode in $own; do row "$label" "$mode" 0 0 0 - "not run (UDSPROBE_VM_MODES)"; done
		return
	fi
	if [ ! -s "$res/modes" ]; then
		[ "$vrc" -eq 0 ] && row "$label" - 0 1 0 "$took" "no --check result from the guest"
		return
	fi
	tcg_note() { in_list "$1" "$single" && echo "single-threaded TCG; "; }
	for mode in $own; do
		works=no
		grep -qx "$mode yes" "$res/modes" && works=yes
		if [ $works = no ]; then
			why=$(awk -v m="$mode" '$1 == m {$1 = $2 = ""; sub(/^ +/, ""); print}' "$res/check.txt")
			case " $expect " in
			*" $mode "*) row "$label" "$mode" 0 1 0 - "MISSING: a stock kernel must support it ($why)" ;;
			*) row "$label" "$mode" 0 0 0 - "not supported: $why" ;;
			esac
			continue
		fi
		if ! in_list "$mode" "$want"; then
			row "$label" "$mode" 0 0 0 - "supported; not run (UDSPROBE_VM_MODES)"
			continue
		fi
		prc=$(cat "$res/$mode.rc" 2>/dev/null || echo none)
		msecs=$(cat "$res/$mode.secs" 2>/dev/null || echo -)
		nfiles=$(sed 's,.*/,,' "$res/$mode.files" 2>/dev/null | tr '\n' ' ')
		counts=$(junit_counts "$res/$mode.xml")
		if [ -z "$counts" ] && in_list "$mode" "$boot_failed"; then
			row "$label" "$mode" 0 0 0 "$msecs" "no results: its guest failed (counted above)"
			continue
		fi
		if [ -z "$counts" ]; then
			row "$label" "$mode" 0 1 0 "$msecs" "no test results (pytest exit $prc)$(in_list "$mode" "$single" && echo "; single-threaded TCG")"
			continue
		fi
		set -- $counts
		note="$(tcg_note "$mode")$(in_list "$mode" "$(core_modes "$spec")" && echo "core set; ")$nfiles"
		if [ "$prc" != 0 ] && [ "$2" -eq 0 ]; then
			row "$label" "$mode" "$1" 1 "$3" "$msecs" "pytest exit $prc$([ "$prc" = 124 ] && echo ' (timeout)'); $note"
		else
			row "$label" "$mode" "$1" "$2" "$3" "$msecs" "$note"
		fi
	done
}

STATIC=${UDSPROBE_VM_STATIC:-${KERNELS[0]:-none}}
run_static() {	# run_static [arm64]: the static binary alone in an initramfs
	local arch=${1:-} k=$STATIC name=static t0 src counts sp sf smode
	if [ "$arch" = arm64 ]; then k=$STATIC_ARM64 name=static-arm64 ROW_ARCH=aarch64; fi
	echo
	echo "==== static binary: udsprobe-static${arch:+ ($arch)} alone in an initramfs, kernel $k ===="
	t0=$(now)
	mkdir -p "$RESULTS"
	UDSPROBE_VM_RESULTS=$RESULTS tests/vm/static-guest.sh ${arch:+--arch $arch} "$k" | tee "$RESULTS/$name.log"
	src=${PIPESTATUS[0]}
	counts=$(tail -n 1 "$RESULTS/$name.log")
	sp=0 sf=1
	[[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]] && sp=${BASH_REMATCH[1]} sf=${BASH_REMATCH[2]}
	[ "$src" -ne 0 ] && [ "$sf" -eq 0 ] && sf=1
	smode=$(sed -n 's/.*PASS  traced --compare.*: \([a-z]*\) mode,.*/\1/p' "$RESULTS/$name.log" | head -1)
	row "$k (static, no libs)" "${smode:--}" \
		"$sp" "$sf" 0 "$(secs "$t0" "$(now)")" "tests/vm/static-guest.sh: --check + traced --compare, no shared library in the guest"
}

# ---- the jobs: one per kernel, one per arm64 kernel, one for the static guest; JOBS at a time ----
# Each job's output goes to its log, printed whole when it ends; its rows to a file, read in
# job order for the table.
mkdir -p "$RESULTS" || { echo "$PROG: cannot create $RESULTS"; echo "0 passed, 1 failed"; exit 1; }
jobs_list=()
add_jobs() {	# add_jobs JOB SPEC: a job, or one per mode set UDSPROBE_VM_SPLIT gives SPEC
	local parts covered p
	parts=$(split_parts "$2")
	if [ -z "$parts" ]; then jobs_list+=("$1 $2"); return; fi
	covered=$(tr ', ' '\n\n' <<<"$parts" | sort | paste -sd' ')
	if [ "$covered" != "$(tr ' ' '\n' <<<"$ALL_MODES" | sort | paste -sd' ')" ]; then
		echo "$PROG: UDSPROBE_VM_SPLIT: $2=${parts// //}: each of $ALL_MODES must be in exactly one guest"
		echo "0 passed, 1 failed"
		exit 1
	fi
	for p in $parts; do jobs_list+=("$1 $2 $p"); done
}
for i in "${!KERNELS[@]}"; do add_jobs "kernel $((i + 1))" "${KERNELS[$i]}"; done
for k in "${ARM64[@]}"; do add_jobs arm64 "$k"; done	# the same, in arm64 guests
[ "$STATIC" = none ] || jobs_list+=("static")
[ "$STATIC_ARM64" = none ] || jobs_list+=("static-arm64")
run_job() {	# run_job N JOB...
	local n=$1
	shift
	ROWS=$RESULTS/job-$n.rows
	: >"$ROWS"
	case $1 in
	kernel) run_kernel "$2" "$3" "${4:-}" ;;
	arm64) run_kernel arm64 "$2" "${3:-}" ;;
	static) run_static ;;
	static-arm64) run_static arm64 ;;
	esac
	job_cpu >"$RESULTS/job-$n.cpu"
}
# CPU seconds this job's processes used (qemu, the builds of its root and initramfs): the
# subshell's waited-for children's user + system time, /proc/PID/stat fields 16 and 17
job_cpu() {
	local st
	read -r -a st <"/proc/$BASHPID/stat" || return
	awk -v t=$((st[15] + st[16])) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f\n", t / hz}'
}
# Longest first (LPT): with two slots the long guests overlap each other, the short ones fill
# the end. Expected seconds: this machine's last run of the job (RESULTS/durations), else this
# CPU's row in tests/vm/expected-times.tsv (its vendor and family's, else the slowest family's).
job_key() { set -- $1; [ "$1" = kernel ] && shift 2 && set -- kernel "$@"; echo "$*"; }
EXPECTED=tests/vm/expected-times.tsv
cpu_key() {	# "GenuineIntel 6/85": the CPU the expected times are kept by
	awk -F': *' '$1 ~ /^vendor_id/ {v = $2} $1 ~ /^cpu family/ {f = $2} $1 ~ /^model\t/ || $1 == "model" {m = $2}
		/^$/ {exit} END {print v " " f "/" m}' /proc/cpuinfo 2>/dev/null
}
CPU_KEY=$(cpu_key)
CPU_MODEL=$(awk -F': *' '$1 ~ /^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
# the expected-times rows this CPU takes: its own, its family's, else the slowest family's
cpu_rows() {
	awk -F'\t' -v key="$CPU_KEY" '
		/^#/ || NF < 3 {next}
		{split(key, k, "/"); cpu[NR] = $1; job[NR] = $2; sec[NR] = $3
		 total[$1] += $3}
		END {
			for (i in cpu) if (cpu[i] == key) pick = key
			if (pick == "") for (i in cpu) { split(cpu[i], cc, "/"); if (cc[1] == k[1]) pick = cpu[i] }
			if (pick == "") for (c in total) if (pick == "" || total[c] > total[pick]) pick = c
			for (i in cpu) if (cpu[i] == pick) print pick "\t" job[i] "\t" sec[i]
		}' "$EXPECTED" 2>/dev/null
}
EXPECTED_ROWS=$(cpu_rows)
EXPECTED_CPU=$(head -n 1 <<<"$EXPECTED_ROWS" | cut -f1)
est_table() {	# est_table JOB_KEY -> this CPU's expected seconds, 600 when not measured yet
	local s
	s=$(awk -F'\t' -v k="$1" '$2 == k {print $3}' <<<"$EXPECTED_ROWS")
	echo "${s:-600}"
}
est() {	# est JOB -> expected seconds
	local k s
	k=$(job_key "$1")
	s=$(awk -F'\t' -v k="$k" '$1 == k {s = $2} END {print s}' "$RESULTS/durations" 2>/dev/null)
	echo "${s:-$(est_table "$k")}"
}
order=()
mapfile -t order < <(for n in "${!jobs_list[@]}"; do printf '%s\t%s\n' "$(est "${jobs_list[$n]}")" "$n"; done |
	sort -t$'\t' -k1,1nr -k2,2n | cut -f2)
# LPT on JOBS slots: the matrix's expected wall time, said before it starts
plan=$(for n in "${order[@]}"; do est "${jobs_list[$n]}"; done | awk -v j="$JOBS" '
	{m = 1; for (i = 2; i <= j; i++) if (slot[i] < slot[m]) m = i; slot[m] += $1; sum += $1}
	END {w = 0; for (i = 1; i <= j; i++) if (slot[i] > w) w = slot[i]; printf "%d %d", w, sum}')
# every job's kernel fetched in the background, in the jobs' order, from now on: a later job
# finds its kernel ready instead of downloading it in its slot (~10-30 s each; vm-kernel.sh
# serialises the writers, and a job whose kernel is not there yet fetches or waits for it)
# (disowned: not one of the jobs the slots count; stopped when the matrix ends)
prefetch=$(for n in "${order[@]}"; do set -- ${jobs_list[$n]}; case $1 in kernel) echo "$3" ;; arm64) echo "$2" ;; esac; done |
	awk '!seen[$0]++')
if [ -n "$prefetch" ]; then
	# shellcheck disable=SC2086 # one SPEC per word
	setsid sh -c 'for k; do scripts/vm-kernel.sh -q "$k" >/dev/null 2>&1; done' prefetch $prefetch &
	prefetch_pid=$!
	disown "$prefetch_pid"
	trap 'kill -- "-$prefetch_pid" 2>/dev/null' EXIT
fi
# the builds once, before the jobs: two makes at once in one tree would race
[ "$STATIC" = none ] || make -s static >/dev/null 2>&1 || true
case " ${jobs_list[*]} " in *" arm64 "* | *" static-arm64 "*)
	make -s ARCH=arm64 >/dev/null 2>&1 && make -s ARCH=arm64 static >/dev/null 2>&1 ||
		echo "$PROG: make ARCH=arm64 failed (scripts/install-deps.sh installs the cross compiler): the arm64 jobs fail"
	# the arm64 root, once: its first build downloads ~80 MB
	scripts/vm-arm64-root.sh >/dev/null || echo "$PROG: scripts/vm-arm64-root.sh failed: the arm64 guests fail" ;;
esac
echo "CPU: ${CPU_MODEL:-unknown} (${CPU_KEY}); expected times: ${EXPECTED_CPU:-none} rows of $EXPECTED" \
	"(.output/vm/matrix/durations where this machine ran the job before)"
echo "expected: ${plan% *}s of wall time for ${plan#* }s of jobs on $JOBS slots"
echo "running ${#jobs_list[@]} jobs, $JOBS at a time (UDSPROBE_VM_JOBS), longest expected first: each job's log is printed when it ends"
pids=() names=() t_job=() took_jobs=() took_any=() expect_jobs=()
print_done() {	# the logs of jobs that have ended, in the order they end
	local d
	for d in "${!pids[@]}"; do
		kill -0 "${pids[$d]}" 2>/dev/null && continue
		wait "${pids[$d]}"
		took_jobs[$d]=$(secs "${t_job[$d]}" "$(now)") took_any[$d]=${took_jobs[$d]}
		echo; echo "[$(secs "$t_start" "$(now)")s] done: ${names[$d]} (${took_jobs[$d]}s)"; cat "$RESULTS/job-$d.log"
		unset "pids[$d]"
	done
}
for n in "${order[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
	echo "[$(secs "$t_start" "$(now)")s] start: ${jobs_list[$n]} (~$(est "${jobs_list[$n]}")s expected)"
	t_job[$n]=$(now) expect_jobs[$n]=$(est "${jobs_list[$n]}")
	run_job "$n" ${jobs_list[$n]} >"$RESULTS/job-$n.log" 2>&1 &
	pids[$n]=$! names[$n]=${jobs_list[$n]}
	print_done
done
while [ ${#pids[@]} -gt 0 ]; do
	wait -n
	print_done
done
# this run's times of the jobs that passed (a failed one may have stopped early), the next
# run's order; none from a run of some modes only (UDSPROBE_VM_MODES)
for n in "${!took_jobs[@]}"; do
	[ -z "${UDSPROBE_VM_MODES:-}" ] && awk -F'\t' '$2 > 0 {f = 1} END {exit f}' "$RESULTS/job-$n.rows" ||
		unset "took_jobs[$n]"
done
{
	for n in "${!took_jobs[@]}"; do printf '%s\t%s\n' "$(job_key "${jobs_list[$n]}")" "${took_jobs[$n]}"; done
	# the jobs not run (or failed) this time keep their last time
	awk -F'\t' -v new="$(for n in "${!took_jobs[@]}"; do job_key "${jobs_list[$n]}"; done)" \
		'BEGIN {split(new, k, "\n"); for (i in k) skip[k[i]]} !($1 in skip)' "$RESULTS/durations" 2>/dev/null || true
} >"$RESULTS/durations.new" && mv "$RESULTS/durations.new" "$RESULTS/durations"

# each job against its expectation: a job past 1.5x says so (a slower CPU, a loaded host)
echo
echo "== job times on ${CPU_MODEL:-this CPU} (${CPU_KEY}) against ${EXPECTED_CPU:-no} expectations =="
cpu_sum=0
printf '%-44s %8s %8s %6s %7s %5s\n' job expected actual ratio cpu busy
for n in "${!jobs_list[@]}"; do
	e=${expect_jobs[$n]:-0} a=${took_jobs[$n]:-${took_any[$n]:-}}
	[ -n "$a" ] || continue
	r=$(awk -v a="$a" -v e="$e" 'BEGIN {if (e > 0) printf "%.2f", a / e; else print "-"}')
	c=$(cat "$RESULTS/job-$n.cpu" 2>/dev/null) cpu_sum=$((cpu_sum + ${c:-0}))
	printf '%-44s %7ss %7ss %6s %6ss %5s%s\n' "$(job_key "${jobs_list[$n]}")" "$e" "$a" "$r" "${c:--}" \
		"$(awk -v c="${c:-}" -v a="$a" 'BEGIN {if (c != "" && a > 0) printf "%.2f", c / a; else print "-"}')" \
		"$(awk -v r="$r" 'BEGIN {if (r != "-" && r > 1.5) print "  SLOW: past 1.5x its expected time"}')"
done
# cpu/actual is how busy a job kept the host: a guest idles on timers and on the RCU-tasks grace
# periods of fentry detaches, so more guests than CPUs can run at once (UDSPROBE_VM_JOBS)
wall=$(secs "$t_start" "$(now)")
echo "jobs' CPU: ${cpu_sum}s in ${wall}s of wall on $(nproc) CPUs ($(awk -v c="$cpu_sum" -v w="$wall" -v n="$(nproc)" \
	'BEGIN {printf "%.0f", (w > 0 ? 100 * c / (w * n) : 0)}')% of them), $JOBS jobs at a time"

total_pass=0 total_fail=0 total_skip=0 rows=()
for n in "${!jobs_list[@]}"; do
	while IFS=$'\t' read -r p f k line; do
		total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + k))
		rows+=("$line")
	done <"$RESULTS/job-$n.rows"
done

echo
echo "== kernel matrix summary ($(secs "$t_start" "$(now)")s; results in ${RESULTS#"$REPO"/}) =="
printf '%-28s %-7s %-11s %6s %6s %7s %5s  %s\n' kernel arch mode passed failed skipped secs "files / note"
printf '%s\n' "${rows[@]}"
printf '%-28s %-7s %-11s %6s %6s %7s %5s  %s\n' "host $(uname -r)" "$ARCH" tracepoint - - - - \
	"covered by the host integration run (tests/run.sh integration), not counted here"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
