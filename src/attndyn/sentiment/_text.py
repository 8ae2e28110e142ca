"""Cleaning, tokenizing and encoding reviews, with nothing downloaded at run time.

Pipeline (the paper's, minus NLTK): lower-case; drop links and HTML tags; expand ``n't`` to
`` not``; cut runs of one repeated character to two; keep the runs of the letters a-z as words: every
other character (digits, punctuation, and any non-ASCII letter, accented ones included) ends a word, so
"génial" gives the two words ``g`` and ``nial`` and "café" gives ``caf`` (accents are not stripped);
drop stop words (a built-in English list that *keeps negations* by default);
map words to indices of a vocabulary built on the training split only; cut or pad to
``max_len`` with a mask (True = real token). No lemmatizer: it would need downloaded data.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._validation import InputError
from ._config import JsonConfig, check_integer, check_number

__all__ = ["clean", "tokenize", "Tokenizer", "TextConfig", "Vocabulary", "NEGATIONS", "ENGLISH_STOP_WORDS", "encode"]

PAD, UNK = "<pad>", "<unk>"

# Negations are sentiment: "not good" must keep its "not". They are never stop words by default.
NEGATIONS = frozenset(
    {"not", "no", "nor", "never", "none", "nothing", "nobody", "nowhere", "neither", "cannot", "without"}
)

# A classic English stop list (the NLTK list's words, written out so nothing is downloaded; it
# holds "no", "nor", "not", which Tokenizer(keep_negations=True), the default, keeps).
ENGLISH_STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves what which who whom this that these those am is are
    was were be been being have has had having do does did doing a an the and but if or because as until while of
    at by for with about against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each few more most other
    some such only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn
    didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn no nor not br""".split()
)

_URL = re.compile(r"https?://\S+|www\.\S+")
_TAG = re.compile(r"<[^>]*>")
_NT = re.compile(r"n't\b|n’t\b")
_REPEAT = re.compile(r"([a-z])\1{2,}")
_WORD = re.compile(r"[a-z]+")
_SPECIAL_NT = {"won't": "will not", "can't": "can not", "shan't": "shall not", "ain't": "is not"}


def clean(text: str) -> str:
    """Lower-case text with links and tags removed, as its runs of the letters a-z joined by single spaces.

    Every other character separates words: digits and punctuation, and also non-ASCII letters, so an
    accented word falls apart at its accent ("génial" → ``g nial``, "très" → ``tr s``); accents are not
    stripped (that would change the words of the trained models).

    >>> clean("I didn't LIKE it!!<br />Sooooo bad: http://x.y 10/10")
    'i did not like it soo bad'
    >>> clean("Un film génial, très café")
    'un film g nial tr s caf'
    """
    t = text.lower()
    t = _URL.sub(" ", t)
    t = _TAG.sub(" ", t)
    for k, v in _SPECIAL_NT.items():
        t = t.replace(k, v)
    t = _NT.sub(" not", t)
    t = _REPEAT.sub(r"\1\1", t)
    return " ".join(_WORD.findall(t))


def tokenize(
    text: str,
    stop_words: Iterable[str] = (),
    negation_scope: int = 0,
    bigrams: bool = False,
    merge_negations: bool = False,
) -> list[str]:
    """Words of :func:`clean` (text) not in ``stop_words``.

    ``negation_scope = k > 0`` marks the k words after a negation (counted after stop-word
    removal, the negation itself kept): ``good`` becomes ``not_good``, a word of its own
    (the negation marking of Pang, Lee & Vaithyanathan 2002, with a fixed window since
    punctuation is gone).

    >>> tokenize("This film is not good at all", ENGLISH_STOP_WORDS - NEGATIONS)
    ['film', 'not', 'good']
    >>> tokenize("This film is not good at all", ENGLISH_STOP_WORDS)
    ['film', 'good']
    >>> tokenize("It is not a good film", ENGLISH_STOP_WORDS - NEGATIONS, negation_scope=1)
    ['not', 'not_good', 'film']

    ``merge_negations`` drops a negation once it has marked a word, so the marked word carries
    it alone (a negation that marks nothing, at the end, stays):

    >>> tokenize("It is not a good film, never dull. Not", ENGLISH_STOP_WORDS - NEGATIONS, negation_scope=1,
    ...          merge_negations=True)
    ['not_good', 'film', 'not_dull', 'not']

    ``bigrams`` puts each pair of neighbouring words (after the steps above) between them, as a
    token of its own: the mean over tokens is a bag of words *and* phrases.

    >>> tokenize("a waste of time", ENGLISH_STOP_WORDS, bigrams=True)
    ['waste', 'waste time', 'time']
    """
    stop = stop_words if isinstance(stop_words, (set, frozenset)) else set(stop_words)
    words = [w for w in clean(text).split() if w not in stop]
    if negation_scope > 0:
        words = _mark_negations(words, negation_scope, merge_negations)
    if not bigrams:
        return words
    out = []
    for a, b in zip(words, words[1:]):
        out += [a, a + " " + b]
    return out + words[-1:]


def _mark_negations(words: list[str], negation_scope: int, merge: bool = False) -> list[str]:
    out, left, pending = [], 0, None  # pending: a merged negation that has not marked a word yet
    for w in words:
        if w in NEGATIONS:
            if pending is not None:
                out.append(pending)
            if merge:
                pending = w
            else:
                out.append(w)
            left = negation_scope
        elif left > 0:
            out.append("not_" + w)
            left -= 1
            pending = None
        else:
            out.append(w)
    if pending is not None:
        out.append(pending)
    return out


@dataclass(frozen=True)
class Tokenizer:
    """Configurable tokenizer. ``stop_words``: ``"english"`` (built-in list), ``"none"``, or a
    list of words; ``keep_negations`` removes :data:`NEGATIONS` from the stop list;
    ``negation_scope`` marks that many words after each negation; ``bigrams`` adds the pairs of
    neighbouring words as tokens; ``merge_negations`` drops a negation that marked a word
    (``not good`` → ``not_good``; see :func:`tokenize`)."""

    stop_words: str | tuple[str, ...] = "english"
    keep_negations: bool = True
    negation_scope: int = 0
    bigrams: bool = False
    merge_negations: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.stop_words, str) and self.stop_words not in ("english", "none"):
            raise InputError(f"stop_words must be 'english', 'none' or a list of words, got {self.stop_words!r}")
        if not isinstance(self.stop_words, str):
            object.__setattr__(self, "stop_words", tuple(str(w) for w in self.stop_words))
        if (
            isinstance(self.negation_scope, bool)
            or not isinstance(self.negation_scope, numbers.Integral)
            or self.negation_scope < 0
        ):
            raise InputError(f"negation_scope must be an integer >= 0, got {self.negation_scope!r}")
        object.__setattr__(self, "negation_scope", int(self.negation_scope))
        if not isinstance(self.bigrams, (bool, np.bool_)):
            raise InputError(f"bigrams must be True or False, got {self.bigrams!r}")
        object.__setattr__(self, "bigrams", bool(self.bigrams))
        if not isinstance(self.merge_negations, (bool, np.bool_)):
            raise InputError(f"merge_negations must be True or False, got {self.merge_negations!r}")
        object.__setattr__(self, "merge_negations", bool(self.merge_negations))

    @property
    def stop_set(self) -> frozenset[str]:
        base = (
            ENGLISH_STOP_WORDS
            if self.stop_words == "english"
            else frozenset()
            if self.stop_words == "none"
            else frozenset(self.stop_words)
        )
        return base - NEGATIONS if self.keep_negations else base

    def __call__(self, text: str) -> list[str]:
        return tokenize(text, self.stop_set, self.negation_scope, self.bigrams, self.merge_negations)

    def config(self) -> dict:
        cfg: dict[str, Any] = {
            "stop_words": self.stop_words if isinstance(self.stop_words, str) else list(self.stop_words),
            "keep_negations": self.keep_negations,
        }
        if self.negation_scope:  # absent when off, so caches of earlier runs stay valid
            cfg["negation_scope"] = self.negation_scope
        if self.bigrams:
            cfg["bigrams"] = True
        if self.merge_negations and self.negation_scope:
            cfg["merge_negations"] = True
        return cfg


@dataclass(frozen=True)
class TextConfig(JsonConfig):
    """Every setting of the text side: the tokenizer, the vocabulary and the training examples.

    Args:
        max_len: tokens kept per review, its first known words (the paper: 128).
        min_freq: training-split frequency a vocabulary word needs.
        max_vocab: most vocabulary words (None: no cap).
        min_log_odds: drop words whose smoothed training log-odds between the classes is below it
            (:meth:`Vocabulary.build`; 0 keeps every word).
        stop_words: ``"english"``, ``"none"`` or a list of words.
        keep_negations: negations are never stop words.
        negation_scope: mark that many words after a negation (``not_good``); 0: off.
        merge_negations: the negation that marked a word is dropped (``not good`` -> ``not_good``).
        bigrams: k > 0: pairs of neighbouring words seen in at least k training texts are tokens
            too; 0: none.
        lexicon: the built-in sentiment lexicon's words and their ``not_`` forms are never dropped
            by the log-odds filter (:mod:`attndyn.sentiment._lexicon`).
        lexicon_examples: k > 0: train also on each lexicon word alone and negated, k times each.

    The defaults are the reported d = 2 settings; :mod:`attndyn.sentiment._recipes` holds those of
    other d.

    >>> TextConfig(bigrams=5).tokenizer().bigrams
    True
    >>> TextConfig(bigrams=True)
    Traceback (most recent call last):
    ...
    attndyn._validation.InputError: bigrams must be an integer >= 0 (0: no bigram tokens; k: bigrams seen in >= k training texts), got True
    """

    _kind = "text config"

    max_len: int = 256
    min_freq: int = 5
    max_vocab: int | None = None
    min_log_odds: float = 0.3
    stop_words: Any = "english"
    keep_negations: bool = True
    negation_scope: int = 1
    merge_negations: bool = True
    bigrams: int = 0
    lexicon: bool = True
    lexicon_examples: int = 0

    def __post_init__(self) -> None:
        for name in ("max_len", "min_freq"):
            check_integer(getattr(self, name), name, low=1)
        check_integer(self.max_vocab, "max_vocab", low=1, allow_none=True)
        check_integer(self.lexicon_examples, "lexicon_examples", low=0)
        check_number(self.min_log_odds, "min_log_odds", low=0)
        if (
            isinstance(self.bigrams, (bool, np.bool_))
            or not isinstance(self.bigrams, (int, np.integer))
            or self.bigrams < 0
        ):
            raise InputError(
                "bigrams must be an integer >= 0 (0: no bigram tokens; k: bigrams seen in >= k training texts), "
                f"got {self.bigrams!r}"
            )
        for name in ("merge_negations", "lexicon", "keep_negations"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InputError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.stop_words, str):
            try:
                words = list(self.stop_words)
            except TypeError:
                words = [None]
            if not all(isinstance(w, str) for w in words):
                raise InputError(f"stop_words must be 'english', 'none' or a list of words, got {self.stop_words!r}")
        self.tokenizer()  # the tokenizer's own checks

    def tokenizer(self) -> Tokenizer:
        """The :class:`Tokenizer` these settings describe."""
        sw = self.stop_words if isinstance(self.stop_words, str) else tuple(self.stop_words)
        return Tokenizer(
            stop_words=sw,
            keep_negations=bool(self.keep_negations),
            negation_scope=self.negation_scope,
            bigrams=self.bigrams > 0,
            merge_negations=bool(self.merge_negations),
        )


@dataclass
class Vocabulary:
    """Word ↔ index. Index 0 is padding, 1 the unknown word; the rest sorted by training frequency
    (ties alphabetically, so the same corpus always gives the same vocabulary)."""

    words: list[str] = field(default_factory=lambda: [PAD, UNK])

    def __post_init__(self) -> None:
        if self.words[:2] != [PAD, UNK]:
            raise InputError(f"a vocabulary must start with {PAD!r}, {UNK!r}; got {self.words[:2]}")
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(
        cls,
        token_lists: Iterable[Sequence[str]],
        *,
        min_freq: int = 2,
        max_size: int | None = None,
        labels: Sequence[int] | np.ndarray | None = None,
        min_log_odds: float = 0.0,
        min_bigram_docs: int = 1,
        keep: Iterable[str] = (),
    ) -> Vocabulary:
        r"""Vocabulary of the words seen at least ``min_freq`` times (at most ``max_size`` words).

        With ``labels`` (0/1 per token list) and ``min_log_odds > 0``, a word is also dropped when
        its smoothed document log-odds ratio between the classes,
        :math:`|\log\frac{(p_w+1)/(P+2)}{(n_w+1)/(N+2)}|`, is below ``min_log_odds``: words that say
        nothing about the label then never enter the dynamics (negations and the words of ``keep``,
        e.g. the sentiment lexicon of :mod:`attndyn.sentiment._lexicon`, are always kept).
        A bigram token (two words and a space, see :func:`tokenize`) must also occur in at least
        ``min_bigram_docs`` of the token lists.

        >>> Vocabulary.build([["good", "film"], ["bad", "film"]] * 3, min_freq=1, labels=[1, 0] * 3,
        ...                  min_log_odds=0.5).words[2:]
        ['bad', 'good']
        >>> Vocabulary.build([["good", "film"], ["bad", "film"], ["good", "bad"]], min_freq=1, labels=[1, 0, 1],
        ...                  min_log_odds=0.5, keep=["bad"]).words[2:]
        ['bad', 'good']
        """
        token_lists = [list(t) for t in token_lists]
        counts = Counter(w for toks in token_lists for w in toks)
        if min_bigram_docs > 1:
            docs = Counter(w for toks in token_lists for w in set(toks) if " " in w)
            for w in [w for w in counts if " " in w and docs[w] < min_bigram_docs]:
                del counts[w]
        if min_log_odds > 0:
            if labels is None or len(labels) != len(token_lists):
                raise InputError("min_log_odds needs one 0/1 label per token list")
            pos: Counter[str] = Counter()
            neg: Counter[str] = Counter()
            for toks, y in zip(token_lists, labels):
                (pos if int(y) == 1 else neg).update(set(toks))
            kept = set(keep)
            P, N = sum(int(y) == 1 for y in labels), sum(int(y) != 1 for y in labels)
            for w in list(counts):
                lo = math.log((pos[w] + 1) / (P + 2)) - math.log((neg[w] + 1) / (N + 2))
                if abs(lo) < min_log_odds and w not in NEGATIONS and w not in kept:
                    del counts[w]
        items = sorted(((w, c) for w, c in counts.items() if c >= min_freq), key=lambda wc: (-wc[1], wc[0]))
        if max_size is not None:
            items = items[:max_size]
        return cls([PAD, UNK] + [w for w, _ in items])

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, tokens: Sequence[str]) -> list[int]:
        """Indices of the known words (unknown words are dropped; an empty result becomes ``[UNK]``)."""
        out = [self.index[w] for w in tokens if w in self.index]
        return out or [1]


def encode(token_lists: Sequence[Sequence[str]], vocab: Vocabulary, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)``: (N, L) int64 indices cut to the first ``max_len`` known words and padded
    with 0, and the (N, L) bool mask of real tokens, ``L = min(max_len, longest)``."""
    if max_len < 1:
        raise InputError(f"max_len must be >= 1, got {max_len}")
    rows = [vocab.ids(t)[:max_len] for t in token_lists]
    L = max((len(r) for r in rows), default=1)
    ids = np.zeros((len(rows), L), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
    t = torch.from_numpy(ids)
    return t, t != 0
