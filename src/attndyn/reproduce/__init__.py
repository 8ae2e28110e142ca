"""``attndyn reproduce``: every figure and computable claim of both papers, set beside what we measure.

The report's sections (one function each, registered by name in :data:`SECTIONS`; the random instances of
its Monte Carlo claims are cells of :data:`attndyn.experiments.EXPERIMENTS`):

- hardmax paper: Fig. 1 (one step), Fig. 2 (four configurations), Fig. 7 / Example 5.2 (a leader
  that emerges at layer 1), Theorem 1.1 over random instances, Figs. 8-10 from a sentiment run;
- softmax paper: Theorem 2.1 / Fig. 3, Fig. 4, Theorem 3.1 / Fig. 5, Theorem 4.1 / Fig. 6,
  Conjecture 4.2 / Fig. 7, Theorem 5.1 / Fig. 8, Theorem C.5, Table 1 over random instances, and
  the proportion of good triples among real Ginibre matrices;
- the perspective paper (arXiv 2312.10794): the orthogonal start's gamma ODE, the USA energy over random starts,
  the phase diagram over (t, beta).

>>> from attndyn.reproduce import reproduce  # doctest: +SKIP
>>> report = reproduce(out="out", quick=True)  # doctest: +SKIP
>>> report.passed  # doctest: +SKIP
True
"""

from . import (  # noqa: F401  (register)
    _hardmax_experiments,
    _pretrained_experiments,  # noqa: E402,F401  (register; skipped without the [pretrained] extra)
    _sentiment_experiments,
    _softmax_experiments,
    _sphere_experiments,
    _statistics,
)
from ._registry import SECTIONS, Check, Context, FigureRef, SectionResult, Slider
from ._runner import ReproduceConfig, ReproduceReport, reproduce, section_names

__all__ = [
    "reproduce",
    "ReproduceConfig",
    "ReproduceReport",
    "SectionResult",
    "Check",
    "FigureRef",
    "Slider",
    "Context",
    "SECTIONS",
    "section_names",
]

# The names of 0.x, kept for one release (CHANGELOG): the report's units are sections, and
# attndyn.experiments.Experiment is the one experiment.
_RENAMED = {"EXPERIMENTS": "SECTIONS", "ExperimentResult": "SectionResult", "experiment_names": "section_names"}


def __getattr__(name: str) -> object:
    if name in _RENAMED:
        import warnings

        new = _RENAMED[name]
        warnings.warn(
            f"attndyn.reproduce.{name} is now attndyn.reproduce.{new}; the old name goes in the next release",
            FutureWarning,
            stacklevel=2,
        )
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
