"""IMDb reviews: readers for both public forms, the two standard splits, and a downloader.

The *Large Movie Review Dataset* (Maas et al., ACL 2011) comes either as the ``aclImdb``
folder tree (``{train,test}/{pos,neg}/<id>_<rating>.txt``) or as a CSV with a review and a
sentiment column (plain or gzip). Both readers return the same :class:`Reviews` object.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import os
import re
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from .._errors import InputError, param
from .._io import atomic_write, check_input_file, read_input_bytes
from ._defaults import IMDB_SHA256  # the published sha256 of aclImdb_v1.tar.gz (the command line reads it too)

__all__ = [
    "Reviews",
    "read_csv",
    "read_aclimdb",
    "read_reviews",
    "split_random",
    "split_official",
    "download_imdb",
    "load_imdb",
    "ImdbSplit",
    "IMDB_URL",
    "IMDB_SHA256",
    "DEFAULT_DATA",
    "MAX_TEXT_BYTES",
    "read_text_file",
    "read_texts",
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

    def subset(self, index: np.ndarray) -> Reviews:
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


def _rating(value: str | None, where: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(
            f"{where}: rating {value!r} is not a whole number of stars; fix the 'rating' column "
            "(integers such as 1 or 10) or remove it"
        ) from None


#: The largest review CSV read (a 6 GB sparse file under its name is refused, not read).
MAX_CSV_BYTES = 2 * 2**30


def _columns(p: Path, cols: Sequence[str], text_column: str | None, label_column: str | None) -> tuple[str, str]:
    """The text and label columns of a CSV whose header is ``cols`` (review,sentiment or text,label when not given),
    or an InputError naming what is missing."""
    if not cols:
        raise InputError(
            f"CSV {str(p)!r} is empty; give a CSV whose first line names its columns (review,sentiment or "
            "text,label) and whose other lines are the reviews"
        )
    if text_column is None:
        text_column = "text" if "review" not in cols and "text" in cols else "review"
    if label_column is None:
        label_column = "label" if "sentiment" not in cols and "label" in cols else "sentiment"
    for col in (text_column, label_column):
        if col not in cols:
            raise InputError(
                f"CSV {str(p)!r} has no {col!r} column (columns: {cols}); name the columns "
                "review,sentiment or text,label" + param("columns", ", or pass text_column=/label_column=")
            )
    return text_column, label_column


def read_csv(path: str | os.PathLike, *, text_column: str | None = None, label_column: str | None = None) -> Reviews:
    """Read a CSV (``.csv`` or ``.csv.gz``) with a text column and a label column.

    By default the text column is ``review`` or else ``text``, the label column ``sentiment`` or
    else ``label`` (IMDb's names, then the usual ones of other sentiment sets). Labels may be
    ``positive``/``negative`` (as in the Kaggle and our copy), ``pos``/``neg`` or 1/0.
    Optional ``split`` and ``rating`` columns are kept.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        check_input_file(p, "IMDb CSV")  # a pipe or a terminal would block
    if not p.is_file():
        raise InputError(f"IMDb CSV {str(p)!r} does not exist; give the path of imdb.csv or imdb.csv.gz")
    if p.stat().st_size > MAX_CSV_BYTES:
        raise InputError(
            f"IMDb CSV {str(p)!r} holds {p.stat().st_size} bytes, more than the {MAX_CSV_BYTES} read "
            f"({MAX_CSV_BYTES / 2**30:.3g} GiB; IMDb's 50,000 reviews take 130 MB); give a smaller file"
        )
    with p.open("rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    opener = (
        (lambda: gzip.open(p, "rt", encoding="utf-8", newline=""))
        if gz
        else (lambda: p.open(encoding="utf-8", newline=""))
    )
    texts, labels, split, rating = [], [], [], []
    try:
        with opener() as f:
            reader = csv.DictReader(f)
            cols = reader.fieldnames or []
            text_column, label_column = _columns(p, cols, text_column, label_column)
            has_split, has_rating = "split" in cols, "rating" in cols
            for line, row in enumerate(reader, start=2):
                texts.append(row[text_column] or "")
                labels.append(_label(row[label_column], f"{p.name} line {line}"))
                if has_split:
                    split.append(row["split"])
                if has_rating:
                    rating.append(_rating(row["rating"], f"{p.name} line {line}"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"CSV {str(p)!r} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start} of the "
            "text); convert it to UTF-8"
        ) from None
    except (OSError, EOFError, csv.Error) as exc:
        raise InputError(
            f"CSV {str(p)!r} could not be read ({exc}); the file is truncated or damaged: restore it"
        ) from None
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
        raise InputError(
            f"{str(root)!r} is not an aclImdb folder (no train/ or test/ inside); give the extracted aclImdb folder"
        )
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
        raise InputError(
            "these reviews have no official split (no 'split' column); use the random split instead "
            f"({param('split.random', 'split_random')})"
        )
    return np.flatnonzero(reviews.split == "train"), np.flatnonzero(reviews.split == "test")


#: Where :func:`load_imdb` looks for the data when no path is given, after ``$ATTNDYN_IMDB``: the
#: project's shared copy beside the repository (the CLI's default ``--data``), from the working
#: folder and from the source tree.
from ._defaults import DEFAULT_DATA  # noqa: E402  (defined where the command line reads it without numpy)

IMDB_DEFAULT = Path(DEFAULT_DATA)


class ImdbSplit(NamedTuple):
    """Shuffled reviews split into a training and a test part (labels 1 = positive)."""

    train_texts: list[str]
    train_labels: np.ndarray
    test_texts: list[str]
    test_labels: np.ndarray


def _find_imdb() -> Path:
    env = os.environ.get("ATTNDYN_IMDB")
    candidates = ([Path(env)] if env else []) + [IMDB_DEFAULT, Path(__file__).resolve().parents[3] / IMDB_DEFAULT]
    for c in candidates:
        if c.exists():
            return c
    raise InputError(
        "no IMDb data found (looked at " + ", ".join(repr(str(c)) for c in candidates) + "); pass "
        "load_imdb(path) or set ATTNDYN_IMDB to imdb.csv(.gz) or an aclImdb folder (fetch it with "
        "`attndyn data imdb --download DIR`)"
    )


def load_imdb(
    path: str | os.PathLike | None = None, *, n: int | None = None, test_fraction: float = 0.3, seed: int = 0
) -> ImdbSplit:
    """IMDb reviews, shuffled and split: ``train_texts, train_labels, test_texts, test_labels``.

    ``path``: imdb.csv(.gz) or an aclImdb folder (default: ``$ATTNDYN_IMDB``, else the shared copy
    ``../shared/data/imdb/imdb.csv.gz``). ``n``: keep a seeded random sample of ``n`` reviews (both
    classes, since the sample is drawn from the whole shuffled file; our CSV is sorted by label, so
    its first rows are all positive) before the split, for quick experiments. The split is
    :func:`split_random` (the paper's 70/30 with ``test_fraction=0.3``), seeded by ``seed``.
    """
    reviews = read_reviews(_find_imdb() if path is None else path)
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= len(reviews):
            raise InputError(f"n must be an integer from 2 to {len(reviews)} (the reviews in the file), got {n!r}")
        reviews = reviews.subset(np.random.default_rng(seed).permutation(len(reviews))[: int(n)])
    tr, te = split_random(len(reviews), test_fraction=test_fraction, seed=seed)
    rng = np.random.default_rng(seed + 1)
    tr, te = rng.permutation(tr), rng.permutation(te)  # shuffled, not in file order
    return ImdbSplit(
        [reviews.texts[i] for i in tr], reviews.labels[tr], [reviews.texts[i] for i in te], reviews.labels[te]
    )


def _check_members(
    tar: tarfile.TarFile, dest: Path, max_bytes: int, max_members: int, shown: Path
) -> list[tarfile.TarInfo]:
    """Every member stays under ``dest``, is a plain file or folder, and all together they hold at
    most ``max_bytes`` bytes in at most ``max_members`` entries (a decompression bomb is refused
    before anything is written)."""
    dest_r = dest.resolve()
    members, total = [], 0
    for member in tar:
        target = (dest / member.name).resolve()
        if not (target == dest_r or dest_r in target.parents):
            raise InputError(
                f"archive member {member.name!r} would be written outside {str(shown)!r}; refusing to extract"
            )
        if member.issym() or member.islnk() or member.isdev():
            raise InputError(f"archive member {member.name!r} is a link or device; refusing to extract")
        total += max(member.size, 0)
        members.append(member)
        if total > max_bytes or len(members) > max_members:
            raise InputError(
                f"the archive would extract to more than {max_bytes:,} bytes or {max_members:,} files; "
                "refusing (the real aclImdb holds about 0.5 GB in 100,000 files); raise max_bytes if you trust it"
            )
    return members


def _checked_sha256(sha256: str | None) -> str | None:
    """The expected sha256 in lower case: 64 hex digits or None (no check)."""
    if isinstance(sha256, str):
        sha256 = sha256.lower()
    if sha256 is not None and not (isinstance(sha256, str) and re.fullmatch(r"[0-9a-f]{64}", sha256)):
        raise InputError(
            f"sha256 must be 64 hex digits (or {param('sha256.none', 'None')} to skip the check), got {sha256!r}"
        )
    return sha256


def _check_download_dest(d: Path) -> None:
    """``d`` must be a folder (or not exist yet) that holds no ``aclImdb`` folder."""
    if d.exists() and not d.is_dir():
        raise InputError(f"{param('download', 'dest')} {str(d)!r} is a file; give a folder to download into")
    if (d / "aclImdb").exists():
        raise InputError(
            f"{str(d / 'aclImdb')!r} exists already; read it with {param('data', 'read_reviews(')}{str(d / 'aclImdb')!r}"
            f"{param('data.end', ')')}, "
            "or remove it to download again"
        )


def _stream_verified(
    resp: BinaryIO, tmp: Path, *, url: str, total: int | None, sha256: str | None, max_bytes: int, progress: bool
) -> None:
    """Copy ``resp`` into ``tmp`` in 1 MiB chunks; refuse more than ``max_bytes`` bytes, fewer than the
    announced ``total``, or a sha256 other than ``sha256`` (None: not checked)."""
    from .._progress import progress_bar

    h, got = hashlib.sha256(), 0
    with tmp.open("wb") as out, progress_bar(total, "download", enabled=progress) as adv:
        while chunk := resp.read(1 << 20):
            got += len(chunk)
            if got > max_bytes:
                raise InputError(f"{url!r} sent more than max_bytes = {max_bytes:,} bytes; refusing")
            h.update(chunk)
            out.write(chunk)
            adv(len(chunk))
    if total is not None and got != total:
        raise InputError(
            f"the download of {url!r} is truncated: {got:,} of {total:,} bytes arrived; nothing was kept, try again"
        )
    if sha256 is not None and h.hexdigest() != sha256:
        raise InputError(
            f"the download of {url!r} ({got:,} bytes) has sha256 {h.hexdigest()[:16]}…, not the "
            f"expected {sha256[:16]}…; it is truncated or altered and was not kept: try again "
            f"or another {param('url', 'url=')} (or pass the right {param('sha256', 'sha256=')})"
        )


def _fetch(url: str, archive: Path, *, sha256: str | None, max_bytes: int, timeout: float, progress: bool) -> None:
    """Download ``url`` into ``archive`` atomically (:func:`_stream_verified`); every network failure is one InputError."""
    import http.client

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            announced = resp.headers.get("Content-Length")
            total = int(announced) if announced and announced.isdigit() else None
            if total is not None and total > max_bytes:
                raise InputError(f"{url!r} announces {total:,} bytes, more than max_bytes = {max_bytes:,}; refusing")

            def write(tmp: Path) -> None:
                _stream_verified(resp, tmp, url=url, total=total, sha256=sha256, max_bytes=max_bytes, progress=progress)

            atomic_write(archive, write)
    except http.client.IncompleteRead as exc:
        raise InputError(
            f"the download of {url!r} is truncated ({len(exc.partial):,} bytes arrived, more were announced); "
            "nothing was kept, try again"
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(
            f"could not download {url!r} ({exc}); check the network or pass {param('url', 'url=')} to a reachable copy"
        ) from None


def _extract_aclimdb(archive: Path, d: Path, *, url: str, max_bytes: int, max_members: int) -> None:
    """Check every member of ``archive`` (:func:`_check_members`), extract it into a temporary folder in ``d`` and
    move its ``aclImdb`` to ``d / "aclImdb"``; an unreadable archive, or one without aclImdb, is deleted."""
    import shutil
    import tempfile
    import zlib

    tmp_dir = Path(tempfile.mkdtemp(dir=d, prefix=".aclImdb-extract-"))
    try:
        try:
            with tarfile.open(archive, "r:*") as tar:
                members = _check_members(tar, tmp_dir, max_bytes, max_members, d)
                tar.extractall(tmp_dir, members=members, filter="data")
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            archive.unlink(missing_ok=True)
            kind = (
                "truncated"
                if isinstance(exc, EOFError) or "unexpected end" in str(exc)
                else "not a readable tar archive"
            )
            raise InputError(
                f"{str(archive)!r} (from {url!r}) is {kind} ({str(exc).splitlines()[0][:100]}); it was deleted: "
                f"download again, or check that {param('url', 'url=')} is the tar.gz archive (default {IMDB_URL})"
            ) from None
        if not (tmp_dir / "aclImdb").is_dir():
            archive.unlink(missing_ok=True)
            raise InputError(
                f"the archive from {url!r} holds no aclImdb folder; it was deleted: check {param('url', 'url=')}"
            )
        os.replace(tmp_dir / "aclImdb", d / "aclImdb")
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def download_imdb(
    dest: str | os.PathLike,
    *,
    url: str = IMDB_URL,
    sha256: str | None = IMDB_SHA256,
    max_bytes: int = 1 << 30,
    max_members: int = 200_000,
    timeout: float = 60.0,
    progress: bool = False,
) -> Path:
    """Fetch the official ``aclImdb_v1.tar.gz`` into ``dest`` and extract it; returns the aclImdb folder.

    The transfer must deliver the announced ``Content-Length`` and at most ``max_bytes`` bytes, and
    its sha256 must equal ``sha256`` (default :data:`IMDB_SHA256`, the archive's published hash;
    pass the hash of another archive with another ``url``, or None to skip the check). Only a
    verified archive is kept: a short, long or altered transfer leaves no file behind. Extraction
    checks every member first (no path may leave ``dest``, no links or devices, at most
    ``max_bytes`` bytes and ``max_members`` entries in all), extracts into a temporary folder and
    moves ``aclImdb`` into place only when everything was read, so a truncated or damaged archive
    leaves nothing either (and is deleted, with its own message). ``dest`` must not hold an
    ``aclImdb`` folder already. Needs a network; nothing else in attndyn downloads anything.
    """
    scheme = urllib.parse.urlparse(url).scheme
    if scheme not in ("http", "https"):
        raise InputError(f"{param('url', 'url')} must be an http(s) address, got {url!r}; the default is {IMDB_URL}")
    sha256 = _checked_sha256(sha256)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InputError(f"max_bytes must be a positive integer, got {max_bytes!r}")
    d = Path(dest)
    _check_download_dest(d)
    name = Path(urllib.parse.urlparse(url).path).name or "aclImdb_v1.tar.gz"
    top = d
    while not top.parent.exists():
        top = top.parent
    created = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    archive = d / name
    had_archive = archive.exists()
    try:
        _fetch(url, archive, sha256=sha256, max_bytes=max_bytes, timeout=timeout, progress=progress)
        _extract_aclimdb(archive, d, url=url, max_bytes=max_bytes, max_members=max_members)
    except BaseException:
        if not had_archive:
            archive.unlink(missing_ok=True)
        if created:
            _remove_empty(d, top)  # only the folders this call made
        raise
    return d / "aclImdb"


def _remove_empty(d: Path, top: Path) -> None:
    """Remove ``d`` and its parents up to ``top`` while they are empty (folders this call made)."""
    while True:
        try:
            d.rmdir()
        except OSError:
            return
        if d == top:
            return
        d = d.parent


#: The largest text file ``predict`` and ``explain`` read (256 MiB).
MAX_TEXT_BYTES = 256 * 2**20


def read_text_file(file: str | os.PathLike, encoding: str = "utf-8", *, name: str = "file") -> str:
    """The text of ``file`` in ``encoding`` (a text encoding: not base64, rot13, zlib...; ``"utf-8"`` also reads a
    UTF-8 byte-order mark): a missing, oversized or binary file, undecodable bytes or an unknown encoding is one
    InputError naming the file (as ``name``), the place and the fix."""
    import codecs

    file = Path(file)
    option = param(name, name)
    enc = param("encoding", "encoding")
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise InputError(
            f"{enc} {encoding!r} is not a known text encoding; use e.g. utf-8, latin-1 or utf-16"
        ) from None
    if not getattr(info, "_is_text_encoding", True):  # base64, rot13, zlib_codec...: bytes to bytes, not text
        raise InputError(
            f"{enc} {encoding!r} is a {info.name} codec, not a text encoding; use e.g. utf-8, latin-1 or utf-16"
        )
    if file.is_dir():
        raise InputError(f"{option} {str(file)!r} does not exist (it is a folder)")
    raw = read_input_bytes(file, option, MAX_TEXT_BYTES)
    name = info.name
    try:
        text = raw.decode("utf-8-sig" if name == "utf-8" else encoding)
    except UnicodeError as exc:
        if not isinstance(exc, UnicodeDecodeError):  # punycode, idna: no byte offset to name
            raise InputError(
                f"{option} {str(file)!r} is not {encoding} text ({str(exc).splitlines()[0][:120]}); convert the "
                f"file to UTF-8 or pass its encoding with {enc} (e.g. latin-1)"
            ) from None
        hint = (
            f" (it starts with a UTF-16 byte-order mark: pass {enc} utf-16)"
            if raw[:2] in (b"\xff\xfe", b"\xfe\xff")
            else ""
        )
        raise InputError(
            f"{option} {str(file)!r} is not {encoding} text: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
            f"cannot be decoded{hint}; convert the file to UTF-8 or pass its encoding with {enc} (e.g. latin-1)"
        ) from None
    if "\x00" in text:
        raise InputError(
            f"{option} {str(file)!r} holds NUL characters: it is a binary file, not {encoding} text "
            f"(for UTF-16 text pass {enc} utf-16); give a text file"
        )
    return text


#: The columns of a CSV to classify that hold the texts, in order of preference.
TEXT_COLUMNS = ("text", "review")


def read_texts(file: str | os.PathLike, encoding: str = "utf-8", *, name: str = "file") -> list[str]:
    """The texts of a file to classify: one per non-empty line, or a CSV's ``text`` column (a ``.csv`` file; else
    its ``review`` column, as in the review CSVs that training reads), read by :func:`read_text_file`; an
    InputError when it holds none."""
    file = Path(file)
    raw = read_text_file(file, encoding, name=name)
    if file.suffix.lower() == ".csv":
        try:
            rows = list(csv.DictReader(raw.splitlines()))
        except csv.Error as exc:
            raise InputError(f"CSV {str(file)!r} could not be read: {exc}") from None
        column = next((c for c in TEXT_COLUMNS if rows and c in rows[0]), None)
        if column is None:
            raise InputError(
                f"CSV {str(file)!r} has no 'text' or 'review' column; add a header line naming the texts' column"
                " 'text' (or 'review', as in the review CSVs that train reads)"
            )
        texts = [r[column] or "" for r in rows]
    else:
        texts = [line for line in raw.splitlines() if line.strip()]
    if not texts:
        raise InputError(f"{str(file)!r} holds no texts")
    return texts
