"""udsprobe --backlog under a hostile host (issue 16, items 2-9): host-only, root, bounded.

Each test failed before its fix. Attacker-side actions run as an unprivileged user
(setpriv --reuid=65534) against root's udsprobe; namespace cases use unshare -n / -m.
Every process started here is killed by pid (process group) at teardown.
"""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "tests" / "backlog"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--backlog needs root")


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    out = tmp_path_factory.mktemp("reliability-bins")
    os.chmod(out, 0o755)
    res = {}
    for name in ("listen_noaccept", "connect_burst", "fork_clients", "raw_connect"):
        subprocess.run(["gcc", "-O2", "-Wall", "-o", str(out / name), str(ASSETS / f"{name}.c")],
                       check=True)
        res[name] = str(out / name)
    return res


@pytest.fixture
def procs():
    """start(argv, **kw) -> Popen in its own process group, killed at teardown."""
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
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
        for f in (p.stdout, p.stderr, p.stdin):
            if f:
                f.close()


@pytest.fixture
def wdir():
    d = Path(tempfile.mkdtemp(prefix="udsprobe-rel."))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_watch(udsprobe, procs, args):
    """udsprobe --backlog in the background, after its start line."""
    p = procs([udsprobe, "--backlog", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True)
    line = p.stdout.readline()
    if not line.startswith("udsprobe --backlog: attach mode"):
        p.wait(timeout=10)
        pytest.fail(f"udsprobe did not start: {line!r} {p.stderr.read()}")
    return p, line


def finish(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{err}"
    return out, err


def jsonl(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]


def listen_ready(procs, argv, **kw):
    srv = procs(argv, stdout=subprocess.PIPE, text=True, **kw)
    line = srv.stdout.readline()
    assert line.startswith("ready"), line
    return srv, int(line.split()[1])


# ---- item 2: --prom temp file and target ------------------------------------------------

def test_prom_tmp_symlink_not_followed(udsprobe, procs, wdir):
    """A user who can write the --prom directory plants symlinks at the temp names
    root will use; root must not write through them (old name: PATH.tmp.PID)."""
    shared = wdir / "textfile"
    shared.mkdir()
    os.chmod(shared, 0o777)                 # shared, not sticky: symlinks are followed there
    victim = wdir / "victim"
    victim.write_text("SECRET\n")
    os.chmod(victim, 0o600)
    prom = shared / "node.prom"
    p, _ = start_watch(udsprobe, procs, ["--quiet", "--interval", "0.2", "--duration", "1.5",
                                         "--prom", prom])
    for name in (f"node.prom.tmp.{p.pid}", ".node.prom.tmp", "node.prom.tmp"):
        subprocess.run([*NOBODY, "ln", "-sf", str(victim), str(shared / name)], check=True)
    finish(p)
    assert victim.read_text() == "SECRET\n"
    st = os.lstat(prom)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    assert stat.S_IMODE(st.st_mode) == 0o644
    assert "udsprobe_backlog_last_update_timestamp_seconds" in prom.read_text()
    leftovers = [f.name for f in shared.iterdir() if f.name.startswith(".node.prom.tmp.")]
    assert not leftovers


@pytest.mark.parametrize("kind", ["device", "symlink", "directory"])
def test_prom_refuses_non_regular_target(udsprobe, wdir, kind):
    target = wdir / "node.prom"
    if kind == "device":
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 7))   # a /dev/full of our own
    elif kind == "symlink":
        (wdir / "real").write_text("keep\n")
        target.symlink_to(wdir / "real")
    else:
        target.mkdir()
    res = subprocess.run([udsprobe, "--backlog", "--duration", "0.3", "--prom", str(target)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1, res.stderr
    assert "not a regular file" in res.stderr and str(target) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    mode = os.lstat(target).st_mode
    assert {"device": stat.S_ISCHR, "symlink": stat.S_ISLNK, "directory": stat.S_ISDIR}[kind](mode)
    if kind == "symlink":
        assert (wdir / "real").read_text() == "keep\n"
