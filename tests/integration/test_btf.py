"""A kernel that exposes no BTF of its own: the one-line hint, and --btf FILE.

/sys/kernel/btf/vmlinux is hidden by a tmpfs mounted over /sys/kernel/btf in a private mount
namespace (unshare -m), so udsprobe sees what it sees on a kernel built without
CONFIG_DEBUG_INFO_BTF. The BTF file given to --btf is a copy of the real one (raw BTF, the
format BTFHub ships) and, when the VM matrix passes UDSPROBE_VMLINUX, the vmlinux ELF from the
kernel's .deb (its .BTF section). Without the kernel's own BTF, fentry and tp_btf cannot work
(the kernel verifies them against it); kprobe mode works, relocated against the file. Where the
kernel has no kprobes either (our 6.18 hosts), the run must fail clearly: that is asserted, not
skipped.
"""
import json
import os
import shutil
import subprocess

import pytest

GUEST = os.environ.get("UDSVM") == "1"
COUNT = 200
TIMEOUT = 300 if GUEST else 60
HINT = "pass --btf FILE"


def hidden(udsprobe, *args, timeout=TIMEOUT):
    """Run udsprobe with /sys/kernel/btf hidden (tmpfs over it, in a private mount namespace)."""
    script = 'mount -t tmpfs none /sys/kernel/btf && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", udsprobe, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def btf_copy(tmp_path_factory):
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.fail("this kernel has no /sys/kernel/btf/vmlinux to copy (the test hides it itself)")
    path = tmp_path_factory.mktemp("btf") / "vmlinux.btf"
    shutil.copyfile("/sys/kernel/btf/vmlinux", path)
    return path


@pytest.fixture(scope="module")
def kprobes(udsprobe):
    """Does kprobe mode work on this kernel (with its BTF visible)?"""
    res = subprocess.run([udsprobe, "--check"], capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    return any(line.split()[:2] == ["kprobe", "yes"] for line in res.stdout.splitlines())


def test_no_btf_says_what_to_do_in_one_line(udsprobe):
    for args in (["--check"], ["--compare", "--mode", "pingpong", "--count", "10"]):
        res = hidden(udsprobe, *args)
        assert res.returncode == 1, (args, res.stdout, res.stderr)
        lines = [l for l in res.stderr.splitlines() if HINT in l]
        assert len(lines) == 1, (args, res.stderr)
        assert "CONFIG_DEBUG_INFO_BTF" in lines[0] and "--no-trace" in lines[0]
    # the workload alone needs no BTF
    res = hidden(udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count", "10")
    assert res.returncode == 0, res.stderr


def test_btf_file_check(udsprobe, btf_copy, kprobes):
    res = hidden(udsprobe, "--btf", btf_copy, "--check")
    out = res.stdout
    assert f"CO-RE from --btf {btf_copy}" in out
    modes = {l.split()[0]: l for l in out.splitlines()
             if l.split()[:1] in (["fentry"], ["kprobe"], ["tracepoint"]) and l.split()[1] in ("yes", "no")}
    assert set(modes) == {"fentry", "kprobe", "tracepoint"}, out
    for m in ("fentry", "tracepoint"):
        assert modes[m].split()[1] == "no" and "kernel's own BTF" in modes[m], modes[m]
    if kprobes:
        assert res.returncode == 0, res.stderr
        assert modes["kprobe"].split()[1] == "yes", modes["kprobe"]
        assert "chosen: kprobe" in out
    else:
        assert res.returncode == 1 and modes["kprobe"].split()[1] == "no", out
        assert "chosen: none" in out


def traced_with(udsprobe, btf, tmp_path, kprobes):
    out = tmp_path / "r.json"
    res = hidden(udsprobe, "--btf", btf, "--compare", "--mode", "pingpong", "--count", COUNT,
                 "--json", out)
    if not kprobes:
        assert res.returncode == 1, res.stderr
        assert "no attach mode works" in res.stderr and "kernel's own BTF" in res.stderr
        return
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["attach_mode"] == "kprobe"
    assert doc["stage_granularity"] == "function"
    for r in doc["results"]:
        assert r["messages"] == 2 * COUNT, (r["transport"], r["messages"])
        names = [s["name"] for s in r["stages"]]
        assert any(n.count(";") >= 2 for n in names), names


def test_btf_file_traced_run(udsprobe, btf_copy, kprobes, tmp_path):
    traced_with(udsprobe, btf_copy, tmp_path, kprobes)


def test_btf_vmlinux_elf_traced_run(udsprobe, kprobes, tmp_path):
    """--btf with the vmlinux ELF of the kernel's .deb (the VM matrix passes its path)."""
    elf = os.environ.get("UDSPROBE_VMLINUX")
    if not elf:
        pytest.skip("UDSPROBE_VMLINUX not set: only the VM matrix has the guest kernel's vmlinux")
    assert os.path.exists(elf), elf
    traced_with(udsprobe, elf, tmp_path, kprobes)


@pytest.mark.parametrize("kind", ["dev-null", "empty", "directory", "text", "elf-without-btf",
                                  "missing"])
def test_btf_file_that_is_not_kernel_btf_is_refused_at_once(udsprobe, tmp_path, kind):
    """--btf /dev/null was accepted, then blamed on the kernel ("no kernel BTF for ...",
    "no BTF for tracepoints" beside "BTF present"): a file that is not the kernel's BTF is a
    bad option value, said in one line before anything runs (issue 36.8)."""
    path = {"dev-null": "/dev/null", "empty": tmp_path / "empty", "directory": tmp_path,
            "text": tmp_path / "text", "elf-without-btf": shutil.which("true"),
            "missing": tmp_path / "missing"}[kind]
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "text").write_text("not btf\n" * 100)
    for action in (["--check"], ["--trace", "--duration", "1"]):
        res = subprocess.run([udsprobe, *action, "--btf", str(path)], capture_output=True,
                             text=True, timeout=TIMEOUT)
        assert res.returncode == 2, (action, res.stdout, res.stderr)
        assert res.stdout == ""
        first = res.stderr.splitlines()[0]
        assert first.startswith(f"udsprobe: --btf {path}: "), res.stderr
        assert "kernel BTF for" not in res.stderr and "tracepoints" not in res.stderr
