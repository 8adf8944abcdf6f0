#!/usr/bin/python3
"""Workload fidelity: udsprobe's untraced ping-pong vs a minimal hand-written one.

Both run the same placement, sizes and round-trip counts, alternating order, several times;
the table holds medians over the repetitions and udsprobe/minimal ratios. Markdown on stdout.
Env: UDSPROBE, BENCH_PINGPONG (binaries), BENCH_REPS, BENCH_QUICK=1 (short smoke run).
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

from benchlib import cpu_name

UDSPROBE = os.environ.get("UDSPROBE", "./udsprobe")
MINIMAL = os.environ.get("BENCH_PINGPONG", ".output/bench_pingpong")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "3" if QUICK else "9"))
SIZES = [64, 4096]
PLACES = ["same", "split"]
# round trips per run: split runs are ~20x slower per message (cross-CPU wakeups in a VM)
COUNT = {"same": 2000 if QUICK else 20000, "split": 500 if QUICK else 10000}
WARMUP = 1000 if not QUICK else 100
TRANSPORTS = ["unix", "tcp"]
TARGET = 0.10


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def udsprobe_cmd(size, place):
    return [UDSPROBE, "--compare", "--no-trace", "--mode", "pingpong", "--size", str(size),
            "--cpu", place, "--count", str(COUNT[place]), "--warmup", str(WARMUP), "--json", "-"]


def minimal_cmd(transport, size, place):
    return [MINIMAL, "-t", transport, "-s", str(size), "-c", place, "-n", str(COUNT[place]),
            "-w", str(WARMUP)]


def run_udsprobe(size, place):
    res = subprocess.run(udsprobe_cmd(size, place), capture_output=True, text=True, check=True)
    out = {}
    for r in json.loads(res.stdout)["results"]:
        out[r["transport"]] = (r["latency_ns"]["p50"], r["latency_ns"]["mean"])
    return out


def run_minimal(transport, size, place):
    res = subprocess.run(minimal_cmd(transport, size, place), capture_output=True, text=True,
                         check=True)
    kv = dict(f.split("=", 1) for f in res.stdout.split())
    return int(kv["p50_ns"]), int(kv["mean_ns"])


def us(ns):
    return f"{ns / 1000:.2f}"


def cell(vals):
    """median (min–max) in µs"""
    return f"{us(statistics.median(vals))} ({us(min(vals))}–{us(max(vals))})"


def main():
    # samples[(size, place, transport, tool)] = [(p50, mean), ...]
    samples = {}
    for size in SIZES:
        for place in PLACES:
            for rep in range(REPS):
                log(f"fidelity: {size} B cpu={place} repetition {rep + 1}/{REPS}")
                # alternate which goes first so drift (thermal, noisy neighbours) hits both
                order = ["udsprobe", "minimal"] if rep % 2 == 0 else ["minimal", "udsprobe"]
                for tool in order:
                    if tool == "udsprobe":
                        for t, v in run_udsprobe(size, place).items():
                            samples.setdefault((size, place, t, tool), []).append(v)
                    else:
                        for t in (TRANSPORTS if rep % 2 == 0 else TRANSPORTS[::-1]):
                            samples.setdefault((size, place, t, tool), []).append(
                                run_minimal(t, size, place))

    rows, worst = [], {"same": 0.0, "split": 0.0}
    for size in SIZES:
        for place in PLACES:
            for t in TRANSPORTS:
                u = samples[(size, place, t, "udsprobe")]
                m = samples[(size, place, t, "minimal")]
                up50, mp50 = [x[0] for x in u], [x[0] for x in m]
                umean, mmean = [x[1] for x in u], [x[1] for x in m]
                # paired: each repetition's udsprobe run against the minimal run next to it,
                # so slow drift and load from other processes cancel; median over repetitions
                r50 = statistics.median(a / b for a, b in zip(up50, mp50))
                rmean = statistics.median(a / b for a, b in zip(umean, mmean))
                ok = abs(r50 - 1) <= TARGET and abs(rmean - 1) <= TARGET
                worst[place] = max(worst[place], abs(r50 - 1), abs(rmean - 1))
                rows.append(f"| {size} B | {place} | {t} | {cell(up50)} | {cell(mp50)} | "
                            f"{r50:.3f} | {cell(umean)} | {cell(mmean)} | {rmean:.3f} | "
                            f"{'yes' if ok else '**no**'} |")

    uname = platform.uname()
    cpu = cpu_name()
    version = subprocess.run([UDSPROBE, "--version"], capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    print("## Workload fidelity\n")
    print("Does udsprobe's workload driver (user/compare/workload.c) add anything to what it measures? "
          "Its untraced ping-pong is compared with a minimal, independently written C ping-pong "
          "(scripts/bench_pingpong.c: fork an echo server, send/recv with MSG_WAITALL, one "
          "clock read per round trip into a preallocated array) with the same transport, "
          "TCP_NODELAY, CPU placement, message size, warm-up and round-trip count. "
          f"Target: within {TARGET:.0%}.\n")
    print(f"- date: {date}{' (BENCH_QUICK smoke run: not for committing)' if QUICK else ''}")
    print(f"- kernel: {uname.release}; {os.cpu_count()} CPUs ({cpu}); {version}")
    print(f"- load average at the end: {load} (other work on the machine widens the split-CPU "
          "spread)")
    print(f"- {REPS} alternating repetitions per row; round trips per run: "
          f"same {COUNT['same']}, split {COUNT['split']}; warm-up {WARMUP}")
    print(f"- udsprobe: `udsprobe --compare --no-trace --mode pingpong --size SIZE --cpu CPU "
          f"--count N --warmup {WARMUP} --json -`")
    print(f"- minimal: `bench_pingpong -t unix|tcp -s SIZE -c CPU -n N -w {WARMUP}`")
    print("- regenerate: `make bench` (all sections) or `scripts/bench.sh fidelity`\n")
    print("One-way latency (RTT/2) in µs: median over repetitions (min–max). Ratio = udsprobe "
          "/ minimal, computed per repetition (each udsprobe run against the minimal run next to "
          "it) and then the median taken, so that drift and load from other processes cancel.\n")
    print("| size | cpu | transport | udsprobe p50 | minimal p50 | p50 ratio | udsprobe mean | "
          "minimal mean | mean ratio | within 10 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print(f"Largest deviation of a ratio from 1: same CPU (the default placement) "
          f"{worst['same']:.1%}, split CPUs {worst['split']:.1%}.")
    print("Split-CPU rows are dominated by cross-CPU wakeups (IPIs to an idle vCPU, "
          "KERNEL.md §2): their run-to-run spread is wide for both programs, so compare them "
          "through the min–max ranges rather than the ratio alone.")


if __name__ == "__main__":
    main()
