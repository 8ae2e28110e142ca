"""`attndyn explore` in headless Chromium: change a slider and a matrix entry, read the leaders, compare with the library;
then 3-D tokens: the same leaders check, and the elevation slider turns the picture.

Needs Panel (the explore extra), playwright (the Python package; its own browsers are never downloaded)
and Debian's chromium (/usr/bin/chromium). Skipped without them, except that in CI (CI=true) a
missing chromium fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

import attndyn
from attndyn.explore._hardmax_view import CUBE_TOKENS

pytest.importorskip("panel")
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
SQUARE = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2]]


def _need_browser():
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing in CI: install Debian's `chromium` package (apt-get install -y chromium)")
        pytest.skip("headless chromium not installed (apt-get install -y chromium)")
    return pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server():
    """`attndyn explore --no-browser` on a free port, in a subprocess; stopped (and checked) at the end."""
    from attndyn.explore._app import free_port

    port = free_port()
    src = str(Path(attndyn.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    code = "from attndyn.cli import main; main()"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "explore", "--no-browser", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    line = proc.stdout.readline() if proc.stdout else ""
    started = time.perf_counter() - t0
    assert f"http://localhost:{port}/" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
    yield port, started
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]


@pytest.mark.browser
def test_explore_in_headless_chromium(server, tmp_path, chromium_flags):
    sync_api = _need_browser()
    port, started = server
    url = f"http://localhost:{port}/"
    page_html = urllib.request.urlopen(url, timeout=60).read().decode()
    hosts = set(re.findall(r"https?://([^/\"'\s:]+)", page_html))
    assert hosts <= {"localhost", "127.0.0.1"}, hosts  # nothing from a CDN
    requests: list[str] = []
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=chromium_flags,
            viewport={"width": 1300, "height": 950},
        )
        try:
            page = ctx.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            page.wait_for_selector("#leaders", timeout=60_000)
            # a slider: layers 30 -> 27 with the keyboard; a matrix entry: A = [[2, 1], [1, 1]]
            page.locator(".layers-slider .noUi-handle").focus()
            for _ in range(3):
                page.keyboard.press("ArrowLeft")
            box = page.locator(".A-input input")
            box.fill("2 1; 1 1")
            box.press("Enter")
            expected = attndyn.leaders(attndyn.hardmax(SQUARE, alpha=0.5, A=[[2, 1], [1, 1]], layers=27)).indices
            leaders = _wait_for_text(page, "#leaders", ", ".join(map(str, expected)))
            assert "layer 27" in page.locator("b", has_text="leaders at layer").first.inner_text()
            assert page.locator("#error").count() == 0
            page.screenshot(path=str(tmp_path / "explore.png"))
            assert leaders == ", ".join(map(str, expected))
            assert (tmp_path / "explore.png").stat().st_size > 10_000
            # 3-D tokens: the library's picture replaces the plane; the elevation slider turns it
            page.locator(".tokens-select select").select_option("3-D: cube polytope")
            cube = attndyn.leaders(attndyn.hardmax(CUBE_TOKENS, alpha=0.5, layers=27)).indices  # A = I in d = 3
            assert _wait_for_text(page, "#leaders", ", ".join(map(str, cube))) == ", ".join(map(str, cube))
            page.wait_for_selector(".view-3d img", timeout=30_000)
            page.locator(".elevation .noUi-handle").focus()
            page.keyboard.press("ArrowRight")
            seen = _wait_for_text(page, "small:has(#frame-ms)", "elevation 35°", contains=True)
            assert "azimuth -60°, elevation 35°" in seen, seen
            assert page.locator("#error").count() == 0
            page.screenshot(path=str(tmp_path / "explore-3d.png"))
        finally:
            ctx.close()
    outside = {u for u in requests if not re.match(r"(https?|ws)://(localhost|127\.0\.0\.1)[:/]|blob:|data:", u)}
    assert not outside, outside
    print(f"started in {started:.1f} s")


#: Every button, input, select, text area and label of the page (inside Panel's shadow roots too) that sticks out of a
#: box around it: a label cut off ("state (JSON/NPY for the C"), a seed box under the plot beside its column.
_CUT_OFF = """
() => {
  const out = [];
  const parentOf = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
  const walk = (root) => {
    root.querySelectorAll('*').forEach(el => {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (!['BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'LABEL'].includes(el.tagName)) return;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return;
      if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'LABEL') out.push(`${el.tagName} "${(el.innerText || el.value || '').trim()}" text wider than its box`);
      for (let a = parentOf(el); a; a = parentOf(a)) {
        if (!(a instanceof Element)) break;
                const b = a.getBoundingClientRect();
        if (b.width === 0) continue;
        if (r.left < b.left - 1 || r.right > b.right + 1) {
          out.push(`${el.tagName} "${(el.innerText || el.value || '').trim().slice(0, 40)}" [${Math.round(r.left)}, ${Math.round(r.right)}] cut by ${a.tagName}.${a.className} [${Math.round(b.left)}, ${Math.round(b.right)}]`);
          break;
        }
      }
    });
  };
  walk(document);
  return out;
}
"""


@pytest.mark.browser
def test_every_tab_fits_its_controls(server, tmp_path, chromium_flags):
    """Issue 34: buttons were cut off and the softmax tab's seed box clipped by the plots beside the controls."""
    sync_api = _need_browser()
    port, _ = server
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=chromium_flags,
            viewport={"width": 1300, "height": 950},
        )
        try:
            page = ctx.new_page()
            page.goto(f"http://localhost:{port}/")
            page.wait_for_selector("#leaders", timeout=60_000)
            for tab in ("Hardmax playground", "Softmax regimes", "Control", "Sentiment", "Sphere"):
                page.get_by_text(tab, exact=True).first.click()
                page.wait_for_timeout(1500)
                page.screenshot(path=str(tmp_path / f"{tab.split()[0].lower()}.png"))
                assert page.evaluate(_CUT_OFF) == [], tab
        finally:
            ctx.close()


def _wait_for_text(page, selector: str, want: str, timeout: float = 30.0, *, contains: bool = False) -> str:
    """The element's text once it equals (or ``contains``) ``want`` (or whatever it shows when time runs out)."""
    end = time.monotonic() + timeout

    def done(text: str) -> bool:
        return want in text if contains else text == want

    text = page.locator(selector).inner_text()
    while not done(text) and time.monotonic() < end:
        time.sleep(0.2)
        text = page.locator(selector).inner_text()
    return text
