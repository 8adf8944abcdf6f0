"""Command line: --help/--version, usage errors (exit 2, one-line reason), privilege errors."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import perf_paranoid_at_most_2


def test_help(run):
    res = run("--help")
    assert res.returncode == 0
    assert res.stderr == ""
    assert "USAGE" in res.stdout and "EXAMPLES" in res.stdout
    for opt in ("--compare", "--no-trace", "--mode", "--size", "--count", "--duration",
                "--cpu", "--json", "--version"):
        assert opt in res.stdout, opt


def test_help_examples_whole_at_80_columns(run):
    """At 80 columns every example line is whole: argp wraps a doc line past its right margin
    mid-phrase ('the size curve, 1 B to 16' / 'MiB' at b7007db)."""
    res = run("--help", env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    usage = lines.index(next(l for l in lines if l.startswith("USAGE:")))
    examples = lines[lines.index("EXAMPLES:") + 1:]
    examples = examples[:examples.index("")]
    assert len(examples) > 10
    for line in lines[usage:usage + 2] + examples:
        assert len(line) <= 79, line
    for line in examples:
        # a command, or a continuation of the one above it (after a backslash)
        assert line.startswith("  sudo ./udsprobe ") or line.startswith("       --"), \
            f"an example broken mid-line: {line!r}"
    assert lines[usage + 1].startswith("       [--"), lines[usage:usage + 2]


def test_help_short(run):
    res = run("-?")
    assert res.returncode == 0
    assert "--compare" in res.stdout


def test_version(run):
    res = run("--version")
    assert res.returncode == 0
    assert res.stderr == ""
    assert res.stdout.startswith("udsprobe ")
    assert any(c.isdigit() for c in res.stdout)


BAD = [
    # (args, word the reason must mention)
    (["--compare", "--no-trace", "--count", "abc"], "count"),
    (["--compare", "--no-trace", "--count", "-1"], "count"),
    (["--compare", "--no-trace", "--count", "0"], "count"),
    (["--compare", "--no-trace", "--count", "+5"], "count"),
    (["--compare", "--no-trace", "--count", "0x10"], "count"),
    (["--compare", "--no-trace", "--count", "1000000001"], "count"),
    (["--compare", "--no-trace", "--count", "99999999999999999999999"], "count"),
    (["--compare", "--no-trace", "--count", ""], "count"),
    (["--compare", "--no-trace", "--size", "0"], "size"),
    (["--compare", "--no-trace", "--size", "17M"], "size"),
    (["--compare", "--no-trace", "--size", "12X"], "size"),
    (["--compare", "--no-trace", "--size", "1.5K"], "size"),
    (["--compare", "--no-trace", "--size", "64,0"], "size"),
    (["--compare", "--no-trace", "--size", ",".join(["64"] * 17)], "size"),
    (["--compare", "--no-trace", "--size", ""], "size"),
    (["--compare", "--no-trace", "--mode", "foo"], "mode"),
    (["--compare", "--no-trace", "--mode", "pingpong,foo"], "mode"),
    (["--compare", "--no-trace", "--mode", ""], "mode"),
    (["--compare", "--no-trace", "--cpu", "foo"], "cpu"),
    (["--compare", "--no-trace", "--cpu", "same,bogus"], "cpu"),
    (["--compare", "--no-trace", "--duration", "0"], "duration"),
    (["--compare", "--no-trace", "--duration", "-1"], "duration"),
    (["--compare", "--no-trace", "--duration", "abc"], "duration"),
    (["--compare", "--no-trace", "--duration", "3601"], "duration"),
    (["--compare", "--no-trace", "--duration", "0x10"], "duration"),
    (["--compare", "--no-trace", "--duration", "1s"], "duration"),
    (["--compare", "--no-trace", "--warmup", "-1"], "warmup"),
    (["--compare", "--no-trace", "--json", ""], "json"),
    (["--compare", "--no-trace", "--count", "10", "--duration", "1"], "duration"),
    (["--compare", "--no-trace", "--mode", "stream,connect", "--think", "10us"], "think"),
    (["--compare", "--no-trace", "--bogus-option"], "bogus-option"),
    (["--compare", "--no-trace", "extra"], "extra"),
    (["--compare", "--no-trace", "--count"], "count"),
    ([], "compare"),
]


@pytest.mark.parametrize("args,word", BAD, ids=[" ".join(a) or "(none)" for a, _ in BAD])
def test_bad_usage_exits_2(run, args, word):
    res = run(*args, timeout=10)
    assert res.returncode == 2, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.stdout == "", "usage errors print nothing on stdout"
    lines = res.stderr.strip().splitlines()
    assert lines, "no reason on stderr"
    # one line of reason, optionally followed by the "Try 'udsprobe --help'" hint
    assert len(lines) <= 2, res.stderr
    if len(lines) == 2:
        assert lines[1].startswith("Try "), res.stderr
    # "udsprobe: ..." (getopt's own messages name the program as invoked: "./udsprobe: ...")
    assert os.path.basename(lines[0].split(":")[0]) == "udsprobe", res.stderr
    assert word in lines[0], f"reason does not name '{word}': {lines[0]}"


# issue 36.9: each reason names the option at fault; a repeated option is not silently the last
QUICK = ["--compare", "--no-trace", "--mode", "pingpong", "--count", "10"]
PROGS = ["--compare", "--client-unix", "true", "--client-tcp", "true", "--ready-timeout", "1"]
NAMED = [
    (["--trace", "--quiet", "--duration", "1"],
     "--trace does not take --quiet (an option of --backlog only)"),
    (["--prom", "x.prom"], "--prom needs --backlog or --trace"),
    (["--trace", "--interval", "1", "--duration", "1"],
     "--trace takes --interval with --live or --prom only"),
    (["--trace", "--netns", "/proc/self/ns/net"], "--trace does not take --netns"),
    (["--metrics", "127.0.0.1:9464"], "--metrics needs --backlog or --trace"),
    (["--unix", "/tmp/x.sock"], "--unix needs --backlog or --trace"),
    (["--trace", "--server", "x {unix}", "--duration", "1"], "need --compare"),
    (["--trace", "--ready-timeout", "3", "--duration", "1"], "need --compare"),
    (["--trace", "--"], "nothing after '--'"),
    (["--trace", "--duration", "1", "--duration", "0.5"], "--duration is given twice"),
    (QUICK + ["--json", "a.json", "--json", "b.json"], "--json is given twice"),
    (QUICK + ["--out", "a", "--out", "b"], "--out is given twice"),
    (QUICK + ["--attach", "auto", "--attach", "tracepoint"], "--attach is given twice"),
    (["--backlog", "--duration", "0.5", "--metrics", "127.0.0.1:1", "--metrics", "[::1]:2"],
     "--metrics is given twice"),
    (["--backlog", "--duration", "0.5", "--prom", "a.prom", "--prom", "b.prom"],
     "--prom is given twice"),
    (PROGS + ["--server", "sleep 1 {unix}", "--server", "sleep 2 {unix}"],
     "--server is given twice"),
    (["--trace", "--duration", "0.5", "--slower-than", "1ms", "--slower-than", "2ms"],
     "--slower-than is given twice"),
    (QUICK + ["--size", "1,,2"], "--size: '1,,2' has an empty item"),
    (QUICK + ["--size", "64,"], "--size: '64,' has an empty item"),
    (["--compare", "--no-trace", "--count", "10", "--mode", "pingpong,,stream"],
     "--mode: 'pingpong,,stream' has an empty item"),
]


@pytest.mark.parametrize("args,reason", NAMED, ids=[" ".join(a) for a, _ in NAMED])
def test_usage_error_names_what_is_wrong(udsprobe, tmp_path, args, reason):
    """--trace --quiet blamed --unix, --port, --pid, --cgroup (which --trace takes);
    --trace --server asked for the client options; --trace -- ran until Ctrl-C; a repeated
    option kept its last value; --size 1,,2 was read as 1,2."""
    try:
        res = subprocess.run([udsprobe, *args], capture_output=True, text=True, timeout=20,
                             cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after 20 s: {args}")
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) <= 2 and reason in lines[0], res.stderr
    assert list(tmp_path.iterdir()) == [], "a usage error wrote files"


def run_as_nobody(binary, *args, timeout=30):
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to uid 65534")
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
           "--inh-caps=-all", binary, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")


def test_not_root_traced_exits_1(nobody_binary):
    res = run_as_nobody(nobody_binary, "--compare", "--count", "10")
    assert res.returncode == 1, f"exit {res.returncode}\n{res.stderr}"
    assert res.stdout == ""
    msg = res.stderr.strip()
    assert msg.startswith("udsprobe"), msg
    # says what to do: use root / capabilities, or run untraced
    assert "root" in msg or "CAP_BPF" in msg, msg
    assert "--no-trace" in msg or "sudo" in msg, msg


def test_setcap_binary_traces_without_root(udsprobe, request):
    """The remedy every privilege error names for the commands run by hand: a binary given
    CAP_BPF and CAP_PERFMON (setcap) run by uid 65534 traces --compare and passes --check;
    given one of them, the one missing is named and nothing runs."""
    if os.geteuid() != 0:
        pytest.skip("needs root to setcap and switch to uid 65534")
    d = Path(tempfile.mkdtemp(prefix="udsprobe-setcap-"))   # pytest's tmp_path is root's 0700
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o777)
    binary, out = d / "udsprobe", d
    subprocess.run(["cp", udsprobe, binary], check=True)
    run = lambda *a: run_as_nobody(binary, *a, timeout=120)
    subprocess.run(["setcap", "cap_bpf=ep", binary], check=True)
    r = run("--compare", "--count", "200")
    assert r.returncode == 1 and r.stdout == "" and r.stderr == (
        "udsprobe: traced --compare needs root (CAP_BPF and CAP_PERFMON; this process lacks "
        "CAP_PERFMON): run it with sudo, or give the binary just those (setcap "
        "cap_bpf,cap_perfmon=ep udsprobe), or add --no-trace to run the workload only\n"), r
    r = run("--compare", "--server", "true {port} {unix}", "--client-tcp", "true {port}",
            "--client-unix", "true {unix}")
    assert r.returncode == 1 and "--compare of programs (it traces them) needs root" in r.stderr \
        and "lacks CAP_PERFMON" in r.stderr, r
    subprocess.run(["setcap", "cap_bpf,cap_perfmon=ep", binary], check=True)
    with perf_paranoid_at_most_2():     # README: a setcap binary wants 2 or less
        check = run("--check")
        r = run("--compare", "--mode", "pingpong", "--count", "300", "--json", str(out / "c.json"))
    assert check.returncode == 0 and "\nchosen: " in check.stdout, check
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "c.json").read_text())
    assert doc["attach_mode"] and len(doc["results"]) == 2, doc
    for res in doc["results"]:
        assert res["messages"] > 0 and res["stages"], res


def test_not_root_untraced_works(nobody_binary):
    res = run_as_nobody(nobody_binary, "--compare", "--no-trace", "--mode", "pingpong",
                        "--count", "200")
    assert res.returncode == 0, res.stderr
    assert "one-way p50" in res.stdout
