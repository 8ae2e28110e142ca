"""Every option and argument of every command says what it is for (`attndyn CMD --help`)."""

import typer

from attndyn.cli import app


def _commands(group, path=()):
    if hasattr(group, "commands"):  # a group (typer may vendor its own click)
        for name, cmd in group.commands.items():
            yield from _commands(cmd, path + (name,))
    else:
        yield " ".join(path), group


def test_every_option_has_help():
    root = typer.main.get_command(app)
    commands = list(_commands(root))
    assert len(commands) >= 10 and "sentiment predict" in dict(commands)
    missing = [
        f"{name} {p.opts[0] if p.opts else p.name}"
        for name, cmd in commands
        for p in cmd.params
        if not (getattr(p, "help", None) or "").strip() and p.name != "help"
    ]
    assert missing == []
