import json

import numpy as np
import pytest
from sklearn.base import clone

from attndyn import InputError
from attndyn.sentiment import HardmaxSentimentClassifier, explain


def test_init_only_stores_and_clone_works():
    clf = HardmaxSentimentClassifier(d=4, layers=3, random_state=7)
    assert clf.get_params()["d"] == 4 and not hasattr(clf, "model_")
    c = clone(clf)
    assert c.get_params() == clf.get_params() and c is not clf


def test_fit_predict_score(fitted, corpus):
    texts, labels = corpus
    assert fitted.score(texts, labels) >= 0.9
    proba = fitted.predict_proba(["great wonderful film", "awful boring film"])
    assert proba.shape == (2, 2) and np.allclose(proba.sum(axis=1), 1)
    assert fitted.predict(["great wonderful film", "awful boring film"]).tolist() == [1, 0]
    assert fitted.alpha_ >= 0.5 and fitted.best_epoch_ >= 1
    assert {"val_hardmax_acc", "val_softmax_acc", "val_agreement"} <= set(fitted.history_[-1])


def test_same_random_state_same_model(corpus):
    texts, labels = corpus
    kw = dict(d=2, epochs=1, min_freq=1, random_state=5)
    a = HardmaxSentimentClassifier(**kw).fit(texts, labels)
    b = HardmaxSentimentClassifier(**kw).fit(texts, labels)
    assert np.array_equal(a.decision_function(texts), b.decision_function(texts))


def test_model_class_is_what_fit_builds(corpus):
    """A study of another architecture subclasses the estimator and sets ``model_class``; fit builds and trains it
    (here: the decoder's bias frozen at 0, which the trained model must still show)."""
    from attndyn.sentiment import SentimentTransformer

    class NoBias(SentimentTransformer):
        def __init__(self, config, *, generator=None):
            super().__init__(config, generator=generator)
            self.decoder.bias.requires_grad_(False)

    class Study(HardmaxSentimentClassifier):
        model_class = NoBias

    texts, labels = corpus
    est = Study(d=2, epochs=1, min_freq=1, random_state=0).fit(texts, labels)
    assert type(est.model_) is NoBias and float(est.model_.decoder.bias) == 0.0
    assert type(HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1).fit(texts, labels).model_) is SentimentTransformer


def test_save_load_round_trip_without_pickle(fitted, tmp_path, corpus):
    texts, _ = corpus
    fitted.save(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "vocab.json", "weights.safetensors"]
    back = HardmaxSentimentClassifier.load(tmp_path / "m")
    assert np.array_equal(back.decision_function(texts), fitted.decision_function(texts))
    assert back.get_params() == fitted.get_params()


def test_load_errors(tmp_path):
    with pytest.raises(InputError, match="has no config.json"):
        HardmaxSentimentClassifier.load(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps({"words": ["<pad>", "<unk>"]}))
    (tmp_path / "weights.safetensors").write_text("{}")
    (tmp_path / "config.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InputError, match="is not an attndyn sentiment model config"):
        HardmaxSentimentClassifier.load(tmp_path)


def test_input_errors(fitted):
    with pytest.raises(InputError, match="not fitted yet"):
        HardmaxSentimentClassifier().predict(["x"])
    with pytest.raises(InputError, match="got one string; wrap it in a list"):
        fitted.predict("great")
    with pytest.raises(InputError, match=r"X\[1\] is int, not a text"):
        fitted.predict(["ok", 3])
    with pytest.raises(InputError, match="exactly two classes"):
        HardmaxSentimentClassifier().fit(["a", "b"], [1, 1])
    with pytest.raises(InputError, match="one label per text"):
        HardmaxSentimentClassifier().fit(["a", "b"], [1])
    with pytest.raises(InputError, match="inference must be 'hardmax' or 'softmax'"):
        HardmaxSentimentClassifier(inference="argmax").fit(["a", "b"], [0, 1])
    with pytest.raises(InputError, match="no word is seen 5 times.*lower min_freq or min_log_odds"):
        HardmaxSentimentClassifier().fit(["good film", "bad film", "fine film"], [1, 0, 1])


def test_string_classes(corpus):
    texts, labels = corpus
    names = np.where(np.asarray(labels) == 1, "pos", "neg")
    clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, lr=3e-2, embed_lr=1e-1, random_state=0).fit(
        texts, names
    )
    assert set(clf.predict(texts[:4])) <= {"pos", "neg"}


def test_explanation_decomposes_the_decision(fitted):
    e = explain(fitted, "great wonderful movie but the plot was dull")
    d = e.to_dict()
    json.dumps(d)
    assert sum(c["size"] for c in d["clusters"]) == len(d["words"])
    total = sum(c["contribution"] for c in d["clusters"]) + d["bias"]
    assert total == pytest.approx(d["decision_value"], abs=1e-9)
    assert sum(abs(c["share"]) for c in d["clusters"]) == pytest.approx(1.0)
    assert d["leaders"] and (d["label"] == 1) == (d["probability"] > 0.5)


def test_bigram_tokens_are_learned_saved_and_loaded(corpus, tmp_path):
    texts, labels = corpus
    clf = HardmaxSentimentClassifier(
        d=2, epochs=6, min_freq=1, lr=3e-2, embed_lr=1e-1, patience=6, bigrams=3, random_state=0
    ).fit(texts, labels)
    pairs = [w for w in clf.vocab_.words if " " in w]
    assert pairs and all(len(w.split()) == 2 for w in pairs)
    assert clf.score(texts, labels) >= 0.9
    back = HardmaxSentimentClassifier.load(clf.save(tmp_path / "m"))
    assert back.tokenizer.bigrams and np.array_equal(back.decision_function(texts), clf.decision_function(texts))
    with pytest.raises(InputError, match="bigrams must be an integer >= 0"):
        HardmaxSentimentClassifier(bigrams=-1).fit(texts, labels)


@pytest.mark.parametrize(
    "labels, message",
    [
        ([True, False] * 3, r"y holds booleans; pass integers \(e.g. 0 and 1\) or two strings"),
        (np.array(["2020-01-01", "2021-01-01"] * 3, dtype="datetime64[D]"), r"y holds datetime64\[D\] values"),
        ([1, None, 0, 1, 0, 1], r"y\[1\] is None \(NoneType\), not a label"),
        ([1.0, float("nan"), 0.0, 1.0, 0.0, 1.0], r"y\[1\] is nan, not a label"),
        (np.array([1, "pos", 0, 1, 0, 1], dtype=object), r"y mixes labels of types \['int', 'str'\]"),
    ],
)
def test_labels_a_saved_model_cannot_record_are_refused_up_front(labels, message):
    """Issue 34 (9): boolean labels saved a folder load refused; datetime labels left weights without config.json;
    None raised a TypeError."""
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier().fit(["a good one", "a bad one"] * 3, labels)


def test_object_labels_of_one_kind_train_and_load(tmp_path):
    texts = ["great superb film", "awful dull film"] * 10
    y = np.array([np.int64(1), np.int64(0)] * 10, dtype=object)
    clf = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, random_state=0).fit(texts, y)
    back = HardmaxSentimentClassifier.load(clf.save(tmp_path / "m"))
    assert back.classes_.tolist() == [0, 1] and back.predict(texts[:2]).tolist() == clf.predict(texts[:2]).tolist()


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float32", "float64", "<U3"])
def test_labels_load_back_with_their_own_dtype(tmp_path, dtype):
    """predict() of a loaded model returns the labels it was fitted with, of the same dtype (int8 labels came back
    int64 and float32 labels float64: the config recorded the values only)."""
    texts = ["great superb film", "awful dull film"] * 10
    y = np.array(["pos", "neg"] * 10 if dtype == "<U3" else [1, 0] * 10).astype(dtype)
    clf = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, random_state=0).fit(texts, y)
    back = HardmaxSentimentClassifier.load(clf.save(tmp_path / "m"))
    assert back.classes_.dtype == clf.classes_.dtype == np.dtype(dtype)
    assert back.predict(texts[:2]).dtype == np.dtype(dtype)
    assert back.predict(texts[:2]).tolist() == clf.predict(texts[:2]).tolist()


def test_a_seed_torch_cannot_take_and_save_onto_a_file_are_input_errors(fitted, tmp_path):
    with pytest.raises(
        InputError, match=r"random_state must be an integer from 0 to 2\*\*63 - 1, got 18446744073709551616"
    ):
        HardmaxSentimentClassifier(random_state=2**64).fit(["a good one", "a bad one"] * 3, [1, 0] * 3)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"save\(\) writes three files into the folder path; '.*/file' is a file"):
        fitted.save(tmp_path / "file")
    with pytest.raises(InputError, match=r"'.*file' is a file, not a folder"):
        fitted.save(tmp_path / "file" / "below")
    assert (tmp_path / "file").read_text() == "x"
