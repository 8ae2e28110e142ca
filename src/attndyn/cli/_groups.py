"""Command groups with a default command, shared by ``attndyn sphere`` and ``attndyn sweep``."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

__all__ = ["RunByDefault", "run_by_default"]


class RunByDefault(TyperGroup):
    """A group whose first argument, when it names no command (a file, an option), goes to ``run``; its usage line
    is the class's ``usage``."""

    usage = ""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.usage]


def run_by_default(name: str, usage: str, help: str) -> typer.Typer:
    """The typer app of ``attndyn NAME``: a :class:`RunByDefault` group with the usage line ``usage``."""
    group = type(f"_{name.title()}Group", (RunByDefault,), {"usage": usage})
    return typer.Typer(cls=group, name=name, no_args_is_help=True, add_completion=False, help=help)
