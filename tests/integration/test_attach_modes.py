"""Proof that the attach mode is real: what udsprobe loads and attaches, seen from outside.

The mode under test is --attach / UDSPROBE_ATTACH, else what `udsprobe --check` chooses.
tests/vm/run-matrix.sh runs this file once per mode a guest kernel supports. While a traced
--compare runs, the BPF programs and links its processes hold (their /proc/PID/fdinfo) are
looked up with `bpftool prog/link/perf show -j`:

  fentry      tracing links with attach type fentry/fexit; no kprobe programs or events
  kprobe      kprobe programs on kprobe/kretprobe perf events; no fentry/fexit links
  tracepoint  raw (BTF) tracepoint links beyond the common ones; no fentry/fexit, no kprobes

In every mode the syscall and sched_switch tracepoints are attached too (COMMON_TPS). After
udsprobe exits, none of its programs or links may remain. The JSON of the same run must have
function-level (three-frame) stage names in fentry/kprobe mode and none in tracepoint mode.

A mode the kernel lacks is not skipped: forcing it must fail with exit 1 and the reason
--check gives (on our 6.18 hosts: fentry and kprobe). UDSPROBE_EXPECT_MODES="fentry kprobe
tracepoint" (the VM matrix sets it for stock kernels) makes a missing mode a failure.
"""
import ctypes
import json
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import DEFERRED_SOFTIRQ, fdinfo_values, partition_counts, proc_tree, wait_for

MODES = ("fentry", "kprobe", "tracepoint")
COMMON_TPS = {"sys_enter", "sys_exit", "sched_switch"}  # attached in every mode
GUEST = os.environ.get("UDSVM") == "1"  # qemu TCG: everything is 5-30x slower
# seconds per workload run (4 runs: untraced + traced, 2 transports); in a 6.12 TCG guest the
# traced runs of 1 s gave 6-7 samples (tracepoint), 10-12 (kprobe), 29-32 (fentry: slow detach)
DURATION = 1
RUN_TIMEOUT = 180 if GUEST else 60
# stages every mode has, named by the syscall/scheduler boundaries, never function-level
ALWAYS_STAGES = {"send;syscall", "send;return", "sched;wait_cpu", "recv;return", "app;gap"}
FUNC_STAGE = {"tcp": "rx_softirq;ip_tcp_in;tcp_v4_rcv", "unix": "send;sock;skb_copy_datagram_from_iter"}
MIN_FUNC_PROBES = 8  # fentry/kprobe mode attaches many more; one or two would be a fallback

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)")


def bpftool(*args):
    """bpftool -j ARGS, parsed. A listing fails when an object goes away while bpftool walks
    the ids (link show: "can't get link by id (N): Resource temporarily unavailable"): retry."""
    for _ in range(50):
        res = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=60)
        if res.returncode == 0:
            return json.loads(res.stdout or "[]")
        time.sleep(0.05)
    pytest.fail(f"bpftool {' '.join(args)} failed: {res.stdout}{res.stderr}")


# ---- what --check says -------------------------------------------------------------------

@pytest.fixture(scope="module")
def check(udsprobe):
    """{'works': {mode: bool}, 'why': {mode: str}, 'chosen': mode, 'text': stdout}."""
    res = subprocess.run([udsprobe, "--check"], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert res.returncode == 0, f"--check exit {res.returncode}: {res.stderr}"
    works, why = {}, {}
    for line in res.stdout.splitlines():
        m = re.match(r"^(fentry|kprobe|tracepoint)\s+(yes|no)\s+(\S.*)$", line)
        if m:
            works[m[1]] = m[2] == "yes"
            why[m[1]] = m[3].strip()
    m = re.search(r"^chosen: (\w+)", res.stdout, re.M)
    return {"works": works, "why": why, "chosen": m[1] if m else None, "text": res.stdout}


@pytest.fixture(scope="module")
def mode(attach_mode, check):
    """The mode under test: --attach / UDSPROBE_ATTACH, else what --check chose."""
    m = attach_mode or check["chosen"]
    assert m in MODES, f"mode under test {m!r} (from --attach or --check) is not one of {MODES}"
    return m


def test_check_reports_every_mode(check):
    text = check["text"]
    assert set(check["works"]) == set(MODES), f"--check does not report all three modes:\n{text}"
    for m in MODES:
        assert check["why"][m], f"--check gives no reason for {m}:\n{text}"
    first = next((m for m in MODES if check["works"][m]), None)
    assert check["chosen"] == first, f"--check chose {check['chosen']}, but {first} is the best working mode:\n{text}"
    expect = os.environ.get("UDSPROBE_EXPECT_MODES", "").replace(",", " ").split()
    missing = [m for m in expect if not check["works"].get(m)]
    assert not missing, (f"UDSPROBE_EXPECT_MODES={' '.join(expect)} but this kernel "
                         f"({os.uname().release}) lacks {missing}:\n{text}")


def assert_forced_mode_fails(udsprobe, check, m, tmp_path):
    """Forcing a mode --check says does not work: exit 1, the reason, no output, fast."""
    out = tmp_path / f"forced-{m}.json"
    t0 = time.monotonic()
    res = subprocess.run([udsprobe, "--compare", "--attach", m, "--mode", "pingpong", "--count", "50",
                          "--json", str(out)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    took = time.monotonic() - t0
    assert res.returncode == 1, f"--attach {m} on a kernel without it: exit {res.returncode}, want 1\n{res.stderr}"
    assert f"--attach {m}" in res.stderr, f"the error does not name the forced mode:\n{res.stderr}"
    assert check["why"][m] in res.stderr, (f"the error does not give --check's reason "
                                           f"({check['why'][m]!r}):\n{res.stderr}")
    assert "--check" in res.stderr, f"the error does not point to --check:\n{res.stderr}"
    assert not out.exists(), "a failed run wrote a JSON result"
    assert "sched;wait_cpu" not in res.stdout, f"a failed run printed a stage table:\n{res.stdout}"
    assert took < (60 if GUEST else 10), f"failing took {took:.1f}s: it should fail before any workload"


@pytest.mark.parametrize("m", MODES)
def test_forced_mode_the_kernel_lacks_fails_clearly(udsprobe, check, m, tmp_path):
    if check["works"].get(m):
        pytest.skip(f"{m} works on this kernel ({check['why'][m]}); a run with "
                    f"UDSPROBE_ATTACH={m} proves it (tests/vm/run-matrix.sh does)")
    assert_forced_mode_fails(udsprobe, check, m, tmp_path)


# ---- one traced run in the mode under test, watched from outside ------------------------

class Watch:
    """Union of what a running udsprobe had attached, sampled while it traced."""

    def __init__(self):
        self.progs = {}  # id -> bpftool prog show entry
        self.links = {}  # id -> bpftool link show entry
        self.perf = {}  # (fd_type, func or tracepoint, prog_id) -> entry
        self.samples = 0

    def sample(self, root_pid):
        pids = proc_tree(root_pid)
        prog_ids, link_ids = fdinfo_values(pids, "prog_id"), fdinfo_values(pids, "link_id")
        if not link_ids and not prog_ids:
            return
        self.samples += 1
        for p in bpftool("prog", "show"):
            if p["id"] in prog_ids:
                self.progs[p["id"]] = p
        for ln in bpftool("link", "show"):
            if ln["id"] in link_ids:
                self.links[ln["id"]] = ln
        for e in bpftool("perf", "show"):
            if e.get("pid") in pids:
                self.perf[(e.get("fd_type"), e.get("func") or e.get("tracepoint"), e.get("prog_id"))] = e

    # classification
    def fentry_links(self):
        return [ln for ln in self.links.values() if ln.get("type") == "tracing"
                and re.search(r"fentry|fexit", str(ln.get("attach_type", "")))]

    def raw_tp_names(self):
        names = {ln.get("tp_name") for ln in self.links.values() if ln.get("type") == "raw_tracepoint"}
        names |= {e.get("tracepoint") for e in self.perf.values() if e.get("fd_type") == "raw_tracepoint"}
        return names - {None}

    def kprobe_events(self):
        return [e for e in self.perf.values() if e.get("fd_type") in ("kprobe", "kretprobe")]

    def kprobe_progs(self):
        return [p for p in self.progs.values() if p.get("type") == "kprobe"]

    def describe(self):
        def short(x):
            return {k: x[k] for k in ("id", "type", "name", "attach_type", "tp_name", "prog_id",
                                      "fd_type", "func", "tracepoint") if k in x}
        return ("programs:\n  " + "\n  ".join(json.dumps(short(p)) for p in self.progs.values()) +
                "\nlinks:\n  " + "\n  ".join(json.dumps(short(ln)) for ln in self.links.values()) +
                "\nperf events:\n  " + "\n  ".join(json.dumps(short(e)) for e in self.perf.values()))


@pytest.fixture(scope="module")
def traced(udsprobe, check, mode, tmp_path_factory):
    """Run `--compare --attach MODE` in the background; sample its BPF objects while it
    traces (after it reports a traced run); after it exits, list which of them remain."""
    if not check["works"].get(mode):
        return None
    tmp = tmp_path_factory.mktemp("attach")
    out_json, out_txt = tmp / "result.json", tmp / "stdout.txt"
    with open(out_txt, "w") as stdout:
        p = subprocess.Popen([udsprobe, "--compare", "--attach", mode, "--mode", "pingpong",
                              "--duration", str(DURATION), "--json", str(out_json)],
                             stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines, tracing = [], threading.Event()

    def read_stderr():
        for line in p.stderr:
            lines.append(line)
            if re.search(r"\btraced\b", line):
                tracing.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    watch = Watch()
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while p.poll() is None and time.monotonic() < deadline:
            if tracing.wait(0.05):
                watch.sample(p.pid)
        if p.poll() is None:
            os.killpg(p.pid, 9)
            pytest.fail(f"udsprobe --attach {mode} ran longer than {RUN_TIMEOUT}s:\n{''.join(lines)}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
        p.wait()
        reader.join(5)
    rc = p.returncode
    ids = set(watch.progs)
    link_ids = set(watch.links)

    def leftovers():
        return ({q["id"] for q in bpftool("prog", "show")} & ids,
                {ln["id"] for ln in bpftool("link", "show")} & link_ids)

    # closing the last fd frees programs asynchronously (RCU, trampoline teardown)
    wait_for(lambda: leftovers() == (set(), set()), timeout=30 if GUEST else 10, step=0.2)
    left_progs, left_links = leftovers()
    doc = json.loads(out_json.read_text()) if rc == 0 and out_json.exists() else None
    return {"rc": rc, "stderr": "".join(lines), "stdout": out_txt.read_text(), "json": doc,
            "watch": watch, "left_progs": left_progs, "left_links": left_links}


def test_traced_run_succeeds_in_mode(udsprobe, check, mode, traced, tmp_path):
    if not check["works"].get(mode):
        # asked for a mode this kernel lacks (e.g. UDSPROBE_ATTACH=kprobe on our hosts)
        assert_forced_mode_fails(udsprobe, check, mode, tmp_path)
        return
    assert traced["rc"] == 0, f"udsprobe --attach {mode} exit {traced['rc']}:\n{traced['stderr']}"
    assert traced["watch"].samples > 0, (f"never saw udsprobe's BPF programs while it traced "
                                         f"(stderr:\n{traced['stderr']})")
    doc = traced["json"]
    assert doc["attach_mode"] == mode, f"JSON attach_mode {doc['attach_mode']!r}, forced {mode}"
    assert "forced" in doc["attach_reason"], doc["attach_reason"]
    assert f"attach mode {mode}" in traced["stderr"], traced["stderr"]


def needs_traced(check, mode, traced):
    if traced is None:
        pytest.skip(f"{mode} does not work on this kernel: test_traced_run_succeeds_in_mode asserts the failure")
    assert traced["rc"] == 0, f"udsprobe --attach {mode} failed:\n{traced['stderr']}"
    return traced["watch"]


def test_attached_programs_are_of_the_mode(check, mode, traced):
    w = needs_traced(check, mode, traced)
    info = w.describe()
    extra_tps = w.raw_tp_names() - COMMON_TPS
    if mode == "fentry":
        fl = w.fentry_links()
        kinds = {str(ln.get("attach_type")) for ln in fl}
        assert len(fl) >= MIN_FUNC_PROBES, f"only {len(fl)} fentry/fexit links:\n{info}"
        assert any("fentry" in k for k in kinds) and any("fexit" in k for k in kinds), f"{kinds}\n{info}"
        assert all(w.progs.get(ln["prog_id"], {}).get("type", "tracing") == "tracing" for ln in fl), info
    elif mode == "kprobe":
        ev = w.kprobe_events()
        kinds = {e["fd_type"] for e in ev}
        assert len(ev) >= MIN_FUNC_PROBES, f"only {len(ev)} kprobe/kretprobe events:\n{info}"
        assert kinds == {"kprobe", "kretprobe"}, f"{kinds}\n{info}"
        for e in ev:
            assert w.progs.get(e["prog_id"], {}).get("type") == "kprobe", f"{e}\n{info}"
    else:
        assert len(extra_tps) >= 3, (f"tracepoint mode attached only {sorted(w.raw_tp_names())} "
                                     f"(want the stage tracepoints too):\n{info}")


def test_no_programs_of_another_mode(check, mode, traced):
    w = needs_traced(check, mode, traced)
    info = w.describe()
    if mode != "fentry":
        assert not w.fentry_links(), f"{mode} mode has fentry/fexit links:\n{info}"
    if mode != "kprobe":
        assert not w.kprobe_events(), f"{mode} mode has kprobe events:\n{info}"
        assert not w.kprobe_progs(), f"{mode} mode has kprobe programs:\n{info}"
    if mode != "tracepoint":
        extra = w.raw_tp_names() - COMMON_TPS
        assert not extra, f"{mode} mode attached stage tracepoints {sorted(extra)}:\n{info}"


def test_nothing_left_after_exit(check, mode, traced):
    w = needs_traced(check, mode, traced)
    assert not traced["left_progs"], (f"programs {sorted(traced['left_progs'])} still loaded after "
                                      f"udsprobe exited:\n{w.describe()}")
    assert not traced["left_links"], f"links {sorted(traced['left_links'])} still exist after exit"


def test_stage_granularity_matches_mode(check, mode, traced):
    needs_traced(check, mode, traced)
    doc = traced["json"]
    by_transport = {r["transport"]: r for r in doc["results"]}
    assert set(by_transport) == {"unix", "tcp"}, list(by_transport)
    for t, r in by_transport.items():
        names = [s["name"] for s in r["stages"]]
        deep = [n for n in names if n.count(";") >= 2]
        # every message crosses every boundary the mode sees, whichever context ran it: a
        # stage that counted fewer messages has a probe that did not fire or a path udsprobe
        # does not follow. kernel_misses counts runs the kernel skipped machine-wide (most are
        # other tasks' hits nested in softirq), so it explains a shortfall but is not one.
        for name, count in partition_counts(r["stages"], r["bulk_messages"]):
            want = r["messages"] - 1 if name == "app;gap" else r["messages"]
            assert count == want, (
                f"{t}: stage {name} counted {count} of {r['messages']} messages in "
                f"{mode} mode (kernel skipped {r['kernel_misses']} program runs): "
                f"{[(x['name'], x['count']) for x in r['stages']]}")
        if mode == "tracepoint":
            assert doc["stage_granularity"] == "tracepoint"
            assert not deep, f"{t}: function-level stages in tracepoint mode: {deep}"
            continue
        assert doc["stage_granularity"] == "function", doc["stage_granularity"]
        assert FUNC_STAGE[t] in names, f"{t}: no {FUNC_STAGE[t]} stage in {mode} mode: {names}"
        for n in names:
            if n.split("+")[0] in ALWAYS_STAGES:
                continue
            if n.startswith("bulk;"):
                continue      # sliced by who runs, in every mode
            if n.startswith(DEFERRED_SOFTIRQ):
                assert n == DEFERRED_SOFTIRQ + ";wait", n
                continue
            assert n.count(";") == 2, f"{t}: stage {n!r} is not function-level in {mode} mode: {names}"
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", n.split(";")[2]), f"{t}: odd leaf in {n!r}"


@pytest.mark.deep
def test_reattach_while_another_process_holds_the_old_links(udsprobe, check, mode):
    """A link udsprobe destroys stays attached while another process holds it (`bpftool link
    show` takes each link by id for a moment); attaching the same program again fails meanwhile
    (EEXIST at a tracepoint, EBUSY at a trampoline). A CI's 6.1 guest hit it between the unix
    and the TCP traced runs of --compare: before 6.10 a raw tracepoint registers the program
    itself, not its link, so the old registration and the new are the same. Here a holder
    takes every link of the unix run by id and keeps them 0.5 s after udsprobe let go: the TCP
    run attaches once they are gone."""
    if not check["works"].get(mode):
        pytest.skip(f"{mode} does not work here (test_forced_mode_the_kernel_lacks_fails_clearly)")
    if mode == "kprobe":
        pytest.skip("a kprobe link is a perf event of its own: the program attaches to a new one "
                    "beside a held one")
    if mode == "tracepoint" and tuple(map(int, re.findall(r"\d+", os.uname().release)[:2])) >= (6, 10):
        pytest.skip("from 6.10 a raw tracepoint registers the link, not the program: a held "
                    "link does not stand in the way")
    libc = ctypes.CDLL(None, use_errno=True)
    nr_bpf = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
    bpf_link_get_fd_by_id = 30

    def take(link_id):
        attr = (ctypes.c_uint32 * 3)(link_id, 0, 0)
        return libc.syscall(nr_bpf, bpf_link_get_fd_by_id, attr, ctypes.sizeof(attr))

    cmd = [udsprobe, "--compare", "--mode", "pingpong", "--size", "64", "--cpu", "same",
           "--duration", "0.5", "--warmup", "0", "--attach", mode, "--verbose"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    held, lines = {}, []
    try:
        for line in p.stderr:
            lines.append(line)
            if re.search(r"\bunix\b.*\btraced\b", line):
                break
        # the unix run's links, each taken by id while udsprobe holds it
        while p.poll() is None:
            ids = fdinfo_values(proc_tree(p.pid), "link_id")
            if held and not ids & set(held):
                break       # udsprobe let go of them
            for i in ids - set(held):
                fd = take(i)
                if fd >= 0:
                    held[i] = fd
            time.sleep(0.005)
        time.sleep(0.5)
    finally:
        for fd in held.values():
            os.close(fd)
        stderr = "".join(lines) + p.stderr.read()
        p.wait(timeout=RUN_TIMEOUT)
    assert p.returncode == 0, stderr
    if "cannot re-attach a detached fentry program" in stderr:
        pytest.skip("this kernel keeps fentry programs attached from the first run to the end: "
                    "no re-attach to wait for")
    assert held, stderr
    assert re.search(r"\btcp\b.*\btraced\b", stderr), stderr
