"""A picture checked in a real browser (issue 12, item 5): the stages SVG of a small traced
`--compare --out` run opened in headless Chromium, driven over its DevTools protocol (CDP:
--remote-debugging-port, a WebSocket; python3-websocket). Real input events, no JavaScript
stand-ins for them:

  (a) it renders: a screenshot at the SVG's declared size, not blank;
  (b) hover titles: every frame of the icicle graphs has a <title>, and a real mouse move to
      the centre of each frame wide enough to point at puts the pointer on that frame (the
      mouseover target's frame carries the frame's own title: the tooltip a person would see);
  (c) zoom: the flame SVG's click-to-zoom script. A real click on a stage frame widens it to
      the full plot width (data-pw) and a click on the total bar restores every frame; and,
      as vector scaling, the page at 2x device scale renders at twice the size, not blank,
      with the viewBox keeping the aspect.

Skipped, with the reason, only when chromium or python3-websocket is not installed (CI
installs both: scripts/install-deps.sh)."""
import base64
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from svgcheck import assert_not_blank, declared_size, png_size

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One Chromium tab over CDP: call(method, **params) -> result; js(expr) -> value."""

    def __init__(self, ws_url):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        me = self.next_id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                assert "error" not in msg, (method, msg["error"])
                return msg["result"]
            self.events.append(msg)

    def wait_event(self, name, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for i, ev in enumerate(self.events):
                if ev.get("method") == name:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv()))
        raise AssertionError(f"no {name} within {timeout} s")

    def js(self, expr):
        res = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def open(self, path, width, height, scale=1):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=scale, mobile=False)
        self.call("Page.navigate", url=f"file://{path}")
        self.wait_event("Page.loadEventFired")

    def screenshot(self, png):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        png.write_bytes(base64.b64decode(data))
        return png

    def mouse(self, kind, x, y, **extra):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if not CHROMIUM:
        pytest.skip("chromium not installed (Debian's chromium; scripts/install-deps.sh)")
    try:
        import websocket  # noqa: F401
    except ImportError:
        pytest.skip("python3-websocket not installed (scripts/install-deps.sh)")
    profile = tmp_path_factory.mktemp("chromium")
    proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                             "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
                             "--remote-allow-origins=*", "--remote-debugging-port=0",
                             f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert proc.poll() is None, proc.stderr.read().decode(errors="replace")[-2000:]
            assert time.monotonic() < end, "chromium wrote no DevToolsActivePort in 60 s"
            time.sleep(0.1)
        port = int(port_file.read_text().split("\n")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            tabs = [t for t in json.load(r) if t["type"] == "page"]
        assert tabs, "chromium has no page"
        p = Page(tabs[0]["webSocketDebuggerUrl"])
        p.call("Page.enable")
        yield p
        p.ws.close()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # our own browser's process group
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def flame_svg(udsprobe, tmp_path_factory, is_root, attach_mode):
    """The per-run flame SVG of a small traced pingpong run."""
    if not is_root:
        pytest.skip("traced runs need root")
    d = tmp_path_factory.mktemp("browser") / "out"
    res = subprocess.run([udsprobe, "--compare", "--mode", "pingpong", "--count", "500",
                          *(["--attach", attach_mode] if attach_mode else []), "--out", d],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    return d / "flame-pingpong-64B-same.svg"


def open_svg(page, svg, scale=1):
    w, h, _ = declared_size(svg)
    page.open(svg, int(w), int(h), scale)
    return int(w), int(h)


@pytest.fixture(scope="module")
def think_svg(udsprobe, tmp_path_factory):
    """think.svg of a small untraced --think run: a chart of points rather than boxes."""
    d = tmp_path_factory.mktemp("browser-think") / "out"
    res = subprocess.run([udsprobe, "--compare", "--no-trace", "--mode", "pingpong", "--count",
                          "300", "--think", "0,20us,200us", "--out", d],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    return d / "think.svg"


# Every frame (.f) of the icicle graphs: its title, on-screen box, data-w and the plot width.
FRAMES_JS = """
Array.from(document.querySelectorAll('.fg .f')).map(function (f, i) {
  var r = f.querySelector('rect').getBoundingClientRect(), t = f.querySelector('title');
  f.setAttribute('data-i', i);
  return {i: i, title: t ? t.textContent : null, total: f.classList.contains('r'),
          x: r.left, y: r.top, w: r.width, h: r.height, pw: +f.closest('.fg').dataset.pw};
})
"""


def test_svg_renders_in_chromium(page, flame_svg, tmp_path):
    w, h = open_svg(page, flame_svg)
    png = page.screenshot(tmp_path / "flame.png")
    assert png_size(png) == (w, h)
    assert_not_blank(png)


def test_hover_shows_each_frames_title(page, flame_svg):
    open_svg(page, flame_svg)
    frames = page.js(FRAMES_JS)
    assert len(frames) >= 6, frames  # two total bars and their stages
    assert all(f["title"] for f in frames), [f for f in frames if not f["title"]]
    page.js("window.over = null; document.addEventListener('mouseover', "
            "function (e) { window.over = e.target; });")
    # the dashed line where the other transport ends is drawn over the frames: aim beside it
    lines = page.js("Array.from(document.querySelectorAll('.ax')).map("
                    "function (l) { return l.getBoundingClientRect().left; })")
    hovered = 0
    for f in frames:
        if f["w"] < 8:
            continue  # too thin to point at; its title is checked above
        # the point nearest the frame's centre that is 4 px or more from every dashed line,
        # kept 2 px inside the frame (a fixed shift off a line could land on a thin frame's
        # edge, i.e. on its neighbour)
        inside = [f["x"] + 2 + k * 0.5 for k in range(int((f["w"] - 4) * 2) + 1)]
        x = max(inside, key=lambda px: (min([abs(px - lx) for lx in lines] + [4]),
                                        -abs(px - f["x"] - f["w"] / 2)))
        y = f["y"] + f["h"] / 2
        page.mouse("mouseMoved", x, y)
        got = page.js("(function () { var f = window.over && window.over.closest('.f');"
                      " return f ? [f.dataset.i, f.querySelector('title').textContent] : null; })()")
        assert got == [str(f["i"]), f["title"]], (f, got)
        under = page.js(f"document.elementFromPoint({x}, {y}).closest('.f').dataset.i")
        assert under == str(f["i"])
        hovered += 1
    assert hovered >= 6


def test_click_zooms_a_frame_to_full_width_and_the_total_bar_resets(page, flame_svg):
    open_svg(page, flame_svg)
    frames = page.js(FRAMES_JS)
    stages = [f for f in frames if not f["total"] and 20 <= f["w"] < f["pw"] - 20]
    assert stages, frames
    f = max(stages, key=lambda s: s["w"])
    page.click(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
    after = {g["i"]: g for g in page.js(FRAMES_JS)}
    assert after[f["i"]]["w"] == pytest.approx(f["pw"], abs=0.5), (f, after[f["i"]])
    # its transport's total bar is the reset button: back to the widths drawn
    total = [g for g in frames if g["total"] and g["y"] <= f["y"]][-1]
    page.click(total["x"] + 4, total["y"] + total["h"] / 2)
    again = {g["i"]: g for g in page.js(FRAMES_JS)}
    for g in frames:
        assert again[g["i"]]["w"] == pytest.approx(g["w"], abs=0.5), (g, again[g["i"]])


def test_double_device_scale_stays_sharp_and_keeps_aspect(page, flame_svg, tmp_path):
    """Zoom as a browser does it for a vector picture: at 2x device scale the raster is
    twice as large in each direction and still a picture; the viewBox is the canvas, so the
    aspect is kept."""
    w, h = open_svg(page, flame_svg, scale=2)
    png = page.screenshot(tmp_path / "flame2x.png")
    assert png_size(png) == (2 * w, 2 * h)
    assert_not_blank(png)
    _, _, box = declared_size(flame_svg)
    assert box == [0, 0, w, h]


def test_hover_shows_each_chart_points_title(page, think_svg, tmp_path):
    """think.svg: every point has a <title>; a real mouse move to each point's centre lands
    on that point."""
    open_svg(page, think_svg)
    assert_not_blank(page.screenshot(tmp_path / "think.png"))
    dots = page.js("Array.from(document.querySelectorAll('circle')).map(function (c, i) {"
                   " var r = c.getBoundingClientRect(), t = c.querySelector('title');"
                   " c.setAttribute('data-i', i);"
                   " return {i: i, title: t ? t.textContent : null,"
                   "         x: r.left + r.width / 2, y: r.top + r.height / 2}; })")
    assert len(dots) == 9 and all(d["title"] for d in dots), dots
    page.js("window.over = null; document.addEventListener('mouseover', "
            "function (e) { window.over = e.target; });")
    for d in dots:
        page.mouse("mouseMoved", d["x"], d["y"])
        got = page.js("(function () { var c = window.over && window.over.closest('circle');"
                      " return c ? [c.dataset.i, c.querySelector('title').textContent] : null; })()")
        # two transports' points can coincide (equal round trips): the later one is on top
        if got and got[0] != str(d["i"]):
            other = next(o for o in dots if str(o["i"]) == got[0])
            assert abs(other["x"] - d["x"]) < 14 and abs(other["y"] - d["y"]) < 14, (d, got)
            continue
        assert got == [str(d["i"]), d["title"]], (d, got)
