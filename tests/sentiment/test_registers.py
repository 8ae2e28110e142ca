"""Registers: R tokens r_k = L (cos t_k u + sin t_k e) appended to every review, the words shifted by c e
(attndyn.sentiment._model's docstring), placed on the word vectors of a trained layers=0 stage."""

import json
import math

import numpy as np
import pytest
import torch

import attndyn
from attndyn import InputError
from attndyn.sentiment import HardmaxSentimentClassifier, attribute, explain
from attndyn.sentiment._attribution import cluster_flow, contributions, propagation_matrix, relative_residual
from attndyn.sentiment._explain import figure9_data
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer

TEXTS = ["great fun film", "awful boring mess", "great acting", "boring awful plot", "fine but dull", "lovely story"]
LABELS = [1, 0, 1, 0, 0, 1]
SMALL = {"d": 3, "epochs": 2, "min_freq": 1, "register_shift": 2.0, "register_length": 4.0}


def _placed(R=5, d=3, vocab=12, shift=2.0, length=4.0, seed=0, side=1):
    """A random model with its registers placed, and its word vectors before placement."""
    m = SentimentTransformer(
        SentimentConfig(vocab_size=vocab, d=d, registers=R, register_shift=shift, register_length=length),
        generator=torch.Generator().manual_seed(seed),
    )
    before = m.embed.weight.detach().clone()
    m.place_registers(seed=seed, side=side)
    return m, before


@pytest.fixture(scope="module")
def pair():
    """The layers=0 control and the register model of the same seed and settings."""
    control = HardmaxSentimentClassifier(layers=0, random_state=0, **SMALL).fit(TEXTS * 8, LABELS * 8)
    reg = HardmaxSentimentClassifier(registers=4, random_state=0, **SMALL).fit(TEXTS * 8, LABELS * 8)
    return control, reg


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"registers": -1}, "registers must be an integer >= 0 (0: none)"),
        ({"registers": 2, "d": 1}, "needs d >= 2"),
        ({"registers": 2, "layers": 0}, "layers >= 1"),
        ({"registers": 2, "register_shift": 0.0}, "register_shift"),
        ({"registers": 2, "register_length": float("nan")}, "register_length"),
        ({"registers": 2, "register_length": 1e39}, "register_length"),  # registers of inf: refused before training
        ({"registers": 2, "register_shift": 1e20}, "register_shift"),
    ],
)
def test_config_refuses_registers_it_cannot_place(changes, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        SentimentConfig(vocab_size=5, **{"d": 2, **changes})


def test_placement_keeps_every_word_value_and_sets_the_levels():
    m, before = _placed(R=5)
    v = m.decoder.weight.detach().double()[0]
    after = m.embed.weight.detach()
    shift = (after[1:] - before[1:]).double()
    assert torch.allclose(shift, shift[:1].expand_as(shift), atol=1e-6)  # one vector c e for every word
    assert float(shift[0].norm()) == pytest.approx(2.0, rel=1e-6) and abs(float(shift[0] @ v)) < 1e-5
    assert torch.equal(after[0], before[0])  # padding stays zero
    assert torch.allclose(after.double()[1:] @ v, before.double()[1:] @ v, atol=1e-5)  # values unchanged
    r = m.registers.double()
    t = torch.arange(1, 6, dtype=torch.float64) * math.pi / 6
    assert torch.allclose(r.norm(dim=1), torch.full((5,), 4.0, dtype=torch.float64), rtol=1e-6)
    assert torch.allclose(r @ v / v.norm(), 4.0 * torch.cos(t), atol=1e-5)  # graded levels of value


def test_no_registers_no_buffer_and_placing_none_is_refused():
    m = SentimentTransformer(SentimentConfig(vocab_size=5, d=2))
    assert "registers" not in m.state_dict()  # a model without registers saves what it always saved
    with pytest.raises(InputError, match="no registers"):
        m.place_registers()


def test_placing_registers_twice_is_refused_and_moves_nothing():
    m, _ = _placed()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(InputError, match="already placed"):
        m.place_registers(seed=1)
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hardmax_inference_is_the_engine_on_words_and_registers(seed):
    """Differential: the model's two hardmax paths against attndyn.hardmax run by hand on the words with the
    registers appended, the decoder reading the words' final mean."""
    m, _ = _placed(R=4, d=3, vocab=10, seed=seed)
    g = np.random.default_rng(seed)
    ids = torch.from_numpy(g.integers(1, 10, size=(5, 7)))
    mask = torch.from_numpy(g.random((5, 7)) < 0.8)
    mask[:, 0] = True
    fast = m.hardmax_logits(ids, mask)
    full, traj = m.hardmax_run(ids, mask, every=1, follow=True)
    assert traj.ys.shape[2] == 7 + 4
    z = m.embed.weight.detach().double()[ids]
    regs = m.registers.double()[None].expand(5, 4, 3)
    zs = torch.cat([z, regs], 1)
    ms = torch.cat([mask, torch.ones(5, 4, dtype=torch.bool)], 1)
    out = attndyn.hardmax(zs, alpha=float(m.alpha.detach()), layers=8, mask=ms, check_hypotheses=False)
    zk = out.ys[-1][:, :7]
    w = mask.double()[..., None]
    v, b = m.decoder.weight.detach().double()[0], float(m.decoder.bias.detach()[0])
    naive = ((zk * w).sum(1) / w.sum(1)) @ v + b
    assert torch.allclose(full, naive, rtol=1e-12, atol=1e-12)
    assert torch.allclose(fast, naive, rtol=1e-12, atol=1e-12)


def test_exact_attributions_credit_the_levels_to_the_words_that_joined_them():
    m, _ = _placed(R=6, d=3, vocab=12, seed=3)
    g = np.random.default_rng(3)
    ids = torch.from_numpy(g.integers(1, 12, size=(4, 9)))
    mask = torch.from_numpy(g.random((4, 9)) < 0.8)
    mask[:, 0] = True
    run = contributions(m, ids, mask)
    assert run.a.shape == (4, 9) and bool((run.a[~mask] == 0).all())
    assert float(relative_residual(run.a, run.bias, run.H).max()) < 1e-12
    assert torch.allclose(run.u.sum(1), torch.ones(4, dtype=torch.float64))  # words and registers share the mean
    v = m.decoder.weight.detach().double()[0]
    for b in range(4):  # differential: the propagation matrix M over the real tokens, words first
        M = propagation_matrix(run.traj, b)
        real = np.flatnonzero(mask[b].numpy())
        x = (m.registers.double() @ v).numpy()
        via = M[: len(real), len(real) :] @ x / len(real)
        own = run.u[b, real].numpy() * (run.traj.ys[0, b, real] @ v).numpy()
        np.testing.assert_allclose(run.a[b, real].numpy(), own + via, rtol=1e-10, atol=1e-13)


def test_fit_is_the_control_then_the_registers(pair):
    control, reg = pair
    assert reg.model_.config.layers == 8 and reg.model_.config.registers == 4
    untimed = [[{k: v for k, v in r.items() if k != "seconds"} for r in e.history_] for e in (control, reg)]
    assert untimed[0] == untimed[1] and reg.best_epoch_ == control.best_epoch_  # the first stage
    diff = (reg.model_.embed.weight - control.model_.embed.weight).detach()[1:]
    assert torch.allclose(diff, diff[:1].expand_as(diff), atol=1e-6)  # the words moved by one vector c e
    assert torch.equal(reg.model_.decoder.weight, control.model_.decoder.weight)


def test_a_register_model_attributes_exactly_saves_and_loads(pair, tmp_path):
    _, reg = pair
    att = attribute(reg, "great fun but a boring awful mess")
    assert len(att.via_registers) == len(att.words) == 5  # "but" and "a" are stop words
    assert math.fsum(att.contributions) + att.bias == pytest.approx(att.decision_value, abs=1e-12)
    assert att.residual < 1e-12 and "via_registers" in att.to_dict()
    loaded = HardmaxSentimentClassifier.load(reg.save(tmp_path / "m"))
    assert loaded.model_.config.registers == 4
    assert np.array_equal(loaded.decision_function(TEXTS), reg.decision_function(TEXTS))


def test_cluster_flow_of_a_register_model_sums_to_the_clusters_and_to_the_words(pair):
    """The cluster x word flow of a register model: rows sum to explain's clusters (a register's group included),
    columns to attribute's exact word attributions (own value plus the level credited), the whole to H - b."""
    control, reg = pair
    assert "via_registers" not in attribute(control, "great fun").to_dict()  # the paper model's record is unchanged
    assert "registers" not in figure9_data(control, "great fun")  # nor Figure 9's data
    texts = ["great fun film", "awful boring mess and a dull plot", "great acting but a boring plot", *TEXTS]
    for text in texts:
        e, att, f = explain(reg, text), attribute(reg, text), cluster_flow(reg, text)
        np.testing.assert_allclose(f.flow.sum(axis=1), [c.contribution for c in e.clusters], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(f.flow.sum(axis=0), att.contributions, rtol=1e-10, atol=1e-12)
        assert f.flow.sum() + att.bias == pytest.approx(e.decision_value, rel=1e-10, abs=1e-12)
        assert [c.leaders for c in e.clusters] == f.leaders


@pytest.mark.parametrize("seed, d, R", [(1, 2, 5), (2, 3, 7), (3, 2, 6)])
def test_cluster_flow_of_register_models_is_exact_for_every_seed(seed, d, R):
    """F_gw = (1/n) sum_{i in g} M_iw <v, z_w^0> over the words' columns, plus word w's register credit
    (1/n) sum_k M_{w,n+k} <v, r_k> in its own cluster's row: columns = attribute's words to 1e-10 relative, rows =
    explain's clusters, and the credit is not zero (without it the columns would miss the registers' levels)."""
    reg = HardmaxSentimentClassifier(registers=R, random_state=seed, **{**SMALL, "d": d}).fit(TEXTS * 8, LABELS * 8)
    credited = 0.0
    for text in ["great fun film but a boring plot", "awful awful mess, dull", "lovely story", *TEXTS]:
        e, att, f = explain(reg, text), attribute(reg, text), cluster_flow(reg, text)
        assert f.flow.shape == (len(e.clusters), len(att.words))
        np.testing.assert_allclose(f.flow.sum(axis=0), att.contributions, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(f.flow.sum(axis=1), [c.contribution for c in e.clusters], rtol=1e-10, atol=1e-12)
        assert sorted(i for p in f.positions for i in p) == list(range(len(att.words)))  # every word in one row
        credited += float(np.abs(att.via_registers).sum())
    assert credited > 1e-3
    with pytest.raises(InputError, match="the text has no word the model knows"):
        cluster_flow(reg, "qwerty asdf")


def test_figure9_draws_the_words_and_the_registers_of_a_planar_register_model(tmp_path):
    """Figure 9 of a d = 2 register model: the words then the R registers (named as explain names them), at
    every layer; the leaders flag both; the picture has a register marker and is written."""
    from attndyn.plotting import draw_figure9
    from attndyn.plotting._save import save_figure
    from attndyn.sentiment._explain import register_names

    reg = HardmaxSentimentClassifier(registers=5, random_state=0, **{**SMALL, "d": 2}).fit(TEXTS * 8, LABELS * 8)
    data = figure9_data(reg, "great fun film but a boring plot")
    n = len(reg.known_words(["great fun film but a boring plot"])[0])
    assert data["registers"] == 5 and data["words"][n:] == register_names(reg.model_)
    tokens = np.asarray(data["tokens"])
    assert tokens.shape == (reg.model_.config.layers + 1, n + 5, 2)
    assert np.asarray(data["leaders"]).shape == tokens.shape[:2]
    r = reg.model_.registers.double().numpy()
    np.testing.assert_allclose(tokens[:, n:], np.broadcast_to(r, tokens[:, n:].shape), rtol=1e-6)  # they stay
    assert np.asarray(data["leaders"])[:, n:].all()  # each register follows itself only
    json.dumps(data)
    fig = draw_figure9(data)
    assert "register" in fig.axes[0].get_legend_handles_labels()[1]
    assert save_figure(fig, tmp_path / "f9", formats=("png",))[0].read_bytes()[:4] == b"\x89PNG"


def test_figure9_labels_the_words_by_the_register_they_joined_as_explain_groups_them():
    """At the last layer each label of a d = 2 register model's Figure 9 is one of explain's groups: its words,
    then its register, short ("boring, fun → r4 (-0.94)"); a register no word joined gets no label."""
    from attndyn.plotting._sentiment import _labels, _register_tag

    reg = HardmaxSentimentClassifier(registers=5, random_state=0, **{**SMALL, "d": 2}).fit(TEXTS * 8, LABELS * 8)
    text = "great fun film but a boring plot"
    data, e = figure9_data(reg, text), explain(reg, text)
    labels = [t for _, t in _labels(data, len(data["tokens"]) - 1)]
    expected = [", ".join(sorted(c.words)) + " → " + _register_tag(c.leaders[0]) for c in e.clusters]
    assert all(c.leaders[0].startswith("<register") and len(c.words) <= 3 for c in e.clusters)  # as the labels cut
    assert sorted(labels) == sorted(expected)


def _purple(path) -> int:
    """Pixels of a PNG near the registers' colour (Figure 9's diamonds)."""
    from PIL import Image

    from attndyn.plotting._sentiment import REGISTER

    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=float)
    target = np.array([int(REGISTER[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    return int((np.abs(rgb - target).max(axis=-1) < 40).sum())


def test_explain_draws_figure_9_of_a_planar_register_run(tmp_path, make_corpus, write_csv, capsys):
    """`attndyn sentiment explain --model RUN --figure F.png --gif G.gif --words-figure W.png TEXT` on a d = 2
    register run: the pictures hold the registers' diamonds; the paper model's Figure 9 has none."""
    from PIL import Image

    from attndyn.cli import main

    texts, labels = make_corpus(120)
    data = write_csv(tmp_path / "imdb.csv.gz", texts, labels, gz=True)
    run = tmp_path / "run"
    argv = ["sentiment", "train", "--run", str(run), "--data", str(data), "--d", "2", "--epochs", "2"]
    flags = ["--min-freq", "1", "--registers", "5", "--register-shift", "2", "--no-progress", "--threads", "1"]
    assert main([*argv, *flags]) == 0
    capsys.readouterr()
    f, g, w = tmp_path / "f.png", tmp_path / "f.gif", tmp_path / "w.png"
    explain_argv = ["sentiment", "explain", "--model", str(run), "--json", "--figure", str(f), "--gif", str(g)]
    assert main([*explain_argv, "--words-figure", str(w), texts[1]]) == 0
    assert "via_registers" in json.loads(capsys.readouterr().out)["attributions"]
    for path in (f, w):
        with Image.open(path) as im:
            assert im.format == "PNG" and im.size[0] > 2 * im.size[1] > 0  # five panels side by side
        assert _purple(path) > 50
    with Image.open(g) as im:
        assert im.format == "GIF" and im.n_frames == 9  # layers 0..8
    est = HardmaxSentimentClassifier.load(run)
    control = HardmaxSentimentClassifier(layers=0, random_state=0, **{**SMALL, "d": 2}).fit(TEXTS * 8, LABELS * 8)
    from attndyn.plotting import _sentiment as figs

    assert est.model_.config.d == 2 and est.model_.config.registers == 5
    assert _purple(figs.write(figs.draw_figure9(figure9_data(control, "great fun")), tmp_path / "plain.png")) == 0


def test_the_explorer_draws_a_register_model_as_figure_9_does(pair, tmp_path):
    """The explorer's sentiment page: the words as words, the registers as their own glyph (legend "register"),
    the labels as Figure 9's (no register alone); a plain model's legend is unchanged."""
    pytest.importorskip("panel")
    from attndyn.explore._pages.sentiment import SentimentPage

    reg = HardmaxSentimentClassifier(registers=5, random_state=0, **{**SMALL, "d": 2}).fit(TEXTS * 8, LABELS * 8)
    page = SentimentPage(str(reg.save(tmp_path / "m")))
    page.text.value = "great fun film but a boring plot"
    page.explain()
    n = len(reg.known_words([page.text.value])[0])
    assert len(page.words.data["x"]) == n and len(page.registers.data["x"]) == 5
    assert [item.label.value for item in page.plot.legend[0].items][-1] == "register"
    assert page.labels.data["text"] and all(" → r" in t for t in page.labels.data["text"])  # words on registers


def test_explain_groups_the_words_by_the_leader_or_register_they_joined(pair):
    _, reg = pair
    text = "great fun film but a boring awful mess"
    e = explain(reg, text)
    words = reg.known_words([text])[0]
    assert sorted(w for c in e.clusters for w in c.words) == sorted(words)  # every word in one group
    assert math.fsum(c.contribution for c in e.clusters) + e.bias == pytest.approx(e.decision_value, abs=1e-12)
    names = {f"<register {k}: " for k in range(1, 5)}
    assert all(x in words or x[: x.index(":") + 2] in names for x in e.leaders)
    values = reg.model_.registers.double() @ reg.model_.decoder.weight.detach().double()[0]
    for c in e.clusters:  # a register's group votes with that register's value
        if c.leaders[0].startswith("<register"):
            k = int(c.leaders[0].split()[1].rstrip(":")) - 1
            assert c.contribution == pytest.approx(c.size * float(values[k]) / len(words), rel=1e-2, abs=1e-6)


def test_the_command_line_trains_evaluates_and_predicts_with_registers(tmp_path, make_corpus, write_csv, capsys):
    from attndyn.cli import main

    texts, labels = make_corpus(120)
    data = write_csv(tmp_path / "imdb.csv.gz", texts, labels, gz=True)
    run = tmp_path / "run"
    argv = ["sentiment", "train", "--run", str(run), "--data", str(data), "--epochs", "2", "--min-freq", "1"]
    assert main([*argv, "--registers", "5", "--register-shift", "2", "--no-progress", "--threads", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] > 0  # the test report
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["registers"] == 5 and config["estimator"]["register_shift"] == 2.0
    assert main(["sentiment", "evaluate", str(run), "--json", "--no-figures"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert 0 < rep["clusters_per_token_mean"] <= 1 and 0 <= rep["hardmax_acc"] <= 1
    assert main(["sentiment", "predict", "--model", str(run), "--json", "a wonderful film"]) == 0
    assert json.loads(capsys.readouterr().out)["label"] in ("positive", "negative")
    assert main(["sentiment", "explain", "--model", str(run), "--json", "a wonderful film"]) == 0
    assert "via_registers" in json.loads(capsys.readouterr().out)["attributions"]
    from attndyn.experiments._cells import _sentiment_run, sentiment_leaders
    from attndyn.sentiment._explain import trajectory_of
    from attndyn.sentiment._model import word_leaders

    est, reviews, order = _sentiment_run(str(run), str(data))
    for k in range(5):  # the cell counts leader words, not the registers explain also names as leaders
        words, traj, _, ids = trajectory_of(est, reviews.texts[int(order[k])])
        lead = word_leaders(traj, est.model_.token_ids(ids))[-1, 0, : len(words)].numpy()
        expected = len({words[i] for i in np.flatnonzero(lead)})
        assert sentiment_leaders(k, run=str(run), data=str(data))["leaders"] == expected
    assert main([*argv, "--registers", "-1", "--overwrite"]) == 2
    assert "--registers" in capsys.readouterr().err


def test_faithfulness_measures_a_register_model_with_every_method(pair):
    """The exact attribution of a register model (levels credited to the words) is measured like the paper
    model's: every method runs on the words (registers are not scored), and the exact residual stays at rounding."""
    pytest.importorskip("captum")
    from attndyn.sentiment._baselines import MethodSettings, dynamics_scores
    from attndyn.sentiment._faithfulness import METHODS, StudySettings, faithfulness

    _, reg = pair
    texts = ["great fun film", "awful boring mess and a dull plot", "great acting but a boring plot", "lovely story"]
    s = StudySettings(
        methods=METHODS, baselines=MethodSettings(seed=0, ig_steps=4, kernelshap_samples=20), sanity_reviews=2
    )
    res = faithfulness(reg, texts, s)
    assert res["exactness"]["max_relative_residual"] < 1e-12 and res["exactness"]["reviews_over_tolerance"] == 0
    assert set(res["methods"]) == set(METHODS) and res["reviews"]["n"] == len(texts)
    data = reg.encode(texts)
    run = contributions(reg.model_, data.ids, data.mask)
    dyn = dynamics_scores(run.traj, run.a, MethodSettings())
    assert all(x.shape == data.ids.shape for x in dyn.values())  # the words only, not the 4 registers
    assert bool((dyn["followers"][~data.mask] == 0).all()) and bool((dyn["rollout"][~data.mask] == 0).all())
    rollout = dyn["rollout"].sum(1)  # the words' share of the rollout mean: the registers hold the rest
    assert bool(((rollout > 0) & (rollout <= 1 + 1e-12)).all())


def test_a_finished_register_run_without_its_test_report_trains_again_to_the_same_bytes(
    tmp_path, make_corpus, write_csv, capsys
):
    """weights.safetensors of a register run is the second stage's model; the checkpoint carries the first stage's
    best weights, so a rerun after test.json was lost (a kill between saving and scoring) resumes the first stage
    and gives the same model and report, where it used to load the second stage's weights into the first."""
    from attndyn.cli import main

    texts, labels = make_corpus(120)
    data = write_csv(tmp_path / "imdb.csv.gz", texts, labels, gz=True)
    run = tmp_path / "run"
    argv = ["sentiment", "train", "--run", str(run), "--data", str(data), "--epochs", "2", "--min-freq", "1"]
    argv += ["--registers", "5", "--register-shift", "2", "--no-progress", "--threads", "1"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    weights = (run / "weights.safetensors").read_bytes()
    (run / "test.json").unlink()
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert (run / "weights.safetensors").read_bytes() == weights
    assert {k: v for k, v in again.items() if k not in ("train_seconds", "hardmax_seconds")} == {
        k: v for k, v in first.items() if k not in ("train_seconds", "hardmax_seconds")
    }


def test_an_unfinished_register_run_is_refused_as_unfinished_not_as_damaged(tmp_path):
    """A run folder that fit() checkpointed but nobody sealed holds the first stage's weights (no registers):
    loading it says the training did not reach its end, as for any model, rather than naming a missing tensor."""
    from attndyn.sentiment._inference import load_model

    HardmaxSentimentClassifier(registers=4, random_state=0, run_dir=tmp_path, **SMALL).fit(TEXTS * 8, LABELS * 8)
    with pytest.raises(InputError, match="stopped before its end") as info:
        load_model(tmp_path)
    assert "registers" not in str(info.value)


def test_the_share_of_leaders_already_leading_at_layer_0_is_none_without_leader_words(pair):
    """Words that all join registers leave no leader word, so the share of leaders already leading at layer 0 is
    undefined (None, '-' in the CLI), where it was reported as 0.000; the control's share is over its leaders."""
    from attndyn.sentiment._evaluate import hardmax_statistics

    control, reg = pair
    stats = hardmax_statistics(reg.model_, reg.encode(TEXTS, LABELS), reg.vocab_.words)
    assert stats["leaders_max"] == 0 and stats["leaders_at_layer0_fraction"] is None
    stats = hardmax_statistics(control.model_, control.encode(TEXTS, LABELS), control.vocab_.words)
    assert stats["leaders_min"] >= 1 and 0 <= stats["leaders_at_layer0_fraction"] <= 1


def test_the_decision_scale_is_the_log_loss_minimiser_in_0_1():
    """Temperature scaling: labels drawn from sigmoid(0.4 H) give back s near 0.4; labels that agree with H
    perfectly ask for no shrinking (s = 1); no data, s = 1."""
    from attndyn.sentiment._train import fit_decision_scale

    g = torch.Generator().manual_seed(0)
    H = 6 * torch.randn(20000, generator=g, dtype=torch.float64)
    y = (torch.rand(20000, generator=g, dtype=torch.float64) < torch.sigmoid(0.4 * H)).double()
    assert fit_decision_scale(H, y) == pytest.approx(0.4, abs=0.03)
    assert fit_decision_scale(H, (H > 0).double()) == 1.0
    assert fit_decision_scale(H[:0], y[:0]) == 1.0


def test_a_register_model_is_scaled_to_its_validation_log_loss_and_predicts_as_before(pair):
    """The second stage scales the decoder by the fitted temperature: the decisions' signs, and so every
    prediction, are those of the unscaled model, the validation log loss is not higher, and the attributions
    stay exact (sum of contributions + bias = H)."""
    _, reg = pair
    s = reg.decision_scale_
    assert 0 < s <= 1
    data = reg.encode(TEXTS * 8, LABELS * 8)
    from attndyn.sentiment._train import predict_logits

    H = predict_logits(reg.model_, data, hardmax=True)
    unscaled = H / s
    assert torch.equal(H > 0, unscaled > 0)
    sign = 2 * data.labels.double() - 1
    loss = torch.nn.functional.softplus
    assert float(loss(-sign * H).mean()) <= float(loss(-sign * unscaled).mean()) + 1e-12
    a = attribute(reg, "great acting but a boring plot")
    assert sum(a.contributions) + a.bias == pytest.approx(a.decision_value, abs=1e-9)
    plain = HardmaxSentimentClassifier(layers=0, random_state=0, **SMALL).fit(TEXTS * 8, LABELS * 8)
    assert plain.decision_scale_ == 1.0


def test_the_registers_side_is_the_one_the_validation_reviews_prefer(pair):
    """place_registers(side=-1) mirrors e (registers and shift on the other side of u, the words' values kept);
    the second stage keeps the side with more correct validation reviews: given labels that one side's model
    reproduces exactly, it picks that side."""
    from attndyn.sentiment._train import EncodedSplit, predict_logits

    plus, before = _placed(side=1)
    minus, _ = _placed(side=-1)
    e_plus = (plus.embed.weight - before)[1].detach()
    e_minus = (minus.embed.weight - before)[1].detach()
    assert torch.allclose(e_plus, -e_minus, atol=1e-6) and not torch.allclose(plus.registers, minus.registers)
    with pytest.raises(InputError, match="side must be 1 or -1"):
        _placed(side=0)
    control, reg = pair
    mc = reg.model_.config
    texts = [
        f"{a} {b} {c}"
        for a in ("great", "awful", "fine", "dull")
        for b in ("fun", "boring", "lovely", "mess")
        for c in ("film", "plot", "story", "acting")
    ]
    data = reg.encode(texts, [0] * len(texts))
    models = {}
    for side in (1, -1):
        m = SentimentTransformer(mc)
        m.load_state_dict(control.model_.state_dict(), strict=False)
        m.place_registers(seed=0, side=side)
        models[side] = (predict_logits(m, data, hardmax=True) > 0).long()
    if torch.equal(models[1], models[-1]):
        pytest.skip("both sides predict alike on these texts")  # not expected for this seed (checked when written)
    for side in (1, -1):
        val = EncodedSplit(data.ids, data.mask, models[side])
        chosen, H = reg._with_registers(control.model_, mc, val)
        assert reg.register_side_ == side
        assert torch.equal(H, predict_logits(chosen, val, hardmax=True))  # what _calibrated fits on
        assert torch.equal((H > 0).long(), models[side])
