"""The private socket directory and the workload processes never outlive udsprobe:
normal exit, Ctrl-C (SIGINT to the process group), SIGTERM, SIGKILL."""
import os
import signal
import time

import pytest

from conftest import alive, proc_children, proc_tree, sockdir_of, wait_for

# pingpong over unix for 3 s, then tcp for 3 s: long enough to catch it mid-run
LONG_RUN = ("--compare", "--no-trace", "--mode", "pingpong", "--duration", "3")


def start_and_find(spawn):
    p = spawn(*LONG_RUN)
    d = wait_for(lambda: sockdir_of(p.pid), timeout=5)
    assert d, "no /tmp/udsprobe.* socket directory seen while udsprobe ran"
    assert os.path.isdir(d)
    assert os.stat(d).st_mode & 0o777 == 0o700
    # udsprobe, its janitor, the workload server and client (forked just after the server)
    tree = wait_for(lambda: (lambda t: t if len(t) >= 4 else None)(proc_tree(p.pid)), timeout=5)
    assert tree, proc_tree(p.pid)
    return p, d, tree


def assert_cleaned(d, tree, timeout=5):
    assert wait_for(lambda: not os.path.exists(d), timeout=timeout), f"{d} left behind"
    left = wait_for(lambda: not [p for p in tree if alive(p)], timeout=timeout)
    assert left, f"processes left behind: {[p for p in tree if alive(p)]}"


def test_sockdir_removed_after_normal_exit(spawn):
    p = spawn("--compare", "--no-trace", "--mode", "pingpong,connect", "--duration", "0.5")
    d = wait_for(lambda: sockdir_of(p.pid), timeout=5)
    assert d
    tree = proc_tree(p.pid)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    # removed by udsprobe itself before it exits, not only later by the janitor
    assert not os.path.exists(d)
    assert_cleaned(d, tree)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sockdir_removed_after_signal_to_group(spawn, sig):
    p, d, tree = start_and_find(spawn)
    os.killpg(p.pid, sig)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = p.communicate(timeout=10)
    # interrupted: says so, prints the results that were complete, exits 1 (runtime failure)
    assert p.returncode == 1, (p.returncode, err)
    assert "interrupted" in err, err
    assert "Traceback" not in err
    assert_cleaned(d, tree)


def test_second_ctrl_c_stops_at_once(spawn):
    p, d, tree = start_and_find(spawn)
    os.kill(p.pid, signal.SIGINT)
    os.kill(p.pid, signal.SIGINT)
    p.communicate(timeout=10)
    assert p.returncode != 0
    assert_cleaned(d, tree)


def test_sockdir_removed_after_sigkill(spawn):
    p, d, tree = start_and_find(spawn)
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGKILL)  # only udsprobe: its children must follow on their own
    p.wait(timeout=5)
    assert_cleaned(d, tree, timeout=5)
    assert time.monotonic() - t0 < 5


def test_janitor_holds_only_its_pipe(spawn):
    """The janitor outlives udsprobe by its clean-up: it must not keep udsprobe's BPF objects
    loaded or its one-at-a-time --compare lock held meanwhile (the next --compare waited on it)."""
    p = spawn("--compare", "--mode", "pingpong", "--duration", "3")  # traced: BPF fds exist
    d = wait_for(lambda: sockdir_of(p.pid), timeout=30)
    assert d, "no socket directory seen while udsprobe ran"
    janitors = [c for c in proc_children(p.pid) if alive(c) and os.getsid(c) == c]
    assert len(janitors) == 1, janitors

    def beyond_stdio():
        fds = {}
        for fd in os.listdir(f"/proc/{janitors[0]}/fd"):
            try:
                fds[int(fd)] = os.readlink(f"/proc/{janitors[0]}/fd/{fd}")
            except OSError:
                pass
        return {fd: what for fd, what in fds.items() if fd > 2}

    # the janitor closes them as it starts: give a busy machine time to run it
    extra = wait_for(lambda: (lambda e: e if len(e) == 1 else None)(beyond_stdio()),
                     timeout=5) or beyond_stdio()
    p.kill()
    p.wait(timeout=5)
    assert len(extra) == 1 and next(iter(extra.values())).startswith("pipe:"), extra
    assert_cleaned(d, [janitors[0]])


def test_no_sockdir_leak_over_runs(run):
    before = {e for e in os.listdir("/tmp") if e.startswith("udsprobe.")}
    for _ in range(3):
        res = run("--compare", "--no-trace", "--mode", "connect", "--count", "50")
        assert res.returncode == 0, res.stderr
    after = {e for e in os.listdir("/tmp") if e.startswith("udsprobe.")}
    # others may run udsprobe concurrently: only ours must be gone, and ours are gone by now
    assert not {e for e in after - before
                if wait_for(lambda e=e: not os.path.exists("/tmp/" + e), timeout=2) is False}
