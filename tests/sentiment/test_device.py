"""``device=`` on the estimator and ``--device`` on the CLI (CUDA tests skip without CUDA)."""

import json

import numpy as np
import pytest
import torch

from attndyn import InputError
from attndyn._devices import resolve_device
from attndyn.cli import main
from attndyn.sentiment import HardmaxSentimentClassifier

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without CUDA")

KW = dict(d=2, epochs=3, min_freq=1, lr=3e-2, embed_lr=1e-1, patience=6, random_state=0)


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(InputError, match="device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got 'gpu'"):
        resolve_device("gpu")
    with pytest.raises(InputError, match="device must be .* got 'meta'"):
        resolve_device("meta")


@no_cuda
def test_cuda_without_cuda_names_the_fix(corpus, tmp_path, capsys):
    with pytest.raises(InputError, match="CUDA is not available on this machine; use 'cpu' or 'auto'"):
        HardmaxSentimentClassifier(device="cuda").fit(*corpus)
    assert main(["sentiment", "predict", "--model", str(tmp_path), "--device", "cuda", "hi"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CUDA is not available" in err[0]


def test_auto_and_cpu_give_the_same_model(corpus):
    texts, labels = corpus
    a = HardmaxSentimentClassifier(**KW, device="cpu").fit(texts, labels)
    if torch.cuda.is_available():
        pytest.skip("auto is CUDA here: see test_cuda_training_matches_cpu")
    b = HardmaxSentimentClassifier(**KW, device="auto").fit(texts, labels)
    for (k, va), vb in zip(a.model_.state_dict().items(), b.model_.state_dict().values()):
        assert torch.equal(va, vb), k
    assert np.array_equal(a.decision_function(texts), b.decision_function(texts))


def test_cli_device_option_passes_through(fitted, tmp_path, capsys):
    fitted.save(tmp_path / "m")
    assert (
        main(["sentiment", "predict", "--model", str(tmp_path / "m"), "--device", "cpu", "--json", "great film"]) == 0
    )
    cpu = json.loads(capsys.readouterr().out)
    assert (
        main(["sentiment", "predict", "--model", str(tmp_path / "m"), "--device", "auto", "--json", "great film"]) == 0
    )
    auto = json.loads(capsys.readouterr().out)
    assert auto["label"] == cpu["label"] and auto["probability_positive"] == pytest.approx(
        cpu["probability_positive"], abs=1e-9
    )
    assert (
        main(["sentiment", "explain", "--model", str(tmp_path / "m"), "--device", "auto", "--json", "great film"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["clusters"]
    assert main(["sentiment", "predict", "--model", str(tmp_path / "m"), "--device", "tpu", "hi"]) == 2
    assert capsys.readouterr().err == "error: --device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got 'tpu'\n"


def test_load_places_the_model_on_the_given_device(fitted, tmp_path, corpus):
    fitted.save(tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["estimator"]["device"] = "cuda:7"  # trained elsewhere: loading here must not need that device
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    est = HardmaxSentimentClassifier.load(tmp_path / "m")
    assert est.device == "cpu" and next(est.model_.parameters()).device.type == "cpu"
    assert np.array_equal(est.predict(corpus[0]), fitted.predict(corpus[0]))


@cuda
def test_cuda_training_matches_cpu(corpus, tmp_path):
    texts, labels = corpus
    a = HardmaxSentimentClassifier(**KW, device="cpu").fit(texts, labels)
    b = HardmaxSentimentClassifier(**KW, device="cuda").fit(texts, labels)
    assert next(b.model_.parameters()).is_cuda
    np.testing.assert_allclose(b.decision_function(texts), a.decision_function(texts), rtol=1e-2, atol=1e-2)
    assert np.array_equal(b.predict(texts), a.predict(texts))
    a.save(tmp_path / "m")  # the same weights predicted on either device: float64 hardmax, equal to rounding
    c = HardmaxSentimentClassifier.load(tmp_path / "m", device="cuda")
    np.testing.assert_allclose(c.decision_function(texts), a.decision_function(texts), rtol=1e-12, atol=1e-12)
    assert np.array_equal(c.predict(texts), a.predict(texts))
