"""Fuzz corpus of `attndyn sweep`: every bad input (spec, options, scheduler address, damaged folder, missing
extra) gets one line on standard error starting "error:", exit status 2, no traceback, and nothing under the
working folder created or changed."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from attndyn.cli import main
from attndyn.sweep import parse_spec, run_sweep

GOOD = 'experiment = "good-triple"\n[grid]\nd = [2, 3]\n[monte_carlo]\nseeds = 4\n'


def _toml(grid: str = "d = [2]", mc: str = "seeds = 2", experiment: str = "good-triple", fixed: str = "") -> str:
    return f'experiment = "{experiment}"\n[grid]\n{grid}\n[monte_carlo]\n{mc}\n' + (
        f"[fixed]\n{fixed}\n" if fixed else ""
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A finished sweep (8 cells in 3 parts), copies of it damaged in every way, spec files good and bad."""
    root = tmp_path_factory.mktemp("sweeps")
    spec = parse_spec({"experiment": "good-triple", "grid": {"d": [2, 3]}, "monte_carlo": {"seeds": 4}})
    run_sweep(spec, root / "done", workers=0, chunk=1, batch=3, log=lambda m: None)
    parts = sorted((root / "done" / "rows").glob("part-*.parquet"))
    assert len(parts) == 3

    def damaged(name, change):
        shutil.copytree(root / "done", root / name)
        change(root / name, root / name / "rows" / parts[1].name)

    def flip(folder, part):
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 0x10
        part.write_bytes(bytes(data))

    damaged("flipped", flip)
    damaged("truncated", lambda f, p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]))
    damaged("emptypart", lambda f, p: p.write_bytes(b""))
    damaged("garbage", lambda f, p: p.write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1"))
    damaged("stray", lambda f, p: (f / "rows" / "part-000009.parquet").write_bytes(p.read_bytes()))
    damaged("specarray", lambda f, p: (f / "spec.json").write_text("[]"))
    damaged("speccorrupt", lambda f, p: (f / "spec.json").write_text('{"format": 2, "experiment": "good_tr'))
    damaged("specnull", lambda f, p: (f / "spec.json").write_bytes(b"\x00\xff" * 10))

    def old(folder, part):
        record = json.loads((folder / "spec.json").read_text())
        del record["format"]
        (folder / "spec.json").write_text(json.dumps(record))

    damaged("oldformat", old)
    (root / "empty_dir").mkdir()
    (root / "notempty").mkdir()
    (root / "notempty" / "notes.txt").write_text("mine")
    (root / "afile").write_text("I am a file")
    specs = {
        "good.toml": GOOD,
        "other.toml": _toml("d = [2, 4]", "seeds = 4"),
        "unknown_exp.toml": _toml(experiment="nope"),
        "badsyntax.toml": "experiment = = 1\n",
        "d12000.toml": _toml("d = [12000]"),
        "seed_max.toml": _toml(mc=f"seeds = 1\nfirst_seed = {2**63 - 1}"),
        "seeds_huge.toml": _toml(mc="seeds = 1000000000000000000"),
        "inf_time.toml": _toml('regime = ["polytope"]', experiment="table-1", fixed="time = inf"),
        "step_huge.toml": _toml('regime = ["polytope"]', experiment="table-1", fixed="step = 1e300\ntime = 1e300"),
        "nan_alpha.toml": _toml("alpha = [nan]", experiment="theorem-1.1", fixed="n = 4\nd = 2"),
        "dup.toml": _toml("d = [2, 2]"),
        "empty.toml": "",
        "list_grid.toml": 'experiment = "good-triple"\ngrid = [1, 2]\n[monte_carlo]\nseeds = 2\n',
        "binary.toml": "\x00\x01\x02\xff",
    }
    for name, text in specs.items():
        (root / name).write_text(text, encoding="latin-1" if name == "binary.toml" else "utf-8")
    return root


@pytest.fixture
def files(template, tmp_path, monkeypatch):
    shutil.copytree(template, tmp_path / "w")
    monkeypatch.chdir(tmp_path / "w")
    return tmp_path / "w"


RUN = ["sweep", "good.toml", "--out", "o", "--workers", "0"]
DAMAGED_PART = r"rows/part-000001-[0-9a-f]{16}\.parquet' is damaged \(.*\); delete it and run the sweep again"
CASES = [
    # specs
    (["sweep", "missing.toml", "--out", "o"], r"SPEC file 'missing.toml' does not exist"),
    (["sweep", "unknown_exp.toml", "--out", "o"], r"experiment = 'nope' is not a registered experiment"),
    (["sweep", "badsyntax.toml", "--out", "o"], r"is not valid TOML"),
    (["sweep", "empty.toml", "--out", "o"], r"the spec names no experiment"),
    (["sweep", "binary.toml", "--out", "o"], r"SPEC file 'binary.toml' (could not be read|is not valid TOML)"),
    (["sweep", "list_grid.toml", "--out", "o"], r"grid must be a table"),
    (["sweep", "empty_dir", "--out", "o"], r"SPEC 'empty_dir' is not a file"),
    (["sweep", "d12000.toml", "--out", "o"], r"grid.d\[0\] = 12000 must be <= 1024"),
    (["sweep", "seed_max.toml", "--out", "o"], r"first_seed = 9223372036854775807 with seeds = 1 goes past"),
    (["sweep", "seeds_huge.toml", "--out", "o"], r"seeds = 1000000000000000000 must be an integer from 1 to 2\*\*53"),
    (["sweep", "inf_time.toml", "--out", "o"], r"fixed.time = inf is not a finite number"),
    (["sweep", "step_huge.toml", "--out", "o"], r"fixed.time = 1e\+300 must be <= 10000.0"),
    (["sweep", "nan_alpha.toml", "--out", "o"], r"grid.alpha\[0\] = nan is not a finite number"),
    (["sweep", "dup.toml", "--out", "o"], r"grid.d = \[2, 2\] repeats a value"),
    # options
    (["sweep", "good.toml"], r"give the output folder: attndyn sweep SPEC --out DIR"),
    ([*RUN[:4], "--workers", "-1"], r"workers must be an integer >= 0, got -1"),
    ([*RUN, "--chunk", "0"], r"chunk must be an integer from 1 to 10000, got 0"),
    ([*RUN, "--chunk", "1000000000"], r"chunk must be an integer from 1 to 10000, got 1000000000"),
    ([*RUN, "--batch", "0"], r"batch must be an integer >= 1, got 0"),
    ([*RUN, "--max-cells", "-1"], r"max_cells must be an integer >= 0, got -1"),
    ([*RUN, "--workers", "many"], r"Invalid value for '--workers'"),
    ([*RUN, "--bogus"], r"No such option: --bogus"),
    (["sweep", "good.toml", "extra", "--out", "o"], r"unexpected extra argument\(s\) \(extra\)"),
    ([*RUN[:4], "--workers", "2", "--scheduler", "tcp://x:1"], r"give --workers N or --scheduler ADDRESS, not both"),
    # scheduler addresses: refused before the folder is created
    ([*RUN[:4], "--scheduler", "not an address"], r"scheduler = 'not an address' is not the address of a dask"),
    ([*RUN[:4], "--scheduler", ""], r"scheduler = '' is not the address of a dask scheduler"),
    ([*RUN[:4], "--scheduler", "foo://1.2.3.4:5"], r"scheduler = 'foo://1.2.3.4:5' is not the address"),
    ([*RUN[:4], "--scheduler", "tcp://1.2.3.4:99999"], r"scheduler = 'tcp://1.2.3.4:99999' is not the address"),
    ([*RUN[:4], "--scheduler", "tcp://1.2.3.4"], r"scheduler = 'tcp://1.2.3.4' is not the address"),
    (
        [*RUN[:4], "--scheduler", "inproc://x"],
        r"'inproc://x': an inproc:// address names a scheduler inside one process",
    ),
    ([*RUN[:4], "--scheduler", "tls://127.0.0.1:1"], r"a tls:// scheduler needs certificates .* pass client="),
    ([*RUN[:4], "--scheduler", "ucx://127.0.0.1:1"], r"a ucx:// scheduler needs the UCX transport"),
    ([*RUN[:4], "--scheduler", "tcp://127.0.0.1:1"], r"could not reach the dask scheduler at .* check the address"),
    # folders
    (["sweep", "good.toml", "--out", "afile", "--workers", "0"], r"--out 'afile' is a file; give a folder"),
    (["sweep", "good.toml", "--out", "notempty", "--workers", "0"], r"is a folder that is not empty and holds no"),
    (["sweep", "other.toml", "--out", "done", "--workers", "0"], r"grid.d: \[2, 3\] -> \[2, 4\]"),
    (["sweep", "good.toml", "--out", "flipped", "--workers", "0"], DAMAGED_PART),
    (["sweep", "good.toml", "--out", "truncated", "--workers", "0"], DAMAGED_PART),
    (["sweep", "good.toml", "--out", "garbage", "--workers", "0"], DAMAGED_PART),
    (["sweep", "good.toml", "--out", "emptypart", "--workers", "0"], DAMAGED_PART),
    (["sweep", "good.toml", "--out", "stray", "--workers", "0"], r"part-000009.parquet' is not a part written by"),
    (["sweep", "good.toml", "--out", "specarray", "--workers", "0"], r"does not hold a sweep spec \(got \[\]\)"),
    (["sweep", "good.toml", "--out", "speccorrupt", "--workers", "0"], r"spec.json' is damaged \(Unterminated"),
    (["sweep", "good.toml", "--out", "oldformat", "--workers", "0"], r"is of sweep format 1, not 2"),
    # summaries
    (["sweep", "summarize"], r"give the sweep folder: attndyn sweep summarize DIR"),
    (["sweep", "summarize", "missing-dir"], r"'missing-dir' is not a sweep folder \(no spec.json\)"),
    (["sweep", "summarize", "empty_dir"], r"'empty_dir' is not a sweep folder"),
    (["sweep", "summarize", "afile"], r"'afile' is not a sweep folder"),
    (["sweep", "summarize", "flipped"], DAMAGED_PART),
    (["sweep", "summarize", "truncated"], DAMAGED_PART),
    (["sweep", "summarize", "emptypart"], DAMAGED_PART),
    (["sweep", "summarize", "garbage"], DAMAGED_PART),
    (["sweep", "summarize", "stray"], r"is not a part written by attndyn sweep; move it out of"),
    (["sweep", "summarize", "specarray"], r"does not hold a sweep spec"),
    (["sweep", "summarize", "speccorrupt"], r"spec.json' is damaged"),
    (["sweep", "summarize", "specnull"], r"spec.json' is damaged"),
    (["sweep", "summarize", "oldformat"], r"is of sweep format 1, not 2"),
    (["sweep", "summarize", "done", "more"], r"unexpected extra argument\(s\) \(more\)"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2_and_changes_nothing(refused, files, argv, message):
    refused(files, argv, message)


def test_the_corpus_is_large():
    assert len(CASES) >= 40


@pytest.mark.parametrize("module", ["pyarrow", "pandas"])
@pytest.mark.parametrize("argv", [RUN, ["sweep", "summarize", "done"]], ids=["run", "summarize"])
def test_without_the_sweep_extra_one_line_names_the_install(refused, files, monkeypatch, module, argv):
    monkeypatch.setitem(sys.modules, module, None)  # `import pyarrow` now raises ImportError
    refused(files, argv, rf'sweeps need the sweep extra \({module} missing\): pip install -e "\.\[sweep\]"')


def test_without_dask_a_sweep_on_workers_names_the_install(refused, files, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    refused(files, [*RUN[:4], "--workers", "1"], r"\(distributed missing\): pip install")


def test_more_workers_than_cores_are_capped_in_one_line(capsys, files):
    from attndyn.sweep._runner import cores

    assert main(["sweep", "good.toml", "--out", "done", "--workers", "1000", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"--workers 1000 is more than the {cores()} cores here; using {cores()} (--scheduler ADDRESS" in err


@pytest.mark.parametrize(
    "argv, usage, shows",
    [
        (["sweep", "--help"], " sweep SPEC --out DIR [OPTIONS] | summarize DIR\n", "summarize"),
        (["sweep", "summarize", "--help"], " sweep summarize [OPTIONS] [DIR]\n", "A sweep folder"),
        (["sweep", "good.toml", "--help"], " sweep run [OPTIONS] {SPEC}\n", "--scheduler"),
        (["sweep", "run", "--help"], " sweep run [OPTIONS] {SPEC}\n", "--max-cells"),
    ],
)
def test_help_has_its_own_usage_line_and_keeps_bracketed_text(capsys, monkeypatch, argv, usage, shows):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(argv) == 0
    out = "\n".join(line.strip() for line in capsys.readouterr().out.splitlines())
    (line,) = [line for line in out.splitlines() if line.startswith("Usage: ")]
    assert line.endswith(usage.rstrip("\n")) and shows in out
    assert "[[" not in out and "{SPEC | summarize}" not in out and "()" not in out and "[]" not in out
    if argv == ["sweep", "--help"]:
        assert 'pip install -e ".[sweep]"' in out  # not eaten as markup
