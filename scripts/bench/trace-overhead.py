#!/usr/bin/python3
"""Trace overhead on real programs (issue 11, item 6): requests/s of real servers untraced and
with `udsprobe --trace` running around the load, alternating. Markdown on stdout, progress on
stderr.

  redis    redis-server, redis-benchmark -t set,get over its unix socket and over 127.0.0.1,
           -c 1 and -c 50; traced filtered to the server (--pid) and, at -c 50, unfiltered
  nginx    wrk -> nginx (1 worker) -> php-fpm (4 workers) over a unix socket and over TCP;
           traced filtered to php-fpm (--comm)

Every server runs on a private socket / free loopback port and is stopped at the end. Each
repetition runs every arm of a row once (off, filtered[, unfiltered]) in a rotating order.
Env: UDSPROBE, BENCH_REPS (default 5), BENCH_QUICK=1 (short smoke run). Needs root, redis-server,
redis-tools, nginx-light, php-fpm, wrk (scripts/install-deps.sh).
"""
import datetime
import json
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib import (PHP_FPM, REPO, UDSPROBE, FpmStack, Redis, cpu_name, fmt, free_port,
                      load1, log)

QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "2" if QUICK else "5"))
# requests per redis-benchmark test (set and get each), sized to ~1.5 s per test here
REDIS_N = {1: 5000, 50: 10000} if QUICK else {1: 30000, 50: 60000}
WRK_SECS = 1 if QUICK else 2
WRK_CONNS = 50
FPM_COMM = os.path.basename(PHP_FPM)[:15]
TARGET = 0.10   # issue 11: at most 10 % fewer requests/s in tracepoint mode at -c 50
ARM_NAMES = {"off": "untraced", "filtered": "--trace filtered", "all": "--trace unfiltered"}


class Tracer:
    """udsprobe --trace ARGS running until stop(); start() returns once it is tracing."""

    def __init__(self, args, d):
        self.json = d / "trace.json"
        self.json.unlink(missing_ok=True)
        t0 = time.monotonic()
        self.p = subprocess.Popen([UDSPROBE, "--trace", *args, "--json", str(self.json)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = ""
        while "tracing" not in line:
            if not select.select([self.p.stderr], [], [], 60)[0]:
                self.p.kill()
                raise RuntimeError("udsprobe --trace did not start within 60 s")
            line = self.p.stderr.readline()
            if not line:
                raise RuntimeError(f"udsprobe --trace exited: {self.p.wait()}")
        self.startup = time.monotonic() - t0

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        _, err = self.p.communicate(timeout=60)
        if self.p.returncode != 0:
            raise RuntimeError(f"udsprobe --trace exit {self.p.returncode}: {err}")
        return json.loads(self.json.read_text())


def measured(arm, filt, d, load, sample):
    """Run load() untraced (arm 'off') or traced; returns (requests/s, trace doc or None)."""
    sample["load"].append(load1())
    if arm == "off":
        return load(), None
    tr = Tracer(filt if arm == "filtered" else [], d)
    sample["startup"].append(tr.startup)
    try:
        rps = load()
    finally:
        doc = tr.stop()
    sample["mode"] = doc["attach_mode"]
    return rps, doc


def alternate(name, arms, filt, d, load, sample, after=None):
    """REPS repetitions of every arm, order rotated each time; per arm its requests/s, and per
    traced arm the ratio to the untraced run of the same repetition."""
    rps = {a: [] for a in arms}
    for rep in range(REPS):
        k = rep % len(arms)
        for arm in arms[k:] + arms[:k]:
            r, doc = measured(arm, filt, d, load, sample)
            rps[arm].append(r)
            if after:
                after(arm, rep, doc)
        log(f"  {name} {rep + 1}/{REPS}: " + "  ".join(f"{a} {rps[a][-1]:,.0f}" for a in arms))
    ratios = {a: [t / u for t, u in zip(rps[a], rps["off"])] for a in arms if a != "off"}
    return rps, ratios


def redis_bench(redis, transport, clients):
    """set+get requests/s of one redis-benchmark run: 2n requests over the time both tests took"""
    target, _ = redis.target(transport)
    n = REDIS_N[clients]
    out = subprocess.run(["redis-benchmark", *target, "-c", str(clients), "-n", str(n),
                          "-t", "set,get", "-q", "--csv"], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    rates = [float(line.split(",")[1].strip('"')) for line in out.splitlines()
             if line.startswith(('"SET"', '"GET"'))]
    assert len(rates) == 2, out
    return 2 * n / sum(n / r for r in rates)


def run_redis(sample):
    rows, sanity = [], []
    d = Path(tempfile.mkdtemp(prefix="udsprobe-bench-trace."))
    redis = Redis(d)
    try:
        filt = ["--pid", str(redis.proc.pid)]
        for clients in (1, 50):
            for transport in ("unix", "tcp"):
                _, endpoint = redis.target(transport)
                arms = ["off", "filtered"] + (["all"] if clients == 50 else [])

                def load():
                    redis.cli("config", "resetstat")
                    return redis_bench(redis, transport, clients)

                def after(arm, rep, doc):
                    if arm != "filtered" or rep != 0:
                        return
                    calls = redis.commandstats()
                    calls.pop("config|resetstat", None)
                    flows = {(f["sender"]["comm"], f["receiver"]["comm"]): f
                             for f in doc["flows"] if f["endpoint"] == endpoint}
                    req = flows.get(("redis-benchmark", "redis-server"), {})
                    rep_ = flows.get(("redis-server", "redis-benchmark"), {})
                    sanity.append((transport, clients, sum(calls.values()), calls,
                                   req.get("messages", 0), rep_.get("messages", 0),
                                   sum(doc["misses"].values())))

                name = f"redis {transport} -c {clients}"
                rps, ratios = alternate(name, arms, filt, d, load, sample, after)
                rows.append((f"redis-benchmark -c {clients}", transport, rps, ratios))
    finally:
        redis.stop()
        shutil.rmtree(d, ignore_errors=True)
    return rows, sanity


def run_nginx(sample):
    rows = []
    for transport in ("unix", "tcp"):
        d = Path(tempfile.mkdtemp(prefix="udsprobe-bench-trace."))
        os.chmod(d, 0o755)      # nginx and php-fpm workers run as nobody
        upstream = str(d / "php-fpm.sock") if transport == "unix" else f"127.0.0.1:{free_port()}"
        stack = FpmStack(d, upstream, backlog=511, children=4)
        try:
            stack.wrk(0, WRK_CONNS, 1)     # warm-up
            rps, ratios = alternate(f"nginx -> php-fpm {transport}", ["off", "filtered"],
                                    ["--comm", FPM_COMM], d,
                                    lambda: stack.wrk(0, WRK_CONNS, WRK_SECS), sample)
            rows.append((f"wrk -c {WRK_CONNS} → nginx → php-fpm", transport, rps, ratios))
        finally:
            stack.stop()
            shutil.rmtree(d, ignore_errors=True)
    return rows


def ratio_cell(ratios):
    if not ratios:
        return "–"
    return f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})"


def report(rows, sanity, sample, t0, t1):
    git = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        loadavg = " ".join(f.read().split()[:3])
    print("## Trace overhead on real programs\n")
    print("How much throughput does `udsprobe --trace` cost a real server? Requests/s without "
          "and with `udsprobe --trace` running around the load, alternating, same servers. "
          "**Target (issue 11): at most 10 % fewer requests/s in tracepoint mode at -c 50** "
          f"(ratio ≥ {1 - TARGET:.2f}). *filtered*: `--pid` of redis-server, or "
          f"`--comm {FPM_COMM}` (php-fpm's workers: the nginx ↔ php-fpm messages); *unfiltered*: "
          "no filter, every local AF_UNIX stream and loopback TCP message on the host (the "
          "machine's other work included).\n")
    print(f"- date: {t0:%Y-%m-%d %H:%M}–{t1:%H:%M} UTC; kernel {platform.release()}; "
          f"CPU {cpu_name()}, {os.cpu_count()} CPUs; udsprobe git {git}; attach mode "
          f"{sample.get('mode', '?')}")
    print(f"- **shared, loaded machine**: other engineers' builds and tests ran on the same "
          f"{os.cpu_count()} CPUs; 1-minute load average at the start of each run "
          f"{fmt(sample['load'], '.2f')}, at the end {loadavg}. Servers, load generator and "
          "udsprobe share the CPUs too")
    print(f"- {REPS} repetitions per row, each running every column once in a rotating order; "
          f"redis-benchmark `-t set,get -q --csv`, -n {REDIS_N[1]:,} at -c 1 and "
          f"{REDIS_N[50]:,} at -c 50 (set+get requests/s = 2n over the time of both tests); "
          f"wrk -t2 -c{WRK_CONNS} -d{WRK_SECS}s on a 4-worker php-fpm pool (listen.backlog 511, "
          "a PHP script that only echoes)")
    print(f"- udsprobe's start-up (exec to \"tracing\", outside the measured load) "
          f"{fmt(sample['startup'], '.2f')} s")
    print("- regenerate: `scripts/bench.sh trace-overhead` (`make bench` runs every section)\n")
    print("| load | transport | req/s untraced | req/s --trace filtered | filtered/untraced | "
          "req/s --trace unfiltered | unfiltered/untraced | filtered within 10 % |")
    print("|---|---|---|---|---|---|---|---|")
    for what, transport, rps, ratios in rows:
        ok = statistics.median(ratios["filtered"]) >= 1 - TARGET
        within = ("yes" if ok else "**no**") if "-c 50" in what else "(no target)"
        print(f"| {what} | {transport} | {fmt(rps['off'])} | {fmt(rps['filtered'])} | "
              f"{ratio_cell(ratios['filtered'])} | "
              f"{fmt(rps['all']) if 'all' in rps else '–'} | {ratio_cell(ratios.get('all'))} | "
              f"{within} |")
    print("\nMedian (min–max) over the repetitions; a ratio is traced/untraced of one "
          "repetition, then the median taken. The spread of the untraced column is this "
          "machine's noise floor.\n")
    print("Sanity, the first filtered run of each redis row: udsprobe's message counts against "
          "redis' own `INFO commandstats` calls for that run (reset before it):\n")
    print("| transport | clients | commandstats calls | udsprobe requests | udsprobe replies | "
          "not matched (host-wide) |")
    print("|---|---|---|---|---|---|")
    for transport, clients, total, calls, req, rep, miss in sanity:
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(calls.items()))
        print(f"| {transport} | {clients} | {total:,} ({detail}) | {req:,} | {rep:,} | {miss:,} |")


def main():
    t0 = datetime.datetime.now(datetime.timezone.utc)
    sample = {"load": [], "startup": []}
    rows, sanity = run_redis(sample)
    rows += run_nginx(sample)
    report(rows, sanity, sample, t0, datetime.datetime.now(datetime.timezone.utc))


if __name__ == "__main__":
    main()
