"""One source of settings: the dataclasses hold every setting and default, the recipe table the
changes per d; the estimator's parameters and the CLI's options must agree with them."""

import inspect
import json
from dataclasses import fields

import pytest
import typer

from attndyn import InputError
from attndyn.cli import main
from attndyn.cli._sentiment import _show, app
from attndyn.sentiment import HardmaxSentimentClassifier, SentimentConfig, TextConfig, TrainConfig
from attndyn.sentiment._recipes import NOT_SETTINGS, RECIPES, SETTINGS, Recipe, recipe, recipe_for, resolve

#: Estimator parameters that are not training settings (how and where it runs, what it is seeded with).
ESTIMATOR_ONLY = {"d", "positive_label", "inference", "random_state", "run_dir", "verbose", "device"}

#: The reported d = 16 recipe, as docs/sentiment.md "Commands" wrote it out in flags.
REPORTED_D16 = {
    "embed_init_std": 0.12,
    "min_log_odds": 0.1,
    "bigrams": 5,
    "word_dropout": 0.25,
    "embed_lr": 3e-3,
    "lr": 1e-3,
    "lr_decay": 0.7,
    "epochs": 7,
    "patience": 2,
}


def _train_params() -> dict:
    command = typer.main.get_command(app)
    return {p.name: p for p in command.commands["train"].params if p.name}  # type: ignore[attr-defined]


def test_every_setting_is_a_field_of_exactly_one_dataclass():
    owners = [{f.name for f in fields(c)} - set(NOT_SETTINGS) for c in (SentimentConfig, TextConfig, TrainConfig)]
    assert sum(len(o) for o in owners) == len(set().union(*owners)) == len(SETTINGS)


def test_estimator_parameters_are_the_settings_all_defaulting_to_the_recipe():
    sig = inspect.signature(HardmaxSentimentClassifier.__init__).parameters
    names = set(sig) - {"self"}
    assert names - ESTIMATOR_ONLY == set(SETTINGS)
    assert {n: sig[n].default for n in SETTINGS} == dict.fromkeys(SETTINGS)  # None: the recipe for d
    assert sig["d"].default == 2


def test_cli_options_are_the_settings_all_defaulting_to_the_recipe():
    cli = _train_params()
    assert set(SETTINGS) <= set(cli)
    assert {n: cli[n].default for n in SETTINGS} == dict.fromkeys(SETTINGS)
    sig = inspect.signature(HardmaxSentimentClassifier.__init__).parameters
    assert cli["d"].default == sig["d"].default and cli["seed"].default == sig["random_state"].default
    assert cli["device"].default == sig["device"].default
    for name in SETTINGS:  # the help states the recipe's values, read from the table
        help_text = cli[name].help or ""
        assert "Default:" in help_text, name
        assert all(_show(recipe(r.min_d)[name]) in help_text for r in RECIPES), name


def test_the_help_s_torch_free_table_is_the_recipes():
    """`attndyn sentiment train --help` reads the recipes' values from attndyn.sentiment._defaults (no torch there):
    the copy must be what the recipes give."""
    from attndyn.sentiment._defaults import RECIPE_MIN_D, RECIPE_VALUES

    assert RECIPE_MIN_D == tuple(r.min_d for r in RECIPES)
    assert RECIPE_VALUES == {name: tuple(recipe(d)[name] for d in RECIPE_MIN_D) for name in SETTINGS}


def test_recipe_2_is_the_dataclass_defaults_and_16_the_reported_model():
    for name, cls in SETTINGS.items():
        assert recipe(2)[name] == cls.__dataclass_fields__[name].default, name
    assert {k: v for k, v in recipe(16).items() if recipe(2)[k] != v} == {
        k: v for k, v in REPORTED_D16.items() if recipe(2)[k] != v
    }
    assert all(recipe(16)[k] == v for k, v in REPORTED_D16.items())
    assert [recipe_for(d).name for d in (1, 2, 4, 8, 15, 16, 64)] == ["d2"] * 5 + ["d16"] * 2


def test_dataclass_defaults_are_the_estimators_reported_d2_settings():
    # the values the estimator and the CLI gave before they were written once (they had disagreed with TrainConfig)
    t = TrainConfig()
    assert (t.epochs, t.patience, t.aux_weight, t.train_eval_size) == (8, 2, 1.0, 2000)
    # issue 30: the lexicon is a sign prior in the loss, no longer copies of examples among the data
    assert (t.prior_weight, t.prior_margin) == (1.0, 2.0)
    assert (TextConfig().lexicon_examples, TextConfig().min_log_odds, TextConfig().bigrams) == (0, 0.3, 0)


def test_estimator_resolves_the_recipe_and_explicit_values_win():
    assert HardmaxSentimentClassifier(d=16).resolved_params() == {
        **HardmaxSentimentClassifier(d=16).get_params(),
        **recipe(16),
    }
    est = HardmaxSentimentClassifier(d=16, bigrams=0, epochs=3)
    got = est.resolved_params()
    assert (got["bigrams"], got["epochs"], got["lr"]) == (0, 3, 1e-3)
    assert est.get_params()["lr"] is None  # __init__ only stores
    assert resolve({"d": 2, "lr": None})["lr"] == 3e-3


def test_bad_recipe_and_bad_d_refused():
    with pytest.raises(InputError, match=r"recipe 'x' changes unknown settings \['epoch'\]"):
        Recipe("x", 4, {"epoch": 3}, "")
    with pytest.raises(InputError, match="d must be a positive integer, got 0"):
        recipe(0)
    with pytest.raises(InputError, match="d must be a positive integer, got '16'"):
        HardmaxSentimentClassifier(d="16").check_params()


def test_cli_train_d16_records_the_recipe_and_flags_override(tmp_path, make_corpus, write_csv):
    texts, labels = make_corpus(60)
    data = write_csv(tmp_path / "imdb.csv", texts, labels)
    args = ["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--d", "16"]
    assert main([*args, "--epochs", "1", "--min-freq", "1", "--no-progress", "--threads", "1"]) == 0
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["recipe"] == "d16" and cfg["params"]["bigrams"] is None and cfg["params"]["epochs"] == 1
    assert {k: cfg["estimator"][k] for k in REPORTED_D16} == {**REPORTED_D16, "epochs": 1}
    assert cfg["model"]["embed_init_std"] == 0.12
    settings = json.loads((tmp_path / "r" / "settings.json").read_text())["estimator"]
    assert settings["bigrams"] == 5 and settings["min_freq"] == 1
    back = HardmaxSentimentClassifier.load(tmp_path / "r")
    assert back.get_params()["bigrams"] is None and back.resolved_params()["bigrams"] == 5
    assert back.tokenizer.bigrams


def test_a_fitted_model_keeps_the_settings_it_was_trained_with(fitted, monkeypatch):
    from attndyn.sentiment import _recipes as recipes

    before = fitted.resolved_params()
    assert before == {
        **fitted.get_params(),
        **recipe(2),
        **{k: v for k, v in fitted.get_params().items() if v is not None},
    }
    monkeypatch.setattr(recipes, "RECIPES", (recipes.Recipe("other", 1, {"max_len": 3, "bigrams": 9}, ""),))
    assert HardmaxSentimentClassifier(d=2).resolved_params()["max_len"] == 3  # the table is read when resolving
    assert fitted.resolved_params() == before and not fitted.tokenizer.bigrams  # ... but not by a fitted model
    fitted.set_params(device="cpu", verbose=False)
    assert set(fitted.settings_) == set(SETTINGS) | {"d"}  # how it runs stays a parameter, not a trained setting
