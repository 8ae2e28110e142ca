"""The sentiment lexicon kept by the vocabulary, the behavioural suite, and texts with no known word."""

import json

import numpy as np
import pytest

from attndyn._validation import InputError
from attndyn.cli import main
from attndyn.sentiment import HardmaxSentimentClassifier, explain
from attndyn.sentiment._checklist import CATEGORIES, INVARIANCE_PAIRS, ITEMS, score, summary
from attndyn.sentiment._lexicon import NEGATIVE_WORDS, POSITIVE_WORDS, PROTECTED, protected_words
from attndyn.sentiment._text import Vocabulary


def test_log_odds_filter_keeps_protected_words_only():
    # "good" is in two positive and two negative texts: log-odds 0, dropped by the filter unless kept
    toks = [
        ["good", "great"],
        ["good", "awful"],
        ["good", "great"],
        ["good", "awful"],
        ["film", "great"],
        ["film", "awful"],
    ]
    labels = [1, 0, 1, 0, 1, 0]
    plain = Vocabulary.build(toks, min_freq=1, labels=labels, min_log_odds=0.3)
    kept = Vocabulary.build(toks, min_freq=1, labels=labels, min_log_odds=0.3, keep=PROTECTED)
    assert plain.words[2:] == ["awful", "great"]
    assert kept.words[2:] == ["good", "awful", "great"]  # by frequency, then alphabetically
    # keep does not bypass min_freq
    assert "good" not in Vocabulary.build(toks, min_freq=5, labels=labels, min_log_odds=0.3, keep=PROTECTED).index


def test_lexicon_is_polar_and_disjoint():
    assert not POSITIVE_WORDS & NEGATIVE_WORDS
    assert {"good", "great", "bad", "awful", "boring"} <= POSITIVE_WORDS | NEGATIVE_WORDS
    assert protected_words(["not_good", "not_film", "good", "film"]) == {"not_good", "good"}


def test_checklist_size_and_labels():
    assert sum(len(v) for v in ITEMS.values()) + len(INVARIANCE_PAIRS) >= 60
    for cat, items in ITEMS.items():
        assert {y for _, y in items} == {0, 1}, cat  # both labels in every labelled category
    for a, b in INVARIANCE_PAIRS:
        assert b.startswith(a + " ") and len(b) > len(a) + 5


def test_score_exact_on_rule_classifiers():
    always_pos = score(lambda texts: [1] * len(texts))
    for cat in ("simple", "negation", "mixed"):
        want = np.mean([y for _, y in ITEMS[cat]])
        assert always_pos[cat]["accuracy"] == pytest.approx(want)
        assert len(always_pos[cat]["failures"]) == sum(1 - y for _, y in ITEMS[cat])
    assert always_pos["invariance"] == {"accuracy": 1.0, "n": len(INVARIANCE_PAIRS), "failures": []}
    by_length = score(lambda texts: [int(len(t) % 2) for t in texts], categories=["invariance"])
    assert set(by_length) == {"invariance"}
    flips = sum((len(a) % 2) != (len(b) % 2) for a, b in INVARIANCE_PAIRS)
    assert by_length["invariance"]["accuracy"] == pytest.approx(1 - flips / len(INVARIANCE_PAIRS))
    oracle = {t: y for items in ITEMS.values() for t, y in items}
    oracle.update({b: oracle[a] for a, b in INVARIANCE_PAIRS})
    perfect = score(lambda texts: [oracle[t] for t in texts])
    assert all(perfect[c]["accuracy"] == 1.0 for c in CATEGORIES)
    assert summary(perfect).startswith("simple 1.00 (34), negation 1.00 (16)")


def test_score_errors():
    with pytest.raises(InputError, match=r"unknown checklist categories \['sarcasm'\]"):
        score(lambda t: [1] * len(t), categories=["sarcasm"])
    with pytest.raises(InputError, match="score needs a classifier with predict"):
        score(42)


def test_known_words_and_no_known_word(fitted):
    # "film" is in positive and negative texts alike: the log-odds filter dropped it
    assert "film" not in fitted.vocab_.index
    assert fitted.known_words(["The great, superb film!", "asdf qwerty", ""]) == [["great", "superb"], [], []]
    e = explain(fitted, "asdf qwerty")
    assert e.known_words == 0 and e.leaders == [] and e.clusters == [] and e.words == []
    assert explain(fitted, "a great superb film").known_words == 2


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, fitted):
    return fitted.save(tmp_path_factory.mktemp("model") / "m")


def test_predict_several_texts_and_known_words(model_dir, capsys):
    assert (
        main(
            ["sentiment", "predict", "--model", str(model_dir), "--json", "a great superb film", "asdf qwerty", "awful"]
        )
        == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["known_words"] for r in rows] == [2, 0, 1]
    assert [r["text"] for r in rows] == ["a great superb film", "asdf qwerty", "awful"]
    assert main(["sentiment", "predict", "--model", str(model_dir), "great", "asdf qwerty"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "no known word" not in lines[0] and "no known word" in lines[1]


def test_predict_text_and_file_together_refused(model_dir, tmp_path, capsys):
    (tmp_path / "t.txt").write_text("great\n")
    assert main(["sentiment", "predict", "--model", str(model_dir), "--file", str(tmp_path / "t.txt"), "great"]) == 2
    assert "not both" in capsys.readouterr().err


def test_explain_no_known_word(model_dir, capsys):
    assert main(["sentiment", "explain", "--model", str(model_dir), "asdf qwerty"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no known word") and "share" not in out
    assert main(["sentiment", "explain", "--model", str(model_dir), "--json", "asdf qwerty"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["known_words"] == 0 and rec["clusters"] == []


@pytest.mark.parametrize(
    "text, merged, kept",
    [
        ("not good", ["not_good"], ["not", "not_good"]),
        ("never dull, not bad at all", ["not_dull", "not_bad"], ["never", "not_dull", "not", "not_bad"]),
        ("not", ["not"], ["not"]),  # a negation that marks nothing stays
        ("not never boring", ["not", "not_boring"], ["not", "never", "not_boring"]),
        ("great film", ["great", "film"], ["great", "film"]),
    ],
)
def test_merge_negations(text, merged, kept):
    from attndyn.sentiment._text import Tokenizer

    assert Tokenizer(negation_scope=1, merge_negations=True)(text) == merged
    assert Tokenizer(negation_scope=1)(text) == kept
    assert Tokenizer(negation_scope=0, merge_negations=True)(text) == Tokenizer()(
        text
    )  # nothing to merge without marking


def test_new_settings_checked_and_absent_ones_read_as_before(fitted, tmp_path):
    with pytest.raises(InputError, match="merge_negations must be True or False, got 'yes'"):
        HardmaxSentimentClassifier(merge_negations="yes").fit(["a", "b"], [0, 1])
    with pytest.raises(InputError, match="lexicon must be True or False, got 1"):
        HardmaxSentimentClassifier(lexicon=1).fit(["a", "b"], [0, 1])
    folder = fitted.save(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["estimator"]["merge_negations"] is True and cfg["estimator"]["lexicon"] is True
    for key in ("merge_negations", "lexicon"):
        del cfg["estimator"][key]  # a model saved before these settings existed
    del cfg["sha256"]  # (and before config.json recorded the sha256 of its content)
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="records no sha256 of its content and files"):
        HardmaxSentimentClassifier.load(folder)
    from attndyn.sentiment import seal_model_folder

    old = HardmaxSentimentClassifier.load(seal_model_folder(folder))  # sealed explicitly, by one who trusts it
    assert old.merge_negations is False and old.lexicon is False
    assert old.tokenizer("not good") == ["not", "not_good"]  # tokenized as it was trained


def test_lexicon_examples_state_each_polarity_and_its_negation():
    from attndyn.sentiment._lexicon import NEGATED_VERDICTS, lexicon_examples
    from attndyn.sentiment._text import Tokenizer

    toks, labels = lexicon_examples(Tokenizer(negation_scope=1, merge_negations=True), 3)
    n = 2 * (len(POSITIVE_WORDS) + len(NEGATIVE_WORDS)) + len(NEGATED_VERDICTS)
    assert len(toks) == len(labels) == 3 * n
    table = dict(zip(map(tuple, toks), labels))
    assert table[("good",)] == 1 and table[("not_good",)] == 0 and table[("bad",)] == 0 and table[("not_bad",)] == 1
    assert table[("not_like",)] == 0 and table[("not_worth",)] == 0
    # with the negation kept beside the marked word, the examples are tokenized the same way
    kept, _ = lexicon_examples(Tokenizer(negation_scope=1), 1)
    assert ["not", "not_bad"] in kept


def test_lexicon_examples_teach_a_negation_the_data_gets_wrong():
    # "not bad" only ever appears in negative texts here, as it mostly does in IMDb
    texts = ["great fun", "not bad acting but awful", "wonderful", "boring not bad plot awful"] * 10
    labels = [1, 0, 1, 0] * 10
    common = dict(d=2, epochs=8, min_freq=1, min_log_odds=0, lr=3e-2, embed_lr=1e-1, patience=8, random_state=0)
    plain = HardmaxSentimentClassifier(lexicon_examples=0, **common).fit(texts, labels)
    prior = HardmaxSentimentClassifier(lexicon_examples=20, **common).fit(texts, labels)
    assert plain.predict(["not bad"]).tolist() == [0]
    assert prior.predict(["not bad"]).tolist() == [1]
    with pytest.raises(InputError, match="lexicon_examples must be an integer >= 0, got -1"):
        HardmaxSentimentClassifier(lexicon_examples=-1).fit(texts, labels)


def test_heldout_suite_shares_no_sentence_with_the_tuning_suite():
    from attndyn.sentiment._checklist import HELDOUT_INVARIANCE_PAIRS, HELDOUT_ITEMS, INVARIANCE_PAIRS, ITEMS

    tuning = {t for items in ITEMS.values() for t, _ in items} | {b for _, b in INVARIANCE_PAIRS}
    heldout = {t for items in HELDOUT_ITEMS.values() for t, _ in items} | {b for _, b in HELDOUT_INVARIANCE_PAIRS}
    assert tuning.isdisjoint(heldout)
    assert {"Good.", "A good film.", "Bad."} <= heldout


def test_score_reads_the_named_suite():
    from attndyn.sentiment._checklist import HELDOUT_ITEMS, score

    positive = lambda texts: [1] * len(texts)
    out = score(positive, suite="heldout", categories=["simple"])
    labels = [y for _, y in HELDOUT_ITEMS["simple"]]
    assert out["simple"]["n"] == len(labels)
    assert out["simple"]["accuracy"] == sum(labels) / len(labels)
    with pytest.raises(InputError, match="unknown checklist suite 'other'"):
        score(positive, suite="other")
