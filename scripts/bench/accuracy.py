#!/usr/bin/env python3
"""Bench section "accuracy": how far udsprobe's stages can be trusted, per size x mode x placement.

Runs `udsprobe --compare --json` REPEATS times over every size, mode and placement (each run
pairs an untraced and a traced run of the same workload, alternating the two transports) and
prints, per row, the median and min-max over the repeats of:

  coverage     sum of stages / traced latency (pingpong; the two clocks agree when ~1.00)
  corr/untr    corrected total (stages minus calibrated probe cost) / untraced mean latency
               (pingpong only: "n/a" for stream and connect)
  overhead     traced / untraced time per message
  misses       messages not matched + out of order, and program runs the kernel skipped
  bulk         share of messages sliced as several chunks (bulk;*)

Pingpong rows, where corr/untr is judged, get more repeats (ACCURACY_PINGPONG_REPEATS): with
--cpu split a single pair's corr/untr ranged 0.55-1.46 on an AMD EPYC VM (cross-CPU wakeups),
so the median of three moved by more than the 10 % it is judged against. Their "untraced"
column is the spread of the untraced runs alone, (max - min) / median: the noise that a row's
corr/untr carries whatever the probes do.

Environment: UDSPROBE (binary), BENCH_QUICK=1 (one repeat, short runs: a smoke test, not for
committing), ACCURACY_REPEATS (default 3), ACCURACY_PINGPONG_REPEATS (default 9, at least
ACCURACY_REPEATS), ACCURACY_DURATION (seconds per workload run, 0.5).
Markdown on stdout, progress on stderr.
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import cpu_name, fmt, load1, rel_spread

UDSPROBE = os.environ.get("UDSPROBE", "./udsprobe")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 1 if QUICK else int(os.environ.get("ACCURACY_REPEATS", "3"))
PP_REPEATS = 1 if QUICK else max(REPEATS, int(os.environ.get("ACCURACY_PINGPONG_REPEATS", "9")))
DURATION = "0.2" if QUICK else os.environ.get("ACCURACY_DURATION", "0.5")
SIZES = "1,64,4K,64K,1M,16M"
MODES = "pingpong,stream,connect"
PLACES = "same,split,none"


def run_once(i, modes):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        args = [UDSPROBE, "--compare", "--size", SIZES, "--mode", modes, "--cpu", PLACES,
                "--duration", DURATION, "--json", path]
        print(f"accuracy: repeat {i + 1}/{PP_REPEATS}: {' '.join(args[1:])}", file=sys.stderr)
        res = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if res.returncode != 0:
            sys.exit(f"accuracy: udsprobe failed (exit {res.returncode}): {res.stderr.strip()}")
        with open(path) as f:
            return json.load(f)


def spread(values, spec):
    """fmt's median (min–max) of the values there are; one value alone, "-" for none."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return format(values[0], spec) if values else "-"
    return fmt(values, spec)


def main():
    load_before, started = load1(), datetime.datetime.now(datetime.timezone.utc)
    docs = [run_once(i, MODES if i < REPEATS else "pingpong") for i in range(PP_REPEATS)]
    load_after, ended = load1(), datetime.datetime.now(datetime.timezone.utc)
    rows = {}
    for doc in docs:
        for r in doc["results"]:
            key = (r["mode"], r["msg_size"], r["cpu"], r["transport"])
            rows.setdefault(key, []).append(r)
    first = docs[0]
    print("## Accuracy\n")
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, kernel {first['kernel']}, attach mode "
          f"{first['attach_mode']}, probe cost {first['probe_cost_ns']:.0f} ns per hit in the first "
          f"run. {REPEATS} repeats of `udsprobe --compare --size {SIZES} --mode {MODES} --cpu "
          f"{PLACES} --duration {DURATION}`, and {PP_REPEATS - REPEATS} more of pingpong alone; "
          "each cell is the median (min–max) over the repeats. "
          "corr/untr is the corrected total over the untraced mean, pingpong only (\"n/a\": "
          "stream attributes per call, and connect's untraced time is a whole connection -- "
          "connect, accept, close -- while its stages are the messages'); overhead is traced/untraced time per message; misses "
          "are unmatched + out of order / runs the kernel skipped; untraced is the spread (max - min) / "
          "median of the untraced runs' mean latency, the noise in corr/untr that is not the probes'.\n")
    print("| mode | size | cpu | transport | coverage | corr/untr | untraced | overhead | misses | bulk |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    outside, within = [], 0
    for key in sorted(rows, key=lambda k: (MODES.split(",").index(k[0]), k[1],
                                           PLACES.split(",").index(k[2]), k[3])):
        rs = rows[key]
        cov = [r.get("coverage") for r in rs]
        corr = [r["corrected_sum_ns"] / r["latency_ns"]["mean"]
                if r["mode"] == "pingpong" and r.get("latency_ns", {}).get("mean") else None
                for r in rs]
        over = [1 + r["overhead_pct"] / 100 if r.get("overhead_pct") is not None else None
                for r in rs]
        miss = max(r["misses"] + r["out_of_order"] for r in rs)
        kmiss = max(r.get("kernel_misses", 0) for r in rs)
        bulk = [r.get("bulk_messages", 0) / r["messages"] if r.get("messages") else None for r in rs]
        untr = [r["latency_ns"]["mean"] for r in rs if r.get("latency_ns", {}).get("mean")]
        noise = rel_spread(untr) if key[0] == "pingpong" and len(untr) > 1 else None
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {spread(cov, '.2f')} | "
              f"{spread(corr, '.2f') if key[0] == 'pingpong' else 'n/a'} | "
              f"{'-' if noise is None else f'{noise:.0%}'} | {spread(over, '.2f')} | {miss}/{kmiss} | "
              f"{spread(bulk, '.0%')} |")
        med = statistics.median(c for c in corr if c is not None) if key[0] == "pingpong" and \
            any(c is not None for c in corr) else None
        if med is not None and abs(med - 1) <= 0.10:
            within += 1
        elif med is not None:
            outside.append(f"{key[1]} B {key[2]} {key[3]} {med:.2f}"
                           + ("" if noise is None else f" (untraced spread {noise:.0%})"))
    print(f"\nMeasured {started:%Y-%m-%d %H:%M}–{ended:%H:%M} UTC, 1-minute load {load_before:.2f} "
          f"before and {load_after:.2f} after. Corrected total within 10 % of untraced (median of "
          f"the repeats) in {within} of {within + len(outside)} pingpong rows"
          + (f"; outside: {', '.join(outside)}." if outside else "."))


if __name__ == "__main__":
    main()
