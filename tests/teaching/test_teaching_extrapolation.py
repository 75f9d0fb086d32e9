"""Length extrapolation (issue 24 §4): the toy decoder with four position schemes, the shipped run
(attnwidgets/data/shipped_extrapolation.npz) and its figure.

RoPE and ALiBi inside the toy's attention are checked against viewdata.positional (the maths the explorer draws), the
learned table refuses what it has no row for (NaN, not a crash), and the shipped file is what its recipe makes: the
same seed gives the same first steps, and the stored accuracies are a re-evaluation of the stored weights.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnwidgets.persist import TAGS, SavedFileError, read, write
from attnwidgets.teaching.extrapolation import (
    SCHEMES,
    ExtrapolationRun,
    copy_accuracy,
    copy_batch,
    extrapolation_model,
    train_extrapolation,
)
from attnwidgets.teaching.shipped import KIND, RECIPES, Recipe, first_losses, load_shipped, replay, shipped_path
from attnwidgets.teaching.transformer import MultiHeadAttention, TransformerConfig, rotate_pairs
from attnwidgets.viewdata import positional

REMAKE = "the shipped file is not what its recipe makes today: run `python benchmarks/train_shipped.py --only " \
         "extrapolation`"


@pytest.fixture(scope="module")
def shipped():
    return load_shipped("extrapolation")


# -- position inside the toy's attention ---------------------------------------------------------------------------

def test_rope_in_torch_is_the_explorer_s_rotation():
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64)
    np.testing.assert_allclose(rotate_pairs(x, 7).numpy(), positional.apply_rope(x.numpy()), atol=1e-12)


def _attention(position, n_heads=2, d=8):
    torch.manual_seed(0)
    return MultiHeadAttention(d, n_heads, position=position).eval()


def test_rope_scores_depend_on_the_offset_only():
    attn = _attention("rope")
    x = torch.randn(1, 1, 8).repeat(1, 12, 1)  # the same vector at every position
    attn(x)
    logits = attn.weights[0].log()  # softmax keeps differences: compare logits up to each row's constant
    rows = logits - logits[..., :1]
    # row m, key n: depends on n - m, so rows 2 and 5 agree along the same offsets
    np.testing.assert_allclose(rows[:, 2, 2:8] - rows[:, 2, 2:3], rows[:, 5, 5:11] - rows[:, 5, 5:6], atol=1e-5)
    plain = _attention(None)
    plain(x)
    assert torch.allclose(plain.weights, torch.full_like(plain.weights, 1 / 12))  # no position: uniform


def test_alibi_adds_minus_slope_times_distance_to_the_logits():
    attn = _attention("alibi")
    x = torch.zeros(1, 5, 8)  # q·k = 0 after the zero-input projections' biases are zeroed
    with torch.no_grad():
        for lin in (attn.q_proj, attn.k_proj):
            lin.bias.zero_()
    attn(x)
    slopes = positional.alibi_slopes(2)  # 1/16 and 1/256 for two heads
    for h in range(2):
        row = attn.weights[0, h, 4].numpy()  # query 4 over keys 0..4
        expected = np.exp(-slopes[h] * np.arange(4, -1, -1.0))
        np.testing.assert_allclose(row, expected / expected.sum(), rtol=1e-5)
    assert slopes.tolist() == [2.0**-4, 2.0**-8]


def test_the_config_knows_the_four_schemes():
    with pytest.raises(ValueError, match="'sinusoidal', 'learned', 'rope' or 'alibi', got 'nope'"):
        TransformerConfig(vocab_size=5, positional="nope")
    with pytest.raises(ValueError, match="head size \\(3\\) must be even"):
        TransformerConfig(vocab_size=5, d_model=12, n_heads=4, positional="rope")
    for scheme in ("rope", "alibi"):  # no table: nothing added to the embeddings, no longest input
        model = extrapolation_model(scheme, n_symbols=10, train_max=4, test_max=4)
        assert model.embed.pos is None and not any("pos" in n for n, _ in model.named_parameters())
        x, _ = copy_batch(np.random.default_rng(0), 2, 40, 10)
        assert model(x).shape == (2, 81, 13)  # 82 tokens less the last: longer than its max_len, and fine


# -- the task and the learned table's limit --------------------------------------------------------------------------

def test_copy_batches_and_their_labels():
    x, y = copy_batch(np.random.default_rng(3), 4, (2, 5), 10)
    for row, lab in zip(x.numpy(), y.numpy()):
        n = int((row >= 3).sum() + 1) // 2  # symbols in the source (the last copy is not an input)
        assert row[0] == 1 and row[n + 1] == 2
        source = row[1: n + 1]
        assert lab[n + 1: 2 * n + 1].tolist() == source.tolist()
        assert (lab[: n + 1] == -100).all() and (lab[2 * n + 1:] == -100).all()
    with pytest.raises(ValueError, match="at least 1"):
        copy_batch(np.random.default_rng(0), 1, 0, 10)


def test_the_learned_table_cannot_read_past_its_rows_and_says_nan():
    torch.manual_seed(0)
    model = extrapolation_model("learned", n_symbols=10, train_max=4, test_max=20)
    assert model.cfg.max_len == 9  # <bos> 4 symbols <sep> 4 copies, minus the last
    assert math.isnan(copy_accuracy(model, 5, n_symbols=10, n_eval=2))
    assert 0 <= copy_accuracy(model, 4, n_symbols=10, n_eval=2) <= 1
    x, _ = copy_batch(np.random.default_rng(0), 1, 5, 10)
    with pytest.raises(ValueError, match="longer than max_len=9"):
        model(x)


def test_a_short_run_and_its_errors():
    run = train_extrapolation(steps=3, train_max=4, test_lengths=(2, 4, 8), n_eval=4, progress=False,
                              config={"d_model": 16, "d_ff": 16})
    assert run.accuracy.shape == (4, 3) and run.losses.shape == (4, 3)
    learned = SCHEMES.index("learned")
    assert np.isnan(run.accuracy[learned, 2]) and np.isfinite(np.delete(run.accuracy, learned, 0)).all()
    assert run.limit("learned") == 4 and run.limit("alibi") is None
    np.testing.assert_array_equal(run.evaluate(), run.accuracy)
    # same seed, same data: every scheme's first loss is that of its fresh model on the first batch
    assert len(set(np.round(run.losses[:, 0], 6))) == 4  # the schemes differ from the start (different positions)
    with pytest.raises(ValueError, match="schemes must be some of"):
        train_extrapolation(steps=1, schemes=("nope",), progress=False)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train_extrapolation(steps=0, progress=False)


def test_holds_up_to_reads_the_table():
    run = ExtrapolationRun({}, 8, np.array([4, 8, 16, 32]),
                           np.array([[1, 1, 0.95, 0.2], [1, 1, np.nan, np.nan], [1, .5, 1, 1], [.1, 1, 1, 1]]),
                           np.zeros((4, 1), np.float32), {})
    assert run.holds_up_to(0.9) == {"sinusoidal": 16, "learned": 8, "rope": 4, "alibi": None}


# -- the shipped run ----------------------------------------------------------------------------------------------

def test_the_shipped_file_is_small_and_the_recipe_s(shipped):
    assert shipped_path("extrapolation").stat().st_size < 384 * 2**10  # four models of ~32 k weights, in float16
    saved = read(shipped_path("extrapolation"), KIND)
    assert saved.settings["recipe"] == RECIPES["extrapolation"].kwargs
    assert isinstance(shipped, ExtrapolationRun) and shipped.schemes == SCHEMES
    assert "train_extrapolation(seed=0)" in shipped.shipped


def test_the_shipped_run_starts_as_recorded(shipped):
    fresh = first_losses("extrapolation", 3)
    np.testing.assert_allclose(fresh.losses, shipped.losses[:, :3], rtol=1e-5, err_msg=REMAKE)


def test_the_stored_accuracies_are_the_stored_weights(shipped):
    stored = read(shipped_path("extrapolation"), KIND).attrs["metrics"]["accuracy"]
    again = shipped.evaluate()
    np.testing.assert_array_equal(np.isnan(again), np.isnan(shipped.accuracy))
    np.testing.assert_allclose(again, shipped.accuracy, atol=1e-12, err_msg=REMAKE)
    np.testing.assert_allclose(np.array(stored, dtype=float), shipped.accuracy, atol=1e-12)
    learned = SCHEMES.index("learned")
    past = shipped.test_lengths > shipped.limit("learned")
    assert np.isnan(shipped.accuracy[learned, past]).all() and np.isfinite(shipped.accuracy[learned, ~past]).all()
    inside = shipped.test_lengths <= shipped.train_max
    assert (shipped.accuracy[:, inside] >= 0.9).all(), shipped.table()  # every scheme learned the task it saw


def test_replay_calls_back_per_scheme_and_step(shipped):
    calls = []
    replay(shipped, lambda *a: calls.append(a))
    assert len(calls) == 4 * shipped.steps and calls[0] == ("sinusoidal", 1, float(shipped.losses[0, 0]))
    assert calls[-1] == ("alibi", shipped.steps, float(shipped.losses[3, -1]))


def test_train_true_trains_here(monkeypatch, capsys):
    from attnwidgets.teaching.shipped import shipped_run

    small = Recipe("extrapolation", "extrapolation", {"seed": 0, "steps": 2, "test_lengths": [2, 4], "n_eval": 2})
    monkeypatch.setitem(RECIPES, "extrapolation", small)
    run = shipped_run("extrapolation", train=True, progress=False)
    assert "training extrapolation here: train_extrapolation(seed=0, steps=2" in capsys.readouterr().out
    assert run.shipped is None and run.steps == 2


def _rewrite(tmp_path, change):
    s = read(shipped_path("extrapolation"), KIND)
    arrays = {key: s.array(key) for key in s.names if key != TAGS}
    change(arrays)
    return write(tmp_path / "x.npz", s.kind, arrays, settings=s.settings, attrs=s.attrs)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("param.rope.embed.tok.weight"), r"missing \['rope.embed.tok.weight'\]"),
    (lambda a: a.__setitem__("accuracy", a["accuracy"] * 2), "outside 0..1"),
    (lambda a: a.__setitem__("accuracy", a["accuracy"][:, :3]), "'accuracy' is missing or not"),
    (lambda a: a.__setitem__("losses", a["losses"][:, :5]), "'losses' is float32"),
])
def test_a_damaged_file_is_refused_clearly(tmp_path, change, message):
    path = _rewrite(tmp_path, change)
    with pytest.raises(SavedFileError, match=message) as err:
        load_shipped("extrapolation", path)
    assert str(path) in str(err.value) and "--only extrapolation" in str(err.value)


# -- the figure ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("theme", ["light", "lecture"])
def test_the_figure_reads_and_draws_the_table(shipped, theme):
    from attnwidgets.plots import plot_extrapolation
    from tests.plots.test_notebook_figures import figure_problems

    fig = plot_extrapolation(shipped, theme=theme)
    assert figure_problems(fig, theme) == []
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    rope = lines["RoPE (rotates q, k)"]
    np.testing.assert_allclose(rope.get_ydata(), shipped.accuracy[SCHEMES.index("rope")])
    learned = lines[f"learned table (added): no row past {shipped.limit('learned')}"]
    assert lines["guessing a symbol"].get_ydata()[0] == pytest.approx(1 / shipped.settings["n_symbols"])
    assert len(learned.get_xdata()) == int((shipped.test_lengths <= shipped.limit("learned")).sum())
