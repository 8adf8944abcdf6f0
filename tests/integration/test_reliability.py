"""Reliability on a shared, hostile or busy host (issues 15 and 16; docs/RELIABILITY.md).

Root runs udsprobe; another user (uid 65534 through setpriv) plants symlinks, connects to
the workload's TCP port, or runs udsprobe itself. Every case is bounded (small --count,
timeouts) and stays on loopback; whatever a case starts is ended by PID.
"""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import alive, fdinfo_values, proc_tree, sockdir_of, wait_for

NOBODY = 65534
SMALL = ("--compare", "--no-trace", "--mode", "pingpong", "--count", "200")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (runs udsprobe as root "
                                "and switches to uid 65534)")


def as_nobody(*cmd, **kw):
    """Run cmd as uid/gid 65534 with no groups and no capabilities."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           "--inh-caps=-all", *map(str, cmd)], capture_output=True, text=True,
                          timeout=30, **kw)


@pytest.fixture
def shared_dir():
    """A directory every user may write, sticky like /tmp, and a root-only secret file."""
    d = tempfile.mkdtemp(prefix="udsprobe-rel-")
    os.chmod(d, 0o755)
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("root only\n")
    os.chmod(secret, 0o600)
    yield d, shared, secret
    shutil.rmtree(d, ignore_errors=True)


def read_until(p, word, timeout=20):
    end = time.monotonic() + timeout
    lines = []
    while time.monotonic() < end:
        line = p.stderr.readline()
        if not line:
            break
        if isinstance(line, bytes):
            line = utf8(line, "stderr")
        lines.append(line)
        if word in line:
            return lines
    raise AssertionError(f"'{word}' never printed:\n{''.join(lines)}")


def utf8(data, what):
    """Decode udsprobe's output, failing with the bytes around an invalid sequence."""
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise AssertionError(f"{what} is not UTF-8 at byte {e.start}: "
                             f"{data[max(0, e.start - 200):e.start + 60]!r}") from None


@pytest.fixture
def spawn_raw(udsprobe):
    """spawn() with byte pipes, so invalid UTF-8 in the output is shown, not a decode error."""
    procs = []

    def _spawn(*args):
        p = subprocess.Popen([udsprobe, *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def leftovers(d):
    """udsprobe's temporary files left in d."""
    return [e for e in os.listdir(d) if e.startswith(".udsprobe-") and e.endswith(".tmp")]


# ---- issue 16.1: --out ownership and planted symlinks ----------------------------------

def test_out_keeps_owner_of_existing_dir(run, tmp_path):
    d = tmp_path / "existing"
    d.mkdir()
    env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY))
    res = run(*SMALL, "--out", d, env=env)
    assert res.returncode == 0, res.stderr
    st = os.stat(d)
    assert (st.st_uid, st.st_gid) == (0, 0), "a directory udsprobe did not create changed owner"
    # the files it created are the sudo user's
    assert os.stat(d / "report.md").st_uid == NOBODY


def test_out_gives_created_dir_to_sudo_user(run, tmp_path):
    d = tmp_path / "new"
    env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY))
    res = run(*SMALL, "--out", d, env=env)
    assert res.returncode == 0, res.stderr
    assert os.stat(d).st_uid == NOBODY
    assert os.stat(d / "report.json").st_uid == NOBODY


@pytest.mark.parametrize("name", ["report.md", "report.json"])
def test_out_never_writes_through_planted_symlink(run, shared_dir, name):
    _, shared, secret = shared_dir
    link = os.path.join(shared, name)
    res = as_nobody("ln", "-s", secret, link)
    assert res.returncode == 0, res.stderr
    assert os.lstat(link).st_uid == NOBODY
    res = run(*SMALL, "--out", shared)
    assert res.returncode == 1, res.stderr
    assert "symbolic link" in res.stderr and name in res.stderr, res.stderr
    with open(secret) as f:
        assert f.read() == "root only\n"
    assert os.stat(secret).st_mode & 0o777 == 0o600
    assert os.path.islink(link)
    assert leftovers(shared) == []


@pytest.mark.parametrize("opt", ["--json", "--folded", "--svg"])
def test_file_output_never_writes_through_planted_symlink(run, shared_dir, opt):
    _, shared, secret = shared_dir
    link = os.path.join(shared, "out")
    assert as_nobody("ln", "-s", secret, link).returncode == 0
    args = ("--compare", "--mode", "pingpong", "--count", "200") if opt != "--json" else SMALL
    t0 = time.monotonic()
    res = run(*args, opt, link)
    assert res.returncode == 1, res.stderr
    assert "symbolic link" in res.stderr, res.stderr
    assert "[1/1]" not in res.stderr, "refused only after running the workload"
    assert time.monotonic() - t0 < 5
    with open(secret) as f:
        assert f.read() == "root only\n"
    assert leftovers(shared) == []


def test_out_refuses_symlinked_directory(run, shared_dir):
    d, shared, _ = shared_dir
    target = os.path.join(d, "rootdir")
    os.mkdir(target, 0o700)
    link = os.path.join(shared, "report")
    assert as_nobody("ln", "-s", target, link).returncode == 0
    res = run(*SMALL, "--out", link)
    assert res.returncode == 1, res.stderr
    assert "symbolic link" in res.stderr, res.stderr
    assert os.listdir(target) == []


def test_json_refuses_device(run):
    res = run(*SMALL, "--json", "/dev/null")
    assert res.returncode == 1, res.stderr
    assert "not a regular file" in res.stderr, res.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_json_replaces_file_atomically(run, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    res = run(*SMALL, "--json", out)
    assert res.returncode == 0, res.stderr
    json.loads(out.read_text())
    assert leftovers(tmp_path) == []


# ---- issue 16.12: outputs and placements checked before the run -------------------------

@pytest.mark.parametrize("opt,path", [
    ("--json", "/nonexistent-udsprobe/dir/x.json"),
    ("--out", "/nonexistent-udsprobe/dir"),
    ("--json", "/proc/version"),
])
def test_outputs_checked_before_running(run, opt, path):
    t0 = time.monotonic()
    res = run("--compare", "--no-trace", "--mode", "pingpong", "--duration", "5", opt, path)
    assert res.returncode == 1, res.stderr
    assert time.monotonic() - t0 < 3, "found only after the 5 s run"
    assert "untraced" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and opt in lines[0] and path in lines[0], res.stderr


def test_unwritable_out_as_nobody(nobody_binary, tmp_path):
    d = tmp_path / "rootonly"
    d.mkdir(mode=0o755)
    res = as_nobody(nobody_binary, *SMALL, "--out", d / "sub", cwd="/")
    assert res.returncode == 1, res.stderr
    assert "Permission denied" in res.stderr and "--out" in res.stderr, res.stderr
    assert "untraced" not in res.stderr


def test_placement_checked_before_running(udsprobe):
    # one allowed CPU: split cannot be honoured; say so before running 'same'
    res = subprocess.run(["taskset", "-c", "0", udsprobe, "--compare", "--no-trace", "--mode",
                          "pingpong", "--count", "200", "--cpu", "same,split"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1, res.stderr
    assert "--cpu split" in res.stderr and "untraced" not in res.stderr, res.stderr
    assert res.stdout == ""


def workload_children(pid):
    """udsprobe's workload processes now (its children, less the janitor in its own session)."""
    return [c for c in proc_tree(pid)[1:] if os.getsid(c) != c]


def test_failure_later_prints_what_completed(spawn):
    p = spawn("--compare", "--no-trace", "--mode", "pingpong,stream", "--duration", "1.5")
    read_until(p, "[2/2] stream   unix")
    kids = wait_for(lambda: workload_children(p.pid), timeout=5)
    assert kids
    os.kill(kids[0], signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 1, err
    assert "workload" in err and ("killed by signal 9" in err or "failed" in err), err
    assert "completed before it follow" in err, err
    assert "pingpong 64 B" in out and "stream 64 B" not in out, out


# ---- issue 16.13: stdout write failure --------------------------------------------------

@pytest.mark.parametrize("args", [SMALL, ("--list-stages",), ("--help",),
                                  SMALL + ("--json", "-"), ("--backlog", "--duration", "1"),
                                  ("--backlog", "--duration", "1.5", "--interval", "0.5")],
                         ids=["compare", "list-stages", "help", "json-stdout", "backlog-summary",
                              "backlog-intervals"])
def test_stdout_write_failure_exits_1(udsprobe, args):
    with open("/dev/full", "w") as full:
        res = subprocess.run([udsprobe, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                             timeout=30)
    assert res.returncode == 1, res.stderr
    assert res.stderr.count("standard output") == 1, res.stderr
    if "--help" not in args:  # argp writes and flushes help itself: only the failure is known
        assert "No space left on device" in res.stderr, res.stderr


# ---- issue 36.4: a closed stdout ----------------------------------------------------------

PROGRAMS = ("--compare", "--client-unix", "true", "--client-tcp", "true")


@pytest.mark.parametrize("args", [SMALL, SMALL + ("--json", "-"), PROGRAMS,
                                  PROGRAMS + ("--json", "-")],
                         ids=["compare", "json-stdout", "programs", "programs-json-stdout"])
def test_closed_stdout_exits_1_and_writes_nowhere(udsprobe, args):
    """With fd 1 closed the lock file was opened as fd 1 and got the report (exit 0)."""
    lock = "/run/udsprobe.lock"
    before = open(lock, "rb").read() if os.path.exists(lock) else b""
    res = subprocess.run([udsprobe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, timeout=60, preexec_fn=lambda: os.close(1))
    assert res.returncode == 1, res.stderr
    said = [l for l in res.stderr.splitlines() if "standard output" in l]
    assert len(said) == 1 and "Bad file descriptor" in said[0], res.stderr
    assert open(lock, "rb").read() == before, "the report went into the lock file"


# ---- issue 36.10: a resource limit is named as such ------------------------------------

def pids_cgroup_dir():
    """A fresh cgroup of the pids controller (v1 or v2), or None."""
    v1, v2 = "/sys/fs/cgroup/pids", "/sys/fs/cgroup"
    if os.path.exists(f"{v1}/cgroup.procs"):
        return tempfile.mkdtemp(prefix="udsprobe-pids-", dir=v1)
    ctl = f"{v2}/cgroup.subtree_control"
    if os.path.exists(ctl) and "pids" in open(ctl).read().split():
        return tempfile.mkdtemp(prefix="udsprobe-pids-", dir=v2)
    return None


@pytest.mark.parametrize("args", [SMALL, ("--trace", "--duration", "1", "--", "true")],
                         ids=["compare", "trace-command"])
def test_process_limit_is_named(udsprobe, args):
    """With no process left under pids.max, the janitor's fork fails: that is the process
    limit, not "cannot create a private socket directory in /tmp" (issue 36.10)."""
    cg = pids_cgroup_dir()
    if not cg:
        pytest.skip("no pids cgroup controller to limit")
    try:
        script = f'echo $$ > {cg}/cgroup.procs && echo 1 > {cg}/pids.max && exec "$@"'
        res = subprocess.run(["sh", "-c", script, "sh", udsprobe, *args], capture_output=True,
                             text=True, timeout=60)
    finally:
        os.rmdir(cg)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert "the process limit: pids.max" in lines[-1] and "/tmp" not in res.stderr, res.stderr


def memory_cgroup(limit):
    """A fresh cgroup of the memory controller (v1 or v2) limited to limit bytes, or None."""
    v1, v2 = "/sys/fs/cgroup/memory", "/sys/fs/cgroup"
    if os.path.exists(f"{v1}/cgroup.procs"):
        cg = tempfile.mkdtemp(prefix="udsprobe-mem-", dir=v1)
        Path(f"{cg}/memory.limit_in_bytes").write_text(str(limit))
        return cg
    ctl = f"{v2}/cgroup.subtree_control"
    if os.path.exists(ctl) and "memory" in open(ctl).read().split():
        cg = tempfile.mkdtemp(prefix="udsprobe-mem-", dir=v2)
        Path(f"{cg}/memory.max").write_text(str(limit))
        return cg
    return None


def test_memory_limit_is_named(udsprobe):
    """Under a 24 MB memory limit every attach mode failed to load with ENOMEM and the kernel
    was blamed ("no attach mode works on this kernel"): the memory limit is named."""
    cg = memory_cgroup(24_000_000)
    if not cg:
        pytest.skip("no memory cgroup controller to limit")
    try:
        script = f'echo $$ > {cg}/cgroup.procs && exec "$@"'
        res = subprocess.run(["sh", "-c", script, "sh", udsprobe, "--trace", "--duration", "1"],
                             capture_output=True, text=True, timeout=60)
    finally:
        os.rmdir(cg)
    if res.returncode == 0:
        pytest.skip("the BPF programs loaded within 24 MB here: nothing to name")
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "not enough memory to load the BPF programs (a memory limit" in res.stderr, res.stderr
    assert "no attach mode works" not in res.stderr, res.stderr
    # and what --trace asks most of: its preallocated flow map, with the option that sizes it
    assert re.search(r"the flow map alone is \d+ MiB: \d+ flows x \d+ CPUs x \d+ B; a smaller "
                     r"--max-flows takes less", res.stderr), res.stderr


# ---- issue 16.14: conflicting actions ---------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (("--compare", "--check"), ("--compare", "--check")),
    (("--check", "--compare"), ("--compare", "--check")),
    (("--backlog", "--check"), ("--backlog", "--check")),
    (("--backlog", "--compare"), ("--backlog", "--compare")),
    (("--list-stages", "--compare"), ("--list-stages", "--compare")),
    (("--backlog", "--count", "5"), ("--backlog", "--count")),
    (("--backlog", "--no-trace"), ("--backlog", "--no-trace")),
    (("--backlog", "--out", "x"), ("--backlog", "--out")),
    (("--backlog", "--mode", "pingpong"), ("--backlog", "--mode")),
    (("--check", "--json", "x"), ("--check", "--json")),
])
def test_conflicting_actions_exit_2(run, args, words):
    res = run(*args, timeout=10)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stdout == ""
    first = res.stderr.splitlines()[0]
    for w in words:
        assert w in first, first
    assert len(res.stderr.splitlines()) <= 2


# ---- issue 16.10: Ctrl-C during attach and calibration ----------------------------------

def test_ctrl_c_during_calibration_stops_promptly(spawn):
    p = spawn("--compare", "--mode", "pingpong", "--duration", "10")
    read_until(p, "calibrating")
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 3, "Ctrl-C waited for the first run"
    assert p.returncode == 1, err
    assert "interrupted" in err, err


# ---- issue 15.1: the workload talks only to itself -------------------------------------

POLLER = r"""
# uid 65534: poke every port it is told about (stdin, one per line) as fast as it can
import os, select, socket, sys, time
mode, life = sys.argv[1], float(sys.argv[2])
ports, held, end = set(), [], time.monotonic() + life
os.set_blocking(0, False)
print("ready", flush=True)
while time.monotonic() < end:
    if select.select([0], [], [], 0 if ports else 0.01)[0]:
        data = os.read(0, 4096)
        if not data:
            break
        ports |= {int(p) for p in data.split()}
    for port in list(ports):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
        except OSError:
            ports.discard(port)   # gone: that run ended
            continue
        if mode == "silent":      # connect, say nothing, keep it open
            held.append(s)
            ports.discard(port)   # one per port is enough to stall a naive server
        else:                     # connect and close at once
            s.close()
    time.sleep(0.0005)
"""


def udsprobe_listen_ports(pid):
    """127.0.0.1 TCP listening ports held by pid's process tree (ss asks sock_diag for
    listeners only: fast even with tens of thousands of TIME_WAIT sockets around)."""
    tree = set(proc_tree(pid))
    out = subprocess.run(["ss", "-Htnp", "state", "listening", "src", "127.0.0.1"],
                         capture_output=True, text=True).stdout
    ports = set()
    for line in out.splitlines():
        pids = {int(x) for x in re.findall(r"pid=(\d+)", line)}
        if pids & tree:
            ports.add(int(line.split()[2].rsplit(":", 1)[1]))
    return ports


class Poller:
    """A stranger (uid 65534) connecting to udsprobe's workload port. Root finds the ports
    of the watched udsprobe's own listeners (never anyone else's: other test suites may run
    on this machine) and hands them to the unprivileged process, which does the connecting."""

    def __init__(self, mode):
        self.p = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                                   "--clear-groups", "--inh-caps=-all", "/usr/bin/python3",
                                   "-c", POLLER, mode, "120"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd="/")
        assert self.p.stdout.readline().strip() == "ready"
        self.stop = threading.Event()
        self.thread = None

    def watch(self, pid):
        def loop():
            told = set()
            while not self.stop.is_set() and alive(pid):
                for port in udsprobe_listen_ports(pid) - told:
                    told.add(port)
                    try:
                        self.p.stdin.write(f"{port}\n")
                        self.p.stdin.flush()
                    except OSError:
                        return
                time.sleep(0.002)

        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=5)
        self.p.kill()
        self.p.wait()


@pytest.fixture
def poller():
    """poller(mode) -> Poller; call .watch(udsprobe_pid). Ended by PID at teardown."""
    made = []

    def _start(mode="close"):
        made.append(Poller(mode))
        return made[-1]

    yield _start
    for p in made:
        p.close()


def run_poked(spawn, poller, mode, *args, timeout=120):
    """Run udsprobe with a stranger poking its TCP port; (returncode, stdout, stderr)."""
    pk = poller(mode)
    p = spawn(*args)
    pk.watch(p.pid)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


@pytest.mark.parametrize("cpu", ["same", "split"])
@pytest.mark.parametrize("mode", ["pingpong", "stream", "connect"])
def test_strangers_do_not_break_the_run(spawn, poller, ncpus, mode, cpu):
    if cpu == "split" and ncpus < 2:
        pytest.skip("--cpu split needs 2 CPUs")
    # connect: enough connections (~0.3 s or more) for the stranger to find the port on a
    # loaded machine; the others are single-connection runs, attacked before they start
    count = 20000 if mode == "connect" and cpu == "same" else 3000  # split: ~50 us each
    rc, out, err = run_poked(spawn, poller, "close", "--compare", "--no-trace", "--mode", mode,
                             "--count", count, "--cpu", cpu, "--json", "-")
    assert rc == 0, err
    doc = json.loads(out)
    for r in doc["results"]:
        assert r["count"] == count, r
        assert isinstance(r["strangers"], int)
        if r["transport"] == "unix":
            assert r["strangers"] == 0  # the 0700 socket directory keeps them out
    tcp = [r for r in doc["results"] if r["transport"] == "tcp"][0]
    if mode == "connect":
        # connect mode listens for the whole run: the stranger certainly got in
        assert tcp["strangers"] > 0, tcp


def test_strangers_reported_in_text(spawn, poller):
    rc, out, err = run_poked(spawn, poller, "close", "--compare", "--no-trace", "--mode",
                             "connect", "--duration", "1")
    assert rc == 0, err
    assert "strangers:" in out and "refused" in out, out


def test_silent_stranger_does_not_hang_connect(spawn, poller):
    t0 = time.monotonic()
    # a connection that says nothing must cost the run its 2 s timeout, not hang it
    rc, out, err = run_poked(spawn, poller, "silent", "--compare", "--no-trace", "--mode",
                             "connect", "--duration", "1", "--json", "-", timeout=60)
    assert rc == 0, err
    assert time.monotonic() - t0 < 30
    tcp = [r for r in json.loads(out)["results"] if r["transport"] == "tcp"][0]
    assert tcp["count"] > 0
    assert tcp["strangers"] == 1, tcp


def test_traced_run_with_strangers(spawn, poller, attach_mode):
    args = ["--compare", "--mode", "pingpong,connect", "--count", "2000", "--json", "-"]
    args += ["--attach", attach_mode] if attach_mode else []
    rc, out, err = run_poked(spawn, poller, "close", *args)
    assert rc == 0, err
    for r in json.loads(out)["results"]:
        assert r["count"] == 2000


# ---- issue 16.11: two --compare at once ----------------------------------------------

def test_second_compare_waits_for_the_first(spawn):
    first = spawn("--compare", "--no-trace", "--mode", "pingpong", "--duration", "2")
    assert wait_for(lambda: sockdir_of(first.pid), timeout=5)
    second = spawn("--compare", "--no-trace", "--mode", "pingpong", "--count", "200")
    line = second.stderr.readline()
    assert "waiting for another udsprobe --compare" in line, line
    assert f"pid {first.pid}" in line, line
    read_until(second, "[1/1] pingpong unix")
    # the second one's workload starts only when the first is gone
    assert first.poll() is not None, "both ran at once"
    out, err = second.communicate(timeout=30)
    assert second.returncode == 0, err
    assert first.wait(timeout=10) == 0


def test_ctrl_c_while_waiting_for_the_lock(spawn):
    first = spawn("--compare", "--no-trace", "--mode", "pingpong", "--duration", "3")
    assert wait_for(lambda: sockdir_of(first.pid), timeout=5)
    second = spawn("--compare", "--no-trace", "--mode", "pingpong", "--count", "200")
    assert "waiting" in second.stderr.readline()
    t0 = time.monotonic()
    os.kill(second.pid, signal.SIGINT)
    out, err = second.communicate(timeout=10)
    assert time.monotonic() - t0 < 2
    assert second.returncode == 1 and "interrupted" in err, err
    assert first.poll() is None  # the first one carries on
    os.killpg(first.pid, signal.SIGINT)
    first.communicate(timeout=10)


def test_other_user_cannot_hold_the_lock(run):
    assert run(*SMALL).returncode == 0  # creates /run/udsprobe.lock if missing
    st = os.stat("/run/udsprobe.lock")
    assert st.st_uid == 0 and st.st_mode & 0o077 == 0, oct(st.st_mode)
    res = as_nobody("/usr/bin/python3", "-c", "open('/run/udsprobe.lock')")
    assert res.returncode != 0 and "Permission denied" in res.stderr, res.stderr


# ---- issue 16.15: reusing an --out directory ------------------------------------------

def traced(attach_mode, *args):
    return ("--compare", "--count", "500", *args) + (("--attach", attach_mode) if attach_mode
                                                     else ())


def test_out_reuse_replaces_exactly_its_own_files(run, tmp_path, attach_mode):
    d = tmp_path / "rep"
    res = run(*traced(attach_mode, "--mode", "pingpong", "--out", d), timeout=120)
    assert res.returncode == 0, res.stderr
    assert (d / "flame-pingpong-64B-same.svg").exists()
    (d / "notes.txt").write_text("mine")
    (d / "flame-mine.svg").write_text("<svg/>")  # looks like ours, but not in the manifest
    res = run(*traced(attach_mode, "--mode", "stream", "--out", d), timeout=120)
    assert res.returncode == 0, res.stderr
    names = set(os.listdir(d))
    assert "flame-stream-64B-same.svg" in names
    assert "flame-pingpong-64B-same.svg" not in names, "previous run's picture left behind"
    assert "diff-pingpong-64B-same.svg" not in names
    assert {"notes.txt", "flame-mine.svg", "report.md", "report.json"} <= names
    assert leftovers(d) == []


def test_out_ignores_a_planted_manifest(run, shared_dir):
    d, shared, secret = shared_dir
    victim = os.path.join(shared, "udsprobe.svg")  # a name udsprobe uses, someone else's file
    as_nobody("sh", "-c", f"echo theirs > {victim}")
    manifest = os.path.join(shared, ".udsprobe-manifest")
    as_nobody("sh", "-c", f"printf 'udsprobe.svg\\n../secret\\nreport.md\\n' > {manifest}")
    res = run(*SMALL, "--out", shared)
    assert res.returncode == 0, res.stderr
    with open(victim) as f:
        assert f.read() == "theirs\n"
    assert os.path.exists(secret)
    assert os.path.exists(os.path.join(shared, "report.md"))
    # the manifest is now udsprobe's own, not the planted one
    st = os.lstat(manifest)
    assert st.st_uid == 0


def test_out_reuse_untraced_after_traced(run, tmp_path, attach_mode):
    d = tmp_path / "rep"
    assert run(*traced(attach_mode, "--mode", "pingpong", "--out", d),
               timeout=120).returncode == 0
    res = run(*SMALL, "--out", d)
    assert res.returncode == 0, res.stderr
    assert sorted(e for e in os.listdir(d)) == [".udsprobe-manifest", "report.json", "report.md"]


# ---- issue 15.2: signals at every phase leave nothing behind ---------------------------

def loaded_prog_ids():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"] for p in json.loads(out)}


PHASES = {
    # phase: (extra args, stderr text that marks it, delay after it)
    "load": ((), None, 0.05),
    "calibration": ((), "calibrating", 0.0),
    "untraced": ((), "pingpong unix       64 B cpu=same untraced", 0.2),
    "traced": ((), "pingpong unix       64 B cpu=same traced", 0.2),
    # the pingpong pair is complete: its report must be written whole, nothing else
    "with-out": (("--out", "{tmp}/rep"), "stream   tcp        64 B cpu=same traced", 0.2),
    # nothing complete yet (the pingpong pair still has its tcp traced run ahead, ~1 s of
    # margin): the --out directory udsprobe created goes again
    "with-out-early": (("--out", "{tmp}/rep"), "pingpong unix       64 B cpu=same traced", 0.05),
}


@pytest.mark.parametrize("phase,sig", [(ph, signal.SIGINT) for ph in PHASES] +
                         [("traced", signal.SIGTERM)])
def test_signal_at_every_phase_leaves_nothing(spawn_raw, tmp_path, attach_mode, phase, sig):
    extra, mark, delay = PHASES[phase]
    extra = tuple(a.replace("{tmp}", str(tmp_path)) for a in extra)
    args = ("--compare", "--mode", "pingpong,stream", "--duration", "0.5") + extra
    args += ("--attach", attach_mode) if attach_mode else ()
    p = spawn_raw(*args)
    if mark:
        read_until(p, mark)
    time.sleep(delay)
    tree = proc_tree(p.pid)
    progs = fdinfo_values(tree, "prog_id")
    sockdir = sockdir_of(p.pid)
    if phase != "load":
        assert progs, "no BPF programs seen while tracing"
    t0 = time.monotonic()
    os.killpg(p.pid, sig)
    out, err = p.communicate(timeout=20)
    out, err = utf8(out, "stdout"), utf8(err, "stderr")
    assert time.monotonic() - t0 < 5, f"took {time.monotonic() - t0:.1f} s to stop"
    assert p.returncode == 1, (p.returncode, err)
    assert "interrupted" in err, err
    assert wait_for(lambda: not [q for q in tree if alive(q)], timeout=5), "processes left"
    if sockdir:
        assert wait_for(lambda: not os.path.exists(sockdir), timeout=5), f"{sockdir} left"
    assert wait_for(lambda: not (progs & loaded_prog_ids()), timeout=5), \
        f"BPF programs left loaded: {progs & loaded_prog_ids()}"
    rep = tmp_path / "rep"
    if phase == "with-out":
        assert leftovers(rep) == []
        doc = json.loads(utf8((rep / "report.json").read_bytes(), "report.json"))
        assert {r["mode"] for r in doc["results"]} == {"pingpong"}
        utf8((rep / "report.md").read_bytes(), "report.md")
        assert (rep / "flame-pingpong-64B-same.svg").exists()
    elif phase == "with-out-early":
        assert not rep.exists(), os.listdir(rep)


def test_second_signal_while_writing_leaves_no_temp_file(spawn, tmp_path, attach_mode):
    # a second SIGINT right after the first: udsprobe dies at once, wherever it was; no
    # half-written report and no temporary file may remain
    rep = tmp_path / "rep"
    args = ("--compare", "--mode", "pingpong,stream", "--duration", "0.5", "--out", rep)
    args += ("--attach", attach_mode) if attach_mode else ()
    for gap in (0.0, 0.005):
        p = spawn(*args)
        read_until(p, "stream   tcp        64 B cpu=same traced")
        time.sleep(0.2)
        os.kill(p.pid, signal.SIGINT)
        time.sleep(gap)
        os.kill(p.pid, signal.SIGINT)
        p.communicate(timeout=20)
        assert p.returncode != 0
        if rep.exists():
            assert leftovers(rep) == []
            for name in os.listdir(rep):
                if name == "report.json":
                    json.loads((rep / name).read_text())


def test_second_signal_removes_the_out_dir_it_made(spawn, tmp_path, attach_mode):
    # two signals during the calibration, before anything was written: the directory udsprobe
    # created for --out goes with it (the fatal path removes it, as it removes temporary files)
    rep = tmp_path / "rep"
    p = spawn("--compare", "--mode", "pingpong", "--count", "100000", "--out", rep,
              *(("--attach", attach_mode) if attach_mode else ()))
    read_until(p, "calibrating")
    time.sleep(0.3)
    assert rep.is_dir()
    os.kill(p.pid, signal.SIGINT)
    time.sleep(0.005)       # two at once would merge into one pending signal
    os.kill(p.pid, signal.SIGINT)
    p.communicate(timeout=20)
    assert p.returncode == -signal.SIGINT      # the second one's path: died of it
    assert not rep.exists(), os.listdir(rep)


# ---- issue 15.2: unprivileged user, read-only cwd, missing TMPDIR ------------------------

def test_nobody_untraced_works_anywhere(nobody_binary):
    # cwd "/" is not writable for uid 65534; TMPDIR points nowhere
    res = as_nobody("env", "TMPDIR=/nonexistent-udsprobe", nobody_binary, *SMALL, "--json", "-",
                    cwd="/")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["results"]


@pytest.mark.parametrize("args", [("--compare", "--count", "100"), ("--backlog", "--duration", "1"),
                                  ("--check",)], ids=["compare", "backlog", "check"])
def test_nobody_traced_fails_with_one_line(nobody_binary, args):
    res = as_nobody(nobody_binary, *args, cwd="/")
    assert res.returncode == 1, res.stderr
    errs = [l for l in res.stderr.splitlines() if l.startswith("udsprobe:")]
    assert len(errs) == 1 and ("root" in errs[0] or "CAP_BPF" in errs[0]), res.stderr


def in_readonly_dir(udsprobe, tmp_path, *args):
    """Run udsprobe with its cwd on a read-only bind mount, in a private mount namespace
    (nothing to unmount afterwards)."""
    d = tmp_path / "ro"
    d.mkdir()
    script = 'mount --bind -o ro "$1" "$1" && cd "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                           "sh", str(d), udsprobe, *args], capture_output=True, text=True,
                          timeout=60)


def test_readonly_cwd_untraced_works(udsprobe, tmp_path):
    res = in_readonly_dir(udsprobe, tmp_path, *SMALL)
    assert res.returncode == 0, res.stderr
    assert "one-way p50" in res.stdout


@pytest.mark.parametrize("opt,path", [("--json", "r.json"), ("--out", "rep")])
def test_readonly_cwd_output_refused_before_run(udsprobe, tmp_path, opt, path):
    res = in_readonly_dir(udsprobe, tmp_path, "--compare", "--no-trace", "--mode", "pingpong",
                          "--count", "200", opt, path)
    assert res.returncode == 1, res.stderr
    assert "Read-only file system" in res.stderr and "untraced" not in res.stderr, res.stderr
