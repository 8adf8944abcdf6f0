"""--compare --no-trace: JSON schema and sanity of the numbers, text report, placement, duration."""
import json
import os
import time

import pytest

MODES = ("pingpong", "stream", "connect")
COUNT = 300


@pytest.fixture(scope="module")
def all_modes(udsprobe, tmp_path_factory):
    """One untraced run of every mode at two sizes, shared by the schema tests."""
    import subprocess

    out = tmp_path_factory.mktemp("compare") / "all.json"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", ",".join(MODES),
                          "--size", "64,4K", "--count", str(COUNT), "--json", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text()), res


def test_json_top_level(all_modes):
    doc, _ = all_modes
    assert doc["tool"] == "udsprobe"
    assert isinstance(doc["version"], str) and doc["version"]
    assert doc["kernel"] == os.uname().release
    assert doc["attach_mode"] is None  # untraced
    assert doc["tcp_nodelay"] is True
    cp = doc["cpu_placement"]
    assert isinstance(cp["cpus"], int) and cp["cpus"] >= 1
    assert isinstance(cp["cpu_model"], str)
    assert cp["placements"] == ["same"]  # the default
    assert isinstance(doc["results"], list)


def test_json_both_transports_per_mode_and_size(all_modes):
    doc, _ = all_modes
    seen = {(r["mode"], r["msg_size"], r["transport"]) for r in doc["results"]}
    want = {(m, s, t) for m in MODES for s in (64, 4096) for t in ("unix", "tcp")}
    assert seen == want
    assert len(doc["results"]) == len(want)


def check_result(r, count=COUNT):
    assert r["transport"] in ("unix", "tcp")
    assert r["mode"] in MODES
    assert r["cpu"] in ("same", "split", "none")
    for k in ("msg_size", "count", "elapsed_ns", "client_cpu", "server_cpu"):
        assert isinstance(r[k], int), k
    if count is not None:
        assert r["count"] == count
    assert r["count"] > 0
    assert r["elapsed_ns"] > 0
    if r["cpu"] != "none":
        assert r["client_cpu"] >= 0 and r["server_cpu"] >= 0
    if r["mode"] in ("pingpong", "connect"):
        lat = r["latency_ns"]
        assert set(lat) >= {"p50", "p90", "p99", "mean"}
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]
        assert lat["mean"] > 0
        # a mean above the p99 would need a huge outlier tail; below p50/10 is impossible
        assert lat["mean"] >= lat["p50"] / 10
    else:
        assert "latency_ns" not in r
    if r["mode"] == "connect":
        assert r["conns_per_sec"] > 0
        # conns/s is the inverse of the mean connection time
        assert r["conns_per_sec"] == pytest.approx(1e9 / (r["elapsed_ns"] / r["count"]), rel=0.01)
        assert "msgs_per_sec" not in r
    else:
        assert r["msgs_per_sec"] > 0
        assert r["bytes_per_sec"] > 0
        assert r["bytes_per_sec"] == pytest.approx(r["msgs_per_sec"] * r["msg_size"], rel=1e-3)
        assert "conns_per_sec" not in r
    if r["mode"] == "pingpong":
        # one-way mean is RTT/2: elapsed covers count round trips of two messages each
        assert r["latency_ns"]["mean"] == pytest.approx(r["elapsed_ns"] / r["count"] / 2,
                                                        rel=0.01, abs=2)


def test_json_results_sane(all_modes):
    doc, _ = all_modes
    for r in doc["results"]:
        check_result(r)
        assert r["cpu"] == "same"
        assert r["client_cpu"] == r["server_cpu"]


def test_progress_on_stderr_text_on_stdout(all_modes):
    _, res = all_modes
    assert "pingpong" in res.stderr
    # --json PATH (a file) still prints the human report
    assert "one-way p50" in res.stdout


def test_json_stdout_is_pure_json(run):
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--count", "100", "--json", "-")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["results"]) == 2
    for r in doc["results"]:
        check_result(r, count=100)


def test_text_report(run):
    res = run("--compare", "--no-trace", "--count", "200", "--size", "64")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "AF_UNIX stream vs TCP 127.0.0.1 (TCP_NODELAY on)" in out
    assert "kernel " + os.uname().release in out
    assert "attach mode: none (untraced)" in out
    assert "ratio = unix/tcp" in out
    for label in ("one-way p50", "one-way p90", "one-way p99", "one-way mean",
                  "msgs/s", "bytes/s", "conns/s", "connection p50"):
        assert label in out, label
    header = [line.split() for line in out.splitlines() if line.split()[:3] == ["unix", "tcp", "ratio"]]
    assert len(header) == 3, out  # one table per mode
    assert "pingpong 64 B, 200/200 round trips, cpu=same" in out
    assert "stream 64 B, 200/200 messages" in out
    assert "connect 64 B, 200/200 connections" in out
    # every metric row ends in a positive ratio
    for line in out.splitlines():
        if line.startswith("  one-way") or line.strip().startswith(("msgs/s", "conns/s")):
            assert float(line.split()[-1]) > 0, line


def test_cpu_split_uses_two_cpus(run_json, ncpus):
    if ncpus < 2:
        pytest.skip("needs 2 CPUs")
    doc, _ = run_json("--compare", "--no-trace", "--mode", "pingpong,connect", "--count", "200",
                      "--cpu", "same,split")
    assert doc["cpu_placement"]["placements"] == ["same", "split"]
    places = {r["cpu"] for r in doc["results"]}
    assert places == {"same", "split"}
    for r in doc["results"]:
        check_result(r, count=200)
        if r["cpu"] == "split":
            assert r["client_cpu"] != r["server_cpu"], r
        else:
            assert r["client_cpu"] == r["server_cpu"], r


def test_cpu_none(run_json):
    doc, _ = run_json("--compare", "--no-trace", "--mode", "pingpong", "--count", "100",
                      "--cpu", "none")
    for r in doc["results"]:
        check_result(r, count=100)
        assert r["cpu"] == "none"


def test_duration(run_json):
    t0 = time.monotonic()
    doc, _ = run_json("--compare", "--no-trace", "--mode", "pingpong,stream", "--duration", "0.3")
    wall = time.monotonic() - t0
    assert len(doc["results"]) == 4
    for r in doc["results"]:
        check_result(r, count=None)
        # each run measures about 0.3 s, warm-up excluded
        assert 0.25e9 <= r["elapsed_ns"] <= 1.5e9, r
        assert r["count"] > 100
    assert wall < 10


def test_sizes_bounds(run_json):
    doc, _ = run_json("--compare", "--no-trace", "--mode", "pingpong,stream", "--size", "1,1M",
                      "--count", "20")
    assert {r["msg_size"] for r in doc["results"]} == {1, 1 << 20}
    for r in doc["results"]:
        check_result(r, count=20)


def test_json_unwritable_path_exits_1(run):
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--count", "10",
              "--json", "/nonexistent-dir/x.json")
    assert res.returncode == 1
    assert "/nonexistent-dir/x.json" in res.stderr
