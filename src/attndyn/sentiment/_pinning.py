"""The same trained weights on every processor: the CPU kernels' code paths, pinned before torch loads.

torch's CPU kernels and the MKL library inside torch choose their code by the processor: ATen runs its
AVX-512, AVX2 or plain ("DEFAULT") build of each kernel, MKL its own branch per instruction set. The
branches round differently (vector widths change the order of sums, FMA fuses a multiply and an add), and
training amplifies a last-bit difference into another model: on an AVX2 machine the default command once
trained a seed-0 model that read "The film was good." as negative, where an AVX-512 machine's read it as
positive. Pinned, both run the same instructions:

- ``ATEN_CPU_CAPABILITY=avx2``: torch's AVX2 kernels, on every processor that has AVX2 (every x86-64
  processor of the last decade, both kinds of machine this project runs on). The plain build would pin
  processors without AVX2 as well, but trains slower (1.37x the native CPU time in
  docs/results/bench_pinned_training.json; docs/sentiment-results.md, "The same model on every machine");
  such processors run unpinned, and say so.
- ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility on its SSE2 branch, the one MKL
  documents as giving the same results on every Intel and non-Intel processor.

Both are read when torch first uses them, so they are set before torch loads: ``attndyn sentiment ...``
pins them at start (``ATTNDYN_KERNELS=native`` in the environment leaves the processor's own choice), and
a Python user calls :func:`pin_kernels` first thing, or exports the two variables. :func:`kernel_paths`
says what is in force, and a trained model records it.

What is not pinned: the C library's ``expf``/``logf`` (used by a few scalar tails) choose an FMA variant
on every processor with AVX2, so they agree wherever the pin applies; numba's compiled hardmax (the
validation accuracy that picks the best epoch) follows IEEE arithmetic without contraction, the same on
every target (tests/sentiment/test_pinned_training.py trains under ``NUMBA_CPU_NAME=generic`` as well).
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["PINNED_KERNELS", "KernelPaths", "pin_kernels", "kernel_paths"]

#: The environment that pins the code paths (set before torch loads).
PINNED_KERNELS: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}

#: ``ATTNDYN_KERNELS=native`` keeps the processor's own code paths in ``attndyn sentiment ...``.
POLICY_VARIABLE = "ATTNDYN_KERNELS"

# MKL's branch numbers (mkl_cbwr.h): what mkl_cbwr_get(MKL_CBWR_BRANCH) returns.
_MKL_BRANCHES = {
    1: "OFF",  # no conditional reproducibility: MKL's own choice, call by call
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}

# Set by pin_kernels when torch had been imported with other settings: the pin may then be partial.
_late: list[str] = []


@dataclass(frozen=True)
class KernelPaths:
    """The CPU code paths in force: torch's ``aten`` capability (``"AVX2"``, ``"AVX512"``, ``"DEFAULT"``,
    ...), MKL's ``mkl`` branch (``"COMPATIBLE"``, ``"AUTO"``, ...; ``"none"`` without MKL), whether they
    are the pinned ones (``pinned``), why not (``reason``, empty when pinned) and the ``processor``
    (its name and widest vector extension: a record, not part of the identity)."""

    aten: str
    mkl: str
    pinned: bool
    reason: str
    processor: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for a log: ``kernels: pinned (ATen AVX2, MKL COMPATIBLE) on ...``."""
        state = "pinned" if self.pinned else f"NOT pinned ({self.reason})"
        return f"kernels: {state}: ATen {self.aten}, MKL {self.mkl}; processor {self.processor}"


def _cpu_flags() -> tuple[str, set[str]]:
    """The processor's name and its flags, from /proc/cpuinfo (Linux); ("unknown", set()) elsewhere."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown", set()
    name, flags = "unknown", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name == "unknown":
            name = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return name, flags


def _processor() -> str:
    name, flags = _cpu_flags()
    widest = next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in flags), "unknown")
    return f"{name} ({widest.upper()})"


def _has_avx2() -> bool | None:
    """True/False from the processor's flags; None where they cannot be read (not Linux)."""
    _, flags = _cpu_flags()
    return ("avx2" in flags and "fma" in flags) if flags else None


def pin_kernels() -> None:
    """Pin the CPU code paths (:data:`PINNED_KERNELS`) for this process; call before importing torch.

    Sets the two environment variables; where torch was already imported with other values, also sets MKL's
    branch through its own function, and :func:`kernel_paths` then reports the pin as not in force (torch may
    already have chosen some kernels). Does nothing under ``ATTNDYN_KERNELS=native``.
    """
    if os.environ.get(POLICY_VARIABLE, "pinned") == "native":
        return
    if "torch" in sys.modules and any(os.environ.get(k) != v for k, v in PINNED_KERNELS.items()):
        _late.append("torch was imported before pin_kernels(): call it first, or export " + _exports())
        os.environ.update(PINNED_KERNELS)
        _mkl_set_compatible()
        return
    os.environ.update(PINNED_KERNELS)


def _exports() -> str:
    return " ".join(f"{k}={v}" for k, v in PINNED_KERNELS.items())


def _mkl() -> Any | None:
    """MKL's service functions inside torch's library, or None (no MKL in this torch)."""
    import torch

    for lib in sorted(Path(torch.__file__).parent.joinpath("lib").glob("libtorch_cpu.*")):
        try:
            handle = ctypes.CDLL(str(lib))
            handle.mkl_serv_cbwr_get.restype = ctypes.c_int
            return handle
        except (OSError, AttributeError):
            continue
    return None


def _mkl_branch() -> str:
    handle = _mkl()
    if handle is None:
        return "none"
    code = int(handle.mkl_serv_cbwr_get(ctypes.c_int(1)))  # MKL_CBWR_BRANCH
    return _MKL_BRANCHES.get(code, f"code {code}")


def _mkl_set_compatible() -> None:
    handle = _mkl()
    if handle is not None:
        handle.mkl_serv_cbwr_set(ctypes.c_int(3))  # MKL_CBWR_COMPATIBLE; refused (ignored) once MKL has run


def kernel_paths() -> KernelPaths:
    """The code paths torch and MKL use in this process (imports torch), and whether they are the pinned ones."""
    import torch

    aten = str(torch.backends.cpu.get_cpu_capability())
    mkl = _mkl_branch()
    reasons = []
    if os.environ.get(POLICY_VARIABLE, "pinned") == "native":
        reasons.append(f"{POLICY_VARIABLE}=native")
    elif _late:
        reasons.append(_late[0])
    if aten != "AVX2":
        reasons.append(
            "this processor has no AVX2: torch runs other kernels, whose rounding differs"
            if _has_avx2() is False
            else f"torch runs its {aten} kernels"
        )
    if mkl not in ("COMPATIBLE", "none"):
        reasons.append(f"MKL runs its {mkl} branch")
    if reasons and not _late and POLICY_VARIABLE not in os.environ:
        reasons.append(f"call pin_kernels() before importing torch, or export {_exports()}")
    return KernelPaths(
        aten=aten, mkl=mkl, pinned=not reasons, reason="; ".join(dict.fromkeys(reasons)), processor=_processor()
    )
