import pytest
import torch

from attndyn import InputError
from attndyn.sentiment._text import ENGLISH_STOP_WORDS, NEGATIONS, Tokenizer, Vocabulary, clean, encode, tokenize


def test_clean_removes_markup_links_digits_and_repeats():
    assert clean("Sooooo GOOD!!<br /><br />See http://imdb.com 10/10 café") == "soo good see caf"


def test_negations_survive_the_default_stop_list():
    assert tokenize("It wasn't good, and I can't say it's not bad", Tokenizer().stop_set) == [
        "not",
        "good",
        "not",
        "say",
        "not",
        "bad",
    ]
    assert NEGATIONS.isdisjoint(Tokenizer().stop_set)


def test_stop_list_is_configurable():
    assert Tokenizer(stop_words="none")("the film") == ["the", "film"]
    assert Tokenizer(stop_words=["film"])("the film") == ["the"]
    assert "not" in Tokenizer(keep_negations=False).stop_set and "not" not in ENGLISH_STOP_WORDS - NEGATIONS


def test_bad_stop_words_named():
    with pytest.raises(InputError, match="stop_words must be 'english', 'none' or a list"):
        Tokenizer(stop_words="french")


def test_vocabulary_frequency_order_and_min_freq():
    v = Vocabulary.build([["b", "a", "a"], ["c", "b", "a"]], min_freq=2)
    assert v.words == ["<pad>", "<unk>", "a", "b"]
    assert v.ids(["c", "a"]) == [2] and v.ids(["zzz"]) == [1]


def test_vocabulary_must_start_with_specials():
    with pytest.raises(InputError, match="must start with"):
        Vocabulary(["a", "b"])


def test_encode_truncates_pads_and_masks():
    v = Vocabulary.build([["a", "b", "c"]], min_freq=1)
    ids, mask = encode([["a", "b", "c"], ["b"]], v, max_len=2)
    assert ids.shape == (2, 2)
    assert mask.tolist() == [[True, True], [True, False]]
    assert int(ids[1, 1]) == 0 and ids.dtype == torch.int64


def test_encode_max_len_checked():
    with pytest.raises(InputError, match="max_len must be >= 1"):
        encode([["a"]], Vocabulary(), max_len=0)


def test_vocabulary_log_odds_filter_keeps_informative_words_and_negations():
    docs = [["good", "film", "not"], ["bad", "film", "not"]] * 5 + [["great", "plot"], ["awful", "plot"]] * 5
    labels = [1, 0] * 10
    v = Vocabulary.build(docs, min_freq=1, labels=labels, min_log_odds=1.0)
    assert set(v.words[2:]) == {"good", "bad", "great", "awful", "not"}  # film, plot say nothing
    assert set(Vocabulary.build(docs, min_freq=1).words[2:]) >= {"film", "plot"}
    with pytest.raises(InputError, match="one 0/1 label per token list"):
        Vocabulary.build(docs, min_log_odds=1.0)


def test_negation_scope_marks_the_next_words_only():
    tok = Tokenizer(negation_scope=2)
    assert tok("The plot was not good or funny, but the cast is great") == [
        "plot",
        "not",
        "not_good",
        "not_funny",
        "cast",
        "great",
    ]
    assert tok("never never liked") == ["never", "never", "not_liked"]  # a negation restarts the window
    assert Tokenizer()("not good") == ["not", "good"]
    assert "negation_scope" not in Tokenizer().config() and Tokenizer(negation_scope=1).config()["negation_scope"] == 1
    with pytest.raises(InputError, match="negation_scope must be an integer >= 0"):
        Tokenizer(negation_scope=-1)


def test_bigrams_sit_between_their_words_and_need_enough_documents():
    tok = Tokenizer(negation_scope=1, bigrams=True)
    assert tok("not a good film, a waste of time") == [
        "not",
        "not not_good",
        "not_good",
        "not_good film",
        "film",
        "film waste",
        "waste",
        "waste time",
        "time",
    ]
    assert tok("fine") == ["fine"] and tok("") == []
    assert Tokenizer(bigrams=True).config()["bigrams"] is True and "bigrams" not in Tokenizer().config()
    docs = [tok("a waste of time")] * 3 + [tok("waste time") + tok("waste time")] + [tok("good time")]
    v = Vocabulary.build(docs, min_freq=1, min_bigram_docs=4)
    assert "waste time" in v.words and "good time" not in v.words and "good" in v.words  # words are not affected
    assert "waste time" not in Vocabulary.build(docs, min_freq=1, min_bigram_docs=5).words  # 4 documents, 5 copies
    with pytest.raises(InputError, match="bigrams must be True or False"):
        Tokenizer(bigrams="yes")
