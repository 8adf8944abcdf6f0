"""--backlog's full-screen view (issue 34 item 1) when stdout is a terminal (tmux, on a socket
of the test's own): every watched listener with its queue, limit and overflows, the keys that
sort and filter, q and Ctrl-C giving the terminal back and printing the usual summary with the
same counts. A pipe keeps the block of text every interval (test_backlog.py)."""
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from test_trace_live import tmux_of  # noqa: F401 (the same tmux driver, a fixture)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="--backlog loads BPF: needs root"),
    pytest.mark.userspace,
]
OVERFLOW = r"""
import socket, sys, time
l = socket.socket(socket.AF_UNIX); l.bind(sys.argv[1]); l.listen(2)
cs = []
for i in range(int(sys.argv[2])):
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try: c.connect(sys.argv[1])
    except BlockingIOError: pass
    cs.append(c)
print("done", flush=True)
time.sleep(600)
"""


def overflowing(procs, path, n):
    """A unix listener with backlog 2 that never accepts, and n non-blocking connects: the
    queue holds 3 (limit + 1), the other n - 3 overflow (EAGAIN)."""
    p = procs([sys.executable, "-c", OVERFLOW, str(path), str(n)], stdout=subprocess.PIPE,
              text=True)
    assert p.stdout.readline().strip() == "done"
    return n - 3


def row_of(screen, path):
    return next((l for l in screen if l.startswith("unix") and str(path)[:20] in l), None)


def test_full_screen_counts_keys_and_q(tmux_of, procs, tmp_path):
    path = tmp_path / "ovf.sock"
    t = tmux_of(["--backlog", "--unix", str(path), "--interval", "0.5"])
    t.wait(lambda s: s and s[0].startswith("udsprobe --backlog"), "the full-screen view")
    assert t.alternate_screen() == "1"
    n = overflowing(procs, path, 20)
    s = t.wait(lambda s: (r := row_of(s, path)) and r.split()[5] == str(n),
               f"{n} overflows on the listener's row")
    assert all(len(l) <= 80 for l in s) and len(s) <= 24
    assert s[4].startswith("FAM  QUEUE  PEAK LIMIT    NEW OVERFLOWS   WAITS ADDRESS")
    queue, peak, limit = map(int, row_of(s, path).split()[1:4])
    assert (queue, peak, limit) == (3, 3, 2), row_of(s, path)
    assert re.search(rf"overflows {n} \(", s[1]), s[1]
    t.keys("z")
    t.wait(lambda s: s[2] == "unknown key 'z': o d w sort, t filters, q quits",
           "the unknown key said")
    t.keys("d")
    t.wait(lambda s: "[queue depth]" in s[2], "the queue-depth order")
    t.keys("t")
    s = t.wait(lambda s: "[unix]" in s[2], "the unix filter")
    assert row_of(s, path)
    t.keys("t")
    s = t.wait(lambda s: "[tcp]" in s[2], "the tcp filter")
    assert not row_of(s, path) and not any(l.startswith("unix") for l in s)
    t.keys("q")
    t.given_back()
    summary = t.history()
    assert f"was full {n} times" in summary, summary


def test_a_key_redraws_the_same_interval(tmux_of, procs, tmp_path):
    """A key between two intervals redraws the last one as it was: its NEW overflows too (it
    showed 0 until the next frame)."""
    path = tmp_path / "ovf.sock"
    t = tmux_of(["--backlog", "--unix", str(path), "--interval", "10"])
    t.wait(lambda s: s and s[0].startswith("udsprobe --backlog"), "the full-screen view")
    n = overflowing(procs, path, 12)
    s = t.wait(lambda s: (r := row_of(s, path)) and r.split()[4] == str(n),
               f"{n} new overflows on the listener's row", timeout=40)
    header = s[0]
    t.keys("w")
    s = t.wait(lambda s: "[waits]" in s[2], "the waits order")
    assert s[0] == header, "an interval ended before the key's redraw (10 s apart)"
    assert row_of(s, path).split()[4:6] == [str(n), str(n)], row_of(s, path)
    t.keys("q")
    t.given_back()


def test_ctrl_c_gives_the_terminal_back(tmux_of, tmp_path):
    t = tmux_of(["--backlog", "--unix", str(tmp_path / "none.sock")])
    t.wait(lambda s: s and s[0].startswith("udsprobe --backlog"), "the full-screen view")
    t.keys("C-c")
    t.given_back()
    assert "Summary after" in t.history()


def test_quiet_and_json_stdout_keep_text(tmux_of, tmp_path):
    """--quiet: no view, the summary only; --json -: stdout is JSON lines, never a screen."""
    t = tmux_of(["--backlog", "--unix", str(tmp_path / "none.sock"), "--quiet",
                 "--duration", "1"])
    assert t.exit_status() == 0
    assert t.alternate_screen() == "0"
    assert "Summary after" in t.history()
    t.kill()
    t = tmux_of(["--backlog", "--unix", str(tmp_path / "none.sock"), "--json", "-",
                 "--duration", "3"])
    time.sleep(1.5)
    assert not (t.dir / "rc").exists() and t.alternate_screen() == "0"
    assert t.exit_status() == 0
    assert '{"event":"run"' in t.history().replace("\n", "")
