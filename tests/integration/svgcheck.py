"""Every picture checked as a person sees it (issue 12, item 5): an SVG udsprobe wrote is
rasterised with rsvg-convert and the raster must be a real picture at the size the SVG
declares. One helper for every test that writes an SVG (--svg, --out's flame/diff/udsprobe,
sweep.svg, think.svg); tests/integration/test_browser.py does the same through Chromium.

Needs rsvg-convert (librsvg2-bin) and Pillow (python3-pil); scripts/install-deps.sh installs
both, and a test skips with the reason when either is missing."""
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

SVG_NS = "{http://www.w3.org/2000/svg}"


def need_raster_tools():
    """Skip (with the reason) when the tools to look at a picture are not installed."""
    if not shutil.which("rsvg-convert"):
        pytest.skip("rsvg-convert not installed (librsvg2-bin; scripts/install-deps.sh)")
    try:
        import PIL  # noqa: F401
    except ImportError:
        pytest.skip("Pillow not installed (python3-pil; scripts/install-deps.sh)")


def declared_size(svg):
    """(width, height, viewBox) the SVG's root declares; width and height in px."""
    root = ET.parse(svg).getroot()
    assert root.tag == SVG_NS + "svg", root.tag
    box = [float(v) for v in root.get("viewBox", "").split()] or None
    return float(root.get("width")), float(root.get("height")), box


def ink(png):
    """(share of pixels that differ from the background, number of distinct colours): the
    background is the raster's most common colour."""
    from PIL import Image

    with Image.open(png) as im:
        rgb = im.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 24)
        total = rgb.width * rgb.height
    background = max(colours)[0]
    return 1 - background / total, len(colours)


def assert_not_blank(png, min_ink=0.01, min_colours=3):
    """A picture, not an empty canvas: at least min_ink of the pixels are drawn, in at least
    min_colours colours (text and lines alone give anti-aliasing greys)."""
    share, colours = ink(png)
    assert share >= min_ink and colours >= min_colours, \
        f"{png}: looks blank: {share:.2%} of pixels drawn, {colours} colours"
    return share


def png_size(png):
    from PIL import Image

    with Image.open(png) as im:
        assert im.format == "PNG", im.format
        return im.size


def assert_picture(svg, out_dir, width=None, height=None, zoom=1):
    """Rasterise svg with rsvg-convert (at zoom) into out_dir and assert: it converts, the
    raster is the size the SVG declares times zoom (and width/height when given, at zoom 1),
    and it is not blank. Returns the PNG's path."""
    need_raster_tools()
    w, h, box = declared_size(svg)
    if width is not None:
        assert w == width, (svg, w)
    if height is not None:
        assert h == height, (svg, h)
    if box:  # the viewBox is the canvas itself: scaling keeps the aspect
        assert box[2:] == [w, h], (svg, box)
    png = out_dir / (svg.name + (f".x{zoom}" if zoom != 1 else "") + ".png")
    res = subprocess.run(["rsvg-convert", "-z", str(zoom), "-o", png, svg], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert png_size(png) == (round(w * zoom), round(h * zoom)), (svg, png_size(png))
    assert_not_blank(png)
    return png
