"""A tokenized IMDb corpus with its split, tokenized once and cached (JSON, gzip) in a folder."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import atomic_write
from .._validation import InputError
from ._data import Reviews, read_reviews, split_official, split_random
from ._text import Tokenizer

__all__ = ["Corpus", "load_corpus", "split_indices", "SPLITS"]

SPLITS = ("random", "official")


@dataclass(frozen=True)
class Corpus:
    """Reviews, their tokens, and train/test indices of the chosen split."""

    reviews: Reviews
    tokens: list[list[str]]
    train_idx: np.ndarray
    test_idx: np.ndarray
    split: str
    seed: int


def _key(path: Path, tokenizer: Tokenizer) -> str:
    st = path.stat()
    h = hashlib.sha256(json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns, tokenizer.config()]).encode())
    return h.hexdigest()[:16]


def tokenize_cached(
    path: str | os.PathLike, reviews: Reviews, tokenizer: Tokenizer, cache_dir: str | os.PathLike | None
) -> list[list[str]]:
    """Tokens of every review; reused from ``cache_dir`` when the data file and tokenizer match."""
    if cache_dir is None:
        return [tokenizer(t) for t in reviews.texts]
    f = Path(cache_dir) / f"tokens-{_key(Path(path), tokenizer)}.json.gz"
    if f.is_file():
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            toks = json.load(fh)
        if len(toks) == len(reviews):
            return toks
    toks = [tokenizer(t) for t in reviews.texts]

    def write(tmp: Path) -> None:
        with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1) as fh:
            json.dump(toks, fh)

    atomic_write(f, write)
    return toks


def split_indices(reviews: Reviews, split: str, seed: int, test_fraction: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """``(train_idx, test_idx)`` of ``split`` (see :func:`load_corpus`)."""
    if split not in SPLITS:
        raise InputError(f"split must be one of {SPLITS}, got {split!r}")
    return (
        split_random(len(reviews), test_fraction=test_fraction, seed=seed)
        if split == "random"
        else split_official(reviews)
    )


def load_corpus(
    path: str | os.PathLike,
    *,
    split: str = "random",
    seed: int = 0,
    test_fraction: float = 0.3,
    tokenizer: Tokenizer = Tokenizer(),
    cache_dir: str | os.PathLike | None = None,
    reviews: Reviews | None = None,
) -> Corpus:
    """Read ``path`` (CSV or aclImdb folder), split, and tokenize (cached).

    ``split``: ``"random"`` (seeded, ``test_fraction`` held out; the paper's 70/30) or
    ``"official"`` (25k/25k). ``reviews``: the reviews of ``path`` when already read. The split is
    checked before anything is tokenized or cached.
    """
    if split not in SPLITS:
        raise InputError(f"split must be one of {SPLITS}, got {split!r}")
    if reviews is None:
        reviews = read_reviews(path)
    tr, te = split_indices(reviews, split, seed, test_fraction)
    toks = tokenize_cached(path, reviews, tokenizer, cache_dir)
    return Corpus(reviews, toks, tr, te, split, seed)
