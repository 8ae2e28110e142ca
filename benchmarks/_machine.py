"""The processor a benchmark ran on, for its result file (docs quote each time with its load and processor)."""

from __future__ import annotations

import platform
from pathlib import Path


def processor() -> str:
    """The processor's model name as Linux reports it (/proc/cpuinfo; a virtual machine may give only the family,
    e.g. "AMD EPYC"), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
