"""udsprobe --backlog --metrics: the scrape endpoint, scraped by a real Prometheus server (issue 14).

Debian's prometheus package (scripts/install-deps.sh): each test starts its own server with its
own TSDB in a temp dir on a free 127.0.0.1 port, and kills it by PID at teardown.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import compile_helpers, free_port, perf_paranoid_at_most_2

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "backlog"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
CTYPE = "text/plain; version=0.0.4; charset=utf-8"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--backlog needs root")


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    return compile_helpers(tmp_path_factory, ("listen_noaccept", "fork_clients"), "metrics-bins")


def http_get(url, timeout=5):
    """(status, headers, body) without raising on 4xx."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def start_listener(procs, bins, path, backlog=4):
    p = procs([bins["listen_noaccept"], "unix", str(path), str(backlog)],
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("ready")
    return p


def start_udsprobe(udsprobe, procs, tmp, args):
    jl = tmp / "backlog.jsonl"
    p = procs([udsprobe, "--backlog", "--quiet", "--json", str(jl), *args],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("udsprobe --backlog: attach mode"), (line, p.stderr.read()
                                                                 if p.poll() is not None else "")
    return p, jl


def finish(p):
    """SIGINT, then the rest of stdout/stderr (read() keeps what readline() buffered, which
    communicate() would skip)."""
    p.send_signal(signal.SIGINT)
    out = p.stdout.read()       # to EOF: a long summary must not block udsprobe on a full pipe
    err = p.stderr.read()
    p.wait(timeout=30)
    assert p.returncode == 0, err
    return out, err


def stop_udsprobe(p, jl):
    out, _ = finish(p)
    return out, [json.loads(l) for l in jl.read_text().splitlines() if l.strip()]


class Prometheus:
    """A real Prometheus server scraping one target every second."""

    def __init__(self, procs, tmp, target):
        self.port = free_port()
        cfg = tmp / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                       "scrape_configs:\n  - job_name: udsprobe\n    static_configs:\n"
                       f"      - targets: ['{target}']\n")
        self.log = open(tmp / "prometheus.log", "w")
        self.p = procs([PROMETHEUS, f"--config.file={cfg}",
                        f"--storage.tsdb.path={tmp / 'tsdb'}",
                        f"--web.listen-address=127.0.0.1:{self.port}"],
                       stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            assert self.p.poll() is None, (tmp / "prometheus.log").read_text()[-2000:]
            try:
                if http_get(f"http://127.0.0.1:{self.port}/-/ready", 1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail("prometheus did not become ready in 60 s")

    def query(self, expr):
        q = urllib.parse.urlencode({"query": expr})
        status, _, body = http_get(f"http://127.0.0.1:{self.port}/api/v1/query?{q}")
        doc = json.loads(body)
        assert status == 200 and doc["status"] == "success", doc
        return doc["data"]["result"]

    def wait_value(self, expr, want, timeout=20):
        """The query's single value once it equals want (polls; fails with the last seen)."""
        seen = None
        deadline = time.time() + timeout
        while time.time() < deadline:
            res = self.query(expr)
            seen = [r["value"][1] for r in res]
            if len(res) == 1 and float(res[0]["value"][1]) == want:
                return res[0]
            time.sleep(0.5)
        pytest.fail(f"{expr}: wanted {want}, Prometheus has {seen}")


DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "udsprobe-dashboard.json"


def dashboard_queries(metric_prefix):
    """(panel title, PromQL) of docs/udsprobe-dashboard.json's panels on metric_prefix, with
    Grafana's variables as Prometheus needs them: every instance, a 1-minute rate window."""
    doc = json.loads(DASHBOARD.read_text())
    out = []
    for p in doc["panels"]:
        for t in p.get("targets", []):
            if metric_prefix in t["expr"]:
                expr = t["expr"].replace("$__rate_interval", "1m").replace("$instance", ".*")
                out.append((p["title"], expr))
    return out


def assert_dashboard_answers(prom, metric_prefix):
    """Each panel of the dashboard on these metrics has data from this very udsprobe."""
    queries = dashboard_queries(metric_prefix)
    assert len(queries) >= 4, queries
    empty = [title for title, expr in queries if not prom.query(expr)]
    assert not empty, f"dashboard panels with no data: {empty}"


def test_prometheus_scrapes_overflow_count_during_storm(udsprobe, attach_mode, procs, bins,
                                                        tmp_path):
    """A real Prometheus scrapes --metrics during an AF_UNIX connect storm; its count = udsprobe's.
    In the attach mode under test (the count is what each mode must get exactly)."""
    sock = tmp_path / "storm.sock"
    start_listener(procs, bins, sock)
    mport = free_port()
    u, jl = start_udsprobe(udsprobe, procs, tmp_path,
                           ["--unix", str(sock), "--interval", "0.5",
                            "--metrics", f"127.0.0.1:{mport}",
                            *(["--backlog-attach", attach_mode] if attach_mode else [])])
    prom = Prometheus(procs, tmp_path, f"127.0.0.1:{mport}")
    prom.wait_value('up{job="udsprobe"}', 1)

    # The storm: 8,000 short-lived client processes x 4 non-blocking connects, spread over at
    # least 3 s so that Prometheus (1 s interval) scrapes it mid-way (a fast host ran them all in
    # 0.8 s, between two scrapes), none started after 60 s (15 s in a TCG guest: 3,999 clients
    # and 15 scrapes in the 6.12 guest on an Intel 6/207 host prove the same exact count): a
    # slower machine runs fewer, at least 1,000; the queue (limit 4) holds 5, so every other connect
    # is refused (EAGAIN).
    t0 = time.time()
    last_start = "15" if os.environ.get("UDSVM") == "1" else "60"
    storm = subprocess.run([bins["fork_clients"], str(sock), "8000", "4", last_start, "3"],
                           capture_output=True, text=True, timeout=300)
    storm_s = time.time() - t0
    assert storm.returncode == 0, storm.stderr
    fields = dict(kv.split("=") for kv in storm.stdout.split())
    eagain, n = int(fields["eagain"]), int(fields["clients"])
    assert 1000 <= n <= 8000 and int(fields["other"]) == 0, storm.stdout
    assert eagain == n * 4 - 5, storm.stdout

    # Prometheus' own view through its HTTP API, udsprobe still running.
    sel = f'udsprobe_backlog_overflows_total{{family="unix",address="{sock}"}}'
    got = prom.wait_value(sel, eagain)
    assert got["metric"]["job"] == "udsprobe"
    assert got["metric"]["owner_comm"] == "listen_noaccept"
    # Scraped while the storm ran: a sample between none and all of it.
    window = int(time.time() - t0) + 3
    series = prom.query(f"{sel}[{window}s]")
    values = [float(v) for _, v in series[0]["values"]]
    assert any(0 < v < eagain for v in values), (values, storm_s)
    assert values == sorted(values), values     # a counter: never goes down
    clients = prom.query('sum(udsprobe_backlog_client_overflows_total{client_comm="fork_clients"})')
    assert float(clients[0]["value"][1]) == eagain
    assert_dashboard_answers(prom, "udsprobe_backlog_")

    # The text exposition itself: content type, and promtool accepts it.
    status, headers, body = http_get(f"http://127.0.0.1:{mport}/metrics")
    assert status == 200 and headers["Content-Type"] == CTYPE
    chk = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True)
    assert chk.returncode == 0, chk.stdout + chk.stderr

    text, events = stop_udsprobe(u, jl)
    run = [e for e in events if e["event"] == "run"][-1]
    assert attach_mode in (None, run["attach_mode"]), run
    summary = [e for e in events if e["event"] == "summary" and e["address"] == str(sock)]
    assert summary and summary[0]["overflows"] == eagain, summary
    assert f" {eagain} " in text   # the count udsprobe printed in its summary table
    print(f"{run['attach_mode']} mode: storm {storm_s:.1f} s; eagain={eagain}; udsprobe summary "
          f"{summary[0]['overflows']}; Prometheus {sel} = {got['value'][1]}")


@pytest.mark.userspace
def test_metrics_http_paths_and_bounds(udsprobe, procs, bins, tmp_path):
    """404 elsewhere, 405 for POST, 431 for an oversized head; a silent client blocks nothing."""
    sock = tmp_path / "l.sock"
    start_listener(procs, bins, sock)
    mport = free_port()
    u, jl = start_udsprobe(udsprobe, procs, tmp_path,
                           ["--unix", str(sock), "--interval", "0.2",
                            "--metrics", f"127.0.0.1:{mport}"])
    base = f"http://127.0.0.1:{mport}"
    assert http_get(base + "/")[0] == 404
    assert http_get(base + "/metricsx")[0] == 404
    assert http_get(base + "/metrics?x=1")[0] == 200
    req = urllib.request.Request(base + "/metrics", data=b"x", method="POST")
    try:
        urllib.request.urlopen(req, timeout=5)
        pytest.fail("POST answered 2xx")
    except urllib.error.HTTPError as e:
        assert e.code == 405 and e.headers["Allow"] == "GET, HEAD"

    # Silent clients, more than the connection table holds (64), stay open: one silent for
    # 1 s makes room for a new client, so an oversized head still gets its 431 and a GET its 200.
    silent = [socket.create_connection(("127.0.0.1", mport)) for _ in range(70)]
    time.sleep(0.3)
    big = socket.create_connection(("127.0.0.1", mport))
    big.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n")
    big.settimeout(5)
    assert big.recv(64).startswith(b"HTTP/1.1 431 "), "oversized request not refused"
    big.close()
    t0 = time.time()
    status, headers, body = http_get(base + "/metrics", timeout=5)
    assert status == 200 and b"udsprobe_backlog_limit{" in body
    assert time.time() - t0 < 3, "a GET waited behind silent clients"
    for s in silent:
        s.close()
    hung = socket.create_connection(("127.0.0.1", mport))   # sends nothing, stays open
    n0 = len(jl.read_text().splitlines())
    time.sleep(1.5)
    assert len(jl.read_text().splitlines()) > n0, "interval lines stopped while a client hung"
    assert http_get(base + "/metrics", timeout=5)[0] == 200
    hung.close()
    stop_udsprobe(u, jl)


def raw_request(port, data, timeout=15):
    """Send data, read to EOF: the bytes answered (b"" when closed without an answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


@pytest.mark.userspace
def test_metrics_http_answers_bad_requests_at_once(udsprobe, procs, tmp_path):
    """Binary bytes (a TLS hello) or a NUL in the path: 400, not silence until the 5 s idle
    timeout; a long query string is ignored, as Prometheus' own exporters do (issue 36.11)."""
    mport = free_port()
    u, jl = start_udsprobe(udsprobe, procs, tmp_path, ["--metrics", f"127.0.0.1:{mport}"])
    tls_hello = bytes.fromhex("160301020001000001fc0303") + os.urandom(32)
    for bad in (tls_hello, b"GET /met\0rics HTTP/1.1\r\n\r\n", b"\xff\xfe GET /metrics\r\n\r\n"):
        reply = raw_request(mport, bad)
        assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), (bad, reply)
    reply = raw_request(mport, b"GET /metrics?" + b"a" * 300 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and b"udsprobe_backlog_" in reply, reply[:200]
    stop_udsprobe(u, jl)


@pytest.mark.userspace
def test_metrics_http_serves_every_concurrent_scrape(udsprobe, procs, tmp_path):
    """200 scrapes at once: each gets a whole 200 (a new connection replaced one whose complete
    request was still waiting: 31-138 resets or empty replies per run; issue 36.6)."""
    mport = free_port()
    u, jl = start_udsprobe(udsprobe, procs, tmp_path, ["--metrics", f"127.0.0.1:{mport}"])
    n, start = 200, threading.Barrier(200)
    replies = [None] * n

    def scrape(i):
        start.wait()
        try:
            replies[i] = raw_request(mport, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 60)
        except OSError as e:
            replies[i] = repr(e).encode()
    threads = [threading.Thread(target=scrape, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = []
    for r in replies:
        head, _, body = r.partition(b"\r\n\r\n")
        length = re.search(rb"\r\nContent-Length: (\d+)\r\n", head + b"\r\n")
        if not (head.startswith(b"HTTP/1.1 200 OK") and length and body and
                len(body) == int(length[1])):
            bad.append(r[:80])
    assert not bad, f"{len(bad)} of {n} scrapes not a whole 200: {bad[:5]}"
    stop_udsprobe(u, jl)


@pytest.mark.userspace
def test_metrics_usage_and_bind_errors(udsprobe, procs, tmp_path):
    """Bad ADDR:PORT is exit 2; a port in use is exit 1 with the reason."""
    for bad in ("9464", "localhost:9464", "127.0.0.1:0", "127.0.0.1:70000", "[::1:9464"):
        res = subprocess.run([udsprobe, "--backlog", "--metrics", bad], capture_output=True,
                             text=True, timeout=10)
        assert res.returncode == 2, (bad, res.stderr)
        assert f"--metrics: '{bad}' is not ADDR:PORT" in res.stderr
    res = subprocess.run([udsprobe, "--metrics", "127.0.0.1:9464"], capture_output=True,
                         text=True, timeout=10)
    assert res.returncode == 2 and "--metrics needs --backlog" in res.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run([udsprobe, "--backlog", "--duration", "1", "--metrics",
                              f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert res.stderr.strip() == (f"udsprobe: cannot serve --metrics 127.0.0.1:{port}: "
                                  "Address already in use; another process listens there "
                                  "(ss -ltnp names it): stop it or give --metrics another port")


# ---- running it as a service ------------------------------------------------------------

@pytest.mark.userspace
def test_alert_rules_pass_promtool():
    """docs/backlog-alerts.yml is valid, and each alert fires exactly as its unit test says."""
    chk = subprocess.run([PROMTOOL, "check", "rules", str(REPO / "docs" / "backlog-alerts.yml")],
                         capture_output=True, text=True)
    assert chk.returncode == 0 and "SUCCESS: 4 rules found" in chk.stdout, chk.stdout + chk.stderr
    res = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yml"], cwd=ASSETS,
                         capture_output=True, text=True)
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr


UNIT = REPO / "scripts" / "udsprobe-backlog.service"
TRACE_UNIT = REPO / "scripts" / "udsprobe-trace.service"


def unit_caps(unit=UNIT):
    line = [l for l in unit.read_text().splitlines() if l.startswith("AmbientCapabilities=")][0]
    return [c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split()]


@pytest.mark.userspace
@pytest.mark.parametrize("unit", [UNIT, TRACE_UNIT], ids=lambda u: u.name)
def test_service_unit_verifies(udsprobe, tmp_path, unit):
    """systemd-analyze verify accepts the units (ExecStart pointed at this build)."""
    text = unit.read_text().replace("/usr/local/bin/udsprobe", udsprobe)
    path = tmp_path / unit.name
    path.write_text(text)
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                         capture_output=True, text=True, env={**os.environ,
                                                              "SYSTEMD_LOG_LEVEL": "warning"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert set(unit_caps(unit)) == {"bpf", "perfmon", "dac_read_search", "sys_ptrace"}


def unit_memlock():
    """The unit's LimitMEMLOCK as prlimit takes it (kernels before 5.11 charge BPF maps to it)."""
    line = [l for l in UNIT.read_text().splitlines() if l.startswith("LimitMEMLOCK=")][0]
    v = line.split("=", 1)[1].strip()
    return "unlimited" if v == "infinity" else v


def memlock_as_unit():
    """prlimit setting the unit's memlock limit, as systemd does; [] where this root cannot
    raise it (no CAP_SYS_RESOURCE, as on our 6.18 hosts, whose BPF maps are not charged to it)."""
    lim = unit_memlock()
    cmd = ["prlimit", f"--memlock={lim}:{lim}"]
    return cmd if subprocess.run(cmd + ["true"], capture_output=True).returncode == 0 else []


def run_as_nobody(binary, caps, args, timeout=30):
    """uid/gid 65534 with these capabilities and the unit's memlock limit, as systemd starts it."""
    spec = ",".join(["-all"] + [f"+{c}" for c in caps])
    return [*memlock_as_unit(), "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            f"--inh-caps={spec}", f"--ambient-caps={spec}", binary, *args]


def test_backlog_as_nobody_with_the_units_capabilities(udsprobe, procs, bins, tmp_path):
    """uid 65534 with exactly the unit's capabilities counts overflows of a root-owned listener
    with its owner; without CAP_SYS_PTRACE it says what it cannot see; without any, exit 1."""
    os.chmod(tmp_path, 0o755)
    binary = tmp_path / "udsprobe"
    shutil.copy(udsprobe, binary)
    os.chmod(binary, 0o755)
    outdir = tmp_path / "out"
    outdir.mkdir(mode=0o777)
    os.chmod(outdir, 0o777)
    sock = tmp_path / "svc.sock"
    start_listener(procs, bins, sock)          # root's listener, limit 4
    os.chmod(sock, 0o777)
    burst = tmp_path / "connect_burst"
    subprocess.run(["gcc", "-O2", "-o", str(burst), str(ASSETS / "connect_burst.c")], check=True)

    def run(caps, name):
        jl = outdir / f"{name}.jsonl"
        p = procs(run_as_nobody(str(binary), caps, ["--backlog", "--quiet", "--unix", str(sock),
                                                     "--json", str(jl)]),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        assert line.startswith("udsprobe --backlog: attach mode"), (caps, line, p.stderr.read())
        res = subprocess.run([str(burst), "unix", str(sock), "20", "--exit"],
                             capture_output=True, text=True, timeout=30)
        out, err = finish(p)
        ev = [json.loads(l) for l in jl.read_text().splitlines() if l.strip()]
        summ = [e for e in ev if e["event"] == "summary" and e["address"] == str(sock)]
        return res.stdout, line + out, summ

    # docs/BACKLOG.md says to set perf_event_paranoid to 2 for the unit; here: the unit's set
    # fails clearly at Debian's 3, then runs at 2 (restored after). (A mode that needs no
    # perf_event_open may still work there: then nothing is lowered.)
    lower = False
    if int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) > 2:
        r = subprocess.run(run_as_nobody(str(binary), unit_caps(), ["--backlog", "--duration", "1"]),
                           capture_output=True, text=True, timeout=60)
        lower = r.returncode != 0
        assert r.returncode == 0 or (r.returncode == 1 and "Permission denied" in r.stderr), r
    with perf_paranoid_at_most_2(lower):
        burst_out, text, summ = run(unit_caps(), "unit")
    eagain = int(dict(kv.split("=") for kv in burst_out.split())["eagain"])
    assert eagain == 15 and summ[0]["overflows"] == 15, (burst_out, summ)
    assert summ[0]["owner_comm"] == "listen_noaccept" and summ[0]["clients"][0]["count"] == 15
    assert "no CAP_SYS_PTRACE" not in text

    # The queue stays full (nothing accepts): all 20 of the next burst overflow.
    with perf_paranoid_at_most_2(lower):
        _, text, summ = run([c for c in unit_caps() if c != "sys_ptrace"], "noptrace")
    assert "note: no CAP_SYS_PTRACE: other users' processes cannot be read" in text
    assert summ and summ[0]["owner_pid"] is None, summ

    res = subprocess.run(run_as_nobody(str(binary), [], ["--backlog", "--duration", "1"]),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert res.stderr == ("udsprobe: --backlog needs root (CAP_BPF and CAP_PERFMON; this process "
                          "lacks both): run it with sudo, or as a service given those "
                          "(udsprobe-backlog.service)\n")


# ---- long runs stay bounded --------------------------------------------------------------

CHURN = r"""
import os, socket, sys, time
d, n, batch = sys.argv[1], int(sys.argv[2]), 100
print("ready", flush=True)
sys.stdin.readline()
for b in range(0, n, batch):
    live = []
    for i in range(b, b + batch):
        s = socket.socket(socket.AF_UNIX)
        s.bind(f"{d}/c{i}.sock")
        s.listen(4)
        for _ in range(6):                  # 5 queue, the 6th overflows: exactly one each
            c = socket.socket(socket.AF_UNIX)
            c.setblocking(False)
            try:
                c.connect(f"{d}/c{i}.sock")
            except BlockingIOError:
                pass
            c.close()
        live.append(s)
    time.sleep(0.5)                         # seen by the 100 ms sampler, counted
    for s in live:
        os.unlink(s.getsockname())
        s.close()
print("done", flush=True)
sys.stdin.readline()
"""


def test_listener_churn_bounded_and_exact(udsprobe, procs, tmp_path):
    """1,200 listeners that each overflow once and close: at most 1,024 closed ones are kept
    for the summary, the rest folded into counts, and no overflow is lost either way. In a
    network namespace of its own (`unshare -n`), watching only that one (`--netns
    /proc/self/ns/net`, udsprobe's own), so no other listener of the host can be folded into
    the counts."""
    n = 1200
    jl = tmp_path / "backlog.jsonl"
    u = procs(["unshare", "-n", udsprobe, "--backlog", "--netns", "/proc/self/ns/net", "--quiet",
               "--interval", "0.2", "--json", str(jl)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert u.stdout.readline().startswith("udsprobe --backlog: attach mode")
    churn = procs(["nsenter", f"--net=/proc/{u.pid}/ns/net", "python3", "-c", CHURN,
                   str(tmp_path), str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  text=True)
    assert churn.stdout.readline().strip() == "ready"
    churn.stdin.write("go\n")
    churn.stdin.flush()
    assert churn.stdout.readline().strip() == "done"
    time.sleep(1.5)                         # the last batch retired, then foldable
    text, events = stop_udsprobe(u, jl)
    ours = [e for e in events if e["event"] == "summary" and
            e["address"].startswith(str(tmp_path) + "/c")]
    run = [e for e in events if e["event"] == "run"][-1]
    assert all(e["overflows"] == 1 for e in ours), [e for e in ours if e["overflows"] != 1][:3]
    assert sum(e["overflows"] for e in ours) + run["listeners_folded_overflows"] == n, (
        len(ours), run)
    assert len(ours) == 1024 and run["listeners_folded"] == n - 1024, (len(ours), run)
    assert run["dropped_events"] == 0
    assert f"more closed listeners had {run['listeners_folded_overflows']} overflows" in text
    churn.stdin.write("bye\n")
    churn.stdin.flush()
