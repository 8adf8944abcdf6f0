#!/usr/bin/python3
"""Trace overhead on real programs (issue 11, item 6; issue 33, item 3): requests/s, CPU time
per request and p50/p99 request latency of real servers untraced and with `udsprobe --trace`
running around the load, alternating. Markdown on stdout, progress on stderr.

Loads: redis-server driven by redis-benchmark -t set,get over its unix socket and over
127.0.0.1 at -c 1 and -c 50; wrk -> nginx (1 worker) -> php-fpm (4 workers) with php-fpm on a
unix socket and on TCP. All servers start once, on private sockets and free loopback ports, and
stop at the end. A *block* runs every load once: untraced, under the hooks alone (hooks_floor
--filtered: an empty program on every hook a filtered `--trace` attaches in tracepoint mode),
under `udsprobe --trace` filtered to the servers (--pid of redis-server, --comm php-fpm; with
--detail syscall, the same with --live, and with --detail full), or under an unfiltered `udsprobe --trace` (one tracer start per block: its start-up takes seconds).
Each repetition runs the six blocks in a rotating order; ratios are traced/untraced of the same
repetition.
Env: UDSPROBE, HOOKS_FLOOR (default .output/hooks_floor), BENCH_REPS (default 5), BENCH_QUICK=1
(short smoke run). Needs root, redis-server, redis-tools, nginx-light, php-fpm, wrk
(scripts/install-deps.sh).
"""
import datetime
import json
import os
import platform
import resource
import select
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib import (HOOKS_FLOOR, PHP_FPM, REPO, UDSPROBE, FpmStack, HooksFloor, Redis,
                      bpf_progs_held, cpu_name, fmt, free_port, group_cpu, load1, log)

QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "2" if QUICK else "5"))
# requests per redis-benchmark test (set and get each): under 1 s per run on an idle 2-vCPU EPYC
REDIS_N = {1: 5000, 50: 10000} if QUICK else {1: 10000, 50: 20000}
WRK_SECS = 1 if QUICK else 2
WRK_CONNS = 50
FPM_COMM = os.path.basename(PHP_FPM)[:15]
TARGET = 0.10   # issue 11: at most 10 % fewer requests/s in tracepoint mode at -c 50


class Tracer:
    """udsprobe --trace ARGS running until stop(); start() returns once it is tracing."""

    def __init__(self, args, d):
        self.json = d / "trace.json"
        self.json.unlink(missing_ok=True)
        t0 = time.monotonic()
        # --if-unix left at its default (auto), as users run it; its calibration cached in
        # the bench's directory, not the host's /var/cache/udsprobe
        self.p = subprocess.Popen([UDSPROBE, "--trace", *args, "--json", str(self.json)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, UDSPROBE_CACHE_DIR=str(d)))
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


def redis_bench(redis, transport, clients):
    """set+get requests/s of one redis-benchmark run (2n requests over the time both tests
    took), its 2n requests, and {"p50": µs, "p99": µs}: redis-benchmark's percentiles of the
    two tests, averaged (n requests each)"""
    target, _ = redis.target(transport)
    n = REDIS_N[clients]
    out = subprocess.run(["redis-benchmark", *target, "-c", str(clients), "-n", str(n),
                          "-t", "set,get", "-q", "--csv"], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    rows = [[float(x.strip('"')) for x in line.split(",")[1:]] for line in out.splitlines()
            if line.startswith(('"SET"', '"GET"'))]
    assert len(rows) == 2, out
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
    # "p99_latency_ms","max_latency_ms" (redis 7)
    lat = {"p50": 1e3 * (rows[0][3] + rows[1][3]) / 2, "p99": 1e3 * (rows[0][5] + rows[1][5]) / 2}
    return 2 * n / sum(n / r[0] for r in rows), 2 * n, lat


def loads(redis, stacks):
    """(label, transport, run, server process groups) of every measured load; run() returns
    requests/s and the number of requests"""
    out = []
    for clients in (1, 50):
        for transport in ("unix", "tcp"):
            out.append((f"redis-benchmark -c {clients}", transport,
                        lambda t=transport, c=clients: redis_bench(redis, t, c), redis.pgids))
    for transport, stack in stacks.items():
        out.append((f"wrk -c {WRK_CONNS} → nginx → php-fpm", transport,
                    lambda s=stack: s.wrk(0, WRK_CONNS, WRK_SECS, latency=True), stack.pgids))
    return out


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_load(run, pgids):
    """requests/s, CPU µs per request of the servers plus the load generator, and the load
    generator's request latency percentiles"""
    srv, cli = group_cpu(pgids), children_cpu()
    rps, n, lat = run()
    return rps, (group_cpu(pgids) - srv + children_cpu() - cli) * 1e6 / n, lat


def sanity_counts(redis, doc, calls):
    """per transport: commandstats calls of the block's redis runs, udsprobe's requests and
    replies between redis-benchmark and redis-server on that transport (any endpoint: one other
    than redis' own would be a naming fault, listed); and the non-zero miss counters"""
    rows = []
    for transport in ("unix", "tcp"):
        _, endpoint = redis.target(transport)
        count = {}
        others = set()
        for f in doc["flows"]:
            pair = (f["sender"]["comm"], f["receiver"]["comm"])
            if f["transport"] == transport and "redis-server" in pair and "redis-benchmark" in pair:
                count[pair] = count.get(pair, 0) + f["messages"]
                if f["endpoint"] != endpoint:
                    others.add(f["endpoint"])
        rows.append((transport, calls[transport], count.get(("redis-benchmark", "redis-server"), 0),
                     count.get(("redis-server", "redis-benchmark"), 0), sorted(others)))
    return rows, {k: v for k, v in doc["misses"].items() if v}


def block(arm, filt, d, redis, todo, rps, cpu, lat, sample):
    """Every load once, untraced (arm 'off'), under the empty programs ('hooks') or under one
    udsprobe --trace; returns the trace document (None untraced or hooks only) and the
    commandstats calls of the redis runs per transport."""
    sample["load"].append(load1())
    sample["others"].append(bpf_progs_held())
    tr = None
    if arm == "hooks":
        tr = HooksFloor("--filtered")
        sample["hooks"] = tr.hooks
    elif arm != "off":
        args = {"filtered": filt + ["--detail", "full"], "syscall": filt,
                "live": filt + ["--live"], "all": []}[arm]
        tr = Tracer(args, d)
        sample["startup"].append(tr.startup)
    calls = {"unix": {}, "tcp": {}}
    try:
        for label, transport, run, pgids in todo:
            if label.startswith("redis"):
                redis.cli("config", "resetstat")
            r, c, pct = run_load(run, pgids)
            rps[label, transport][arm].append(r)
            cpu[label, transport][arm].append(c)
            lat[label, transport][arm].append(pct)
            if label.startswith("redis"):
                for k, v in redis.commandstats().items():
                    if k != "config|resetstat":
                        calls[transport][k] = calls[transport].get(k, 0) + v
    finally:
        doc = tr.stop() if tr else None
    if doc:
        sample["mode"] = doc["attach_mode"]
    return doc, calls


def measure(sample):
    """REPS repetitions of the six blocks (untraced, hooks only, filtered --detail syscall,
    the same with --live, filtered, unfiltered) in a rotating
    order; per load the requests/s of each block and the traced/untraced ratios per repetition"""
    d = Path(tempfile.mkdtemp(prefix="udsprobe-bench-trace."))
    os.chmod(d, 0o755)      # nginx and php-fpm workers run as nobody
    servers, sanity = [], None
    try:
        redis = Redis(d)
        servers.append(redis)
        stacks = {}
        for transport in ("unix", "tcp"):
            sd = d / transport
            sd.mkdir(mode=0o755)
            up = str(sd / "php-fpm.sock") if transport == "unix" else f"127.0.0.1:{free_port()}"
            stacks[transport] = FpmStack(sd, up, backlog=511, children=4)
            servers.append(stacks[transport])
            stacks[transport].wrk(0, WRK_CONNS, 1)     # warm-up
        todo = loads(redis, stacks)
        filt = ["--pid", str(redis.proc.pid), "--comm", FPM_COMM]
        arms = ["off", "hooks", "syscall", "live", "filtered", "all"]
        rps = {(label, tr): {a: [] for a in arms} for label, tr, _, _ in todo}
        cpu = {k: {a: [] for a in arms} for k in rps}
        lat = {k: {a: [] for a in arms} for k in rps}
        for rep in range(REPS):
            k = rep % len(arms)
            for arm in arms[k:] + arms[:k]:
                doc, calls = block(arm, filt, d, redis, todo, rps, cpu, lat, sample)
                if arm == "filtered" and sanity is None:
                    sanity = sanity_counts(redis, doc, calls)
            log(f"  {rep + 1}/{REPS}: " + "; ".join(
                f"{label} {tr}: " + "/".join(f"{r[a][-1]:,.0f}" for a in arms)
                for (label, tr), r in rps.items()))
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(d, ignore_errors=True)
    def ratios(per_arm):
        return {a: [t / u for t, u in zip(per_arm[a], per_arm["off"])] for a in arms[1:]}

    return [(label, tr, r, ratios(r), cpu[label, tr], ratios(cpu[label, tr]), lat[label, tr])
            for (label, tr), r in rps.items()], sanity


def ratio_cell(ratios):
    return f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})"


def floor_share(ratios, cost):
    """The part of the filtered run's cost the empty programs already pay (medians of the
    ratios to untraced; cost(ratio) is the loss or extra it stands for), as a cell."""
    hooks, filtered = (cost(statistics.median(ratios[a])) for a in ("hooks", "filtered"))
    return f"{100 * hooks / filtered:.0f} %" if filtered > 0 else "n/a (no loss)"


def floor_line(rows):
    """The floor in two sentences: per -c 50 load and transport, the hooks' share of the
    filtered run's loss of requests/s, and of its extra CPU time per request."""
    loads = {}
    for what, tr, _, ratios, _, cpu_ratios, _ in rows:
        if "-c 50" in what:
            rps = statistics.median(ratios["hooks"]), statistics.median(ratios["filtered"])
            loads.setdefault(what, {})[tr] = (floor_share(ratios, lambda r: 1 - r), rps,
                                              floor_share(cpu_ratios, lambda r: r - 1))

    def part(what):
        u, t = loads[what]["unix"], loads[what]["tcp"]
        return (f"{u[0]} (unix) / {t[0]} (tcp) (keeping {u[1][0]:.3f} / {t[1][0]:.3f} of the "
                f"requests/s with the hooks only, {u[1][1]:.3f} / {t[1][1]:.3f} filtered; of "
                f"the extra CPU time per request {u[2]} / {t[2]})")

    redis, fpm = "redis-benchmark -c 50", f"wrk -c {WRK_CONNS} → nginx → php-fpm"
    return (f"**Of the loss at -c 50, the hooks alone account for {part(redis)}; udsprobe's "
            f"program bodies for the rest.** {fpm}: the hooks alone {part(fpm)}. The hooks' "
            "share is what no program body can remove in tracepoint mode (docs/TRACE.md, "
            "\"Overhead\"); the rest is what udsprobe's code still could.")


def report(rows, sanity, sample, t0, t1):
    git = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        loadavg = " ".join(f.read().split()[:3])
    print("## Trace overhead on real programs\n")
    print("How much throughput does `udsprobe --trace` cost a real server? Requests/s without "
          "and with `udsprobe --trace` running around the load, alternating, same servers. "
          "**Target (issue 11): at most 10 % fewer requests/s in tracepoint mode at -c 50** "
          f"(ratio ≥ {1 - TARGET:.2f}). *filtered*: `--pid` of redis-server and "
          f"`--comm {FPM_COMM}` (php-fpm's workers: the nginx ↔ php-fpm messages; the wrk → nginx "
          "ones are not counted); *unfiltered*: "
          "no filter, every local AF_UNIX stream and loopback TCP message on the host (the "
          "machine's other work included); *hooks only*: no udsprobe, an empty program on "
          "every hook a filtered `--trace --detail syscall` attaches in tracepoint mode (`.output/hooks_floor "
          "--filtered`, bpf/hooks_floor.bpf.c; the set derived from udsprobe's own choice): "
          "the floor no program body can go below, since attaching a syscall tracepoint "
          "alone sends every syscall on the host through the kernel's syscall-tracing slow "
          "path (docs/TRACE.md, \"Overhead\"). *filtered* runs `--detail full` (send;call and the receiver's stages cut "
          "into kernel stages: nine more tracepoints, sched_switch among them, docs/TRACE.md \"Kernel stages\"; "
          "BPF run-time statistics on, as the default `--if-unix auto` turns them on with `--detail full` to price "
          "its TCP-only probes, docs/PREDICT.md); "
          "*syscall*: the same filters with the default `--detail syscall`, without them; "
          "*live*: *syscall* with `--live` (its table every second, as plain text: stdout is "
          "not a terminal here; BPF run-time statistics on for the hooks' cost in its header, "
          "docs/TRACE.md \"Live view\"); *unfiltered* runs the default.\n")
    print(f"- date: {t0:%Y-%m-%d %H:%M}–{t1:%H:%M} UTC ({(t1 - t0).total_seconds():.0f} s); kernel {platform.release()}; "
          f"CPU {cpu_name()}, {os.cpu_count()} CPUs; udsprobe git {git}; attach mode "
          f"{sample.get('mode', '?')}")
    print(f"- 1-minute load average at the start of each block {fmt(sample['load'], '.2f')}, "
          f"at the end {loadavg} ({os.cpu_count()} CPUs): the bench's own servers, load "
          "generator and udsprobe count in it; well above the CPU count, other work shared the "
          "CPUs and the ratios are noisier")
    busy = [n for n in sample["others"] if n]
    print(f"- other processes' BPF programs (e.g. another `udsprobe --compare` tracing the "
          f"host, which slows untraced runs too) were loaded at the start of {len(busy)} of "
          f"{len(sample['others'])} blocks" + (f", up to {max(busy)} programs" if busy else ""))
    print(f"- {REPS} repetitions, each running all loads untraced, under the hooks only, filtered "
          "with `--detail syscall`, the same with `--live`, filtered and unfiltered (one tracer or hooks_floor start per block of loads, started before "
          "and stopped after it), in a rotating order; "
          f"redis-benchmark `-t set,get -q --csv`, -n {REDIS_N[1]:,} at -c 1 and "
          f"{REDIS_N[50]:,} at -c 50 (set+get requests/s = 2n over the time of both tests); "
          f"wrk -t2 -c{WRK_CONNS} -d{WRK_SECS}s on a 4-worker php-fpm pool (listen.backlog 511, "
          "a PHP script that only echoes)")
    print(f"- udsprobe's start-up (exec to \"tracing\", outside the measured load) "
          f"{fmt(sample['startup'], '.2f')} s")
    print(f"- hooks only: {len(sample.get('hooks', []))} hooks: "
          f"{', '.join(sample.get('hooks', [])) or '?'}")
    print("- regenerate: `scripts/bench.sh trace-overhead` (`make bench` runs every section)\n")
    print("| load | transport | req/s untraced | req/s hooks only | hooks/untraced | "
          "req/s filtered, syscall | syscall/untraced | req/s syscall, --live | live/untraced | "
          "req/s --trace filtered | filtered/untraced | "
          "req/s --trace unfiltered | unfiltered/untraced | filtered within 10 % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for what, transport, rps, ratios, _, _, _ in rows:
        ok = statistics.median(ratios["filtered"]) >= 1 - TARGET
        within = ("yes" if ok else "**no**") if "-c 50" in what else "(no target)"
        print(f"| {what} | {transport} | {fmt(rps['off'])} | {fmt(rps['hooks'])} | "
              f"{ratio_cell(ratios['hooks'])} | {fmt(rps['syscall'])} | "
              f"{ratio_cell(ratios['syscall'])} | {fmt(rps['live'])} | "
              f"{ratio_cell(ratios['live'])} | {fmt(rps['filtered'])} | "
              f"{ratio_cell(ratios['filtered'])} | {fmt(rps['all'])} | "
              f"{ratio_cell(ratios['all'])} | {within} |")
    print("\nMedian (min–max) over the repetitions; a ratio is traced/untraced of one "
          "repetition, then the median taken. The spread of the untraced column is this "
          "machine's noise floor.\n")
    print(floor_line(rows) + "\n")
    print("CPU time per request, less sensitive to the other work on the machine than "
          "requests/s: user+sys µs of the servers' processes (/proc) plus the load generator "
          "(rusage) over the run, divided by its requests. The BPF programs run in the "
          "traced tasks and count there; on a CPU-bound server, throughput falls by about "
          "1 − 1/ratio.\n")
    print("| load | transport | µs/request untraced | hooks only | hooks/untraced | "
          "filtered, syscall | syscall/untraced | syscall, --live | live/untraced | filtered | "
          "filtered/untraced | unfiltered | unfiltered/untraced |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for what, transport, _, _, cpu, ratios, _ in rows:
        print(f"| {what} | {transport} | {fmt(cpu['off'], '.1f')} | {fmt(cpu['hooks'], '.1f')} | "
              f"{ratio_cell(ratios['hooks'])} | {fmt(cpu['syscall'], '.1f')} | "
              f"{ratio_cell(ratios['syscall'])} | {fmt(cpu['live'], '.1f')} | "
              f"{ratio_cell(ratios['live'])} | {fmt(cpu['filtered'], '.1f')} | "
              f"{ratio_cell(ratios['filtered'])} | {fmt(cpu['all'], '.1f')} | "
              f"{ratio_cell(ratios['all'])} |")
    print()
    print("Request latency as the load generator measured it, p50 and p99 in µs (redis-benchmark's "
          "percentiles of its SET and GET tests, averaged; wrk `--latency`), median (min–max) "
          "over the repetitions; *p99 ratio*: traced/untraced p99 of one repetition, then the "
          "median. redis-benchmark's percentiles are buckets of its histogram, a few % apart.\n")
    print("| load | transport | percentile | untraced | hooks only | filtered, syscall | "
          "syscall, --live | filtered | unfiltered | p99 ratio hooks only / filtered / "
          "unfiltered |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for what, transport, _, _, _, _, lat in rows:
        for p in ("p50", "p99"):
            cells = " | ".join(fmt([x[p] for x in lat[a]]) for a in
                               ("off", "hooks", "syscall", "live", "filtered", "all"))
            p99 = ""
            if p == "p99":
                p99 = " / ".join(ratio_cell([t[p] / u[p] for t, u in zip(lat[a], lat["off"])])
                                 for a in ("hooks", "filtered", "all"))
            print(f"| {what} | {transport} | {p} | {cells} | {p99} |")
    print()
    sanity_rows, misses = sanity
    miss = ", ".join(f"{k} {v:,}" for k, v in misses.items()) or "none"
    print("Sanity, the first filtered block: udsprobe's redis-benchmark → redis-server "
          "requests and redis-server → redis-benchmark replies per transport against redis' "
          "own `INFO commandstats` calls (reset before each run, summed over the -c 1 and "
          "-c 50 runs of that transport; redis-benchmark's first CONFIG GET of each run goes "
          "before the trace has seen the connection send). Not matched (host-wide counters, "
          f"the other engineers' traffic included) in that block: {miss}.\n")
    print("| transport | commandstats calls | udsprobe requests | udsprobe replies | "
          "within 2 % | endpoints other than redis' |")
    print("|---|---|---|---|---|---|")
    for transport, calls, req, rep, others in sanity_rows:
        total = sum(calls.values())
        ok = "yes" if all(abs(x - total) <= 0.02 * total for x in (req, rep)) else "**no**"
        detail = ", ".join(f"{k.replace('|', ' ')} {v:,}" for k, v in sorted(calls.items()))
        print(f"| {transport} | {total:,} ({detail}) | {req:,} | {rep:,} | {ok} | "
              f"{', '.join(others) or 'none'} |")


def main():
    if not os.access(HOOKS_FLOOR, os.X_OK):
        raise SystemExit(f"trace-overhead: no {HOOKS_FLOOR}: build it with `make bench` "
                         "(or make .output/hooks_floor)")
    t0 = datetime.datetime.now(datetime.timezone.utc)
    sample = {"load": [], "startup": [], "others": []}
    rows, sanity = measure(sample)
    report(rows, sanity, sample, t0, datetime.datetime.now(datetime.timezone.utc))


if __name__ == "__main__":
    main()
