"""Installed like a system tool (issue 34 item 5): make install into a DESTDIR, the man page
generated from --help (every option of --help is in it), bash completion pressed with Tab in a
real bash (tmux), and the Debian package built with debhelper, installed with dpkg on this host,
`udsprobe --check` and `man udsprobe` from it, then purged."""
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.userspace   # the same on every kernel: the host run covers it


def long_options(udsprobe):
    text = subprocess.run([udsprobe, "--help"], capture_output=True, text=True).stdout
    return sorted(set(re.findall(r"^ {2,6}(?:-\S, )?(--[a-z][a-z0-9-]*)", text, re.M)))


def make(*args):
    r = subprocess.run(["make", "-s", "-C", str(REPO), *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_cross_install_takes_the_man_page_from_the_host_build(tmp_path):
    """make install ARCH=arm64 on an x86 host: the arm64 binary, and udsprobe(8) from the
    host's own build of the tree (the arm64 one cannot run here to print --help)."""
    if os.uname().machine != "x86_64":
        pytest.skip("the cross build is made from an x86_64 host")
    if not shutil.which("aarch64-linux-gnu-gcc"):
        pytest.skip("no aarch64-linux-gnu-gcc (scripts/install-deps.sh installs it)")
    dest = tmp_path / "root"
    make("install", "ARCH=arm64", f"DESTDIR={dest}", "PREFIX=/usr")
    head = (dest / "usr/sbin/udsprobe").read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183, head  # EM_AARCH64
    page = render(["-l", str(dest / "usr/share/man/man8/udsprobe.8")])
    opts = long_options(str(REPO / "udsprobe"))     # the host's build, made by the install
    missing = [o for o in opts if not re.search(rf"^ +(-\S, )?{re.escape(o)}\b", page, re.M)]
    assert len(opts) > 40 and not missing, missing


def test_make_install_and_uninstall(tmp_path):
    dest = tmp_path / "root"
    make("install", f"DESTDIR={dest}", "PREFIX=/usr")
    files = {
        "usr/sbin/udsprobe": 0o755,
        "usr/share/man/man8/udsprobe.8": 0o644,
        "usr/share/bash-completion/completions/udsprobe": 0o644,
        "usr/lib/systemd/system/udsprobe-backlog.service": 0o644,
        "usr/lib/systemd/system/udsprobe-trace.service": 0o644,
    }
    for f, mode in files.items():
        assert (dest / f).is_file(), f
        assert (dest / f).stat().st_mode & 0o777 == mode, f
    unit = (dest / "usr/lib/systemd/system/udsprobe-backlog.service").read_text()
    assert "ExecStart=/usr/sbin/udsprobe --backlog" in unit
    unit = (dest / "usr/lib/systemd/system/udsprobe-trace.service").read_text()
    assert "ExecStart=/usr/sbin/udsprobe --trace" in unit
    r = subprocess.run([str(dest / "usr/sbin/udsprobe"), "--version"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout.startswith("udsprobe ")
    make("uninstall", f"DESTDIR={dest}", "PREFIX=/usr")
    assert not any(p.is_file() for p in dest.rglob("*")), list(dest.rglob("*"))


def render(man_args):
    r = subprocess.run(["man", *man_args], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="0",
                                PAGER="cat", MANPAGER="cat"))
    assert r.returncode == 0, r.stderr
    return re.sub(r".\x08", "", r.stdout)      # no overstrike bold


def test_man_page_has_every_option_of_help(udsprobe):
    make("man")
    page = render(["-l", str(REPO / ".output" / "udsprobe.8")])
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXAMPLES", "EXIT STATUS",
                    "ENVIRONMENT", "SEE ALSO"):
        assert re.search(rf"^{section}$", page, re.M), section
    opts = long_options(udsprobe)
    assert len(opts) > 40, opts
    missing = [o for o in opts if not re.search(rf"^ +(-\S, )?{re.escape(o)}\b", page, re.M)]
    assert not missing, f"options of --help not in udsprobe(8): {missing}"
    assert "sudo ./udsprobe --trace --live --comm nginx" in page     # examples verbatim


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed: "
                    "scripts/install-deps.sh installs it")
def test_bash_completion_with_tab(tmp_path):
    comp = "/usr/share/bash-completion/bash_completion"
    if not os.path.exists(comp):
        pytest.skip("bash-completion is not installed: scripts/install-deps.sh installs it")
    sock = str(tmp_path / "tmux.sock")
    rc = tmp_path / "rc"
    rc.write_text(f"source {comp}\nsource {REPO}/scripts/completion/udsprobe.bash\n"
                  f"PATH={REPO}:$PATH\nPS1='$ '\n")

    def tmux(*a):
        return subprocess.run(["tmux", "-S", sock, *a], capture_output=True, text=True,
                              timeout=30, check=True).stdout

    def screen_after(keys, want):
        tmux("send-keys", "--", *keys)
        end = time.time() + 15
        while time.time() < end:
            s = tmux("capture-pane", "-p")
            if want(s):
                return s
            time.sleep(0.2)
        pytest.fail(f"after {keys}:\n{tmux('capture-pane', '-p')}")

    tmux("new-session", "-d", "-x", "120", "-y", "30", f"bash --rcfile {rc} -i")
    try:
        # capture-pane drops a line's trailing spaces: "$ udsprobe --trace" is the whole word
        screen_after([], lambda s: re.search(r"^\$$", s, re.M))
        screen_after(["udsprobe --tra", "Tab"], lambda s: re.search(r"^\$ udsprobe --trace$", s,
                                                                     re.M))
        # a value list: both offered on a second Tab
        screen_after(["--detail ", "Tab", "Tab"],
                     lambda s: re.search(r"^full\s+syscall\s*$", s, re.M))
        screen_after(["C-u", "udsprobe --if-unix f", "Tab"],
                     lambda s: re.search(r"^\$ udsprobe --if-unix fresh$", s, re.M))
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


def test_debian_package_installs_and_runs(tmp_path):
    """Built with dpkg-buildpackage (debhelper), installed with dpkg on this host, --check and
    man from the installed files, purged again (nothing of it left)."""
    if os.geteuid() != 0:
        pytest.skip("dpkg -i needs root")
    for tool in ("dpkg-buildpackage", "dh"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed: scripts/install-deps.sh installs it")
    have = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "udsprobe"], capture_output=True,
                          text=True).stdout
    if "ok installed" in have:
        pytest.skip("a udsprobe package is installed on this host already: not replaced here")
    r = subprocess.run([str(REPO / "scripts" / "build-deb.sh")], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr
    deb = Path(REPO / r.stdout.strip())
    info = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Depends"],
                          capture_output=True, text=True).stdout
    assert "Package: udsprobe" in info and "libbpf1" in info, info
    try:
        r = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(["/usr/sbin/udsprobe", "--check"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert re.search(r"^tracepoint\s+yes", r.stdout, re.M), r.stdout
        page = render(["udsprobe"])
        assert "UDSPROBE(8)" in page and "--trace" in page
        assert os.path.isfile("/usr/share/bash-completion/completions/udsprobe")
        for unit in ("udsprobe-backlog.service", "udsprobe-trace.service"):
            assert os.path.isfile(f"/usr/lib/systemd/system/{unit}"), unit
            assert not os.path.exists(f"/etc/systemd/system/multi-user.target.wants/{unit}"), \
                unit    # not enabled on install
    finally:
        r = subprocess.run(["dpkg", "--purge", "udsprobe"], capture_output=True, text=True,
                           timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists("/usr/sbin/udsprobe")
    assert not os.path.exists("/usr/share/man/man8/udsprobe.8.gz")
