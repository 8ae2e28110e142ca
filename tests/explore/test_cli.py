"""`attndyn explore`: refusals in one line with exit status 2; the help imports no Panel."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from attndyn.cli import main


def test_missing_extra_is_one_line_exit_2(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "panel" else real(name, *a))
    assert main(["explore", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err == 'error: attndyn explore needs Panel: pip install -e ".[explore]" (or pip install panel)\n'


def test_bad_options_exit_2(capsys, tmp_path):
    assert main(["explore", "--no-browser", "--port", "70000"]) == 2
    assert capsys.readouterr().err == "error: --port 70000: choose 0 (a free port) to 65535\n"
    assert main(["explore", "--no-browser", "--model", str(tmp_path / "none")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_help_does_not_import_panel():
    code = "import sys; from attndyn.cli import main; main(['explore', '--help']); print('panel' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "--no-browser" in out.stdout and out.stdout.strip().endswith("False")
