"""The report renders in headless Chromium without console errors and shows every section.

Needs Debian's `chromium` (/usr/bin/chromium). Skipped when it is absent, except in CI (CI=true),
where its absence is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from attndyn.reproduce import SECTIONS

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


@pytest.mark.browser
def test_report_in_headless_chromium(quick_report, chromium_flags):
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing in CI: install Debian's `chromium` package (apt-get install -y chromium)")
        pytest.skip(
            "headless chromium not installed (apt-get install -y chromium); the browser test needs /usr/bin/chromium"
        )
    page = quick_report.files["report"].resolve()
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            CHROMIUM,
            "--headless",
            *chromium_flags,
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    errors = [ln for ln in console if re.search(r"error|uncaught|failed", ln, re.I)]
    assert not errors, errors
    assert not re.search(r"net::ERR_|Failed to load resource", proc.stderr), proc.stderr[-2000:]
    assert 'data-ready="1"' in dom  # the report's script ran to its end
    for name in SECTIONS:
        assert f'id="exp-{name}"' in dom
    assert re.search(r'class="frame on"', dom)  # the slider shows a frame
