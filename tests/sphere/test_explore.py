"""The explorer's Sphere view: its logic against the library, the page without a browser, and in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import attndyn
import attndyn.sphere as sp
from attndyn import InputError
from attndyn.explore._sphere_view import SphereState, run_sphere, sphere_tokens

pn = pytest.importorskip("panel")
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def library_clusters(beta: float, **kw) -> int:
    state = SphereState(beta=beta, **kw)
    traj = sp.evolve(sphere_tokens(state.n, state.d, state.seed), **state.run_kwargs())
    return len(sp.sphere_clusters(traj.final_tokens, state.angle))


def test_the_view_measures_what_the_library_measures():
    res = run_sphere(SphereState(beta=2.0, attention="usa", time=5.0))
    assert len(res.clusters.clusters) == library_clusters(2.0, attention="usa", time=5.0)
    assert res.counts[0] == 32 and res.counts[-1] == len(res.clusters.clusters)
    assert res.energy.applies and res.energy.holds  # USA, Q = K = V = I: the energy rises
    assert (res.energies[1:] >= res.energies[:-1] * (1 - 1e-12)).all()


@pytest.mark.parametrize(("state", "match"), [
    (SphereState(n=0), r"n=0 tokens: choose 1 <= n <= 500"),
    (SphereState(d=4), r"d=4: the view draws the circle \(d = 2\) or the sphere \(d = 3\)"),
    (SphereState(norm="layer"), r"unknown normalisation 'layer'"),
])  # fmt: skip
def test_bad_states_are_refused(state, match):
    with pytest.raises(InputError, match=match):
        run_sphere(state)


def _shown(page) -> str:
    return page.status.object.split('<span id="sphere-clusters">')[1].split("</span>")[0]


def test_the_page_reruns_on_edits():
    from attndyn.explore._pages.sphere import SpherePage

    page = SpherePage()
    assert _shown(page) == str(library_clusters(1.0))
    import param

    page.beta.value = 9.0  # what the slider sends while dragged (no rerun), then on release:
    with param.edit_constant(page.beta):
        page.beta.value_throttled = 9.0
    page.norm.value = "ngpt"
    assert _shown(page) == str(library_clusters(9.0, norm="ngpt"))
    page.causal.value = True
    assert page.result.trajectory.params.causal and page.guard.pane.object == ""


@pytest.mark.browser
def test_the_sphere_tab_in_headless_chromium(tmp_path, chromium_flags):
    if CHROMIUM is None:
        pytest.skip("headless chromium not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from attndyn.explore._app import free_port

    port = free_port()
    src = str(Path(attndyn.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from attndyn.cli import main; main()", "explore", "--no-browser", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert f"http://localhost:{port}/" in (proc.stdout.readline() if proc.stdout else "")
        with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=chromium_flags,
                viewport={"width": 1300, "height": 950},
            )  # fmt: skip
            try:
                page = ctx.new_page()
                page.goto(f"http://localhost:{port}/")
                page.get_by_text("Sphere", exact=True).click()
                page.wait_for_selector("#sphere-clusters", timeout=60_000)
                assert _wait(page, "#sphere-clusters", str(library_clusters(1.0)))
                page.locator(".beta-slider .noUi-handle").focus()
                for _ in range(8):  # 1.0 -> 5.0 in steps of 0.5
                    page.keyboard.press("ArrowRight")
                assert _wait(page, "#sphere-beta", "5")  # the run of the slider's last value has been drawn
                assert _wait(page, "#sphere-clusters", str(library_clusters(5.0)))
                assert page.locator("#error").count() == 0
                page.screenshot(path=str(tmp_path / "sphere.png"))
                page.wait_for_timeout(1500)  # let the server finish sending the last update
                page.goto("about:blank")  # then close the session's websocket cleanly
                page.wait_for_timeout(500)
            finally:
                ctx.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]


def _wait(page, selector: str, want: str, timeout: float = 40.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        texts = [t for t in page.locator(selector).all_inner_texts() if re.fullmatch(r"[\d.]+", t)]
        if want in texts:
            return True
        time.sleep(0.2)
    return False


def test_an_under_resolved_usa_run_is_reported_not_hidden():
    """USA at beta = 6 with rk4 step 0.1 is under-resolved (velocities up to e^6): the energy falls, and the
    view's verdict says undecided, with the step that resolves it, instead of claiming the theorem or denying it."""
    res = run_sphere(SphereState(beta=6.0, attention="usa", time=5.0))
    assert res.energy.applies and res.energy.measured_holds is False and res.energy.holds is None
    assert "beyond rk4's stability interval" in res.energy.undecided


def test_the_exported_inputs_rerun_from_the_command_line(tmp_path, capsys, monkeypatch):
    import io
    import json
    import zipfile

    from attndyn.cli import main
    from attndyn.explore._export import bundle, figure_bytes
    from attndyn.explore._sphere_view import sphere_inputs, sphere_view_figure

    state = SphereState(n=8, beta=3.0, time=4.0, norm="peri", causal=True)
    res = run_sphere(state)
    zipfile.ZipFile(io.BytesIO(bundle(sphere_inputs(state)))).extractall(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = (tmp_path / "command.txt").read_text().split()[1:]
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    assert len(rec["clusters"]) == len(res.clusters.clusters)
    assert figure_bytes(sphere_view_figure(res), "png")[:4] == b"\x89PNG"
