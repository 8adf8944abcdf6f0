"""Every sentence of --compare's explanation is a claim its own run's numbers support.

One traced --compare over modes pingpong, stream, connect x sizes 1, 64, 4K, 64K, 1M (stream
also 16M) x --cpu same,split, bounded by --count; explain_checker.py re-derives every claim
of the JSON from the results with code of its own, and the text report and report.md must
print the same sentences. The checker is shown to reject deliberately wrong claims, among them
the 64 B stream sentence b7007db printed ("A 64 B message crosses in several pieces").
"""
import copy
import json
import subprocess
from pathlib import Path

import pytest

from explain_checker import check_document, check_text_report

GRID = [
    # (modes, sizes, count): 200 units each (16 MiB: 8), so the grid takes about a minute
    ("pingpong,stream,connect", "1,64,4K,64K,1M", 200),
    ("stream", "16M", 8),
]


@pytest.fixture(scope="module")
def grid(udsprobe, attach_mode, tmp_path_factory, is_root, ncpus):
    if not is_root:
        pytest.skip("traced --compare needs root")
    if ncpus < 2:
        pytest.skip("--cpu split needs two CPUs")
    out = []
    for i, (modes, sizes, count) in enumerate(GRID):
        path = tmp_path_factory.mktemp("claims") / f"grid{i}.json"
        cmd = [udsprobe, "--compare", "--mode", modes, "--size", sizes, "--cpu", "same,split",
               "--count", str(count), "--json", str(path)]
        if attach_mode:
            cmd += ["--attach", attach_mode]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr}"
        out.append((json.loads(path.read_text()), res.stdout))
    return out


def test_every_claim_holds(grid):
    errs, n = [], 0
    for doc, _ in grid:
        errs += check_document(doc)
        n += sum(len(p.get("explanation", [])) for p in doc.get("pairs", []))
    assert not errs, f"{len(errs)} claims the numbers do not support:\n" + "\n".join(errs)
    assert n > 0


def test_grid_is_whole(grid):
    """The checker saw every cell of the grid, each traced, each with an explanation."""
    seen = set()
    for doc, _ in grid:
        for p in doc["pairs"]:
            seen.add((p["mode"], p["msg_size"], p["cpu"]))
            assert p["explanation"], p
        assert all("stages" in r for r in doc["results"]), "a result without stages"
        # CPU per message from the kernel's accounting: the two processes did run
        for r in doc["results"]:
            assert r["cpu_ns"]["user"] + r["cpu_ns"]["system"] > 0, r["cpu_ns"]
            assert r["cpu_ns"]["softirq"] >= 0, r["cpu_ns"]
    sizes = [1, 64, 4096, 65536, 1048576]
    want = {(m, s, c) for m in ("pingpong", "stream", "connect") for s in sizes
            for c in ("same", "split")} | {("stream", 16 << 20, c) for c in ("same", "split")}
    assert seen == want


GOLDEN = Path(__file__).resolve().parents[1] / "unit" / "golden"


@pytest.mark.parametrize("name", ["tracepoint", "fentry", "untraced", "think"])
def test_golden_documents_hold(name):
    """The golden report.json documents (tests/unit/golden/*.out.json, written by the JSON
    writer from fixed inputs: fentry's split placement, think's curve) keep the rules too."""
    doc = json.loads((GOLDEN / f"{name}.out.json").read_text())
    errs = check_document(doc)
    assert not errs, "\n".join(errs)


def test_text_report_prints_the_claims(grid):
    for doc, text in grid:
        lines = set(text.splitlines())
        for p in doc["pairs"]:
            for c in p["explanation"]:
                assert c["text"] in lines, f"not in the text report: {c['text']}"


def test_text_report_sentences_hold(grid):
    """The text report's sentences keep the rules any claim must (this reads the text, so it
    also judges a build whose JSON has no explanation: b7007db's fixed 'TCP wins: on one CPU it
    batches segments...' and '(no handshake segments, ...)' fail it)."""
    errs = []
    for doc, text in grid:
        errs += check_text_report(doc, text)
    assert not errs, "\n".join(errs)


def test_small_stream_no_pieces(grid):
    """1 B to 4 KiB cross as one piece each: no claim says otherwise (b7007db said 'A 64 B
    message crosses in several pieces' where some TCP calls were sliced)."""
    for doc, text in grid:
        for line in text.splitlines():
            if "several pieces" in line:
                assert not any(f"A {s} B " in line for s in (1, 64, 4096)), line


def test_connect_names_connect_and_accept(grid):
    for doc, _ in grid:
        for p in doc["pairs"]:
            if p["mode"] != "connect":
                continue
            kinds = [c["kind"] for c in p["explanation"]]
            assert "connection" in kinds and "accept" in kinds and \
                "connection_difference" in kinds, kinds
            conn = next(c for c in p["explanation"] if c["kind"] == "connection")["values"]
            for t in ("unix", "tcp"):
                parts = sum(conn[f"{t}_{k}_ns"] for k in ("connect", "messages", "rest"))
                assert abs(parts - conn[f"{t}_connection_ns"]) <= 1e-3 * parts + 1


@pytest.mark.parametrize("args", [
    ("--mode", "pingpong,stream,connect", "--repeat", "2"),      # the noise rule of ranges
    ("--mode", "pingpong", "--think", "0,100us"),                # think and think_curve
    ("--mode", "pingpong,stream,connect", "--no-trace", "--size", "64,1M"),  # first claim only
])
def test_other_options_claims_hold(run, tmp_path, is_root, args):
    if not is_root:
        pytest.skip("--compare needs root")
    out = tmp_path / "r.json"
    res = run("--compare", "--count", "300", *args, "--json", out, timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    errs = check_document(doc) + check_text_report(doc, res.stdout)
    assert not errs, "\n".join(errs)
    if "--think" in args:
        assert doc["think_explanation"][0]["kind"] == "think_curve"
        assert doc["think_explanation"][0]["text"] in res.stdout.splitlines()


def test_report_md_prints_the_claims(run, tmp_path):
    out = tmp_path / "out"
    res = run("--compare", "--mode", "stream", "--size", "64", "--count", "200", "--out", out,
              timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "report.json").read_text())
    md = set((out / "report.md").read_text().splitlines())
    assert not check_document(doc)
    for p in doc["pairs"]:
        for c in p["explanation"]:
            assert c["text"] in md, f"not in report.md: {c['text']}"


# ---- the checker rejects wrong claims ------------------------------------------------------

OLD_64B_STREAM = ("A 64 B message crosses in several pieces: uncounted skbs on UDS (at most "
                  "~36 KiB each) and 3.6 segments on TCP (up to 64 KiB with GSO) per send() "
                  "call; the sender slept 0.0 (UDS) and 0.0 (TCP) times per send() call waiting "
                  "for send-buffer space while the receiver copied.")


def pair_of(doc, mode, size, cpu="same"):
    return next(p for p in doc["pairs"] if (p["mode"], p["msg_size"], p["cpu"]) == (mode, size, cpu))


def mutate_old_sentence(doc):
    p = pair_of(doc, "stream", 64)
    p["explanation"].append({"kind": "pieces", "text": OLD_64B_STREAM, "values": {}})


def mutate_old_sentence_other_kind(doc):
    p = pair_of(doc, "stream", 64)
    p["explanation"].append({"kind": "copies", "text": OLD_64B_STREAM,
                             "values": {}})


def mutate_flip_winner(doc):
    c = pair_of(doc, "connect", 64)["explanation"][0]
    c["values"]["faster"] = {"unix": "tcp", "tcp": "unix"}.get(c["values"]["faster"], "unix")


def mutate_fixed_stream_story(doc):
    c = pair_of(doc, "stream", 64, "split")["explanation"][0]
    c["text"] += (" (TCP wins: on one CPU it batches segments while the receiver sleeps, and "
                  "each UDS send is its own skb and wakeup)")


def mutate_write_space(doc):
    p = pair_of(doc, "pingpong", 64)
    p["explanation"].append({"kind": "uds_pays_more", "text": "Where UDS pays more than TCP: "
                             "recv;return (+57 ns); on UDS, consuming the skb also runs "
                             "unix_write_space, which wakes the peer.",
                             "values": {"recv;return": 57}})


def mutate_share(doc):
    """A share of the difference one point off what the numbers give."""
    for p in doc["pairs"]:
        for c in p["explanation"]:
            if c["kind"] == "tcp_only" and "share_pct" in c["values"]:
                pct = round(c["values"]["share_pct"])
                c["text"] = c["text"].replace(f"That is {pct}%", f"That is {pct + 7}%")
                return
    raise AssertionError("no tcp_only claim with a share in the grid")


def mutate_largest(doc):
    for p in doc["pairs"]:
        for c in p["explanation"]:
            if c["kind"] == "largest_difference" and c["values"]["stage"] != "recv;copy":
                c["values"]["stage"] = "recv;copy"
                return
    raise AssertionError("no largest_difference claim to change")


@pytest.mark.parametrize("mutate", [mutate_old_sentence, mutate_old_sentence_other_kind,
                                    mutate_flip_winner, mutate_fixed_stream_story,
                                    mutate_write_space, mutate_share, mutate_largest])
def test_checker_rejects_wrong_claims(grid, mutate):
    doc = copy.deepcopy(grid[0][0])
    assert not check_document(doc)
    mutate(doc)
    assert check_document(doc), f"{mutate.__name__}: the checker accepted it"
