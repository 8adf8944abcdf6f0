#!/usr/bin/env python3
"""make examples: regenerate the README's example outputs and docs/example-report/ from this
build, on this machine (the outputs name the commit, kernel and CPU; the README's lines around
them say when).

docs/REPORTS.md's sentences on the example sweep.svg, between "<!-- sweep summary -->" and
"<!-- /sweep summary -->", are written from the same sweep's JSON.

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


def readme(udsprobe):
    text = README.read_text()
    lines = text.split("\n")
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    for ex in reversed(examples(text)):    # from the end: earlier line numbers stay valid
        print(f"examples: README: udsprobe {shlex.join(ex.args)}", file=sys.stderr, flush=True)
        lines[ex.marker + 1:ex.end] = [
            f"<!-- made by `make examples` on {day}: {machine()} -->", "```", *run(udsprobe, ex)]
    README.write_text("\n".join(lines))


def report(udsprobe):
    """docs/example-report/: the default --compare's report, and the default sweep's picture."""
    with tempfile.TemporaryDirectory(prefix="udsprobe-examples.") as d:
        for args, keep in ((["--compare", "--out", f"{d}/report"], None),
                           (["--compare", "--sweep", "--out", f"{d}/sweep"], "sweep.svg")):
            print(f"examples: udsprobe {shlex.join(args)}", file=sys.stderr, flush=True)
            r = subprocess.run([udsprobe, *args], stdout=subprocess.DEVNULL, timeout=3600)
            if r.returncode != 0:
                raise SystemExit(f"examples: udsprobe {shlex.join(args)}: exit {r.returncode}")
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
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
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
    lines, out, width = text.split(), [], 0
    for w in lines:     # wrapped at 96 columns as the docs are
        if out and width + 1 + len(w) > 96:
            out.append("\n")
            width = 0
        elif out:
            out.append(" ")
            width += 1
        out.append(w)
        width += len(w)
    body = REPORTS.read_text()
    a, b = body.index(SWEEP_BEGIN) + len(SWEEP_BEGIN), body.index(SWEEP_END)
    REPORTS.write_text(body[:a] + "\n" + "".join(out) + "\n" + body[b:])


def main():
    udsprobe = os.environ.get("UDSPROBE", str(REPO / "udsprobe"))
    if os.geteuid() != 0:
        raise SystemExit("examples: the examples trace: run as root (sudo make examples)")
    readme(udsprobe)
    if "--readme-only" not in sys.argv[1:]:
        report(udsprobe)
    print(f"examples: written on {machine()}; review with git diff", file=sys.stderr)


if __name__ == "__main__":
    main()
