import hashlib
import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

# The suite runs many tiny problems: intra-op threads only add synchronisation cost there
# (and stall badly when the machine is busy). Library code never changes this setting.
torch.set_num_threads(1)


def _tree_digest(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder``: relative path -> sha256 of its bytes (or 'dir')."""
    return {
        str(p.relative_to(folder)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def snapshot():
    """``snapshot(folder)``: what is under a folder, byte for byte, to check that a command changed nothing."""
    return _tree_digest


@pytest.fixture
def refused(capsys, snapshot):
    """``refused(folder, argv, message=None)``: ``attndyn argv`` ends with exit status 2 and one line on standard
    error starting ``error: `` (matching the regex ``message`` if given), no traceback, and nothing under
    ``folder`` changed; returns that line."""
    import re

    from attndyn.cli import main

    def check(folder: Path, argv: list[str], message: str | None = None) -> str:
        before = _tree_digest(folder)
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2, (argv, code, out[-300:], err[-300:])
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
        assert "Traceback" not in err + out
        assert message is None or re.search(message, lines[0]), (message, lines[0])
        assert _tree_digest(folder) == before, argv
        return lines[0]

    return check


@pytest.fixture(scope="session")
def chromium_flags() -> list[str]:
    """Headless Chromium's flags here: no sandbox (root), no GPU, and none of its background network traffic."""
    return list(_CHROMIUM_FLAGS)


_CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
