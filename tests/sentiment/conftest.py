"""Small synthetic review corpora the tests make themselves (no real data)."""

from __future__ import annotations

import csv
import gzip
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

POSITIVE = ["great", "wonderful", "superb", "loved", "brilliant", "enjoyable"]
NEGATIVE = ["awful", "boring", "terrible", "hated", "dull", "waste"]
NEUTRAL = ["movie", "film", "plot", "actor", "scene", "story", "director", "music"]


def make_corpus(n: int = 160, seed: int = 0) -> tuple[list[str], list[int]]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        y = i % 2
        strong = POSITIVE if y else NEGATIVE
        words = list(rng.choice(strong, size=3)) + list(rng.choice(NEUTRAL, size=int(rng.integers(2, 6))))
        rng.shuffle(words)
        texts.append("The " + " ".join(words) + "!")
        labels.append(y)
    return texts, labels


@pytest.fixture(autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def corpus():
    return make_corpus()


@pytest.fixture(scope="session")
def fitted(corpus):
    from attndyn.sentiment import HardmaxSentimentClassifier

    texts, labels = corpus
    return HardmaxSentimentClassifier(
        d=2, epochs=6, min_freq=1, lr=3e-2, embed_lr=1e-1, patience=6, random_state=0
    ).fit(texts, labels)


def write_csv(path, texts, labels, *, gz=False, extra=True):
    opener = (
        (lambda: gzip.open(path, "wt", encoding="utf-8", newline=""))
        if gz
        else (lambda: open(path, "w", encoding="utf-8", newline=""))
    )
    with opener() as f:
        w = csv.writer(f)
        w.writerow(["review", "sentiment", "split", "rating"] if extra else ["review", "sentiment"])
        for i, (t, y) in enumerate(zip(texts, labels)):
            row = [t, "positive" if y else "negative"]
            if extra:
                row += ["train" if i % 2 == 0 or i % 4 == 1 else "test", 9 if y else 2]
            w.writerow(row)
    return path


@pytest.fixture(name="make_corpus", scope="session")
def _make_corpus_fixture():
    return make_corpus


@pytest.fixture(name="write_csv", scope="session")
def _write_csv_fixture():
    return write_csv


@contextmanager
def _locked_by_another_process(folder: Path) -> Iterator[subprocess.Popen]:
    """Another process holding ``folder``'s exclusive lock (as a training does) for the block; yields it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
            str(folder),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()


@pytest.fixture(name="locked_by_another_process", scope="session")
def _locked_fixture():
    return _locked_by_another_process
