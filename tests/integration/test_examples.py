"""The README's example outputs cannot go stale (issue 31, item 5): each example block (marked
for scripts/examples.py, `make examples`) is run again with this build, numbers masked on both
sides, and every line of the example must be a line the fresh run printed. Two kinds of line may
differ between two runs of one build and are checked against what the build can print instead:
a stage-table row the fresh run did not have (a softirq deferred once) must name stages
`--list-stages` knows, and an explanation sentence the numbers of this run did not call for
must begin as a sentence of the explanation's source (claim_add's format, up to its first
value). A deliberately stale line fails (test_stale_line_fails)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import examples  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the examples trace: needs root")


def mask(line):
    """A line with what changes from run to run replaced: numbers and their units, the commit,
    the CPU's name, the letters of a bar, runs of blanks."""
    line = re.sub(r"\bgit [0-9a-f]+(-dirty)?", "git #", line)
    if line.startswith("kernel "):
        line = re.sub(r"\(.*\)", "(CPU)", line)
    line = re.sub(r"\[[a-z]+\]", "[bar]", line)
    # a number with its sign and unit: "980 ns" and "2.25 us", "-3%" and "+11%" are one shape
    line = re.sub(r"[+-]?\d+(\.\d+)?( ?(ns|us|µs|ms|s|k|M|G)\b)?", "#", line)
    return " ".join(line.split())


ROW = re.compile(r"^(\S+;\S+) (-|#) (-|#) (#|-)$")   # a stage-table row, masked
LEGEND = re.compile(r"^([a-z] \S+;\S+ ?)+$")               # the letters bar's legend, masked


def claim_leads():
    """The literal start of every explanation sentence format in the source."""
    leads = set()
    for src in (REPO / "user").rglob("*.c"):
        text = src.read_text()
        for m in re.finditer(r'claim_add\([^,]+,\s*"[a-z_]+",\s*((?:"(?:[^"\\]|\\.)*"\s*)+)',
                             text):
            fmt = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m[1]))
            lead = fmt.split("%", 1)[0]
            if len(lead) >= 8:
                leads.add(lead)
    return leads


def stage_known(name, listed):
    """Each stage of a (merged) row name is one --list-stages names: "a;b+c" is a;b and a;c."""
    parts = name.split("+")
    prefix = parts[0].rsplit(";", 1)[0]
    return all(p in listed for p in [parts[0]] + [f"{prefix};{p}" for p in parts[1:]])


def stale_lines(example_lines, fresh_lines, listed, leads):
    fresh = {mask(l) for l in fresh_lines}
    rows = {m[1] for m in map(ROW.match, fresh) if m}
    bad = []
    for line in example_lines:
        m = mask(line)
        if not m or m in fresh:
            continue
        row = ROW.match(m)
        if row and row[1] not in rows and stage_known(row[1], listed):
            continue
        if LEGEND.match(m) and any(LEGEND.match(f) for f in fresh):
            continue
        if any(line.startswith(lead) for lead in leads):
            continue
        bad.append(line)
    return bad


@pytest.fixture(scope="module")
def fresh(udsprobe):
    """Each README example run with this build: (example, its output)."""
    return [(ex, examples.run(udsprobe, ex)) for ex in examples.examples(examples.README.read_text())]


@pytest.fixture(scope="module")
def listed(udsprobe):
    return subprocess.run([udsprobe, "--list-stages"], capture_output=True, text=True,
                          check=True).stdout


def test_readme_examples_are_what_this_build_prints(fresh, listed):
    assert len(fresh) >= 2, "the README's example markers are gone"
    leads = claim_leads()
    assert len(leads) > 20, leads
    for ex, out in fresh:
        bad = stale_lines(ex.lines, out, listed, leads)
        assert not bad, (f"README example `udsprobe {' '.join(ex.args)}` has lines this build no "
                         f"longer prints (run `sudo make examples`): {bad}")


def test_stale_line_fails(fresh, listed):
    """The check is not talked round: a changed word, a stage renamed, an old sentence."""
    leads = claim_leads()
    ex, out = fresh[-1]
    table = next(l for l in ex.lines if ROW.match(mask(l)))
    for line in (ex.lines[0].replace("AF_UNIX", "AF_LOCAL"), table.replace(";", ";old_", 1),
                 "waiting for the CPU is the largest stage for both (UDS 510 ns, TCP 603 ns)"):
        assert stale_lines([line], out, listed, leads) == [line], line
