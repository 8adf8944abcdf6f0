"""--folded, --svg, --out and the terminal bars, on real traced runs (root, real BPF)."""
import json
import os
import pty
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from svgcheck import assert_picture, png_size

COUNT = 2000
# frame(;frame)* <integer>: no whitespace in frames, no empty frames, integer weights only
FOLDED_LINE = re.compile(r"^[^\s;]+(;[^\s;]+)* [0-9]+$")
SVG_NS = "{http://www.w3.org/2000/svg}"


def traced_args(attach_mode):
    return ["--attach", attach_mode] if attach_mode else []


def message_stages(result):
    """The stages of one JSON result that make up a message (per-connection ones excluded)."""
    return [s for s in result.get("stages", []) if not s.get("per_connection")]


def shown_sum(doc, result):
    """What the SVG and the bars draw for a transport: stage times with the probe cost
    removed when udsprobe calibrated one, as traced otherwise (folded is always as traced)."""
    key = "corrected_ns_per_msg" if doc.get("probe_cost_ns") else "ns_per_msg"
    return sum(max(s[key], 0) for s in message_stages(result))


def parse_folded(text):
    lines = text.splitlines()
    assert lines, "no folded lines"
    out = []
    for line in lines:
        assert FOLDED_LINE.match(line), f"not folded grammar: {line!r}"
        stack, weight = line.rsplit(" ", 1)
        out.append((stack.split(";"), int(weight)))
    return out


def svg_texts(path):
    """Every <text> and <title> string of an SVG (parsing it as XML on the way)."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG_NS + "svg"
    return [el.text or "" for el in root.iter() if el.tag in (SVG_NS + "text", SVG_NS + "title")]


@pytest.fixture(scope="module")
def one_pair(udsprobe, tmp_path_factory, is_root, attach_mode):
    """One traced pingpong run writing every output at once."""
    if not is_root:
        pytest.skip("traced runs need root")
    d = tmp_path_factory.mktemp("reports")
    res = subprocess.run([udsprobe, "--compare", "--mode", "pingpong", "--count", str(COUNT),
                          *traced_args(attach_mode),
                          "--json", d / "r.json", "--folded", d / "r.folded", "--svg", d / "r.svg",
                          "--out", d / "out"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads((d / "r.json").read_text())
    assert doc["attach_mode"], "traced run without an attach mode"
    return d, doc, res


@pytest.fixture(scope="module")
def two_pairs(udsprobe, tmp_path_factory, is_root, attach_mode):
    """Two traced pairs (pingpong and stream) into one --out directory."""
    if not is_root:
        pytest.skip("traced runs need root")
    d = tmp_path_factory.mktemp("reports2") / "out"
    res = subprocess.run([udsprobe, "--compare", "--mode", "pingpong,stream", "--count",
                          str(COUNT), *traced_args(attach_mode), "--out", d],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return d, json.loads((d / "report.json").read_text()), res


# ---- folded ----------------------------------------------------------------------------

def test_folded_grammar(one_pair):
    d, _, _ = one_pair
    for stack, weight in parse_folded((d / "r.folded").read_text()):
        assert stack[0] in ("unix", "tcp")  # a single run: no run frame
        assert len(stack) >= 2
        assert weight > 0


def test_folded_sums_match_json_stage_totals(one_pair):
    d, doc, _ = one_pair
    folded = parse_folded((d / "r.folded").read_text())
    for r in doc["results"]:
        stages = message_stages(r)
        assert stages, f"{r['transport']}: no stages in JSON"
        total = sum(s["ns_per_msg"] for s in stages)
        got = sum(w for stack, w in folded if stack[0] == r["transport"])
        # each line is its stage's ns/msg rounded: at most 0.5 off per stage
        assert abs(got - total) <= 0.5 * len(stages) + 1e-6, (r["transport"], got, total)
        for s in stages:
            w = [w for stack, w in folded if stack == [r["transport"], *s["name"].split(";")]]
            v = s["ns_per_msg"]
            if round(v) >= 1:
                # folded rounds the exact value, JSON's is within 0.5 of it
                assert len(w) == 1 and abs(w[0] - v) <= 1.0, (s, w)


def test_folded_to_stdout_is_only_folded(run, is_root, attach_mode):
    if not is_root:
        pytest.skip("traced runs need root")
    res = run("--compare", "--mode", "pingpong", "--count", 500, *traced_args(attach_mode),
              "--folded", "-", timeout=120)
    assert res.returncode == 0, res.stderr
    parse_folded(res.stdout)  # no text report mixed in


# ---- SVG -------------------------------------------------------------------------------

def test_svg_is_xml_and_names_every_stage(one_pair):
    d, doc, _ = one_pair
    texts = "\n".join(svg_texts(d / "r.svg"))
    for r in doc["results"]:
        for s in message_stages(r):
            assert s["name"] in texts, f"{r['transport']} stage {s['name']} not in the SVG"
    assert "UDS" in texts and "TCP" in texts
    assert "TCP \u2212 UDS" in texts  # the differential view


def test_svg_one_scale(one_pair):
    """Both transports' total bars use one px/ns scale: their widths are in the ratio of
    their stage sums."""
    d, doc, _ = one_pair
    root = ET.parse(d / "r.svg").getroot()
    totals = {}
    for g in root.iter(SVG_NS + "g"):
        if "r" in g.get("class", "").split():
            title = g.find(SVG_NS + "title").text
            totals[title.split(":")[0]] = float(g.get("data-w"))
    assert set(totals) == {"UDS", "TCP"}
    sums = {r["transport"]: shown_sum(doc, r) for r in doc["results"]}
    assert totals["TCP"] / totals["UDS"] == pytest.approx(sums["tcp"] / sums["unix"], rel=1e-3)


def test_every_svg_is_a_picture(one_pair, two_pairs, tmp_path):
    """--svg and every SVG of two --out directories (udsprobe.svg, flame-*, diff-*),
    rasterised: the size each declares, 1600 px wide, not blank."""
    d, _, _ = one_pair
    svgs = [d / "r.svg", *sorted((d / "out").glob("*.svg")), *sorted(two_pairs[0].glob("*.svg"))]
    names = {p.name for p in svgs}
    assert {"r.svg", "udsprobe.svg", "flame-pingpong-64B-same.svg", "diff-pingpong-64B-same.svg",
            "flame-stream-64B-same.svg", "diff-stream-64B-same.svg"} <= names, names
    for i, svg in enumerate(svgs):
        out = tmp_path / str(i)
        out.mkdir()
        assert_picture(svg, out, width=1600)


# ---- --out -----------------------------------------------------------------------------

OUT_FILES = ("report.md", "report.json", "stages.folded", "unix.folded", "tcp.folded",
             "udsprobe.svg", "flame-pingpong-64B-same.svg", "diff-pingpong-64B-same.svg")


def test_out_dir_has_every_file(one_pair):
    d, _, _ = one_pair
    for name in OUT_FILES:
        p = d / "out" / name
        assert p.is_file() and p.stat().st_size > 0, name
    for name in OUT_FILES:
        if name.endswith(".svg"):
            svg_texts(d / "out" / name)
        elif name.endswith(".folded"):
            parse_folded((d / "out" / name).read_text())
    json.loads((d / "out" / "report.json").read_text())


def test_out_per_transport_folded_has_no_transport_frame(one_pair):
    d, _, _ = one_pair
    whole = parse_folded((d / "out" / "stages.folded").read_text())
    for t in ("unix", "tcp"):
        one = parse_folded((d / "out" / f"{t}.folded").read_text())
        assert one == [(stack[1:], w) for stack, w in whole if stack[0] == t]


def test_report_md_holds_the_tables(one_pair):
    d, doc, _ = one_pair
    md = (d / "out" / "report.md").read_text()
    assert "| stage | what happens there | UDS | TCP | TCP \u2212 UDS |" in md
    assert "| measured without tracing | UDS | TCP | comparison |" in md
    assert "| **all stages** |" in md
    assert "## Environment" in md
    assert f"| kernel | Linux {os.uname().release} |" in md
    assert f"| attach mode | **{doc['attach_mode']}**" in md
    # "the probes cost X per message", or under noise "the probes' cost per message is ..."
    assert "coverage" in md and ("probes cost" in md or "probes' cost per message" in md)
    assert "### Why" in md
    assert "(flame-pingpong-64B-same.svg)" in md and "(diff-pingpong-64B-same.svg)" in md
    for r in doc["results"]:
        for s in message_stages(r):
            # every stage is in the table, alone or as a part of a joined row
            assert f"`{s['name']}`" in md or f"`{s['name'].split(';')[-1]}`" in md, s["name"]


def test_out_several_pairs_get_run_frames_and_files(two_pairs):
    d, doc, _ = two_pairs
    for tag in ("pingpong-64B-same", "stream-64B-same"):
        for kind in ("flame", "diff"):
            svg_texts(d / f"{kind}-{tag}.svg")
    folded = parse_folded((d / "stages.folded").read_text())
    runs = {stack[0] for stack, _ in folded}
    assert runs == {"pingpong_64B_cpu-same", "stream_64B_cpu-same"}
    for r in doc["results"]:
        run_frame = f"{r['mode']}_{r['msg_size']}B_cpu-{r['cpu']}"
        got = sum(w for stack, w in folded if stack[:2] == [run_frame, r["transport"]])
        stages = message_stages(r)
        assert abs(got - sum(s["ns_per_msg"] for s in stages)) <= 0.5 * len(stages) + 1e-6
    md = (d / "report.md").read_text()
    assert "## pingpong, 64-byte messages, cpu=same" in md
    assert "## stream, 64-byte messages, cpu=same" in md


def test_out_untraced_writes_report_without_pictures(run, tmp_path):
    d = tmp_path / "out"
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--count", 300, "--out", d)
    assert res.returncode == 0, res.stderr
    md = (d / "report.md").read_text()
    assert "No stage breakdown in this report" in md
    assert "| measured without tracing | UDS | TCP | comparison |" in md
    assert (d / "report.json").is_file()
    assert not list(d.glob("*.svg")) and not list(d.glob("*.folded"))


# ---- usage -----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--no-trace", "--folded", "x.folded"],
    ["--no-trace", "--svg", "x.svg"],
    ["--svg", "-"],
    ["--json", "-", "--folded", "-"],
    ["--json", "same", "--folded", "same"],
    ["--json", "same", "--svg", "same"],
    ["--folded", "same", "--svg", "same"],
    ["--out", ""],
])
def test_usage_errors_exit_2(run, tmp_path, args):
    res = run("--compare", "--mode", "pingpong", "--count", 100, *args, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("udsprobe: ")
    assert not list(tmp_path.iterdir())  # nothing written, nothing run


def test_out_not_a_directory_exits_1(run, tmp_path, is_root, attach_mode):
    f = tmp_path / "file"
    f.write_text("")
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--count", 100, "--out", f)
    assert res.returncode == 1
    assert "not a directory" in res.stderr


# ---- terminal bars ---------------------------------------------------------------------

def test_bars_plain_ascii_when_piped(one_pair):
    _, doc, res = one_pair
    assert "\033[" not in res.stdout
    unix = re.search(r"^  unix \[([a-zA-Z0-9?]*)\]", res.stdout, re.M)
    tcp = re.search(r"^  tcp  \[([a-zA-Z0-9?]*)\]", res.stdout, re.M)
    assert unix and tcp, res.stdout
    sums = {r["transport"]: shown_sum(doc, r) for r in doc["results"]}
    longer = max(len(unix.group(1)), len(tcp.group(1)))
    assert len(tcp.group(1)) == pytest.approx(longer * sums["tcp"] / max(sums.values()), abs=1)
    assert len(unix.group(1)) == pytest.approx(longer * sums["unix"] / max(sums.values()), abs=1)


def run_on_pty(argv, env):
    """Run argv with stdout on a pseudo-terminal; returns (exit status, output)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.mark.parametrize("no_color", [False, True])
def test_bars_colour_only_on_a_tty_without_no_color(udsprobe, is_root, attach_mode, no_color):
    if not is_root:
        pytest.skip("traced runs need root")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    if no_color:
        env["NO_COLOR"] = "1"
    rc, out = run_on_pty([udsprobe, "--compare", "--mode", "pingpong", "--count", "500",
                          *traced_args(attach_mode)], env)
    assert rc == 0, out
    assert "where a message's time goes" in out
    assert ("\033[30;48;5;" in out) == (not no_color)


def test_sweep_draws_the_size_curve(run, tmp_path):
    """--sweep --out: sweep.svg is a real picture (rasterised, not blank, slide width) that
    report.md shows, with a point per transport and size whose value is the JSON's."""
    out = tmp_path / "talk"
    res = run("--compare", "--sweep", "--no-trace", "--size", "64,4K,64K", "--duration", "0.1",
              "--out", out, timeout=300)
    assert res.returncode == 0, res.stderr
    svg = (out / "sweep.svg").read_text()
    assert svg.count("<circle") == 2 * 3 + 3 + 2 * 3     # latency, ratio, throughput
    for size in ("64 B", "4 KiB", "64 KiB"):
        assert f"UDS, {size}: " in svg and f"TCP, {size}: " in svg
    doc = json.loads((out / "report.json").read_text())
    dots = {(c.find(SVG_NS + "title").text.split(",")[0], int(c.get("data-x")), float(c.get("data-v")))
            for c in ET.parse(out / "sweep.svg").getroot().iter(SVG_NS + "circle")}
    for r in doc["results"]:
        name = "UDS" if r["transport"] == "unix" else "TCP"
        v = r["latency_ns"]["p50"] if r["mode"] == "pingpong" else r["bytes_per_sec"]
        assert any(t == name and x == r["msg_size"] and v == pytest.approx(dv, rel=1e-5)
                   for t, x, dv in dots), (r["mode"], name, r["msg_size"], v)
    assert "](sweep.svg)" in (out / "report.md").read_text()
    assert "sweep.svg" in (out / ".udsprobe-manifest").read_text()
    png = assert_picture(out / "sweep.svg", tmp_path, width=1600)
    assert png_size(png)[1] > 900


def test_one_size_has_no_sweep(run, tmp_path):
    out = tmp_path / "one"
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--count", "500", "--out", out,
              timeout=120)
    assert res.returncode == 0, res.stderr
    assert not (out / "sweep.svg").exists()
    assert "sweep.svg" not in (out / "report.md").read_text()
