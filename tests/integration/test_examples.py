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
    the CPU's name, the letters of a bar, runs of blanks, the probe overhead's wording."""
    line = re.sub(r"\bgit [0-9a-f]+(-dirty)?", "git #", line)
    if line.startswith("kernel "):
        line = re.sub(r"\(.*\)", "(CPU)", line)
    line = re.sub(r"\[[a-z]+\]", "[bar]", line)
    # a number with its sign and unit: "980 ns" and "2.25 us", "-3%" and "+11%" are one shape
    line = re.sub(r"[+-]?\d+(\.\d+)?( ?(ns|us|µs|ms|s|k|M|G)\b)?", "#", line)
    # the probe overhead's two wordings, chosen by the numbers (overhead_words() and
    # agreement() in user/compare/): a traced run faster than its untraced twin, or not
    line = line.replace("within run-to-run noise (the traced run was # faster)", "# (#%)")
    line = line.replace("(measured overhead not positive: run-to-run noise exceeds the probe "
                        "cost, compare with --repeat)", "(#% and #% of the measured overhead)")
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


def placement_doc(lat):
    """A --compare --cpu same,split JSON document of one run; lat: {(cpu, transport): p50}."""
    return {"cpu_placement": {"cpu_model": "Test CPU"},
            "results": [{"cpu": c, "transport": t,
                         "latency_ns": {"p50": v, "p99": 10 * v, "mean": 2 * v}}
                        for (c, t), v in lat.items()]}


def test_placement_text_from_the_medians():
    """The README's placement table takes each figure's median over the runs, and its sentence
    on the transports' difference against the split runs' spread follows the figures: here the
    difference (600 ns) is less than the split range, then (with the split runs alike) more."""
    runs = [{("same", "unix"): 1500, ("same", "tcp"): 2100, ("split", "unix"): s,
             ("split", "tcp"): s + 4000} for s in (17000, 15000, 40000, 16000, 18000)]
    text = "\n".join(examples.placement_text([placement_doc(r) for r in runs], "2026-01-01"))
    assert "medians of 5 runs; 2026-01-01, Test CPU" in text
    assert "| same | 1.5 µs | 2.1 µs | 0.71 | 15 µs | 21 µs | 3.0 µs | 4.2 µs |" in text
    assert "| split | 17 µs | 21 µs | 0.81 | 170 µs | 210 µs | 34 µs | 42 µs |" in text
    words = " ".join(text.split())
    assert "p50 is 10.0–11.3× the same-CPU one" in words, words
    assert "The 0.6 µs the transports' p50 differ by on one CPU is less than the run-to-run " \
           "range of the split p50 (25 µs" in words, words
    alike = [{**r, ("split", "unix"): 17000, ("split", "tcp"): 21000} for r in runs]
    words = " ".join("\n".join(examples.placement_text(
        [placement_doc(r) for r in alike], "2026-01-01")).split())
    assert "is more than the run-to-run range of the split p50 (0.0 µs" in words, words


def test_readme_placement_table_is_made_by_make_examples():
    """The README's placement section is scripts/examples.py's: both placements, stamped."""
    body = examples.README.read_text()
    a, b = body.index(examples.PLACE_BEGIN), body.index(examples.PLACE_END)
    block = body[a:b]
    assert "by `make examples` (medians of 5 runs;" in " ".join(block.split()), block
    assert re.search(r"^\| same \|", block, re.M) and re.search(r"^\| split \|", block, re.M), block
