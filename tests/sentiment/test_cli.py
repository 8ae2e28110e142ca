import json

import pytest

from attndyn.cli import main


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, make_corpus, write_csv):
    tmp = tmp_path_factory.mktemp("cli")
    texts, labels = make_corpus(120)
    data = write_csv(tmp / "imdb.csv.gz", texts, labels, gz=True)
    run = tmp / "run"
    rc = main(
        [
            "sentiment",
            "train",
            "--run",
            str(run),
            "--data",
            str(data),
            "--epochs",
            "3",
            "--min-freq",
            "1",
            "--lr",
            "0.03",
            "--embed-lr",
            "0.1",
            "--lr-decay",
            "0.9",
            "--no-progress",
            "--threads",
            "1",
        ]
    )
    assert rc == 0
    return run


def test_train_writes_run_folder(run_dir):
    names = {p.name for p in run_dir.iterdir()}
    assert {
        "config.json",
        "vocab.json",
        "weights.safetensors",
        "metrics.json",
        "checkpoint.safetensors",
        "test.json",
        "data.json",
    } <= names
    rep = json.loads((run_dir / "test.json").read_text())
    assert rep["n"] == 36 and 0 <= rep["hardmax_acc"] <= 1 and rep["alpha"] > 0


def test_evaluate_and_figures(run_dir, capsys):
    assert main(["sentiment", "evaluate", str(run_dir), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert {"softmax_acc", "hardmax_acc", "agreement", "leaders_mean", "clusters_per_token_mean", "figure10"} <= set(
        rep
    )
    for name in ("evaluation.json", "figure8.png", "figure10.png", "accuracy.png"):
        assert (run_dir / name).stat().st_size > 0
    assert main(["sentiment", "evaluate", "--run", str(run_dir), "--no-figures", "--out", str(run_dir / "again")]) == 0
    again = json.loads((run_dir / "again" / "evaluation.json").read_text())
    assert again["hardmax_acc"] == rep["hardmax_acc"] and again["agreement"] == rep["agreement"]  # same model, data
    assert main(["sentiment", "evaluate"]) == 2
    assert "give the run folder once" in capsys.readouterr().err


def test_predict_text_file_and_csv(run_dir, tmp_path, capsys):
    assert main(["sentiment", "predict", "--model", str(run_dir), "--json", "a wonderful superb film"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["label"] in ("positive", "negative") and 0 <= out["probability_positive"] <= 1
    (tmp_path / "t.txt").write_text("great film\n\nawful film\n")
    assert main(["sentiment", "predict", "--model", str(run_dir), "--file", str(tmp_path / "t.txt")]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    (tmp_path / "t.csv").write_text("id,text\n1,great film\n")
    assert main(["sentiment", "predict", "--model", str(run_dir), "--file", str(tmp_path / "t.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "great film"
    # the review CSV that train and evaluate read (review,sentiment) is read by its review column
    (tmp_path / "r.csv").write_text('review,sentiment\n"awful, dull film",negative\ngreat film,positive\n')
    assert main(["sentiment", "predict", "--model", str(run_dir), "--file", str(tmp_path / "r.csv"), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == ["awful, dull film", "great film"]


def test_predict_errors(run_dir, tmp_path, capsys):
    assert main(["sentiment", "predict", "--model", str(run_dir)]) == 2
    assert "give either a TEXT argument or --file" in capsys.readouterr().err
    (tmp_path / "x.csv").write_text("comment\nhi\n")
    assert main(["sentiment", "predict", "--model", str(run_dir), "--file", str(tmp_path / "x.csv")]) == 2
    assert "has no 'text' or 'review' column" in capsys.readouterr().err
    assert main(["sentiment", "predict", "--model", str(tmp_path), "hi"]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_explain_json_and_figures(run_dir, tmp_path, capsys):
    fig, gif = tmp_path / "f9.png", tmp_path / "f9.gif"
    assert (
        main(
            [
                "sentiment",
                "explain",
                "--model",
                str(run_dir),
                "--json",
                "--figure",
                str(fig),
                "--gif",
                str(gif),
                "great wonderful film but dull plot",
            ]
        )
        == 0
    )
    e = json.loads(capsys.readouterr().out)
    assert e["clusters"] and fig.stat().st_size > 0 and gif.read_bytes()[:3] == b"GIF"
    assert e["label"] == ("positive" if e["probability"] > 0.5 else "negative")  # as `predict --json` names it
    assert main(["sentiment", "explain", "--model", str(run_dir), "great film"]) == 0
    assert "share" in capsys.readouterr().out


def test_train_bad_split(tmp_path, capsys):
    assert (
        main(["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(tmp_path / "no.csv"), "--no-progress"])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_data_download_bad_url(tmp_path, capsys):
    assert main(["data", "imdb", "--download", str(tmp_path), "--url", "http://127.0.0.1:9/none.tar.gz"]) == 2
    assert "could not download" in capsys.readouterr().err


def test_train_rejects_bad_model_settings_before_reading_data(tmp_path, capsys):
    data = tmp_path / "reviews.csv"
    data.write_text("review,sentiment\ngood,positive\nbad,negative\n")
    argv = ["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--no-progress"]
    assert main(argv + ["--embed-init-std", "-1"]) == 2
    assert "--embed-init-std must be a positive number" in capsys.readouterr().err
    assert main(argv + ["--negation-scope", "-1"]) == 2
    assert "--negation-scope must be an integer >= 0" in capsys.readouterr().err
    assert main(argv + ["--bigrams", "-2"]) == 2
    assert "--bigrams must be an integer >= 0" in capsys.readouterr().err
    assert main(argv + ["--lr-decay", "1.5"]) == 2
    assert "--lr-decay must be a number in (0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "r" / "cache").exists()  # nothing was tokenized


def test_train_options_become_the_estimators_parameters():
    from pathlib import Path

    from attndyn import InputError
    from attndyn.cli._sentiment import _train_estimator
    from attndyn.sentiment._recipes import SETTINGS

    options = {**dict.fromkeys(SETTINGS), "d": 4, "seed": 7, "run": Path("r"), "progress": False, "device": "cpu"}
    est = _train_estimator({**options, "stop_words": " not, good,,", "epochs": 3})
    p = est.get_params()
    assert (p["d"], p["random_state"], p["run_dir"], p["verbose"], p["device"]) == (4, 7, "r", False, "cpu")
    assert p["stop_words"] == ["not", "good"] and p["epochs"] == 3
    assert all(p[k] is None for k in SETTINGS if k not in ("stop_words", "epochs"))  # None: the recipe for d
    assert _train_estimator({**options, "stop_words": "english"}).get_params()["stop_words"] == "english"
    with pytest.raises(InputError, match=r"epochs must be an integer >= 1, got 0"):
        _train_estimator({**options, "epochs": 0})


def test_explain_refuses_one_file_for_two_figures(run_dir, tmp_path, capsys):
    """Pass 8, item 6: --figure F --words-figure F wrote both and kept the second, exit 0: refused before any work."""
    same = tmp_path / "same.png"
    code = main(
        ["sentiment", "explain", "--model", str(run_dir), "great film", "--figure", str(same)]
        + ["--words-figure", str(same)]
    )
    assert code == 2 and "--figure and --words-figure name the same file" in capsys.readouterr().err
    assert not same.exists()


def test_evaluate_refuses_an_out_below_a_file_before_it_evaluates(run_dir, tmp_path, capsys):
    """Pass 8, items 9-10: `evaluate --out FILE/sub` failed with a raw [Errno 20] after the evaluation; `--out ''`
    wrote into the current folder."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (str(blocker / "sub"), ""):
        assert main(["sentiment", "evaluate", str(run_dir), "--no-figures", "--out", out]) == 2
        assert "--out" in capsys.readouterr().err


def test_a_negative_seed_is_named_by_its_flag(tmp_path, capsys):
    """Pass 8, item 12: `train --seed -1` said "random_state must be ...", a name the command line does not have."""
    data = tmp_path / "t.csv"
    data.write_text("review,sentiment\ngood film,positive\nbad film,negative\n")
    code = main(
        ["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--seed", "-1", "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--seed must be an integer >= 0, got -1" in err and "random_state" not in err


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_train_settings_are_named_by_their_flags(tmp_path, capsys, value):
    """New-user pass: `train --alpha-init 0` said "alpha_init must be ...", a name the command line does not have."""
    data = tmp_path / "t.csv"
    data.write_text("review,sentiment\ngood film,positive\nbad film,negative\n")
    argv = ["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--no-progress"]
    assert main([*argv, "--alpha-init", value]) == 2
    assert capsys.readouterr().err == f"error: --alpha-init must be a positive number, got {float(value)!r}\n"
    for flags in (["--alpha-min", "2"], ["--tau", value], ["--anneal-epochs", "-1"], ["--d", "0"]):
        assert main([*argv, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {flags[0]} ") and err.count("\n") == 1, (flags, err)
        assert "alpha_" not in err and "anneal_" not in err, err
    assert not (tmp_path / "r").exists()


def test_tau_start_with_no_annealing_is_refused(tmp_path, capsys):
    """New-user passes: `--tau-start 0.5` with no annealing epochs (given as 0, or the recipe's 0) and
    `--anneal-epochs 3` with no --tau-start were accepted, and did nothing."""
    data = tmp_path / "t.csv"
    data.write_text("review,sentiment\ngood film,positive\nbad film,negative\n")
    argv = ["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--no-progress"]
    for flags in (["--tau-start", "0.5", "--anneal-epochs", "0"], ["--tau-start", "0.5"]):  # the recipes: 0 epochs
        assert main([*argv, *flags]) == 2
        assert capsys.readouterr().err == (
            "error: --tau-start 0.5 anneals the temperature over --anneal-epochs, which is 0 (the recipe for d = 2 "
            "does not anneal); give --anneal-epochs 1 or more, or drop --tau-start\n"
        )
    assert main([*argv, "--anneal-epochs", "3"]) == 2  # epochs with nothing to anneal from
    assert capsys.readouterr().err == (
        "error: --anneal-epochs 3 anneals the temperature from --tau-start, which is not given (the recipe for d = 2 "
        "does not anneal); give --tau-start (e.g. 1.0), or drop --anneal-epochs\n"
    )
    assert not (tmp_path / "r").exists()
    from attndyn.cli._sentiment import _train_estimator
    from attndyn.sentiment._recipes import SETTINGS

    options = {**dict.fromkeys(SETTINGS), "d": 2, "seed": 0, "run": tmp_path / "r", "progress": False, "device": "cpu"}
    for given in ({"anneal_epochs": 0}, {"tau_start": 0.5, "anneal_epochs": 2}):
        _train_estimator({**options, **given})  # annealing off, or on with both: no conflict
