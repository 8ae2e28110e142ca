"""Fuzz corpus of the sentiment and data commands: every bad input ends with exit status 2, exactly
one line on standard error, no traceback, and nothing written or changed anywhere under the test's folder."""

import functools
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import tarfile
import threading
from pathlib import Path

import pytest
from safetensors.torch import load as load_st
from safetensors.torch import save as save_st

from attndyn.cli import main


def _copy(src: Path, dst: Path, edit) -> None:
    shutil.copytree(src, dst)
    edit(dst)


def _config_edit(change):
    def edit(folder):
        rec = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps(change(rec)))

    return edit


def _no_hashes(rec):
    rec.pop("files", None)
    return rec


def _unsealed(rec):
    return {k: v for k, v in rec.items() if k != "sha256"}


def _weights_edit(change):
    def edit(folder):
        t = load_st((folder / "weights.safetensors").read_bytes())
        change(t)
        data = save_st(t)
        (folder / "weights.safetensors").write_bytes(data)
        rec = json.loads((folder / "config.json").read_text())
        rec["files"]["weights.safetensors"] = hashlib.sha256(data).hexdigest()
        (folder / "config.json").write_text(json.dumps(rec))

    return edit


def _flip(folder):
    b = bytearray((folder / "weights.safetensors").read_bytes())
    b[-2] ^= 0x10
    (folder / "weights.safetensors").write_bytes(bytes(b))


def _short_vocab(folder):
    _config_edit(_no_hashes)(folder)
    w = json.loads((folder / "vocab.json").read_text())["words"]
    (folder / "vocab.json").write_text(json.dumps({"words": w[:-1]}))


def _data_json(change):
    def edit(folder):
        info = json.loads((folder / "data.json").read_text())
        (folder / "data.json").write_text(json.dumps(change(info)) if callable(change) else change)

    return edit


def _tar(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/short.tar.gz":  # announces more than it sends
            body = (Path(self.directory) / "good.tar.gz").read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body) + 50))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture(scope="module")
def world(tmp_path_factory, make_corpus, write_csv):
    """A folder of inputs (good and bad), a trained run, damaged copies of it, and a local archive server."""
    root = tmp_path_factory.mktemp("fuzz")
    texts, labels = make_corpus(60)
    data = write_csv(root / "data.csv", texts, labels)
    write_csv(root / "other.csv", *make_corpus(60, seed=1))
    (root / "nolabel.csv").write_text("text,stars\ngreat,5\n")  # another data set without a label column
    write_csv(root / "nosplit.csv", texts, labels, extra=False)
    run = root / "run"
    assert (
        main(
            [
                "sentiment",
                "train",
                "--run",
                str(run),
                "--data",
                str(data),
                "--epochs",
                "1",
                "--min-freq",
                "1",
                "--no-progress",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    (root / "latin1.txt").write_bytes("a caf\xe9 film, tr\xe8s bon\n".encode("latin-1"))
    (root / "utf16.txt").write_text("a great film\n", encoding="utf-16")
    (root / "binary.bin").write_bytes(b"\x00\x01\x02great\x00film")
    (root / "garbage.bin").write_bytes(bytes(range(128, 256)))
    (root / "empty.txt").write_text("  \n\n")
    (root / "nocol.csv").write_text("comment\ngreat film\n")
    (root / "latin1.csv").write_bytes("review,sentiment\ncaf\xe9,positive\n".encode("latin-1"))
    (root / "rating_abc.csv").write_text("review,sentiment,split,rating\ngreat,positive,train,abc\n")
    (root / "badlabel.csv").write_text("review,sentiment\ngreat,maybe\n")
    (root / "headeronly.csv").write_text("review,sentiment\n")
    (root / "nosent.csv").write_text("text,label\ngreat,1\n")
    good_gz = gzip.compress((root / "data.csv").read_bytes())
    (root / "trunc.csv.gz").write_bytes(good_gz[: len(good_gz) // 2])
    (root / "afile").write_text("x")
    (root / "notacl").mkdir()
    (root / "dir.png").mkdir()
    (root / "hasacl" / "aclImdb").mkdir(parents=True)
    # damaged copies of the trained model / run folder
    damaged = {
        "cfg_list": _config_edit(lambda r: [r]),
        "cfg_null": _config_edit(lambda r: None),
        "cfg_unknown": _config_edit(lambda r: {**r, "extra": 1}),
        "cfg_classes0": _config_edit(lambda r: {**r, "classes": [0]}),
        "cfg_huge": _config_edit(
            lambda r: {**r, "estimator": {**r["estimator"], "d": 10**9}, "model": {**r["model"], "d": 10**9}}
        ),
        "cfg_alpha_str": _config_edit(lambda r: {**r, "estimator": {**r["estimator"], "alpha_min": "0.5"}}),
        "vocab_list": lambda f: (_config_edit(_no_hashes)(f), (f / "vocab.json").write_text('["<pad>", "<unk>"]')),
        "vocab_short": _short_vocab,
        "w_flip": _flip,
        "w_nan": _weights_edit(lambda t: t["embed.weight"].__setitem__((2, 0), float("nan"))),
        "w_shape": _weights_edit(lambda t: t.update({"decoder.weight": t["decoder.weight"][:, :1]})),
        "w_empty": lambda f: (_config_edit(_no_hashes)(f), (f / "weights.safetensors").write_bytes(b"")),
        "w_garbage": lambda f: (
            _config_edit(_no_hashes)(f),
            (f / "weights.safetensors").write_bytes(b"\x08" + b"\x00" * 7 + b"{}garbage"),
        ),
        "w_trunc": lambda f: (
            _config_edit(_no_hashes)(f),
            (f / "weights.safetensors").write_bytes((f / "weights.safetensors").read_bytes()[:-10]),
        ),
        "no_weights": lambda f: (f / "weights.safetensors").unlink(),
        # issue 34 (5): without the seal, swapped classes and an edited max_len loaded silently
        "cfg_unsealed": _config_edit(_unsealed),
        "cfg_unsealed_swap": _config_edit(lambda r: {**_unsealed(r), "classes": r["classes"][::-1]}),
        "cfg_unsealed_maxlen": _config_edit(lambda r: {**_unsealed(r), "estimator": {**r["estimator"], "max_len": 3}}),
        "dj_badjson": _data_json("{not json"),
        "dj_list": _data_json("[1, 2]"),
        "dj_seed": _data_json(lambda i: {**i, "seed": 3}),
        "dj_split": _data_json(lambda i: {**i, "split": "official"}),
        "dj_nsplit": _data_json(lambda i: {**i, "n_train": 1, "n_test": 59}),
        "dj_other": _data_json(lambda i: {**i, "data": str(root / "other.csv")}),
    }
    for name, edit in damaged.items():
        _copy(run, root / name, edit)
    # a pipe lives outside ``root`` (the snapshot reads every file there)
    pipes = tmp_path_factory.mktemp("pipes")
    os.mkfifo(pipes / "reviews.txt")
    os.mkfifo(pipes / "reviews.csv")
    with open(pipes / "sparse.csv", "wb") as f:  # 3 GB that take no disk: refused unread
        f.truncate(3 * 2**30)
    # the archive server lives outside ``root``
    served = tmp_path_factory.mktemp("served")
    aclimdb = [("aclImdb/train/pos/0_9.txt", b"good", "file"), ("aclImdb/test/neg/0_1.txt", b"bad", "file")]
    (served / "good.tar.gz").write_bytes(_tar(aclimdb))
    (served / "cut.tar.gz").write_bytes(_tar(aclimdb)[:60])
    (served / "broken.tar.gz").write_bytes(b"not a tar at all")
    (served / "notar.tar.gz").write_bytes(gzip.compress(b"hello" * 100))
    (served / "noacl.tar.gz").write_bytes(_tar([("other/x.txt", b"x", "file")]))
    (served / "escape.tar.gz").write_bytes(_tar([("../evil.txt", b"x", "file")]))
    (served / "link.tar.gz").write_bytes(_tar([("aclImdb/link", b"", "sym")]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield {
            "root": root,
            "run": run,
            "data": data,
            "url": f"http://127.0.0.1:{server.server_address[1]}",
            "good_sha": hashlib.sha256((served / "good.tar.gz").read_bytes()).hexdigest(),
            "pipes": pipes,
        }
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


M = ["--model", "{root}/run"]
TRAIN = [
    "sentiment",
    "train",
    "--run",
    "{root}/new",
    "--data",
    "{data}",
    "--no-progress",
    "--epochs",
    "1",
    "--min-freq",
    "1",
]
CASES = {
    "train": [
        ["--threads", "0"],
        ["--threads", "-3"],
        ["--threads", "1000000000000"],
        ["--data", "{root}/missing.csv"],
        ["--data", "{root}/rating_abc.csv"],
        ["--data", "{root}/latin1.csv"],
        ["--data", "{root}/nosent.csv"],
        ["--data", "{root}/badlabel.csv"],
        ["--data", "{root}/headeronly.csv"],
        ["--data", "{root}/trunc.csv.gz"],
        ["--data", "{root}/notacl"],
        ["--data", "{root}/garbage.bin"],
        ["--data", "{pipes}/reviews.csv"],
        ["--data", "{pipes}/sparse.csv"],
        ["--split", "bogus"],
        ["--split", "official", "--data", "{root}/nosplit.csv"],
        ["--d", "0"],
        ["--lr", "nan"],
        ["--min-log-odds", "nan"],
        ["--min-log-odds", "-1"],
        ["--word-dropout", "1"],
        ["--lr-decay", "0"],
        ["--embed-init-std", "-1"],
        ["--alpha-min", "2"],
        ["--epochs", "0"],
        ["--layers", "99999999999999999999"],
        ["--d", "100000000"],
        ["--layers", "abc"],
        ["--min-freq", "100000"],
        ["--run", "{root}/afile"],
        ["--run", "{root}/run", "--d", "3"],
        ["--run", "{root}/run", "--data", "{root}/other.csv"],
        ["--batch-size", "0"],
        ["--max-vocab", "-1"],
        ["--tau-start", "nan"],
        ["--anneal-epochs", "-1"],
        ["--val-fraction", "1.5"],
        ["--train-eval-size", "-3"],
        ["--prior-weight", "-1"],
        ["--prior-margin", "nan"],
        ["--registers", "-1"],
        ["--registers", "3", "--d", "1"],
        ["--registers", "3", "--layers", "0"],
        ["--register-shift", "0"],
        ["--register-length", "1e39"],
        ["--tau-start", "0.05", "--anneal-epochs", "0"],
        ["--tau-start", "0.05"],  # the recipes anneal over 0 epochs
        ["--anneal-epochs", "3"],  # nothing to anneal from
        ["--seed", str(2**64)],
    ],
    "evaluate": [
        [],
        ["{root}/run", "--run", "{root}/run"],
        ["{root}/missing"],
        ["{root}/notacl"],
        ["{root}/afile"],
        ["{root}/run", "--data", "{root}/nolabel.csv"],
        ["{root}/run", "--data", "{root}/missing.csv"],
        ["{root}/run", "--out", "{root}/afile"],
        ["{root}/dj_badjson"],
        ["{root}/dj_list"],
        ["{root}/dj_seed"],
        ["{root}/dj_split"],
        ["{root}/dj_nsplit"],
        ["{root}/dj_other"],
        ["{root}/cfg_list"],
        ["{root}/vocab_list"],
        ["{root}/w_flip"],
        ["{root}/w_nan"],
        ["{root}/cfg_classes0"],
    ],
    "predict": [
        M,
        M + ["great", "--file", "{root}/empty.txt"],
        M + ["--file", "{root}/missing.txt"],
        M + ["--file", "{root}/notacl"],
        M + ["--file", "{root}/latin1.txt"],
        M + ["--file", "{root}/utf16.txt"],
        M + ["--file", "{root}/binary.bin"],
        M + ["--file", "{root}/garbage.bin"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "klingon"],
        M + ["--file", "{root}/empty.txt"],
        M + ["--file", "{root}/nocol.csv"],
        ["--model", "{root}/missing", "great"],
        ["--model", "{root}/cfg_null", "great"],
        ["--model", "{root}/cfg_unknown", "great"],
        ["--model", "{root}/cfg_alpha_str", "great"],
        ["--model", "{root}/cfg_huge", "great"],
        ["--model", "{root}/vocab_list", "great"],
        ["--model", "{root}/vocab_short", "great"],
        ["--model", "{root}/w_nan", "great"],
        ["--model", "{root}/w_shape", "great"],
        ["--model", "{root}/w_empty", "great"],
        ["--model", "{root}/w_garbage", "great"],
        ["--model", "{root}/w_trunc", "great"],
        ["--model", "{root}/no_weights", "great"],
        ["--model", "{root}/cfg_classes0", "great"],
        # issue 34: unsealed folders, bytes-to-bytes codecs, a pipe and standard input as --file
        ["--model", "{root}/cfg_unsealed", "great"],
        ["--model", "{root}/cfg_unsealed_swap", "great"],
        ["--model", "{root}/cfg_unsealed_maxlen", "great"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "rot13"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "base64"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "hex"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "bz2"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "zlib_codec"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "uu"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "quopri"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "punycode"],
        M + ["--file", "{pipes}/reviews.txt"],
        M + ["--file", "/dev/stdin"],
    ],
    "explain": [
        M + ["great", "--figure", "{root}/x.unknownext"],
        M + ["great", "--figure", "{root}/noext"],
        M + ["great", "--figure", "{root}/dir.png"],
        M + ["great", "--gif", "{root}/x.png"],
        M + ["--file", "{root}/latin1.txt"],
        M + ["--file", "{root}/utf16.txt"],
        M + ["--file", "{root}/binary.bin"],
        M + ["--file", "{root}/empty.txt"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "nope"],
        M,
        M + ["great", "--file", "{root}/latin1.txt"],
        ["--model", "{root}/missing", "great"],
        ["--model", "{root}/w_flip", "great"],
        ["--model", "{root}/w_nan", "great"],
        ["--model", "{root}/vocab_short", "great"],
        ["--model", "{root}/cfg_list", "great"],
        ["--model", "{root}/cfg_classes0", "great"],
        ["--model", "{root}/cfg_unsealed_swap", "great"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "rot13"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "base64"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "hex"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "bz2"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "zlib_codec"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "uu"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "quopri"],
        M + ["--file", "{root}/latin1.txt", "--encoding", "punycode"],
        M + ["--file", "{pipes}/reviews.txt"],
    ],
    "imdb": [
        ["--url", "file:///etc/passwd"],
        ["--url", "ftp://example.org/a.tar.gz"],
        ["--url", "not a url"],
        ["--url", "http://127.0.0.1:9/none.tar.gz"],
        ["--url", "{url}/missing.tar.gz"],
        ["--url", "{url}/good.tar.gz"],
        ["--url", "{url}/good.tar.gz", "--sha256", "abc"],
        ["--url", "{url}/good.tar.gz", "--sha256", "0" * 64],
        ["--url", "{url}/broken.tar.gz", "--sha256", "none"],
        ["--url", "{url}/cut.tar.gz", "--sha256", "none"],
        ["--url", "{url}/short.tar.gz", "--sha256", "none"],
        ["--url", "{url}/notar.tar.gz", "--sha256", "none"],
        ["--url", "{url}/noacl.tar.gz", "--sha256", "none"],
        ["--url", "{url}/escape.tar.gz", "--sha256", "none"],
        ["--url", "{url}/link.tar.gz", "--sha256", "none"],
        ["--url", "{url}/good.tar.gz", "--sha256", "{good_sha}", "--download", "{root}/afile"],
        ["--url", "{url}/good.tar.gz", "--sha256", "{good_sha}", "--download", "{root}/hasacl"],
    ],
}
PREFIX = {
    "train": TRAIN,
    "evaluate": ["sentiment", "evaluate", "--no-figures"],
    "predict": ["sentiment", "predict"],
    "explain": ["sentiment", "explain"],
    "imdb": ["data", "imdb", "--download", "{root}/dl"],
}


def test_every_command_has_a_dozen_cases():
    assert all(len(c) >= 12 for c in CASES.values()) and set(CASES) == set(PREFIX)


@pytest.mark.parametrize(
    "command, args",
    [(c, a) for c, cases in CASES.items() for a in cases],
    ids=[f"{c}:{' '.join(a)[:60]}" for c, cases in CASES.items() for a in cases],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(world, command, args, capsys, snapshot):
    values = {k: str(v) for k, v in world.items()}
    argv = [a.format(**values) for a in PREFIX[command] + args]
    before = snapshot(world["root"])
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 2, (argv, out)
    assert out.err.count("\n") == 1 and out.err.startswith("error: ") and out.err.strip(), out.err
    assert "Traceback" not in out.err and "nan" not in out.out.lower()
    assert snapshot(world["root"]) == before
