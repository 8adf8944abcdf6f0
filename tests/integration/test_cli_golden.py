"""The command line's texts, byte for byte: --help, --version, usage errors (exit status and
stderr), --list-stages, and, per attach mode, --check and a short --compare's JSON with every
number masked. A refactoring that moves code (issue 32) must leave them all unchanged.

    UDSPROBE_UPDATE_GOLDEN=1 pytest tests/integration/test_cli_golden.py   # rewrite golden/

Files: tests/integration/golden/<case>.txt. --check and --compare depend on the kernel: their
files are named after the attach mode udsprobe chooses here; another mode has none (skip).
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("UDSPROBE_UPDATE_GOLDEN") == "1"

# (case name, args): runs that print the same on every kernel
TEXT_CASES = [
    ("help", ["--help"]),
    ("usage", ["--usage"]),
    ("version", ["--version"]),
    ("list-stages", ["--list-stages"]),
    ("no-action", []),
    ("count-abc", ["--compare", "--no-trace", "--count", "abc"]),
    ("count-zero", ["--compare", "--no-trace", "--count", "0"]),
    ("count-missing", ["--compare", "--no-trace", "--count"]),
    ("size-17M", ["--compare", "--no-trace", "--size", "17M"]),
    ("mode-foo", ["--compare", "--no-trace", "--mode", "foo"]),
    ("cpu-foo", ["--compare", "--no-trace", "--cpu", "foo"]),
    ("duration-1s", ["--compare", "--no-trace", "--duration", "1s"]),
    ("count-and-duration", ["--compare", "--no-trace", "--count", "10", "--duration", "1"]),
    ("think-stream", ["--compare", "--no-trace", "--mode", "stream,connect", "--think", "10us"]),
    ("bogus-option", ["--compare", "--no-trace", "--bogus-option"]),
    ("extra-arg", ["--compare", "--no-trace", "extra"]),
    ("json-empty", ["--compare", "--no-trace", "--json", ""]),
    ("attach-magic", ["--compare", "--attach", "magic"]),
    ("compare-backlog", ["--backlog", "--compare"]),
    ("backlog-port-0", ["--backlog", "--port", "0"]),
    ("backlog-pid", ["--backlog", "--pid", "-3"]),
    ("backlog-interval", ["--backlog", "--interval", "0"]),
    ("unix-no-action", ["--unix", "/tmp/x.sock"]),
    ("backlog-attach-disagree", ["--backlog", "--attach", "tracepoint", "--backlog-attach", "kprobe"]),
    ("backlog-source", ["--backlog", "--backlog-source", "proc"]),
    ("trace-comm-no-action", ["--comm", "x"]),
    ("trace-compare", ["--trace", "--compare"]),
    ("trace-comm-long", ["--trace", "--comm", "x" * 16]),
    ("trace-quiet", ["--trace", "--quiet", "--duration", "1"]),
    ("programs-no-compare", ["--client-unix", "true", "--client-tcp", "true"]),
    ("programs-one-client", ["--compare", "--client-unix", "true"]),
    ("programs-mode", ["--compare", "--mode", "pingpong", "--client-unix", "true",
                       "--client-tcp", "true"]),
    ("programs-server", ["--compare", "--server", "sleep 9", "--client-unix", "true",
                         "--client-tcp", "true"]),
]

# JSON fields whose strings describe the machine, not udsprobe's behaviour
HOST_FIELDS = {"version", "kernel", "cpu_model", "attach_reason"}


def run_cli(udsprobe, args, timeout=60):
    # argv[0] "udsprobe" whatever the binary's file name, as --help and errors print it
    res = subprocess.run(["udsprobe", *args], executable=udsprobe, capture_output=True,
                         text=True, timeout=timeout, cwd="/")
    return res


def transcript(res):
    out = f"exit {res.returncode}\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}"
    return re.sub(r"\(git [0-9a-f]+(-dirty)?\)", "(git HASH)", out)


def check_golden(name, text):
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no {path}: record it with UDSPROBE_UPDATE_GOLDEN=1")
    assert text == path.read_text(), f"output differs from {path}"


@pytest.mark.parametrize("name,args", TEXT_CASES, ids=[n for n, _ in TEXT_CASES])
def test_cli_text(udsprobe, name, args):
    check_golden(name, transcript(run_cli(udsprobe, args, timeout=30)))


def chosen_mode(text):
    m = re.search(r"^chosen: (\w+)", text, re.M)
    assert m, text
    return m.group(1)


@pytest.fixture(scope="module")
def check_text(udsprobe, is_root):
    if not is_root:
        pytest.skip("--check probes attach modes: needs root")
    res = run_cli(udsprobe, ["--check"])
    assert res.returncode == 0, res.stderr
    return res.stdout


def kernel_golden(name, mode):
    if not UPDATE and not (GOLDEN / f"{name}.txt").exists():
        pytest.skip(f"no golden for attach mode {mode} (recorded in tracepoint mode; "
                    f"UDSPROBE_UPDATE_GOLDEN=1 records this mode's)")


def test_check(check_text):
    mode = chosen_mode(check_text)
    kernel_golden(f"check-{mode}", mode)
    text = re.sub(r"^kernel \S+,", "kernel RELEASE,", check_text, flags=re.M)
    check_golden(f"check-{mode}", text)


def mask(doc, key=None):
    """Every number 0, the machine's strings "HOST"; keys, order and other strings kept."""
    if key == "explanation":
        return "CLAIMS"     # which claims a run makes follows its numbers: test_explain_claims.py
    if isinstance(doc, dict):
        return {k: mask(v, k) for k, v in doc.items()}
    if isinstance(doc, list):
        return [mask(v) for v in doc]
    if isinstance(doc, bool) or doc is None:
        return doc
    if isinstance(doc, (int, float)):
        return 0
    if key in HOST_FIELDS:
        return "HOST"
    return doc


def test_compare_json(udsprobe, check_text, tmp_path):
    mode = chosen_mode(check_text)
    kernel_golden(f"compare-pingpong-{mode}", mode)
    out = tmp_path / "r.json"
    res = run_cli(udsprobe, ["--compare", "--mode", "pingpong", "--size", "64", "--count", "200",
                             "--json", str(out)], timeout=300)
    assert res.returncode == 0, res.stderr
    text = json.dumps(mask(json.loads(out.read_text())), indent=1) + "\n"
    check_golden(f"compare-pingpong-{mode}", text)
