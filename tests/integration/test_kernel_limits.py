"""What udsprobe does on a kernel that lacks a feature: degrade and say so once, or one clear
line and exit 1, never a fake.

--backlog finds TCP listeners with the BPF iterator iter/tcp (Linux 5.9+) and AF_UNIX ones with
iter/unix (5.17+). Without iter/unix (Debian 11's 5.10 in the VM matrix) it reads AF_UNIX
listeners and queue depths from sock_diag and says so in one line (and in the JSON run line);
without iter/tcp it refuses in one line. Which case applies is read from the kernel's own BTF
(the iterator targets are the functions bpf_iter_unix and bpf_iter_tcp).
"""
import json
import os
import subprocess

import pytest

GUEST = os.environ.get("UDSVM") == "1"
TIMEOUT = 240 if GUEST else 60


def kernel_btf_funcs(*names):
    """Which of names are BTF_KIND_FUNC in /sys/kernel/btf/vmlinux (bpftool, one dump)."""
    out = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    return {n for n in names if f"FUNC '{n}' " in out}


@pytest.fixture(scope="module")
def iterators():
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.fail("no /sys/kernel/btf/vmlinux: cannot tell which iterators this kernel has")
    return kernel_btf_funcs("bpf_iter_unix", "bpf_iter_tcp")


def test_backlog_without_iterators_says_so(udsprobe, iterators, tmp_path):
    out_json = tmp_path / "bl.jsonl"
    res = subprocess.run([udsprobe, "--backlog", "--duration", "1", "--interval", "0.5",
                          "--json", str(out_json)],
                         capture_output=True, text=True, timeout=TIMEOUT)
    refused = [l for l in res.stderr.splitlines() if "needs the BPF iterator" in l]
    notes = [l for l in res.stdout.splitlines() if "AF_UNIX queue depth from sock_diag" in l]
    if "bpf_iter_tcp" not in iterators:
        assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
        assert len(refused) == 1, res.stderr
        assert "iter/tcp (Linux 5.9+)" in refused[0] and os.uname().release in refused[0]
        return
    assert not refused, res.stderr
    assert res.returncode == 0, res.stderr
    run = [e for e in map(json.loads, out_json.read_text().splitlines()) if e["event"] == "run"][-1]
    if "bpf_iter_unix" in iterators:
        assert not notes, res.stdout
        assert run["unix_queue_source"] == "iter/unix" and run["unix_queue_source_reason"] is None
    else:
        why = "this kernel has no iter/unix (before 5.17)"
        assert len(notes) == 1 and why in notes[0], res.stdout
        assert run["unix_queue_source"] == "sock_diag" and run["unix_queue_source_reason"] == why


def test_backlog_tracepoint_mode_without_tcp_drops_says_so(udsprobe, tmp_path):
    """Tracepoint mode's two TCP drop programs need BPF cmpxchg (5.12+) and kfree_skb's drop
    reason (5.17+). Without them (5.10) --backlog still runs in tracepoint mode, AF_UNIX
    counted, and says in one line that TCP overflows are not (JSON: counted false, the
    reason; Prometheus: the gauge at 0); with them, no such line."""
    fmt = "/sys/kernel/tracing/events/skb/kfree_skb/format"
    if not os.path.exists(fmt):
        subprocess.run(["mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing"], check=False)
    with open(fmt) as f:
        has_reason = "field:enum skb_drop_reason reason" in f.read()
    out_json, prom = tmp_path / "bl.jsonl", tmp_path / "bl.prom"
    res = subprocess.run([udsprobe, "--backlog", "--backlog-attach", "tracepoint", "--duration",
                          "1", "--interval", "0.5", "--json", str(out_json), "--prom", str(prom)],
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    run = [e for e in map(json.loads, out_json.read_text().splitlines()) if e["event"] == "run"][-1]
    assert run["attach_mode"] == "tracepoint" and run["tcp_overflows_counted"] is has_reason, run
    notes = [l for l in res.stdout.splitlines() if "TCP listen overflows are not counted" in l]
    if has_reason:
        assert not notes and run["tcp_overflows_missing_reason"] is None, (notes, run)
        assert "\nudsprobe_backlog_tcp_overflows_counted 1\n" in prom.read_text()
        return
    why = run["tcp_overflows_missing_reason"]
    assert why in ("this kernel's BPF has no compare-and-exchange (Linux 5.12+), which hands "
                   "each drop to one freed segment",
                   "this kernel's kfree_skb tracepoint has no drop reason (Linux 5.17+)"), run
    assert notes == [f"note: TCP listen overflows are not counted in tracepoint mode here: {why}; "
                     "they show as n/a (the listener's sk_drops and ListenOverflows still count "
                     "them); use --backlog-attach kprobe or fentry to count them per listener "
                     "and client"], res.stdout
    assert "\nudsprobe_backlog_tcp_overflows_counted 0\n" in prom.read_text()


def kernel_btf_has_enumerator(name):
    """The kernel's BTF has the enumerator name (bpftool's dump lists it as 'NAME' val=N)."""
    out = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    return f"'{name}' val=" in out


def test_trace_without_task_pt_regs_says_so(udsprobe, tmp_path):
    """--trace needs bpf_task_pt_regs (5.15+) in every mode (and BPF_CMPXCHG, 5.12+): without
    it (Debian 11's 5.10) one line naming it and exit 1, before any program is loaded; with it,
    that line never appears (the run itself is tested in test_trace.py)."""
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.fail("no /sys/kernel/btf/vmlinux: cannot tell which helpers this kernel has")
    has = kernel_btf_has_enumerator("BPF_FUNC_task_pt_regs")
    res = subprocess.run([udsprobe, "--trace", "--duration", "1", "--json", str(tmp_path / "t.json")],
                         capture_output=True, text=True, timeout=TIMEOUT)
    line = (f"udsprobe: --trace: this kernel ({os.uname().release}) has no bpf_task_pt_regs "
            "helper (Linux 5.15+), which --trace's programs need in every attach mode "
            "(docs/TRACE.md, \"Kernels\")")
    if has:
        assert line not in res.stderr
        assert "bpf_task_pt_regs" not in res.stderr
    else:
        assert res.returncode == 1, res.stderr
        assert res.stderr.splitlines() == [line], res.stderr
        assert not (tmp_path / "t.json").exists()
