"""``HardmaxSentimentClassifier``: the hardmax-transformer sentiment model as a scikit-learn estimator.

>>> from attndyn.sentiment import HardmaxSentimentClassifier
>>> texts = ["great fun", "awful boring", "great acting", "boring awful mess"] * 10
>>> clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, random_state=0).fit(texts, [1, 0, 1, 0] * 10)
>>> clf.predict(["great", "awful"]).tolist()
[1, 0]
"""

from __future__ import annotations

import hashlib
import json
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
import torch
from safetensors.torch import save as save_safetensors
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from .._devices import resolve_device
from .._errors import param
from .._io import write_bytes, write_json, write_text
from .._validation import InputError
from ._inference import FittedModel, check_texts, load_model
from ._layout import CONFIG, VOCAB, WEIGHTS
from ._lexicon import PROTECTED, lexicon_evidence, lexicon_examples
from ._model import SentimentConfig, SentimentTransformer
from ._modelfile import CLASS_KINDS, FORMAT, disagreeing, seal
from ._pinning import kernel_paths
from ._recipes import SETTINGS, check_params, configs, recipe_for, resolve, split_settings
from ._runfolder import RunFolder
from ._text import TextConfig, Tokenizer, Vocabulary, encode
from ._train import EncodedSplit, TrainConfig, fit_decision_scale, predict_logits, train

__all__ = ["HardmaxSentimentClassifier", "NotFitted"]


class NotFitted(InputError, NotFittedError):
    """Using an unfitted classifier: an InputError (one line in the CLI) and scikit-learn's NotFittedError."""


def _vocabulary(toks: list[list[str]], labels: np.ndarray, text: TextConfig) -> Vocabulary:
    """The vocabulary of the training texts' tokens under ``text``'s filters; one InputError when it is empty."""
    vocab = Vocabulary.build(
        toks,
        min_freq=text.min_freq,
        max_size=text.max_vocab,
        labels=labels,
        min_log_odds=float(text.min_log_odds),
        min_bigram_docs=max(1, int(text.bigrams)),
        keep=PROTECTED if text.lexicon else (),
    )
    if not any(toks):
        raise InputError(
            "the training texts have no words left once tokenized (every word is a stop word, or no text has a "
            f"letter); give fewer {param('setting.stop_words', 'stop_words')}, or texts with words"
        )
    if len(vocab) <= 2:
        raise InputError(
            f"no word is seen {text.min_freq} times with |log-odds| >= {text.min_log_odds} in the training texts; "
            f"lower {param('setting.min_freq', 'min_freq')} or {param('setting.min_log_odds', 'min_log_odds')}, "
            "or give more texts"
        )
    return vocab


class HardmaxSentimentClassifier(ClassifierMixin, BaseEstimator):
    """Binary sentiment classifier: embedding in R^d, ``layers`` shared pure-attention layers
    (softmax at temperature ``tau`` while training, the core engine's hardmax at inference),
    mean over real tokens, linear decoder, sigmoid.

    Every setting is a keyword parameter named and documented as in the dataclass that holds it
    and its default: the model's in :class:`~attndyn.sentiment._model.SentimentConfig` (``layers``,
    ``tau``, ``alpha_init``, ``alpha_min``, ``embed_init_std``, ``registers``, ``register_shift``,
    ``register_length``), the text's in
    :class:`~attndyn.sentiment._text.TextConfig` (``max_len``, ``min_freq``, ``max_vocab``,
    ``min_log_odds``, ``stop_words``, ``keep_negations``, ``negation_scope``, ``merge_negations``,
    ``bigrams``, ``lexicon``, ``lexicon_examples``), the loop's in
    :class:`~attndyn.sentiment._train.TrainConfig` (``epochs``, ``batch_size``, ``lr``,
    ``embed_lr``, ``lr_decay``, ``weight_decay``, ``word_dropout``, ``val_fraction``,
    ``patience``, ``tau_start``, ``anneal_epochs``, ``aux_weight``, ``prior_weight``, ``prior_margin``,
    ``train_eval_size``). Each
    defaults to None: **the recipe for d** (:mod:`attndyn.sentiment._recipes`), so ``d=2`` and
    ``d=16`` give the reported models of docs/sentiment-results.md; an explicit value wins (for the
    settings whose own None means something, ``embed_init_std``, ``max_vocab``, ``tau_start``,
    None is the recipe's value). :meth:`resolved_params` shows them filled in; the fitted model
    keeps them in ``settings_`` and ``save`` records them in config.json.

    ``positive_label``: the label in ``y`` that means positive sentiment, which the lexicon's sign prior
    (``prior_weight``) and ``lexicon_examples`` give to the lexicon's positive words. None (default) infers it:
    the label spelled "positive" or "pos" (any case), else the other of "negative"/"neg", else ``classes_[1]``
    (1 of 0/1, 2 of 1/2, "pos" of "neg"/"pos"). Whatever it is, the scikit-learn conventions hold:
    ``classes_`` is the sorted labels, H > 0 predicts ``classes_[1]`` and the columns of
    :meth:`predict_proba` follow ``classes_``. While the prior or the lexicon examples are on, :meth:`fit`
    compares the lexicon with the training labels first (:func:`~attndyn.sentiment._lexicon.lexicon_evidence`):
    when at least 20 lexicon words occur and more than two thirds of them side with the other label, it raises
    an InputError instead of training against the data (pass ``positive_label``, or ``prior_weight=0``).

    ``inference``: "hardmax" (default) or
    "softmax". ``random_state`` seeds the validation split, the initial weights, the batches
    and the word dropout. ``run_dir``: where to checkpoint (and resume) training. ``device``:
    where training and prediction run, "cpu" (default), "cuda" or "auto" (CUDA when present);
    the initial weights and every random draw come from CPU generators, so a seed gives the same
    batches on every device, and the predictions agree (logits to rounding).

    Words are the runs of the letters a-z of the lower-cased text (:func:`~attndyn.sentiment._text.clean`):
    any other character ends a word, non-ASCII letters included, so "génial" is read as the two words
    ``g`` and ``nial`` and "café" as ``caf`` (accents are not stripped).

    Fitted attributes: ``classes_``, ``vocab_``, ``model_``, ``history_``, ``best_epoch_``, ``alpha_``,
    ``settings_`` (every setting as trained).

    With ``registers`` > 0 :meth:`fit` trains in two stages: the word vectors and decoder as the ``layers=0``
    control (``history_`` and ``best_epoch_`` are that stage's), then the model with ``layers`` layers and its
    registers placed on them (:meth:`SentimentTransformer.place_registers`, seeded by ``random_state``).

    ``model_class``: the module :meth:`fit` builds from the :class:`SentimentConfig` (a subclass of
    :class:`SentimentTransformer`: a study of another architecture subclasses the estimator and sets it;
    :meth:`save` and :meth:`load` know only the base class).
    """

    model_class: ClassVar[type[SentimentTransformer]] = SentimentTransformer

    def __init__(
        self,
        d: int = 2,
        layers: int | None = None,
        *,
        tau: float | None = None,
        alpha_init: float | None = None,
        alpha_min: float | None = None,
        embed_init_std: float | None = None,
        registers: int | None = None,
        register_shift: float | None = None,
        register_length: float | None = None,
        max_len: int | None = None,
        min_freq: int | None = None,
        max_vocab: int | None = None,
        min_log_odds: float | None = None,
        stop_words: Any = None,
        keep_negations: bool | None = None,
        negation_scope: int | None = None,
        merge_negations: bool | None = None,
        bigrams: int | None = None,
        lexicon: bool | None = None,
        lexicon_examples: int | None = None,
        epochs: int | None = None,
        batch_size: int | None = None,
        lr: float | None = None,
        embed_lr: float | None = None,
        lr_decay: float | None = None,
        weight_decay: float | None = None,
        word_dropout: float | None = None,
        val_fraction: float | None = None,
        patience: int | None = None,
        tau_start: float | None = None,
        anneal_epochs: int | None = None,
        aux_weight: float | None = None,
        prior_weight: float | None = None,
        prior_margin: float | None = None,
        train_eval_size: int | None = None,
        positive_label: Any = None,
        inference: str = "hardmax",
        random_state: int = 0,
        run_dir: str | None = None,
        verbose: bool = False,
        device: str = "cpu",
    ) -> None:
        self.d = d
        self.layers = layers
        self.tau = tau
        self.alpha_init = alpha_init
        self.alpha_min = alpha_min
        self.embed_init_std = embed_init_std
        self.registers = registers
        self.register_shift = register_shift
        self.register_length = register_length
        self.max_len = max_len
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.min_log_odds = min_log_odds
        self.stop_words = stop_words
        self.keep_negations = keep_negations
        self.negation_scope = negation_scope
        self.merge_negations = merge_negations
        self.bigrams = bigrams
        self.lexicon = lexicon
        self.lexicon_examples = lexicon_examples
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.embed_lr = embed_lr
        self.lr_decay = lr_decay
        self.weight_decay = weight_decay
        self.word_dropout = word_dropout
        self.val_fraction = val_fraction
        self.patience = patience
        self.tau_start = tau_start
        self.anneal_epochs = anneal_epochs
        self.aux_weight = aux_weight
        self.prior_weight = prior_weight
        self.prior_margin = prior_margin
        self.train_eval_size = train_eval_size
        self.positive_label = positive_label
        self.inference = inference
        self.random_state = random_state
        self.run_dir = run_dir
        self.verbose = verbose
        self.device = device

    # ---- settings: the recipe for d, filled in ------------------------------------------
    def resolved_params(self) -> dict[str, Any]:
        """:meth:`get_params` with every setting left at None replaced by the recipe for ``d``
        (:func:`attndyn.sentiment._recipes.resolve`). A fitted model answers with the settings it
        was trained with (``settings_``), whatever the recipe table says now.

        >>> HardmaxSentimentClassifier(d=16).resolved_params()["bigrams"]
        5
        >>> HardmaxSentimentClassifier(d=16, bigrams=0).resolved_params()["bigrams"]
        0
        """
        if hasattr(self, "settings_"):
            return {**self.get_params(), **self.settings_}
        return resolve(self.get_params())

    def check_params(self) -> dict[str, Any]:
        """Check every setting's type and range before any tokenizing or training (strings such as
        ``alpha_min="0.5"``, NaN and infinities are refused with the setting's name); return the
        resolved settings (:meth:`resolved_params`); :func:`attndyn.sentiment._recipes.check_params`."""
        settings = check_params(self.get_params())
        if int(self.random_state) > MAX_SEED:  # torch's generators take at most 64 signed bits
            raise InputError(
                f"{param('setting.random_state', 'random_state')} must be an integer from 0 to 2**63 - 1, "
                f"got {self.random_state}"
            )
        return settings

    def _configs(self, settings: dict[str, Any], vocab_size: int) -> tuple[SentimentConfig, TextConfig, TrainConfig]:
        return configs(settings, vocab_size, seed=int(self.random_state))

    @property
    def text_config(self) -> TextConfig:
        """The text settings in use (:class:`~attndyn.sentiment._text.TextConfig`)."""
        return TextConfig(**split_settings(self.resolved_params())[TextConfig])

    @property
    def tokenizer(self) -> Tokenizer:
        return self.text_config.tokenizer()

    def _labels(self, y: Any, n: int) -> np.ndarray:
        arr = _label_array(y, n)
        classes = np.unique(arr)
        if len(classes) != 2:
            raise InputError(f"y must hold exactly two classes (e.g. 0 and 1), got {classes.tolist()}")
        self.classes_ = classes
        return (arr == classes[1]).astype(np.float32)

    def encode(self, X: Any = None, y: Any = None, *, tokens: list[list[str]] | None = None) -> EncodedSplit:
        """Texts ``X`` (or their ``tokens``, made by :attr:`tokenizer`) as model input: word
        indices cut to ``max_len``, the mask, and ``y`` (labels in ``classes_``; None: zeros)."""
        return self._fitted().encode(X, y, tokens=tokens)

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFitted(
                "this HardmaxSentimentClassifier is not fitted yet; call fit(texts, labels) or load(path) first"
            )

    def _fitted(self) -> FittedModel:
        """The fitted model that predicts (:class:`~attndyn.sentiment._inference.FittedModel`)."""
        self._check_fitted()
        return FittedModel(self.settings_, self.vocab_, self.classes_, self.model_, self.inference)

    # ---- scikit-learn API ---------------------------------------------------------------
    def fit(self, X: Any, y: Any, *, tokens: list[list[str]] | None = None) -> HardmaxSentimentClassifier:
        """Train on texts ``X`` and labels ``y`` (two classes); returns ``self``.

        A ``val_fraction`` part of ``X`` (seeded by ``random_state``) is held out for early
        stopping; the vocabulary comes from the rest only. ``tokens`` may pass the already
        tokenized texts (the same tokenizer) to skip tokenizing again.

        A fit that fails (a refused input, an exception or an interrupt while training) leaves the
        estimator as it was: the fitted attributes of an earlier fit (``classes_``, ``vocab_``,
        ``model_``, ...) are put back, and an estimator that was not fitted stays unfitted.
        """
        before = _fitted_state(self)
        try:
            return self._fit(X, y, tokens=tokens)
        except BaseException:
            _restore_fitted_state(self, before)
            raise

    def _fit(self, X: Any, y: Any, *, tokens: list[list[str]] | None = None) -> HardmaxSentimentClassifier:
        """:meth:`fit`'s work; it sets the fitted attributes as it goes (``fit`` puts them back on failure)."""
        settings = self.check_params()
        texts = check_texts(X)
        labels = self._labels(y, len(texts))
        _, text, tc = self._configs(settings, vocab_size=1)
        tokenizer = text.tokenizer()
        toks = tokens if tokens is not None else [tokenizer(t) for t in texts]
        if len(toks) != len(texts):
            raise InputError(f"tokens has {len(toks)} entries for {len(texts)} texts")
        pos = self._positive_index(toks, labels, lexicon_settings(text, tc))
        rng = np.random.default_rng(int(self.random_state))
        perm = rng.permutation(len(texts))
        n_val = max(1, int(round(len(texts) * tc.val_fraction)))
        if n_val >= len(texts):
            raise InputError(
                f"{len(texts)} texts leave nothing to train on after the validation split; give more texts"
            )
        val_idx, tr_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        self.vocab_ = _vocabulary([toks[i] for i in tr_idx], labels[tr_idx], text)

        def enc(idx: np.ndarray, extra: tuple[list[list[str]], list[int]] = ([], [])) -> EncodedSplit:
            known = [t for t in extra[0] if any(w in self.vocab_.index for w in t)]
            ys = [y for t, y in zip(*extra) if any(w in self.vocab_.index for w in t)]
            ids, mask = encode([toks[i] for i in idx] + known, self.vocab_, text.max_len)
            return EncodedSplit(
                ids, mask, torch.as_tensor(np.concatenate([labels[idx], np.asarray(ys, dtype=labels.dtype)]))
            )

        mc, _, _ = self._configs(settings, vocab_size=len(self.vocab_))
        self.settings_ = {k: v for k, v in settings.items() if k in SETTINGS or k == "d"}
        model = self._initial_model(mc)
        kernels = kernel_paths()  # the CPU code paths in force: the same weights on every machine when pinned
        self.kernels_ = kernels.to_json()
        log = (lambda s: print(s, flush=True)) if self.verbose else None
        extra = lexicon_examples(tokenizer, text.lexicon_examples, pos) if text.lexicon_examples else ([], [])
        prior = self._sign_prior(tokenizer, text, pos) if prior_on(text, tc) else None
        if log is not None:
            log(kernels.line())
        run = None if self.run_dir is None else Path(self.run_dir)
        # run_dir is written under the run folder's lock (reentrant: train_run already holds it)
        with nullcontext() if run is None else RunFolder(run).lock():
            if run is not None:
                write_json(run / CONFIG, self._config_record())
                write_json(run / VOCAB, {"words": self.vocab_.words})
            result = train(
                model,
                enc(tr_idx, extra),
                enc(val_idx),
                tc,
                run_dir=run,
                progress=bool(self.verbose),
                log=log,
                prior=prior,
            )
        trained = cast(SentimentTransformer, result.model)  # the model built above
        trained = self._second_stage(trained, mc, enc(val_idx), log)
        self._keep_model(trained, result.history, result.best_epoch)
        self.stop_reason_ = result.stop_reason
        self.fit_seconds_ = result.seconds
        return self

    def _positive_index(self, toks: list[list[str]], labels: np.ndarray, uses: tuple[str, ...]) -> int:
        """The index in ``classes_`` of positive sentiment (:func:`positive_index`); when the training uses the
        lexicon's polarity (``uses``: :func:`lexicon_settings`), first an InputError if the training texts' lexicon
        words (:func:`~attndyn.sentiment._lexicon.lexicon_evidence`; at least :data:`MIN_EVIDENCE`) side, more than
        two to one, with the other class."""
        pos = positive_index(self.classes_, self.positive_label)
        if not uses:
            return pos
        agree, against = lexicon_evidence(toks, (labels == pos).tolist())
        if agree + against >= MIN_EVIDENCE and against > 2 * agree:
            said, other = self.classes_[pos].item(), self.classes_[1 - pos].item()
            raise InputError(
                f"the labels seem to hold positive sentiment as {other!r}, not {said!r}: {against} of the "
                f"{agree + against} sentiment-lexicon words in the training texts ('great', 'awful', ...) are "
                f"more frequent under the other label; {param('positive_label', f'pass positive_label={other!r}')}, "
                f"or {' and '.join(param('setting.' + k, k) + '=0' for k in uses)} to train without the lexicon's "
                "polarity"
            )
        return pos

    def _sign_prior(self, tokenizer: Tokenizer, text: TextConfig, positive: int = 1) -> EncodedSplit | None:
        """The texts of the sign prior (:func:`attndyn.sentiment._train.train`'s ``prior``): each lexicon word alone
        and negated with its polarity (:func:`~attndyn.sentiment._lexicon.lexicon_examples`; ``positive``: the label
        of positive sentiment, 1 or 0), those whose tokens are all in the vocabulary; None without the lexicon or
        when none is known."""
        if not text.lexicon:
            return None
        toks, labels = lexicon_examples(tokenizer, 1, positive)
        known = [(t, y) for t, y in zip(toks, labels) if t and all(w in self.vocab_.index for w in t)]
        if not known:
            return None
        ids, mask = encode([t for t, _ in known], self.vocab_, text.max_len)
        return EncodedSplit(ids, mask, torch.tensor([float(y) for _, y in known]))

    def _initial_model(self, mc: SentimentConfig) -> SentimentTransformer:
        """The model :meth:`fit` trains, initialised on the CPU (the same weights on every device), then moved to
        ``device``; with registers, the first stage: the word vectors and decoder as the layers=0 control."""
        first = replace(mc, layers=0, registers=0) if mc.registers else mc
        model = self.model_class(first, generator=torch.Generator().manual_seed(int(self.random_state)))
        return model.to(resolve_device(self.device))

    def _second_stage(
        self, first: SentimentTransformer, mc: SentimentConfig, val: EncodedSplit, log: Any
    ) -> SentimentTransformer:
        """With registers, the first stage's model with its registers placed (:meth:`_with_registers`) and its
        decoder scaled (:meth:`_calibrated`), said to ``log``; without, ``first`` (decision scale 1)."""
        self.decision_scale_ = 1.0
        if not mc.registers:
            return first
        model, H = self._with_registers(first, mc, val)
        self.decision_scale_ = self._calibrated(model, val, H)
        if log is not None:
            log(
                f"{mc.registers} registers placed on the {'e' if self.register_side_ > 0 else '-e'} side; "
                f"decision values scaled by {self.decision_scale_:.4f}"
            )
        return model

    def _with_registers(
        self, first: SentimentTransformer, mc: SentimentConfig, val: EncodedSplit
    ) -> tuple[SentimentTransformer, torch.Tensor]:
        """The second stage of a model with registers: the model of ``mc`` with the first stage's word vectors,
        decoder and alpha, and its registers placed (:meth:`SentimentTransformer.place_registers`, e seeded by
        ``random_state``) on the side of u, e or -e, whose hardmax accuracy on the validation reviews ``val`` is
        higher (e on a tie): in the plane the seed's draw of e is a coin toss between the two, and the words'
        layout beside u is not symmetric. Nothing is trained. Returns the model and its hardmax decision values on
        ``val`` (what :meth:`_calibrated` fits, so that the validation reviews are scored once per side)."""
        placed = []
        for side in (1, -1):
            model = self.model_class(mc).to(next(first.parameters()).device)
            missing, unexpected = model.load_state_dict(first.state_dict(), strict=False)
            assert set(missing) == {"registers"} and not unexpected, (missing, unexpected)  # configs differ in layers
            model.place_registers(seed=int(self.random_state), side=side)
            H = predict_logits(model, val, hardmax=True)
            placed.append((int(((H > 0).to(val.labels.dtype) == val.labels).sum()), side, model, H))
        best = max(placed, key=lambda p: (p[0], p[1]))  # more correct validation reviews; e on a tie
        self.register_side_ = best[1]
        return best[2], best[3]

    @staticmethod
    def _calibrated(model: SentimentTransformer, val: EncodedSplit, H: torch.Tensor) -> float:
        """Scale a register model's decoder by the temperature fitted on the validation reviews' hardmax
        decision values (:func:`~attndyn.sentiment._train.fit_decision_scale`): a word's level is about L/c times
        its value, so the register model's decisions are that much too confident; the scale, in (0, 1], removes
        it without changing a prediction. ``H`` is the model's hardmax decision values on ``val``. Returns the
        scale."""
        scale = fit_decision_scale(H, val.labels)
        model.scale_decision(scale)
        return scale

    def _keep_model(self, model: SentimentTransformer, history: list[dict], best_epoch: int) -> None:
        """Keep a trained ``model`` (``model_``), its training ``history_`` and ``best_epoch_``, and its learned
        step size ``alpha_``: what :meth:`fit` learns and :meth:`load` reads back."""
        self.model_ = model
        self.history_ = history
        self.best_epoch_ = best_epoch
        self.alpha_ = float(model.alpha.detach())

    def decision_function(self, X: Any) -> np.ndarray:
        """H = <v, mean of the last layer's real tokens> + b, per text (positive → classes_[1])."""
        return self._fitted().decision_function(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """(N, 2) probabilities of classes_[0] and classes_[1]."""
        return self._fitted().predict_proba(X)

    def known_words(self, X: Any) -> list[list[str]]:
        """The words of each text that the model reads: its tokens found in ``vocab_``, the first
        ``max_len`` of them. An empty list means that no word was known: the model then reads the
        single ``<unk>`` token and its probability says nothing about the text.

        >>> clf = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, min_log_odds=0, random_state=0)
        >>> clf = clf.fit(["great fun", "awful mess"] * 5, [1, 0] * 5)
        >>> clf.known_words(["Great fun!", "asdf qwerty"])
        [['great', 'fun'], []]
        """
        return self._fitted().known_words(X)

    def predict(self, X: Any) -> np.ndarray:
        self._check_fitted()
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The accuracy of :meth:`predict` on texts ``X`` against labels ``y`` (scikit-learn's ``score``); an
        InputError when ``y`` is not one label per text or its labels are not of the kind of ``classes_``."""
        self._check_fitted()
        texts = check_texts(X)
        arr = _label_array(y, len(texts))
        if (arr.dtype.kind == "U") != (self.classes_.dtype.kind == "U"):
            kind = "strings" if arr.dtype.kind == "U" else "numbers"
            raise InputError(
                f"y holds {kind}, but the model's labels are {self.classes_.tolist()}; pass labels of that kind"
            )
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(arr, self.predict(texts), sample_weight=sample_weight))

    # ---- persistence (safetensors + JSON, never pickle) ------------------------------------
    @staticmethod
    def _check_settings_unchanged(rec: dict) -> None:
        """Refuse to save a model whose settings were changed (``set_params``) since it was fitted, read off its
        config record ``rec``: the weights are those of the settings it was trained with, and :meth:`load` refuses
        a file whose two records disagree (the same comparison, :func:`~attndyn.sentiment._modelfile.disagreeing`)."""
        rec = json.loads(json.dumps(rec, default=str))  # as load() reads it back
        used, given = rec["estimator"], rec["params"]
        changed = disagreeing(used, given)
        if changed:
            shown = ", ".join(f"{k} = {used.get(k)!r} (now {given[k]!r})" for k in changed)
            raise InputError(
                f"this model was trained with {shown}: its weights are those settings'; fit it again with the new "
                "settings, or set them back with set_params before saving"
            )

    def _config_record(self) -> dict:
        """``estimator``: every setting as used (the recipe for d filled in); ``params``: the
        parameters as given (None: the recipe), so that a loaded model has the same ``get_params()``."""
        params = _jsonable(self.get_params())
        rec: dict[str, Any] = {
            "format": FORMAT,
            "estimator": _jsonable({**params, **self.resolved_params()}),
            "params": params,
            "recipe": recipe_for(self.d).name,
        }
        if hasattr(self, "vocab_"):
            rec["model"] = self._configs(self.resolved_params(), vocab_size=len(self.vocab_))[0].to_dict()
        if hasattr(self, "classes_"):
            rec["classes"] = self.classes_.tolist()
            if self.classes_.dtype.kind in CLASS_KINDS:  # load() gives back the same array, int8 and float32 too
                rec["classes_dtype"] = self.classes_.dtype.str
        if hasattr(self, "kernels_"):
            rec["kernels"] = self.kernels_  # the CPU code paths it was trained on (attndyn.sentiment.kernel_paths)
        return rec

    def save(self, path: str | Path) -> Path:
        """Write ``weights.safetensors``, ``vocab.json`` and, last, ``config.json`` (which records
        the sha256 of the other two) into the folder ``path``; each file is written atomically."""
        self._check_fitted()
        p = Path(path)
        for q in (p, *p.parents):
            if q.exists() and not q.is_dir():
                raise InputError(
                    f"save() writes three files into the folder path; {str(q)!r} is a file, not a folder: "
                    "give a folder path (it is created when missing)"
                )
        rec = self._config_record()
        self._check_settings_unchanged(rec)
        weights = save_safetensors({k: v.detach().cpu().contiguous() for k, v in self.model_.state_dict().items()})
        vocab = (json.dumps({"words": self.vocab_.words}, indent=2) + "\n").encode("utf-8")
        rec.update(
            {
                "history": self.history_,
                "best_epoch": self.best_epoch_,
                "alpha": self.alpha_,
                "files": {
                    WEIGHTS: hashlib.sha256(weights).hexdigest(),
                    VOCAB: hashlib.sha256(vocab).hexdigest(),
                },
            }
        )
        write_bytes(p / WEIGHTS, weights)
        write_bytes(p / VOCAB, vocab)
        write_text(p / CONFIG, json.dumps(seal(rec), indent=2) + "\n")
        return p

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu") -> HardmaxSentimentClassifier:
        """Load a folder written by :meth:`save` (or a training run folder). Reads JSON and
        safetensors only: no code from the file is ever executed.

        Every file is checked first (:mod:`attndyn.sentiment._modelfile`): the config against
        its schema, the vocabulary against the embedding, the weights against the sha256 that
        ``save`` recorded, their shapes and their finiteness; any problem is one InputError.
        A folder whose config.json records no sha256 of its content and files (saved before folders
        were sealed) is refused; :func:`~attndyn.sentiment.seal_model_folder` seals one you trust. So is a
        run folder that a training holds. The model is placed on ``device`` ("cpu", "cuda" or "auto"),
        whatever device it was trained on.
        """
        m = load_model(path, device=device)
        est = cls(**m.params)
        est.settings_ = dict(m.settings)
        est.vocab_ = m.vocab
        est.classes_ = m.classes
        est._keep_model(m.model, m.history, m.best_epoch)
        return est


#: The largest random_state: torch.Generator.manual_seed takes a signed 64-bit integer.
MAX_SEED = 2**63 - 1

#: The fewest lexicon-word occurrences in the training texts on which :meth:`HardmaxSentimentClassifier.fit`
#: judges whether the labels hold positive sentiment where ``positive_label`` says.
MIN_EVIDENCE = 20

_POSITIVE_NAMES = ("positive", "pos")
_NEGATIVE_NAMES = ("negative", "neg")


def prior_on(text: TextConfig, train: TrainConfig) -> bool:
    """Whether training uses the lexicon's sign prior: the lexicon is kept and ``prior_weight`` > 0."""
    return bool(text.lexicon) and train.prior_weight > 0


def lexicon_settings(text: TextConfig, train: TrainConfig) -> tuple[str, ...]:
    """The settings through which training gives the lexicon's words their polarity: ``prior_weight`` (the sign
    prior, :func:`prior_on`) and ``lexicon_examples``, those that are on."""
    return (("prior_weight",) if prior_on(text, train) else ()) + (
        ("lexicon_examples",) if text.lexicon_examples else ()
    )


def positive_index(classes: np.ndarray, positive_label: Any = None) -> int:
    """The index in the two sorted ``classes`` of positive sentiment: that of ``positive_label`` (an InputError
    when it is not one of them), or, for None, of the label spelled "positive" or "pos" (any case), else of the
    one not spelled "negative" or "neg", else 1.

    >>> positive_index(np.array(["Positive", "negative"])), positive_index(np.array([0, 1]))
    (0, 1)
    >>> positive_index(np.array(["bad", "good"])), positive_index(np.array([0, 1]), 0)
    (1, 0)
    """
    values = classes.tolist()
    if positive_label is not None:
        want = positive_label.item() if isinstance(positive_label, np.generic) else positive_label
        hits = [i for i, c in enumerate(values) if isinstance(c, str) == isinstance(want, str) and c == want]
        if not hits:
            raise InputError(f"positive_label={want!r} is not one of the labels {values}; pass one of them, or None")
        return hits[0]
    names = [c.lower() if isinstance(c, str) else None for c in values]
    for i, name in enumerate(names):
        if name in _POSITIVE_NAMES:
            return i
    for i, name in enumerate(names):
        if name in _NEGATIVE_NAMES:
            return 1 - i
    return 1


def _fitted_state(est: HardmaxSentimentClassifier) -> dict[str, Any]:
    """The estimator's fitted attributes (public names ending in ``_``), as :meth:`fit` found them."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _restore_fitted_state(est: HardmaxSentimentClassifier, state: dict[str, Any]) -> None:
    """Put back the fitted attributes ``state`` (:func:`_fitted_state`): drop those a failed fit added."""
    for k in list(_fitted_state(est)):
        if k not in state:
            delattr(est, k)
    for k, v in state.items():
        setattr(est, k, v)


def _label_array(y: Any, n: int) -> np.ndarray:
    """``y`` as a 1-D array of ``n`` labels checked by :func:`_checked_labels`; an InputError naming the lengths,
    or the types of a list that mixes strings with numbers (which numpy would silently turn into strings)."""
    if isinstance(y, (list, tuple)):
        values = [v.item() if isinstance(v, np.generic) else v for v in y]
        strings = {isinstance(v, str) for v in values if not isinstance(v, (list, tuple, np.ndarray))}
        if len(strings) > 1:
            types = sorted({type(v).__name__ for v in values})
            raise InputError(
                f"y mixes labels of types {types}; pass labels of one kind: integers (e.g. 0 and 1) or strings "
                "(e.g. 'neg' and 'pos')"
            )
    try:
        arr = np.asarray(y)
    except ValueError:  # ragged nested lists
        raise InputError(f"y must be one label per text ({n}): integers, strings or finite numbers") from None
    if arr.ndim != 1 or len(arr) != n:
        got = f"{len(arr)} labels" if arr.ndim == 1 else f"shape {arr.shape}"
        raise InputError(f"y must be one label per text ({n} texts), got {got}")
    return _checked_labels(arr)


def _checked_labels(arr: np.ndarray) -> np.ndarray:
    """Labels that config.json can record and load gives back: all integers (not booleans), all strings or all
    finite numbers; an InputError naming the first other label and the fix. Object arrays of one such kind are
    returned as that kind's array."""
    fix = "pass integers (e.g. 0 and 1) or two strings (e.g. 'neg' and 'pos')"
    if arr.dtype == bool:
        raise InputError(f"y holds booleans; {fix}, e.g. y.astype(int)")
    if arr.dtype.kind in "iu" or arr.dtype.kind == "U":
        return arr
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr))
        if len(bad):
            raise InputError(f"y[{int(bad[0])}] is {arr[bad[0]]}, not a label; {fix}")
        return arr
    if arr.dtype != object:
        raise InputError(f"y holds {arr.dtype} values, which a saved model cannot record; {fix}")
    kinds = {str: "str", int: "int", float: "float"}
    values = [v.item() if isinstance(v, np.generic) else v for v in arr.tolist()]
    for i, v in enumerate(values):
        kind = next((k for t, k in kinds.items() if isinstance(v, t) and not isinstance(v, bool)), None)
        if kind is None or (kind == "float" and not np.isfinite(v)):
            raise InputError(f"y[{i}] is {v!r} ({type(v).__name__}), not a label; {fix}")
    types = {type(v) for v in values}
    if len(types) > 1:
        raise InputError(f"y mixes labels of types {sorted(t.__name__ for t in types)}; {fix}")
    return np.asarray(values)


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    out = {k: v.item() if isinstance(v, np.generic) else v for k, v in params.items()}  # NumPy scalars as Python's
    if out.get("stop_words") is not None and not isinstance(out["stop_words"], str):
        out["stop_words"] = list(out["stop_words"])
    if out.get("run_dir") is not None:
        out["run_dir"] = str(out["run_dir"])
    if isinstance(out.get("positive_label"), np.generic):
        out["positive_label"] = out["positive_label"].item()
    return out
