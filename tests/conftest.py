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
