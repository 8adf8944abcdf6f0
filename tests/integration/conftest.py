"""Shared fixtures for udsprobe's integration tests (run as root, real binary, real kernel).

    /usr/bin/python3 -m pytest tests/integration            # or: tests/run.sh integration
    UDSPROBE=/path/to/udsprobe ... pytest ...                # test another build
    pytest --attach tracepoint  (or UDSPROBE_ATTACH=...)     # attach mode for traced runs
"""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption(
        "--attach",
        default=os.environ.get("UDSPROBE_ATTACH") or None,
        help="attach mode traced tests pass to udsprobe --attach "
        "(fentry, kprobe, tracepoint; default: env UDSPROBE_ATTACH, else udsprobe's own choice)",
    )


@pytest.fixture(scope="session")
def udsprobe():
    """Path of the udsprobe binary: $UDSPROBE, else the repo's ./udsprobe (built if missing)."""
    env_path = os.environ.get("UDSPROBE")
    if env_path:
        path = Path(env_path).resolve()
        if not os.access(path, os.X_OK):
            pytest.exit(f"UDSPROBE={env_path} is not an executable file", returncode=1)
        return str(path)
    path = REPO / "udsprobe"
    if not path.exists():
        res = subprocess.run(["make", "-C", str(REPO), "udsprobe"], capture_output=True, text=True)
        if res.returncode != 0:
            pytest.exit(f"cannot build udsprobe:\n{res.stdout}{res.stderr}", returncode=1)
    return str(path)


@pytest.fixture(scope="session")
def attach_mode(request):
    """The --attach value for traced runs, or None to let udsprobe choose."""
    return request.config.getoption("--attach")


@pytest.fixture(scope="session")
def is_root():
    return os.geteuid() == 0


@pytest.fixture(scope="session")
def ncpus():
    return len(os.sched_getaffinity(0))


@pytest.fixture
def run(udsprobe):
    """run(*args, timeout=60, **kw) -> CompletedProcess with text stdout/stderr."""

    def _run(*args, timeout=60, **kw):
        return subprocess.run([udsprobe, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, **kw)

    return _run


@pytest.fixture
def run_json(run, tmp_path):
    """run_json(*args) -> (parsed JSON, CompletedProcess); asserts exit 0."""

    def _run_json(*args, **kw):
        out = tmp_path / "result.json"
        res = run(*args, "--json", out, **kw)
        assert res.returncode == 0, f"exit {res.returncode}\nstderr:\n{res.stderr}"
        return json.loads(out.read_text()), res

    return _run_json


# ---- process and socket-directory helpers -----------------------------------------------

SOCKDIR_RE = re.compile(r"^/tmp/udsprobe\.[A-Za-z0-9]{6}$")


def free_port():
    """A TCP port free on 127.0.0.1 now (the kernel's pick): a port derived from the pid can
    be an ephemeral port some connection holds (seen: "bind: Address already in use")."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_children(pid):
    """Direct children of pid (from /proc/*/stat)."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parens
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def proc_tree(pid):
    """pid and all its descendants that exist now."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(proc_children(p))
    return out


def alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def proc_fd_matches(pids, read, pattern):
    """Integers PATTERN's first group finds in read(pid, fd) over every fd these processes
    hold (an fd that closes meanwhile, or a process gone, is skipped)."""
    pat = re.compile(pattern, re.M)
    values = set()
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                m = pat.search(read(p, fd))
            except OSError:
                continue
            if m:
                values.add(int(m[1]))
    return values


def fdinfo_values(pids, key):
    """Values of KEY ("prog_id", "link_id") in the fdinfo of every fd these processes hold:
    the BPF objects they have open (a link's fd names its program too), never another
    instance's on the same machine."""
    return proc_fd_matches(pids, lambda p, fd: Path(f"/proc/{p}/fdinfo/{fd}").read_text(),
                           rf"^{key}:\s*(\d+)")


def bpf_links(pid):
    """The fdinfo fields (link_type, prog_id, prog_tag, tp_name, ...) of every BPF link process
    pid holds, one dict each."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf_link":
                continue
            out.append(dict(re.findall(r"^(\w+):\s*(\S+)",
                                       Path(f"/proc/{pid}/fdinfo/{fd}").read_text(), re.M)))
        except OSError:
            continue
    return out


def socket_inodes(pids):
    return proc_fd_matches(pids, lambda p, fd: os.readlink(f"/proc/{p}/fd/{fd}"),
                           r"^socket:\[(\d+)\]")


def sockdir_of(pid):
    """The /tmp/udsprobe.XXXXXX directory of a running udsprobe, found through the AF_UNIX
    sockets its process tree holds (/proc/net/unix), or None while it has none bound."""
    inodes = socket_inodes(proc_tree(pid))
    # other processes' abstract names can be any bytes (the reliability tests' are not UTF-8)
    with open("/proc/net/unix", errors="surrogateescape") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and int(parts[6]) in inodes:
                d = os.path.dirname(parts[7])
                if SOCKDIR_RE.match(d):
                    return d
    return None


def wait_for(cond, timeout=5.0, step=0.02):
    """Poll cond() until truthy or timeout; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


@pytest.fixture
def spawn(udsprobe):
    """spawn(*args) -> Popen in its own process group (killed at teardown if still running)."""
    procs = []

    def _spawn(*args):
        p = subprocess.Popen([udsprobe, *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


DEFERRED_SOFTIRQ = "rx_softirq;deferred"


def partition_counts(stages, bulk_messages=0):
    """[(name, count)] of the message stages, each counting the messages that crossed it. A
    TCP message whose NET_RX softirq ran outside the send (ksoftirqd, a later irq exit) has
    rx_softirq;deferred instead of the stage ending at the softirq (the row just before it):
    for those two, the sum is what crossed the boundary. A message in several chunks is
    sliced after its first data-ready (bulk;* rows, each counting every such message) and
    skips the boundary rows that follow them: those count it back here."""
    out, after_bulk = [], False
    for s in stages:
        if s.get("per_connection"):
            continue
        if s["name"].startswith("bulk;"):
            assert s["count"] == bulk_messages, (s, bulk_messages)
            after_bulk = True
            continue
        if after_bulk and s["name"] != "app;gap":
            out.append((s["name"], s["count"] + bulk_messages))
            continue
        if s["name"].startswith(DEFERRED_SOFTIRQ):
            assert out, "rx_softirq;deferred cannot be the first stage"
            name, count = out[-1]
            out[-1] = (f"{name} (+deferred)", count + s["count"])
            continue
        out.append((s["name"], s["count"]))
    return out


BACKLOG_ASSETS = REPO / "tests" / "backlog"


def compile_helpers(tmp_path_factory, names, prefix):
    """Compile tests/backlog/<name>.c for each name into a dir others can traverse; {name: path}."""
    out = tmp_path_factory.mktemp(prefix)
    os.chmod(out, 0o755)
    res = {}
    for name in names:
        subprocess.run(["gcc", "-O2", "-Wall", "-o", str(out / name),
                        str(BACKLOG_ASSETS / f"{name}.c")], check=True)
        res[name] = str(out / name)
    return res


@pytest.fixture
def procs():
    """start(argv, **popen_kw) -> Popen in its own process group; at teardown every group gets
    SIGTERM, and SIGKILL if it is still there 5 s later."""
    started = []

    def start(argv, **kw):
        kw.setdefault("start_new_session", True)
        p = subprocess.Popen(argv, **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 5
    for p in started:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        for f in (p.stdout, p.stderr, p.stdin):
            if f:
                f.close()


@pytest.fixture(scope="module")
def nobody_binary(udsprobe):
    """A copy of udsprobe that uid 65534 can execute (the repo may sit in a 0700 dir)."""
    d = tempfile.mkdtemp(prefix="udsprobe-test-")
    os.chmod(d, 0o755)
    dst = os.path.join(d, "udsprobe")
    shutil.copy2(udsprobe, dst)
    os.chmod(dst, 0o755)
    yield dst
    shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def perf_paranoid_at_most_2(lower=True):
    """Inside: kernel.perf_event_paranoid at most 2 (when lower), as in the docs' unit set-up;
    Debian's kernels add 3, where perf_event_open (classic tracepoints, kprobes) needs
    CAP_SYS_ADMIN whatever else is held. Restored after."""
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    old_level = paranoid.read_text().strip()
    try:
        if lower and int(old_level) > 2:
            paranoid.write_text("2\n")
        yield
    finally:
        paranoid.write_text(old_level + "\n")


def cgroup2_root():
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on a hybrid
    host), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split()[:1] == ["cgroup2"]:
                return Path(pre.split()[4])
    return None


@pytest.fixture
def test_cgroup():
    """A cgroup v2 directory of its own under the cgroup v2 root, as (dir, path as /proc/PID/cgroup
    shows it); move a process in with `(dir / "cgroup.procs").write_text(str(pid))` or by
    writing "0" from a preexec_fn. At teardown every process still in it is killed and the
    directory removed."""
    root = cgroup2_root()
    if not root:
        pytest.skip("no cgroup v2 hierarchy mounted")
    d = Path(tempfile.mkdtemp(prefix="udsprobe-test-", dir=root))
    try:
        yield d, "/" + d.name
    finally:
        deadline = time.time() + 10
        while True:
            pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.time() > deadline:
                break
            time.sleep(0.05)
        try:
            d.rmdir()
        except OSError:
            time.sleep(0.5)
            d.rmdir()


def pytest_configure(config):
    # tests/vm/run-matrix.sh deselects these in the guests UDSPROBE_VM_CORE names (-m "not deep")
    config.addinivalue_line("markers", "deep: checks the VM matrix need not run in every mode "
                            "of every kernel (test_stages.py: size-, placement- and "
                            "signal-dependent; test_backlog.py: the iterators, whichever mode, "
                            "and real servers, whose hooks the synthetic tests check)")
    # tests/vm/guest-suite.sh deselects these in every guest (-m "not userspace")
    config.addinivalue_line("markers", "userspace: udsprobe's own user-space behaviour (usage "
                            "errors, output streams, the metrics HTTP server, unit files) that "
                            "depends on neither kernel nor attach mode: the host run checks it")
    # --trace's prediction over a unix socket (docs/PREDICT.md): off unless a test asks for it
    # (--if-unix), and its calibration cached in a directory of this session, never in the
    # machine's /var/cache
    os.environ.setdefault("UDSPROBE_IF_UNIX", "off")
    if "UDSPROBE_CACHE_DIR" not in os.environ:
        _session_cache.append(tempfile.mkdtemp(prefix="udsprobe-cache-"))
        os.environ["UDSPROBE_CACHE_DIR"] = _session_cache[0]


_session_cache = []


def pytest_unconfigure(config):
    for d in _session_cache:
        shutil.rmtree(d, ignore_errors=True)
