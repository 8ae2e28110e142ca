"""The fitted model without scikit-learn (:mod:`attndyn.sentiment._inference`): the same answers as the estimator,
the estimator's parameter checks, and a ``predict`` command that never imports scikit-learn."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attndyn._validation import InputError
from attndyn.sentiment import HardmaxSentimentClassifier
from attndyn.sentiment._inference import load_model
from attndyn.sentiment._recipes import PARAMS, check_params

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, fitted):
    return fitted.save(tmp_path_factory.mktemp("inference") / "m")


def test_params_are_the_estimators_signature():
    sig = inspect.signature(HardmaxSentimentClassifier)
    assert {k: p.default for k, p in sig.parameters.items()} == dict(PARAMS)


def test_loaded_model_answers_as_the_estimator(fitted, model_dir, corpus):
    texts = corpus[0][:40] + ["asdf qwerty", "great great great"]
    m = load_model(model_dir)
    est = HardmaxSentimentClassifier.load(model_dir)
    np.testing.assert_array_equal(m.decision_function(texts), fitted.decision_function(texts))
    np.testing.assert_array_equal(m.predict_proba(texts), est.predict_proba(texts))
    assert m.known_words(texts) == fitted.known_words(texts)
    assert m.classes.tolist() == fitted.classes_.tolist() and m.history == fitted.history_
    assert est.get_params() == fitted.get_params() and est.settings_ == fitted.settings_


@pytest.mark.parametrize(
    "params, message",
    [
        ({"inference": "argmax"}, "inference must be 'hardmax' or 'softmax'"),
        ({"verbose": 1}, "verbose must be True or False"),
        ({"random_state": -1}, "random_state"),
        ({"alpha_min": float("nan")}, "alpha_min"),
        ({"max_len": "20"}, "max_len"),
        ({"epochs_": 3}, "unknown parameters ['epochs_']"),
    ],
)
def test_check_params_refuses_as_the_estimator_does(params, message):
    with pytest.raises(InputError, match=None) as got:
        check_params({"d": 2, **params})
    assert message in str(got.value)
    if "unknown" not in message:
        with pytest.raises(InputError) as est:
            HardmaxSentimentClassifier(**params).check_params()
        assert str(est.value) == str(got.value)


def test_predict_command_does_not_import_scikit_learn(model_dir):
    code = (
        "import sys\nfrom attndyn.cli import main\n"
        f"rc = main(['sentiment', 'predict', '--model', {str(model_dir)!r}, '--json', 'a great superb film'])\n"
        "print(sorted(m for m in ('sklearn', 'scipy.stats', 'matplotlib', 'pandas') if m in sys.modules), rc)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[-1] == "[] 0"
    assert json.loads(out[0])["known_words"] == 2


def _varied_texts(corpus, k=300):
    """Reviews of many lengths: slices of the corpus's texts, so that batches pad differently."""
    rng = np.random.default_rng(0)
    out = []
    for t in corpus[0][:k]:
        w = t.split()
        a = int(rng.integers(0, len(w)))
        out.append(" ".join(w[a : a + int(rng.integers(1, 40))]))
    return out


def test_a_texts_decision_value_does_not_depend_on_its_batch():
    """H of a text alone equals H of the same text among others, bit for bit (the decoder's mean was a reduction
    whose order followed the batch's padded shape: an ulp apart in 7 of these 300 texts)."""
    import random

    words = "great fun awful boring acting mess superb dull film plot good bad".split()
    rng = random.Random(0)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(300)]
    y = [int(sum(w in ("great", "fun", "superb", "good") for w in t.split()) >= 3) for t in texts]
    clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, random_state=0).fit(texts, y)
    together = clf.decision_function(texts)
    alone = np.array([clf.decision_function([t])[0] for t in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(clf.decision_function(texts[::-1])[::-1], together)


def test_an_explanation_reports_the_predictions_own_numbers(fitted, corpus):
    """explain's and attribute's decision value and probability are decision_function's and predict_proba's."""
    from attndyn.sentiment import attribute, explain

    texts = _varied_texts(corpus, 60)
    H, P = fitted.decision_function(texts), fitted.predict_proba(texts)[:, 1]
    for t, h, p in zip(texts, H, P):
        e = explain(fitted, t)
        assert (e.decision_value, e.probability) == (h, p)
        assert attribute(fitted, t).decision_value == h
