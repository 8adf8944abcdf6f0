#!/usr/bin/python3
"""Backlog watch overhead: wrk requests/s through nginx -> php-fpm, with and without
`udsprobe --backlog` running (issue 6 §7). Markdown on stdout, progress on stderr.

Two loads, each run alternately without and with the watcher, several times:
  healthy  php-fpm listen.backlog 511, 4 workers, a fast script: no overflows, nginx busy;
  storm    listen.backlog 4, 2 workers, a 200 ms script: nearly every request fails at
           connect() with EAGAIN, tens of thousands of counted events per second.
Env: UDSPROBE, BENCH_REPS, BENCH_QUICK=1 (short smoke run). Needs root, nginx, php-fpm, wrk.
"""
import datetime
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchlib import REPO, UDSPROBE, FpmStack, fmt, log

QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "2" if QUICK else "5"))
SECS = 2 if QUICK else 5
KNOWN_COSTS = ("Known costs in tracepoint mode (the only mode this machine has): enabling the `syscalls:sys_enter_connect`/`sys_exit_connect` and `sys_exit_accept`/`sys_exit_accept4` tracepoints sends every syscall of every task through the kernel's syscall-tracing path, `sched_switch`, `consume_skb` and `kfree_skb` run a short filter on every context switch and freed packet, and `sk_data_ready` (6.6+, for the accept-wait depth) on every socket's data-ready; every accepted connection updates the accept-wait histogram; fentry/kprobe modes attach to the AF_UNIX and TCP listen, connect and accept functions and `sock_def_readable`. Which of these dominates here has not been profiled yet.")
LOADS = {
    "healthy": {"backlog": 511, "children": 4, "us": 0, "conns": 16},
    "storm": {"backlog": 4, "children": 2, "us": 200000, "conns": 64},
}


def watcher():
    p = subprocess.Popen([UDSPROBE, "--backlog", "--quiet"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("udsprobe --backlog: attach mode"):
        p.kill()
        raise RuntimeError(f"udsprobe --backlog did not start: {line!r} {p.stderr.read()}")
    return p, re.search(r"attach mode (\w+)", line).group(1)


def stop_watcher(p):
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    m = re.search(r"php-fpm\.sock\s+\S+\s+\d+\s+\d+\s+(\d+)", out)
    return int(m.group(1)) if m else 0


def main():
    rows, mode = [], "?"
    for name, load in LOADS.items():
        d = Path(tempfile.mkdtemp(prefix="udsprobe-bench-backlog."))
        os.chmod(d, 0o755)
        stack = FpmStack(d, str(d / "php-fpm.sock"), load["backlog"], load["children"])
        base, watched, ratios, events = [], [], [], []
        try:
            stack.wrk(load["us"], load["conns"], SECS)  # warm-up
            for rep in range(REPS):
                order = ["off", "on"] if rep % 2 == 0 else ["on", "off"]
                pair = {}
                for what in order:
                    if what == "on":
                        p, mode = watcher()
                        pair["on"] = stack.wrk(load["us"], load["conns"], SECS)
                        events.append(stop_watcher(p) / SECS)
                    else:
                        pair["off"] = stack.wrk(load["us"], load["conns"], SECS)
                base.append(pair["off"])
                watched.append(pair["on"])
                ratios.append(pair["on"] / pair["off"])
                log(f"  {name} rep {rep + 1}/{REPS}: off {pair['off']:.0f} on {pair['on']:.0f} req/s")
        finally:
            stack.stop()
            shutil.rmtree(d, ignore_errors=True)
        rows.append((name, load, base, watched, ratios, events))

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    git = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    print("## Backlog watch overhead\n")
    print("Does `udsprobe --backlog` slow a loaded server? wrk requests/s through nginx (1 worker) "
          "→ php-fpm over a unix socket, without and with `udsprobe --backlog --quiet` watching "
          "every listener, alternating, same stack. *healthy*: listen.backlog 511, 4 workers, "
          "a fast script, no overflows. *storm*: listen.backlog 4, 2 workers, a 200 ms script: "
          "almost every request is a connect() that fails with EAGAIN, each one counted in "
          "the kernel (per-CPU hash), so this is the hot path at its hottest.\n")
    print(f"- date: {now}; kernel {platform.release()}; {os.cpu_count()} CPUs; "
          f"udsprobe git {git}; attach mode {mode}")
    print(f"- {REPS} alternating repetitions of {SECS} s per row; wrk -t2, connections per row "
          "below; nginx, php-fpm, wrk and udsprobe share the 2 CPUs")
    print("- regenerate: `scripts/bench-backlog.sh` (or `scripts/bench.sh backlog-overhead`)\n")
    print("| load | wrk conns | req/s without | req/s with --backlog | with/without (median of "
          "pairs) | overflows counted per s |")
    print("|---|---|---|---|---|---|")
    for name, load, base, watched, ratios, events in rows:
        ev = f"{statistics.median(events):,.0f}" if events else "–"
        print(f"| {name} | {load['conns']} | {fmt(base)} | {fmt(watched)} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f}) | {ev} |")
    print("\nMedian (min–max). A ratio of 1.000 is no measurable cost; this machine's run-to-run "
          "spread (min–max of the *without* column) is the noise floor to compare it with.")
    print("\n" + KNOWN_COSTS)


if __name__ == "__main__":
    main()
