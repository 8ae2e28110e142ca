"""The documentation is tested against what it says (Sybil: README.md and docs/*.md).

* ```python blocks run in one namespace per document, in a fresh empty folder; a block written as
  a doctest session (``>>>`` lines) must print what the text shows (ELLIPSIS and
  NORMALIZE_WHITESPACE on).
* ```console blocks are command-line sessions: each ``$ attndyn ...`` line runs through
  :func:`attndyn.cli.main` and must print the lines below it (``...`` matches anything).
* ```bash blocks are illustrations of commands (installs, long runs): every ``attndyn`` line in
  them must name commands and options the command line has.
* ``<!-- skip: next -->`` before a block skips it; the comment says why (a long run or data this
  machine may not have), and the numbers such a block's text quotes are read from a result file
  (tests/test_doc_numbers.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import tempfile
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE, _ellipsis_match  # type: ignore[attr-defined]
from pathlib import Path

from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).parent

# The suite runs on the pinned CPU code paths (attndyn.sentiment.pin_kernels), set before anything imports
# torch: a small model trained here has the same bytes on every machine that runs the suite.
from attndyn.sentiment._pinning import pin_kernels  # noqa: E402

pin_kernels()


def _setup(namespace: dict) -> None:
    namespace["_cwd"] = os.getcwd()
    namespace["_tmp"] = tempfile.TemporaryDirectory()
    os.chdir(namespace["_tmp"].name)


def _teardown(namespace: dict) -> None:
    os.chdir(namespace["_cwd"])
    namespace["_tmp"].cleanup()


def _run_cli(argv: list[str]) -> str:
    from attndyn.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    text = out.getvalue()
    if code != 0:
        text += f"[exit status {code}]\n"
    return text


def _console(example) -> None:
    """Run each ``$ attndyn ...`` line and compare what it prints with the lines below it."""
    lines = example.parsed.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        argv = shlex.split(lines[i][2:], comments=True)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("$ "):
            j += 1
        want = "\n".join(lines[i + 1 : j]).strip()
        if argv[0] != "attndyn":
            raise AssertionError(f"console blocks run attndyn only, got {lines[i]!r}")
        got = _run_cli(argv[1:]).strip()
        if not _ellipsis_match(" ".join(want.split()), " ".join(got.split())):
            raise AssertionError(f"{lines[i]!r} printed:\n{got}\n\nthe text says:\n{want}")
        i = j


def _bash(example) -> None:
    """Every ``attndyn`` command line names commands and options that exist."""
    for raw in example.parsed.splitlines():
        line = raw.split(" #", 1)[0].strip().rstrip("\\").strip()
        words = line.replace("|", " | ").split()
        if "attndyn" in words:
            check_command_line(words[words.index("attndyn") + 1 :], raw)


def check_command_line(words: list[str], raw: str) -> None:
    """``words`` after ``attndyn``: the sub-commands must exist and every ``--option`` must be one of
    the command's (``a | b`` lists alternative sub-commands; ``[...]`` marks optional parts)."""
    import typer

    from attndyn.cli import app

    cmd = typer.main.get_command(app)  # typer may vendor click: groups are known by list_commands
    ctx = typer.Context(cmd, info_name="attndyn")
    words = [w.strip("[]") for w in words]
    while words and hasattr(cmd, "list_commands"):
        names = cmd.list_commands(ctx)
        alternatives = []
        if words and words[0] not in names and words[0] != "|":
            # a group may route its first argument itself (attndyn sweep SPEC is attndyn sweep run SPEC)
            sub = cmd.make_context(cmd.name, list(words), resilient_parsing=True)
            words = [*vars(sub).get("_protected_args", []), *sub.args]
        while words and not words[0].startswith("-"):
            if words[0] not in names and words[0] != "|" and any(p.param_type_name == "argument" for p in cmd.params):
                break  # a group that also takes arguments (attndyn sweep SPEC)
            name = words.pop(0)
            if name != "|":
                alternatives.append(name)
            if not (words and words[0] == "|"):
                break
        if not alternatives:
            break
        for name in alternatives:
            if name not in names:
                raise AssertionError(f"{raw!r}: {cmd.name} has no command {name!r} (it has {sorted(names)})")
        cmd = cmd.get_command(ctx, alternatives[-1])
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for w in words:
        flag = w.split("=", 1)[0]
        if flag.startswith("--") and flag not in known:
            raise AssertionError(f"{raw!r}: {cmd.name} has no option {flag!r}")


# Scripts beside the docs write the docs' pictures when run; `pytest docs/` must not import them.
collect_ignore = ["docs/conf.py", "docs/make_images.py", "docs/make_sentiment_images.py"]

pytest_collect_file = Sybil(
    parsers=[
        PythonCodeBlockParser(doctest_optionflags=ELLIPSIS | NORMALIZE_WHITESPACE),
        CodeBlockParser(language="console", evaluator=_console),
        CodeBlockParser(language="bash", evaluator=_bash),
        SkipParser(),
    ],
    patterns=["README.md", "docs/*.md"],
    path=".",
    setup=_setup,
    teardown=_teardown,
).pytest()
