import functools
import hashlib
import http.server
import io
import re
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

from attndyn import InputError
from attndyn.cli._flags import FLAGS
from attndyn.sentiment._data import (
    IMDB_URL,
    download_imdb,
    read_aclimdb,
    read_csv,
    read_reviews,
    split_official,
    split_random,
)


@pytest.mark.parametrize("gz", [False, True])
def test_read_csv_plain_and_gzip(tmp_path, gz, make_corpus, write_csv):
    texts, labels = make_corpus(8)
    p = write_csv(tmp_path / ("a.csv.gz" if gz else "a.csv"), texts, labels, gz=gz)
    r = read_csv(p)
    assert r.texts == texts and r.labels.tolist() == labels
    assert list(r.split) == ["train" if i % 2 == 0 or i % 4 == 1 else "test" for i in range(8)]  # as written
    assert r.rating is not None and r.rating.tolist() == [9 if y else 2 for y in labels]


def test_read_csv_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_csv(tmp_path / "missing.csv")
    (tmp_path / "b.csv").write_text("text,label\nhi,positive\nho,0\n")
    r = read_csv(tmp_path / "b.csv")  # the usual names of other sentiment sets
    assert r.texts == ["hi", "ho"] and r.labels.tolist() == [1, 0]
    (tmp_path / "b2.csv").write_text("body,label\nhi,positive\n")
    with pytest.raises(InputError, match="no 'review' column .* name the columns review,sentiment or text,label"):
        read_csv(tmp_path / "b2.csv")
    (tmp_path / "empty.csv").write_text("")  # it said "no 'review' column (columns: [])"
    with pytest.raises(InputError, match=r"empty.csv' is empty; give a CSV whose first line names its columns"):
        read_csv(tmp_path / "empty.csv")
    (tmp_path / "c.csv").write_text("review,sentiment\nhi,meh\n")
    with pytest.raises(InputError, match="neither positive nor negative"):
        read_csv(tmp_path / "c.csv")


def _tree(root):
    for part in ("train", "test"):
        for sub, stars in (("pos", 8), ("neg", 3)):
            d = root / "aclImdb" / part / sub
            d.mkdir(parents=True)
            for i in (1, 0):
                (d / f"{i}_{stars}.txt").write_text(f"{part} {sub} {i}", encoding="utf-8")
    (root / "aclImdb" / "train" / "unsup").mkdir()


def test_read_aclimdb_tree(tmp_path):
    _tree(tmp_path)
    r = read_aclimdb(tmp_path)
    assert r.texts[:2] == ["train pos 0", "train pos 1"] and len(r) == 8
    assert r.labels.tolist() == [1, 1, 0, 0, 1, 1, 0, 0]
    assert r.rating.tolist()[:3] == [8, 8, 3]
    tr, te = split_official(r)
    assert tr.tolist() == [0, 1, 2, 3] and te.tolist() == [4, 5, 6, 7]
    assert len(read_reviews(tmp_path / "aclImdb")) == 8


def test_read_aclimdb_rejects_other_folders(tmp_path):
    with pytest.raises(InputError, match="is not an aclImdb folder"):
        read_aclimdb(tmp_path)


def test_split_random_seeded_disjoint_70_30():
    a = split_random(50_000, seed=0)
    b = split_random(50_000, seed=0)
    assert len(a[0]) == 35_000 and len(a[1]) == 15_000
    assert np.array_equal(a[0], b[0]) and not set(a[0]) & set(a[1])
    assert not np.array_equal(split_random(100, seed=1)[1], split_random(100, seed=2)[1])
    with pytest.raises(InputError, match="test_fraction must be in"):
        split_random(10, test_fraction=1.5)


def test_split_official_needs_split_column(tmp_path, make_corpus, write_csv):
    texts, labels = make_corpus(4)
    r = read_csv(write_csv(tmp_path / "a.csv", texts, labels, extra=False))
    with pytest.raises(InputError, match="no official split"):
        split_official(r)


@pytest.fixture
def http_root(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in [("aclImdb/train/pos/0_9.txt", "good"), ("aclImdb/test/neg/0_1.txt", "bad")]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (served / "aclImdb_v1.tar.gz").write_bytes(buf.getvalue())
    (served / "broken.tar.gz").write_bytes(b"not a tar")
    (served / "cut.tar.gz").write_bytes(
        buf.getvalue()[: len(buf.getvalue()) // 2]
    )  # a truncated gzip stream, served whole
    big = io.BytesIO()
    with tarfile.open(fileobj=big, mode="w:gz") as tar:  # 10 MB of zeros: a small "bomb"
        info = tarfile.TarInfo("aclImdb/train/pos/0_9.txt")
        info.size = 10_000_000
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    (served / "bomb.tar.gz").write_bytes(big.getvalue())
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        if self.path == "/short.tar.gz":  # announces 100 bytes more than it sends, then hangs up
            body = (Path(self.directory) / "aclImdb_v1.tar.gz").read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body) + 100))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        super().do_GET()


def test_download_from_local_server(tmp_path, http_root):
    digest = hashlib.sha256((tmp_path / "served" / "aclImdb_v1.tar.gz").read_bytes()).hexdigest()
    root = download_imdb(tmp_path / "dl", url=f"{http_root}/aclImdb_v1.tar.gz", sha256=digest)
    r = read_aclimdb(root)
    assert r.texts == ["good", "bad"] and r.labels.tolist() == [1, 0]


def test_download_errors(tmp_path, http_root):
    with pytest.raises(InputError, match="could not download"):
        download_imdb(tmp_path / "dl", url=f"{http_root}/missing.tar.gz")
    with pytest.raises(InputError, match="not a readable tar archive") as err:
        download_imdb(tmp_path / "dl", url=f"{http_root}/broken.tar.gz", sha256=None)
    # the message names where the file came from and the default archive's address
    assert f"(from '{http_root}/broken.tar.gz')" in str(err.value) and IMDB_URL in str(err.value)
    assert "check that --url is the tar.gz archive" in err.value.worded(FLAGS)


def _sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_download_verifies_length_and_sha256_and_keeps_nothing(tmp_path, http_root):
    dest = tmp_path / "dl"
    good = _sha(tmp_path / "served" / "aclImdb_v1.tar.gz")
    with pytest.raises(InputError, match=r"is truncated: \d+ of \d+ bytes arrived|is truncated \(\d+ bytes arrived"):
        download_imdb(dest, url=f"{http_root}/short.tar.gz", sha256=None)
    assert not dest.exists()  # neither the archive, nor a temporary file, nor the folder
    with pytest.raises(
        InputError, match=r"has sha256 [0-9a-f]{16}…, not the expected c40f74a18d3b61f9…; it is truncated or altered"
    ):
        download_imdb(dest, url=f"{http_root}/aclImdb_v1.tar.gz")  # the default is the real archive's hash
    assert not dest.exists()
    dest.mkdir()
    with pytest.raises(InputError, match="sent more than max_bytes = 100 bytes|announces .* more than max_bytes = 100"):
        download_imdb(dest, url=f"{http_root}/aclImdb_v1.tar.gz", sha256=good, max_bytes=100)
    assert list(dest.iterdir()) == []
    root = download_imdb(dest, url=f"{http_root}/aclImdb_v1.tar.gz", sha256=good)
    assert (
        sorted(p.name for p in dest.iterdir()) == ["aclImdb", "aclImdb_v1.tar.gz"]
        and _sha(dest / "aclImdb_v1.tar.gz") == good
    )
    with pytest.raises(
        InputError, match=r"exists already; read it with read_reviews\('.*aclImdb'\), or remove it"
    ) as err:
        download_imdb(dest, url=f"{http_root}/aclImdb_v1.tar.gz", sha256=good)
    assert re.search(r"read it with --data '.*aclImdb', or remove it", err.value.worded(FLAGS))  # the CLI's words
    assert root.is_dir()


def test_download_names_a_truncated_archive_and_limits_extraction(tmp_path, http_root):
    dest = tmp_path / "dl"
    with pytest.raises(
        InputError, match=r"cut.tar.gz' \(from '.*/cut.tar.gz'\) is truncated \(.*\); it was deleted: download again"
    ):
        download_imdb(dest, url=f"{http_root}/cut.tar.gz", sha256=None)
    assert not dest.exists()
    bomb = tmp_path / "served" / "bomb.tar.gz"
    assert bomb.stat().st_size < 100_000
    with pytest.raises(InputError, match="would extract to more than 1,000,000 bytes"):
        download_imdb(dest, url=f"{http_root}/bomb.tar.gz", sha256=_sha(bomb), max_bytes=1_000_000)
    assert not dest.exists()
    with pytest.raises(InputError, match="^url must be an http\\(s\\) address, got 'file:///etc/passwd'") as err:
        download_imdb(dest, url="file:///etc/passwd")
    assert err.value.worded(FLAGS).startswith("--url must be an http(s) address")  # the CLI names its flag
    with pytest.raises(
        InputError, match=r"sha256 must be 64 hex digits \(or None to skip the check\), got 'abc'"
    ) as err:
        download_imdb(dest, url=f"{http_root}/bomb.tar.gz", sha256="abc")
    assert err.value.worded(FLAGS) == (
        "sha256 must be 64 hex digits (or None, on the command line --sha256 none, to skip the check), got 'abc'"
    )


def test_load_imdb_shuffles_samples_and_splits(tmp_path, make_corpus, write_csv, monkeypatch):
    from attndyn.sentiment import load_imdb

    texts, labels = make_corpus(100)
    ordered = sorted(zip(texts, labels), key=lambda tl: -tl[1])  # sorted by label, as our IMDb copy
    path = write_csv(tmp_path / "sorted.csv", [t for t, _ in ordered], [y for _, y in ordered], extra=False)
    tr_x, tr_y, te_x, te_y = load_imdb(path)
    assert (len(tr_x), len(te_x)) == (70, 30) and sorted(tr_x + te_x) == sorted(texts)
    assert 0 < tr_y[:10].sum() < 10  # shuffled: the first rows are not all of one class
    small = load_imdb(path, n=20, seed=3)
    assert (len(small.train_texts), len(small.test_texts)) == (14, 6) and set(small.train_labels.tolist()) == {0, 1}
    assert load_imdb(path, n=20, seed=3).train_texts == small.train_texts  # seeded
    with pytest.raises(InputError, match=r"n must be an integer from 2 to 100 \(the reviews in the file\), got 0"):
        load_imdb(path, n=0)
    monkeypatch.setenv("ATTNDYN_IMDB", str(path))
    assert load_imdb().train_texts == tr_x
    monkeypatch.setenv("ATTNDYN_IMDB", str(tmp_path / "none.csv"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("attndyn.sentiment._data.__file__", str(tmp_path / "a" / "b" / "c" / "d.py"))
    with pytest.raises(InputError, match="no IMDb data found .* set ATTNDYN_IMDB .*`attndyn data imdb --download DIR`"):
        load_imdb()


def test_download_refuses_bad_destinations_and_archives_without_aclimdb(tmp_path, http_root):
    good = _sha(tmp_path / "served" / "aclImdb_v1.tar.gz")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(InputError, match=r"^dest '.*a_file' is a file; give a folder to download into") as err:
        download_imdb(a_file, url=f"{http_root}/aclImdb_v1.tar.gz", sha256=good)
    assert err.value.worded(FLAGS).startswith(f"--download {str(a_file)!r} is a file")
    with pytest.raises(InputError, match=r"max_bytes must be a positive integer, got True"):
        download_imdb(tmp_path / "dl", url=f"{http_root}/aclImdb_v1.tar.gz", max_bytes=True)
    other = io.BytesIO()
    with tarfile.open(fileobj=other, mode="w:gz") as tar:  # a valid archive holding no aclImdb folder
        info = tarfile.TarInfo("other/readme.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    (tmp_path / "served" / "other.tar.gz").write_bytes(other.getvalue())
    nested = tmp_path / "new" / "deeper" / "dl"  # three folders this call makes, and removes again
    with pytest.raises(InputError, match=r"the archive from '.*other.tar.gz' holds no aclImdb folder; it was deleted"):
        download_imdb(nested, url=f"{http_root}/other.tar.gz", sha256=None)
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "other.tar.gz").write_bytes(b"an archive that was here before")
    with pytest.raises(InputError, match="holds no aclImdb folder"):
        download_imdb(kept, url=f"{http_root}/other.tar.gz", sha256=None)
    assert sorted(p.name for p in kept.iterdir()) == []  # an archive without aclImdb is deleted even if it was there


def test_read_texts_is_the_predict_file_reader_in_python(tmp_path):
    """attndyn.sentiment._data.read_texts reads what `predict --file` reads, and refuses in the library's words."""
    from attndyn import InputError
    from attndyn.sentiment._data import read_text_file, read_texts

    lines = tmp_path / "r.txt"
    lines.write_text("A good film.\n\n  \nA waste of time.\n", encoding="utf-8")
    assert read_texts(lines) == ["A good film.", "A waste of time."]
    table = tmp_path / "r.csv"
    table.write_text('text,other\n"Good, really.",1\nBad.,0\n', encoding="utf-8")
    assert read_texts(table) == ["Good, really.", "Bad."]
    latin = tmp_path / "l.txt"
    latin.write_bytes("très bien".encode("latin-1"))
    assert read_text_file(latin, "latin-1") == "très bien"
    import pytest

    with pytest.raises(InputError, match=r"^file '.*l.txt' is not utf-8 text: byte 0xe8 at offset 2 .* with encoding"):
        read_text_file(latin)
    with pytest.raises(InputError, match=r"^encoding 'rot13' is a rot-13 codec, not a text encoding"):
        read_text_file(lines, "rot13")
