"""One entry point: a text through a pretrained model, read as attention dynamics."""

from __future__ import annotations

import os
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from .._errors import param
from .._threads import limit_threads
from .._validation import InputError, warn_hypothesis
from ._adapter import Forward, PretrainedModel, load_model
from ._clustering import DEFAULT_TOL, DepthClusters, check_tol, depth_clusters
from ._idealized import IdealizedRun, idealized_run
from ._leaders import LeaderMap, leader_map
from ._spectra import Spectra, spectra

__all__ = ["PretrainedAnalysis", "analyze"]


@dataclass(frozen=True)
class PretrainedAnalysis:
    """Leaders per layer and head, clusters against depth, value spectra and the idealized run of one text."""

    model: str
    text: str
    forward: Forward
    leaders: LeaderMap
    clusters: DepthClusters
    spectra: Spectra | None
    idealized: IdealizedRun | None
    shape: dict[str, int]

    def record(self) -> dict[str, Any]:
        """The JSON form (what ``attndyn pretrained analyze --json`` prints)."""
        lm, toks = self.leaders, list(self.forward.tokens)
        L, H, _ = lm.leads.shape
        heads = []
        for ell in range(L):
            row = []
            for h in range(H):
                indeg, recv = lm.indegree[ell, h], lm.received[ell, h]
                row.append(
                    {
                        "leaders": lm.leads[ell, h].nonzero().flatten().tolist(),
                        "most_followed": int(indeg.argmax()),
                        "followers": int(indeg.max()),
                        "most_attended": int(recv.argmax()),
                        "attention_received": round(float(recv.max()), 4),
                    }
                )
            heads.append(row)
        counts = lm.counts
        return {
            "model": self.model,
            "text": self.text,
            **self.shape,
            "tokens": toks,
            "leaders": {
                "definition": "token i leads under head (layer, h) when its hardmax follow set C_i under that head's "
                "scores <W_Q x_i + b_Q, W_K x_j + b_K> is {i} (hardmax paper, Definition 1.1)",
                "per_layer": [
                    {
                        "layer": ell,
                        "leaders": lm.layer_leaders(ell),
                        "heads_leading": counts[ell].tolist(),
                        "words": [toks[i] for i in lm.layer_leaders(ell, min_heads=max(1, H // 2))],
                    }
                    for ell in range(L)
                ],
                "per_head": heads,
                "persistence": lm.persistence(),
            },
            "clusters": self.clusters.record(),
            "spectra": None if self.spectra is None else self.spectra.record(),
            "idealized": None if self.idealized is None else self.idealized.record(),
        }


def analyze(
    text: str,
    model: PretrainedModel | str | os.PathLike | None = None,
    *,
    cluster_tol: float = DEFAULT_TOL,
    with_spectra: bool = True,
    ginibre_samples: int = 0,
    idealized: bool = True,
    idealized_head: tuple[int, int] | None = None,
    seed: int = 0,
) -> PretrainedAnalysis:
    """Run ``text`` through ``model`` (a :class:`PretrainedModel`, a folder, or None for the packaged MiniLM)
    and read leaders, clusters, spectra and the idealized model on its weights.

    ``idealized_head=(layer, head)`` picks the head of the idealized run (default: the first good triple);
    ``idealized=False`` skips that run, ``with_spectra=False`` the spectra.
    """
    head = None if idealized_head is None else _head_pair(idealized_head)
    cluster_tol = check_tol(cluster_tol, param("cluster_tol", "cluster_tol"))  # before the model is loaded
    pm = model if isinstance(model, PretrainedModel) else load_model(model)
    if isinstance(ginibre_samples, bool) or not isinstance(ginibre_samples, int) or ginibre_samples < 0:
        raise InputError(f"ginibre_samples must be a non-negative integer, got {ginibre_samples!r}")
    with limit_threads(torch_threads=1, blas_threads=1):  # small matrices: threads only cost on a shared machine
        fwd = pm.run(text)
        _warn_if_cut(pm, text, len(fwd.tokens))
        weights = pm.weights()
        lm = leader_map(fwd, weights)
        dc = depth_clusters(fwd.hidden, tol=cluster_tol)
        sp = spectra(weights, ginibre_samples=ginibre_samples, seed=seed) if with_spectra else None
        if not idealized:
            ideal = None
        elif head is None:
            ideal = idealized_run(fwd, weights)
        else:
            ideal = idealized_run(fwd, weights, layer=head[0], head=head[1])
    shape = {
        "layers": pm.layers,
        "heads": pm.heads,
        "width": pm.width,
        "head_dim": pm.head_dim,
        "n_tokens": len(fwd.tokens),
    }
    return PretrainedAnalysis(
        model=pm.name, text=text, forward=fwd, leaders=lm, clusters=dc, spectra=sp, idealized=ideal, shape=shape
    )


def _head_pair(idealized_head: Any) -> tuple[int, int]:
    """``idealized_head`` as (layer, head), two integers; an InputError naming the expected form."""
    pair = tuple(idealized_head) if isinstance(idealized_head, (tuple, list)) else None
    if pair is None or len(pair) != 2 or not all(isinstance(i, Integral) and not isinstance(i, bool) for i in pair):
        raise InputError(f"idealized_head must be (layer, head), two integers such as (2, 0), got {idealized_head!r}")
    return int(pair[0]), int(pair[1])


def _warn_if_cut(pm: PretrainedModel, text: str, n: int) -> None:
    """Say (a HypothesisWarning) when the model read only the first ``n`` of the text's tokens: its position
    embeddings end there, and the analysis is of those tokens only."""
    if pm.tokenizer is None or not isinstance(text, str):
        return
    full = len(pm.tokenizer(text, truncation=False, verbose=False)["input_ids"])
    if full > n:
        warn_hypothesis(
            f"the text has {full} tokens and {pm.name} reads at most {n}: the analysis is of its first {n} tokens "
            "only; give a shorter text to analyse all of it",
            stacklevel=4,
        )
