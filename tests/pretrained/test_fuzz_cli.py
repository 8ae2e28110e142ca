"""Fuzz corpus of `attndyn pretrained`: damaged model folders (truncated safetensors, flipped header bytes,
configs that do not match the weights), bad text, bad options and output folders that are files; each is one
line on standard error, exit status 2, no traceback, and nothing created or changed."""

import json
import shutil
from pathlib import Path

import pytest

from attndyn.cli import main


def _variant(base: Path, root: Path, name: str, change) -> None:
    d = root / name
    shutil.copytree(base, d)
    change(d)


def _flip(d: Path, at) -> None:
    b = bytearray((d / "model.safetensors").read_bytes())
    pos = at(bytes(b))
    b[pos] ^= 0x20
    (d / "model.safetensors").write_bytes(bytes(b))


@pytest.fixture
def files(tmp_path, monkeypatch, saved_bert, capsys):
    monkeypatch.chdir(tmp_path)
    model_folder = saved_bert  # a tiny BERT saved by save_pretrained (tests/pretrained/conftest.py)
    st = (model_folder / "model.safetensors").read_bytes()
    cfg = json.loads((model_folder / "config.json").read_text())
    shutil.copytree(model_folder, "bert")
    v = lambda name, change: _variant(model_folder, tmp_path, name, change)  # noqa: E731
    v("trunc", lambda d: (d / "model.safetensors").write_bytes(st[: len(st) // 2]))
    v("trunc8", lambda d: (d / "model.safetensors").write_bytes(st[:8]))
    v("trunc-header", lambda d: (d / "model.safetensors").write_bytes(st[:40]))
    v("empty-weights", lambda d: (d / "model.safetensors").write_bytes(b""))
    v("flip-length", lambda d: _flip(d, lambda b: 0))
    v("flip-length-high", lambda d: _flip(d, lambda b: 7))
    v("flip-header-json", lambda d: _flip(d, lambda b: 20))
    v("flip-tensor-name", lambda d: _flip(d, lambda b: b.index(b"embeddings.LayerNorm.bias") + 3))
    v("no-weights", lambda d: (d / "model.safetensors").unlink())
    v("config-junk", lambda d: (d / "config.json").write_text("{nope"))
    v("config-list", lambda d: (d / "config.json").write_text("[]"))
    v("config-layers", lambda d: (d / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 5})))
    v("config-width", lambda d: (d / "config.json").write_text(json.dumps({**cfg, "hidden_size": 24})))
    v("no-config", lambda d: (d / "config.json").unlink())
    Path("afile").write_text("I am a file")
    capsys.readouterr()  # save_pretrained's progress bar, not the commands' output
    return tmp_path


def analyze(*extra, text="the plot was dull", model="bert"):
    return ["pretrained", "analyze", text, "--model", model, "--no-spectra", "--no-idealized", *extra]


CASES = [
    analyze(model="trunc"),
    analyze(model="trunc8"),
    analyze(model="trunc-header"),
    analyze(model="empty-weights"),
    analyze(model="flip-length"),
    analyze(model="flip-length-high"),
    analyze(model="flip-header-json"),
    analyze(model="flip-tensor-name"),
    analyze(model="no-weights"),
    analyze(model="config-junk"),
    analyze(model="config-list"),
    analyze(model="config-layers"),
    analyze(model="config-width"),
    analyze(model="no-config"),
    analyze(model="nowhere"),
    analyze(model="afile"),
    analyze("--out", "afile"),
    analyze("--out", "afile/sub"),
    analyze(text="\x01\x02\x03"),
    analyze(text=""),
    analyze(text="   "),
    analyze("--head", "x"),
    analyze("--head", "1"),
    analyze("--head", "99,0", "--idealized"),
    analyze("--cluster-tol", "-1"),
    analyze("--cluster-tol", "nan"),
    ["pretrained", "analyze", "the plot", "--model", "bert", "--ginibre-samples", "-1"],
    ["pretrained", "analyze", "the plot", "--model", "bert", "--ginibre-samples", "1000000"],
    analyze("--bogus"),
    ["pretrained", "analyze"],
    ["pretrained", "compare-imdb", "--sentiment-run", "nowhere", "--model", "bert"],
    ["pretrained", "compare-imdb", "--sentiment-run", ".", "--model", "bert", "--out", "afile"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[2:6])[:60])
def test_bad_input_is_one_line_and_exit_2(refused, files, argv):
    refused(files, argv)


def test_the_damage_is_named(capsys, files):
    for model, message in (
        ("trunc", "could not be loaded (Error while deserializing header"),
        ("flip-tensor-name", "the weights do not match its config.json (1 tensors missing"),
        ("config-layers", "e.g. 'encoder.layer.2."),
    ):
        assert main(analyze(model=model)) == 2
        assert message in capsys.readouterr().err
    assert main(analyze(text="\x01\x02\x03")) == 2
    assert "has no tokens but the model's special ones ([CLS] [SEP])" in capsys.readouterr().err
    assert main(analyze("--out", "afile")) == 2
    assert capsys.readouterr().err == "error: --out 'afile' is a file; give a folder (it is created if missing)\n"


def test_the_intact_folder_still_works_and_corpus_size(capsys, files):
    assert main(analyze("--json")) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == ["[CLS]", "the", "plot", "was", "dull", "[SEP]"]
    assert len(CASES) >= 20
