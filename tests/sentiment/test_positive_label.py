"""Which label is positive sentiment: the lexicon's sign prior and examples follow ``positive_label`` (inferred from
the labels' names, else ``classes_[1]``), and labels that hold positive sentiment elsewhere are refused before
training instead of trained against the lexicon."""

import json

import numpy as np
import pytest
import torch

from attndyn import InputError
from attndyn.cli import main
from attndyn.cli._flags import FLAGS
from attndyn.sentiment import HardmaxSentimentClassifier
from attndyn.sentiment._estimator import MIN_EVIDENCE, positive_index
from attndyn.sentiment._layout import CONFIG
from attndyn.sentiment._lexicon import lexicon_evidence, lexicon_examples
from attndyn.sentiment._modelfile import SEAL, seal
from attndyn.sentiment._text import Tokenizer

TEXTS = ["great fun", "awful boring", "great acting", "boring awful mess"] * 10
FAST = dict(d=2, epochs=4, embed_lr=0.1, min_freq=1, random_state=0)


def _weights(clf: HardmaxSentimentClassifier) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in clf.model_.state_dict().items()}


def test_labels_with_1_for_negative_learn_with_positive_label_0():
    y = [0, 1, 0, 1] * 10  # 0: positive
    clf = HardmaxSentimentClassifier(**FAST, positive_label=0).fit(TEXTS, y)
    assert clf.score(TEXTS, y) == 1.0
    assert clf.classes_.tolist() == [0, 1]  # scikit-learn's order, whatever is positive
    proba, H = clf.predict_proba(TEXTS[:4]), clf.decision_function(TEXTS[:4])
    assert np.allclose(proba[:, 1], 1 / (1 + np.exp(-H)))  # the columns follow classes_
    assert clf.predict(TEXTS[:4]).tolist() == clf.classes_[proba.argmax(axis=1)].tolist() == [0, 1, 0, 1]


def test_labels_with_1_for_negative_are_refused_naming_positive_label():
    with pytest.raises(
        InputError,
        match=r"positive sentiment as 0, not 1: 70 of the 70 .*; pass positive_label=0, "
        r"or prior_weight=0 to train without the lexicon's polarity$",
    ) as err:
        HardmaxSentimentClassifier(**FAST).fit(TEXTS, [0, 1, 0, 1] * 10)
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"prior_weight=0 and lexicon_examples=0 to train"):
        HardmaxSentimentClassifier(**FAST, lexicon_examples=1).fit(TEXTS, [0, 1, 0, 1] * 10)
    with pytest.raises(InputError, match=r"as 'neg', not 'pos'.*; pass positive_label='neg'"):
        HardmaxSentimentClassifier(**FAST).fit(TEXTS, ["neg", "pos", "neg", "pos"] * 10)
    cli = err.value.worded(FLAGS)  # the command line's labels are canonical: it asks for the data to say so
    assert "give a data file whose sentiment column says positive (or 1) for the positive reviews" in cli
    assert "--prior-weight=0" in cli


def test_without_the_lexicon_s_polarity_or_with_few_lexicon_words_training_proceeds():
    y = [0, 1, 0, 1] * 10
    assert HardmaxSentimentClassifier(**FAST, prior_weight=0).fit(TEXTS, y).score(TEXTS, y) == 1.0
    HardmaxSentimentClassifier(**FAST, lexicon=False).fit(TEXTS, y)  # lexicon off: no prior
    few = ["great fun", "awful day"] * 9 + ["nice day", "film plot"]  # 19 lexicon words
    assert sum(lexicon_evidence([t.split() for t in few], [i % 2 == 1 for i in range(20)])) == MIN_EVIDENCE - 1
    HardmaxSentimentClassifier(**FAST).fit(few, [0, 1] * 10)  # too little evidence to judge: trained


@pytest.mark.parametrize(
    "labels, classes",
    [(["Positive", "negative"], ["Positive", "negative"]), (["POS", "neg"], ["POS", "neg"]), ([2, 1], [1, 2])],
)
def test_named_and_numeric_labels_learn_whatever_their_sorted_order(labels, classes):
    y = labels * 20
    clf = HardmaxSentimentClassifier(**FAST).fit(TEXTS, y)
    assert clf.classes_.tolist() == classes and clf.score(TEXTS, y) == 1.0
    assert clf.predict(["great fun", "boring awful mess"]).tolist() == labels


def test_positive_index_infers_the_positive_label():
    def idx(classes, label=None):
        return positive_index(np.array(classes), label)

    assert idx([0, 1]) == idx([-1, 1]) == idx([1, 2]) == idx(["bad", "good"]) == idx(["neg", "pos"]) == 1
    assert idx(["Positive", "negative"]) == idx(["POS", "neg"]) == idx(["good", "neg"]) == 0
    assert idx(["NEG", "other"]) == 1
    assert idx([0, 1], 0) == idx([0.0, 1.0], 1) - 1 == idx(["a", "b"], np.str_("a")) == 0
    with pytest.raises(InputError, match=r"^positive_label='1' is not one of the labels \[0, 1\]; pass one of them"):
        idx([0, 1], "1")


@pytest.mark.parametrize("bad", [True, float("nan"), [1], object()])
def test_positive_label_of_another_kind_is_refused_before_training(bad):
    with pytest.raises(InputError, match=r"^positive_label must be the label of positive sentiment .* got "):
        HardmaxSentimentClassifier(positive_label=bad).fit(["x"], [0])


def test_the_lexicon_examples_follow_the_positive_label():
    tok = Tokenizer(negation_scope=1, merge_negations=True)
    toks, ones = lexicon_examples(tok, 2)
    toks0, zeros = lexicon_examples(tok, 2, positive=0)
    assert toks0 == toks and zeros == [1 - y for y in ones]
    assert dict(zip(map(tuple, toks0), zeros))[("good",)] == 0


@pytest.mark.parametrize("kw", [{}, {"lexicon_examples": 2}])
def test_labels_0_1_train_bit_for_bit_as_before(corpus, kw):
    """positive_label None and 1 on labels 0/1, and 'neg'/'pos', give the weights of the version before it existed
    (the same state_dict: the prior and the lexicon examples say 1 = positive as they did)."""
    texts, y = corpus
    fit = dict(d=2, epochs=1, min_freq=1, random_state=3, **kw)
    base = _weights(HardmaxSentimentClassifier(**fit).fit(texts, y))
    for other in (
        HardmaxSentimentClassifier(**fit, positive_label=1).fit(texts, y),
        HardmaxSentimentClassifier(**fit).fit(texts, np.array(["neg", "pos"])[y]),
    ):
        w = _weights(other)
        assert w.keys() == base.keys() and all(torch.equal(w[k], base[k]) for k in base)


def test_a_saved_model_keeps_positive_label_and_one_saved_before_it_loads(tmp_path):
    y = [0, 1, 0, 1] * 10
    clf = HardmaxSentimentClassifier(**FAST, positive_label=np.int64(0)).fit(TEXTS, y)
    back = HardmaxSentimentClassifier.load(clf.save(tmp_path / "m"))
    assert back.get_params()["positive_label"] == 0 and back.score(TEXTS, y) == 1.0
    clf = HardmaxSentimentClassifier(**FAST).fit(TEXTS, [1, 0, 1, 0] * 10)
    rec = json.loads((clf.save(tmp_path / "old") / CONFIG).read_text())
    for key in ("estimator", "params"):  # as a version before positive_label wrote it
        del rec[key]["positive_label"]
    (tmp_path / "old" / CONFIG).write_text(json.dumps(seal({k: v for k, v in rec.items() if k != SEAL})))
    old = HardmaxSentimentClassifier.load(tmp_path / "old")
    assert old.get_params()["positive_label"] is None and old.predict(["great fun"]).tolist() == [1]


def test_the_command_line_reads_canonical_labels_and_resumes_a_run_from_before_positive_label(
    tmp_path, make_corpus, write_csv, capsys
):
    """``attndyn sentiment train`` maps the sentiment column to 0/1 with 1 = positive, so it needs no flag; a run
    folder whose settings.json predates positive_label is the same run."""
    data = write_csv(tmp_path / "a.csv", *make_corpus(60))
    run = tmp_path / "run"
    train = ["sentiment", "train", "--epochs", "1", "--min-freq", "1", "--no-progress", "--threads", "1"]
    assert main(train + ["--run", str(run), "--data", str(data)]) == 0
    settings = json.loads((run / "settings.json").read_text())
    assert settings["estimator"]["positive_label"] is None
    del settings["estimator"]["positive_label"]
    (run / "settings.json").write_text(json.dumps(settings))
    capsys.readouterr()
    assert main(train + ["--run", str(run), "--data", str(data)]) == 0
    assert "is complete; nothing was changed" in capsys.readouterr().err
    texts, labels = make_corpus(60)
    flipped = write_csv(tmp_path / "b.csv", texts, [1 - y for y in labels])
    assert main(train + ["--run", str(tmp_path / "run2"), "--data", str(flipped)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the labels seem to hold positive sentiment as 0, not 1") and err.count("\n") == 1
    assert "give a data file whose sentiment column says positive (or 1)" in err
