#!/usr/bin/env python3
"""make examples: regenerate the README's example outputs and docs/example-report/ from this
build, on this machine (the outputs name the commit, kernel and CPU; the README's lines around
them say when).

docs/REPORTS.md's sentences on the example sweep.svg, between "<!-- sweep summary -->" and
"<!-- /sweep summary -->", are written from the same sweep's JSON; the README's placement
table and its sentences, between "<!-- placement table -->" and "<!-- /placement table -->",
from PLACEMENT_RUNS untraced 64 B ping-pong runs on one CPU and on two.

A README example is the fenced block after a marker line

    <!-- example: ARGS [| stderr] -->

ARGS are udsprobe's arguments; "| stderr" shows the command line and the progress lines on
stderr before the report (else stdout only). tests/integration/test_examples.py reads the same
markers and fails when a line of an example is no longer something this build prints.

Usage: scripts/examples.py [--readme-only]   (root: the examples trace)
"""
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
REPORT = REPO / "docs" / "example-report"
MARKER = re.compile(r"^<!-- example: (?P<args>.*?)(?P<stderr> \| stderr)? -->$")
STAMP = re.compile(r"^<!-- made by `make examples` .* -->$")
REPORTS = REPO / "docs" / "REPORTS.md"
SWEEP_BEGIN, SWEEP_END = "<!-- sweep summary -->", "<!-- /sweep summary -->"
PLACE_BEGIN, PLACE_END = "<!-- placement table -->", "<!-- /placement table -->"
PLACEMENT_RUNS = 5
PLACEMENT_ARGS = ["--compare", "--no-trace", "--mode", "pingpong", "--size", "64",
                  "--cpu", "same,split"]


class Example:
    def __init__(self, args, stderr, marker, end, lines):
        self.args = shlex.split(args)
        self.stderr = stderr
        self.marker, self.end = marker, end     # README lines: the marker's, the closing ```
        self.lines = lines


def examples(text):
    """The README's examples, in order."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and STAMP.match(lines[j]):
            j += 1
        if j >= len(lines) or lines[j] != "```":
            raise SystemExit(f"README.md:{i + 1}: an example marker not followed by a ``` block")
        k = lines.index("```", j + 1)
        out.append(Example(m["args"], bool(m["stderr"]), i, k, lines[j + 1:k]))
    return out


def run(udsprobe, ex):
    """The example's output as its block shows it."""
    r = subprocess.run([udsprobe, *ex.args], capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"udsprobe {shlex.join(ex.args)}: exit {r.returncode}: {r.stderr}")
    head = [f"$ ./udsprobe {shlex.join(ex.args)}", *r.stderr.splitlines()] if ex.stderr else []
    return head + r.stdout.rstrip("\n").split("\n")


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "unknown CPU")
    rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    return f"{cpu}, Linux {os.uname().release}, udsprobe git {rev}"


def today():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def run_quiet(udsprobe, args, note="", timeout=3600):
    """udsprobe ARGS for its files (stdout dropped); its failure ends make examples."""
    print(f"examples: udsprobe {shlex.join(args)}{note}", file=sys.stderr, flush=True)
    r = subprocess.run([udsprobe, *args], stdout=subprocess.DEVNULL, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"examples: udsprobe {shlex.join(args)}: exit {r.returncode}")


def replace_between(path, begin, end, lines):
    """path's text between the marker lines begin and end becomes lines."""
    body = path.read_text()
    a, b = body.index(begin) + len(begin), body.index(end)
    path.write_text(body[:a] + "\n" + "\n".join(lines) + "\n" + body[b:])


def readme(udsprobe):
    text = README.read_text()
    lines = text.split("\n")
    day = today()
    for ex in reversed(examples(text)):    # from the end: earlier line numbers stay valid
        print(f"examples: README: udsprobe {shlex.join(ex.args)}", file=sys.stderr, flush=True)
        lines[ex.marker + 1:ex.end] = [
            f"<!-- made by `make examples` on {day}: {machine()} -->", "```", *run(udsprobe, ex)]
    README.write_text("\n".join(lines))


def report(udsprobe):
    """docs/example-report/: the default --compare's report, and the default sweep's picture."""
    with tempfile.TemporaryDirectory(prefix="udsprobe-examples.") as d:
        run_quiet(udsprobe, ["--compare", "--out", f"{d}/report"])
        run_quiet(udsprobe, ["--compare", "--sweep", "--out", f"{d}/sweep"])
        shutil.rmtree(REPORT)
        shutil.copytree(f"{d}/report", REPORT)
        shutil.copy(f"{d}/sweep/sweep.svg", REPORT / "sweep.svg")
        sweep_summary(json.loads(Path(f"{d}/sweep/report.json").read_text()))


def size_text(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def spans(ratios, pred):
    """The sizes where pred(ratio) holds, as runs of neighbouring sizes ("1 B to 4 KiB and
    1 MiB"), and the ratios' range there; None: nowhere."""
    runs, vals = [], []
    for i, (size, r) in enumerate(ratios):
        if not pred(r):
            continue
        vals.append(r)
        if runs and runs[-1][2] == i - 1:
            runs[-1][1:] = [size, i]
        else:
            runs.append([size, size, i])
    if not runs:
        return None
    words = [size_text(a) if a == b else f"{size_text(a)} to {size_text(b)}" for a, b, _ in runs]
    lo, hi = f"{min(vals):.2f}", f"{max(vals):.2f}"
    return " and ".join(words), (f"{lo}×" if lo == hi else f"{lo}–{hi}×")


def sweep_summary(doc):
    """docs/REPORTS.md's sentences on sweep.svg, from the sweep's results (the picture's
    figures: untraced pingpong p50, untraced stream bytes/s)."""
    res = {(r["mode"], r["transport"], r["msg_size"]): r for r in doc["results"]}
    sizes = sorted({k[2] for k in res if k[0] == "pingpong"})
    lat = [(s, res["pingpong", "unix", s]["latency_ns"]["p50"] /
            res["pingpong", "tcp", s]["latency_ns"]["p50"]) for s in sizes]
    bw = [(s, res["stream", "unix", s]["bytes_per_sec"] / res["stream", "tcp", s]["bytes_per_sec"])
          for s in sorted({k[2] for k in res if k[0] == "stream"})]
    faster, slower = spans(lat, lambda r: r < 1), spans(lat, lambda r: r >= 1)
    more, less = spans(bw, lambda r: r > 1), spans(bw, lambda r: r <= 1)
    day = today()
    cpu = doc["cpu_placement"]["cpu_model"]
    text = (f"docs/example-report/sweep.svg is the default `--compare --sweep` (1 B to 16 MiB), "
            f"made by `make examples` on {day} on this machine kind ({cpu}, "
            f"{doc['cpu_placement']['cpus']} vCPUs, {doc['attach_mode']} mode, same CPU; one "
            f"run per point, so single points wobble): UDS's one-way latency (p50) is ")
    text += (f"{faster[1]} TCP's at {faster[0]}" if faster else "never below TCP's")
    if slower:
        text += f", and {slower[1]} of it (TCP as fast or faster) at {slower[0]}"
    text += "; streaming, "
    parts = []
    if less:
        parts.append(f"TCP moves as many bytes or more at {less[0]} (UDS {less[1]} TCP's)")
    if more:
        parts.append(f"UDS moves more at {more[0]} ({more[1]})")
    text += " and ".join(parts) + "."
    replace_between(REPORTS, SWEEP_BEGIN, SWEEP_END, wrap(text))


def us(ns):
    """A duration as the docs write it: 1.5 µs, 17 µs, 0.52 ms."""
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs" if ns < 1e4 else f"{ns / 1e3:.0f} µs"


def wrap(text, width=96):
    """Words wrapped at the docs' 96 columns."""
    out, line = [], ""
    for w in text.split():
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return out + ([line] if line else [])


def placement_text(docs, day):
    """The placement section's lines from the runs' JSON documents: per placement and
    transport the medians of p50, p99 and mean; the sentences only from those figures."""
    runs = {}
    for doc in docs:
        for r in doc["results"]:
            runs.setdefault((r["cpu"], r["transport"]), []).append(r["latency_ns"])
    m = {k: {q: statistics.median([l[q] for l in v]) for q in ("p50", "p99", "mean")}
         for k, v in runs.items()}
    cpu = docs[0]["cpu_placement"]["cpu_model"]
    out = wrap(f"Measured with `{' '.join(PLACEMENT_ARGS[:-2])} --cpu same,split` by `make "
               f"examples` (medians of {len(docs)} runs; {day}, {cpu}: absolute times differ "
               f"3–4× between the CPUs of this kind):")
    out += ["", "| `--cpu` | unix p50 | tcp p50 | ratio | unix p99 | tcp p99 | unix mean | tcp mean |",
            "|---|---|---|---|---|---|---|---|"]
    for pl in ("same", "split"):
        u, t = m[pl, "unix"], m[pl, "tcp"]
        out.append(f"| {pl} | {us(u['p50'])} | {us(t['p50'])} | {u['p50'] / t['p50']:.2f} | "
                   f"{us(u['p99'])} | {us(t['p99'])} | {us(u['mean'])} | {us(t['mean'])} |")
    slow = sorted(m["split", tr]["p50"] / m["same", tr]["p50"] for tr in ("unix", "tcp"))
    p99 = sorted(m["split", tr]["p99"] for tr in ("unix", "tcp"))
    diff = abs(m["same", "tcp"]["p50"] - m["same", "unix"]["p50"])
    spread = {pl: max(max(l["p50"] for l in runs[pl, tr]) - min(l["p50"] for l in runs[pl, tr])
                      for tr in ("unix", "tcp")) for pl in ("same", "split")}
    text = (f"Across CPUs the p50 is {slow[0]:.1f}–{slow[1]:.1f}× the same-CPU one and p99 "
            f"reaches {us(p99[0])}–{us(p99[1])}. The {us(diff)} the transports' p50 differ by "
            f"on one CPU is ")
    text += ("less than the run-to-run range of the split p50 ("
             if diff < spread["split"] else "more than the run-to-run range of the split p50 (")
    text += (f"{us(spread['split'])}, both transports' largest); on one CPU that range is "
             f"{us(spread['same'])}.")
    return out + [""] + wrap(text)


def placement(udsprobe):
    """The README's placement table, from PLACEMENT_RUNS runs of PLACEMENT_ARGS."""
    docs = []
    with tempfile.TemporaryDirectory(prefix="udsprobe-examples.") as d:
        for i in range(PLACEMENT_RUNS):
            run_quiet(udsprobe, PLACEMENT_ARGS + ["--json", f"{d}/p{i}.json"],
                      f" ({i + 1}/{PLACEMENT_RUNS})", timeout=600)
            docs.append(json.loads(Path(f"{d}/p{i}.json").read_text()))
    replace_between(README, PLACE_BEGIN, PLACE_END, placement_text(docs, today()))


def main():
    udsprobe = os.environ.get("UDSPROBE", str(REPO / "udsprobe"))
    if os.geteuid() != 0:
        raise SystemExit("examples: the examples trace: run as root (sudo make examples)")
    readme(udsprobe)
    placement(udsprobe)
    if "--readme-only" not in sys.argv[1:]:
        report(udsprobe)
    print(f"examples: written on {machine()}; review with git diff", file=sys.stderr)


if __name__ == "__main__":
    main()
