"""Shared pieces of the bench sections (not a section itself: not executable, so scripts/bench.sh
skips it): progress output, the machine's description, median (min–max) cells, and the real
servers the benches start on private sockets and free loopback ports, each in its own process
group, stopped at the end."""
import ctypes
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[2]))
UDSPROBE = os.environ.get("UDSPROBE", str(REPO / "udsprobe"))
HOOKS_FLOOR = os.environ.get("HOOKS_FLOOR", str(REPO / ".output" / "hooks_floor"))
ASSETS = REPO / "tests" / "backlog"     # the nginx -> php-fpm stack of the backlog tests
PHP_FPM = shutil.which("php-fpm8.2") or "/usr/sbin/php-fpm8.2"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WRK = shutil.which("wrk") or "wrk"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class HooksFloor:
    """hooks_floor ARGS holding empty programs on udsprobe's hooks until stop() (--filtered:
    --trace's with a process filter; --compare unix|tcp: --compare's traced run's)."""

    def __init__(self, *args):
        t0 = time.monotonic()
        self.p = subprocess.Popen([HOOKS_FLOOR, *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not select.select([self.p.stdout], [], [], 60)[0]:
            self.p.kill()
            raise RuntimeError("hooks_floor did not attach within 60 s")
        line = self.p.stdout.readline()
        if not line.startswith("ready: "):
            raise RuntimeError(f"hooks_floor exited {self.p.wait()}: {self.p.stderr.read()}")
        self.hooks = line.split(":", 2)[2].split()
        self.startup = time.monotonic() - t0

    def stop(self):
        self.p.stdin.close()
        if self.p.wait(timeout=60) != 0:
            raise RuntimeError(f"hooks_floor exit {self.p.returncode}: {self.p.stderr.read()}")
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_name():
    """The CPU as lscpu names it, with its family and model: machines of our kind share a
    model name ("AMD EPYC") across families of 3-4x different speed."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    if "model name" not in info:
        return "unknown CPU"
    return (f"{info['model name']} ({info.get('vendor_id', '?')} family "
            f"{info.get('cpu family', '?')} model {info.get('model', '?')})")


def load1():
    """The 1-minute load average now."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def bpf_progs_held():
    """How many BPF programs processes hold open now (program and link fds, their fdinfo's
    prog_id): another engineer's udsprobe tracing the host also slows an 'untraced' run."""
    progs = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        progs |= prog_ids(pid)
    return len(progs)


NR_BPF = 321 if platform.machine() == "x86_64" else 280    # bpf(2): x86-64, arm64


def fdinfo_ids(pid, field):
    """The ids under field ("prog_id", "map_id") of the BPF objects process pid holds open
    (its fds' fdinfo; none once it is gone)."""
    ids, key = set(), field + ":"
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids.update(int(l.split()[1]) for l in f if l.startswith(key))
        except OSError:
            pass
    return ids


def prog_ids(pid):
    """The BPF programs process pid holds (program and link fds' prog_id)."""
    return fdinfo_ids(pid, "prog_id")


def verified_insns(prog_id):
    """(name, instructions the verifier processed to load it) of program prog_id, from its
    bpf_prog_info (verified_insns: Linux 5.16+, else 0); None if it is gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(struct.pack("I", prog_id) + b"\0" * 124)
    fd = libc.syscall(NR_BPF, 13, attr, len(attr))  # BPF_PROG_GET_FD_BY_ID
    if fd < 0:
        return None
    try:
        info = ctypes.create_string_buffer(232)
        attr = ctypes.create_string_buffer(struct.pack("IIQ", fd, len(info), ctypes.addressof(info))
                                           + b"\0" * 112)
        if libc.syscall(NR_BPF, 15, attr, len(attr)) < 0:  # BPF_OBJ_GET_INFO_BY_FD
            return None
        raw = info.raw
        return raw[64:80].split(b"\0")[0].decode(), struct.unpack_from("I", raw, 216)[0]
    finally:
        os.close(fd)


def group_cpu(pgids):
    """user+sys seconds so far of every process in these process groups (a server's master and
    workers: start() makes each server a group); BPF programs count in the task they run in"""
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(st[2]) in pgids:
            ticks += int(st[11]) + int(st[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rel_spread(xs):
    """(max - min) / median: the spread the benches judge run-to-run noise by."""
    med = statistics.median(xs)
    return (max(xs) - min(xs)) / med if med > 0 else float("inf")


def wrk_us(text):
    """µs of one of wrk's durations: 812.00us, 1.23ms, 2.00s"""
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


def fmt(xs, spec=",.0f"):
    """median (min–max)"""
    return (f"{format(statistics.median(xs), spec)} "
            f"({format(min(xs), spec)}–{format(max(xs), spec)})")


def start(argv, **kw):
    """A server in its own process group (stop() ends the group: master and workers)."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    return subprocess.Popen(argv, start_new_session=True, **kw)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait_until(ready, what, procs, secs=15):
    deadline = time.time() + secs
    while not ready():
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            stop(procs)
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.1)


def fill(template, dest, **subst):
    text = (ASSETS / template).read_text()
    for k, v in subst.items():
        text = text.replace(f"@{k}@", str(v))
    dest.write_text(text)


class FpmStack:
    """nginx (1 worker) on a free loopback port -> php-fpm (static pool) listening on `upstream`:
    a unix socket path, or 127.0.0.1:PORT. `d` must be traversable by user nobody."""

    def __init__(self, d, upstream, backlog, children):
        shutil.copy(ASSETS / "slow.php", d / "slow.php")
        os.chmod(d / "slow.php", 0o644)
        self.port = free_port()
        self.upstream = upstream
        fill("php-fpm.conf.in", d / "php-fpm.conf", DIR=d, LISTEN=upstream, BACKLOG=backlog,
             CHILDREN=children)
        fill("nginx.conf.in", d / "nginx.conf", DIR=d, PORT=self.port,
             UPSTREAM=upstream if ":" in upstream else f"unix:{upstream}")
        self.procs = [start([PHP_FPM, "-F", "-R", "-y", str(d / "php-fpm.conf")]),
                      start([NGINX, "-c", str(d / "nginx.conf"), "-p", str(d)])]
        self.pgids = {p.pid for p in self.procs}
        wait_until(self._answers, "nginx + php-fpm", self.procs)

    def _answers(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/?us=0", timeout=2) as r:
                return r.read() == b"ok\n"
        except OSError:
            return False

    def wrk(self, us, conns, secs, requests=False, latency=False):
        """requests/s of wrk -t2 against nginx for `secs` seconds (and the request count; and
        with latency, {"p50": µs, "p99": µs} of the requests from wrk --latency)"""
        out = subprocess.run([WRK, "-t2", f"-c{conns}", f"-d{secs}s",
                              *(["--latency"] if latency else []),
                              f"http://127.0.0.1:{self.port}/?us={us}"],
                             capture_output=True, text=True, check=True,
                             timeout=secs + 30).stdout
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        if latency:
            return (rps, int(re.search(r"(\d+) requests in", out).group(1)),
                    {p: wrk_us(re.search(rf"^\s+{p[1:]}%\s+(\S+)$", out, re.M).group(1))
                     for p in ("p50", "p99")})
        return (rps, int(re.search(r"(\d+) requests in", out).group(1))) if requests else rps

    def stop(self):
        stop(self.procs)


class Redis:
    """redis-server on a unix socket in `d` and a free 127.0.0.1 port, no persistence."""

    def __init__(self, d):
        self.sock, self.port = d / "redis.sock", free_port()
        self.proc = start(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                           "--unixsocket", str(self.sock), "--save", "", "--appendonly", "no",
                           "--dir", str(d)])
        self.procs = [self.proc]
        self.pgids = {self.proc.pid}
        wait_until(lambda: self.sock.exists() and self.cli("ping").strip() == "PONG",
                   "redis-server", self.procs)

    def target(self, transport):
        """redis-benchmark/redis-cli arguments and udsprobe's endpoint name for a transport"""
        if transport == "unix":
            return ["-s", str(self.sock)], str(self.sock)
        return ["-h", "127.0.0.1", "-p", str(self.port)], f"127.0.0.1:{self.port}"

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-s", str(self.sock), *args], capture_output=True,
                              text=True).stdout

    def commandstats(self):
        """{command: calls} from INFO commandstats (the INFO call itself not yet counted)"""
        calls = {}
        for line in self.cli("info", "commandstats").splitlines():
            if line.startswith("cmdstat_"):
                name, rest = line[len("cmdstat_"):].split(":", 1)
                calls[name] = int(dict(kv.split("=") for kv in rest.split(","))["calls"])
        return calls

    def stop(self):
        stop(self.procs)
