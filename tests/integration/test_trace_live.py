"""--trace --live (issue 34 item 1): the full-screen table under a real terminal (tmux, on a
socket of the test's own), with traffic from the echo pair over both transports: its header
and rows at 80x24, the keys that sort and filter, a resize, q and Ctrl-C giving the terminal
back as it was (stty's modes, the alternate screen left), and the plain text through a pipe."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_trace import ECHO

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="--trace loads BPF: needs root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed: "
                       "scripts/install-deps.sh installs it"),
    # the terminal and the keys are udsprobe's own: the host run covers every kernel
    pytest.mark.userspace,
]
ROW_HEAD = "TR    MSGS/S      P50      P99 TOP STAGE         SHARE MISSES  FLOW"
ROW = re.compile(r"^(unix|tcp)\s+(\d+)\s")


class Tmux:
    """One tmux server on a socket of the test's own, one window running a shell line that
    records the terminal's modes before and after udsprobe, and udsprobe's exit status."""

    def __init__(self, tmp_path, udsprobe, args, cols=80, rows=24):
        self.dir = tmp_path
        self.sock = str(tmp_path / "tmux.sock")
        env = f"UDSPROBE_IF_UNIX=off UDSPROBE_CACHE_DIR={shlex.quote(str(tmp_path))}"
        line = (f"stty -g > {tmp_path}/before; env {env} {shlex.quote(udsprobe)} "
                f"{' '.join(map(shlex.quote, args))}; echo $? > {tmp_path}/rc.tmp; "
                f"stty -g > {tmp_path}/after; mv {tmp_path}/rc.tmp {tmp_path}/rc; sleep 600")
        self.tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), line)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p").splitlines()

    def history(self):
        return self.tmux("capture-pane", "-p", "-S", "-500")

    def keys(self, *keys):
        self.tmux("send-keys", *keys)

    def wait(self, pred, what, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            if pred(s):
                return s
            time.sleep(0.2)
        pytest.fail(f"never saw {what} on the screen:\n" + "\n".join(self.screen()))

    def exit_status(self, timeout=60):
        rc = self.dir / "rc"
        end = time.time() + timeout
        while time.time() < end and not rc.exists():
            time.sleep(0.2)
        assert rc.exists(), "udsprobe did not exit:\n" + "\n".join(self.screen())
        return int(rc.read_text())

    def given_back(self):
        """udsprobe exited 0 and left the terminal as it was: the modes stty saw before it,
        the alternate screen off."""
        assert self.exit_status() == 0
        assert self.alternate_screen() == "0"
        assert (self.dir / "before").read_text() == (self.dir / "after").read_text()

    def alternate_screen(self):
        return self.tmux("display", "-p", "#{alternate_on}").strip()

    def kill(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True)


@pytest.fixture
def tmux_of(tmp_path, udsprobe):
    """make(args) -> a Tmux in a directory (socket, stty files, exit status) of its own: a
    second one never meets the first's server while it is still going away."""
    made = []

    def make(args, **kw):
        d = tmp_path / f"tmux{len(made)}"
        d.mkdir()
        t = Tmux(d, udsprobe, args, **kw)
        made.append(t)
        return t
    yield make
    for t in made:
        t.kill()


@pytest.fixture
def traffic(procs, tmp_path):
    """The echo pair over TCP and over AF_UNIX for the length of the test."""
    for args in (["tcp"], ["unix", str(tmp_path / "e.sock")]):
        procs([sys.executable, ECHO, *args, "10000000", "64"], stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL)


def rows(screen):
    return [l for l in screen if ROW.match(l)]


def live_rows(screen):
    """Both transports' echo rows, each with messages in the last interval."""
    r = [l for l in rows(screen) if int(ROW.match(l)[2]) > 0]
    return {ROW.match(l)[1] for l in r} == {"unix", "tcp"}


def test_live_view_80x24_keys_resize_and_q(tmux_of, traffic):
    t = tmux_of(["--trace", "--live", "--interval", "0.5", "--comm", "python3"])
    s = t.wait(live_rows, "a unix and a tcp row with messages per second")
    assert t.alternate_screen() == "1"
    assert s[0].startswith("udsprobe --trace --live") and " attach " in s[0] and " CPU " in s[0]
    assert re.match(r"hooks [\d.]+ ms CPU \([\d.]+ % of one CPU\)", s[1]), s[1]
    assert re.match(r"flows \d+ \(\d+ shown: all\)   misses \d+   lost: \d+ ring buffer, "
                    r"\d+ flows not kept", s[2]), s[2]
    assert "[msgs/s]" in s[3] and "[all]" in s[3]
    assert s[5].rstrip() == ROW_HEAD
    assert all(len(l) <= 80 for l in s) and len(s) <= 24
    tcp = next(l for l in rows(s) if l.startswith("tcp"))
    assert "127.0.0.1:" in tcp, tcp
    # sorted by messages per second, the busiest first
    rates = [int(ROW.match(l)[2]) for l in rows(s)]
    assert rates == sorted(rates, reverse=True), rates

    t.keys("x")
    t.wait(lambda s: s[3] == "unknown key 'x': m p b s sort, t filters, q quits",
           "the unknown key said")
    t.keys("p")
    t.wait(lambda s: "[p99]" in s[3], "the p99 order")
    t.keys("t")
    s = t.wait(lambda s: "[unix]" in s[3], "the unix filter")
    assert rows(s) and all(l.startswith("unix") for l in rows(s)), s
    t.keys("t")
    s = t.wait(lambda s: "[tcp]" in s[3], "the tcp filter")
    assert rows(s) and all(l.startswith("tcp") for l in rows(s)), s
    t.keys("t")
    t.wait(lambda s: "[all]" in s[3], "both transports again")

    # wider and taller: the whole flow (endpoint, sender -> receiver) fits now
    t.tmux("resize-window", "-x", "140", "-y", "30")
    s = t.wait(lambda s: any("python3 -> python3" in l for l in rows(s)), "the resized table")
    assert any(len(l.rstrip()) > 80 for l in s)

    t.keys("q")
    t.given_back()
    report = t.history()
    assert "UDS vs TCP, python3 -> python3" in report or "messages in" in report, report


def test_ctrl_c_gives_the_terminal_back(tmux_of):
    t = tmux_of(["--trace", "--live", "--comm", "python3"])
    t.wait(lambda s: s[0].startswith("udsprobe --trace --live"), "the live view")
    t.keys("C-c")
    t.given_back()


def test_a_small_terminal_says_how_many_did_not_fit(tmux_of, procs, tmp_path):
    """12 rows: the header takes 6; with more flows than rows the last row counts the rest."""
    for i in range(8):
        procs([sys.executable, ECHO, "unix", str(tmp_path / f"s{i}.sock"), "10000000", "64"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = tmux_of(["--trace", "--live", "--interval", "0.5", "--comm", "python3"], cols=80, rows=12)
    s = t.wait(lambda s: any(l.startswith("... ") for l in s), "the rows that did not fit")
    n = int(re.search(r"flows (\d+) \((\d+) shown", s[2])[2])
    more = int(re.match(r"\.\.\. (\d+) more flows", s[11])[1])
    assert len(rows(s)) + more == n, s
    t.keys("q")
    assert t.exit_status() == 0


def test_a_pipe_gets_plain_text(udsprobe, traffic):
    r = subprocess.run([udsprobe, "--trace", "--live", "--interval", "0.3", "--duration", "1.7",
                        "--comm", "python3"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert ("udsprobe: --live: stdin and stdout are not both a terminal: the flows as plain "
            "text every interval") in r.stderr
    frames = [l for l in r.stdout.splitlines() if l.startswith("--- ")]
    assert len(frames) >= 4, r.stdout
    assert r.stdout.count(ROW_HEAD) == len(frames)
    assert "\x1b" not in r.stdout
    assert "UDS vs TCP, python3 -> python3" in r.stdout      # then the usual report


def test_a_pipe_gets_the_busiest_44_flows(udsprobe, tmp_path):
    """Through a pipe a frame holds the 44 busiest flows and counts the rest; the report at
    the end has them all."""
    from test_trace import MANY
    r = subprocess.run([udsprobe, "--trace", "--live", "--interval", "0.5", "--", "sh", "-c",
                        f"{sys.executable} {MANY} {tmp_path / 'eps'} 60 && sleep 1.5"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    frames = r.stdout.split("\n--- ")
    last = next(f for f in reversed(frames) if ROW_HEAD in f and "more flows" in f)
    lines = last.splitlines()
    more = next(i for i, l in enumerate(lines) if l.startswith("... "))
    assert lines[more - 45] == ROW_HEAD and all(l.startswith("unix ") for l in
                                                lines[more - 44:more]), last
    assert lines[more] == "... 16 more flows (the report at the end has them all)", last


@pytest.mark.parametrize("args,msg", [
    (["--compare", "--live"], "--live needs --trace"),
    (["--trace", "--interval", "1"], "--trace takes --interval with --live or --prom only"),
    (["--trace", "--live", "--json", "-"], "--live draws on stdout and --json - writes there"),
])
def test_live_usage(udsprobe, args, msg):
    r = subprocess.run([udsprobe, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr
