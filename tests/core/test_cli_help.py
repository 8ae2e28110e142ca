"""Every command's help: each option says what it is for, nothing is eaten as markup, the extras are named,
and ``attndyn --version`` / ``--help`` import no heavy module."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from rich.text import Text

from attndyn.cli import COMMANDS, app, main

SRC = Path(__file__).resolve().parents[2] / "src"

#: Commands (and every sub-command below them) whose help must name the extra they need.
EXTRAS = {("pretrained",): "[pretrained]", ("control",): "[control]"}


def _commands(group, ctx, path=()):
    """(path, click command) for every command and sub-command, each built as when it runs."""
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield path + (name,), cmd
        if hasattr(cmd, "list_commands"):  # a group (typer vendors its own click)
            yield from _commands(cmd, ctx, path + (name,))


@pytest.fixture(scope="module")
def commands():
    root = typer.main.get_command(app)
    return list(_commands(root, typer.Context(root, info_name="attndyn")))


def test_every_option_has_help(commands):
    names = {" ".join(p) for p, _ in commands}
    assert len(commands) >= 14 and {"sentiment predict", "pretrained analyze", "hardmax"} <= names
    missing = [
        f"{' '.join(path)} {p.opts[0] if p.opts else p.name}"
        for path, cmd in commands
        for p in cmd.params
        if not (getattr(p, "help", None) or "").strip() and p.name != "help"
    ]
    assert missing == []


def test_no_help_text_is_eaten_as_markup(commands):
    """What rich shows of each help text is the text itself: '[pretrained]' must be written '\\[pretrained]'."""
    texts = [(" ".join(path), cmd.help or "") for path, cmd in commands]
    texts += [(f"{' '.join(path)} {p.name}", p.help or "") for path, cmd in commands for p in cmd.params]
    eaten = [(where, t) for where, t in texts if Text.from_markup(t).plain != t.replace("\\[", "[")]
    assert eaten == []


def test_the_root_lists_each_command_with_its_own_first_help_paragraph(commands):
    """`attndyn --help` shows COMMANDS' lines without importing the commands: they must be the commands' own."""
    import inspect

    top = {path[0]: cmd for path, cmd in commands if len(path) == 1}
    assert list(top) == list(COMMANDS)
    for name, cmd in top.items():
        assert COMMANDS[name][1] == inspect.cleandoc(cmd.help or "").split("\n\n")[0], name


def _help(argv, capsys):
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_every_rendered_help_is_clean_and_names_its_extra(commands, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    bad = []
    for path in [(), *(p for p, _ in commands)]:
        out = _help(list(path), capsys)
        where = " ".join(("attndyn", *path))
        assert "Usage:" in out, where
        body = re.sub(r"[│╭╮╰╯─]", " ", out)  # the panels' frames
        if re.search(r"\(\s*\)|\[\s*\]", body):
            bad.append(f"{where}: empty brackets")
        # two spaces between words of a sentence: markup eaten in the middle ("needs the  extra")
        for line in body.splitlines():
            if re.search(r"[a-z,;]  +[a-z]", line.strip()):
                bad.append(f"{where}: doubled space in {line.strip()!r}")
        need = next((e for key, e in EXTRAS.items() if path[: len(key)] == key), None)
        if need and need not in " ".join(body.split()):
            bad.append(f"{where}: does not name the {need} extra")
    assert "[pretrained]" in _help([], capsys)  # the root's list of commands too
    assert bad == []


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_neither_torch_nor_numpy(argv):
    heavy = ("torch", "numpy", "scipy", "sklearn", "matplotlib", "rich.console" if argv == ["--version"] else "torch")
    r = _fresh(
        "import sys\nfrom attndyn.cli import main\n"
        f"rc = main({argv!r})\n"
        f"print('loaded:', sorted(m for m in {heavy!r} if m in sys.modules), rc)"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "loaded: [] 0"
    if argv == ["--version"]:
        assert r.stdout.startswith("attndyn ")
    else:
        assert "hardmax" in r.stdout and "[pretrained]" in r.stdout


def test_import_attndyn_is_lazy_and_the_api_still_answers():
    r = _fresh(
        "import sys\nimport attndyn\n"
        "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'sklearn') if m in sys.modules))\n"
        "t = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]], layers=3)\n"
        "from attndyn import InputError, leaders\n"
        "print(leaders(t).indices if hasattr(leaders(t), 'indices') else 'ok', 'scipy.cluster' in sys.modules)\n"
        "print(attndyn.analysis.clusters.__module__, attndyn.nonexistent if False else 'no such name is an error')\n"
    )
    assert r.returncode == 0, r.stderr
    first, _, third = r.stdout.splitlines()
    assert first == "[]"
    assert third == "attndyn.analysis._clusters no such name is an error"


def test_flags_are_shown_without_a_value_type(capsys):
    """Issue 34: help showed `--version <bool>` and `--help <bool>`, as if plain flags took a value."""
    for argv in (["--help"], ["hardmax", "--help"], ["sweep", "run", "--help"], ["sentiment", "predict", "--help"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "--help" in out and "<bool>" not in out, argv


#: Sub-commands of the groups, asked for their help and given a bad option in a fresh interpreter as well.
SUBCOMMANDS = (["sentiment", "train"], ["sentiment", "predict"], ["sentiment", "faithfulness"], ["data", "imdb"])


@pytest.mark.parametrize("path", [[n] for n in COMMANDS] + list(SUBCOMMANDS), ids=" ".join)
def test_a_subcommand_parses_and_shows_its_help_before_importing_its_world(path):
    """Issue 34: a subcommand's --help took 4.6 s, a missing file 3.0 s: they imported torch before parsing (the
    sentiment group's options read the recipes' values from a torch-free table, attndyn.sentiment._defaults)."""
    heavy = ("torch", "numpy", "scipy", "sklearn", "matplotlib", "panel", "transformers", "numba")
    for argv, code in (([*path, "--help"], 0), ([*path, "--no-such-option"], 2)):
        r = _fresh(
            "import sys\nfrom attndyn.cli import main\n"
            f"rc = main({argv!r})\n"
            f"print('loaded:', sorted(m for m in {heavy!r} if m in sys.modules), rc)"
        )
        assert r.stdout.splitlines()[-1] == f"loaded: [] {code}", (argv, r.stdout[-300:], r.stderr[-300:])


def test_the_help_names_the_softmax_methods_of_the_engine():
    from attndyn._softmax import METHODS
    from attndyn.cli._dynamics import METHODS as SHOWN

    assert SHOWN == METHODS


@pytest.mark.parametrize("command", [["hardmax"], ["softmax"], ["control", "--leaders", "0"]])
def test_a_missing_token_file_is_refused_before_the_engine_is_imported(command):
    r = _fresh(
        "import sys\nfrom attndyn.cli import main\n"
        f"rc = main([{command[0]!r}, 'no-such-file.npy', *{command[1:]!r}])\n"
        "print('loaded:', sorted(m for m in ('torch', 'scipy') if m in sys.modules), rc)"
    )
    assert "does not exist" in r.stderr and r.stdout.splitlines()[-1] == "loaded: [] 2"
