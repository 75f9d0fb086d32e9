"""Colour scales that teach the right thing (issue 15 §4): fixed heatmap tops, clipped position panels, ALiBi per
head, the fine-tuning change on an absolute axis."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import traitlets

import attnwidgets as aw
from attnwidgets.viewdata.checks import check_vmax, scale_note


def _uniform_and_sharp() -> tuple[aw.AttentionResult, aw.AttentionResult]:
    n = 5
    uniform = np.full((1, 1, n, n), 1.0 / n, dtype=np.float32)
    uniform[0, 0, :, 0] += 0.01  # a near-uniform map: max 0.21
    uniform /= uniform.sum(-1, keepdims=True)
    sharp = np.eye(n, dtype=np.float32)[None, None]
    toks = ["a", "b", "c", "d", "e"]
    return aw.AttentionResult.from_arrays(uniform, toks), aw.AttentionResult.from_arrays(sharp, toks)


def test_heatmap_fixed_vmax_travels_with_the_matrix_and_the_meta():
    uniform, _ = _uniform_and_sharp()
    per_map = aw.AttentionHeatmap(uniform)
    # per map (today's default): the scale tops at the map's own maximum, so a near-uniform map fills the colours
    assert per_map._payload["vmax"] == pytest.approx(float(uniform.attention.max()))
    assert per_map._meta["vmax"] is None
    fixed = aw.AttentionHeatmap(uniform, vmax=1.0)
    assert fixed._payload["vmax"] == 1.0 and fixed._meta["vmax"] == 1.0
    # the top colour is reached only by a weight of 1: the uniform map's largest cell sits at about a fifth of it
    assert float(uniform.attention.max()) / fixed._payload["vmax"] < 0.25
    # a request for another view answers with the fixed top too, and setting it back returns to per map
    content, _ = fixed._matrix_request({"kind": "self", "layer": 0, "head": -1})
    assert content["vmax"] == 1.0
    fixed.vmax = None
    assert fixed._payload["vmax"] == pytest.approx(float(uniform.attention.max())) and fixed._meta["vmax"] is None


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_heatmap_vmax_refuses_nonsense(bad):
    uniform, _ = _uniform_and_sharp()
    with pytest.raises(traitlets.TraitError, match="vmax must be"):
        aw.AttentionHeatmap(uniform, vmax=bad)
    with pytest.raises(ValueError, match="vmax must be"):
        aw.plots.plot_heatmap(uniform, vmax=bad)
    with pytest.raises(TypeError):
        check_vmax("1")


def test_plot_heatmap_colour_bar_says_fixed_or_per_map():
    import matplotlib.pyplot as plt

    uniform, _ = _uniform_and_sharp()
    fig = aw.plots.plot_heatmap(uniform, vmax=1.0)
    bar = fig.axes[1]
    assert "fixed scale 0–1" in bar.get_ylabel()
    assert bar.get_ylim()[1] == pytest.approx(1.0)
    plt.close(fig)
    fig = aw.plots.plot_heatmap(uniform)
    label = fig.axes[1].get_ylabel()
    assert "per-map scale 0–0.2" in label, label
    plt.close(fig)
    assert scale_note(None, 0.5) != scale_note(0.5, 0.5)


# -- PositionalExplorer: the learned table's outlier, ALiBi's shallow heads -----------------------------------------

from attnwidgets.viewdata.scales import near_white_share  # noqa: E402
from attnwidgets.viewdata.views.positional import positional_panels  # noqa: E402


def test_learned_panel_is_not_white_under_one_outlier():
    rng = np.random.default_rng(0)
    table = (rng.standard_normal((64, 32)) * 0.03).astype(np.float32)
    table[0, 5] = 1.87  # one outlier, as in the bundled model's table
    first, _ = positional_panels("learned", length=64, table=table)
    # on the old scale (±max |value|) nearly every cell is within 10 % of white
    assert near_white_share(first["matrix"] / 1.87) > 0.95
    assert near_white_share(first["shade"]) < 0.35
    assert first["vmax"] == pytest.approx(np.percentile(np.abs(table), 99), rel=1e-5)
    assert first["shade"][0, 5] == 1.0  # the outlier takes the end colour
    assert "99th percentile" in first["scale_note"] and "1.87" in first["scale_note"]
    assert first["legend"][1].startswith("≥")


def test_bundled_learned_table_near_white_share():
    w = aw.PositionalExplorer.from_model(length=64)
    first = w.panels()[0]
    assert near_white_share(first["matrix"] / np.abs(first["matrix"]).max()) > 0.99  # old scale: white
    assert near_white_share(first["shade"]) < 0.35
    sent = w._payload["panels"][0]
    assert "shade" in sent and "clipped at the 99th percentile" in sent["scale_note"]


def test_alibi_shares_one_scale_by_default():
    """Head 0's slope is 1/2, head 7's 1/256: on one shared scale the far heads are paler, which is the lesson
    (issue 24: per-head scales hid the 128-fold differences)."""
    first, second = positional_panels("alibi", length=64, n_heads=8)
    assert first["vmax"] == pytest.approx(63 / 2)  # head 0 at distance 63, by hand: slope 2^-1
    assert np.allclose(first["shade"], first["matrix"] / 31.5, atol=1e-6)
    assert first["shade"][0].min() == pytest.approx(-1.0) and first["shade"][7].min() == pytest.approx(-1 / 128)
    assert first["scale_note"] == "one scale for every head (per_head_scale=True: one each)"
    assert first["legend"] == ["-31.5", "31.5"]
    # the right panel (head 0, or another head) uses the same scale: head 3 (slope 1/16) reaches 1/8 of it
    _, third = positional_panels("alibi", length=64, n_heads=8, head=3)
    assert second["vmax"] == third["vmax"] == pytest.approx(31.5)
    assert np.nanmin(third["shade"]) == pytest.approx(-63 / 16 / 31.5)
    w = aw.PositionalExplorer("alibi", length=64)
    assert w._payload["panels"][0]["scale_note"] == first["scale_note"]
    w.per_head_scale = True
    assert "one scale per head" in w._payload["panels"][0]["scale_note"]


def test_alibi_every_head_shows():
    first, second = positional_panels("alibi", length=64, n_heads=8, per_head_scale=True)
    old = first["matrix"] / np.abs(first["matrix"]).max()
    assert [near_white_share(r) for r in old][4:] == [1.0] * 4  # heads 4-7 blank on the shared ±31.5 scale
    for row, raw, top in zip(first["shade"], first["matrix"], first["row_vmax"], strict=True):
        assert np.allclose(row * top, raw, atol=1e-5)  # the shade is the row on its own scale
        assert near_white_share(row) < 0.15  # every head spans its colours: only the first few distances are pale
        assert row.min() == pytest.approx(-1.0)
    assert first["row_vmax"][0] == pytest.approx(31.5) and first["row_vmax"][-1] == pytest.approx(63 / 256)
    assert "one scale per head" in first["scale_note"]
    # the right panel (one head) keeps its plain ±max scale; a non-learned left panel too
    assert second["shade"].min() == pytest.approx(-1.0)
    sin, _ = positional_panels("sinusoidal", length=16, d_model=8)
    assert np.allclose(sin["shade"], sin["matrix"] / np.abs(sin["matrix"]).max())


# -- the fine-tuning grid: an absolute axis, labelled ---------------------------------------------------------------

def test_head_grid_says_its_range_and_takes_a_fixed_axis():
    import matplotlib.pyplot as plt

    from attnwidgets.plots.ablation import plot_head_grid
    from attnwidgets.studies.finetune import FinetuneComparison

    sim = np.array([[1.0, 0.999], [0.99, 0.979]])
    fig = plot_head_grid(sim, label="cosine")
    bar = fig.axes[1]
    assert bar.get_ylim() == pytest.approx((0.979, 1.0))  # the grid's own range: a 2 % change fills every colour
    assert "this grid's range 0.979–1" in bar.get_ylabel()
    plt.close(fig)
    cmp = FinetuneComparison(sim, None, None, {}, [])  # type: ignore[arg-type]
    assert cmp.change_percent == pytest.approx(np.array([[0.0, 0.1], [1.0, 2.1]]))
    fig = plot_head_grid(cmp.change_percent, label="1 − cosine (%)", limits=(0, 5))
    bar = fig.axes[1]
    assert bar.get_ylim() == pytest.approx((0.0, 5.0)) and "fixed axis 0–5" in bar.get_ylabel()
    # the largest change (2.1 %) sits under half the colour axis, not at its top
    image = fig.axes[0].images[0]
    assert image.norm(2.1) == pytest.approx(0.42)
    plt.close(fig)
    with pytest.raises(ValueError, match="limits"):
        plot_head_grid(sim, limits=(1, 0))
