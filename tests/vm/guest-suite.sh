#!/usr/bin/env bash
# tests/vm/guest-suite.sh — the guest half of tests/vm/run-matrix.sh (runs inside vm-run.sh).
#
#   tests/vm/guest-suite.sh RESULTS_DIR [MODE_FILES...]
#
# Asks `./udsprobe --check` which attach modes this kernel supports and, for each working mode
# (fentry, kprobe, tracepoint, or those in UDSPROBE_VM_MODES), runs pytest with
# UDSPROBE_ATTACH=<mode> on the files given for that mode. MODE_FILES are "MODE:FILE" or "FILE"
# (every mode). Writes into RESULTS_DIR: check.txt (--check's output), modes (one line per
# mode: "fentry yes|no"), <mode>.xml (junit), <mode>.rc, <mode>.files, <mode>.secs.
# Environment: PYTEST_TIMEOUT_PER_FILE (a mode's pytest bound is this times its number of files;
# seconds, default 240), PYTHON (default /usr/bin/python3), UDSPROBE_VM_CORE_MODES (modes whose
# pytest deselects the tests marked deep: -m "not deep").
set -uo pipefail

res=${1:?usage: guest-suite.sh RESULTS_DIR [MODE:FILE|FILE]...}
shift
mkdir -p "$res" || exit 125
PYTHON=${PYTHON:-/usr/bin/python3}
export PYTHONDONTWRITEBYTECODE=1	# no root-owned __pycache__ in the shared tree

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# a soft lockup panics the guest at once (vm-run.sh: 125 with the panic line) instead of
# hanging until the timeout eats the CI budget
echo 1 >/proc/sys/kernel/softlockup_panic 2>/dev/null || true

echo "== $(uname -r): udsprobe --check =="
"${UDSPROBE:-./udsprobe}" --check >"$res/check.txt" 2>&1
crc=$?
cat "$res/check.txt"
if [ "$crc" -ne 0 ]; then
	echo "guest-suite: udsprobe --check exited $crc" >&2
	exit 3
fi
awk '$1 ~ /^(fentry|kprobe|tracepoint)$/ && ($2 == "yes" || $2 == "no") {print $1, $2}' \
	"$res/check.txt" >"$res/modes"

want=${UDSPROBE_VM_MODES:-fentry kprobe tracepoint}
for mode in fentry kprobe tracepoint; do
	case " ${want//,/ } " in *" $mode "*) ;; *) continue ;; esac
	grep -qx "$mode yes" "$res/modes" || continue
	files=()
	for spec in "$@"; do
		case $spec in
		*:*) [ "${spec%%:*}" = "$mode" ] && files+=("${spec#*:}") ;;
		*) files+=("$spec") ;;
		esac
	done
	printf '%s\n' "${files[@]}" >"$res/$mode.files"
	# user-space checks (kernel- and mode-independent) run on the host only
	select=(-m "not userspace")
	case " ${UDSPROBE_VM_CORE_MODES:-} " in *" $mode "*) select=(-m "not deep and not userspace") ;; esac
	echo
	echo "== $(uname -r): UDSPROBE_ATTACH=$mode: ${files[*]##*/} (${select[1]}) =="
	t0=$(uptime_s)
	# SIGINT at the bound: pytest stops and still writes its junit XML (the tests done count)
	UDSPROBE_ATTACH=$mode timeout -s INT -k 30 $((${PYTEST_TIMEOUT_PER_FILE:-240} * ${#files[@]})) \
		"$PYTHON" -m pytest -q -rfEs -p no:cacheprovider --junitxml="$res/$mode.xml" "${select[@]}" "${files[@]}"
	echo $? >"$res/$mode.rc"
	awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN {printf "%.0f\n", b - a}' >"$res/$mode.secs"
done
exit 0
