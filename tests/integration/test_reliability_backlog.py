"""udsprobe --backlog under a hostile host (issue 16, items 2-9): host-only, root, bounded.

Each test failed before its fix. Attacker-side actions run as an unprivileged user
(setpriv --reuid=65534) against root's udsprobe; namespace cases use unshare -n / -m.
Every process started here is killed by pid (process group) at teardown.
"""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import compile_helpers, free_port

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "backlog"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--backlog needs root")


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    return compile_helpers(tmp_path_factory,
                           ("listen_noaccept", "connect_burst", "fork_clients", "raw_connect"),
                           "reliability-bins")




@pytest.fixture
def wdir():
    d = Path(tempfile.mkdtemp(prefix="udsprobe-rel."))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_watch(udsprobe, procs, args):
    """udsprobe --backlog in the background, after its start line."""
    p = procs([udsprobe, "--backlog", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True)
    line = p.stdout.readline()
    if not line.startswith("udsprobe --backlog: attach mode"):
        p.wait(timeout=10)
        pytest.fail(f"udsprobe did not start: {line!r} {p.stderr.read()}")
    return p, line


def finish(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{err}"
    return out, err


def jsonl(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]


def listen_ready(procs, argv, **kw):
    srv = procs(argv, stdout=subprocess.PIPE, text=True, **kw)
    line = srv.stdout.readline()
    assert line.startswith("ready"), line
    return srv, int(line.split()[1])


# ---- item 2: --prom temp file and target ------------------------------------------------

def test_prom_tmp_symlink_not_followed(udsprobe, procs, wdir):
    """A user who can write the --prom directory plants symlinks at the temp names
    root will use; root must not write through them (old name: PATH.tmp.PID)."""
    shared = wdir / "textfile"
    shared.mkdir()
    os.chmod(shared, 0o777)                 # shared, not sticky: symlinks are followed there
    victim = wdir / "victim"
    victim.write_text("SECRET\n")
    os.chmod(victim, 0o600)
    prom = shared / "node.prom"
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.2", "--duration", "1.5",
                                         "--prom", prom])
    for name in (f"node.prom.tmp.{p.pid}", ".node.prom.tmp", "node.prom.tmp"):
        subprocess.run([*NOBODY, "ln", "-sf", str(victim), str(shared / name)], check=True)
    finish(p)
    assert victim.read_text() == "SECRET\n"
    st = os.lstat(prom)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    assert stat.S_IMODE(st.st_mode) == 0o644
    assert "udsprobe_backlog_last_update_timestamp_seconds" in prom.read_text()
    leftovers = [f.name for f in shared.iterdir() if f.name.startswith(".node.prom.tmp.")]
    assert not leftovers


@pytest.mark.parametrize("kind", ["device", "symlink", "directory"])
def test_prom_refuses_non_regular_target(udsprobe, wdir, kind):
    target = wdir / "node.prom"
    if kind == "device":
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 7))   # a /dev/full of our own
    elif kind == "symlink":
        (wdir / "real").write_text("keep\n")
        target.symlink_to(wdir / "real")
    else:
        target.mkdir()
    res = subprocess.run([udsprobe, "--backlog", "--duration", "0.3", "--prom", str(target)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1, res.stderr
    assert "not a regular file" in res.stderr and str(target) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    mode = os.lstat(target).st_mode
    assert {"device": stat.S_ISCHR, "symlink": stat.S_ISLNK, "directory": stat.S_ISDIR}[kind](mode)
    if kind == "symlink":
        assert (wdir / "real").read_text() == "keep\n"


# ---- helpers for the items below --------------------------------------------------------

PY = "/usr/bin/python3"

# Bind NAME (bytes, Python literal), listen(BACKLOG), make CONNECTS non-blocking connects,
# print "ready PID eagain=N", then sleep (the listener stays until killed).
LISTEN_AND_OVERFLOW = r'''
import os, socket, sys, time
name, backlog, n = eval(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
l = socket.socket(socket.AF_UNIX); l.bind(name); l.listen(backlog)
keep, eagain = [], 0
for _ in range(n):
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try:
        c.connect(name)
    except BlockingIOError:
        eagain += 1
    keep.append(c)
print("ready", os.getpid(), "eagain=%d" % eagain, flush=True)
time.sleep(60)
'''


def overflow_listener(procs, name, backlog, n, prefix=()):
    """Run LISTEN_AND_OVERFLOW (optionally under prefix, e.g. unshare); -> (Popen, pid, eagain)."""
    p = procs([*prefix, PY, "-c", LISTEN_AND_OVERFLOW, repr(name), str(backlog), str(n)],
              stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    return p, int(line[1]), int(line[2].split("=")[1])


def summaries(events):
    return [e for e in events if e["event"] == "summary"]


def own_netns():
    return os.stat("/proc/self/ns/net").st_ino


def assert_clean_text(raw: bytes):
    """No control byte but newline, valid UTF-8, and every line one of udsprobe's own."""
    raw.decode("utf-8")
    bad = sorted({b for b in raw if (b < 0x20 and b != 0x0a) or b == 0x7f})
    assert not bad, f"control bytes {bad} in the text output"


# ---- item 3: terminal injection ---------------------------------------------------------

def test_text_output_escapes_hostile_names(udsprobe, procs, bins, wdir):
    """A user names a socket and a process with ESC, BEL and newlines; root's live view,
    summary and recommendations show them escaped, never raw."""
    shared = wdir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    evil_path = str(shared / "x\x1b]0;owned\x07\nFORGED ROW\x1b[2J.sock").encode()
    evil_bin = shared / "\x1b[31mevil\x07"
    shutil.copy(bins["connect_burst"], evil_bin)
    os.chmod(evil_bin, 0o755)
    p = procs([udsprobe, "--backlog", "--interval", "0.3", "--duration", "2.5", "--json",
               str(wdir / "out.jsonl"), "--prom", str(wdir / "out.prom")],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"udsprobe --backlog: attach mode")
    srv, _, _ = overflow_listener(procs, evil_path, 1, 0, prefix=NOBODY)
    time.sleep(0.3)
    res = subprocess.run([*NOBODY, str(evil_bin), "unix", evil_path, "6", "--exit"],
                         capture_output=True, text=True)
    assert "eagain=4" in res.stdout, res
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert_clean_text(out)
    assert_clean_text(err)
    text = out.decode()
    assert "\\x1b]0;owned\\x07\\x0aFORGED ROW\\x1b[2J.sock" in text
    assert "\\x1b[31mevil\\x07/" in text                         # the client, escaped
    assert not any(l.startswith("FORGED") for l in text.splitlines())
    assert "Recommendations:" in text
    ev = jsonl(wdir / "out.jsonl")
    s = [e for e in summaries(ev) if "FORGED" in e["address"]]
    assert len(s) == 1 and s[0]["overflows"] == 4
    assert s[0]["clients"][0]["comm"] == "\\x1b[31mevil\\x07"


# ---- item 4: listeners are sockets, not names -------------------------------------------

def test_abstract_name_in_other_netns_is_another_listener(udsprobe, procs, wdir):
    name = b"\0udsprobe-rel-shared-%d" % os.getpid()
    host, host_pid, _ = overflow_listener(procs, name, 8, 0)
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "1.5", "--interval", "0.3",
                                         "--json", wdir / "o.jsonl"])
    inner, _, eagain = overflow_listener(procs, name, 1, 6, prefix=["unshare", "-n"])
    assert eagain == 4
    finish(p)
    rows = [e for e in summaries(jsonl(wdir / "o.jsonl"))
            if e["address"] == "@" + name[1:].decode()]
    host_row = [e for e in rows if e["owner_pid"] == host_pid]
    other = [e for e in rows if e["owner_pid"] != host_pid]
    assert len(host_row) == 1
    assert host_row[0]["overflows"] == 0 and host_row[0]["peak_queue"] == 0
    assert host_row[0]["netns"] == own_netns()
    assert len(other) == 1 and other[0]["overflows"] == 4 and other[0]["netns"]


def test_same_path_in_other_mount_ns_is_another_listener(udsprobe, procs, wdir):
    d = wdir / "m"
    d.mkdir()
    path = str(d / "m.sock").encode()
    host, host_pid, _ = overflow_listener(procs, path, 8, 0)
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "1.5", "--interval", "0.3",
                                         "--json", wdir / "o.jsonl"])
    # a private tmpfs over the same directory, a listener at the same path inside it
    inner_cmd = ["unshare", "-m", "sh", "-c", f'mount -t tmpfs none "{d}" && exec "$0" "$@"']
    inner, inner_pid, eagain = overflow_listener(procs, path, 1, 6, prefix=inner_cmd)
    assert eagain == 4
    finish(p)
    rows = [e for e in summaries(jsonl(wdir / "o.jsonl")) if e["address"] == path.decode()]
    by_owner = {e["owner_pid"]: e for e in rows}
    assert by_owner[host_pid]["overflows"] == 0
    assert by_owner[inner_pid]["overflows"] == 4


def test_syn_retransmits_in_other_netns_not_on_host_port(udsprobe, procs, bins, wdir):
    port = free_port()
    host, _ = listen_ready(procs, [bins["listen_noaccept"], "tcp", str(port), "8"])
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "4", "--interval", "0.5",
                                         "--json", wdir / "o.jsonl"])
    inner = procs(["unshare", "-n", "sh", "-c",
                   f'ip link set lo up && "{bins["listen_noaccept"]}" tcp {port} 0 >/dev/null & '
                   f'sleep 0.3; sleep 6 | "{bins["connect_burst"]}" tcp {port} 8 & sleep 7'],
                  stdout=subprocess.DEVNULL)
    finish(p)
    ev = jsonl(wdir / "o.jsonl")
    last = [e for e in ev if e["event"] == "interval" and e["address"] == f"127.0.0.1:{port}"
            and e["netns"] == own_netns()][-1]
    assert last["syn_retransmits"] == 0
    # the same address in the other netns is a listener of its own (read inside it)
    rows = [e for e in summaries(ev) if e["address"] == f"127.0.0.1:{port}"]
    host_rows = [e for e in rows if e["netns"] == own_netns()]
    assert len(host_rows) == 1 and host_rows[0]["overflows"] == 0
    assert len(rows) == 2 and [e["limit"] for e in rows if e not in host_rows] == [0]
    other = [e for e in ev if e["event"] == "interval" and e["family"] == "tcp"
             and e["netns"] not in (None, own_netns()) and e["syn_retransmits"] > 0]
    assert other, "the other netns' retransmits are not reported at all"


# ---- item 5: every listener seen ---------------------------------------------------------

MANY = r'''
import os, resource, socket, sys, time
n, d = int(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_NOFILE, (3 * n + 64, 3 * n + 64))
keep = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX); s.bind(f"{d}/s{i}"); s.listen(4); keep.append(s)
    if i % 2 == 0:
        for _ in range(2):
            c = socket.socket(socket.AF_UNIX); c.connect(f"{d}/s{i}"); keep.append(c)
print("ready", os.getpid(), flush=True)
time.sleep(60)
'''


def test_all_2000_unix_listeners_seen(udsprobe, procs, wdir):
    listen_ready(procs, [PY, "-c", MANY, "2000", str(wdir)])
    res = subprocess.run([udsprobe, "--backlog", "--quiet", "--duration", "0.5", "--interval",
                          "0.3", "--json", "-"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    mine = [e for e in summaries([json.loads(l) for l in res.stdout.splitlines()])
            if e["address"].startswith(str(wdir) + "/s")]
    assert len(mine) == 2000
    queued = {e["address"] for e in mine if e["peak_queue"] == 2}
    assert queued == {f"{wdir}/s{i}" for i in range(0, 2000, 2)}


# ---- item 6: short-lived clients do not fill the map ------------------------------------

def test_18000_short_lived_clients_all_counted(udsprobe, procs, bins, wdir):
    path = str(wdir / "c.sock")
    listen_ready(procs, [bins["listen_noaccept"], "unix", path, "0"])
    keep = socket.socket(socket.AF_UNIX)
    keep.connect(path)                      # the one slot: every connect below fails
    prom = wdir / "c.prom"
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.2", "--unix", path,
                                         "--json", wdir / "o.jsonl", "--prom", prom])
    res = subprocess.run([bins["fork_clients"], path, "18000", "2"], capture_output=True,
                         text=True, timeout=120)
    assert res.stdout.strip() == "clients=18000 eagain=36000 other=0", res
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    finish(p)
    keep.close()
    ev = jsonl(wdir / "o.jsonl")
    s = [e for e in summaries(ev) if e["address"] == path]
    assert len(s) == 1 and s[0]["overflows"] == 36000
    run = [e for e in ev if e["event"] == "run"][0]
    assert run["dropped_events"] == 0
    assert all(e["dropped_events"] == 0 for e in ev if e["event"] == "stats")
    assert re.search(r"^udsprobe_backlog_dropped_events_total 0$", prom.read_text(), re.M)


# ---- item 7: closed listeners are forgotten ---------------------------------------------

CHURN = r'''
import os, socket, sys, time
d, end = sys.argv[1], time.time() + float(sys.argv[2])
i = 0
while time.time() < end:
    s = socket.socket(socket.AF_UNIX); s.bind(f"{d}/churn{i}"); s.listen(1)
    time.sleep(0.005); s.close(); os.unlink(f"{d}/churn{i}"); i += 1
print("done", i, flush=True)
'''


def test_closed_listeners_retired(udsprobe, procs, wdir):
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "3", "--interval", "0.25",
                                         "--json", wdir / "o.jsonl"])
    churn = subprocess.run([PY, "-c", CHURN, str(wdir), "2.2"], capture_output=True, text=True)
    assert churn.stdout.startswith("done")
    finish(p)
    ev = jsonl(wdir / "o.jsonl")
    churned = [e for e in ev if "/churn" in e.get("address", "")]
    seen = {e["address"] for e in churned}
    assert len(seen) > 5                     # the 100 ms sampler saw some (at most ~22)
    lines = {}
    for e in churned:
        assert e["event"] == "interval", e   # none of them is in the summary
        lines.setdefault(e["address"], []).append(e)
    # each shows up while open, then once more with "closed": true, never after
    for addr, rows in lines.items():
        assert [r.get("closed", False) for r in rows][-1] is True, rows
        assert sum(1 for r in rows if r.get("closed")) == 1
    times = sorted({e["time_s"] for e in ev if e["event"] == "interval"})
    last = [e for e in ev if e["event"] == "interval" and e["time_s"] == times[-1]]
    assert not [e for e in last if "/churn" in e["address"]]


# ---- issue 14 item 5 / issue 15: memory stays bounded through listener churn --------------

RETIRED_MAX = 1024          # BL_MAX_RETIRED: closed listeners kept for the summary
KEPT_PER_RETIRED = 9        # RETIRED_CLIENTS (8) by pid + one entry per command (1 here)
CLIENT_BYTES = 120          # sizeof(struct client): a closed listener's clients are kept once


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def churn_batch(wdir, tag, n, bins=None, clients=0):
    """n unix listeners (listen 0, never accepting) that overflow, then close: by the test
    process (1 overflow each) or by `clients` forked processes with 2 connects each."""
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(wdir / f"{tag}{i}"))
        s.listen(0)
        socks.append(s)
    time.sleep(0.25)                        # the 100 ms sampler sees every one
    held = []
    for i, s in enumerate(socks):
        if not clients:
            for _ in range(2):
                c = socket.socket(socket.AF_UNIX)
                c.setblocking(False)
                try:
                    c.connect(s.getsockname())
                except BlockingIOError:
                    pass
                held.append(c)
    for k in range(0, n if clients else 0, 10):  # 10 storms at a time
        storms = [subprocess.Popen([bins["fork_clients"], socks[j].getsockname(),
                                    str(clients), "2"], stdout=subprocess.DEVNULL)
                  for j in range(k, min(n, k + 10))]
        for p in storms:
            assert p.wait(timeout=60) == 0
    for s in socks:
        os.unlink(s.getsockname())
        s.close()
    for c in held:
        c.close()


def test_listener_churn_memory_bounded(udsprobe, procs, bins, wdir):
    """1,100 overflowing listeners fill the retired table; then 2 x 200 more, each hit by 20
    short-lived clients, come and go. Design bounds: at most 1,024 closed listeners kept,
    each with at most 8 clients by pid plus one per command; once the table is full RSS may
    grow only by what those clients can add (1,024 x 9 x 120 B = 1.1 MiB) plus 2 MiB for
    the allocator (the 10-minute storm in docs/BENCHMARKS.md is the long version)."""
    jl = wdir / "o.jsonl"
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.5", "--json", jl])
    for b in range(11):
        churn_batch(wdir, f"f{b}-", 100)
    time.sleep(1.6)                         # retired, then compacted an interval later
    rss = [rss_kib(p.pid)]
    for phase in range(2):
        for b in range(4):
            churn_batch(wdir, f"h{phase}-{b}-", 50, bins, clients=20)
        time.sleep(1.6)
        rss.append(rss_kib(p.pid))
    p.send_signal(signal.SIGINT)
    finish(p, timeout=60)
    ev = jsonl(jl)
    stats = [e for e in ev if e["event"] == "stats"]
    assert stats
    for e in stats:
        assert e["listeners_retired"] <= RETIRED_MAX, e
        live = e["listeners"] - e["listeners_retired"]
        assert e["clients_kept"] <= RETIRED_MAX * KEPT_PER_RETIRED + 256 * live, e
    assert stats[-1]["listeners_retired"] == RETIRED_MAX    # full: churn went through it
    assert stats[-1]["clients_folded"] > 0                  # heavy listeners were compacted
    run = [e for e in ev if e["event"] == "run"][0]
    assert run["listeners_folded"] >= 1100 + 400 - RETIRED_MAX
    bound = (RETIRED_MAX * KEPT_PER_RETIRED * CLIENT_BYTES) // 1024 + 2048
    assert rss[-1] - rss[0] <= bound, f"RSS KiB after each third: {rss}, bound +{bound}"


# ---- item 8: addrlen --------------------------------------------------------------------

def test_bytes_after_addrlen_are_not_the_path(udsprobe, procs, bins, wdir):
    path = str(wdir / "a.sock")
    listen_ready(procs, [bins["listen_noaccept"], "unix", path, "0"])
    keep = socket.socket(socket.AF_UNIX)
    keep.connect(path)
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "1", "--interval", "0.5",
                                         "--json", wdir / "o.jsonl"])
    junk = (path + "JUNK").encode().hex()
    res = subprocess.run([bins["raw_connect"], junk, str(2 + len(path)), "7"],
                         capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "eagain=7 other=0"
    finish(p)
    keep.close()
    rows = summaries(jsonl(wdir / "o.jsonl"))
    assert [e["overflows"] for e in rows if e["address"] == path] == [7]
    assert not [e for e in rows if "JUNK" in e["address"]]


# ---- item 9: one lossless escaping, valid JSON and Prometheus ----------------------------

def test_names_escaped_losslessly_json_and_promtool(udsprobe, procs, wdir):
    tag = b"udsprobe-rel-%d" % os.getpid()
    names = [b"\0" + tag + b"\0b", b"\0" + tag + b"@b", str(wdir).encode() + b"/\xff\xfe.sock",
             b"\0" + tag + b"\\x41"]
    for n in names:
        overflow_listener(procs, n, 0, 3)      # 1 queued, 2 EAGAIN each
    prom = wdir / "o.prom"
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--duration", "0.6", "--interval", "0.3",
                                         "--json", wdir / "o.jsonl", "--prom", prom])
    finish(p)
    raw = (wdir / "o.jsonl").read_bytes()
    raw.decode("utf-8")                      # strict: valid UTF-8
    rows = summaries([json.loads(l) for l in raw.splitlines()])
    t = tag.decode()
    want = {f"@{t}\\0b", f"@{t}@b", f"{wdir}/\\xff\\xfe.sock", f"@{t}\\\\x41"}
    got = {e["address"] for e in rows if t in e["address"] or "\\xff" in e["address"]}
    assert got == want
    res = subprocess.run(["promtool", "check", "metrics"], input=prom.read_bytes(),
                         capture_output=True)
    assert res.returncode == 0, res.stdout + res.stderr
    # the escaped form selects exactly that listener
    res = subprocess.run([udsprobe, "--backlog", "--quiet", "--duration", "0.3", "--json", "-",
                          "--unix", f"@{t}\\0b"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    sel = summaries([json.loads(l) for l in res.stdout.splitlines()])
    assert [e["address"] for e in sel] == [f"@{t}\\0b"]


# ---- issue 15: instances side by side -------------------------------------------------

def test_two_backlogs_count_the_same_storm_exactly(udsprobe, procs, bins, wdir):
    """Two --backlog at once watch one full listener: each counts every EAGAIN of a storm,
    neither steals or doubles the other's events."""
    path = str(wdir / "two.sock")
    listen_ready(procs, [bins["listen_noaccept"], "unix", path, "0"])
    keep = socket.socket(socket.AF_UNIX)
    keep.connect(path)                      # the one slot: every connect below fails
    watches = []
    for i in range(2):
        p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.2", "--unix", path,
                                             "--json", wdir / f"w{i}.jsonl"])
        watches.append(p)
    res = subprocess.run([bins["fork_clients"], path, "500", "3"], capture_output=True,
                         text=True, timeout=120)
    assert res.stdout.strip() == "clients=500 eagain=1500 other=0", res
    time.sleep(0.5)
    for p in watches:
        p.send_signal(signal.SIGINT)
    for p in watches:
        finish(p)
    keep.close()
    for i in range(2):
        s = [e for e in summaries(jsonl(wdir / f"w{i}.jsonl")) if e["address"] == path]
        assert len(s) == 1 and s[0]["overflows"] == 1500, (i, s)


def test_compare_during_backlog(udsprobe, procs, bins, wdir):
    """A traced --compare while --backlog watches a storm: the compare traces only its own
    two tasks (every message attributed, nothing out of order), the backlog counts exactly."""
    path = str(wdir / "cmp.sock")
    listen_ready(procs, [bins["listen_noaccept"], "unix", path, "0"])
    keep = socket.socket(socket.AF_UNIX)
    keep.connect(path)
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.2", "--unix", path,
                                         "--json", wdir / "b.jsonl"])
    storm = procs([bins["fork_clients"], path, "400", "5"], stdout=subprocess.PIPE, text=True)
    cmp = subprocess.run([udsprobe, "--compare", "--mode", "pingpong", "--count", "3000",
                          "--json", wdir / "c.json"], capture_output=True, text=True, timeout=300)
    assert cmp.returncode == 0, cmp.stderr
    out, _ = storm.communicate(timeout=120)
    assert out.strip() == "clients=400 eagain=2000 other=0", out
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    finish(p)
    keep.close()
    s = [e for e in summaries(jsonl(wdir / "b.jsonl")) if e["address"] == path]
    assert len(s) == 1 and s[0]["overflows"] == 2000, s
    for r in json.loads((wdir / "c.json").read_text())["results"]:
        assert r["messages"] == 6000 and r["misses"] == 0 and r["out_of_order"] == 0, r
        assert 0.95 <= r["coverage"] <= 1.05, r
