"""udsprobe --compare of real programs (--server, --client-unix, --client-tcp; host, tracepoint
mode): redis-server driven by redis-benchmark over both transports, message counts checked
against redis' own INFO commandstats; a server that never becomes ready or exits early; a
failing client; Ctrl-C in the middle; placeholders; the private directory removed. Each test
starts its own programs (udsprobe starts the server on a private socket and a free port)."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from explain_checker import check_programs
from svgcheck import assert_picture

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--compare of programs traces: needs root")

REDIS_SERVER = 'redis-server --port {port} --unixsocket {unix} --save "" --appendonly no'


def redis_client(where, n, conns=1):
    """Reset redis' counters, run INCR n times, print INFO commandstats after."""
    return (f"redis-cli {where} config resetstat >/dev/null && "
            f"redis-benchmark {where} -t incr -n {n} -c {conns} -q && "
            f"redis-cli {where} info commandstats")


def compare(udsprobe, tmp_path, *args, timeout=120):
    out = tmp_path / "cmp.json"
    res = subprocess.run([udsprobe, "--compare", *args, "--json", str(out)],
                         capture_output=True, text=True, timeout=timeout)
    doc = json.loads(out.read_text()) if out.exists() else None
    return res, doc


def procs_with(text):
    """pids whose command line contains text (not zombies)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmd and state != "Z":
            found.append(int(d))
    return found


def calls(output, command):
    m = re.search(rf"^cmdstat_{command}:calls=(\d+)", output, re.M)
    assert m, f"no cmdstat_{command} in the client's output:\n{output}"
    return int(m.group(1))


def test_redis_both_transports_match_commandstats(udsprobe, tmp_path):
    n = 20000
    res, doc = compare(udsprobe, tmp_path, "--server", REDIS_SERVER,
                       "--client-unix", redis_client("-s {unix}", n),
                       "--client-tcp", redis_client("-p {port}", n),
                       "--out", str(tmp_path / "report"))
    assert res.returncode == 0, res.stderr
    assert doc["action"] == "compare-programs" and doc["attach_mode"] == "tracepoint"
    by = {r["transport"]: r for r in doc["results"]}
    assert set(by) == {"unix", "tcp"}
    for t, r in by.items():
        assert r["exit_status"] == 0 and r["ran"]
        assert "requests per second" in r["output"]
        incr = calls(r["output"], "incr")
        assert incr == n
        flows = {(f["sender"]["comm"], f["receiver"]["comm"]): f for f in r["flows"]}
        req = flows[("redis-benchmark", "redis-server")]
        rep = flows[("redis-server", "redis-benchmark")]
        # redis-benchmark's own CONFIG GETs are requests too: within 2 % of the INCR calls
        for f in (req, rep):
            assert abs(f["messages"] - incr) <= 0.02 * incr, (t, f["messages"], incr)
            assert f["transport"] == t and f["endpoint"] == r["endpoint"]
            assert [s["name"] for s in f["stages"]][0] == "send;call"
            assert f["latency_ns"]["p50"] > 0
        assert r["wall_ns"] > 0 and r["messages"] >= req["messages"] + rep["messages"]
    assert by["tcp"]["endpoint"].startswith("127.0.0.1:")
    assert doc["tcp_over_unix_wall"] == pytest.approx(by["tcp"]["wall_ns"] / by["unix"]["wall_ns"],
                                                  rel=1e-4)
    # the text report: both columns, the explanation, the clients' last lines
    assert re.search(r"redis-benchmark -> redis-server\n  messages +\d+ +\d+", res.stdout)
    assert "What this means:" in res.stdout and "requests per second" in res.stdout
    # the explanation's claims, each printed and each what the numbers give (explain_checker.py)
    errs = check_programs(doc, res.stdout)
    assert not errs, "\n".join(errs)
    # CPU per message: both sides' client and server accounted, the claim made and printed
    for r in doc["results"]:
        assert r["cpu_ns"]["client_user"] + r["cpu_ns"]["client_system"] > 0, r["cpu_ns"]
    assert any(c["kind"] == "cpu" for c in doc["explanation"])
    assert "client system CPU/msg" in res.stdout and "server system CPU/msg" in res.stdout
    # kernel stages (--compare of programs runs --detail full): under each stage in the text,
    # TCP's network path only on TCP; the busiest pair drawn for both runs on one scale
    assert re.search(r"\n {8}rx_softirq;ip_tcp_in +- +\d", res.stdout), res.stdout
    assert re.search(r"\n {8}recv;copy +\d+\S* \S+ +\d", res.stdout), res.stdout
    assert any(c["kind"] == "tcp_only" for c in doc["explanation"]), doc["explanation"]
    rep = tmp_path / "report"
    widths = set()
    for t in ("unix", "tcp"):
        svg = (rep / f"flow-{t}.svg").read_text()
        widths.add(re.search(r"the full width is ([^<]+)<", svg).group(1))
        assert ("rx_softirq;ip_tcp_in:" in svg) == (t == "tcp")
        assert "recv;copy:" in svg or "sched;wait_cpu:" in svg
        assert_picture(rep / f"flow-{t}.svg", tmp_path)
        frames = [l.rsplit(" ", 1)[0] for l in (rep / f"flow-{t}.folded").read_text().splitlines()]
        assert ("send;dev_xmit" in frames) == (t == "tcp") and "send;call" not in frames
    assert len(widths) == 1, widths
    md = (rep / "report.md").read_text()
    assert "![unix](flow-unix.svg)" in md and "![tcp](flow-tcp.svg)" in md
    # the private directory and its socket are gone, and so is the server
    sock = by["unix"]["endpoint"]
    assert re.match(r"^/tmp/udsprobe-compare\.[A-Za-z0-9]{6}/server\.sock$", sock)
    assert not os.path.exists(os.path.dirname(sock))
    assert not procs_with(sock)


def test_placeholders_and_out_dir(udsprobe, tmp_path):
    echo = "echo unix={unix} port={port} port2={port2} dir={dir} keep={other}"
    out = tmp_path / "report"
    res, doc = compare(udsprobe, tmp_path, "--client-unix", echo, "--client-tcp", echo,
                       "--out", str(out))
    assert res.returncode == 0, res.stderr
    r = doc["results"][0]
    m = re.search(r"unix=(\S+) port=(\d+) port2=(\d+) dir=(\S+) keep=\{other\}", r["output"])
    assert m, r["output"]
    unix, port, port2, d = m.groups()
    assert unix == d + "/server.sock" == r["endpoint"]
    assert port != port2 and doc["results"][1]["endpoint"] == f"127.0.0.1:{port}"
    assert "{" not in r["command"].replace("{other}", "")
    assert not os.path.exists(d)
    assert sorted(p.name for p in out.iterdir()) == [
        ".udsprobe-manifest", "client-tcp.out", "client-unix.out", "report.json", "report.md"]
    assert (out / "client-unix.out").read_text() == r["output"]
    assert "No message on" in res.stdout  # echo sends nothing on either endpoint


def test_output_with_nul_bytes_kept_whole(udsprobe, tmp_path):
    """A client's output may hold NUL bytes (binary replies): what follows them is kept in the
    JSON, the --out file and the text report, and a failure message shows the end."""
    out = tmp_path / "report"
    client = r"printf 'head\000middle\000\ntail-marker\n'"
    res, doc = compare(udsprobe, tmp_path, "--client-unix", client, "--client-tcp",
                       client + "; exit 5", "--out", str(out))
    assert res.returncode == 1, res.stderr
    assert "tail-marker" in res.stderr     # the failing client's end, in its failure message
    u, t = doc["results"]
    assert u["output"] == "head\ufffdmiddle\ufffd\ntail-marker\n", u["output"]
    assert (out / "client-unix.out").read_bytes() == b"head\0middle\0\ntail-marker\n"
    assert "tail-marker" in res.stdout and "head\\0middle\\0" in res.stdout, res.stdout


def test_programs_wait_for_another_compare(udsprobe, tmp_path):
    """Your programs' compare takes the one-at-a-time lock as the built-in one does."""
    first = subprocess.Popen([udsprobe, "--compare", "--no-trace", "--mode", "pingpong",
                              "--count", "600000"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        while not any("pingpong unix" in l for l in seen):     # it holds the lock now
            seen.append(first.stderr.readline())
            assert seen[-1], seen
        res, doc = compare(udsprobe, tmp_path, "--client-unix", "true", "--client-tcp", "true")
        waited = first.poll() is not None
    finally:
        first.kill()
        first.wait()
    assert res.returncode == 0, res.stderr
    assert f"waiting for another udsprobe --compare (pid {first.pid})" in res.stderr, res.stderr
    assert waited      # it ran only once the first had ended


def test_out_reused_holds_only_this_run(udsprobe, tmp_path):
    """--out of a built-in --compare, then of programs, in one directory: the second run
    replaces exactly the first one's files (the manifest), no flame graph of the first stays."""
    out = tmp_path / "report"
    res = subprocess.run([udsprobe, "--compare", "--mode", "pingpong", "--count", "200",
                          "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert list(out.glob("flame-*.svg")) and list(out.glob("*.folded"))
    (out / "mine.txt").write_text("the user's own file")
    res, _ = compare(udsprobe, tmp_path, "--client-unix", "echo u", "--client-tcp", "echo t",
                     "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".udsprobe-manifest", "client-tcp.out", "client-unix.out", "mine.txt", "report.json",
        "report.md"]
    assert (out / "client-unix.out").read_text() == "u\n"


def test_server_never_ready(udsprobe, tmp_path):
    t0 = time.monotonic()
    res, doc = compare(udsprobe, tmp_path, "--server", "echo warming up on {unix} {port}; exec sleep 37.25",
                       "--ready-timeout", "1",
                       "--client-unix", "true", "--client-tcp", "true")
    assert res.returncode == 1 and doc is None
    assert time.monotonic() - t0 < 20
    assert re.search(r"udsprobe: --server 'echo warming up on \S+ \d+; exec sleep 37.25' did not accept "
                     r"connections on \S+/server.sock and 127.0.0.1:\d+ within 1 s "
                     r"\(--ready-timeout\)", res.stderr), res.stderr
    assert "warming up" in res.stderr
    assert not procs_with("sleep 37.25")


def test_server_exits_early(udsprobe, tmp_path):
    res, _ = compare(udsprobe, tmp_path, "--server", "echo no config {port} >&2; exit 3",
                     "--client-unix", "true", "--client-tcp", "true")
    assert res.returncode == 1
    assert re.search(r"--server 'echo no config \d+ >&2; exit 3' exited with status 3 before it "
                     r"accepted connections on 127.0.0.1:\d+\.", res.stderr), res.stderr
    assert re.search(r"no config \d+", res.stderr)


def test_client_fails(udsprobe, tmp_path):
    res, doc = compare(udsprobe, tmp_path, "--server", REDIS_SERVER,
                       "--client-unix", "echo cannot reach {unix}; exit 7",
                       "--client-tcp", "true")
    assert res.returncode == 1
    assert re.search(r"udsprobe: --client-unix 'echo cannot reach \S+; exit 7' failed with exit "
                     r"status 7; it printed", res.stderr), res.stderr
    assert "cannot reach" in res.stderr
    # the report of what ran says it too
    assert doc["results"][0]["exit_status"] == 7 and not doc["results"][1]["ran"]
    assert not procs_with("server.sock")


def test_ctrl_c_stops_everything(udsprobe, tmp_path):
    out = tmp_path / "cmp.json"
    p = subprocess.Popen([udsprobe, "--compare", "--server", REDIS_SERVER,
                          "--client-unix", "redis-benchmark -s {unix} -t incr -n 100000000 -q",
                          "--client-tcp", "true", "--json", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not procs_with("redis-benchmark -s /tmp/udsprobe-compare.") and time.time() < deadline:
            time.sleep(0.1)
        assert procs_with("redis-benchmark -s /tmp/udsprobe-compare."), "the client never started"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1, stderr
    assert "interrupted" in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] and not doc["results"][1]["ran"]
    assert not procs_with("/tmp/udsprobe-compare.")
    assert not os.path.exists(os.path.dirname(doc["results"][0]["endpoint"]))


def test_second_signal_leaves_no_private_dir(udsprobe, tmp_path):
    """A second Ctrl-C ends udsprobe at once, without its clean-up: the server and client die
    with it (PR_SET_PDEATHSIG), and its private directory, with the socket and the programs'
    output in it, goes too (a janitor process that is not udsprobe's child, so the sweep of
    leftover children does not kill it)."""
    p = subprocess.Popen([udsprobe, "--compare", "--server", REDIS_SERVER,
                          "--client-unix", "redis-benchmark -s {unix} -t incr -n 100000000 -q",
                          "--client-tcp", "true", "--json", str(tmp_path / "cmp.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not procs_with("redis-benchmark -s /tmp/udsprobe-compare.") and time.time() < deadline:
            time.sleep(0.1)
        pids = procs_with("redis-benchmark -s /tmp/udsprobe-compare.")
        assert pids, "the client never started"
        cmd = Path(f"/proc/{pids[0]}/cmdline").read_bytes().decode(errors="replace")
        private = re.search(r"(/tmp/udsprobe-compare\.[A-Za-z0-9]{6})/", cmd).group(1)
        assert os.path.isdir(private)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        time.sleep(0.005)       # two at once would merge into one pending signal
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGINT      # died of the second signal: no clean-up ran
    deadline = time.time() + 10
    while (os.path.exists(private) or procs_with(private)) and time.time() < deadline:
        time.sleep(0.1)
    assert not procs_with(private)
    assert not os.path.exists(private), os.listdir(private)


@pytest.mark.parametrize("args,msg", [
    (["--client-unix", "true", "--client-tcp", "true"], "need --compare"),
    (["--compare", "--client-unix", "true"], "--compare of programs needs --client-tcp, and "
                                             "--client-unix to measure the switch"),
    (["--compare", "--if-unix", "off", "--client-tcp", "true"],
     "with --client-tcp alone predicts the unix side, which --if-unix off"),
    (["--compare", "--server", "nc -lU {unix}", "--client-tcp", "true"],
     "with --client-tcp alone, --server must listen on {port}"),
    (["--compare", "--mode", "pingpong", "--client-unix", "true", "--client-tcp", "true"],
     "--mode is an option of the built-in workload"),
    (["--compare", "--client-unix", "true", "--client-tcp", "true", "--ready-timeout", "0"],
     "--ready-timeout: '0' is not a number of seconds"),
    (["--compare", "--server", "sleep 9", "--client-unix", "true", "--client-tcp", "true"],
     "--server names neither {unix} nor {port}"),
])
def test_usage_errors(udsprobe, args, msg):
    res = subprocess.run([udsprobe, *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 2 and msg in res.stderr, res.stderr
