#!/usr/bin/python3
"""Long runs stay flat: udsprobe --backlog (every listener, --metrics scraped) through a storm of
listeners appearing and disappearing and short-lived clients overflowing them, sampling
udsprobe's RSS and the memory of its BPF maps (bpftool map show: bytes_memlock, for the map
ids in udsprobe's /proc/PID/fdinfo) over time (issue 14 item 5, issue 15 resource bounds).
Markdown on stdout, progress on stderr.

Env: UDSPROBE, BENCH_STORM_SECS (default 60; 600 for the 10-minute figure), BENCH_QUICK=1
(15 s smoke run). Needs root, gcc, bpftool.
"""
import datetime
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchlib import REPO, UDSPROBE, cpu_name, fdinfo_ids, free_port, log

QUICK = os.environ.get("BENCH_QUICK") == "1"
SECS = int(os.environ.get("BENCH_STORM_SECS", "15" if QUICK else "60"))
SAMPLE_S = 5 if SECS <= 120 else 30
LIVE = 200              # listeners alive at once
CHURN = 40              # replaced per tick (every 0.25 s): 160 new listeners per second
CLIENTS = 150           # short-lived client processes per burst, 2 connects each


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def map_memlock(pid):
    """(maps, bytes): udsprobe's BPF maps by id from fdinfo, sized by bpftool's bytes_memlock."""
    ids = fdinfo_ids(pid, "map_id")
    maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                                     text=True, check=True).stdout)
    return len(ids), sum(m.get("bytes_memlock", 0) for m in maps if m["id"] in ids)


class Churn:
    """Unix and TCP listeners (listen(fd, 4), never accepting) replaced in a rolling window."""

    def __init__(self, d):
        self.d, self.n, self.live = d, 0, []

    def add(self):
        self.n += 1
        if self.n % 4:
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(self.d / f"l{self.n}.sock"))
        else:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
        s.listen(4)
        self.live.append(s)
        if s.family == socket.AF_UNIX:      # one overflow each: every one is kept at close
            for _ in range(6):
                c = socket.socket(socket.AF_UNIX)
                c.setblocking(False)
                try:
                    c.connect(s.getsockname())
                except BlockingIOError:
                    pass
                c.close()

    def tick(self, k):
        for _ in range(k):
            if len(self.live) >= LIVE:
                old = self.live.pop(0)
                if old.family == socket.AF_UNIX:
                    os.unlink(old.getsockname())
                old.close()
            self.add()

    def unix_target(self):
        return random.choice([s for s in self.live if s.family == socket.AF_UNIX]).getsockname()

    def close(self):
        for s in self.live:
            s.close()


def scrape(port):
    """(overflows of the listeners it shows, events not counted) from --metrics."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    total, dropped = 0.0, 0
    for line in body.splitlines():
        if line.startswith("udsprobe_backlog_overflows_total{"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("udsprobe_backlog_dropped_events_total "):
            dropped = int(line.split()[1])
    return int(total), dropped


def main():
    d = Path(tempfile.mkdtemp(prefix="udsprobe-storm."))
    fork_clients = d / "fork_clients"
    subprocess.run(["gcc", "-O2", "-o", str(fork_clients),
                    str(REPO / "tests/backlog/fork_clients.c")], check=True)
    churn = Churn(d)
    churn.tick(LIVE)
    port = free_port()
    u = subprocess.Popen([UDSPROBE, "--backlog", "--quiet", "--interval", "1",
                          "--metrics", f"127.0.0.1:{port}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    head = u.stdout.readline()
    if not head.startswith("udsprobe --backlog: attach mode"):
        u.wait()
        sys.exit(f"udsprobe did not start: {head} {u.stderr.read()}")
    mode = head.split("attach mode ", 1)[1].split()[0]
    log(f"storm for {SECS} s, sampling every {SAMPLE_S} s")
    rows, clients, bursts, t0, burst = [], 0, 0, time.time(), None
    next_sample = t0
    try:
        while (now := time.time()) < t0 + SECS:
            churn.tick(CHURN)
            if burst is None or burst.poll() is not None:
                if burst is not None:
                    clients += CLIENTS
                    bursts += 1
                burst = subprocess.Popen([str(fork_clients), churn.unix_target(), str(CLIENTS),
                                          "2"], stdout=subprocess.DEVNULL)
            if now >= next_sample:
                maps, mem = map_memlock(u.pid)
                rows.append((now - t0, churn.n, clients, rss_kib(u.pid), maps, mem,
                             *scrape(port)))
                log("t=%4.0f s listeners %6d clients %7d rss %6d KiB maps %d %7d KiB "
                    "overflows %d" % (rows[-1][0], churn.n, clients, rows[-1][3], maps,
                                      mem // 1024, rows[-1][6]))
                next_sample += SAMPLE_S
            time.sleep(0.25)
        if burst:
            burst.wait()
            clients += CLIENTS
        u.send_signal(signal.SIGINT)
        out, err = u.communicate(timeout=60)     # the summary can exceed a pipe's buffer
    finally:
        if u.poll() is None:
            u.kill()
        churn.close()
        subprocess.run(["rm", "-rf", str(d)])
    report(rows, mode, churn.n, clients, u.returncode)


def report(rows, mode, listeners, clients, rc):
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    warm = rows[min(2, len(rows) - 1)]
    rss = [r[3] for r in rows[rows.index(warm):]]
    mem = {r[5] for r in rows}
    print("## Backlog long run\n")
    print("Does `udsprobe --backlog` stay flat through churn? It watches every listener "
          f"(`--quiet --interval 1 --metrics`, scraped every {SAMPLE_S} s) while {LIVE} "
          f"listeners (3 of 4 AF_UNIX, 1 of 4 TCP, `listen(fd, 4)`, never accepting; each unix "
          "one gets 6 connects, so it overflows once and is kept when it closes) are "
          f"replaced {CHURN} at a time every 0.25 s and bursts of {CLIENTS} short-lived client "
          "processes make 2 non-blocking connects each to a random live unix listener (all "
          "but the first 5 overflow). Sampled: udsprobe's RSS (`VmRSS`), its BPF maps' "
          "`bytes_memlock` (bpftool map show, for the map ids in its fdinfo).\n")
    print(f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; kernel {platform.release()}; "
          f"CPU {cpu_name()}, {os.cpu_count()} CPUs; udsprobe git {rev}; attach mode {mode}")
    print(f"- {SECS} s storm: {listeners:,} listeners created, {clients:,} client processes; "
          f"udsprobe exit {rc}; events not counted (a BPF map full): {rows[-1][7]}")
    print("- regenerate: `scripts/bench.sh backlog-storm` (`BENCH_STORM_SECS=600` for 10 "
          "minutes)\n")
    print("| t (s) | listeners created | client processes | udsprobe RSS (KiB) | BPF maps | "
          "map memory (KiB) | overflows shown | events not counted |")
    print("|---|---|---|---|---|---|---|---|")
    for t, n, c, r, maps, m, o, dr in rows:
        print(f"| {t:.0f} | {n:,} | {c:,} | {r:,} | {maps} | {m // 1024:,} | {o:,} | {dr:,} |")
    grow = rss[-1] - rss[0]
    per_k = grow / max(1, (rows[-1][1] - warm[1]) / 1000)
    print(f"\nAfter warm-up (t = {warm[0]:.0f} s) RSS went {rss[0]:,} → {rss[-1]:,} KiB "
          f"(max {max(rss):,}): {grow:+,} KiB, {per_k:+,.0f} KiB per 1,000 listeners created. "
          f"BPF map memory took {len(mem)} distinct value(s) "
          f"({', '.join(f'{m // 1024:,} KiB' for m in sorted(mem))}): the maps are sized by "
          "max_entries, so churn cannot grow them.")
    bounded = ("Bounded by design (docs/BACKLOG.md, \"Listeners that close\"): the BPF maps "
               "(max_entries), closed listeners kept for the summary (at most 1,024, the rest "
               "folded into counts), each with at most 8 clients by pid and the rest per command, kept once, "
               "exited clients per live listener (256 by pid, then per command); the heap's free "
               "pages go back to the kernel every interval (malloc_trim).")
    if grow > rss[0] // 10:
        print(f"\n**Not flat** over this run (more than 10 % growth after warm-up). {bounded}")
    else:
        print(f"\nFlat: growth after warm-up within 10 % of the warm-up RSS. {bounded}")

if __name__ == "__main__":
    main()
