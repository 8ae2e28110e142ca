"""Seeded parameter studies ("sweeps") of the papers' statements, on dask.distributed, resumable.

A TOML spec names a registered experiment (a cell function), a grid and a number of seeds; each
cell (one grid point, one seed) is a pure function of its parameters that calls the core engine
and returns one row. :func:`run_sweep` runs the cells not yet finished on a dask cluster and
appends the rows to Parquet; :func:`summarize` gives fractions with 95% Wilson intervals per grid
point and a plot. See docs/sweeps.md.

>>> from attndyn.experiments import EXPERIMENTS  # the registry of experiments a spec names
>>> {"good-triple", "sentiment-leaders", "table-1", "theorem-1.1"} <= set(EXPERIMENTS)  # the shipped ones
True
"""

from ._runner import SweepInterrupted, SweepRun, run_sweep
from ._spec import Cell, SweepSpec, load_spec, parse_spec
from ._store import read_folder_spec, read_rows, read_spec
from ._summary import summarize

__all__ = [
    "run_sweep",
    "SweepRun",
    "SweepInterrupted",
    "summarize",
    "SweepSpec",
    "Cell",
    "load_spec",
    "parse_spec",
    "read_rows",
    "read_spec",
    "read_folder_spec",
]
