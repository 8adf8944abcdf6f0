"""--trace's kernel stages (issue 29): send;call cut at the kernel boundaries the sender's
own context crosses, and the receiver's stages cut where it runs again and where its copy
ends, named as --compare names its stages. Real programs under -- COMMAND on
loopback: a Python echo pair over each transport, and udsprobe's own --compare workload
traced as a foreign program beside its built-in tracer."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import free_port
from test_trace import (run_trace, flows_at, check_top_contract, check_network_stages, kstages,
                        parent_ns, commandstats_calls, trace, redis, ECHO)  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]
SLOW = str(REPO / "tests" / "trace" / "slow_pair.py")
HOGS = str(REPO / "tests" / "trace" / "bulk_hogs.py")


def has_tracepoint(system, name):
    return any(Path(root, "events", system, name).is_dir()
               for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_echo_pair_kernel_stages(trace, tmp_path, transport):
    """2000 x 64 B echoed by an asyncio pair: on TCP the TCP/IP output, the loopback device
    and the receive softirq are stages of their own, each non-zero (named as --compare names
    them, merged where the kernel lacks a tracepoint); AF_UNIX has none of them; on both they add up to send;call (the contract every --trace test checks), the
    text report shows them under it and --out's folded stacks draw them in its place."""
    n, size = 2000, 64
    sock = [str(tmp_path / "echo.sock")] if transport == "unix" else []
    cmd = [sys.executable, ECHO, transport] + sock + [str(n), str(size)]
    full = trace + ["--detail", "full"]
    res, doc = run_trace(full + ["--out", str(tmp_path / "out")], tmp_path, ["--"] + cmd)
    assert res.returncode == 0, res.stderr
    check_top_contract(doc, full)
    info = next(json.loads(l) for l in res.stdout.splitlines() if '"client_pid"' in l)
    [f] = flows_at(doc, info["endpoint"])
    assert f["messages"] == 2 * n
    k = kstages(f)
    # a kernel without sk_data_ready (before 6.3) merges the stage it ends into the next
    ready = has_tracepoint("sock", "sk_data_ready")
    if transport == "tcp":
        tcp = ({"rx_softirq;ip_tcp_in", "deliver;enqueue_wakeup"} if ready else
               {"rx_softirq;ip_tcp_in+enqueue_wakeup"}) | {"send;dev_xmit", "rx_softirq;backlog",
                                                          "send;return"}
        assert tcp <= set(k), k
        assert len([n for n in k if n.startswith("send;") and n.endswith("tcp_ip_out")]) == 1, k
        assert all(v > 0 for v in k.values()), k
    else:
        assert not any("tcp" in name or "rx_softirq" in name or "dev_xmit" in name
                       for name in k), k
        assert set(k) == ({"send;syscall+sock", "deliver;enqueue_wakeup"} if ready else
                          {"send;syscall+sock+enqueue_wakeup"}), k
    # the receiver's side, the same names on both transports: an asyncio loop waits in
    # epoll, runs again (sched;wait_cpu), returns from it, then reads (copy, return)
    assert list(kstages(f, "wait;epoll")) == ["sched;wait_cpu", "wait;epoll_return"], f
    assert kstages(f, "wait;epoll")["sched;wait_cpu"] > 0, f
    rcv = kstages(f, "recv;copy+return")
    assert list(rcv) == ["recv;copy", "recv;return"] and rcv["recv;copy"] > 0, f
    if parent_ns(f, "recv;blocked"):
        assert list(kstages(f, "recv;blocked")) == ["sched;wait_cpu", "recv;copy", "recv;return"]
    for name in k:
        assert f"    {name} " in res.stdout, (name, res.stdout)
    folded = next((tmp_path / "out").glob(f"flow-1-{transport}-*.folded")).read_text()
    frames = [l.rsplit(" ", 1)[0] for l in folded.splitlines()]
    assert frames[:len(k)] == [name for name in k if round(k[name]) > 0]
    assert "wait;epoll_return" in frames and "recv;copy" in frames, frames
    assert "wait;epoll" not in frames and "recv;copy+return" not in frames, frames


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_redis_connection_per_incr(trace, tmp_path, redis, transport):
    """A C client opening one connection per INCR (tests/trace/incr_per_conn.c) to a real
    redis-server: requests and replies exact against redis' own count, and the kernel stages
    of each: TCP's output, loopback device and receive softirq non-zero on TCP, none on
    AF_UNIX, where a connection carries one message each way."""
    port, sock = redis
    client = tmp_path / "incr_per_conn"
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(client),
                    str(REPO / "tests" / "trace" / "incr_per_conn.c")], check=True)
    n = 200 if os.environ.get("UDSVM") else 2000
    subprocess.run(["redis-cli", "-s", str(sock), "config", "resetstat"], check=True,
                   capture_output=True)
    full = trace + ["--detail", "full"]
    res, doc = run_trace(full, tmp_path, ["--", str(client), transport,
                                          str(sock) if transport == "unix" else str(port),
                                          str(n)], timeout=300)
    assert res.returncode == 0, res.stderr
    check_top_contract(doc, full)
    info = json.loads(res.stdout.splitlines()[0])
    assert info["requests"] == n and commandstats_calls(sock)["incr"] == n
    flows = flows_at(doc, info["endpoint"])
    by = {(f["sender"]["comm"], f["receiver"]["comm"]): f for f in flows}
    req, rep = by[("incr_per_conn", "redis-server")], by[("redis-server", "incr_per_conn")]
    lost = {k: doc[k] for k in ("misses", "socket_states_evicted", "program_runs_skipped")}
    # every message counted, or named: in the 6.1 kprobe guest 1 run in 6 lost one or two,
    # counted as socket_unknown (no send seen) or socket_closed_unread (not matched when its
    # receiver closed; redis read every request: commandstats above) - issue 36 item 3;
    # receive_unseen where the closing socket's read position shows it was read
    named = sum(doc["misses"][k] for k in ("socket_unknown", "receive_unseen",
                                           "socket_closed_unread"))
    assert len(flows) == 2 and 2 * n - req["messages"] - rep["messages"] == named, \
        ([(f["messages"], f["connections"], f["misses"]) for f in flows], json.dumps(lost))
    assert req["messages"] <= n and rep["messages"] <= n, json.dumps(lost)
    assert req["connections"] == req["messages"] and rep["connections"] == rep["messages"], \
        (req, rep)
    for f in (req, rep):
        check_network_stages(f)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_connection_per_greeting(trace, tmp_path, transport):
    """The classic connect-per-message benchmark (scripts/recipes/greet.py: the server sends a
    12-byte greeting and closes, the client connects, reads to EOF and closes), 3000
    connections (300 in a guest): every greeting counted, one connection each, and its
    kernel stages: TCP's output, loopback device and receive softirq on TCP, none on AF_UNIX."""
    n = 300 if os.environ.get("UDSVM") else 3000
    greet = [sys.executable, str(REPO / "scripts" / "recipes" / "greet.py")]
    where = (["--unix", str(tmp_path / "greet.sock")] if transport == "unix" else
             ["--port", str(free_port())])
    cmd = ["sh", "-c", f"{shlex.join(greet + ['server'] + where)} & s=$!; "
           f"for i in $(seq 100); do {shlex.join(greet + ['client'] + where + ['-n', '1'])} "
           f">/dev/null 2>&1 && break; sleep 0.05; done; "
           f"{shlex.join(greet + ['client'] + where + ['-n', str(n)])}; r=$?; kill $s; exit $r"]
    full = trace + ["--detail", "full"]
    res, doc = run_trace(full, tmp_path, ["--"] + cmd, timeout=300)
    assert res.returncode == 0, res.stderr
    check_top_contract(doc, full)
    endpoint = where[1] if transport == "unix" else f"127.0.0.1:{where[1]}"
    [f] = flows_at(doc, endpoint)
    # the client that waited for the server's socket made one more connection
    assert f["messages"] == n + 1 and f["connections"] == n + 1, (f["messages"], doc["misses"])
    assert f["bytes"] == 12 * (n + 1)
    check_network_stages(f)


def all_kstages(f):
    """Every kernel stage of a flow summed by name over the stages it is part of."""
    out = {}
    for k in f["kernel_stages"]:
        out[k["name"]] = out.get(k["name"], 0) + k["ns_per_msg"]
    return out


SEND_SIDE = ("send;", "rx_softirq;", "deliver;")


def send_boundaries(stages):
    """The sender's side in path order as {boundary: ns since the send() entry}: a stage is
    known by the boundary that ends it, its name's last part (send;syscall+sock ends where
    send;sock does), so a mode that merges two stages still meets the other at their end."""
    at, out = 0.0, {}
    for name, ns in stages:
        if not name.startswith(SEND_SIDE) or name.startswith("send;return"):
            break
        at += ns
        # a function-level name (fentry, kprobe: send;sock;unix_stream_sendmsg) is part of
        # its stage (send;sock)
        out[name.split(";")[1].split("+")[-1]] = at
    return out


def stage_level(stages):
    """--compare's stages summed by stage (group;stage), function-level names folded in."""
    out = {}
    for s in stages:
        name = ";".join(s["name"].split(";")[:2])
        out[name] = out.get(name, 0) + s["ns_per_msg"]
    return out


def compared_send_stages(trace_stages, compare_stages):
    """(stage, --trace ns, --compare ns) between consecutive boundaries both tracers have."""
    a, b = send_boundaries(trace_stages), send_boundaries(compare_stages)
    common = [k for k in a if k in b]
    out, pa, pb, prev = [], 0.0, 0.0, "entry"
    for k in common:
        out.append((f"{prev}..{k}", a[k] - pa, b[k] - pb))
        pa, pb, prev = a[k], b[k], k
    return out


def test_other_programs_large_sends_take_no_slot(trace, tmp_path):
    """Six pairs outside the trace send 256 KiB messages that sleep for buffer space and go on
    in chunks (tests/trace/bulk_hogs.py) while -- COMMAND's lock-step pair sends 40 x 256 KiB
    over AF_UNIX, after a first 3000 B message read half a second late (the other programs'
    sends that began before the trace have ended by then): every traced message in several
    chunks is sliced, none is counted unsliced. The 4 slots go to sends the process filters
    keep; before, the other programs' sends took them all."""
    n, size = 40, 262144
    hogs = subprocess.Popen([sys.executable, HOGS, "6", "600"], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert hogs.stdout.readline().strip() == "ready"
        cmd = [sys.executable, SLOW, "unix", str(tmp_path / "bulk.sock"), str(n + 1), "0",
               "500", str(size)]
        res, doc = run_trace(trace + ["--detail", "full"], tmp_path, ["--"] + cmd)
    finally:
        os.killpg(hogs.pid, 9)
        hogs.wait()
    assert res.returncode == 0, res.stderr
    [f] = flows_at(doc, str(tmp_path / "bulk.sock"))
    assert f["messages"] == 2 * (n + 1), f["messages"]
    sliced = has_tracepoint("sock", "sk_data_ready")
    assert (doc["bulk_unsliced"], f["bulk_messages"]) == (0, n if sliced else 0), \
        (doc["bulk_unsliced"], f["bulk_messages"])


def same_stages_run(trace, tmp_path):
    """One run of test_same_stages_as_compare: (compared pairs, AF_UNIX handler ns, tracepoint
    mode, sliced_by_trace)."""
    tmp_path.mkdir(exist_ok=True)
    cj, stats, stats_start = tmp_path / "compare.json", tmp_path / "stats.json", tmp_path / "start.json"
    compare = [trace[0], "--compare", "--mode", "pingpong", "--size", "64,64K,1M", "--cpu",
               "same", "--duration", "1", "--warmup", "0", "--json", str(cj),
               "--attach", "tracepoint"]
    # the handlers' statistics while they are still loaded: the command's last step (--trace
    # --detail full holds tp_k_sk_data_ready where the kernel has the tracepoint)
    data_ready = has_tracepoint("sock", "sk_data_ready")
    cmd = ["sh", "-c", " ".join(map(shlex.quote, compare)) +
           f" && bpftool prog show name tp_sock_send_length --json > {shlex.quote(str(stats))}" +
           (f" && bpftool prog show name tp_k_sk_data_ready --json > {shlex.quote(str(stats_start))}"
            if data_ready else "")]
    was = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    try:
        res, doc = run_trace(trace + ["--detail", "full"], tmp_path, ["--"] + cmd, timeout=900)
    finally:
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(was)
    assert res.returncode == 0, res.stderr
    assert doc["bulk_unsliced"] == 0, doc["bulk_unsliced"]
    cdoc = json.loads(cj.read_text())
    handler = 0.0
    tracepoint = doc["attach_mode"] == "tracepoint"
    if tracepoint:
        def per_run(path):
            progs = json.loads(path.read_text())
            progs = progs if isinstance(progs, list) else [progs]
            assert len(progs) == 1 and progs[0]["run_cnt"] > 0, progs
            return progs[0]["run_time_ns"] / progs[0]["run_cnt"]
        # the interval starts at sk_data_ready, where the same happens: --compare's start
        # moves by --trace's handler there (a kernel without that tracepoint has none)
        handler = per_run(stats) - (per_run(stats_start) if data_ready else 0)
    sliced_by_trace = data_ready
    compared, entry_offsets = [], {}
    for r in cdoc["results"]:
        built_in = stage_level(r["stages"])
        t, size = r["transport"], r["msg_size"]
        # the traced run's flow: the same messages (no warm-up: its first messages, slower
        # where they fault in buffers, would be in one tracer's mean only) and a few of the
        # workload's own (its ready and end handshakes); each size runs untraced first, then
        # traced (the later processes)
        flows = [f for f in doc["flows"] if f["transport"] == t and
                 r["messages"] <= f["messages"] <= r["messages"] + 20]
        assert flows, ([(f["endpoint"], f["messages"]) for f in doc["flows"]], r["messages"])
        f = max(flows, key=lambda f: max(f["sender"]["pids"]))
        k = all_kstages(f)
        bulk = size > 64
        assert r["bulk_messages"] == (r["messages"] if bulk else 0), (t, size, r)
        assert f["bulk_messages"] == (f["messages"] if bulk and sliced_by_trace else 0), \
            (t, size, f["bulk_messages"], f["messages"])
        if bulk and not sliced_by_trace:
            continue
        pairs = compared_send_stages(list(kstages(f).items()),
                                     [(s["name"], s["ns_per_msg"]) for s in r["stages"]])
        if not tracepoint and t == "unix":
            # fentry/kprobe: --trace's handover is its probe on the socket layer's send
            # return, before the sock_send_length tracepoint that ends --compare's AF_UNIX
            # deliver;enqueue_wakeup: another boundary
            pairs = [p for p in pairs if not p[0].endswith("..enqueue_wakeup")]
        ends = [p[0].split("..")[1] for p in pairs]
        if tracepoint and sliced_by_trace:	# this host's kernel: every boundary both have
            assert ends == {("unix", False): ["sock", "enqueue_wakeup"],
                            ("unix", True): ["sock"],
                            ("tcp", False): ["syscall", "tcp_ip_out", "dev_xmit", "backlog",
                                             "ip_tcp_in", "enqueue_wakeup"],
                            ("tcp", True): ["syscall", "tcp_ip_out", "dev_xmit", "backlog",
                                            "ip_tcp_in"]}[(t, bulk)], (t, size, ends)
        else:	# a kernel without sk_data_ready (6.1): AF_UNIX's send is one stage to the
            # handover, whose boundary differs (above)
            assert len(ends) >= (3 if t == "tcp" else int(sliced_by_trace)), \
                (t, size, ends, k, built_in)
        if bulk:
            pairs.append(("bulk;recv_copy", k["bulk;recv_copy"], built_in["bulk;recv_copy"]))
            for a, b in (("send_copy", "wait_cpu"), ("recv_copy", "wait_space")):
                pairs.append((f"bulk;{a}+{b}", k[f"bulk;{a}"] + k[f"bulk;{b}"],
                              built_in[f"bulk;{a}"] + built_in[f"bulk;{b}"]))
        else:
            pairs.append(("recv;copy", k["recv;copy"], built_in["recv;copy"]))
        # --trace in fentry or kprobe mode (a guest): at each end of a compared interval both
        # tracers run a handler on the same tracepoint, one after the other, each end moving
        # by one run: one probe hit as --compare's calibration measured it (~0.5 us under
        # qemu TCG, where 10 % of a stage is a few of them). In tracepoint mode the two ends'
        # --trace handlers mostly cancel (64 B, 64 KiB: within 27 ns at every stage), but not
        # in TCP's sends of several skbs (1 MiB): their difference, up to one run, stays
        hit = (r["calibrated_probe_ns"] / r["probe_hits_per_msg"]
               if r.get("probe_hits_per_msg") else 0)
        ends_move = 2 if not tracepoint else 1 if t == "tcp" and size > 65536 else 0
        # and there the send's entry is another hook: --trace's is the syscall's wrapper
        # (fentry/kprobe), which runs after --compare's raw sys_enter handler, the
        # syscall-tracing slow path it puts the syscall on and --trace's own trampoline. Its
        # entry..X is shorter by an offset TCG sets, not the calibration: in the 6.12 guest
        # ~3 hits (2.7-2.8 us) on an AMD EPYC family 26 host, 8-13 hits (6.3-9.3 us) on an
        # Intel Xeon 6/207 one. It may not be longer than --compare's, and the offset is the
        # same on both transports (the same two hooks on sendto): checked per size below.
        for name, got, ref in pairs:
            if tracepoint and t == "unix" and name.endswith("..enqueue_wakeup"):
                ref -= handler
            tol = max(0.10 * ref, 150) + ends_move * hit
            if not tracepoint and hit and name.startswith("entry.."):
                entry_offsets.setdefault(size, {})[t] = (ref - got, ref, hit)
                ok = got <= ref + tol
            else:
                ok = abs(got - ref) <= tol
            compared.append((t, size, name, round(got), round(ref), round(ends_move * hit), ok))
    for size, off in sorted(entry_offsets.items()):
        if len(off) == 2:
            (ou, ru, hu), (ot, rt, ht) = off["unix"], off["tcp"]
            tol = max(0.10 * min(ru, rt), 150) + 2 * max(hu, ht)
            compared.append(("unix-tcp", size, "entry offset", round(ou), round(ot), round(tol),
                             abs(ou - ot) <= tol))
    return compared, handler, tracepoint, sliced_by_trace


def test_same_stages_as_compare(trace, tmp_path):
    """udsprobe --compare's own ping-pong on one CPU at 64 B, 64 KiB and 1 MiB, traced by
    --trace as a foreign program while --compare's tracer traces it too: for each run both
    traced, every stage both report agrees within 10 % or 150 ns (issue 29), the slices of the
    messages sent in several chunks (bulk;*) included. --compare runs in tracepoint mode, whose
    boundaries are --trace's kernel stages' in every mode (its fentry/kprobe boundaries are
    other functions); --trace runs in the mode of the run (the guests: fentry, kprobe). The
    sender's stages are compared between the boundaries both have (a stage is known by the
    boundary that ends it: a merged stage meets the sum of those it merges). Two differences
    are by design: --trace's send ends at the handover (sock_send_length), --compare's at the
    send syscall's exit. So send;return is not compared, and the sender's return path after
    the handover is bulk;wait_cpu for --trace and bulk;send_copy for --compare: those two are
    compared as their sum. The same for the reader: its read ends at sock_recv_length for
    --trace, at the syscall's exit for --compare, so its return path while the sender sleeps
    for space is bulk;wait_space for one and bulk;recv_copy for the other: bulk;recv_copy is
    compared alone and with bulk;wait_space.
    At a tracepoint both attach, --trace's handler runs first (attached first) and its time
    falls in --compare's stage. In tracepoint mode that matters at AF_UNIX's
    deliver;enqueue_wakeup, from sk_data_ready to sock_send_length in both: --compare's end
    moves by --trace's sock_send_length handler, its start by --trace's sk_data_ready handler.
    The difference of their mean times per run, from the kernel's BPF run-time statistics
    (kernel.bpf_stats_enabled) read before --trace detaches, is taken off --compare's figure
    (Intel Xeon 6/207: 84-85 ns of difference, the handlers 210-213 and 104-106 ns a run; the
    end's handler alone, taken off before, over-corrected by ~150 ns there and failed a CI;
    AMD EPYC: 124-127 ns of difference, the end's handler 194 ns). Under qemu TCG (fentry,
    kprobe) a handler's run is a large part of a stage: each end of a compared interval may
    move by one probe hit, and the send's entry, which --trace takes at the syscall's wrapper
    in those modes, by an offset of its own, the same on both transports (below).
    In tracepoint mode the two ends' handlers cancel but for TCP's sends of several skbs: at 1
    MiB on an Intel Xeon 6/207 host backlog..ip_tcp_in was 184-200 ns short in 3 of 11 runs
    (1403 against 1587 ns; 122 in another) while the time from the entry to its end agreed within
    27 ns (its start moved, not its end); those stages get one probe hit more.
    A run out of its slack is run once more and each stage judged by its better run (both
    printed): a preemption between the two tracers' handlers lands in one tracer's mean of the
    few 1 MiB messages (a CI at three guests at a time: TCP tcp_ip_out..dev_xmit at 1 MiB 7.8
    against 25.0 us, then at 64 KiB in the second run), and in a guest TCG stretches
    a handler's run with the host's load, which moves between --compare's calibration and the
    messages (four guests at a time on 2 CPUs: two stages of a run out by 0.04 us of ~3 us
    allowed). A wrong boundary puts the same stage out in both runs."""
    compared, handler, tracepoint, sliced_by_trace = same_stages_run(trace, tmp_path / "1")
    print("\n(transport, size, stage, --trace ns, --compare ns, slack, within):", compared)
    if not all(c[-1] for c in compared):
        again, handler, tracepoint, sliced_by_trace = same_stages_run(trace, tmp_path / "2")
        print("\nonce more (transport, size, stage, --trace ns, --compare ns, slack, within):",
              again)
        # each stage judged by its better run: noise lands on one stage of one run, a wrong
        # boundary puts the same stage out in both
        first = {c[:3]: c for c in compared}
        compared = [c if c[-1] or c[:3] not in first else first[c[:3]] for c in again]
    assert all(c[-1] for c in compared), ([c for c in compared if not c[-1]], handler)
    # every pair: 34 here (6.18, tracepoint); fentry/kprobe without AF_UNIX's handover stage
    # 30; without sk_data_ready (6.1) the 64 B run's 6 and no slices
    assert len(compared) >= (34 if tracepoint and sliced_by_trace else
                             30 if sliced_by_trace else 6), compared


def test_detail_syscall(trace, tmp_path):
    """--detail syscall, the default: none of the kernel-stage tracepoints is attached,
    send;call stays whole (no kernel_stages); --detail full cuts it; the report's first line
    and the JSON say which detail ran."""
    sock = str(tmp_path / "echo.sock")
    cmd = [sys.executable, ECHO, "unix", sock, "300", "64"]
    for args in (["--detail", "syscall"], []):
        res, doc = run_trace(trace + args, tmp_path, ["--"] + cmd)
        assert res.returncode == 0, res.stderr
        check_top_contract(doc, trace + args)
        [f] = flows_at(doc, sock)
        assert f["messages"] == 600 and f["kernel_stages"] == [], f
        assert "mode, detail syscall" in res.stdout
    res, doc = run_trace(trace + ["--detail", "full"], tmp_path, ["--"] + cmd)
    assert "mode, detail full" in res.stdout and flows_at(doc, sock)[0]["kernel_stages"]
