"""Small typed option objects shared by both engines: what to save, when to stop.

They check themselves on construction (like diffrax's ``SaveAt``), so a bad option fails
where it is written, with a message naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._validation import InputError

__all__ = ["SaveAt", "StopOnConvergence"]


@dataclass(frozen=True)
class SaveAt:
    """What a run keeps.

    Args:
        every: keep the state at every ``every``-th layer (hardmax) or grid time (softmax);
            ``None`` keeps only the first and the last state (a summary run, constant memory).
            The last state is always kept.
        follow: hardmax only — also keep the follow sets :math:`C_i` (boolean ``(n, n)`` per
            kept layer).
        attention: softmax only — also keep the attention matrix :math:`P(t)` at kept times.
        final_attention: softmax only — keep the final attention matrix (``attention_final``);
            it is (B, n, n), so it is kept only when asked for (``attention=True`` implies it).

    >>> SaveAt(every=10).every
    10
    """

    every: int | None = 1
    follow: bool = False
    attention: bool = False
    final_attention: bool = False

    def __post_init__(self) -> None:
        if self.every is not None and (
            isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1
        ):
            raise InputError(f"SaveAt(every=...) must be a positive integer or None, got {self.every!r}")
        for name in ("follow", "attention", "final_attention"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"SaveAt({name}=...) must be True or False, got {getattr(self, name)!r}")

    def keeps(self, k: int, last: int) -> bool:
        """Whether step index ``k`` (0..last) is kept."""
        if k == 0 or k == last:
            return True
        return self.every is not None and k % self.every == 0


@dataclass(frozen=True)
class StopOnConvergence:
    r"""Stop once the state no longer moves, with a scale-invariant test.

    A sequence has converged at step k when
    :math:`\max_i \lVert z_i^{k+1} - z_i^k\rVert_\infty \le \mathrm{rtol}\cdot
    \max_i \lVert z_i^k\rVert_\infty` (per unit time for continuous dynamics), i.e. the test
    gives the same answer when all tokens are multiplied by a constant. The run stops when every
    sequence of the batch has converged.
    """

    rtol: float = 1e-12

    def __post_init__(self) -> None:
        if not (isinstance(self.rtol, (int, float)) and math.isfinite(self.rtol) and self.rtol > 0):
            raise InputError(f"StopOnConvergence(rtol=...) must be a positive number, got {self.rtol!r}")
