"""Loading a model folder: damaged or mismatched files are one InputError (exit 2 in the CLI), never nan."""

import hashlib
import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load as load_st
from safetensors.torch import save as save_st

from attndyn import InputError
from attndyn.cli import main
from attndyn.sentiment import HardmaxSentimentClassifier, explain, seal_model_folder
from attndyn.sentiment._inference import sigmoid
from attndyn.sentiment._modelfile import SEAL, content_sha256, seal


@pytest.fixture
def saved(fitted, tmp_path):
    return fitted.save(tmp_path / "m")


def _config(folder):
    return json.loads((folder / "config.json").read_text())


def _set_config(folder, rec, *, reseal=True):
    """Write an edited config; with ``reseal``, record the sha256 of its new content as save() would."""
    (folder / "config.json").write_text(
        json.dumps(seal(rec) if reseal and isinstance(rec, dict) and SEAL in rec else rec)
    )


def _rewrite_weights(folder, change, *, rehash=True):
    """Edit the tensors, write them back, and (with ``rehash``) record their new sha256 as save() would."""
    tensors = load_st((folder / "weights.safetensors").read_bytes())
    change(tensors)
    data = save_st(tensors)
    (folder / "weights.safetensors").write_bytes(data)
    if rehash:
        rec = _config(folder)
        rec["files"]["weights.safetensors"] = hashlib.sha256(data).hexdigest()
        _set_config(folder, rec)


def test_save_records_hashes_and_round_trips(saved, fitted, corpus):
    rec = _config(saved)
    assert rec["files"] == {
        name: hashlib.sha256((saved / name).read_bytes()).hexdigest() for name in ("weights.safetensors", "vocab.json")
    }
    back = HardmaxSentimentClassifier.load(saved)
    assert np.array_equal(back.decision_function(corpus[0]), fitted.decision_function(corpus[0]))


def test_config_json_is_covered_by_its_own_hash(saved, fitted, corpus, capsys):
    """Issue 26: swapped 'classes' in config.json flipped every prediction; now the edit is refused."""
    orig = _config(saved)
    assert orig[SEAL] == content_sha256(orig)
    for key, value in (("classes", orig["classes"][::-1]), ("best_epoch", 99), ("alpha", 0.123), ("recipe", "x")):
        _set_config(saved, {**orig, key: value}, reseal=False)
        with pytest.raises(InputError, match=r"config.json' does not match the sha256 of its content .* retrain$"):
            HardmaxSentimentClassifier.load(saved)
    code = main(["sentiment", "predict", "--model", str(saved), "a fine film"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    _set_config(saved, orig, reseal=False)  # the file as saved: loads, on any device setting
    assert np.array_equal(
        HardmaxSentimentClassifier.load(saved, device="cpu").predict(corpus[0]), fitted.predict(corpus[0])
    )


@pytest.mark.parametrize("drop", [("files", SEAL), (SEAL,), ("files",)])
def test_an_unsealed_folder_is_refused_until_sealed_explicitly(saved, fitted, corpus, drop, capsys):
    """Issue 34 (5): deleting the seal and then swapping 'classes' or editing max_len loaded silently."""
    rec = _config(saved)
    for key in drop:
        del rec[key]
    _set_config(saved, rec)
    unsealed = r"records no sha256 of its content and files: .* if you trust this folder, seal it with "
    with pytest.raises(InputError, match=unsealed + r"attndyn.sentiment.seal_model_folder\(path\) and load it again$"):
        HardmaxSentimentClassifier.load(saved)
    for edited in ({**rec, "classes": rec["classes"][::-1]}, {**rec, "estimator": {**rec["estimator"], "max_len": 7}}):
        _set_config(saved, edited)
        with pytest.raises(InputError, match=unsealed):
            HardmaxSentimentClassifier.load(saved)
    assert main(["sentiment", "predict", "--model", str(saved), "a fine film"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(
        "seal it with `attndyn sentiment seal FOLDER` and load it again"
    )
    _set_config(saved, rec)
    assert main(["sentiment", "seal", str(saved)]) == 0 and capsys.readouterr().out == f"sealed {saved}\n"
    assert np.array_equal(HardmaxSentimentClassifier.load(saved).predict(corpus[0]), fitted.predict(corpus[0]))
    sealed = _config(saved)
    assert sealed[SEAL] == content_sha256(sealed) and set(sealed["files"]) == {"weights.safetensors", "vocab.json"}
    _set_config(saved, {**sealed, "classes": sealed["classes"][::-1]}, reseal=False)  # sealed: the edit is caught
    with pytest.raises(InputError, match="does not match the sha256 of its content"):
        seal_model_folder(saved)


def test_a_folder_a_training_holds_is_refused_by_load(saved):
    """Issue 34 (8): HardmaxSentimentClassifier.load read a folder whose training lock was held; the CLI refused."""
    from attndyn.sentiment._runfolder import RunLock

    with RunLock(saved):
        with pytest.raises(InputError, match=r"is being trained by process \d+ .* weights are not final"):
            HardmaxSentimentClassifier.load(saved)
    assert HardmaxSentimentClassifier.load(saved).classes_.tolist() == [0, 1]


def _flip_one_bit(folder):
    data = bytearray((folder / "weights.safetensors").read_bytes())
    data[-3] ^= 0x40  # an exponent bit of the last float
    (folder / "weights.safetensors").write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            _flip_one_bit,
            r"has sha256 [0-9a-f]{16}… but config.json records [0-9a-f]{16}…: the file is damaged or was replaced",
        ),
        (lambda f: (f / "weights.safetensors").write_bytes(b""), "weights.safetensors' is empty"),
        (
            lambda f: (f / "weights.safetensors").write_bytes((f / "weights.safetensors").read_bytes()[:50]),
            "has sha256",
        ),
        (
            lambda f: (f / "vocab.json").write_text('{"words": ["<pad>", "<unk>"]}'),
            "vocab.json' does not match the sha256",
        ),
    ],
)
def test_damaged_files_are_refused_by_their_hash(saved, damage, message):
    damage(saved)
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "is empty"),
        (b"\x00" * 7, "is not a readable safetensors file"),
        (b"garbage garbage garbage garbage", "is not a readable safetensors file"),
        ("TRUNCATE", "is not a readable safetensors file"),
    ],
)
def test_unreadable_weights_without_a_hash(saved, data, message):
    rec = _config(saved)
    del rec["files"]
    _set_config(saved, rec)
    if data == "TRUNCATE":
        data = (saved / "weights.safetensors").read_bytes()[:-9]
    (saved / "weights.safetensors").write_bytes(data)
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda t: t["decoder.weight"].__setitem__((0, 0), float("nan")),
            r"decoder.weight holds NaN values; the weights are damaged",
        ),
        (lambda t: t["embed.weight"].__setitem__((3, 1), float("inf")), r"embed.weight holds infinite values"),
        (
            lambda t: t.update({"embed.weight": t["embed.weight"][:-1]}),
            r"embed.weight has shape \(\d+, 2\) but config.json .* needs",
        ),
        (
            lambda t: t.update({"embed.weight": torch.zeros(t["embed.weight"].shape, dtype=torch.int32)}),
            r"has dtype int32, expected float32 \(or float16, bfloat16, float64\)",
        ),
        (  # issue 34: float64 weights of 1e300 said "tokens contains inf"
            lambda t: t.update({"embed.weight": t["embed.weight"].double().fill_(1e300)}),
            r"embed.weight holds values up to 1e\+300, beyond float32's range \(3.4e\+38\) in which the model runs",
        ),
        (  # issue 34: float8 weights ended in a traceback ("isfinite" not implemented)
            lambda t: t.update({"embed.weight": t["embed.weight"].to(torch.float8_e4m3fn)}),
            r"embed.weight has dtype float8_e4m3fn, expected float32 .*; convert the weights or retrain$",
        ),
        (lambda t: t.pop("alpha_raw"), r"missing \['alpha_raw'\]"),
        (lambda t: t.update({"extra": torch.zeros(1)}), r"unexpected \['extra'\]"),
    ],
)
def test_weights_checked_for_shape_dtype_and_finiteness(saved, change, message):
    _rewrite_weights(saved, change)  # with a matching hash: the other checks must catch it
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


@pytest.mark.parametrize(
    "words, message",
    [
        (lambda w: w[:-1], r"holds \d+ words but the model has \d+ \(config.json model.vocab_size\)"),
        (lambda w: w + ["zzz"], r"holds \d+ words but the model has"),
        (lambda w: w[1:], "must start with '<pad>', '<unk>'"),
        (lambda w: w[:-1] + [w[2]], "are not distinct"),
    ],
)
def test_vocabulary_checked_against_the_embedding(saved, words, message):
    rec = _config(saved)
    del rec["files"]  # as a model saved before hashes: the size check alone must catch it
    _set_config(saved, rec)
    w = json.loads((saved / "vocab.json").read_text())["words"]
    (saved / "vocab.json").write_text(json.dumps({"words": words(w)}))
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda r: [r], "must hold a JSON object .* got a list"),
        (lambda r: None, "must hold a JSON object .* got null"),
        (lambda r: {**r, "colour": 1}, r"has unknown keys \['colour'\]"),
        (lambda r: {**r, "estimator": {**r["estimator"], "dd": 2}}, r"unknown estimator settings \['dd'\]"),
        (
            lambda r: {**r, "estimator": {**r["estimator"], "alpha_min": "0.5"}},
            r"alpha_min must be a positive number, got '0.5' \(a str\)",
        ),
        (lambda r: {**r, "estimator": {**r["estimator"], "max_len": -1}}, "max_len must be an integer >= 1"),
        (lambda r: {**r, "model": {**r["model"], "width": 3}}, r"unknown model config keys \['width'\]"),
        (lambda r: {**r, "model": {**r["model"], "d": 3}}, "model d = 3 but estimator d = 2"),
        (lambda r: {**r, "model": [1, 2]}, "a model config must be a JSON object"),
        (
            lambda r: {**r, "classes": [0]},
            r"'classes' must be two distinct labels of one type such as \[0, 1\], got \[0\]",
        ),
        (lambda r: {**r, "classes": [1, 1]}, "'classes' must be two distinct labels"),
        (lambda r: {**r, "classes": [0, "pos"]}, "'classes' must be two distinct labels"),
        (lambda r: {**r, "classes_dtype": "<U3"}, r"'classes_dtype' must be the NumPy dtype of the labels \[0, 1\]"),
        (lambda r: {**r, "classes_dtype": "|O"}, "'classes_dtype' must be the NumPy dtype"),
        (lambda r: {**r, "classes_dtype": "bogus"}, r"such as '<i8' or '<U8'\), got 'bogus'"),
        (lambda r: {**r, "classes": [0, 300], "classes_dtype": "|i1"}, "'classes_dtype' must be the NumPy dtype"),
        (lambda r: {**r, "classes": [0.5, 1.5], "classes_dtype": "<i8"}, "'classes_dtype' must be the NumPy dtype"),
        (lambda r: {**r, "alpha": -1}, "'alpha' must be a positive finite number"),
        (lambda r: {**r, "files": {"weights.safetensors": "xyz"}}, "'files' must map"),
        (lambda r: {k: v for k, v in r.items() if k != "model"}, "has no 'model'"),
    ],
)
def test_config_schema(saved, edit, message):
    _set_config(saved, edit(_config(saved)))
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", r"vocab.json' must hold a JSON object \{\"words\": \[...\]\}, got a list"),
        ('{"words": ["<pad>", "<unk>"], "x": 1}', r"has unknown keys \['x'\]"),
        ('{"words": [1, 2]}', "'words' must be a list of strings"),
        ('{"words": NaN}', "is not valid JSON"),
        ("\xff\xfe", "is not valid JSON"),
    ],
)
def test_vocab_schema(saved, text, message):
    rec = _config(saved)
    del rec["files"]
    _set_config(saved, rec)
    (saved / "vocab.json").write_text(text, encoding="latin-1")
    with pytest.raises(InputError, match=message):
        HardmaxSentimentClassifier.load(saved)


def test_cli_never_prints_nan_for_a_damaged_model(saved, capsys):
    _rewrite_weights(saved, lambda t: t["decoder.bias"].__setitem__(0, float("nan")))
    for cmd in (["predict"], ["explain"]):
        assert main(["sentiment", *cmd, "--model", str(saved), "great film"]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1 and "decoder.bias holds NaN values" in out.err
    rec = _config(saved)
    del rec["files"]
    _set_config(saved, rec)
    _flip_one_bit(saved)  # without a hash to catch it, the finiteness check still applies
    assert main(["sentiment", "predict", "--model", str(saved), "great film"]) == 2
    assert "nan" not in capsys.readouterr().out


def test_extreme_but_finite_weights_give_probabilities_not_nan(fitted, corpus, tmp_path):
    m = fitted.save(tmp_path / "m")
    _rewrite_weights(m, lambda t: t["decoder.weight"].mul_(1e30))
    clf = HardmaxSentimentClassifier.load(m)
    p = clf.predict_proba(corpus[0][:10])
    assert np.isfinite(p).all() and set(np.unique(p)) <= {0.0, 1.0}
    assert sigmoid(np.array([-800.0, 800.0])).tolist() == [0.0, 1.0]
    assert explain(clf, corpus[0][0]).probability in (0.0, 1.0)


def test_explain_and_estimator_argument_errors(fitted):
    with pytest.raises(InputError, match=r"text must be one review as a string, got NoneType; pass e.g. explain\(clf"):
        explain(fitted, None)
    with pytest.raises(InputError, match="explain needs a fitted HardmaxSentimentClassifier, got NoneType"):
        explain(None, "great")
    with pytest.raises(InputError, match="not fitted yet"):
        explain(HardmaxSentimentClassifier(), "great")
    texts, labels = ["good film", "bad film"] * 5, [1, 0] * 5
    for kw, message in [
        (dict(alpha_min="0.5"), r"alpha_min must be a positive number, got '0.5' \(a str\); pass a number such as 0.5"),
        (dict(alpha_init="1"), r"alpha_init must be a positive number, got '1' \(a str\)"),
        (dict(word_dropout="0.1"), r"word_dropout must be a number in \[0, 1\), got '0.1' \(a str\)"),
        (dict(val_fraction="0.1"), r"val_fraction must be a number in \(0, 1\), got '0.1'"),
        (dict(min_log_odds=float("nan")), r"min_log_odds must be a number >= 0, got nan"),
        (dict(weight_decay=float("inf")), r"weight_decay must be a number >= 0, got inf"),
        (dict(lr=True), r"lr must be a positive number, got True \(a bool\)"),
        (dict(max_vocab="5"), r"max_vocab must be an integer >= 1 or None, got '5'"),
        (dict(keep_negations="no"), "keep_negations must be True or False, got 'no'"),
        (dict(stop_words=[1, 2]), "stop_words must be 'english', 'none' or a list of words"),
        (dict(random_state=-1), "random_state must be an integer >= 0, got -1"),
    ]:
        with pytest.raises(InputError, match=message):
            HardmaxSentimentClassifier(min_freq=1, epochs=1, **kw).fit(texts, labels)


def test_copy_of_a_saved_model_loads_from_elsewhere(saved, tmp_path):
    shutil.copytree(saved, tmp_path / "copy")
    assert HardmaxSentimentClassifier.load(tmp_path / "copy").alpha_ > 0
