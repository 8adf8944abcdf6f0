"""The bench's floor loader (.output/hooks_floor, scripts/hooks_floor.c): it attaches an empty
program on exactly the hooks `udsprobe --trace` attaches in tracepoint mode (compared link by
link with a running udsprobe's, filtered and unfiltered), and with `--compare unix|tcp` on
exactly those of `udsprobe --compare`'s traced run of that transport (compared with the links a
running --compare holds during each traced run); holds them until stdin's EOF or SIGTERM, then
exits 0 with every program gone; a bad argument exits 2. Host only (tracepoint mode, the mode
the bench measures)."""
import collections
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import bpf_links, wait_for

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="loads BPF: needs root")


@pytest.fixture(scope="session")
def floor():
    """Path of the loader: $HOOKS_FLOOR, else the repo's .output/hooks_floor (built if missing)."""
    path = Path(os.environ.get("HOOKS_FLOOR", REPO / ".output" / "hooks_floor"))
    if "HOOKS_FLOOR" not in os.environ and not path.exists():
        res = subprocess.run(["make", "-C", str(REPO), ".output/hooks_floor"],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.exit(f"cannot build hooks_floor:\n{res.stdout}{res.stderr}", returncode=1)
    return str(path)


def links_of(pid):
    """{(link_type, tp_name): count} and {prog_tag} of the BPF links process pid holds."""
    links = bpf_links(pid)
    return (collections.Counter((l["link_type"], l.get("tp_name")) for l in links),
            {l["prog_tag"] for l in links})


def prog_ids(pid):
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        m = re.search(r"^prog_id:\s*(\d+)", Path(f"/proc/{pid}/fdinfo/{fd}").read_text(), re.M)
        if m:
            ids.add(int(m[1]))
    return ids


def prog_exists(prog_id):
    return subprocess.run(["bpftool", "prog", "show", "id", str(prog_id)],
                          capture_output=True).returncode == 0


def udsprobe_links(udsprobe, args):
    tracer = subprocess.Popen([udsprobe, "--trace", "--attach", "tracepoint", *args],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = tracer.stderr.readline()
        assert "tracing" in line, line
        return links_of(tracer.pid)[0]
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.communicate(timeout=60)


def start_floor(floor, args):
    p = subprocess.Popen([floor, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.match(r"ready: (\d+) hooks: (.*)$", line)
    if not m:
        p.kill()
        raise AssertionError(f"no ready line: {line!r} {p.communicate()[1]!r}")
    return p, int(m[1]), m[2].split()


@pytest.mark.parametrize("filtered", [False, True], ids=["unfiltered", "filtered"])
def test_same_hooks_as_udsprobe(udsprobe, floor, filtered):
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        want = udsprobe_links(udsprobe, ["--pid", str(sleeper.pid)] if filtered else [])
    finally:
        sleeper.kill()
        sleeper.wait()
    p, n, hooks = start_floor(floor, ["--filtered"] if filtered else [])
    try:
        got, tags = links_of(p.pid)
        progs = prog_ids(p.pid)
    finally:
        p.stdin.close()
        assert p.wait(timeout=30) == 0, p.stderr.read()
    assert got == want
    assert n == len(hooks) == sum(got.values())
    # tp_btf/sys_enter and the send/recv boundaries in every case; fork/exit follow the filter
    assert {"sys_enter", "sock_send_length", "sock_recv_length"} <= {t for _, t in got}
    assert (("raw_tracepoint", "sched_process_fork") in got) == filtered
    assert len(tags) == 1, f"not one empty body: {tags}"
    assert progs and wait_for(lambda: not any(prog_exists(i) for i in progs), timeout=10)


def compare_traced_links(udsprobe):
    """{transport: links} a running `udsprobe --compare` holds during each transport's traced run
    (sampled: of the sets with a transport's own boundary, the largest, since a sample may fall
    while the links are being attached or destroyed)."""
    p = subprocess.Popen([udsprobe, "--compare", "--attach", "tracepoint", "--mode", "pingpong",
                          "--size", "64", "--cpu", "same", "--count", "50000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = {}
    try:
        while p.poll() is None:
            links = links_of(p.pid)[0]
            tps = {t for _, t in links}
            tr = "unix" if "sock_send_length" in tps else "tcp" if "tcp_sendmsg_locked" in tps else None
            if tr and sum(links.values()) > sum(seen.get(tr, {}).values()):
                seen[tr] = links
    finally:
        assert p.wait(timeout=120) == 0
    return seen


def test_same_hooks_as_compare(udsprobe, floor):
    want = compare_traced_links(udsprobe)
    assert set(want) == {"unix", "tcp"}, want
    for tr in ("unix", "tcp"):
        p, n, hooks = start_floor(floor, ["--compare", tr])
        try:
            got, tags = links_of(p.pid)
        finally:
            p.stdin.close()
            assert p.wait(timeout=30) == 0, p.stderr.read()
        assert got == want[tr], tr
        assert n == len(hooks) == sum(got.values())
        assert len(tags) == 1, f"not one empty body: {tags}"
    # the syscall and scheduler hooks in both; each transport's own boundaries in its own only
    assert {"sys_enter", "sys_exit", "sched_switch", "consume_skb"} <= {t for _, t in want["unix"]}
    assert {"sys_enter", "sys_exit", "sched_switch", "tcp_sendmsg_locked",
            "net_dev_queue"} <= {t for _, t in want["tcp"]}
    assert "tcp_sendmsg_locked" not in {t for _, t in want["unix"]}


def test_sigterm_detaches(floor):
    p, n, _ = start_floor(floor, [])
    progs = prog_ids(p.pid)
    assert len(progs) >= 3
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 0, p.stderr.read()
    assert wait_for(lambda: not any(prog_exists(i) for i in progs), timeout=10)


def test_bad_argument(floor):
    for args in (["--pid"], ["--compare"], ["--compare", "udp"], ["--filtered", "x"]):
        res = subprocess.run([floor, *args], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2, args
        assert res.stderr == "usage: hooks_floor [--filtered | --compare unix|tcp]\n", args
        assert res.stdout == "", args
