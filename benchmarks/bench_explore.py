"""How fast ``attndyn explore`` answers: start-up, and an edit's round trip in a real browser.

    python benchmarks/bench_explore.py [--repeat 3] [--edits 20] [--json docs/results/explore.json]

* start-up: ``attndyn explore --no-browser --port P`` in a fresh interpreter, from the command's start to the
  printed address and to the first page served (best of ``--repeat``);
* round trip: headless Chromium (Debian's ``/usr/bin/chromium``, driven by playwright) on the hardmax playground
  with a random cloud of n = 200 tokens; each edit moves the layers slider by one (30 <-> 29) with the keyboard,
  and the time is taken from the key press until the page shows the new leaders line (the server reruns
  ``attndyn.hardmax`` and the analysis, Bokeh redraws); the page's own figure of the server's share is kept too;
* 3-D frames: the cube preset, the elevation slider moved by one step, until the page shows the new angle.

The load (one-minute average) before and after is printed and recorded: on a busy machine the numbers say
little. Targets: start-up <= 5 s, an edit <= 200 ms for n <= 200 and 30 layers. Needs the explore extra,
playwright and chromium; not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)

SRC = Path(__file__).resolve().parents[1] / "src"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start() -> tuple[subprocess.Popen, int, float, float]:
    """The server process, its port, seconds to the printed address and to the first page served."""
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from attndyn.cli import main; main()", "explore", "--no-browser", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    address = time.perf_counter() - t0
    if f"localhost:{port}" not in line:
        proc.kill()
        raise SystemExit(f"explore did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    urllib.request.urlopen(f"http://localhost:{port}/", timeout=120).read()
    return proc, port, address, time.perf_counter() - t0


def _changed(page, selector: str, before: str, timeout: float = 30.0) -> tuple[str, float]:
    """The element's new text and the seconds until it differs from ``before`` (polled every few ms)."""
    t0 = time.perf_counter()
    text = before
    while text == before and time.perf_counter() - t0 < timeout:
        text = page.locator(selector).inner_text()
    return text, time.perf_counter() - t0


def _browser(port: int, edits: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1300, "height": 950}
        )
        page = ctx.new_page()
        page.goto(f"http://localhost:{port}/")
        page.wait_for_selector("#leaders", timeout=120_000)
        page.locator(".tokens-select select").select_option("random cloud")
        page.wait_for_timeout(1500)
        handle = page.locator(".n-slider .noUi-handle")
        handle.focus()
        while "n = 200," not in page.locator("small:has(#redraw-ms)").inner_text():
            page.keyboard.press("PageUp")
            page.wait_for_timeout(300)
        status = "small:has(#redraw-ms)"
        line = page.locator("b", has_text="leaders at layer").first
        page.locator(".layers-slider .noUi-handle").focus()
        trips, server = [], []
        for k in range(edits):
            before = line.inner_text()
            page.keyboard.press("ArrowLeft" if k % 2 == 0 else "ArrowRight")
            _, dt = _changed(page, 'b:has-text("leaders at layer")', before)
            trips.append(1000 * dt)
            server.append(float(page.locator("#redraw-ms").inner_text()))
            page.wait_for_timeout(150)
        out["roundtrip_ms"] = {"median": statistics.median(trips), "max": max(trips), "n": len(trips)}
        out["server_ms"] = {"median": statistics.median(server), "max": max(server)}
        out["tokens"] = page.locator(status).inner_text()
        page.locator(".tokens-select select").select_option("3-D: cube polytope")
        page.wait_for_selector(".view-3d img", timeout=60_000)
        page.wait_for_timeout(1500)
        page.locator(".elevation .noUi-handle").focus()
        frames = []
        for k in range(edits):
            before = page.locator("small:has(#frame-ms)").inner_text()
            page.keyboard.press("ArrowRight" if k % 2 == 0 else "ArrowLeft")
            _, dt = _changed(page, "small:has(#frame-ms)", before)
            frames.append(1000 * dt)
            page.wait_for_timeout(150)
        out["frame3d_ms"] = {"median": statistics.median(frames), "max": max(frames), "n": len(frames)}
        ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="Start-ups timed; the best is kept.")
    ap.add_argument("--edits", type=int, default=20, help="Edits (and 3-D frames) timed in the browser.")
    ap.add_argument("--json", type=Path, help="Write the figures to this JSON file.")
    args = ap.parse_args()
    result: dict = {
        "script": "benchmarks/bench_explore.py",
        "command": "python benchmarks/bench_explore.py " + " ".join(sys.argv[1:]),
        "cores": os.cpu_count(),
        "processor": processor(),
        "load1_before": round(os.getloadavg()[0], 2),
    }
    starts = []
    for _ in range(args.repeat):
        proc, port, address, page = _start()
        starts.append((address, page))
        proc.terminate()
        proc.wait(timeout=30)
    result["startup_address_s"] = round(min(a for a, _ in starts), 2)
    result["startup_page_s"] = round(min(p for _, p in starts), 2)
    print(f"start-up: address after {result['startup_address_s']} s, first page after {result['startup_page_s']} s")
    proc, port, _, _ = _start()
    try:
        result.update(_browser(port, args.edits))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    result["load1_after"] = round(os.getloadavg()[0], 2)
    for key in ("roundtrip_ms", "server_ms", "frame3d_ms"):
        r = result[key]
        result[key] = {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()}
        print(f"{key}: median {result[key]['median']} ms, max {result[key]['max']} ms")
    print(f"load: {result['load1_before']} before, {result['load1_after']} after")
    if args.json:
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(__import__("json").dumps(result, indent=2) + "\n")
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
