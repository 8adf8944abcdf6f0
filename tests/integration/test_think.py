"""--think LIST (issue 12 item 4): the pingpong client works DUR on the CPU after each reply,
inside the round trip it measures; the explanation says how much of a round trip UDS saves with
that work and without it. With several values, --out draws think.svg (round trip of both
transports and their ratio against the think time) and report.md says, from the numbers, how
the advantage changed. Untraced runs need no root; the traced one checks the per-run files."""
import json
import math
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from svgcheck import SVG_NS, assert_picture

THINKS = [0, 20000, 200000]
# the sentence across think times (explain.c's explain_think_curve)
CURVE = re.compile(r"Across think times \(pingpong, 64 B, cpu=same; round-trip medians\): "
                   r"with no application work, UDS's round trip is (\d+)% (shorter|longer) than "
                   r"TCP's \((\S+ \S+) vs (\S+ \S+)\); with 200(?:\.0)? (?:us|\u00b5s) of "
                   r"application work per round trip, it is (\d+)% (shorter|longer) "
                   r"\((\S+ \S+) vs (\S+ \S+)\)\. (The advantage shrinks|Here the advantage did "
                   r"not shrink)")


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


def test_think_bounds_the_default_count(udsprobe, tmp_path):
    # no --count: at most 2 s of think time per run (20 ms: 100 round trips, not 200000)
    out = tmp_path / "r.json"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong",
                          "--think", "20ms", "--json", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for r in json.loads(out.read_text())["results"]:
        assert r["count"] == 100, r
        assert r["elapsed_ns"] >= 100 * 20000000


def test_without_think_no_field_and_no_line(udsprobe, tmp_path):
    out = tmp_path / "r.json"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count", "500",
                          "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert all("think_ns" not in r for r in json.loads(out.read_text())["results"])
    assert "--think" not in res.stdout


def test_think_usage(udsprobe):
    for arg in ["50", "0us", "1s", "-5us", "5 us", "us", "0,1s"]:
        res = subprocess.run([udsprobe, "--compare", "--no-trace", "--think", arg],
                             capture_output=True, text=True, timeout=10)
        assert res.returncode == 2, arg
        bad = arg.split(",")[-1]
        assert f"--think: '{bad}' is not 0 or a duration with a unit" in res.stderr, res.stderr
    for arg, msg in [("10us,0,10us", "--think: '10us' is given twice"),
                     (",".join(f"{i + 1}us" for i in range(9)), "--think takes 1 to 8 durations"),
                     (",", "--think: ',' has an empty item (a comma too many)")]:
        res = subprocess.run([udsprobe, "--compare", "--no-trace", "--think", arg],
                             capture_output=True, text=True, timeout=10)
        assert res.returncode == 2 and msg in res.stderr, (arg, res.stderr)
    res = subprocess.run([udsprobe, "--backlog", "--think", "5us"], capture_output=True, text=True,
                         timeout=10)
    assert res.returncode == 2 and "does not take --think" in res.stderr


def lround(v):
    """C's lround: halves away from zero (Python's round() rounds them to even)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


@pytest.fixture(scope="module")
def think_run(udsprobe, tmp_path_factory, is_root):
    """--think 0,20us,200us --out: traced when root (flame/diff files per think time)."""
    d = tmp_path_factory.mktemp("think") / "out"
    res = subprocess.run([udsprobe, "--compare", "--mode", "pingpong", "--count", "400",
                          *([] if is_root else ["--no-trace"]), "--think", "0,20us,200us",
                          "--out", str(d)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return d, json.loads((d / "report.json").read_text()), res


def round_trips(doc):
    """{think_ns: {"unix": round trip, "tcp": round trip}} from the JSON: p50 one-way x 2."""
    out = {}
    for r in doc["results"]:
        out.setdefault(r["think_ns"], {})[r["transport"]] = 2 * r["latency_ns"]["p50"]
    return out


def test_think_list_runs_each_value_and_json_says_which(think_run):
    _, doc, _ = think_run
    assert [r["think_ns"] for r in doc["results"]] == [t for t in THINKS for _ in (0, 1)]
    for r in doc["results"]:
        assert r["count"] == 400
        assert 2 * r["latency_ns"]["p50"] >= r["think_ns"]  # the work is inside the round trip


def test_think_chart_points_are_the_json_results(think_run, tmp_path):
    d, doc, _ = think_run
    rt = round_trips(doc)
    root = ET.parse(d / "think.svg").getroot()
    dots = list(root.iter(SVG_NS + "circle"))
    assert len(dots) == 3 * len(THINKS)  # UDS, TCP and their ratio at each think time
    seen = set()
    for c in dots:
        title = c.find(SVG_NS + "title").text
        think, v = int(c.get("data-x")), float(c.get("data-v"))
        work = "no work" if think == 0 else None
        if "UDS/TCP" in title:
            kind, want = "ratio", rt[think]["unix"] / rt[think]["tcp"]
            assert f"UDS/TCP = {want:.2f}" in title, title
        else:
            kind = title.split(",")[0]
            want = rt[think]["unix" if kind == "UDS" else "tcp"]
            assert ": round trip " in title, title
        if work:
            assert work in title, title
        assert v == pytest.approx(want, rel=1e-5), (title, v, want)
        seen.add((kind, think))
    assert seen == {(k, t) for k in ("UDS", "TCP", "ratio") for t in THINKS}
    # log x with 0 apart at the left: the points of a series go left to right by think time
    xs = {think: float(c.get("cx")) for c in dots if c.find(SVG_NS + "title").text.startswith("UDS,")
          for think in [int(c.get("data-x"))]}
    assert xs[0] < xs[20000] < xs[200000]
    assert_picture(d / "think.svg", tmp_path, width=1600, height=850)


def test_think_sentence_follows_the_numbers(think_run):
    d, doc, res = think_run
    rt = round_trips(doc)
    md = (d / "report.md").read_text()
    assert "## Across think times" in md and "](think.svg)" in md
    for text in (md, res.stdout):
        m = CURVE.search(text)
        assert m, text
        first = lround(100 * (1 - rt[0]["unix"] / rt[0]["tcp"]))
        last = lround(100 * (1 - rt[200000]["unix"] / rt[200000]["tcp"]))
        assert int(m.group(1)) == abs(first) and (m.group(2) == "shorter") == (first >= 0)
        assert int(m.group(5)) == abs(last) and (m.group(6) == "shorter") == (last >= 0)
        assert (m.group(9) == "The advantage shrinks") == (last < first), m.group(0)


def test_think_runs_get_their_own_files(think_run, is_root):
    d, _, _ = think_run
    names = {p.name for p in d.iterdir()}
    assert {"think.svg", "report.md", "report.json"} <= names
    if is_root:  # traced: one flame and diff per think time
        for tag in ("pingpong-64B-same", "pingpong-64B-same-think20us", "pingpong-64B-same-think200us"):
            assert {f"flame-{tag}.svg", f"diff-{tag}.svg"} <= names, names
    assert "think.svg" in (d / ".udsprobe-manifest").read_text()


def test_one_think_value_draws_no_chart(udsprobe, tmp_path):
    out = tmp_path / "one"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count", "300",
                          "--think", "0", "--out", str(out)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert not (out / "think.svg").exists()
    assert "think.svg" not in (out / "report.md").read_text()
    assert [r["think_ns"] for r in json.loads((out / "report.json").read_text())["results"]] == [0, 0]
