"""`attndyn pretrained analyze` on a tiny saved model folder (--model PATH): JSON, figures, one-line errors."""

from __future__ import annotations

import json

import pytest

from attndyn.cli import main

TEXT = "The plot was dull, but the acting was wonderful."


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_json(capsys, saved_bert):
    code, out, err = run(capsys, "pretrained", "analyze", TEXT, "--model", saved_bert, "--json", "--head", "1,2")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["model"] == "tiny-bert" and rec["layers"] == 2 and rec["heads"] == 3 and rec["width"] == 12
    assert rec["tokens"] == [
        "[CLS]",
        "the",
        "plot",
        "was",
        "dull",
        ",",
        "but",
        "the",
        "acting",
        "was",
        "wonderful",
        ".",
        "[SEP]",
    ]
    assert set(rec) >= {"leaders", "clusters", "spectra", "idealized"}
    assert (rec["idealized"]["layer"], rec["idealized"]["head"]) == (1, 2)
    assert len(rec["clusters"]["clusters"]) == 3 and rec["clusters"]["tol"] == 0.5


def test_analyze_text_and_out(capsys, saved_bert, tmp_path):
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys,
        "pretrained",
        "analyze",
        TEXT,
        "--model",
        saved_bert,
        "--out",
        out_dir,
        "--no-idealized",
        "--cluster-tol",
        "0.3",
    )
    assert code == 0, err
    assert "leaders" in out and "clusters at tol 0.3 against depth" in out and "idealized" not in out
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == [
        "analysis.json",
        "attention_layers.png",
        "clusters_depth.png",
        "config.json",
        "eigenvalues_heads.png",
        "eigenvalues_layers.png",
        "leaders.png",
    ]
    assert json.loads((out_dir / "config.json").read_text())["cluster_tol"] == 0.3
    assert (out_dir / "leaders.png").read_bytes()[:4] == b"\x89PNG"


def test_analyze_bad_input_is_one_line_exit_2(capsys, saved_bert, tmp_path):
    cases = [
        (("--model", tmp_path / "nowhere"), "is not a model folder (no config.json)"),
        (("--model", saved_bert, "--head", "x"), "--head 'x': give LAYER,HEAD as two integers"),
        (("--model", saved_bert, "--head", "9,0"), "layer=9 is out of range"),
        (("--model", saved_bert, "--cluster-tol", "5"), "--cluster-tol=5.0 is a distance between unit vectors"),
        (("--model", saved_bert, "--ginibre-samples", "-1"), "--ginibre-samples -1: give a non-negative integer"),
    ]
    for args, msg in cases:
        code, _, err = run(capsys, "pretrained", "analyze", TEXT, *args)
        assert code == 2 and msg in err and err.startswith("error: ") and err.count("\n") == 1, (args, err)
    code, _, err = run(capsys, "pretrained", "analyze", "   ", "--model", saved_bert)
    assert code == 2 and "TEXT must be a non-empty string" in err


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_cluster_tol_is_named_by_its_flag_before_the_model_is_loaded(capsys, tmp_path, value):
    """New-user pass: `--cluster-tol 0` said "tol=0.0 is a distance ...", a name the command line does not have."""
    code, _, err = run(capsys, "pretrained", "analyze", TEXT, "--model", tmp_path / "nowhere", "--cluster-tol", value)
    assert code == 2 and err == (
        f"error: --cluster-tol={float(value)!r} is a distance between unit vectors; choose 0 < --cluster-tol <= 2\n"
    )
    from attndyn import InputError
    from attndyn.pretrained import analyze

    with pytest.raises(
        InputError, match=r"^cluster_tol=0.0 is a distance between unit vectors; choose 0 < cluster_tol"
    ):
        analyze(TEXT, tmp_path / "nowhere", cluster_tol=0)  # the library names its parameter


def test_ginibre_samples_with_no_spectra_is_refused(capsys, tmp_path):
    """New-user pass: `--no-spectra --ginibre-samples 3` was accepted and the samples silently skipped."""
    nowhere = tmp_path / "nowhere"  # refused before the model is read
    code, _, err = run(
        capsys, "pretrained", "analyze", TEXT, "--model", nowhere, "--no-spectra", "--ginibre-samples", 3
    )
    assert code == 2 and err == (
        "error: --ginibre-samples 3 samples the baseline of the value spectra, and --no-spectra skips the spectra; "
        "drop one of the two\n"
    )
    for args in (["--no-spectra"], ["--no-spectra", "--ginibre-samples", "0"], ["--ginibre-samples", "3"]):
        code, _, err = run(capsys, "pretrained", "analyze", TEXT, "--model", nowhere, *args)
        assert code == 2 and "is not a model folder" in err, (args, err)  # no conflict: on to the model


def test_compare_imdb_needs_a_run_folder(capsys, tmp_path):
    code, _, err = run(capsys, "pretrained", "compare-imdb", "--sentiment-run", tmp_path)
    assert code == 2 and "has no data.json" in err
