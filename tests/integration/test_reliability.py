"""Reliability on a shared, hostile or busy host (issues 15 and 16; docs/RELIABILITY.md).

Root runs udsprobe; another user (uid 65534 through setpriv) plants symlinks, connects to
the workload's TCP port, or runs udsprobe itself. Every case is bounded (small --count,
timeouts) and stays on loopback; whatever a case starts is ended by PID.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import alive, proc_tree, sockdir_of, wait_for

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
