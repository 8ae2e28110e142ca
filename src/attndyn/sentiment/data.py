"""IMDb reviews: readers for both public forms, the two standard splits, and a downloader.

The *Large Movie Review Dataset* (Maas et al., ACL 2011) comes either as the ``aclImdb``
folder tree (``{train,test}/{pos,neg}/<id>_<rating>.txt``) or as a CSV with a review and a
sentiment column (plain or gzip). Both readers return the same :class:`Reviews` object.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import InputError
from ..io import atomic_write

__all__ = [
    "Reviews",
    "read_csv",
    "read_aclimdb",
    "read_reviews",
    "split_random",
    "split_official",
    "download_imdb",
    "IMDB_URL",
]

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
_POSITIVE = {"positive", "pos", "1", "true"}
_NEGATIVE = {"negative", "neg", "0", "false"}


@dataclass(frozen=True)
class Reviews:
    """Labelled reviews: ``texts`` (N), ``labels`` (N,) 0/1 with 1 = positive, and, when the
    source has them, the official ``split`` ("train"/"test") and star ``rating`` per review."""

    texts: list[str]
    labels: np.ndarray
    split: np.ndarray | None = None
    rating: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, index: np.ndarray) -> "Reviews":
        index = np.asarray(index)
        return Reviews(
            texts=[self.texts[i] for i in index],
            labels=self.labels[index],
            split=None if self.split is None else self.split[index],
            rating=None if self.rating is None else self.rating[index],
        )


def _label(value: str, where: str) -> int:
    v = str(value).strip().lower()
    if v in _POSITIVE:
        return 1
    if v in _NEGATIVE:
        return 0
    raise InputError(f"{where}: sentiment {value!r} is neither positive nor negative; use positive/negative or 1/0")


def read_csv(path: str | os.PathLike, *, text_column: str = "review", label_column: str = "sentiment") -> Reviews:
    """Read a CSV (``.csv`` or ``.csv.gz``) with a review column and a sentiment column.

    Sentiments may be ``positive``/``negative`` (as in the Kaggle and our copy) or 1/0.
    Optional ``split`` and ``rating`` columns are kept.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"IMDb CSV {str(p)!r} does not exist; give the path of imdb.csv or imdb.csv.gz")
    with p.open("rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    opener = (lambda: gzip.open(p, "rt", encoding="utf-8", newline="")) if gz else (lambda: p.open(encoding="utf-8", newline=""))
    texts, labels, split, rating = [], [], [], []
    try:
        with opener() as f:
            reader = csv.DictReader(f)
            cols = reader.fieldnames or []
            for col in (text_column, label_column):
                if col not in cols:
                    raise InputError(f"CSV {str(p)!r} has no {col!r} column (columns: {cols}); pass text_column=/label_column=")
            has_split, has_rating = "split" in cols, "rating" in cols
            for line, row in enumerate(reader, start=2):
                texts.append(row[text_column] or "")
                labels.append(_label(row[label_column], f"{p.name} line {line}"))
                if has_split:
                    split.append(row["split"])
                if has_rating:
                    rating.append(int(row["rating"]))
    except (UnicodeDecodeError, OSError, EOFError, csv.Error) as exc:
        raise InputError(f"CSV {str(p)!r} could not be read: {exc}") from None
    if not texts:
        raise InputError(f"CSV {str(p)!r} holds no reviews")
    return Reviews(
        texts=texts,
        labels=np.asarray(labels, dtype=np.int64),
        split=np.asarray(split) if split else None,
        rating=np.asarray(rating, dtype=np.int64) if rating else None,
    )


_FILE = re.compile(r"^(\d+)_(\d+)\.txt$")


def read_aclimdb(root: str | os.PathLike) -> Reviews:
    """Read the ``aclImdb`` folder tree: ``{train,test}/{pos,neg}/<id>_<rating>.txt``.

    Rows come in the order train/pos, train/neg, test/pos, test/neg, each by file id (the
    order of our CSV copy). ``train/unsup`` is ignored.
    """
    r = Path(root)
    if (r / "aclImdb").is_dir():
        r = r / "aclImdb"
    if not (r / "train").is_dir() and not (r / "test").is_dir():
        raise InputError(f"{str(root)!r} is not an aclImdb folder (no train/ or test/ inside); give the extracted aclImdb folder")
    texts, labels, split, rating = [], [], [], []
    for part in ("train", "test"):
        for sub, lab in (("pos", 1), ("neg", 0)):
            folder = r / part / sub
            if not folder.is_dir():
                continue
            files = []
            for f in folder.iterdir():
                m = _FILE.match(f.name)
                if m:
                    files.append((int(m.group(1)), int(m.group(2)), f))
            for _, stars, f in sorted(files):
                texts.append(f.read_text(encoding="utf-8"))
                labels.append(lab)
                split.append(part)
                rating.append(stars)
    if not texts:
        raise InputError(f"no review files <id>_<rating>.txt under {str(r)!r}/{{train,test}}/{{pos,neg}}")
    return Reviews(texts, np.asarray(labels, dtype=np.int64), np.asarray(split), np.asarray(rating, dtype=np.int64))


def read_reviews(path: str | os.PathLike) -> Reviews:
    """Either form: a folder is read as ``aclImdb``, a file as a CSV."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"data path {str(p)!r} does not exist; give imdb.csv(.gz) or an aclImdb folder")
    return read_aclimdb(p) if p.is_dir() else read_csv(p)


def split_random(n: int, *, test_fraction: float = 0.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random split (the paper's 70/30 protocol on a shuffled copy): ``(train_idx, test_idx)``.

    >>> tr, te = split_random(10, seed=0)
    >>> len(tr), len(te), sorted(set(tr) | set(te)) == list(range(10))
    (7, 3, True)
    """
    if not 0 < test_fraction < 1:
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(perm[: n - n_test]), np.sort(perm[n - n_test :])


def split_official(reviews: Reviews) -> tuple[np.ndarray, np.ndarray]:
    """The official 25k/25k split, from the ``split`` column or the folder tree."""
    if reviews.split is None:
        raise InputError("these reviews have no official split (no 'split' column); use split_random instead")
    return np.flatnonzero(reviews.split == "train"), np.flatnonzero(reviews.split == "test")


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    dest_r = dest.resolve()
    for member in tar.getmembers():
        target = (dest / member.name).resolve()
        if not (target == dest_r or dest_r in target.parents):
            raise InputError(f"archive member {member.name!r} would be written outside {str(dest)!r}; refusing to extract")
        if member.issym() or member.islnk() or member.isdev():
            raise InputError(f"archive member {member.name!r} is a link or device; refusing to extract")
    tar.extractall(dest, filter="data")


def download_imdb(dest: str | os.PathLike, *, url: str = IMDB_URL, timeout: float = 60.0, progress: bool = False) -> Path:
    """Fetch the official ``aclImdb_v1.tar.gz`` into ``dest`` and extract it; returns the aclImdb folder.

    The archive is written atomically (a broken download never leaves a half file) and is
    extracted with path checks (no member may leave ``dest``). Needs a network; nothing else
    in attndyn downloads anything.
    """
    from ..progress import progress_bar

    d = Path(dest)
    d.mkdir(parents=True, exist_ok=True)
    archive = d / Path(urllib.parse.urlparse(url).path).name
    if not archive.name:
        archive = d / "aclImdb_v1.tar.gz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            total = resp.headers.get("Content-Length")

            def write(tmp: Path) -> None:
                with tmp.open("wb") as out, progress_bar(int(total) if total else None, "download", enabled=progress) as adv:
                    while chunk := resp.read(1 << 20):
                        out.write(chunk)
                        adv(len(chunk))

            atomic_write(archive, write)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InputError(f"could not download {url!r} ({exc}); check the network or pass --url to a reachable copy") from None
    try:
        with tarfile.open(archive, "r:*") as tar:
            _safe_extract(tar, d)
    except tarfile.TarError as exc:
        raise InputError(f"{str(archive)!r} is not a readable tar archive ({exc}); delete it and download again") from None
    root = d / "aclImdb"
    if not root.is_dir():
        raise InputError(f"the archive from {url!r} holds no aclImdb folder")
    return root

