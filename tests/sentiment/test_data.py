import functools
import http.server
import io
import tarfile
import threading

import numpy as np
import pytest

from attndyn import InputError
from attndyn.sentiment.data import download_imdb, read_aclimdb, read_csv, read_reviews, split_official, split_random


@pytest.mark.parametrize("gz", [False, True])
def test_read_csv_plain_and_gzip(tmp_path, gz, make_corpus, write_csv):
    texts, labels = make_corpus(8)
    p = write_csv(tmp_path / ("a.csv.gz" if gz else "a.csv"), texts, labels, gz=gz)
    r = read_csv(p)
    assert r.texts == texts and r.labels.tolist() == labels
    assert set(r.split) == {"train", "test"} and r.rating is not None


def test_read_csv_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_csv(tmp_path / "missing.csv")
    (tmp_path / "b.csv").write_text("text,label\nhi,positive\n")
    with pytest.raises(InputError, match="no 'review' column"):
        read_csv(tmp_path / "b.csv")
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
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


def test_download_from_local_server(tmp_path, http_root):
    root = download_imdb(tmp_path / "dl", url=f"{http_root}/aclImdb_v1.tar.gz")
    r = read_aclimdb(root)
    assert r.texts == ["good", "bad"] and r.labels.tolist() == [1, 0]


def test_download_errors(tmp_path, http_root):
    with pytest.raises(InputError, match="could not download"):
        download_imdb(tmp_path / "dl", url=f"{http_root}/missing.tar.gz")
    with pytest.raises(InputError, match="not a readable tar archive"):
        download_imdb(tmp_path / "dl", url=f"{http_root}/broken.tar.gz")
