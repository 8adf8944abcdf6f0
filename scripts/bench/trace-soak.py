#!/usr/bin/python3
"""Trace soak (issue 11, item 5): one unfiltered `udsprobe --trace --json` for SOAK_DURATION
seconds (default 3600) while a bounded load churns everything that could leak: short
connections, processes that start and exit, sockets closed with messages in flight, and
long-lived connections. Every SOAK_INTERVAL seconds (default 60) it samples udsprobe's
VmRSS/VmHWM, open fds, the entry count of each of its BPF maps and its miss counters; at the end
a table and a verdict. Exit 1 when memory grows: RSS at the end more than SOAK_RSS_BOUND_KB
(default 1024) plus 4 KiB per flow of the final report above the first sample (unfiltered on a
shared host, every new endpoint, a test's temporary socket path or port, is a flow that the
report keeps, up to 4096), or more fds at the end than at the first sample.

Not in `make bench` by default (it takes an hour): `scripts/bench.sh trace-soak`, or
`SOAK_DURATION=300 scripts/bench.sh trace-soak` for a short look at the trend.
Load (bounded to well under one CPU together with udsprobe; the machine is shared):
- churn: redis-benchmark -k 0 (a new connection per request), alternately over the unix socket
  and 127.0.0.1, then a pause: a new process and hundreds of connections every few seconds;
- aborts: every SOAK_ABORT_EVERY s a new Python process opens connections over both transports,
  pipelines commands and closes (or exits) without reading the replies: messages in flight on
  sockets that close;
- long-lived: 4 connections (2 unix, 2 TCP) doing PING at ~20/s for the whole run.
Markdown on stdout, progress on stderr. Needs root, redis-server, redis-tools.
"""
import ctypes
import datetime
import json
import os
import platform
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchlib import (NR_BPF, REPO, UDSPROBE, Redis, cpu_name, fdinfo_ids, free_port, group_cpu,
                      load1, log)

DURATION = int(os.environ.get("SOAK_DURATION", "3600"))
INTERVAL = int(os.environ.get("SOAK_INTERVAL", "60"))
RSS_BOUND_KB = int(os.environ.get("SOAK_RSS_BOUND_KB", "1024"))
ABORT_EVERY = float(os.environ.get("SOAK_ABORT_EVERY", "3"))
# user space per flow kept: struct flow (832 B) and six sparse histograms, 10 B per filled
# bucket (a busy flow fills a few dozen per histogram; all 320 would be 19 KiB)
FLOW_KB = 4
# SOAK_METRICS=1: also --metrics, scraped every SOAK_SCRAPE_S s through the run (the section
# "Trace soak with metrics", scripts/bench/trace-metrics-soak.py)
METRICS = os.environ.get("SOAK_METRICS") == "1"
SCRAPE_S = float(os.environ.get("SOAK_SCRAPE_S", "1"))
TITLE = os.environ.get("SOAK_TITLE", "Trace soak")
CHURN_N = 300           # requests per redis-benchmark run (each on its own connection)
CHURN_PAUSE = 2.0       # s between churn runs: keeps the load well under one CPU

# ---- BPF maps of a process, through the bpf(2) syscall (bpftool dumps whole values) ----

_libc = ctypes.CDLL(None, use_errno=True)
BPF_MAP_LOOKUP_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 1, 4, 14, 15


class MapInfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32),
                ("key_size", ctypes.c_uint32), ("value_size", ctypes.c_uint32),
                ("max_entries", ctypes.c_uint32), ("map_flags", ctypes.c_uint32),
                ("name", ctypes.c_char * 16), ("rest", ctypes.c_uint8 * 64)]


def _bpf(cmd, attr):
    r = _libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    return r if r >= 0 else -ctypes.get_errno()


def map_open(mid):
    attr = (ctypes.c_uint32 * 3)(mid, 0, 0)
    fd = _bpf(BPF_MAP_GET_FD_BY_ID, attr)
    if fd < 0:
        raise OSError(-fd, f"map id {mid}")
    info = MapInfo()
    attr = (ctypes.c_uint64 * 2)(fd | (ctypes.sizeof(info) << 32), ctypes.addressof(info))
    if _bpf(BPF_OBJ_GET_INFO_BY_FD, attr) < 0:
        os.close(fd)
        raise OSError(ctypes.get_errno(), f"map id {mid} info")
    return fd, info


def map_count(fd, key_size):
    """entries in a hash map: keys walked with GET_NEXT_KEY (no values copied)"""
    a, b = ctypes.create_string_buffer(key_size), ctypes.create_string_buffer(key_size)
    attr = (ctypes.c_uint64 * 3)(fd, 0, ctypes.addressof(b))
    n = 0
    while _bpf(BPF_MAP_GET_NEXT_KEY, attr) == 0:
        n += 1
        ctypes.memmove(a, b, key_size)
        attr[1] = ctypes.addressof(a)
    return n


def bss_misses(mid):
    """udsprobe's .bss counters by name (bpftool formats them from the map's BTF)"""
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mid)], capture_output=True,
                         text=True, check=True).stdout
    val = json.loads(out)[0]["formatted"]["value"][".bss"]
    return {k: v for var in val for k, v in var.items()}     # a list of {name: value}


HASH_TYPES = {1: "hash", 5: "percpu_hash", 9: "lru_hash", 10: "lru_percpu_hash"}


def sample(pid, t0):
    st = {"t": time.monotonic() - t0, "load": load1()}
    status = Path(f"/proc/{pid}/status").read_text()
    for line in status.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            st[line.split(":")[0]] = int(line.split()[1])
    st["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/stat") as f:
        s = f.read().rsplit(")", 1)[1].split()
    st["cpu"] = (int(s[11]) + int(s[12])) / os.sysconf("SC_CLK_TCK")
    st["maps"], st["max"] = {}, {}
    for mid in sorted(fdinfo_ids(pid, "map_id")):
        try:
            fd, info = map_open(mid)
        except OSError:
            continue
        try:
            name = info.name.decode()
            if name.endswith(".bss"):
                st["misses"] = bss_misses(mid)
            elif info.type in HASH_TYPES:
                st["maps"][name] = map_count(fd, info.key_size)
                st["max"][name] = f"{HASH_TYPES[info.type]} {info.max_entries}"
        finally:
            os.close(fd)
    return st


# ---- the load ----

def resp(*args):
    return b"".join([f"*{len(args)}\r\n".encode()] +
                    [f"${len(a)}\r\n{a}\r\n".encode() for a in map(str, args)])


def connect(redis, transport):
    if transport == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(redis.sock))
    else:
        s = socket.create_connection(("127.0.0.1", redis.port))
    return s


ABORT_CHILD = r"""
import os, socket, sys
sock, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cmd = b"".join(b"*3\r\n$3\r\nSET\r\n$4\r\nsoak\r\n$%d\r\n%s\r\n" % (len(v), v)
               for v in (b"x" * (i % 700) for i in range(n)))
conns = []
for i in range(6):
    if i % 2:
        s = socket.create_connection(("127.0.0.1", port))
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sock)
    s.sendall(cmd)
    conns.append(s)
conns[0].recv(10)                   # read a part of the replies
conns[1].close()                    # close with the replies in flight
conns[2].shutdown(socket.SHUT_WR)   # half-close
os._exit(0)                         # the rest: closed by the exit, nothing read
"""


class Load:
    def __init__(self, redis, stop):
        self.redis, self.stop, self.errors = redis, stop, []
        self.counts = {"churn runs": 0, "abort processes": 0, "long-lived PINGs": 0}
        self.threads = [threading.Thread(target=self._guard, args=(f,), daemon=True)
                        for f in [self.churn, self.aborts] +
                        [lambda t=t: self.long_lived(t) for t in ("unix", "tcp") * 2]]
        for t in self.threads:
            t.start()

    def _guard(self, f):
        try:
            f()
        except Exception as e:     # a load that stops must show in the verdict
            self.errors.append(repr(e))

    def churn(self):
        i = 0
        while not self.stop.is_set():
            target, _ = self.redis.target(("unix", "tcp")[i % 2])
            subprocess.run(["redis-benchmark", *target, "-k", "0", "-c", "2", "-n", str(CHURN_N),
                            "-t", "ping,set,get", "-q"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=120)
            self.counts["churn runs"] += 1
            i += 1
            self.stop.wait(CHURN_PAUSE)

    def aborts(self):
        while not self.stop.is_set():
            subprocess.run([sys.executable, "-c", ABORT_CHILD, str(self.redis.sock),
                            str(self.redis.port), "200"], check=True, timeout=60)
            self.counts["abort processes"] += 1
            self.stop.wait(ABORT_EVERY)

    def long_lived(self, transport):
        s = connect(self.redis, transport)
        with s:
            while not self.stop.is_set():
                s.sendall(b"PING\r\n")
                if s.recv(64) != b"+PONG\r\n":
                    raise RuntimeError(f"long-lived {transport}: no PONG")
                self.counts["long-lived PINGs"] += 1
                self.stop.wait(0.05)


# ---- the run ----

class Scraper:
    """GET /metrics every SCRAPE_S s until stop: scrapes, failures, the last body's size and
    series (a Prometheus that scrapes this often)."""

    def __init__(self, url, stop):
        self.url, self.stop = url, stop
        self.ok, self.failed, self.bytes, self.series, self.errors = 0, 0, 0, 0, []
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        import urllib.request
        while not self.stop.wait(SCRAPE_S):
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    body = r.read()
                self.ok += 1
                self.bytes = len(body)
                self.series = sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#"))
            except OSError as e:
                self.failed += 1
                if len(self.errors) < 3:
                    self.errors.append(str(e))


def run(d):
    redis = Redis(d)
    jpath = d / "trace.json"
    args = [UDSPROBE, "--trace", "--json", str(jpath)]
    if METRICS:
        mport = free_port()
        args += ["--metrics", f"127.0.0.1:{mport}"]
    tr = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    scraper = None
    samples, load = [], None
    try:
        line = ""
        while "tracing" not in line:
            if not select.select([tr.stderr], [], [], 60)[0]:
                raise RuntimeError("udsprobe --trace did not start within 60 s")
            line = tr.stderr.readline()
            if not line:
                raise RuntimeError(f"udsprobe --trace exited: {tr.wait()}")
        t0 = time.monotonic()
        cpu0 = group_cpu(redis.pgids)
        ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self0 = resource.getrusage(resource.RUSAGE_SELF)
        load = Load(redis, stop)
        if METRICS:
            scraper = Scraper(f"http://127.0.0.1:{mport}/metrics", stop)
        samples.append(sample(tr.pid, t0))
        while time.monotonic() - t0 < DURATION and tr.poll() is None:
            stop.wait(min(INTERVAL, DURATION - (time.monotonic() - t0)))
            if tr.poll() is None:
                samples.append(sample(tr.pid, t0))
                s = samples[-1]
                log(f"  {s['t']:6.0f} s  RSS {s['VmRSS']} kB  fds {s['fds']}  "
                    f"maps {s['maps']}  misses {s.get('misses')}  load {s['load']}")
        stop.set()
        for t in load.threads:
            t.join(timeout=130)
        ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self1 = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - t0
        load_cpu = (group_cpu(redis.pgids) - cpu0 +
                    sum(getattr(b, f) - getattr(a, f) for a, b in ((ch0, ch1), (self0, self1))
                        for f in ("ru_utime", "ru_stime")))
    finally:
        stop.set()
        if tr.poll() is None:
            tr.send_signal(signal.SIGINT)
        try:
            _, err = tr.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            tr.kill()
            _, err = tr.communicate()
        redis.stop()
    doc = json.loads(jpath.read_text()) if jpath.exists() else None
    if load:
        load.scraper = scraper
    return samples, doc, tr.returncode, err, load, wall, load_cpu


def evicted(s):
    """direction states the LRU evicted: made, not deleted, not in the map ('?' when this
    udsprobe does not count them)"""
    ms = s.get("misses") or {}
    if "dirs_made" not in ms:
        return "?"
    return f"{max(0, ms['dirs_made'] - ms['dirs_deleted'] - s['maps'].get('dirs', 0)):,}"


def slope_kb_per_h(samples):
    """least-squares RSS slope (kB/h) over the samples after the first"""
    xs = [s["t"] for s in samples[1:]]
    ys = [s["VmRSS"] for s in samples[1:]]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 3600 if den else 0.0


def report(samples, doc, rc, err, load, wall, load_cpu, t0, t1, git):
    first, last = samples[1] if len(samples) > 1 else samples[0], samples[-1]
    rss_max = max(s["VmRSS"] for s in samples)
    grow = last["VmRSS"] - first["VmRSS"]
    tr_cpu = last["cpu"] - samples[0]["cpu"]
    names = sorted(samples[-1]["maps"])
    problems = []
    if rc != 0:
        problems.append(f"udsprobe exited {rc}: {err.strip()[-300:]}")
    if doc is None:
        problems.append("no --json document")
    nflows = len(doc["flows"]) if doc else 0
    bound = RSS_BOUND_KB + FLOW_KB * nflows
    if grow > bound:
        problems.append(f"RSS grew {grow} kB from the first sample to the last (bound "
                        f"{bound} kB)")
    if last["fds"] > first["fds"]:
        problems.append(f"open fds grew {first['fds']} → {last['fds']}")
    if load.errors:
        problems.append("the load failed: " + "; ".join(load.errors))
    sc = getattr(load, "scraper", None)
    if sc and (sc.failed or not sc.ok):
        problems.append(f"{sc.failed} of {sc.ok + sc.failed} scrapes failed: "
                        + "; ".join(sc.errors))
    print(f"## {TITLE}\n")
    print(("With `--metrics` scraped every second (issue 34): does" if METRICS else "Does") +
          " `udsprobe --trace` keep flat memory over a long run under load (issue 11, "
          "item 5: tasks that exit, sockets that close, maps that fill: counted, never a crash, "
          "never a leak)? One unfiltered `udsprobe --trace --json` while redis-benchmark "
          f"`-k 0` (a new connection per request, {CHURN_N} requests × ping,set,get) runs "
          f"every {CHURN_PAUSE:.0f} s alternately over a unix socket and 127.0.0.1, a new Python "
          f"process every {ABORT_EVERY:.0f} s pipelines 200 SETs on 6 connections and closes or "
          "exits without reading the replies, and 4 long-lived connections PING ~20 times a "
          "second. Sampled every "
          f"{INTERVAL} s: udsprobe's VmRSS/VmHWM and open fds (/proc), the entries of each of "
          "its BPF maps (keys walked with bpf(2)), its miss counters (.bss).\n")
    print(f"- date: {t0:%Y-%m-%d %H:%M}–{t1:%H:%M} UTC ({wall:.0f} s); kernel "
          f"{platform.release()}; CPU {cpu_name()}, {os.cpu_count()} CPUs; udsprobe git {git}; "
          f"attach mode {doc['attach_mode'] if doc else '?'}")
    print(f"- CPU over the run: udsprobe {tr_cpu / wall * 100:.1f} % of one CPU (user+sys, its "
          f"BPF programs run in the traced tasks and count there), the load (redis-server, "
          f"clients, this script) {load_cpu / wall * 100:.1f} %; 1-minute load average "
          f"{min(s['load'] for s in samples):.2f}–{max(s['load'] for s in samples):.2f} "
          f"({os.cpu_count()} CPUs; other engineers' work included)")
    print(f"- load done: " + ", ".join(f"{v:,} {k}" for k, v in load.counts.items()))
    if sc:
        print(f"- `--metrics 127.0.0.1:PORT`, scraped every {SCRAPE_S:g} s through the run: "
              f"{sc.ok:,} scrapes answered, {sc.failed} failed; the last {sc.bytes / 1024:.0f} "
              f"KiB, {sc.series:,} series (at most 201 flows' worth: docs/TRACE.md, \"Metrics\")")
    print(f"- map sizes: " + ", ".join(f"{n} {samples[-1]['max'][n]}" for n in names))
    print(f"- regenerate: `scripts/bench.sh {'trace-metrics-soak' if METRICS else 'trace-soak'}` "
          f"(SOAK_DURATION s, default {DURATION if METRICS else 3600}; not run by `make bench` "
          "without naming it)\n")
    print("| time | VmRSS kB | VmHWM kB | fds | " + " | ".join(f"{n} entries" for n in names) +
          " | dirs evicted | misses (non-zero) |")
    print("|---" * (6 + len(names)) + "|")
    for s in samples:
        ms = s.get("misses") or {}
        nz = {k: v for k, v in zip(MISS_NAMES, ms.get("misses", [])) if v}
        if ms.get("outliers_dropped"):
            nz["outliers_dropped"] = ms["outliers_dropped"]
        print(f"| {s['t'] / 60:.1f} min | {s['VmRSS']} | {s['VmHWM']} | {s['fds']} | " +
              " | ".join(f"{s['maps'].get(n, 0):,}" for n in names) + f" | {evicted(s)} | " +
              (", ".join(f"{k} {v:,}" for k, v in nz.items()) or "0") + " |")
    slope = slope_kb_per_h(samples)
    print(f"\nVmRSS first sample (after {first['t'] / 60:.0f} min) {first['VmRSS']} kB, last "
          f"{last['VmRSS']} kB (growth {grow:+} kB), max {rss_max} kB; slope {slope:+.0f} kB/h "
          f"(least squares over the samples after the start); fds {first['fds']} → "
          f"{last['fds']}. Bound: growth ≤ {RSS_BOUND_KB} kB + {FLOW_KB} kB per flow of the "
          f"report ({nflows}: a flow's histograms; udsprobe keeps at most 4096) = {bound} kB, "
          "fds not more.")
    if doc:
        msgs = sum(f["messages"] for f in doc["flows"])
        print(f"At the end (--json): {len(doc['flows'])} flows, {msgs:,} messages; misses "
              + (", ".join(f"{k} {v:,}" for k, v in doc["misses"].items() if v) or "none") + ".")
    print(f"\n**Verdict: {'FAIL: ' + '; '.join(problems) if problems else 'pass'}**\n")
    return not problems


# enum fl_miss order (bpf/flows.h), for the .bss array
MISS_NAMES = ["fifo_full", "socket_unknown", "socket_map_full", "flow_map_full",
              "send_outside_syscall", "socket_reused", "task_map_full", "socket_closed_unread"]


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    # SIGINT and SIGTERM stop udsprobe and redis-server too (run() cleans up), even when the
    # bench was started in the background, where SIGINT comes ignored
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    d = Path(tempfile.mkdtemp(prefix="udsprobe-soak."))
    t0 = datetime.datetime.now(datetime.timezone.utc)
    # at the start: the tree may move during an hour's run
    git = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    try:
        log(f"trace-soak: {DURATION} s, a sample every {INTERVAL} s")
        res = run(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    t1 = datetime.datetime.now(datetime.timezone.utc)
    return 0 if report(*res, t0, t1, git) else 1


if __name__ == "__main__":
    sys.exit(main())
