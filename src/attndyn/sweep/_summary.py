"""Summaries of a sweep folder: per grid point, each Boolean output's fraction with its 95% Wilson
interval and each numeric output's mean with its 95% normal interval; a table and a plot."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write, write_json
from ..experiments._statistics import wilson_interval
from ._spec import SweepSpec
from ._store import read_folder_spec, read_rows, require_extra

__all__ = ["summarize", "SweepSummary", "Z95"]

Z95 = 1.959963984540054  # the 0.975 quantile of N(0, 1)


@dataclass
class SweepSummary:
    """``table`` (pandas DataFrame, one row per grid point) and the files written."""

    spec: SweepSpec
    table: Any  # pandas DataFrame
    rows: int
    failed: int
    files: dict[str, Path] = field(default_factory=dict)

    def text(self) -> str:
        """The table as text, each statistic as ``value [lo, hi]``."""
        import pandas as pd  # type: ignore[import-untyped]

        exp = self.spec.exp
        show = pd.DataFrame({k: self.table[k] for k in list(self.spec.grid) + ["cells_ok", "cells_failed"]})
        for o, t in exp.outputs.items():
            stat = "frac" if t == "bool" else "mean" if t in ("int64", "float64") else None
            if stat is None:
                continue
            show[o if t == "bool" else f"mean {o}"] = [
                "-" if math.isnan(v) else f"{v:.4f} (one cell)" if math.isnan(lo) else f"{v:.4f} [{lo:.4f}, {hi:.4f}]"
                for v, lo, hi in zip(self.table[f"{o}_{stat}"], self.table[f"{o}_lo"], self.table[f"{o}_hi"])
            ]
        head = (
            f"{self.spec.experiment}: {self.rows} rows of {self.spec.n_cells} cells"
            + (f" ({self.failed} failed)" if self.failed else "")
            + "; 95% intervals (Wilson for fractions)"
        )
        return head + "\n" + show.to_string(index=False)


def summarize(out: str | os.PathLike, *, write: bool = True, plot: bool = True) -> SweepSummary:
    """Aggregate the rows of a sweep folder per grid point; with ``write``, OUT/summary.csv,
    OUT/summary.json and (``plot``) OUT/summary.png. Every part is checked first (see
    :mod:`attndyn.sweep._store`): a damaged one is named (InputError) and nothing is written."""
    require_extra()
    import numpy as np
    import pandas as pd

    out = Path(out)
    spec = read_folder_spec(out)
    exp = spec.exp
    rows = read_rows(out)
    ok = rows[rows["status"] == "ok"]
    records = []
    for point in spec.points:
        sel = np.ones(len(rows), dtype=bool)
        sel_ok = np.ones(len(ok), dtype=bool)
        for k, v in point.items():
            sel &= (rows[k] == v).to_numpy()
            sel_ok &= (ok[k] == v).to_numpy()
        part = ok[sel_ok]
        rec = {**point, "cells_ok": int(len(part)), "cells_failed": int(sel.sum() - len(part)), "seeds": spec.seeds}
        for o, t in exp.outputs.items():
            col = part[o].dropna()
            if t == "bool":
                hits, n = int(col.astype(bool).sum()), int(len(col))
                lo, hi = wilson_interval(hits, n)
                rec |= {f"{o}_count": hits, f"{o}_n": n, f"{o}_frac": hits / n if n else math.nan}
                rec |= {f"{o}_lo": lo, f"{o}_hi": hi}  # _n: the cells that measured it (an optional output: fewer)
            elif t in ("int64", "float64"):
                x = col.to_numpy(dtype=float)
                m = float(x.mean()) if len(x) else math.nan
                h = Z95 * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else math.nan
                rec |= {f"{o}_n": len(x), f"{o}_mean": m, f"{o}_lo": m - h, f"{o}_hi": m + h}
        records.append(rec)
    table = pd.DataFrame.from_records(records)
    summary = SweepSummary(spec, table, rows=int(len(rows)), failed=int((rows["status"] != "ok").sum()))
    if write:
        summary.files["csv"] = atomic_write(out / "summary.csv", lambda p: table.to_csv(p, index=False))
        summary.files["json"] = write_json(
            out / "summary.json",
            {
                "spec": spec.record(),
                "rows": summary.rows,
                "failed": summary.failed,
                "interval": "95%: Wilson for fractions, mean +- 1.96 sd/sqrt(n) for numbers",
                "grid_points": _jsonable(records),
            },
        )
        if plot:
            from ..plotting._save import save_figure
            from ..plotting._sweep import sweep_figure

            summary.files["png"] = save_figure(sweep_figure(summary), out / "summary", formats=("png",))[0]
    return summary


def _jsonable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def fix(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    return [{k: fix(v) for k, v in r.items()} for r in records]
