"""The report's prose as HTML: docstrings and claims carry reST inline markup (literals in double backquotes,
roles such as ``:mod:``), which the page shows as ``<code>``, everything escaped first."""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["inline_markup"]

# ``literal``, :role:`target` (also :role:`~a.b.c`, shown as c, and :role:`text <target>`) and `default role`,
# matched on escaped text (html.escape leaves backticks and colons alone).
_INLINE = re.compile(r"``(?P<literal>.+?)``|(?::[\w.:-]+:)?`(?P<role>[^`]+?)`")


def _role_text(target: str) -> str:
    """What a Sphinx role shows: the text before ``<target>`` when given, else the target (``~``: its last part)."""
    text = re.sub(r"\s*&lt;.*&gt;$", "", target)  # `text <target>` (escaped): the text
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text


def inline_markup(text: Any) -> str:
    """``text`` escaped for HTML, its reST inline markup (literals, roles) rendered as ``<code>`` elements.

    >>> inline_markup("run ``theorem-1.1`` of :mod:`attndyn.analysis` <b>")
    'run <code>theorem-1.1</code> of <code>attndyn.analysis</code> &lt;b&gt;'
    """

    def code(m: re.Match[str]) -> str:
        return f"<code>{m['literal'] if m['literal'] is not None else _role_text(m['role'])}</code>"

    return _INLINE.sub(code, html.escape(str(text), quote=True))
