"""A refused or failed refit leaves the estimator as it was; DataFrames, mixed labels, a bad ``inference`` and
``score``'s arguments are InputErrors or read as the user means (round 4 of a new user's pass)."""

import numpy as np
import pandas as pd
import pytest

from attndyn import InputError
from attndyn.sentiment import HardmaxSentimentClassifier, _estimator, attribute, explain

TEXTS = ["great fun", "awful boring", "great acting", "boring awful mess"] * 10
PROBE = ["great fun", "awful boring", "great but boring"]


def small(**kw):
    return HardmaxSentimentClassifier(d=2, epochs=2, embed_lr=0.1, min_freq=1, random_state=0, **kw)


@pytest.fixture(scope="module")
def clf():
    return small().fit(TEXTS, [1, 0, 1, 0] * 10)


def _fitted_attrs(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_")}


def _assert_unchanged(est, before, H):
    after = _fitted_attrs(est)
    assert set(after) == set(before)
    assert all(after[k] is before[k] for k in before)  # the very same objects: nothing was reassigned
    assert est.classes_.tolist() == [0, 1]
    assert np.array_equal(est.decision_function(PROBE), H)


def test_a_refit_refused_for_its_vocabulary_leaves_the_model_as_it_was(tmp_path):
    est = small().fit(TEXTS, [1, 0, 1, 0] * 10)
    before, H = _fitted_attrs(est), est.decision_function(PROBE)
    with pytest.raises(InputError, match="no words left once tokenized"):
        est.fit(["", "!!"] * 10, ["good", "terrible"] * 10)
    _assert_unchanged(est, before, H)
    loaded = HardmaxSentimentClassifier.load(est.save(tmp_path / "m"))
    assert loaded.classes_.tolist() == [0, 1] and np.array_equal(loaded.decision_function(PROBE), H)


def test_a_refit_refused_by_the_lexicon_check_leaves_the_model_as_it_was(make_corpus):
    texts, labels = make_corpus(80)
    est = small(lexicon_examples=1).fit(texts, labels)
    before, H = _fitted_attrs(est), est.decision_function(PROBE)
    flipped = ["positive" if y == 0 else "negative" for y in labels]  # the labels name the sentiment backwards
    with pytest.raises(InputError, match="the labels seem to hold positive sentiment as 'negative'"):
        est.fit(texts, flipped)
    _assert_unchanged(est, before, H)


def test_a_refit_that_fails_while_training_leaves_the_model_as_it_was(monkeypatch):
    est = small().fit(TEXTS, [1, 0, 1, 0] * 10)
    before, H = _fitted_attrs(est), est.decision_function(PROBE)

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_estimator, "train", broken)
    with pytest.raises(KeyboardInterrupt):
        est.fit(["lovely film", "dreadful film"] * 10, ["pos", "neg"] * 10)
    _assert_unchanged(est, before, H)


def test_a_first_fit_that_is_refused_leaves_the_estimator_unfitted():
    est = small()
    with pytest.raises(InputError, match="no words left once tokenized"):
        est.fit(["", "!!"] * 10, [1, 0] * 10)
    # every word a stop word: the fix is fewer stop words, not a lower min_freq (which was the advice)
    with pytest.raises(InputError, match="no words left once tokenized.*give fewer stop_words"):
        est.set_params(stop_words=["lovely", "dreadful", "film"]).fit(
            ["lovely film", "dreadful film"] * 10, [1, 0] * 10
        )
    est.set_params(stop_words="english")
    assert _fitted_attrs(est) == {}
    with pytest.raises(InputError, match="not fitted yet"):
        est.predict(["great"])


def test_a_one_column_dataframe_is_read_by_its_rows(clf):
    df = pd.DataFrame({"review": PROBE})
    H = clf.decision_function(PROBE)
    assert np.array_equal(clf.decision_function(df), H)
    assert np.array_equal(clf.decision_function(df["review"]), H)
    assert clf.predict(df).tolist() == clf.predict(PROBE).tolist() and len(clf.predict(df)) == 3
    assert np.array_equal(clf.predict_proba(df), clf.predict_proba(PROBE))
    assert clf.score(df, clf.predict(PROBE)) == 1.0
    refit = small().fit(pd.DataFrame({"t": TEXTS}), pd.Series([1, 0, 1, 0] * 10))
    assert np.array_equal(refit.decision_function(PROBE), H)


def test_a_dataframe_of_several_columns_is_refused(clf):
    df = pd.DataFrame({"review": PROBE, "stars": [5, 1, 3]})
    msg = r"X is a DataFrame of 2 columns \['review', 'stars'\], not a list of texts; pass the one column of texts, e\.g\. df\['review'\]"
    for method in (clf.predict, clf.predict_proba, clf.decision_function):
        with pytest.raises(InputError, match=msg):
            method(df)
    with pytest.raises(InputError, match=msg):
        small().fit(pd.DataFrame({"review": TEXTS, "stars": 1}), [1, 0, 1, 0] * 10)


def test_an_array_of_one_column_is_read_by_its_rows_and_of_two_refused(clf):
    col = np.array(PROBE, dtype=object)[:, None]  # shape (3, 1), as X[["review"]].to_numpy() gives
    assert np.array_equal(clf.decision_function(col), clf.decision_function(PROBE))
    assert np.array_equal(clf.decision_function(np.array(PROBE)[:, None]), clf.decision_function(PROBE))
    two = np.array([[t, "5"] for t in PROBE])
    msg = r"X is an array of shape \(3, 2\), not a list of texts; pass a 1-D array or list of strings, e\.g\. X\[:, 0\]"
    with pytest.raises(InputError, match=msg):
        clf.predict(two)


@pytest.mark.parametrize("y", [[1, "neg"] * 20, [np.int64(1), "neg"] * 20, [1.0, "neg"] * 20])
def test_labels_mixing_strings_and_numbers_are_refused(y):
    with pytest.raises(InputError, match=r"y mixes labels of types \['(float|int)', 'str'\]; pass labels of one kind"):
        small().fit(TEXTS, y)


@pytest.mark.parametrize("inference", ["Hardmax", "bogus", None])
def test_an_inference_set_after_fit_is_checked_where_it_is_used(clf, inference):
    est = small().fit(TEXTS, [1, 0, 1, 0] * 10)
    est.set_params(inference=inference)
    msg = rf"inference must be 'hardmax' or 'softmax', got {inference!r}; set it with set_params"
    for method in (est.predict, est.predict_proba, est.decision_function):
        with pytest.raises(InputError, match=msg):
            method(PROBE)
    with pytest.raises(InputError, match=msg):
        est.score(PROBE, [1, 0, 1])
    assert np.array_equal(est.set_params(inference="hardmax").decision_function(PROBE), clf.decision_function(PROBE))


def test_an_explanation_of_softmax_predictions_is_refused(clf):
    """explain, attribute, cluster_flow and figure9_data account for the hardmax run exactly; a classifier that
    predicts with the softmax model makes another decision (it can differ in sign), so they refuse it."""
    from attndyn.sentiment import cluster_flow, figure9_data

    est = small(inference="softmax").fit(TEXTS, [1, 0, 1, 0] * 10)
    for f, name in ((explain, "explain"), (attribute, "attribute"), (cluster_flow, "cluster_flow")):
        with pytest.raises(InputError, match=rf"^{name} accounts for the hardmax run, but .* inference='softmax'"):
            f(est, "great fun")
    with pytest.raises(InputError, match="set_params\\(inference='hardmax'\\)"):
        figure9_data(est, "great fun")
    est.set_params(inference="hardmax")  # the same weights, now predicting with the run that explain reads
    assert explain(est, "great fun").decision_value == pytest.approx(est.decision_function(["great fun"])[0], abs=1e-12)


def test_score_checks_the_lengths_and_the_kind_of_the_labels(clf):
    with pytest.raises(InputError, match=r"y must be one label per text \(2 texts\), got 1 labels"):
        clf.score(["great fun", "awful"], [1])
    with pytest.raises(
        InputError, match=r"y holds strings, but the model's labels are \[0, 1\]; pass labels of that kind"
    ):
        clf.score(["great fun", "awful"], ["pos", "neg"])
    with pytest.raises(InputError, match="y mixes labels of types"):
        clf.score(["great fun", "awful"], [1, "neg"])
    assert clf.score(["great fun", "awful boring"], [1, 0]) == 1.0
    assert clf.score(["great fun", "awful boring"], [1, 1], sample_weight=[3, 1]) == 0.75


def test_a_text_with_no_known_word_explain_leaves_out_what_attribute_credits_to_unk(clf):
    ex, att = explain(clf, "qwerty"), attribute(clf, "qwerty")
    assert ex.known_words == 0 and ex.clusters == [] and att.words == ["<unk>"]
    unk = att.decision_value - att.bias  # <v, z_unk>: the whole decision but the bias
    assert att.contributions[0] == pytest.approx(unk, abs=1e-12)
    assert ex.decision_value == pytest.approx(ex.bias + unk, abs=1e-12)


def test_figure9_data_names_its_text_argument_as_explain_does(clf):
    from attndyn.sentiment import figure9_data

    with pytest.raises(
        InputError, match=r"^text must be one review as a string, got NoneType; pass e\.g\. figure9_data\(clf, "
    ):
        figure9_data(clf, None)


def test_a_model_whose_settings_changed_since_fit_is_not_saved_as_if_trained_with_them(tmp_path):
    # set_params(epochs=7) after fit, then save(): the file recorded the weights' settings and the new ones side by
    # side, and load() refused it as "edited or mixed from two models"
    est = small().fit(TEXTS, [1, 0, 1, 0] * 10)
    H = est.decision_function(PROBE)
    est.set_params(epochs=7)
    with pytest.raises(InputError, match=r"trained with epochs = 2 \(now 7\).*fit it again"):
        est.save(tmp_path / "m")
    assert not (tmp_path / "m" / "config.json").exists()
    est.set_params(epochs=2, verbose=True)  # back to the trained settings; verbose does not change the weights
    loaded = HardmaxSentimentClassifier.load(est.save(tmp_path / "m"))
    assert np.array_equal(loaded.decision_function(PROBE), H)


@pytest.mark.parametrize("name, value", [("d", np.int64(2)), ("layers", np.int64(1)), ("batch_size", np.int32(8))])
def test_numpy_integers_are_settings_like_python_ints(tmp_path, name, value):
    # a grid search passes np.int64: "d must be a positive integer, got np.int64(2)"
    est = small().set_params(**{name: value}).fit(TEXTS, [1, 0, 1, 0] * 10)
    ref = small().set_params(**{name: int(value)}).fit(TEXTS, [1, 0, 1, 0] * 10)
    assert np.array_equal(est.decision_function(PROBE), ref.decision_function(PROBE))
    loaded = HardmaxSentimentClassifier.load(est.save(tmp_path / "m"))
    assert np.array_equal(loaded.decision_function(PROBE), ref.decision_function(PROBE))
