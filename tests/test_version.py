"""One version number, set in pyproject.toml, reported by the package and by ``attndyn --version``."""

import tomllib
from importlib.metadata import version
from pathlib import Path

import attndyn
from attndyn.cli import main

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_comes_from_pyproject():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert attndyn.__version__ == version("attndyn") == declared


def test_cli_version_prints_it_and_exits_zero(capsys):
    assert main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert out == f"attndyn {attndyn.__version__}\n" and err == ""


def test_cli_version_wins_over_a_command(capsys):
    # --version is eager: it answers before a sub-command would parse (and complain about) its arguments
    assert main(["--version", "hardmax"]) == 0
    assert capsys.readouterr().out.startswith("attndyn ")


def test_cli_without_arguments_still_shows_help(capsys):
    assert main([]) == 0
    out, _ = capsys.readouterr()
    assert "--version" in out and "hardmax" in out
