#!/usr/bin/env python3
"""Section "startup": what udsprobe's own start and exit cost, per command: wall time of a run
that measures next to nothing (so the time is loading, verifying, attaching and detaching), and
the instructions the kernel's verifier processed for each loaded program. With BENCH_BASE=BINARY
the same runs alternate with that binary (an older build), so the table shows before and after.

Environment: UDSPROBE, BENCH_BASE (optional) and BENCH_BASE_NAME (its column), BENCH_QUICK=1 (3 repeats, not 7)."""
import datetime
import os
import platform
import subprocess
import time

from benchlib import UDSPROBE, cpu_name, fmt, load1, log, prog_ids, verified_insns

QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 3 if QUICK else 7
BASE = os.environ.get("BENCH_BASE")
BASE_NAME = os.environ.get("BENCH_BASE_NAME", "BENCH_BASE")
COMMANDS = [
    ["--check"],
    ["--trace", "--", "true"],
    ["--compare", "--mode", "pingpong", "--size", "64", "--cpu", "same", "--count", "10"],
    ["--backlog", "--duration", "1"],
]
# long enough to read every loaded program's bpf_prog_info while it runs
HELD = [
    ["--trace", "--", "sleep", "2"],
    ["--compare", "--mode", "pingpong", "--size", "64", "--cpu", "same", "--duration", "2"],
    ["--backlog", "--duration", "2"],
]


def wall(binary, args):
    t0 = time.monotonic()
    res = subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)} failed ({res.returncode}): {res.stderr[-400:]}")
    return time.monotonic() - t0


def verifier_work(binary, args):
    """[(program, verified insns)] of the programs binary holds while running args, largest first."""
    p = subprocess.Popen([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen, deadline = {}, time.monotonic() + 30
    try:
        time.sleep(0.5)
        while p.poll() is None and time.monotonic() < deadline:
            for i in prog_ids(p.pid) - seen.keys():
                got = verified_insns(i)
                if got:
                    seen[i] = got
            time.sleep(0.1)
    finally:
        p.wait(timeout=60)
    return sorted(seen.values(), key=lambda x: -x[1])


def main():
    binaries = [("this build", UDSPROBE)] + ([(BASE_NAME, BASE)] if BASE else [])
    times = {(name, i): [] for name, _ in binaries for i in range(len(COMMANDS))}
    for r in range(REPEATS):
        log(f"startup: repeat {r + 1}/{REPEATS}")
        for i, args in enumerate(COMMANDS):
            for name, binary in (binaries if r % 2 == 0 else binaries[::-1]):
                times[(name, i)].append(wall(binary, args))
    print("## Start and stop\n")
    print("What a run costs before and after its measurement: opening the BPF objects, the "
          "verifier, attaching and detaching every hook (a detach that waits for an RCU grace "
          "period: kprobes, perf-event tracepoints, fentry trampolines). Each command below "
          "measures next to nothing, so its wall time is that cost. It matters for short runs, "
          "for `--check`, and most under emulation: the kernel matrix's qemu TCG guests pay it "
          "once per test (docs/KERNELS.md).\n")
    print(f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; kernel {platform.release()}; "
          f"CPU {cpu_name()}, {os.cpu_count()} CPUs; load average {load1():.2f} at the end")
    print(f"- {REPEATS} alternating repeats per row" + (f"; {BASE_NAME}: {BASE}" if BASE else ""))
    print("- regenerate: `scripts/bench.sh startup` (`BENCH_BASE=OLD_BINARY BENCH_BASE_NAME=LABEL` for a before column)\n")
    head = " | ".join(f"{name} (s)" for name, _ in binaries)
    print(f"| command | {head} |")
    print("|---|" + "---|" * len(binaries))
    for i, args in enumerate(COMMANDS):
        cells = " | ".join(fmt(times[(name, i)], ",.2f") for name, _ in binaries)
        print(f"| `udsprobe {' '.join(args)}` | {cells} |")
    print("\nMedian (min–max) of the wall time.\n")
    print("Verifier work: instructions processed per loaded program (bpf_prog_info.verified_insns; "
          "names as the kernel keeps them, 15 characters), the whole and the three largest:\n")
    print("| command | binary | programs | insns processed | largest |")
    print("|---|---|---|---|---|")
    for args in HELD:
        for name, binary in binaries:
            progs = verifier_work(binary, args)
            top = ", ".join(f"{n} {v:,}" for n, v in progs[:3])
            print(f"| `udsprobe {' '.join(args)}` | {name} | {len(progs)} | "
                  f"{sum(v for _, v in progs):,} | {top} |")
    print()


if __name__ == "__main__":
    main()
