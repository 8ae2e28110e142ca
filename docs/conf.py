"""Sphinx configuration of the attndyn documentation: the README tour, docs/*.md and an API reference
built from the docstrings.

Build (offline, warnings are errors, a few seconds)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # document this tree, not an installed copy

from attndyn import __version__  # noqa: E402

project = "attndyn"
author = "the attndyn authors"
copyright = "2026, the attndyn authors"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",  # the reference comes from the docstrings
    "sphinx.ext.napoleon",  # Google-style Args:/Returns: sections
    "sphinx.ext.mathjax",  # .. math:: and :math: in the docstrings ...
    "sphinx-mathjax-offline",  # ... rendered by a copy of MathJax 3 shipped into _static: no network needed
    "sphinx.ext.viewcode",  # a [source] link beside each object
    "myst_parser",  # README.md and docs/*.md are pages
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# autodoc: members in each module's __all__, in source order, signatures as written.
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# MyST: $...$ math in the Markdown pages, heading anchors for the links between them.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

napoleon_use_ivar = True  # "Attributes:" as a field list (the fields are also documented by autodoc)
# Inherited scikit-learn plumbing generated per estimator; documented by scikit-learn itself.
autodoc_default_options["exclude-members"] = ",".join(
    f"set_{m}_request" for m in ("fit", "score", "predict", "predict_proba", "transform", "partial_fit")
)

html_theme = "alabaster"  # ships with Sphinx
html_title = f"attndyn {release}"
html_theme_options = {"page_width": "1180px", "sidebar_width": "260px"}


# ---- the README as the "tour" page --------------------------------------------------------
# The README links to docs/x.md and docs/images/ from the repository root; here those live at
# x.md and images/. Links to folders outside docs/ (examples/, benchmarks/) have no page in the
# site: they become the path in code font.
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _readme_for_docs(text: str) -> str:
    def fix(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if "://" in target or target.startswith("#"):
            return m.group(0)
        if target == "CHANGELOG.md":
            return f"[{label}](changelog.md)"
        if target.startswith("docs/"):
            return f"{bang}[{label}]({target[len('docs/') :]})"
        return f"{label} (`{target}`)" if not bang else m.group(0)

    return _LINK.sub(fix, text)


def _source_read(app, docname: str, source: list[str]) -> None:  # noqa: ANN001
    if docname == "tour":
        source[0] = _readme_for_docs((ROOT / "README.md").read_text(encoding="utf-8"))


def setup(app):  # noqa: ANN001
    app.connect("source-read", _source_read)
