"""--think DUR (issue 12 item 4): the pingpong client works DUR on the CPU after each reply,
inside the round trip it measures; the explanation says how much of a round trip UDS saves with
that work and without it. Untraced runs (no root needed for the workload itself)."""
import json
import re
import subprocess


def test_think_is_in_every_round_trip_and_explained(udsprobe, tmp_path):
    out = tmp_path / "r.json"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count", "2000",
                          "--think", "200us", "--json", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    for r in doc["results"]:
        assert r["think_ns"] == 200000
        # one-way = round trip / 2, and every round trip holds 200 us of work
        assert r["latency_ns"]["p50"] >= 100000, r["latency_ns"]
        assert r["elapsed_ns"] >= 2000 * 200000
    m = re.search(r"With 200(?:\.0)? us of application work per round trip \(--think\), a round trip takes "
                  r"UDS (\S+ \S+) and TCP (\S+ \S+) \(medians\): UDS saves (-?\d+)% of it, against "
                  r"(-?\d+)% of the transport's part alone", res.stdout)
    assert m, res.stdout


def test_without_think_no_field_and_no_line(udsprobe, tmp_path):
    out = tmp_path / "r.json"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count", "500",
                          "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert all("think_ns" not in r for r in json.loads(out.read_text())["results"])
    assert "--think" not in res.stdout


def test_think_usage(udsprobe):
    for arg in ["50", "0us", "1s", "-5us", "5 us", "us"]:
        res = subprocess.run([udsprobe, "--compare", "--no-trace", "--think", arg],
                             capture_output=True, text=True, timeout=10)
        assert res.returncode == 2, arg
        assert f"--think: '{arg}' is not a duration with a unit" in res.stderr, res.stderr
    res = subprocess.run([udsprobe, "--backlog", "--think", "5us"], capture_output=True, text=True,
                         timeout=10)
    assert res.returncode == 2 and "does not take --think" in res.stderr
