"""Sweep specs: parsing, defaults, cell order, and every kind of bad spec named in one line."""

from __future__ import annotations

import pytest

from attndyn import InputError
from attndyn.cli import main
from attndyn.sweep import load_spec, parse_spec

GOOD = """
experiment = "good-triple"
[grid]
d = [8, 16, 32]
[monte_carlo]
seeds = 4
[fixed]
ensemble = "goe"
"""


def write(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_spec_cells_are_the_product_of_the_grid_times_the_seeds_seed_major(tmp_path):
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.n_cells == 12
    assert spec.fixed == {"ensemble": "goe", "qk": "identity"}
    cells = list(spec.cells())
    assert [c.index for c in cells] == list(range(12))
    assert [(c.seed, c.point["d"]) for c in cells[:4]] == [(0, 8), (0, 16), (0, 32), (1, 8)]
    assert {(c.seed, c.point["d"]) for c in cells} == {(s, d) for s in range(4) for d in (8, 16, 32)}
    assert [c.index for c in spec.cells([5, 2])] == [5, 2]


def test_first_seed_and_a_multi_parameter_grid():
    spec = parse_spec(
        {
            "experiment": "theorem-1.1",
            "grid": {"n": [4, 8], "alpha": [0.5, 1]},
            "monte_carlo": {"seeds": 2, "first_seed": 10},
            "fixed": {"d": 2},
        }
    )
    assert spec.points == [
        {"n": 4, "alpha": 0.5},
        {"n": 4, "alpha": 1.0},
        {"n": 8, "alpha": 0.5},
        {"n": 8, "alpha": 1.0},
    ]
    assert isinstance(spec.points[1]["alpha"], float)  # an integer given for a real parameter is converted
    assert sorted({c.seed for c in spec.cells()}) == [10, 11]


BAD = [
    (
        'experiment = "nope"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n',
        r"experiment = 'nope' is not a registered experiment; choose among good-triple",
    ),
    (
        'experiment = "good-triple"\n[grid]\ndim = [8]\n[monte_carlo]\nseeds = 2\n',
        r"grid.dim: experiment 'good-triple' has no parameter 'dim'; its parameters: d, ensemble, qk",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n[fixed]\nflavour = 1\n',
        r"fixed.flavour: experiment 'good-triple' has no parameter",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = []\n[monte_carlo]\nseeds = 2\n',
        r"grid.d is an empty list; give at least one value",
    ),
    ('experiment = "good-triple"\n[grid]\n[monte_carlo]\nseeds = 2\n', r"\[grid\] is empty"),
    (
        'experiment = "good-triple"\n[grid]\nd = ["8"]\n[monte_carlo]\nseeds = 2\n',
        r"grid.d\[0\] = '8' must be an integer",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8.5]\n[monte_carlo]\nseeds = 2\n',
        r"grid.d\[0\] = 8.5 must be an integer",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [true]\n[monte_carlo]\nseeds = 2\n',
        r"grid.d\[0\] = True must be an integer",
    ),
    ('experiment = "good-triple"\n[grid]\nd = 8\n[monte_carlo]\nseeds = 2\n', r"grid.d = 8 must be a list of values"),
    ('experiment = "good-triple"\n[grid]\nd = [0]\n[monte_carlo]\nseeds = 2\n', r"grid.d\[0\] = 0 must be >= 1"),
    (
        'experiment = "good-triple"\n[grid]\nd = [8, 8]\n[monte_carlo]\nseeds = 2\n',
        r"grid.d = \[8, 8\] repeats a value",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n[fixed]\nensemble = "cauchy"\n',
        r"fixed.ensemble = 'cauchy' is not allowed; choose among 'ginibre'",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n[fixed]\nd = 4\n',
        r"'d' is both in \[grid\] and in \[fixed\]",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 0\n',
        r"monte_carlo.seeds = 0 must be an integer from 1 to 2\*\*53",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = "10"\n',
        r"monte_carlo.seeds = '10' must be an integer",
    ),
    (
        'experiment = "good-triple"\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\nrepeats = 3\n',
        r"unknown key monte_carlo.repeats",
    ),
    ('experiment = "good-triple"\n[grid]\nd = [8]\n', r"the spec has no \[monte_carlo\] table"),
    (
        'experiment = "good-triple"\nworkers = 3\n[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n',
        r"unknown key 'workers' in the spec",
    ),
    ("[grid]\nd = [8]\n[monte_carlo]\nseeds = 2\n", r"the spec names no experiment"),
    (
        'experiment = "theorem-1.1"\n[grid]\nn = [8]\n[monte_carlo]\nseeds = 2\n',
        r"experiment 'theorem-1.1' needs parameter 'd'",
    ),
    ('experiment = "good-triple"\n[grid\nd = [8]\n', r"is not valid TOML"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m[:30] for _, m in BAD])
def test_bad_specs_raise_input_error_naming_the_problem(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        load_spec(write(tmp_path, text))


def test_a_missing_spec_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"SPEC file '.*missing.toml' does not exist"):
        load_spec(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "text, message",
    [BAD[0], BAD[1], BAD[3], BAD[5]],
    ids=["unknown experiment", "unknown parameter", "empty grid", "wrong type"],
)
def test_cli_bad_spec_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    code = main(["sweep", str(write(tmp_path, text)), "--out", str(tmp_path / "out"), "--workers", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "Traceback" not in err
    import re

    assert re.search(message, err)
    assert not (tmp_path / "out").exists()  # nothing was created for a bad spec


def test_cli_needs_out_and_one_of_workers_or_scheduler(tmp_path, capsys):
    spec = write(tmp_path, GOOD)
    assert main(["sweep", str(spec)]) == 2
    assert "give the output folder: attndyn sweep SPEC --out DIR" in capsys.readouterr().err
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["sweep", "summarize"]) == 2
    assert "give the sweep folder" in capsys.readouterr().err
    assert main(["sweep", "summarize", str(tmp_path)]) == 2
    assert "is not a sweep folder (no spec.json)" in capsys.readouterr().err


def test_the_shipped_specs_are_valid():
    from pathlib import Path

    specs = sorted((Path(__file__).parents[2] / "examples" / "sweeps").glob("*.toml"))
    assert {p.stem for p in specs} >= {"ginibre", "ginibre_d128", "theorem_1_1", "table_1", "sentiment_leaders"}
    loaded = {p.stem: load_spec(p) for p in specs}
    assert loaded["ginibre_d128"].n_cells == 20000 and loaded["ginibre"].grid["d"][-2:] == (128, 256)
    assert set(loaded["table_1"].grid["regime"]) == {"polytope", "hyperplanes", "paranormal", "collapse"}


@pytest.mark.parametrize(
    ("old", "new"),
    [("good_triple", "good-triple"), ("theorem_1_1", "theorem-1.1"), ("table_1", "table-1")],
)
def test_an_old_experiment_name_warns_names_the_new_one_and_keeps_the_cells(old, new):
    from attndyn.experiments import EXPERIMENTS, get_experiment

    with pytest.warns(FutureWarning, match=rf"^experiment '{old}' is now called '{new}'; the old name goes"):
        assert get_experiment(old) is EXPERIMENTS[new]
    with pytest.warns(FutureWarning, match=rf"'{old}' is now called '{new}'"):
        assert EXPERIMENTS[old] is EXPERIMENTS[new]
    assert old not in EXPERIMENTS and old not in list(EXPERIMENTS)  # listings show the new names only
    grid = {"good_triple": {"d": [8]}, "theorem_1_1": {"n": [4], "d": [2], "alpha": [1.0]}}.get(
        old, {"regime": ["polytope"]}
    )
    spec = {"grid": grid, "monte_carlo": {"seeds": 2}}
    with pytest.warns(FutureWarning, match=rf"'{old}' is now called '{new}'"):
        renamed = parse_spec({"experiment": old, **spec})
    current = parse_spec({"experiment": new, **spec})
    assert renamed == current and renamed.experiment == new
    assert [current.cell_id(c.seed, c.point) for c in current.cells()] == [
        renamed.cell_id(c.seed, c.point) for c in renamed.cells()
    ]


def test_a_cells_identity_survives_the_rename():
    # the id attndyn 0.1 gave cell (seed 1, d = 16) of good_triple, before the rename
    spec = parse_spec({"experiment": "good-triple", "grid": {"d": [8, 16]}, "monte_carlo": {"seeds": 3}})
    assert spec.cell_id(1, {"d": 16}) == "66ce62af921a127f44d504d37fa52e8a"


def test_a_folder_written_before_the_rename_reads_without_a_warning():
    from attndyn.sweep._spec import FORMAT, spec_from_record

    new = parse_spec({"experiment": "good-triple", "grid": {"d": [8]}, "monte_carlo": {"seeds": 2}})
    old = {**new.record(), "experiment": "good_triple"}
    assert old["format"] == FORMAT
    assert spec_from_record(old) == new  # no FutureWarning: the suite turns one into an error
