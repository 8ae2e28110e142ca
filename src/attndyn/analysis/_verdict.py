"""A theorem check's verdict in one line, read from its record: the words the command line and the explorer print.

>>> verdict_of({"holds": True, "hypotheses": {"A_spd": True}})
'holds'
>>> verdict_of({"holds": False, "hypotheses": {"distinct_tokens": False}})
'makes no claim (its hypotheses do not all hold here: distinct_tokens); its conclusion is not seen'
>>> verdict_of({"holds": None, "undecided": "the run has not settled"})
'undecided: the run has not settled'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["verdict_of"]


def verdict_of(record: Mapping[str, Any]) -> str | None:
    """``"undecided: <reason>"`` when the run cannot decide the theorem; ``"makes no claim (...)"`` when some of
    its hypotheses fail (a theorem outside its hypotheses neither holds nor fails: the line says whether its
    conclusion is seen all the same); else ``"holds"`` or ``"does NOT hold"``. None when the record has no
    verdict (``holds`` None without a reason). ``record``: :meth:`HardmaxTheoremReport.record` or
    :meth:`GeometryReport.record` (or the command line's JSON ``theorem``)."""
    if record.get("undecided"):
        return f"undecided: {record['undecided']}"
    holds = record.get("holds")
    if holds is None:
        return None
    failed = [k for k, ok in (record.get("hypotheses") or {}).items() if not ok]
    if failed:
        seen = "its conclusion is seen all the same" if holds else "its conclusion is not seen"
        return f"makes no claim (its hypotheses do not all hold here: {', '.join(failed)}); {seen}"
    return "holds" if holds else "does NOT hold"
