#!/usr/bin/env bash
# Run udsprobe's tests and finish with one line: "udsprobe tests: N passed, N failed".
#
#   tests/run.sh [all|unit|integration|vm] [extra args for that part's runner]
#
#   all          unit + integration + vm (what `make test` runs)
#   unit         .output/unit_tests (C, pure logic)            extra args: case names / globs
#   integration  pytest tests/integration (real binary, root)   extra args: pytest's (-k, -x, ...)
#   vm           tests/vm/run-matrix.sh (qemu kernel matrix)    extra args: the matrix script's
#
# Root: the integration and vm parts need it; when not root they run through sudo.
# Environment: PYTHON (default /usr/bin/python3, Debian's, which has python3-pytest),
# UDSPROBE (binary under test), UDSPROBE_ATTACH (attach mode for traced tests).
# Exit status: 0 when nothing failed, 1 otherwise. A part that cannot run counts as a failure.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
PYTHON=${PYTHON:-/usr/bin/python3}
UNIT_BIN=${UNIT_BIN:-.output/unit_tests}
VM_MATRIX=tests/vm/run-matrix.sh

what=${1:-all}
[ $# -gt 0 ] && shift
case $what in
all|unit|integration|vm) ;;
-h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
*) echo "usage: tests/run.sh [all|unit|integration|vm] [args]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d /tmp/udsprobe-tests.XXXXXX) || exit 1
chmod 755 "$tmp"	# the root side (sudo) writes its junit file here
trap 'rm -rf "$tmp"' EXIT

total_pass=0
total_fail=0
summaries=()

t_part=$SECONDS
record() {	# record PART PASSED FAILED [NOTE]; the part's wall time: since the last record
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	summaries+=("$(printf '%-12s %d passed, %d failed%s, %ds' "$1:" "$2" "$3" "${4:+ ($4)}" $((SECONDS - t_part)))")
	t_part=$SECONDS
	echo "-- $1: $2 passed, $3 failed${4:+ ($4)}"
}

# record_counts PART RC "PASSED FAILED [SKIPPED]" WHAT: a non-zero exit with no failed test
# (crash, timeout, nothing collected) counts as one failure; no counts at all, too.
record_counts() {
	local part=$1 rc=$2 what=$4
	if [ -z "$3" ]; then
		loud "$what printed no results (exit $rc; counted as 1 failure)"
		record "$part" 0 1 "no results"
		return
	fi
	set -- $3
	if [ "$rc" -ne 0 ] && [ "$2" -eq 0 ]; then
		record "$part" "$1" 1 "$what exit $rc"
	else
		record "$part" "$1" "$2" ${3:+"$3 skipped"}
	fi
}

loud() {
	echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
	echo "!!! $*"
	echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
}

# Commands that need root: run directly as root, else through sudo (keeping our variables).
as_root=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		as_root=(sudo env)
		for v in UDSPROBE UDSPROBE_ATTACH PYTHON; do
			[ -n "${!v:-}" ] && as_root+=("$v=${!v}")
		done
	else
		echo "tests/run.sh: not root and no sudo: root-only tests will fail" >&2
	fi
fi

# "N passed, N failed" from the last such line of a log, as "N N"; empty if none.
counts_from_log() {
	grep -Eo '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1 | sed -E 's/([0-9]+) passed, ([0-9]+) failed/\1 \2/'
}

part_unit() {
	echo "== unit tests =="
	local log=$tmp/unit.log rc
	if ! make -s "$UNIT_BIN" >"$tmp/unit-build.log" 2>&1; then
		cat "$tmp/unit-build.log"
		loud "unit tests did not build (counted as 1 failure)"
		record unit 0 1 "build failed"
		return
	fi
	"$UNIT_BIN" "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	record_counts unit "$rc" "$(counts_from_log "$log")" "$UNIT_BIN"
}

part_integration() {
	echo "== integration tests (pytest, real binary) =="
	local junit=$tmp/integration.xml rc counts
	if ! "$PYTHON" -c 'import pytest' 2>/dev/null; then
		loud "$PYTHON has no pytest: run scripts/install-deps.sh (counted as 1 failure)"
		record integration 0 1 "no pytest"
		return
	fi
	# no .pytest_cache or __pycache__ left in the tree (possibly root-owned)
	"${as_root[@]}" env PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m pytest -q -rfEs -p no:cacheprovider \
		--junitxml="$junit" tests/integration "$@"
	rc=$?
	counts=$("$PYTHON" - "$junit" <<-'EOF' 2>/dev/null
		import sys, xml.etree.ElementTree as ET
		root = ET.parse(sys.argv[1]).getroot()
		suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
		t = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
		print(t["tests"] - t["failures"] - t["errors"] - t["skipped"],
		      t["failures"] + t["errors"], t["skipped"])
	EOF
	)
	# pytest exit 5 = nothing collected, 2-4 = interrupted / internal / usage error
	record_counts integration "$rc" "$counts" pytest
}

part_vm() {
	echo "== VM kernel matrix =="
	local log=$tmp/vm.log rc
	if [ ! -e "$VM_MATRIX" ]; then
		loud "VM MATRIX NOT RUN: $VM_MATRIX does not exist yet (counted as 1 failure)"
		record vm 0 1 "$VM_MATRIX missing"
		return
	fi
	"${as_root[@]}" bash "$VM_MATRIX" "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	record_counts vm "$rc" "$(counts_from_log "$log")" "$VM_MATRIX"
}

case $what in
all)
	part_unit
	part_integration
	part_vm
	;;
*)
	"part_$what" "$@"
	;;
esac

echo
echo "== summary ($(awk -F': *' '$1 ~ /^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) CPUs, $(uname -r), ${SECONDS}s) =="
printf '  %s\n' "${summaries[@]}"
echo "udsprobe tests: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
