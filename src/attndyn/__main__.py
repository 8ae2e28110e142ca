"""``python -m attndyn`` and the ``attndyn`` script (``[project.scripts]``): :func:`attndyn.cli.main`.

This module imports nothing at its top but :mod:`sys`, so that a Ctrl-C pressed while the command line is still
loading (its imports: typer, click, rich) ends the way one during a command does: the line ``interrupted`` on
standard error and exit status 130, never a traceback.
"""

import sys


def main() -> int:
    """Run the ``attndyn`` command line on ``sys.argv``; returns (or exits with) the exit status."""
    try:
        from .cli import main as run

        return run()
    except KeyboardInterrupt:  # before attndyn.cli's own handler runs, or after it
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
