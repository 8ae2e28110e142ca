"""The line a command writes on a terminal while attndyn's kernels compile (attndyn.cli._compiling)."""

import io

import numba
import pytest
import typer

from attndyn.cli import app
from attndyn.cli._compiling import NOTICE, compile_notice, with_compile_notice

from .test_cli_help import _commands


class Terminal(io.StringIO):
    def isatty(self):
        return True


def fresh_kernel(module):
    """A compiled function never compiled before (no cache), as if defined in ``module``."""

    def add(x):
        return x + 1

    add.__module__ = module
    return numba.njit(add)


def test_the_first_kernel_compiled_writes_one_line_on_a_terminal():
    out = Terminal()
    kernel = fresh_kernel("attndyn._fresh")
    with compile_notice(out):
        assert kernel(1) == 2
        assert kernel(1.5) == 2.5  # a second compile (another type): no second line
        assert fresh_kernel("attndyn._other")(2) == 3
    assert out.getvalue() == NOTICE + "\n"
    assert fresh_kernel("attndyn._after")(3) == 4  # the listener is gone with the block
    assert out.getvalue() == NOTICE + "\n"


def test_nothing_is_written_off_a_terminal_or_for_another_library():
    plain, terminal = io.StringIO(), Terminal()
    with compile_notice(plain):
        fresh_kernel("attndyn._fresh")(1)
    with compile_notice(terminal):
        fresh_kernel("someone_else.kernels")(1)
        fresh_kernel("attndyn_extra")(1)  # a package whose name only starts like ours
    assert plain.getvalue() == "" and terminal.getvalue() == ""


def test_a_failed_compile_is_announced_and_raises_as_before():
    out = Terminal()
    kernel = fresh_kernel("attndyn._fresh")
    with pytest.raises(numba.core.errors.TypingError), compile_notice(out):
        kernel("text")
    assert out.getvalue() == NOTICE + "\n"


def test_every_command_runs_inside_the_notice_and_no_group_callback_does():
    root = typer.main.get_command(app)
    commands = list(_commands(root, typer.Context(root, info_name="attndyn")))
    leaves = [(p, c) for p, c in commands if not hasattr(c, "list_commands")]
    groups = [(p, c) for p, c in commands if hasattr(c, "list_commands")]
    assert len(leaves) >= 14 and groups
    noticed = with_compile_notice(print).__code__  # the wrapper's code, whatever it wraps

    def wrapped(c):
        return getattr(c.callback, "__code__", None) is noticed

    assert [" ".join(p) for p, c in leaves if not wrapped(c)] == []
    assert not any(wrapped(c) for _, c in groups)
