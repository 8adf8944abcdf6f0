"""udsprobe --trace's matching where messages went wrong (issue 36): replies a receiver never
reads (its socket closed, or its process killed, with them queued) are counted in
socket_closed_unread, not lost silently; two processes writing one AF_UNIX socket get their
own messages under their own names, or named misses; the report says what its miss counters
mean for the run and where the flows of unnamed endpoints went. Every test starts and stops its own processes on
loopback under -- COMMAND, so the counts are the command's alone."""
import json
import os
import re
import sys
from pathlib import Path

import pytest

from test_trace import run_trace, flows_at, check_top_contract, trace  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[2]
UNREAD = str(REPO / "tests" / "trace" / "unread_pair.py")
TWO = str(REPO / "tests" / "trace" / "two_senders.py")
MANY = str(REPO / "tests" / "trace" / "many_endpoints.py")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--trace loads BPF: needs root")


def traced_command(trace, tmp_path, cmd, key):
    """Run cmd under --trace -- cmd: (its JSON line holding key, the document, the run)."""
    res, doc = run_trace(trace, tmp_path, ["--"] + cmd)
    assert res.returncode == 0, res.stderr
    info = next(json.loads(l) for l in res.stdout.splitlines() if f'"{key}"' in l)
    check_top_contract(doc, trace)
    assert doc["command"] == {"argv": cmd, "exit_status": 0}
    return info, doc, res


@pytest.mark.parametrize("transport", ["unix", "tcp"])
@pytest.mark.parametrize("how", ["close", "kill"])
def test_replies_never_read_are_counted(trace, tmp_path, transport, how):
    """The client sends one request and never reads the server's 7 replies, then closes its
    socket or is SIGKILLed: the request is the one message, the 7 replies are
    socket_closed_unread (b7007db: 0 on both transports, the replies nowhere)."""
    n = 7
    sock = [str(tmp_path / "unread.sock")] if transport == "unix" else []
    cmd = [sys.executable, UNREAD, transport] + sock + [str(n), how]
    info, doc, res = traced_command(trace, tmp_path, cmd, "replies")
    flows = flows_at(doc, info["endpoint"])
    assert [(f["sender"]["pids"], f["receiver"]["pids"], f["messages"], f["bytes"])
            for f in flows] == [([info["client_pid"]], [info["server_pid"]], 1, 32)], doc
    assert doc["misses"]["socket_closed_unread"] == n, doc["misses"]
    assert f"socket_closed_unread {n}" in res.stdout


def test_two_processes_writing_one_socket(trace, tmp_path):
    """A parent and its forked child (w_par, w_kid) each send 10000 x 64 B on one end of a
    socketpair, a third process reads: every flow is one real sender (its comm and its pid
    only), no sender has more messages than it sent, every message is in a flow or a named
    miss (fifo_full: the reader fell behind; concurrent_send: the two recorded at the same
    instant), every byte read had a sender (socket_unknown 0) and no flow's median is 0.
    b7007db took one FIFO slot and one byte position for two sends at once: flows of
    invented names (w_pad), pids of both, 10011 messages for one sender, in 3 of 4 runs.
    41dc19e: one message never completed in ~1 of 24 runs (the other writer's send, its
    bytes queued, or already read, before the first boundary and its own boundary after it:
    counted twice). Three runs: the races need the two writers to meet at the first send."""
    n, size = 10000, 64
    cmd = [sys.executable, TWO, str(n), str(size), "0.0001"]
    for _ in range(3):
        res, doc = run_trace(trace, tmp_path, ["--"] + cmd)
        assert res.returncode == 0, res.stderr
        info = next(json.loads(l) for l in res.stdout.splitlines() if '"senders"' in l)
        pair = flows_at(doc, "socketpair")
        assert all(f["latency_ns"]["p50"] > 0 for f in pair), pair
        flows = [(f["sender"]["comm"], f["sender"]["pids"], f["messages"], f["bytes"])
                 for f in pair]
        senders = info["senders"]
        for comm, pids, msgs, nbytes in flows:
            assert comm in senders and pids == [senders[comm]], flows
            assert msgs <= n and nbytes == msgs * size, flows
        lost = doc["misses"]["fifo_full"] + doc["misses"].get("concurrent_send", 0)
        total = sum(f[2] for f in flows) + lost
        assert total == 2 * n, (flows, doc["misses"])
        assert doc["misses"]["socket_unknown"] == 0, doc["misses"]
        check_top_contract(doc, trace)
        assert doc["command"] == {"argv": cmd, "exit_status": 0}


# a parent and its child over a socketpair, N 64-byte round trips (no asyncio: its self-pipe
# would be one more flow)
PAIR = """
import os, socket, sys
a, b = socket.socketpair()
if os.fork() == 0:
    for _ in range(int(sys.argv[1])):
        b.sendall(b.recv(64))
    os._exit(0)
for _ in range(int(sys.argv[1])):
    a.sendall(b"x" * 64)
    a.recv(64)
os.wait()
"""


def test_max_flows_bounds_the_kernel_flow_map(trace, tmp_path):
    """--max-flows 2: the first pair's two directions fill the kernel's flow map, and every
    message of the two pairs after it is counted in flow_map_full; the report gives the
    map's size, its memory and the option."""
    n = 200
    (tmp_path / "pair.py").write_text(PAIR)
    script = "; ".join([f"{sys.executable} {tmp_path}/pair.py {n}"] * 3)
    args = trace + ["--max-flows", "2"]
    res, doc = run_trace(args, tmp_path, ["--", "sh", "-c", script])
    assert res.returncode == 0, res.stderr
    check_top_contract(doc, args)
    assert doc["flow_map"]["entries"] == 2, doc["flow_map"]
    assert [f["messages"] for f in doc["flows"]] == [2 * n], doc["flows"]
    assert doc["misses"]["flow_map_full"] == 4 * n, doc["misses"]
    kib = doc["flow_map"]["bytes"] / 1024    # two flows: under a MiB, said in KiB
    assert kib < 1024, doc["flow_map"]
    assert (f"flow_map_full {4 * n}: messages of flows the flow maps had no room for (the "
            f"kernel's: 2 flows at once, {kib:.0f} KiB on {doc['flow_map']['cpus']} CPUs, "
            f"--max-flows sets it; user space keeps 4096)") in res.stdout, res.stdout[-1500:]


def test_report_says_what_misses_mean(trace, tmp_path):
    """5000 unix endpoints in one command, one flow each: more than the flow map (4096) and
    the name map (4096) hold. The flows of the names lost mostly found no room either
    (flow_map_full): the report says how many messages are under "unix:unnamed", or that
    none is, instead of "their flows are under unix:unnamed" with no such flow (b7007db); every non-zero miss counter has a line saying
    what it means and for whom it was counted."""
    cmd = [sys.executable, MANY, str(tmp_path / "eps"), "5000"]
    res, doc = run_trace(trace, tmp_path, ["--"] + cmd)
    assert res.returncode == 0, res.stderr
    assert doc["endpoint_names_lost"] > 0 and doc["misses"]["flow_map_full"] > 0, doc["misses"]
    unnamed = flows_at(doc, "unix:unnamed")
    assert 'flows are under "unix:unnamed"' not in res.stdout, res.stdout[-2000:]
    if unnamed:  # a few flows of lost names can still find room
        msgs = sum(f["messages"] for f in unnamed)
        want = f'{msgs} messages of their flows are in {len(unnamed)} flow'
    else:
        want = 'no flow is under "unix:unnamed"'
    assert want in res.stdout, res.stdout[-2000:]
    assert "Counted for the processes followed:" in res.stdout, res.stdout[-2000:]
    for name, n in doc["misses"].items():
        if n:
            assert re.search(rf"^  {name} {n}: \S", res.stdout, re.M), (name, res.stdout[-2000:])
