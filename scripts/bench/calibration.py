#!/usr/bin/python3
"""Bench section "calibration": is udsprobe's start-up probe-cost calibration stable run to run,
on a quiet machine and with every CPU kept busy by other tasks?

Alternates quiet and loaded runs of a short traced `udsprobe --compare` (64 B same-CPU pingpong);
the load is one busy-looping process per CPU, started before a loaded run and stopped after it.
Per condition: the calibrated cost of one probe hit (tp_btf/fentry/kprobe: `probe_cost_ns`) and
of one syscall-tracepoint hit (`syscall_hit_ns`), median (min–max) and spread = (max − min) /
median. The check (issue 9): every spread ≤ 20 % and the loaded median within 20 % of the quiet
one; exit 1 when it fails. Markdown on stdout, progress on stderr.
Env: UDSPROBE, CALIB_REPS (runs per condition, default 7), BENCH_QUICK=1 (3 runs: a smoke test).
"""
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys

from benchlib import cpu_name, fmt, load1, log, rel_spread

UDSPROBE = os.environ.get("UDSPROBE", "./udsprobe")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = 3 if QUICK else int(os.environ.get("CALIB_REPS", "7"))
TARGET = 0.20
CMD = [UDSPROBE, "--compare", "--mode", "pingpong", "--size", "64", "--cpu", "same",
       "--count", "2000", "--json", "-"]


def calibrate_once():
    res = subprocess.run(CMD, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit(f"calibration: udsprobe failed (exit {res.returncode}): {res.stderr.strip()}")
    doc = json.loads(res.stdout)
    hits = {r["syscall_hit_ns"] for r in doc["results"]}
    if len(hits) != 1:
        sys.exit(f"calibration: one run reported several syscall-hit costs: {sorted(hits)}")
    return doc["probe_cost_ns"], hits.pop(), doc["attach_mode"]


def start_load():
    """One busy loop per CPU, in its own process group."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(os.cpu_count() or 1)]


def stop_load(procs):
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def cell(xs):
    return statistics.median(xs), rel_spread(xs), fmt(xs)


def main():
    runs = {"quiet": [], "loaded": []}
    load_before = load1()
    started = datetime.datetime.now(datetime.timezone.utc)
    mode = "?"
    for i in range(REPS):
        for cond in ("quiet", "loaded"):
            log(f"calibration: run {i + 1}/{REPS}, {cond}")
            procs = start_load() if cond == "loaded" else []
            try:
                probe, syscall_hit, mode = calibrate_once()
            finally:
                stop_load(procs)
            runs[cond].append((probe, syscall_hit))
    ended = datetime.datetime.now(datetime.timezone.utc)

    print("## Calibration stability\n")
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, kernel {platform.release()}, attach mode {mode}. "
          f"{REPS} runs per condition, alternating quiet and loaded, "
          f"{started:%Y-%m-%d %H:%M}–{ended:%H:%M} UTC, 1-minute load {load_before:.2f} before. "
          f"Each run is `{' '.join(CMD[1:-2])}`; *loaded* keeps every CPU busy with one "
          "busy-looping shell per CPU during the run. Cells: ns per hit, median (min–max); "
          f"spread = (max − min) / median. Target: spread ≤ {TARGET:.0%} and loaded median within "
          f"{TARGET:.0%} of quiet.\n")
    print("| hit kind | quiet | spread | loaded | spread | loaded / quiet |")
    print("|---|---:|---:|---:|---:|---:|")
    ok = True
    for k, name in ((0, "probe hit (tp_btf / fentry / kprobe)"), (1, "syscall-tracepoint hit")):
        q_med, q_spread, q_cell = cell([r[k] for r in runs["quiet"]])
        l_med, l_spread, l_cell = cell([r[k] for r in runs["loaded"]])
        ratio = l_med / q_med if q_med > 0 else float("inf")
        ok &= q_spread <= TARGET and l_spread <= TARGET and abs(ratio - 1) <= TARGET
        print(f"| {name} | {q_cell} | {q_spread:.0%} | {l_cell} | {l_spread:.0%} | {ratio:.2f} |")
    print(f"\nVerdict: **{'pass' if ok else 'FAIL'}**.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
