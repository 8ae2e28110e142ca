"""A small built-in sentiment lexicon: words the vocabulary never drops for being frequent on both sides.

The log-odds filter of :meth:`~attndyn.sentiment._text.Vocabulary.build` drops a word when
:math:`|\\log\\frac{(p_w+1)/(P+2)}{(n_w+1)/(N+2)}|` is small, i.e. when the word appears in about
as many positive as negative reviews. That is right for "film" or "plot", and wrong for "good":
in IMDb "good" is almost as frequent in negative reviews ("not good", "good actors wasted",
"the only good thing"), so the filter alone would drop the most common sentiment word and read
"The film was good." as an empty review. The words below, and their negation-marked forms
(``not_good``), are exempt from the log-odds filter (they still need ``min_freq``
occurrences); the model learns their place in R^d from the data, as for every other word.

The list is hand-written from the common English opinion words of the Hu & Liu (KDD 2004)
opinion lexicon that occur in movie reviews, restricted to words whose polarity does not depend
on context (so "funny", "like", "fine", "better" and "slow" are not in it).

>>> "good" in SENTIMENT_WORDS and "bad" in SENTIMENT_WORDS and "film" not in SENTIMENT_WORDS
True
>>> sorted(protected_words(["good", "film", "not_good", "not_film", "waste time"]))
['good', 'not_good']
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._text import Tokenizer

__all__ = [
    "POSITIVE_WORDS",
    "NEGATIVE_WORDS",
    "SENTIMENT_WORDS",
    "NEGATED_VERDICTS",
    "PROTECTED",
    "protected_words",
    "lexicon_examples",
    "lexicon_evidence",
]

POSITIVE_WORDS = frozenset(
    """good great excellent wonderful amazing brilliant superb fantastic awesome outstanding perfect beautiful
    lovely enjoyable delightful charming masterpiece best love loved enjoyed recommend recommended impressive
    memorable touching nice pleasant entertaining engaging gripping compelling stunning terrific marvelous
    splendid favorite favourite hilarious powerful beautifully wonderfully refreshing clever witty exceptional
    incredible magnificent flawless fascinating captivating heartwarming inspiring superior enjoy""".split()
)

NEGATIVE_WORDS = frozenset(
    """bad awful terrible horrible boring dull poor worst worse waste wasted stupid dumb lame mediocre
    disappointing disappointed disappointment annoying pointless ridiculous weak bland tedious unfunny
    predictable pathetic dreadful atrocious crap garbage mess hated hate painful forgettable unwatchable
    overrated nonsense badly poorly laughable embarrassing uninteresting unconvincing incoherent clumsy sloppy
    trash tiresome irritating worthless lousy horrid abysmal bored fails failed failure""".split()
)

SENTIMENT_WORDS = POSITIVE_WORDS | NEGATIVE_WORDS

#: Words that are neutral alone but a verdict once negated ("did not like", "not worth it").
NEGATED_VERDICTS = frozenset("like liked recommend worth work works care".split())

#: The lexicon words and their negation-marked forms, and the negated verdicts: what
#: ``Vocabulary.build(keep=...)`` is given.
PROTECTED = SENTIMENT_WORDS | frozenset("not_" + w for w in SENTIMENT_WORDS | NEGATED_VERDICTS)


def lexicon_examples(tokenizer: Tokenizer, copies: int, positive: int = 1) -> tuple[list[list[str]], list[int]]:
    """Short labelled examples that state the lexicon's polarity: each lexicon word alone with its
    label and, negated, with the other label ("good" 1, "not good" 0, "bad" 0, "not bad" 1, "not
    worth" 0), tokenized by ``tokenizer``, ``copies`` times each. Added to the training part only.
    ``positive``: the label of positive sentiment, 1 (as above) or 0 (then every label is the other one).

    In IMDb the document label of a phrase is not its meaning: "not bad" and "never boring"
    occur mostly in negative reviews ("the acting is not bad, but ..."), "not great" in positive
    ones; a model of word counts learns those associations. These examples are a prior from the
    lexicon, a fact about English, not about the data set.

    >>> from attndyn.sentiment._text import Tokenizer
    >>> toks, labels = lexicon_examples(Tokenizer(negation_scope=1, merge_negations=True), 1)
    >>> dict(zip(map(tuple, toks), labels))[("not_bad",)], dict(zip(map(tuple, toks), labels))[("good",)]
    (1, 1)
    """
    toks: list[list[str]] = []
    labels: list[int] = []
    for words, y in ((POSITIVE_WORDS, 1), (NEGATIVE_WORDS, 0)):
        for w in sorted(words):
            toks.append(tokenizer(w))
            labels.append(y)
            toks.append(tokenizer("not " + w))
            labels.append(1 - y)
    for w in sorted(NEGATED_VERDICTS):
        toks.append(tokenizer("not " + w))
        labels.append(0)
    if positive == 0:
        labels = [1 - y for y in labels]
    return toks * copies, labels * copies


def lexicon_evidence(tokens: Sequence[Sequence[str]], positive: Sequence[bool]) -> tuple[int, int]:
    """``(agree, against)``: how many of the texts' lexicon words (:data:`SENTIMENT_WORDS`, counted once per text)
    belong to words whose empirical log-odds in the labelled texts, :math:`\\log\\frac{(p_w+1)/(P+2)}{(n_w+1)/(N+2)}`
    (``positive[i]``: text i is of the positive class), has the lexicon's sign, and how many the opposite sign
    (a word with log-odds 0 counts in neither). Labels that hold positive sentiment as the other class show as
    ``against`` far above ``agree``.

    >>> lexicon_evidence([["great", "fun"], ["awful"], ["great"], ["film"]], [True, False, True, False])
    (3, 0)
    >>> lexicon_evidence([["great", "fun"], ["awful"], ["great"], ["film"]], [False, True, False, True])
    (0, 3)
    """
    counts: dict[str, list[int]] = {}  # word -> [texts of the positive class, texts of the other]
    for toks, pos in zip(tokens, positive):
        for w in SENTIMENT_WORDS.intersection(toks):
            counts.setdefault(w, [0, 0])[0 if pos else 1] += 1
    n_pos = sum(bool(p) for p in positive)
    n_neg = len(positive) - n_pos
    agree = against = 0
    for w, (p, n) in counts.items():
        log_odds = math.log((p + 1) / (n_pos + 2)) - math.log((n + 1) / (n_neg + 2))
        signed = log_odds if w in POSITIVE_WORDS else -log_odds
        if signed > 0:
            agree += p + n
        elif signed < 0:
            against += p + n
    return agree, against


def protected_words(tokens: Iterable[str]) -> set[str]:
    """The tokens that are lexicon words or their negation-marked form (``not_`` + a lexicon word)."""
    return {w for w in tokens if w in PROTECTED}
