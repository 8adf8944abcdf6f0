"""What udsprobe does on a kernel that lacks a feature: one clear line, exit 1, never a fake.

--backlog finds listeners with the BPF iterators iter/unix (Linux 5.17+) and iter/tcp (5.9+).
On older kernels (Debian 11's 5.10 in the VM matrix) it must refuse with one line naming what
is missing; on newer ones that line must never appear. Which case applies is read from the
kernel's own BTF (the iterator targets are the functions bpf_iter_unix and bpf_iter_tcp).
"""
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


def test_backlog_without_iterators_says_so(udsprobe, iterators):
    res = subprocess.run([udsprobe, "--backlog", "--duration", "1", "--interval", "0.5"],
                         capture_output=True, text=True, timeout=TIMEOUT)
    lines = [l for l in res.stderr.splitlines() if "needs the BPF iterators" in l]
    if iterators == {"bpf_iter_unix", "bpf_iter_tcp"}:
        assert not lines, res.stderr
        assert res.returncode == 0, res.stderr
    else:
        assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
        assert len(lines) == 1, res.stderr
        assert "iter/unix (Linux 5.17+)" in lines[0] and os.uname().release in lines[0]
