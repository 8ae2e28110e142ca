"""One self-contained HTML page for a reproduce run: every figure beside the claims it checks.

Images are inlined as base64 PNG, the layer/time slider is a few lines of inline JavaScript over
inlined frames, the style is inline: the page opens offline and loads nothing from anywhere.
Every piece of text (claims, parameters, token words, captions) goes through :func:`html.escape`; the prose
of docstrings, claims and captions through :func:`attndyn.reproduce._markup.inline_markup`, which escapes it
and then renders its reST inline markup (literals and roles such as ``:mod:``) as ``<code>``.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from ._markup import inline_markup
from ._registry import Check, SectionResult, Slider

__all__ = ["render_html"]

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1a202c;background:#f7fafc}
header,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:18px}
h1{font-size:1.6em;margin:.4em 0}h2{font-size:1.25em;margin:.2em 0 .4em}
section.exp{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:14px 18px;margin:18px 0}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:.8em;font-weight:600;margin-left:8px;vertical-align:middle}
.pass{background:#c6f6d5;color:#22543d}.fail{background:#fed7d7;color:#822727}
.skipped{background:#e2e8f0;color:#4a5568}.info{background:#bee3f8;color:#2a4365}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:8px 0}
th,td{border-bottom:1px solid #e2e8f0;text-align:left;padding:5px 7px;vertical-align:top}
th{background:#edf2f7}
figure{margin:10px 0;text-align:center}figure img{max-width:100%;height:auto;border:1px solid #edf2f7}
figcaption{font-size:.85em;color:#4a5568;margin-top:4px}
.source{color:#4a5568;font-size:.9em}.summary{margin:.5em 0 .8em}
pre{background:#f1f5f9;padding:8px;border-radius:6px;overflow-x:auto;font-size:.8em;max-height:300px}
.slider{border:1px dashed #cbd5e0;border-radius:6px;padding:8px;margin:10px 0;text-align:center}
.slider input{width:80%}.slider .frame{display:none;margin:6px auto;max-width:100%}.slider .frame.on{display:block}
.files a{font-size:.8em;margin:0 4px}
.sample{font-size:.8em;color:#4a5568}
nav table td:first-child{white-space:nowrap}
"""

_JS = """
document.querySelectorAll('.slider').forEach(function (box) {
  var frames = box.querySelectorAll('.frame');
  var label = box.querySelector('.label');
  var input = box.querySelector('input');
  function show(k) {
    frames.forEach(function (f, j) { f.classList.toggle('on', j === k); });
    label.textContent = frames[k].getAttribute('data-label');
  }
  input.addEventListener('input', function () { show(parseInt(input.value, 10)); });
  show(parseInt(input.value, 10));
});
document.body.setAttribute('data-ready', '1');
"""


_QUICK_NOTE = (
    " Quick settings: each Monte Carlo verdict says beside it how many random instances it rests on, and whether"
    " they are too few to tell the claim from its negation."
)


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _b64_png(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _slider(sl: Slider, key: str) -> str:
    last = len(sl.frames) - 1
    imgs = "".join(
        f'<img class="frame" alt="{_e(lab)}" data-label="{_e(lab)}" src="{_b64_png(fr)}">'
        for fr, lab in zip(sl.frames, sl.labels)
    )
    return (
        f'<div class="slider" id="{_e(key)}"><div><strong>{_e(sl.caption)}</strong> — '
        f'<span class="label">{_e(sl.labels[last])}</span></div>'
        f'<input type="range" min="0" max="{last}" value="{last}" step="1" aria-label="{_e(sl.caption)}">{imgs}</div>'
    )


def _check_row(c: Check) -> str:
    """One claim's row: claim, paper, measured, and the verdict's badge with, in a quick run, its sample beside it
    (e.g. "N = 4: too small to tell; the full run uses 100")."""
    badge = f'<span class="badge {"info" if c.passed is None else c.outcome}">{c.outcome}</span>'
    note = "" if c.sample is None else f' <span class="sample">{_e(c.sample.note())}</span>'
    return (
        f"<tr><td>{inline_markup(c.claim)}</td><td>{inline_markup(c.paper)}</td><td>{inline_markup(c.measured)}</td>"
        f"<td>{badge}{note}</td></tr>"
    )


def _section(res: SectionResult, out: Path) -> str:
    parts = [
        f'<section class="exp" id="exp-{_e(res.name)}">',
        f'<h2>{_e(res.title)}<span class="badge {_e(res.status)}">{_e(res.status)}</span></h2>',
        f'<div class="source">{_e(res.source)} · section <code>{_e(res.name)}</code> · '
        f"{res.runtime_s:.2f} s{' · seed ' + _e(res.seed) if res.seed is not None else ''}</div>",
        f'<p class="summary">{inline_markup(res.summary)}</p>',
    ]
    if res.skipped:
        parts.append(f"<p><em>Skipped: {inline_markup(res.skipped)}</em></p>")
    if res.checks:
        rows = "".join(_check_row(c) for c in res.checks)
        parts.append(
            "<table><tr><th>claim</th><th>paper</th><th>measured</th><th>verdict</th></tr>" + rows + "</table>"
        )
    for fig in res.figures:
        png = fig.png
        img = ""
        if png is not None and (out / png).is_file():
            img = f'<img alt="{_e(fig.caption)}" src="{_b64_png((out / png).read_bytes())}">'
        links = " ".join(f'<a href="{_e(f)}">{_e(Path(f).suffix.lstrip("."))}</a>' for f in fig.files)
        parts.append(
            f"<figure>{img}<figcaption>{inline_markup(fig.caption)} <span class='files'>{links}</span></figcaption></figure>"
        )
    for k, sl in enumerate(res.sliders):
        parts.append(_slider(sl, f"slider-{res.name}-{k}"))
    if res.animations:
        parts.append(
            "<p class='files'>Animations: "
            + " ".join(f'<a href="{_e(a)}">{_e(a)}</a>' for a in res.animations)
            + "</p>"
        )
    parts.append(
        "<details><summary>parameters</summary><pre>"
        + _e(json.dumps(res.params, indent=1, default=str))
        + "</pre></details>"
    )
    parts.append("</section>")
    return "\n".join(parts)


def render_html(
    results: list[SectionResult], *, out: Path, config: dict[str, Any], runtime_s: float, environment: dict[str, str]
) -> str:
    """The report page as a string (figures read from ``out``)."""
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "info", "skipped")}
    nav_rows = "".join(
        f'<tr><td><a href="#exp-{_e(r.name)}">{_e(r.name)}</a></td><td>{_e(r.title)}</td>'
        f'<td><span class="badge {_e(r.status)}">{_e(r.status)}</span></td><td>{r.runtime_s:.2f} s</td></tr>'
        for r in results
    )
    mode = "quick" if config.get("quick") else "full"
    head = (
        f"<header><h1>attndyn reproduce — {_e(mode)} settings</h1>"
        f"<p>{counts['pass']} passed, {counts['fail']} failed, {counts['info']} informational, "
        f"{counts['skipped']} skipped; {runtime_s:.1f} s in all. Each figure is set beside the claims it checks; "
        f"parameters and seeds are under each section.{_QUICK_NOTE if config.get('quick') else ''}</p></header>"
    )
    nav = (
        '<main><nav id="contents"><h2>Sections</h2><table><tr><th>name</th><th>what</th><th>status</th>'
        f"<th>time</th></tr>{nav_rows}</table></nav>"
    )
    body = "\n".join(_section(r, out) for r in results)
    foot = (
        "</main><footer><details><summary>configuration and environment</summary><pre>"
        + _e(json.dumps({"config": config, "environment": environment}, indent=1, default=str))
        + "</pre></details></footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>attndyn reproduce</title><style>{_CSS}</style></head><body>"
        f"{head}{nav}{body}{foot}<script>{_JS}</script></body></html>\n"
    )
