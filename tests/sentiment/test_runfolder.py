"""Run folders: resume only under equal settings, one training at a time, evaluate the run's own test split or another data set whole."""

import csv
import hashlib
import json
import os
import shutil
import threading

import pytest
import torch

from attndyn import InputError
from attndyn.cli import main
from attndyn.cli._flags import flag_of
from attndyn.sentiment._runfolder import RunLock, data_identity, lock_holder

TRAIN = ["sentiment", "train", "--epochs", "1", "--min-freq", "1", "--no-progress", "--threads", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, make_corpus, write_csv):
    tmp = tmp_path_factory.mktemp("runfolder")
    texts, labels = make_corpus(60)
    data = write_csv(tmp / "a.csv", texts, labels)
    other = write_csv(tmp / "b.csv", *make_corpus(60, seed=1))
    run = tmp / "run"
    assert main(TRAIN + ["--run", str(run), "--data", str(data)]) == 0
    return tmp, run, data, other


@pytest.mark.parametrize(
    "change, named",
    [
        (["--d", "3"], "--d 2 (now 3)"),
        (["--seed", "1"], "--seed 0 (now 1)"),
        (["--lr", "0.01"], "--lr 0.003 (now 0.01)"),
        (["--epochs", "2"], "--epochs 1 (now 2)"),
        (["--split", "official"], '--split "random" (now "official")'),
        (["--min-log-odds", "0.5", "--bigrams", "2"], "--bigrams 0 (now 2), --min-log-odds 0.3 (now 0.5)"),
        (["--data", "OTHER"], "--data (sha256)"),
    ],
)
def test_resume_with_other_settings_exits_2_and_changes_nothing(trained, change, named, capsys, snapshot):
    tmp, run, data, other = trained
    argv = TRAIN + ["--run", str(run), "--data", str(data)]
    change = [str(other) if c == "OTHER" else c for c in change]
    before = snapshot(run)
    capsys.readouterr()
    assert main(argv + change) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: run folder {str(run)!r} was trained with other settings: ")
    assert named in err and "--run NEW" in err and "--overwrite" in err
    assert snapshot(run) == before  # byte for byte, the tokenization cache included


def test_another_thread_count_is_the_same_run(trained, capsys, snapshot):
    # the weights do not depend on --threads, so a finished run trained on one thread is complete on two
    _, run, data, _ = trained
    before = snapshot(run)
    assert main(TRAIN + ["--run", str(run), "--data", str(data), "--threads", "2"]) == 0
    assert "is complete; nothing was changed" in capsys.readouterr().err
    assert snapshot(run) == before


def test_rerunning_a_finished_run_changes_no_file_even_from_a_moved_copy_of_its_data(trained, capsys, snapshot):
    """Equal settings (a moved copy is the same data: same sha256) on a run trained to its end: it is complete,
    exit 0, its recorded test report on stdout, and not one byte of the folder changes (train_seconds included)."""
    tmp, run, data, _ = trained
    copy = tmp / "moved" / "copy.csv"
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(data, copy)
    before = snapshot(run)
    for path in (copy, data):
        capsys.readouterr()
        assert main(TRAIN + ["--run", str(run), "--data", str(path)]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out) == json.loads((run / "test.json").read_text())
        assert err == (
            f"run folder {str(run)!r} is complete; nothing was changed (its test report is printed as recorded). "
            "Add --overwrite to train it again, or give another folder with --run NEW\n"
        )
        assert snapshot(run) == before


def test_overwrite_discards_the_run_and_trains_anew(trained, tmp_path):
    _, run, data, _ = trained
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--d", "3", "--overwrite"]) == 0
    cfg = json.loads((mine / "config.json").read_text())
    settings = json.loads((mine / "settings.json").read_text())
    assert cfg["model"]["d"] == 3 and settings["estimator"]["d"] == 3 and settings["threads"] == 1
    assert settings["data"] == {"sha256": hashlib.sha256(data.read_bytes()).hexdigest(), "size": data.stat().st_size}


def test_overwrite_keeps_no_copy_of_the_discarded_run_once_the_new_one_trained(trained, tmp_path):
    _, run, data, _ = trained
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--d", "3", "--overwrite"]) == 0
    assert not (mine / ".overwritten").exists()


def test_an_overwrite_that_fails_before_its_first_epoch_gives_the_old_run_back(trained, tmp_path, capsys, snapshot):
    # a setting that only the training itself can refuse (no word is seen that often): the finished run that
    # --overwrite was to discard must come back byte for byte, and predicting with it must still work
    _, run, data, _ = trained
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    before = snapshot(mine)
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--min-freq", "100000", "--overwrite"]) == 2
    assert "no word is seen" in capsys.readouterr().err
    assert snapshot(mine) == before
    assert main(["sentiment", "predict", "--model", str(mine), "a fine film"]) == 0


def test_a_second_training_is_refused_naming_the_holder(trained, capsys, snapshot, locked_by_another_process):
    _, run, data, _ = trained
    with locked_by_another_process(run) as holder:
        before = snapshot(run)
        assert main(TRAIN + ["--run", str(run), "--data", str(data)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"error: run folder {str(run)!r} is in use by process {holder.pid} (a training holds its lock); "
            "wait for it to finish or stop it, or give another folder with --run NEW\n"
        )
        assert snapshot(run) == before
    with RunLock(run):  # released when the holder ended
        assert lock_holder(run) == os.getpid()
        with RunLock(run) as nested:  # the same thread: reentrant (train_run, then the estimator's fit)
            assert nested.held
        errors = []

        def other_thread():
            try:
                RunLock(run).__enter__()
            except InputError as exc:
                errors.append(str(exc))

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert len(errors) == 1 and f"is in use by process {os.getpid()}" in errors[0]  # another thread is refused
    assert lock_holder(run) is None  # the nested release did not drop it early, the outer one released it


def test_a_failing_fresh_run_leaves_no_folder(trained, tmp_path, capsys):
    _, _, data, _ = trained
    run = tmp_path / "a" / "b" / "run"
    assert main(TRAIN + ["--run", str(run), "--data", str(data), "--min-freq", "10000"]) == 2
    assert "no word is seen 10000 times" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_failing_run_in_an_existing_folder_removes_only_what_it_added(trained, tmp_path, capsys, snapshot):
    _, _, data, _ = trained
    run = tmp_path / "run"
    (run / "cache").mkdir(parents=True)
    (run / "cache" / "keep.txt").write_text("mine")
    (run / "notes.txt").write_text("mine too")
    before = snapshot(run)
    assert main(TRAIN + ["--run", str(run), "--data", str(data), "--min-freq", "10000"]) == 2
    assert "no word is seen 10000 times" in capsys.readouterr().err
    assert snapshot(run) == before  # the new tokenization cache inside cache/ is gone too


@pytest.mark.parametrize(
    "name, cut", [("checkpoint.safetensors", 30), ("checkpoint.safetensors", 0), ("weights.safetensors", 12)]
)
def test_a_damaged_checkpoint_is_refused_before_anything_changes(trained, tmp_path, name, cut, capsys, snapshot):
    _, run, data, _ = trained
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    (mine / name).write_bytes((mine / name).read_bytes()[:cut])
    before = snapshot(mine)
    assert main(TRAIN + ["--run", str(mine), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: the checkpoint in {str(mine)!r} cannot be resumed (") and err.count("\n") == 1
    assert "remove it to start again (command line: --overwrite, or --run NEW)" in err
    assert snapshot(mine) == before
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--overwrite"]) == 0


def test_legacy_folder_without_settings_is_compared_on_its_config(trained, tmp_path, capsys, snapshot):
    _, run, data, _ = trained
    old = tmp_path / "old"
    shutil.copytree(run, old)
    (old / "settings.json").unlink()
    before = snapshot(old)
    assert main(TRAIN + ["--run", str(old), "--data", str(data), "--layers", "4"]) == 2
    assert "--layers 8 (now 4)" in capsys.readouterr().err and snapshot(old) == before
    assert main(TRAIN + ["--run", str(old), "--data", str(data)]) == 0


def test_evaluate_other_data_whole_and_refuses_another_split(trained, tmp_path, capsys, snapshot):
    _, run, data, other = trained
    before = snapshot(run)
    # another data set (here with text,label columns) is scored whole, from any working folder
    with other.open(newline="") as f:
        rows = list(csv.DictReader(f))
    third = tmp_path / "third.csv"
    with third.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label"])
        w.writerows([i, r["review"], int(r["sentiment"] == "positive")] for i, r in enumerate(rows))
    for path in (other, third):
        assert (
            main(
                [
                    "sentiment",
                    "evaluate",
                    str(run),
                    "--data",
                    str(path),
                    "--no-figures",
                    "--json",
                    "--out",
                    str(tmp_path / "ev"),
                ]
            )
            == 0
        )
        rep = json.loads(capsys.readouterr().out)
        assert rep["n"] == 60 and rep["split"] == f"all 60 rows of {path.name} (not the training data)"
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    info = json.loads((mine / "data.json").read_text())
    (mine / "data.json").write_text(json.dumps({**info, "seed": 1}))  # the race the lock now prevents
    assert main(["sentiment", "evaluate", str(mine), "--no-figures"]) == 2
    assert (
        "records another split than the model was trained on: seed 1 (trained with 0); its test reviews"
        in capsys.readouterr().err
    )
    (mine / "data.json").write_text(json.dumps({**info, "split": "official"}))
    assert main(["sentiment", "evaluate", str(mine), "--no-figures"]) == 2
    assert "split 'official' (trained with 'random')" in capsys.readouterr().err
    (mine / "data.json").write_text(json.dumps({**info, "n_train": 41, "n_test": 19}))
    assert main(["sentiment", "evaluate", str(mine), "--no-figures"]) == 2
    assert "train/test reviews but data.json records 41/19" in capsys.readouterr().err
    (mine / "data.json").write_text(json.dumps({**info, "data": str(other)}))  # the run's data file was replaced
    assert main(["sentiment", "evaluate", str(mine), "--no-figures"]) == 2
    assert "changed since training" in capsys.readouterr().err
    assert snapshot(run) == before
    assert (
        main(["sentiment", "evaluate", str(run), "--data", str(data), "--no-figures", "--out", str(tmp_path / "e")])
        == 0
    )
    # a folder without settings.json (older, or the benchmark's, whose split seed may differ from the model seed)
    (mine / "settings.json").unlink()
    (mine / "data.json").write_text(json.dumps({**info, "seed": 0}))
    assert main(["sentiment", "evaluate", str(mine), "--no-figures", "--out", str(tmp_path / "e2")]) == 0


def test_data_identity_of_a_file_and_of_a_folder(tmp_path):
    f = tmp_path / "x.csv"
    f.write_bytes(b"review,sentiment\n")
    assert data_identity(f) == {
        "path": str(f.resolve()),
        "size": 17,
        "sha256": hashlib.sha256(b"review,sentiment\n").hexdigest(),
    }
    for rel, text in [("train/pos/0_9.txt", "good"), ("test/neg/0_1.txt", "bad")]:
        (tmp_path / "acl" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "acl" / rel).write_text(text)
    a = data_identity(tmp_path / "acl")
    (tmp_path / "acl" / "test/neg/0_1.txt").write_text("bad!")
    b = data_identity(tmp_path / "acl")
    assert a["size"] == 7 and b["size"] == 8 and a["sha256"] != b["sha256"]
    assert flag_of("min_log_odds") == "--min-log-odds" and flag_of("random_state") == "--seed"


def test_run_folder_reads_its_data_record_and_split_as_the_command_line_wrote_them(trained):
    """RunFolder is the one reader of data.json: the record train wrote, the split it names (the same test
    indices as the data's own seeded split), and for a folder without data.json the default data seeded by the
    model's random_state."""
    from attndyn.sentiment._corpus import split_indices
    from attndyn.sentiment._data import DEFAULT_DATA, read_reviews
    from attndyn.sentiment._runfolder import RunFolder

    tmp, run, data, _ = trained
    folder = RunFolder(run)
    info = folder.data()
    assert info == json.loads((run / "data.json").read_text()) and info["data"] == str(data.resolve())
    reviews = read_reviews(data)
    tr, te = folder.split(reviews, info)
    want_tr, want_te = split_indices(reviews, "random", 0)
    assert (tr == want_tr).all() and (te == want_te).all() and (len(tr), len(te)) == (info["n_train"], info["n_test"])
    assert RunFolder(tmp / "nothing").data() is None
    assert RunFolder(tmp / "nothing").data_or_default(7) == {"data": DEFAULT_DATA, "split": "random", "seed": 7}


def test_run_folder_refuses_a_data_record_that_differs_from_its_settings(trained, tmp_path):
    from attndyn.cli._flags import FLAGS
    from attndyn.sentiment._runfolder import RunFolder

    _, run, _, _ = trained
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    info = json.loads((copy / "data.json").read_text())
    (copy / "data.json").write_text(json.dumps({**info, "seed": 3}))
    with pytest.raises(
        InputError, match=r"records another split .*: seed 3 \(trained with 0\); .*: retrain the run$"
    ) as err:
        RunFolder(copy).data()
    assert err.value.worded(FLAGS).endswith(": retrain the run (attndyn sentiment train --run NEW ...)")
    (copy / "data.json").write_text(json.dumps({**info, "split": "halves"}))
    with pytest.raises(InputError, match="must record 'data' \\(a path\\), 'split'"):
        RunFolder(copy).data()


def test_run_folder_errors_name_the_library_parameters_and_the_command_line_its_flags(trained, tmp_path):
    """A Python caller reads overwrite=True and the setting's name; the command line, --overwrite and the flag."""
    from attndyn.cli._flags import FLAGS
    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._runfolder import RunFolder

    _, run, _, _ = trained
    settings = json.loads((run / "settings.json").read_text())
    changed = {**settings, "estimator": {**settings["estimator"], "lr": 0.01}}
    with pytest.raises(
        InputError, match=r"other settings: lr 0.003 \(now 0.01\); .*or add overwrite=True to discard"
    ) as err:
        RunFolder(run).open(changed, HardmaxSentimentClassifier(d=2).resolved_params(), overwrite=False)
    worded = err.value.worded(FLAGS)
    assert "--lr 0.003 (now 0.01)" in worded and "give a new folder with --run NEW, or add --overwrite" in worded
    assert "--" not in str(err.value)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(InputError, match=r"^run folder '.*a_file' is a file") as err:
        with RunFolder(a_file).lock():
            pass
    assert err.value.worded(FLAGS).startswith(f"--run {str(a_file)!r} is a file")


def test_train_run_is_the_train_command_in_python(tmp_path, make_corpus, write_csv, snapshot):
    """attndyn.sentiment._runs.train_run trains a run folder as `attndyn sentiment train` does: the same files, the
    same test report and weights; a second call on the finished run changes nothing and says it was complete;
    other settings are refused in the library's words, the folder unchanged."""
    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._runs import train_run

    data = write_csv(tmp_path / "a.csv", *make_corpus(60))
    cli_run, py_run = tmp_path / "cli", tmp_path / "py"
    assert main(TRAIN + ["--run", str(cli_run), "--data", str(data)]) == 0
    est = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1)
    report, complete = train_run(est, py_run, data=data, threads=1)
    assert not complete and est.run_dir == str(py_run)
    names = sorted(p.name for p in py_run.iterdir())
    assert names == sorted(p.name for p in cli_run.iterdir())
    cli_report = json.loads((cli_run / "test.json").read_text())
    timings = ("train_seconds", "hardmax_seconds")
    assert {k: v for k, v in report.items() if k not in timings} == {
        k: v for k, v in cli_report.items() if k not in timings
    }
    assert (py_run / "weights.safetensors").read_bytes() == (cli_run / "weights.safetensors").read_bytes()
    before = snapshot(py_run)
    again, complete = train_run(HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1), py_run, data=data, threads=1)
    assert complete and again == report and snapshot(py_run) == before
    with pytest.raises(InputError, match=r"was trained with other settings: .*lr 0\.003 \(now 0\.01\)"):
        train_run(HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, lr=0.01), py_run, data=data, threads=1)
    assert snapshot(py_run) == before
    with pytest.raises(InputError, match="threads must be an integer from 1 to"):
        train_run(est, py_run, data=data, threads=0)
    with pytest.raises(InputError, match="split must be one of"):
        train_run(est, py_run, data=data, split="other", threads=1)


def test_the_estimator_writes_its_run_dir_under_the_run_lock(tmp_path, make_corpus, locked_by_another_process):
    """fit(run_dir=...) takes the run folder's lock: refused, writing nothing, while another process trains there."""
    from attndyn.sentiment import HardmaxSentimentClassifier

    run = tmp_path / "run"
    run.mkdir()
    texts, labels = make_corpus(40)
    with locked_by_another_process(run) as holder:
        est = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, run_dir=str(run))
        with pytest.raises(InputError, match=f"is in use by process {holder.pid}"):
            est.fit(texts, labels)
        assert list(run.iterdir()) == []
    est.fit(texts, labels)  # free again: trains and checkpoints there
    assert (run / "checkpoint.safetensors").is_file() and (run / "config.json").is_file()


def test_open_run_refuses_reviews_that_are_not_the_runs_own(trained):
    # compare-imdb (and the faithfulness cells) take the run's test reviews by their positions in the split: with
    # another --data they compared other reviews, some seen in training, and exited 0
    from attndyn.sentiment._runs import open_run

    _, run, data, other = trained
    with pytest.raises(InputError, match="is not the run's data"):
        open_run(run, data=other)
    assert len(open_run(run, data=data).test_idx) > 0


def test_a_training_split_of_one_class_is_named_as_such(tmp_path, write_csv, capsys):
    # a file with both classes whose training part holds one said "y must hold exactly two classes (e.g. 0 and 1),
    # got [1]": an API name, and a fault of the file it does not have
    data = write_csv(tmp_path / "two.csv", ["lovely film", "dreadful film"], [1, 0], extra=False)
    assert main(["sentiment", "train", "--run", str(tmp_path / "r"), "--data", str(data), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "holds one class only" in err and "(1 of 2 reviews)" in err and not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="'auto' is the CPU only on a machine without CUDA")
def test_a_run_started_with_device_auto_resumes_with_the_device_it_ran_on(trained, tmp_path, capsys, snapshot):
    # --device auto on a machine without CUDA trains on the CPU; resuming with --device cpu was refused as
    # "trained with other settings: --device 'auto' (now 'cpu')". Another kind of device is still refused.
    _, run, data, _ = trained
    mine = tmp_path / "r"
    shutil.copytree(run, mine)
    settings = json.loads((mine / "settings.json").read_text())
    settings["estimator"]["device"] = "auto"
    (mine / "settings.json").write_text(json.dumps(settings))
    before = snapshot(mine)
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--device", "cpu"]) == 0  # finished: unchanged
    assert snapshot(mine) == before
    settings["estimator"]["device"] = "cuda"
    (mine / "settings.json").write_text(json.dumps(settings))
    capsys.readouterr()
    assert main(TRAIN + ["--run", str(mine), "--data", str(data), "--device", "cpu"]) == 2
    assert '--device "cuda" (now "cpu")' in capsys.readouterr().err
