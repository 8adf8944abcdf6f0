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
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[2]))
UDSPROBE = os.environ.get("UDSPROBE", str(REPO / "udsprobe"))
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "2" if QUICK else "5"))
SECS = 2 if QUICK else 5
ASSETS = REPO / "tests" / "backlog"
PHP_FPM = shutil.which("php-fpm8.2") or "/usr/sbin/php-fpm8.2"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk") or "wrk"
KNOWN_COSTS = ("Known costs in tracepoint mode (the only mode this machine has): enabling the `syscalls:sys_enter_connect`/`sys_exit_connect` and `sys_exit_accept`/`sys_exit_accept4` tracepoints sends every syscall of every task through the kernel's syscall-tracing path, `sched_switch`, `consume_skb` and `kfree_skb` run a short filter on every context switch and freed packet, and `sk_data_ready` (6.6+, for the accept-wait depth) on every socket's data-ready; every accepted connection updates the accept-wait histogram; fentry/kprobe modes attach to the AF_UNIX and TCP listen, connect and accept functions and `sock_def_readable`. Which of these dominates here has not been profiled yet.")
LOADS = {
    "healthy": {"backlog": 511, "children": 4, "us": 0, "conns": 16},
    "storm": {"backlog": 4, "children": 2, "us": 200000, "conns": 64},
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fill(template, dest, **subst):
    text = (ASSETS / template).read_text()
    for k, v in subst.items():
        text = text.replace(f"@{k}@", str(v))
    dest.write_text(text)


class Stack:
    def __init__(self, d, backlog, children):
        self.d = d
        shutil.copy(ASSETS / "slow.php", d / "slow.php")
        os.chmod(d / "slow.php", 0o644)
        self.port = free_port()
        sock = d / "php-fpm.sock"
        fill("php-fpm.conf.in", d / "php-fpm.conf", DIR=d, LISTEN=sock, BACKLOG=backlog,
             CHILDREN=children)
        fill("nginx.conf.in", d / "nginx.conf", DIR=d, PORT=self.port, UPSTREAM=f"unix:{sock}")
        self.procs = [
            subprocess.Popen([PHP_FPM, "-F", "-R", "-y", str(d / "php-fpm.conf")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True),
            subprocess.Popen([NGINX, "-c", str(d / "nginx.conf"), "-p", str(d)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True),
        ]
        deadline = time.time() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/?us=0", timeout=2) as r:
                    if r.read() == b"ok\n":
                        return
            except OSError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("nginx + php-fpm did not answer")
            time.sleep(0.2)

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def wrk(port, us, conns):
    out = subprocess.run([WRK, "-t2", f"-c{conns}", f"-d{SECS}s",
                          f"http://127.0.0.1:{port}/?us={us}"],
                         capture_output=True, text=True, check=True, timeout=SECS + 30).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


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


def fmt(xs):
    return f"{statistics.median(xs):,.0f} ({min(xs):,.0f}–{max(xs):,.0f})"


def main():
    rows, mode = [], "?"
    for name, load in LOADS.items():
        d = Path(tempfile.mkdtemp(prefix="udsprobe-bench-backlog."))
        os.chmod(d, 0o755)
        stack = Stack(d, load["backlog"], load["children"])
        base, watched, ratios, events = [], [], [], []
        try:
            wrk(stack.port, load["us"], load["conns"])  # warm-up
            for rep in range(REPS):
                order = ["off", "on"] if rep % 2 == 0 else ["on", "off"]
                pair = {}
                for what in order:
                    if what == "on":
                        p, mode = watcher()
                        pair["on"] = wrk(stack.port, load["us"], load["conns"])
                        events.append(stop_watcher(p) / SECS)
                    else:
                        pair["off"] = wrk(stack.port, load["us"], load["conns"])
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
