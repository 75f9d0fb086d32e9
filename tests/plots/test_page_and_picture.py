"""The page and the picture draw one state (issue 33 §4): for every view with a static twin, the twin's title, colour
scale and tick labels are the ones the view's state gives the page. A twin that re-derives them from the result can
drift (the heatmap's twin put the measure after the head, the page after the model). The page's side is read from
the widget's wire traits (``_payload``, ``_meta``) by the rules of its TypeScript, never by the Python painter's own
helpers; a view whose twin is not ``paint_<view>(state, ax)`` yet is named in :data:`NO_PAINTER`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib
import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets import fallback
from attnwidgets.analysis.qk_space import build_qk_space
from attnwidgets.generation_result import GenerationResult
from attnwidgets.qk_result import QKCapture
from attnwidgets.result import ModelInfo
from attnwidgets.router_result import RouterResult
from attnwidgets.viewdata.head_stats import HeadStats
from attnwidgets.viewdata.labels import token_label
from attnwidgets.viewdata.lines import unpack
from attnwidgets.viewdata.views import VIEWS

matplotlib.use("Agg")

TOKENS = ["[CLS]", "the", "play", "##ing", "cat", "[SEP]"]
WORD_IDS = np.array([-1, 0, 1, 1, 2, -1])


def _result(seed: int = 0, n_kv_heads: int = 0) -> aw.AttentionResult:
    a = np.random.default_rng(seed).random((2, 4, len(TOKENS), len(TOKENS)), dtype=np.float32)
    r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), TOKENS, word_ids=WORD_IDS, name="tiny")
    if n_kv_heads:
        r = r.replace(model=ModelInfo("tiny-gqa", "encoder", 2, 4, 16, n_kv_heads=n_kv_heads))
    return r


def _titles(fig: Any) -> list[str]:
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else ""
    return [" ".join(t.split()) for t in [suptitle, *titles] if t]  # a long title is wrapped to the figure


def _main_axes(fig: Any) -> Any:
    """The axes holding the map: the first with a colour-mapped artist (not a colour bar)."""
    for ax in fig.axes:
        if ax.collections and ax.collections[0].get_array() is not None and ax.get_xticklabels():
            return ax
    raise AssertionError("no colour-mapped axes in the twin")


# -- the heatmap: converted (paint_heatmap draws heatmap_state) ------------------------------------------------------

HEATMAP_CASES: dict[str, Callable[[], aw.AttentionHeatmap]] = {
    "one head": lambda: aw.AttentionHeatmap(_result(), layer=1, head=2),
    "mean of heads": lambda: aw.AttentionHeatmap(_result(), layer=0, head=-1),
    "words": lambda: aw.AttentionHeatmap(_result(), layer=1, head=0, words=True),
    "fixed scale": lambda: aw.AttentionHeatmap(_result(), layer=0, head=1, vmax=0.5),
    "sink discounted": lambda: aw.AttentionHeatmap(_result(), head=3, discount_sinks=True),
    "grouped heads": lambda: aw.AttentionHeatmap(_result(n_kv_heads=2), layer=1, head=3),
}


def _page_title(w: aw.AttentionHeatmap) -> str:
    """What the page's title says (js/src/views/heatmap/state.ts titleText at zoom 1, nothing selected), read from
    the widget's traits: its meta's title, then the map the widget shows."""
    meta = w._meta
    size = meta["kv_group_size"][w.kind]
    kv = f" · KV head {w.head // size}" if size > 1 and w.head >= 0 else ""
    which = "mean of heads" if w.head < 0 else f"head {w.head}"
    return f"{meta['title']} · {w.kind} attention · layer {w.layer} · {which}{kv}{' · words' if w.words else ''}"


@pytest.mark.parametrize("case", list(HEATMAP_CASES))
def test_the_heatmaps_picture_has_the_pages_title_scale_and_labels(case):
    w = HEATMAP_CASES[case]()
    ax = _main_axes(fallback.twin_figure(w))
    assert ax.get_title() == _page_title(w)
    assert ax.collections[0].get_clim() == pytest.approx((0.0, w._payload["vmax"]))
    queries, keys = (w._payload["labels"]["tokens"] if w.words else w._meta["tokens"])[w.kind]
    assert [t.get_text() for t in ax.get_xticklabels()] == [token_label(k) for k in keys]
    assert [t.get_text() for t in ax.get_yticklabels()] == [token_label(q) for q in queries]


def test_the_page_title_helper_can_fail():
    w = HEATMAP_CASES["grouped heads"]()
    assert "KV head 1" in _page_title(w)
    assert _page_title(w) != _page_title(HEATMAP_CASES["one head"]())


def _span_caption(tokens: list[str], selection: list[int], combine: str) -> str:
    """js/src/draw/span.ts spanCaption (with spanTokens): what the page's title ends with for a selection."""
    shown = " ".join(tokens[p] for p in selection[:6]) if len(_runs(selection)) == 1 else \
        " · ".join(tokens[p] for p in selection[:6])
    more = " …" if len(selection) > 6 else ""
    where = (f" ({selection[0]}–{selection[-1]})" if len(selection) > 1 else f" ({selection[0]})") \
        if len(_runs(selection)) == 1 else ""
    return f"{combine} of {len(selection)} {'row' if len(selection) == 1 else 'rows'}: {shown}{more}{where}"


def _runs(selection: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for p in selection:
        if out and p == out[-1][-1] + 1:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def _page_span(w: Any, layer: int, head: int, kind: str, words: bool = False) -> np.ndarray:
    """The combined row the page draws under its map: the widget's answer to the page's "span" request."""
    reply, buffers = w.answer({"what": "span", "kind": kind, "layer": layer, "head": head, "words": words,
                               "selection": list(w.selection), "combine": w.combine})
    return np.frombuffer(bytes(buffers[0]), reply["dtype"]).reshape(reply["shape"])


SELECTED_HEATMAPS: dict[str, Callable[[], aw.AttentionHeatmap]] = {
    "a span, mean": lambda: aw.AttentionHeatmap(_result(), layer=1, head=2, selection=[2, 3]),
    "two rows apart, summed, mean of heads": lambda: aw.AttentionHeatmap(_result(3), layer=0, head=-1,
                                                                         selection=[1, 4], combine="sum"),
    "words, one row": lambda: _selected(aw.AttentionHeatmap(_result(), layer=1, head=0, words=True), [2]),
}


def _selected(w: Any, selection: list[int]) -> Any:
    w.selection = selection  # after words: switching the level clears a selection
    return w


@pytest.mark.parametrize("case", list(SELECTED_HEATMAPS))
def test_the_heatmaps_picture_has_the_pages_selection(case):
    w = SELECTED_HEATMAPS[case]()
    ax = _main_axes(fallback.twin_figure(w))
    queries = (w._payload["labels"]["tokens"] if w.words else w._meta["tokens"])[w.kind][0]
    sel = list(w.selection)
    assert sel and _text(ax.get_title()) == f"{_page_title(w)} · {_span_caption(queries, sel, w.combine)}"
    row = _page_span(w, w.layer, w.head, w.kind, w.words)
    inset = ax.child_axes[0]
    np.testing.assert_allclose(np.asarray(inset.images[0].get_array())[0], row, rtol=1e-5)
    top = w._payload["vmax"] if w.combine == "mean" else float(row.max())  # span.ts spanTop
    assert inset.images[0].get_clim() == pytest.approx((0.0, top))
    outlined = sorted((p.get_y(), p.get_height()) for p in ax.patches if p.get_edgecolor()[:3] != (0, 0, 0))
    assert outlined == [(r[0], len(r)) for r in _runs(sel)]


def test_a_painted_heatmap_state_combines_its_own_rows_as_the_page_asks_python_to():
    w = SELECTED_HEATMAPS["two rows apart, summed, mean of heads"]()
    fig = aw.plots.paint(w.page_state(), selection=list(w.selection), combine="sum")  # no span: from the map
    drawn = np.asarray(_main_axes(fig).child_axes[0].images[0].get_array())[0]
    np.testing.assert_allclose(drawn, _page_span(w, 0, -1, "self"), rtol=1e-5)


# -- the model view: converted (paint_model_view draws model_view_state) --------------------------------------------

MODEL_CASES: dict[str, Callable[[], aw.ModelView]] = {
    "encoder": lambda: aw.ModelView(_result(), layer=1, head=2),
    "grouped heads": lambda: aw.ModelView(_result(n_kv_heads=2)),
    "causal": lambda: aw.ModelView(aw.AttentionResult.from_arrays(
        np.tril(np.ones((2, 3, 5, 5), np.float32)) / np.arange(1, 6, dtype=np.float32)[:, None], list("abcde"),
        kind="decoder")),
}


def _grid_title(w: aw.ModelView) -> str:
    """What the page's title says (js/src/views/model_view/state.ts gridTitle), read from the widget's traits."""
    meta, payload = w._meta, w._payload
    n_layers, n_heads = meta["shapes"][payload["kind"]]
    size = meta["kv_group_size"][payload["kind"]]
    groups = f" · shaded: heads sharing a KV head ({size} per group)" if size > 1 else ""
    sampled = (f" · thumbnails read {payload['rows_used']} of every {payload['factor']} query rows"
               if payload["rows_used"] < payload["factor"] else "")
    return f"{meta['title']} · {payload['kind']} attention · {n_layers} layers × {n_heads} heads{groups}{sampled}"


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_the_model_views_picture_has_the_pages_title_scale_and_grid(case):
    w = MODEL_CASES[case]()
    fig = fallback.twin_figure(w)
    ax = fig.axes[0]
    assert " ".join(fig._suptitle.get_text().split()) == _grid_title(w)  # a long title is wrapped to the figure
    n_layers, n_heads = w._meta["shapes"][w._payload["kind"]]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(h) for h in range(n_heads)]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"L{lay}" for lay in range(n_layers)]
    image = ax.get_images()[0]
    assert image.get_clim() == (0, 1)  # each thumbnail to its own maximum, as the page's
    thumbs = w._payload["thumbs"]
    tq, tk = thumbs["shape"][2:]
    pixels = np.frombuffer(thumbs["buffer"], np.uint8).reshape(thumbs["shape"])
    drawn = np.ma.filled(image.get_array(), np.nan)[:tq, :tk]  # layer 0, head 0
    expect = pixels[0, 0] / 255.0
    if w._meta["causal"][w._payload["kind"]]:
        expect = np.where(np.triu(np.ones((tq, tk), bool), 1), np.nan, expect)
    np.testing.assert_allclose(drawn, expect, atol=1e-6)


@pytest.mark.parametrize("layer, head, selection", [(1, 2, []), (0, 3, [1, 2]), (1, 0, [0, 5])])
def test_the_model_views_picture_outlines_the_pages_head_and_draws_its_selection(layer, head, selection):
    w = aw.ModelView(_result(4), layer=layer, head=head, selection=selection, combine="sum" if head else "mean")
    fig = fallback.twin_figure(w)
    tq, tk = w._payload["thumbs"]["shape"][2:]
    outlined = [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in fig.axes[0].patches
                if p.get_edgecolor()[:3] == pytest.approx((0xD1 / 255, 0x24 / 255, 0x2F / 255))]
    assert outlined == [(w.head * (tk + 1) - 0.5, w.layer * (tq + 1) - 0.5, tk, tq)]  # the chosen head's tile
    if not selection:
        assert len(fig.axes) == 1
        return
    row_ax = fig.axes[1]
    row = _page_span(w, w.layer, w.head, "self")
    np.testing.assert_allclose(np.asarray(row_ax.images[0].get_array())[0], row, rtol=1e-5)
    assert row_ax.images[0].get_clim() == pytest.approx((0.0, float(row.max())))
    queries, keys = w._meta["tokens"]["self"]
    caption = _span_caption(queries, selection, w.combine)
    assert _text(row_ax.get_title()) == f"layer {w.layer} · head {w.head} · {caption}"
    assert [t.get_text() for t in row_ax.get_xticklabels()] == [token_label(k) for k in keys]


# -- every other view: its title starts with the page's (meta.title), until its twin paints its state ---------------

#: view -> the widget, built on a small result.
OTHER: dict[str, Any] = {
    "model_view": pytest.param(lambda: aw.ModelView(_result(), layer=1, head=2), id="model_view"),
    "profile": pytest.param(lambda: aw.AttentionProfile(_result(), layer=1, head=2), id="profile"),
    "compare": pytest.param(lambda: aw.AttentionCompare(_result(0), _result(1), layer=1, head=2), id="compare"),
    "head_stats_grid": pytest.param(lambda: aw.HeadStatsGrid(_result(), layer=1, head=2), id="head_stats_grid"),
    "entropy_bars": pytest.param(lambda: aw.EntropyBars(_result(), layer=1, head=2), id="entropy_bars"),
    "head_view": pytest.param(lambda: aw.HeadView(_result(), layer=1), id="head_view"),
    "qk": pytest.param(lambda: aw.QKStepThrough(_captures(), layer=1, head=1), id="qk"),
    "head_cluster_map": pytest.param(lambda: aw.HeadClusterMap([_result(0), _result(1)]), id="head_cluster_map"),
    "generation": pytest.param(lambda: aw.GenerationView(_generation(), layer=1, head=0), id="generation"),
    "qk_space": pytest.param(lambda: aw.QKSpaceView(_qk_space()), id="qk_space"),
    "routers": pytest.param(lambda: aw.RouterView(_routes()), id="routers"),
    "fill_mask": pytest.param(lambda: _fill_mask(), id="fill_mask"),
    "ablation": pytest.param(lambda: aw.AblationWidget(["The cat sat on the mat."], layer=2, head=3), id="ablation"),
}


def _qk_space(weight: float = 0.25) -> Any:
    return build_qk_space([np.eye(4), np.eye(4)[::-1]], [np.eye(4)] * 2, [np.full((4, 4), weight)] * 2,
                          [["[CLS]", "a", "b", "[SEP]"]] * 2)


def _routes(uneven: bool = False) -> RouterResult:
    """Top-2 of 4 experts in layers 0 and 2; gate weights 0.5 each, or ``uneven`` (the first above the second)."""
    rng = np.random.default_rng(6)
    routed = rng.permutation(np.tile(np.arange(4), (2, 5, 1)).reshape(-1, 4), axis=1)
    first = rng.uniform(0.5, 0.95, (2, 5, 1)) if uneven else np.full((2, 5, 1), 0.5)
    return RouterResult(["The", " cat", " sat", " on", " mat"], [0, 2], np.zeros((2, 5, 4), np.float32),
                        routed[:, :2].reshape(2, 5, 2), np.concatenate([first, 1 - first], -1).astype(np.float32))


def _captures() -> list[QKCapture]:
    rng = np.random.default_rng(1)
    return [QKCapture.from_vectors(*(rng.normal(size=(3, len(TOKENS), 4)) for _ in range(3)), TOKENS, layer=layer)
            for layer in (0, 1)]


def _generation() -> GenerationResult:
    """Prompt a b c, generated D E F G (fed: a b c D E F), attention by hand."""
    rng = np.random.default_rng(2)
    att = np.tril(rng.random((2, 3, 6, 6))).astype(np.float32) + np.eye(6, dtype=np.float32)
    r = aw.AttentionResult.from_arrays(att / att.sum(-1, keepdims=True), list("abcDEF"), kind="decoder")
    probs = np.sort(rng.dirichlet(np.ones(3), size=4).astype(np.float32), 1)[:, ::-1].copy()
    return GenerationResult(r, "a b c", list("abc"), np.arange(3), list("DEFG"), np.arange(3, 7),
                            np.arange(12).reshape(4, 3), probs, [[t, "x", "y"] for t in "DEFG"], text="DEFG")


#: views with a twin this test does not build yet, and why (each needs inputs beyond a small result).
NOT_BUILT: dict[str, str] = {}


def _page_meta_title(w: Any) -> str:
    meta = w._meta if getattr(w, "_meta", None) else w._payload  # AblationWidget has no _meta
    return str(meta["title"])


#: views whose page title does not start with meta.title: checked whole, above or below.
TITLED_WHOLE = {"profile", "compare", "fill_mask"}


@pytest.mark.parametrize("make", [p for name, p in OTHER.items() if name not in TITLED_WHOLE])
def test_each_twin_starts_its_title_as_the_page_does(make):
    w = make()
    titles = _titles(fallback.twin_figure(w))
    page = _page_meta_title(w)
    assert any(t.startswith(page) for t in titles), (page, titles)


def test_every_view_with_a_twin_is_checked_or_named():
    with_twin = {v.name for v in VIEWS if v.twin is not None}
    assert with_twin == {"heatmap", *OTHER, *NOT_BUILT}


# -- profile, compare, entropy bars, head cluster map: painted from their state (paint_<view>) ----------------------

def _unpack(packed: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(packed["buffer"], dtype=packed["dtype"]).reshape(packed["shape"])


def _text(label: Any) -> str:
    return " ".join(str(label.get_text() if hasattr(label, "get_text") else label).split())


PROFILE_CASES: dict[str, Callable[[], aw.AttentionProfile]] = {
    "one head, tokens": lambda: aw.AttentionProfile(_result(), layer=1, head=2),
    "mean of heads, sentences": lambda: aw.AttentionProfile(_result(3), layer=0, head=-1, unit="sentence"),
    "two rows summed": lambda: aw.AttentionProfile(_result(4), layer=1, head=0, selection=[1, 3], combine="sum"),
}


@pytest.mark.parametrize("case", list(PROFILE_CASES))
def test_the_profiles_picture_has_the_pages_title_scale_and_caption(case):
    w = PROFILE_CASES[case]()
    payload, kind = w._payload, w.kind
    fig = fallback.twin_figure(w)
    bars, strip = fig.axes[:2]
    pieces = payload["docs"][kind]["pieces"]  # js/src/views/profile/state.ts titleText
    which = "mean of heads" if w.head < 0 else f"head {w.head}"
    assert _text(bars.get_title()) == (f"{payload['title']} · {kind} attention · layer {w.layer} · {which} · "
                                       f"{len(pieces)} tokens")
    weights = _unpack(payload["weights"]).astype(np.float64)
    starts = list(range(len(pieces))) if w.unit == "token" else payload["docs"][kind][w.unit]
    top = max(np.add.reduceat(weights, starts).max(), 0) or 1.0  # unitScale: the heaviest unit, 1 when 0
    assert strip.get_images()[0].get_clim() == pytest.approx((0.0, top))
    assert bars.get_ylabel() == f"attention per {w.unit}"
    assert f"{w.combine} of {len(w.selection)} row" in _text(strip.get_xlabel())


COMPARE_CASES: dict[str, Callable[[], aw.AttentionCompare]] = {
    "side by side": lambda: aw.AttentionCompare(_result(0), _result(1), layer=1, head=2),
    "difference, mean": lambda: aw.AttentionCompare(_result(0), _result(1), layer=0, head=-1, show="diff"),
    "cosine grid, named": lambda: aw.AttentionCompare(_result(0), _result(1).replace(
        model=ModelInfo("other", "encoder", 2, 4, 16)), head=1, summary="cosine"),
}


@pytest.mark.parametrize("case", list(COMPARE_CASES))
def test_the_comparisons_picture_has_the_pages_title_scales_and_labels(case):
    w = COMPARE_CASES[case]()
    meta, payload = w._meta, w._payload
    fig = fallback.twin_figure(w)
    same = meta["a_name"] == meta["b_name"]  # js/src/views/compare/state.ts titleText and sides
    names = f"{meta['a_name']}: A vs B" if same else f"A: {meta['a_name']} · B: {meta['b_name']}"
    assert _text(fig._suptitle) == f"{names} · head {w.layer}/{'mean' if w.head < 0 else w.head}"
    maps = [ax for ax in fig.axes if ax.get_images() and ax.get_xticklabels()][:-1]
    if w.show == "diff":
        assert [ax.get_title() for ax in maps] == ["B − A"]
        assert maps[0].get_images()[0].get_clim() == pytest.approx((-payload["dmax"], payload["dmax"]))
        sides = [meta["labels"]["aligned"]]
    else:
        assert [ax.get_title() for ax in maps] == (["A", "B"] if same else [f"A · {meta['a_name']}",
                                                                            f"B · {meta['b_name']}"])
        assert [ax.get_images()[0].get_clim() for ax in maps] == [pytest.approx((0, payload["vmax"]))] * 2
        sides = [meta["labels"]["a"], meta["labels"]["b"]]
    for ax, (queries, keys) in zip(maps, sides):
        assert [t.get_text() for t in ax.get_xticklabels()] == [token_label(k) for k in keys]
        assert [t.get_text() for t in ax.get_yticklabels()] == [token_label(q) for q in queries]
    grid = next(ax for ax in fig.axes if ax.get_title() == meta["summary_labels"][w.summary])
    values = _unpack(payload["summary"])[meta["summaries"].index(w.summary)]
    lo, hi = (0.0, float(values.max())) if w.summary == "js" else (float(values.min()), float(values.max()))
    assert grid.get_images()[0].get_clim() == pytest.approx((min(lo, 0.0) if values.min() >= 0 else lo, hi))


def _nice_top(top: float) -> float:
    """js/src/views/entropy_bars/state.ts entropyScale's axis top, with draw/heads.ts niceTicks' step."""
    hi = (top or 1.0) * 1.08
    p = 10 ** np.floor(np.log10(hi / 5))
    step = next((m * p for m in (1, 2, 5, 10) if hi / (m * p) <= 5.5), 10 * p)
    return max(np.floor(hi / step + 1e-9) * step, (top or 1.0) * 1.02)


@pytest.mark.parametrize("rows", ["all", "cls"])
def test_the_entropy_bars_picture_has_the_pages_title_axis_and_layers(rows):
    w = aw.EntropyBars(_result(5), rows=rows)
    meta = w._meta
    ax = fallback.twin_figure(w).axes[0]
    label = dict((r, lab) for r, lab in meta["rows"])[rows]
    assert _text(ax.get_title()) == f"{meta['title']} · attention entropy, {label}"
    values = _unpack(w._payload["stats"])[meta["names"].index(meta["row_stat"][rows])]
    base = meta["baselines"][rows]
    assert ax.get_ylim() == pytest.approx((0.0, _nice_top(max(float(values.max()), base or 0.0))))
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(meta["shape"][0])]
    heights = sorted(round(p.get_height(), 5) for p in ax.patches)
    assert heights == sorted(round(float(v), 5) for v in values.ravel())


@pytest.mark.parametrize("color", ["layer", "entropy", "sep"])
def test_the_head_cluster_maps_picture_has_the_pages_title_scale_and_points(color):
    w = aw.HeadClusterMap([_result(0), _result(1)], color=color)
    meta, payload = w._meta, w._payload
    ax = fallback.twin_figure(w).axes[0]
    label = "layer" if color == "layer" else meta["labels"].get(color, color)
    assert _text(ax.get_title()) == f"{meta['title']} · head map, coloured by {_text(label)}"
    dots = ax.collections[0]
    np.testing.assert_allclose(dots.get_offsets(), _unpack(payload["points"]))
    if color != "layer":  # draw/heads.ts statRange: from 0 for a statistic that is never negative
        values = _unpack(payload["stats"])[meta["names"].index(color)]
        assert values.min() >= 0
        assert dots.get_clim() == pytest.approx((0.0, float(values.max())))


# -- routers: painted from its state (paint_routers) ----------------------------------------------------------------

ROUTER_CASES: dict[str, Callable[[], aw.RouterView]] = {
    "first layer, all tokens": lambda: aw.RouterView(_routes()),
    "a span, last layer": lambda: aw.RouterView(_routes(), layer=2, selection=[1, 2, 3]),
    "scattered, gate weight": lambda: aw.RouterView(_routes(uneven=True), layer=2, selection=[0, 4], weighted=True),
}


def _page_load(w: aw.RouterView) -> tuple[np.ndarray, str]:
    """What the page's bars draw (js/src/views/routers/state.ts loadOver and loadTitle), from its traits."""
    experts, weights = _unpack(w._payload["experts"]).round().astype(int), _unpack(w._payload["weights"])
    li, sel = w._meta["layers"].index(w.layer), list(w.selection)
    out = np.zeros(w._meta["n_experts"])
    for t in sel or range(len(w._meta["tokens"])):
        for e, g in zip(experts[li, t], weights[li, t]):
            out[e] += g if w.weighted else 1.0
    contiguous = bool(sel) and sel[-1] - sel[0] == len(sel) - 1
    where = ("all tokens" if not sel else f"token {sel[0]}" if len(sel) == 1
             else f"tokens {sel[0]}–{sel[-1]}" if contiguous else f"{len(sel)} tokens")
    return out / (out.sum() or 1.0), f"{'gate weight' if w.weighted else 'load'} per expert, layer {w.layer}, {where}"


@pytest.mark.parametrize("case", list(ROUTER_CASES))
def test_the_routers_picture_has_the_pages_titles_axis_and_labels(case):
    w = ROUTER_CASES[case]()
    meta = w._meta
    fig = fallback.twin_figure(w)
    strip, bars = fig.axes[:2]
    load, title = _page_load(w)
    assert _text(fig._suptitle) == meta["title"]
    assert bars.get_title() == title
    assert bars.get_ylim() == pytest.approx((0.0, 100.0))  # the page's bars: a fixed 0–100 % axis
    np.testing.assert_allclose([p.get_height() for p in bars.patches], 100 * load, atol=1e-4)
    assert [t.get_text() for t in bars.get_xticklabels()] == [str(e) for e in range(meta["n_experts"])]
    assert [t.get_text() for t in strip.get_xticklabels()] == [str(x) for x in meta["layers"]]
    assert [t.get_text() for t in strip.get_yticklabels()] == [token_label(t) for t in meta["tokens"]]
    bold = [t.get_text() for t in strip.get_xticklabels() if t.get_fontweight() == "bold"]
    assert bold == [str(w.layer)]  # the layer the bars show is marked


# -- qk_space: painted from its state (paint_qk_space) --------------------------------------------------------------

QK_SPACE_CASES: dict[str, Callable[[], aw.QKSpaceView]] = {
    "position": lambda: aw.QKSpaceView(_qk_space(), color="position"),
    "attention": lambda: aw.QKSpaceView(_qk_space(), color="attention"),
    "attention received nowhere": lambda: aw.QKSpaceView(_qk_space(0.0), color="attention"),
    "token, two selected": lambda: aw.QKSpaceView(_qk_space(), color="token", sentence=1, selection=[1, 2]),
}


@pytest.mark.parametrize("case", list(QK_SPACE_CASES))
def test_the_qk_spaces_picture_has_the_pages_title_scale_and_labels(case):
    w = QK_SPACE_CASES[case]()
    meta, points = w._meta, _unpack(w._payload["points"])
    ax = fallback.twin_figure(w).axes[0]
    assert _text(ax.get_title()) == f"{_text(meta['title'])}, coloured by {w.color}"
    assert f"PCA: {100 * sum(meta['explained']):.0f}% of the variance" in ax.get_xlabel()
    if w.color in ("position", "attention"):  # js/src/views/qk_space/state.ts pointColors' vmax
        values = points[:, 5 if w.color == "position" else 6]
        top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
        top = 1.0 if w.color == "position" or not top > 0 else top
        mapped = next(c for c in ax.collections if c.get_array() is not None)
        assert mapped.get_clim() == pytest.approx((0.0, top))
    else:
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [token_label(n) for n in meta["token_names"]]
    picked = (points[:, 2] == 0) & (points[:, 3] == w.sentence) & np.isin(points[:, 4], list(w.selection))
    ringed = [c for c in ax.collections if c.get_linewidths().size and c.get_linewidths()[0] == 2.5]
    assert [len(c.get_offsets()) for c in ringed] == ([int(picked.sum())] if picked.any() else [])
    if picked.any():
        np.testing.assert_allclose(ringed[0].get_offsets(), points[picked, :2])


# -- fill_mask: painted from its state (paint_fill_mask), on a hand-made view (no model runs) -----------------------

OURS = "Not the model's own head: a toy head trained on the frozen encoder (top-1 40 % vs 9 % for word frequency)."


def _fill_view(text: str, k: int, model: Any, head: str = OURS) -> dict[str, Any]:
    """What fill_mask_view returns, made by hand: two [MASK], 2 layers x 3 heads, every query row."""
    tokens = ["[CLS]", "the", "[MASK]", "sat", "on", "[MASK]", "[SEP]"]
    att = np.random.default_rng(7).dirichlet(np.ones(len(tokens)), size=(2, 3, len(tokens))).astype(np.float32)
    positions = [2, 5]
    fills = [{"tokens": ["cat", "dog", "man"][:k], "probs": [0.62, 0.2, 0.05][:k]},
             {"tokens": ["mat", "floor", "bed"][:k], "probs": [0.08, 0.07, 0.01][:k]}]
    return {"tokens": tokens, "positions": positions, "fills": fills,
            "rows": np.ascontiguousarray(att[:, :, positions].transpose(2, 0, 1, 3)), "attention": att,
            "model": "toy-bert", "head": head}


def _fill_mask(note: str = OURS, **kwargs: Any) -> aw.FillMask:
    from attnwidgets.studies import masked_lm

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(masked_lm, "fill_mask_view", lambda text, k, model: _fill_view(text, k, model, note))
        return aw.FillMask("the [MASK] sat on [MASK]", k=3, **kwargs)


FILL_CASES: dict[str, Callable[[], aw.FillMask]] = {
    "first mask, last layer": lambda: _fill_mask(),
    "second mask, one head, the model's own": lambda: _fill_mask("toy-bert's own head.", mask=1, layer=0, head=1),
    "two tokens summed": lambda: _fill_mask(selection=[1, 3], combine="sum"),
}


def _page_row(w: aw.FillMask) -> tuple[np.ndarray, str]:
    """The page's attention row and its title (js/src/views/fill_mask/state.ts selectionRow, shownRows and rowTitle),
    from the widget's traits."""
    payload = w._payload
    attention, positions, tokens = _unpack(payload["attention"]), payload["positions"], payload["tokens"]
    rows = list(w.selection) or [positions[w.mask]]
    heads = range(attention.shape[1]) if w.head < 0 else [w.head]
    block = attention[w.layer][list(heads)][:, rows]  # (heads, rows, tokens)
    row = block.sum(1).mean(0) / (1 if w.combine == "sum" else len(rows))
    which = "mean of the heads" if w.head < 0 else f"head {w.head}"
    if rows == [positions[w.mask]]:
        return row, f"Where [MASK] #{w.mask + 1} attends: layer {w.layer}, {which}"
    runs = len(rows) == 1 or rows[-1] - rows[0] == len(rows) - 1
    span = (" ".join(tokens[q] for q in rows) + f" ({rows[0]}–{rows[-1]})" if runs
            else " · ".join(tokens[q] for q in rows))
    many = f" attend ({w.combine} of {len(rows)} rows)" if len(rows) > 1 else " attends"
    return row, f"Where {span}{many}: layer {w.layer}, {which}"


def _same_row_title(picture: str, page: str, w: aw.FillMask) -> bool:
    """The picture's row title is the page's for the [MASK]'s own row; for a selection it has the page's parts (the
    selected tokens, their combine, the layer and head) in span_label's order ("sum of 2 rows: the sat"), which
    tests/widgets/test_span_more_views.py holds the twin to."""
    if picture == page or len(w.selection) < 2:
        return picture == page
    span, rest = page.removeprefix("Where ").split(f" attend ({w.combine} of {len(w.selection)} rows)")
    return picture == f"Where {w.combine} of {len(w.selection)} rows: {span} attends{rest}"


@pytest.mark.parametrize("case", list(FILL_CASES))
def test_the_fill_masks_picture_has_the_pages_title_note_axis_and_row(case):
    w = FILL_CASES[case]()
    meta, payload = w._meta, w._payload
    fig = fallback.twin_figure(w)
    ours = meta["head"].startswith("Not the model's own head")  # state.ts fillTitle
    assert _text(fig._suptitle) == f"{meta['model']} · fill in the [MASK]" + (" · attnwidgets' head" if ours else "")
    assert _text(fig._supxlabel) == _text(meta["head"])  # whose guesses these are, as the page prints beside them
    *bars, panel = fig.axes
    assert len(bars) == len(payload["fills"])
    for ax, fill in zip(bars, payload["fills"]):
        assert ax.get_xlim() == pytest.approx((0.0, 1.0))  # the page's one fixed 0–100 % axis
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0 %", "50 %", "100 %"]
        np.testing.assert_allclose([b.get_width() for b in ax.patches], fill["probs"][::-1])
        assert [t.get_text() for t in ax.get_yticklabels()] == [token_label(t) for t in fill["tokens"]][::-1]
    row, title = _page_row(w)
    assert _same_row_title(panel.get_title(), title, w), (panel.get_title(), title)
    np.testing.assert_allclose([b.get_height() for b in panel.patches], row, atol=1e-6)
    assert [t.get_text() for t in panel.get_xticklabels()] == [token_label(t) for t in payload["tokens"]]


# -- head_stats_grid: painted from its state (paint_head_stats_grid) ------------------------------------------------

STATS_CASES: dict[str, Callable[[], aw.HeadStatsGrid]] = {
    "first choice, one head": lambda: aw.HeadStatsGrid(_result(), layer=1, head=2),
    "entropy, a layer, viridis": lambda: aw.HeadStatsGrid(_result(8), statistic="entropy", layer=0, head=-1,
                                                          colormap="viridis"),
    "signed, lecture": lambda: aw.HeadStatsGrid(HeadStats(
        {"logit_share": np.array([[0.5, -1.0, 0.25], [0.1, 0.0, -0.5]])}, "toy", signed=("logit_share",)),
        layer=1, head=0, theme="lecture"),
    "below zero": lambda: aw.HeadStatsGrid({"gain": np.array([[-0.5, -0.25], [-2.0, 0.0]])}, layer=0, head=1),
}


def _page_grid_scale(values: np.ndarray, signed: bool) -> tuple[float, float]:
    """js/src/views/head_stats_grid/paint.ts paintGrid's lo, hi: ±absMax for a signed statistic, else
    draw/heads.ts statRange (from 0 when never negative)."""
    finite = values[np.isfinite(values)]
    if signed:
        half = max(float(np.abs(finite).max()), 1e-12)
        return -half, half
    lo, hi = float(finite.min()), float(finite.max())
    return (0.0, hi if hi > 0 else 1.0) if lo >= 0 else (lo, hi)


@pytest.mark.parametrize("case", list(STATS_CASES))
def test_the_head_stats_grids_picture_has_the_pages_title_scale_labels_and_selection(case):
    w = STATS_CASES[case]()
    meta, stat = w._meta, w.statistic
    fig = fallback.twin_figure(w)
    ax, bar = fig.axes[:2]
    label = meta["labels"][stat]  # state.ts gridTitle and statLabel (the legend's label)
    assert _text(ax.get_title()) == f"{meta['title']} · {label}"
    assert _text(bar.get_ylabel()) == label
    values = _unpack(w._payload["stats"])[meta["names"].index(stat)].astype(np.float64)
    mesh = ax.collections[0]
    assert mesh.get_clim() == pytest.approx(_page_grid_scale(values, stat in meta["signed"]))
    np.testing.assert_allclose(np.ma.filled(mesh.get_array(), np.nan).reshape(values.shape), values, atol=1e-6)
    want = {"": {"light": "Blues", "lecture": "viridis"}[w.theme], "viridis": "viridis"}[w.colormap]
    if case.startswith("signed"):
        assert meta["signed"] == [stat]
        want = {"light": "RdBu_r", "lecture": "PuOr_r"}[w.theme]  # draw/diverging.ts: rdbu, or puor in lecture
    assert mesh.get_cmap().name == want
    n_layers, n_heads = meta["shape"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(h) for h in range(n_heads)]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(lay) for lay in range(n_layers)]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("head", "layer")
    (outline,) = ax.patches  # paint.ts drawOutlines: the selected head, or its whole layer for head -1
    x, width = (0, n_heads) if w.head < 0 else (w.head, 1)
    assert (outline.get_x(), outline.get_y(), outline.get_width(), outline.get_height()) == (x, w.layer, width, 1)


def test_the_head_stats_grids_picture_follows_the_pages_statistic_and_selection():
    w = STATS_CASES["first choice, one head"]()
    first = _text(fallback.twin_figure(w).axes[0].get_title())
    w.statistic, w.layer, w.head = "prev", 0, 3
    ax = fallback.twin_figure(w).axes[0]
    assert _text(ax.get_title()) != first and _text(ax.get_title()).endswith(w._meta["labels"]["prev"])
    assert (ax.patches[0].get_x(), ax.patches[0].get_y()) == (3, 0)


# -- head_view: painted from its state (paint_head_view) ------------------------------------------------------------

def _pair(seed: int = 9) -> aw.AttentionResult:
    """A sentence pair: [CLS] the cat [SEP] | a dog [SEP], 2 layers x 3 heads."""
    tokens = ["[CLS]", "the", "cat", "[SEP]", "a", "dog", "[SEP]"]
    a = np.random.default_rng(seed).random((2, 3, 7, 7), dtype=np.float32) ** 3
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens, name="pair",
                                          segment_ids=np.array([0, 0, 0, 0, 1, 1, 1]))


HEAD_VIEW_CASES: dict[str, Callable[[], aw.HeadView]] = {
    "every head": lambda: aw.HeadView(_result(), layer=1),
    "two heads, words, two rows": lambda: aw.HeadView(_result(), layer=0, heads=[1, 3], words=True, selected=[1, 2]),
    "one head, A to B": lambda: aw.HeadView(_pair(), layer=1, head=2, sentence_filter="AB", min_weight=0.05),
    "a window": lambda: aw.HeadView(_result(3), layer=1, heads=[0, 2], window=[1, 4]),
}


def _page_lines(w: aw.HeadView) -> tuple[dict[int, np.ndarray], list[str], list[str], list[int]]:
    """What the page draws (js/src/views/head_view/: state.ts columnsOf, windowColumns, keeps, lineThreshold,
    queriesDrawn; paint.ts paintLines), from the widget's traits: per head its (query, key, weight) lines, the query
    and key labels, the selected rows."""
    payload, meta, kind = w._payload, w._meta, w.kind
    labels = payload["labels"] if w.words else meta
    (qt, kt), (qs, ks) = labels["tokens"][kind], labels["segments"][kind]
    a = unpack(payload["heads"])
    win = payload["heads"].get("window")
    if win:
        far = win["far"]
        qt, qs = qt[win["q"][0]:win["q"][1]], qs[win["q"][0]:win["q"][1]]
        kt, ks = ([*kt[win["k"][0]:win["k"][1]], *(f"#{p} {kt[p]}" for p in far)],
                  [*ks[win["k"][0]:win["k"][1]], *(ks[p] for p in far)])
    q0 = win["q"][0] if win else 0
    rows = [q - q0 for q in w.selected if 0 <= q - q0 < len(qt)]
    n = max(len(qt), len(kt) + (1 if win and win["far"] else 0))
    floor = max(w.min_weight, 0.1) if n > 128 and not rows else w.min_weight
    side = {"A": 0, "B": 1}
    lines = {}
    for h in w.heads:
        found = []
        for q in rows or range(len(qt)):
            for k in range(len(kt)):
                f = w.sentence_filter
                kept = f == "all" or (qs[q] == side[f[0]] and ks[k] == side[f[1]])
                if kept and a[h, q, k] >= floor and a[h, q, k] > 0:
                    found.append((q, k, a[h, q, k]))
        lines[h] = np.array(found).reshape(-1, 3)
    return lines, qt, kt, rows


@pytest.mark.parametrize("case", list(HEAD_VIEW_CASES))
def test_the_head_views_picture_has_the_pages_title_heads_lines_and_labels(case):
    w = HEAD_VIEW_CASES[case]()
    meta, win = w._meta, w._payload["heads"].get("window")
    ax = fallback.twin_figure(w).axes[0]
    which = f"{w.kind} attention"  # state.ts titleText
    where = f" · tokens {win['q'][0]}–{win['q'][1] - 1} of {win['n'][0]}" if win else ""
    assert _text(ax.get_title()) == f"{meta['title']} · {which} · layer {w.layer}{' · words' if w.words else ''}{where}"
    lines, queries, keys, rows = _page_lines(w)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [str(h) for h in w.heads]  # the swatches shown
    assert [c.get_label() for c in ax.collections] == [f"head {h}" for h in w.heads]
    n_win = win["k"][1] - win["k"][0] if win else len(keys)
    for h, collection in zip(w.heads, ax.collections):
        drawn = sorted((round(s[0][1]), round(s[1][1]), round(float(c[3]), 4))
                       for s, c in zip(collection.get_segments(), collection.get_colors()))
        # paint.ts paintLines: opacity max(0.06, (step + 1) / 16), step = the weight in 16ths (at most 15)
        step = np.minimum(15, np.floor(np.minimum(1, lines[h][:, 2]) * 16))
        keys_y = [k if k < n_win else k + 1 for k in lines[h][:, 1].astype(int)]  # far keys after a gap row
        want = sorted(zip(lines[h][:, 0].astype(int).tolist(), keys_y,
                          np.round(np.maximum(0.06, (step + 1) / 16), 4).tolist()))
        assert drawn == want and drawn, h
    texts = [t for t in ax.texts if t.get_position()[0] in (-0.03, 1.03)]
    left = [t.get_text() for t in texts if t.get_position()[0] < 0]
    right = [t.get_text() for t in texts if t.get_position()[0] > 0 and t.get_text() != "far keys:"]
    assert left == [token_label(q, 20) for q in queries]  # paint.ts: fitToken(…, 20) left, 24 right
    assert right == [token_label(k, 24) for k in keys]
    marked = [t.get_text() for t in texts if t.get_position()[0] < 0 and t.get_color() == "#d1242f"]
    assert marked == [token_label(queries[r], 20) for r in rows]  # the selected rows, in the accent colour
    # a sentence pair's segments, "A" / "B" at each run's first row outside both columns (paint.ts paintSegments)
    (qseg, kseg) = (meta["segments"][w.kind][0][:len(queries)], meta["segments"][w.kind][1][:len(keys)])
    pair = not win and (1 in qseg or 1 in kseg)
    for side, seg in ((-0.47, qseg), (1.47, kseg)):
        letters = [(t.get_text(), round(t.get_position()[1])) for t in ax.texts if t.get_position()[0] == side]
        runs = [(("B" if seg[i] else "A"), i) for i in range(len(seg)) if i == 0 or seg[i] != seg[i - 1]]
        assert letters == (runs if pair else []), (side, letters)


# -- ablation: painted from its state (paint_ablation), on the bundled model --------------------------------------

def _ablation(edits: list[dict[str, Any]], **traits: Any) -> aw.AblationWidget:
    w = aw.AblationWidget(["The cat sat on the mat.", "A dog barked."], **traits)
    w.ablation = {"edits": edits}
    return w


ABLATION_CASES: dict[str, Callable[[], aw.AblationWidget]] = {
    "nothing off": lambda: aw.AblationWidget(["The cat sat on the mat."], layer=2, head=3),
    "a head and a layer off, two rows": lambda: _ablation(
        [{"stack": "self", "layer": 1, "head": 2, "mode": "zero"},
         {"stack": "self", "layer": 3, "head": None, "mode": "uniform"}], layer=1, head=2, selection=[1, 2]),
    "a head scaled, one row summed, lecture": lambda: _ablation(
        [{"stack": "self", "layer": 0, "head": 5, "mode": "scale", "scale": 0.5}], layer=0, head=5, item=1,
        selection=[3], combine="sum", theme="lecture"),
    # two watched names on change axes of their own; the rows' sums stay 1 up to float rounding (no axis, no bar)
    "two watched names, one only rounding": lambda: _ablation(
        [{"stack": "self", "layer": 3, "head": 0, "mode": "zero"}], layer=3, head=0,
        watch=lambda r: {"[CLS] share": float(r.attention[-1, :, 1:, 0].mean()),
                         "row sum": float(r.attention[-1].astype(np.float64).sum(-1).mean())}),
}


def _page_ablation_caption(w: aw.AblationWidget) -> str:
    """The maps' caption (js/src/views/ablation/state.ts mapTitleText, movedText; spanCompare), from the traits."""
    hm = w._payload["map"]
    before, after = (np.nan_to_num(_unpack(hm[k]).astype(np.float64)) for k in ("before", "after"))
    vmax = max(before.max(initial=0), after.max(initial=0)) or 1.0
    text = f"{'' if w.kind == 'self' else w.kind + ' · '}layer {w.layer} · head {w.head}, same colour scale " \
           f"(max {vmax:.3f})"
    sel = [q for q in w.selection if q < len(hm["queries"])]
    if sel:
        rows = [(m[sel].sum(0) / (1 if w.combine == "sum" else len(sel))) for m in (before, after)]
        moved = float(np.abs(rows[1] - rows[0]).sum() / 2)
        span = " ".join(hm["queries"][q] for q in sel) + (f" ({sel[0]}–{sel[-1]})" if len(sel) > 1 else f" ({sel[0]})")
        text += f" · rows {span}: ½ Σ |after − before| = {moved:.3f}"
    return text


def _page_changes(rows: list[dict[str, Any]]) -> list[float]:
    """The change bars' widths as shares of the track (state.ts deltaRanges: each name's largest |delta| of at least
    5e-5, NO_CHANGE; deltaSpan: half the track for the largest)."""
    def big(r: dict[str, Any]) -> float:
        d = abs(r["delta"]) if r["delta"] is not None else 0.0
        return d if d >= 5e-5 else 0.0

    spans = {r["name"]: max(big(q) for q in rows if q["name"] == r["name"]) for r in rows}
    return [0.0 if not spans[r["name"]] or r["delta"] is None else min(1.0, abs(r["delta"]) / spans[r["name"]]) / 2
            for r in rows]


def _page_bars(rows: list[dict[str, Any]]) -> tuple[list[float], str]:
    """The watched numbers' bar widths, before then after per row (state.ts barRange of each name, barSpan), and
    the change axis's label (deltaRanges' largest, deltaAxisText)."""
    widths = []
    for r in rows:
        values = [v for q in rows if q["name"] == r["name"] for v in (q["before"], q["after"]) if v is not None]
        lo, hi = min([0.0, *values]), max([0.0, *values])
        hi = lo + 1 if lo == hi else hi
        widths += [max(abs((v - lo) / (hi - lo) - (0 - lo) / (hi - lo)), 0.004)
                   for v in (r["before"], r["after"]) if v is not None]
    widest = max([abs(r["delta"]) for r in rows if r["delta"] is not None and abs(r["delta"]) >= 5e-5], default=0.0)
    digits = max(2, min(6, 1 - int(np.floor(np.log10(widest))))) if widest > 0 else 0
    return widths, f"change, axis ±{widest:.{digits}f}" if widest > 0 else "change: none"


@pytest.mark.parametrize("case", list(ABLATION_CASES))
def test_the_ablations_picture_has_the_pages_title_grid_numbers_and_maps(case):
    w = ABLATION_CASES[case]()
    payload = w._payload
    fig = fallback.twin_figure(w)
    grid, values, changes, before, after = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"][:5]
    assert _text(fig._suptitle) == f"{payload['title']} · ablation"  # index.ts drawOutput
    assert _text(values.get_title("left")) == f"watching: {payload['watch']}"
    # the grid: a layer's own edit says "off"; a head's edit its letter (× zero, U uniform, M mean, .50 a scale)
    n_layers, n_heads = payload["stacks"][w.kind]
    edits = payload["ablation"]["edits"]
    off = {e["layer"] for e in edits if e["head"] is None}
    assert [t.get_text() for t in grid.get_yticklabels()] == [f"layer {lay}{' off' if lay in off else ''}"
                                                              for lay in range(n_layers)]
    assert [t.get_text() for t in grid.get_xticklabels()] == [str(h) for h in range(n_heads)]
    letters = {(e["layer"], e["head"]): {"zero": "×", "uniform": "U", "mean": "M"}.get(
        e["mode"], f"{e['scale']:.2f}".removeprefix("0")) for e in edits if e["head"] is not None}
    drawn = {(int(t.get_position()[1]), int(t.get_position()[0])): t.get_text() for t in grid.texts if t.get_text()}
    assert drawn == letters
    outline = [p for p in grid.patches if not p.get_fill()]
    assert [(p.get_x(), p.get_y()) for p in outline] == [(w.head, w.layer)]  # the selected head
    # the watched numbers: each on its own name's axis, the change on one axis
    widths, axis = _page_bars(payload["rows"])
    assert [_text(t) for t in values.get_yticklabels()] == [r["name"] for r in payload["rows"]]
    np.testing.assert_allclose([p.get_width() for p in values.patches], widths, atol=1e-9)
    assert _text(changes.get_xlabel()) == axis
    np.testing.assert_allclose([p.get_width() for p in changes.patches], _page_changes(payload["rows"]), atol=1e-9)
    # the maps: one colour scale, the page's labels and caption
    hm = payload["map"]
    top = max(float(np.nan_to_num(_unpack(hm[k])).max(initial=0)) for k in ("before", "after")) or 1.0
    for ax in (before, after):
        assert ax.collections[0].get_clim() == pytest.approx((0.0, top))
        assert [t.get_text() for t in ax.get_xticklabels()] == [token_label(k) for k in hm["keys"]]
        assert [t.get_text() for t in ax.get_yticklabels()] == [token_label(q) for q in hm["queries"]]
    assert _text(fig._supxlabel) == _page_ablation_caption(w)


# -- qk: painted from its state (paint_qk) ---------------------------------------------------------------------------

def _bias_captures() -> list[QKCapture]:
    """A T5-like capture: a position bias with buckets, no scaling."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.normal(size=(2, len(TOKENS), 4)) for _ in range(3))
    bucket = np.abs(np.subtract.outer(np.arange(len(TOKENS)), np.arange(len(TOKENS))))
    return [QKCapture.from_vectors(q, k, v, TOKENS, scaling=1.0, bias=rng.normal(size=(2, 6, 6)), bucket=bucket)]


QK_CASES: dict[str, Callable[[], aw.QKStepThrough]] = {
    "one query": lambda: aw.QKStepThrough(_captures(), layer=1, head=1, query=3),
    "two selected": lambda: aw.QKStepThrough(_captures(), layer=0, head=2, selection=[4, 5]),
    "a window and its far keys": lambda: aw.QKStepThrough(_captures(), layer=1, head=0, query=2, window=[1, 4]),
    "position bias, unscaled": lambda: aw.QKStepThrough(_bias_captures(), head=1, query=4),
    "causal, later keys masked": lambda: aw.QKStepThrough(_causal_captures(), head=0, query=2),
}


def _causal_captures() -> list[QKCapture]:
    """A decoder's capture: query i sees keys 0..i; the later keys' q·k are large, so a scale that counted them
    would show."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(1, len(TOKENS), 4)) for _ in range(3))
    k[:, 3:] *= 10
    return [QKCapture.from_vectors(q, k, v, TOKENS, mask=np.tril(np.ones((6, 6), bool)))]


def _page_panels(meta: dict[str, Any]) -> list[str]:
    """js/src/views/qk/state.ts panels: the panels' titles, numbered; "× 1/√d" when the model scales by it."""
    scaling = meta["scaling"]
    root_d = abs(scaling - 1 / np.sqrt(meta["head_dim"])) < 1e-6
    steps = ["query q, keys k", "q ⊙ k", "q · k", "× 1/√d" if root_d else f"× {float(f'{scaling:.3g}'):g}",
             *(["+ bias"] if meta["bias"] else []), "softmax", "Σ weight × v"]
    return [f"{'①②③④⑤⑥⑦'[n]} {step}" for n, step in enumerate(steps)]


@pytest.mark.parametrize("case", list(QK_CASES))
def test_the_qk_pictures_panels_have_the_pages_titles_scales_and_rows(case):
    w = QK_CASES[case]()
    meta, arrays = w._meta, {name: _unpack(p) for name, p in w._payload["arrays"].items()}
    fig = fallback.twin_figure(w)
    n_panels = len(_page_panels(meta))
    top, body = fig.axes[:n_panels], fig.axes[n_panels:]
    page_title = f"{meta['title']} · {meta['stack']} attention · layer {w.layer} · head {w.head}"  # titleText
    assert _text(fig._suptitle).startswith(page_title + f" · query {w.query} ({token_label(meta['tokens'][w.query])})")
    assert [ax.get_title() for ax in top] == _page_panels(meta)
    windowed = "keys" in arrays  # state.ts queryRow: a window holds its one query's row
    i = 0 if windowed else w.query
    pos = arrays["keys"].astype(int) if windowed else np.arange(len(meta["key_tokens"]))
    n_win = w.window[1] - w.window[0] if windowed else len(pos)
    rows = [f"{'far #' if j >= n_win else ''}{p} " * windowed + token_label(meta["key_tokens"][p])
            for j, p in enumerate(pos)]  # state.ts rowLabel
    assert [t.get_text() for t in body[0].get_yticklabels()] == rows
    allowed = arrays["mask"][i] > 0.5
    softmax = body[-2]
    np.testing.assert_allclose([b.get_width() for b in softmax.patches], arrays["weights"][i], rtol=1e-6)
    assert softmax.get_xlim() == (0, 1)
    logits = np.where(allowed, arrays["logits"][i], 0)
    np.testing.assert_allclose([b.get_width() for b in body[2].patches], logits, rtol=1e-6)
    lim = np.abs(logits).max() or 1  # paint.ts paintBars: the largest |value| of the keys the query sees
    assert body[2].get_xlim() == pytest.approx((-1.05 * lim, 1.05 * lim))
    qk_max = np.abs(np.concatenate([arrays["q"][i], arrays["k"].ravel()])).max()  # paintQK: absMax(q, k)
    assert body[0].get_images()[0].get_clim() == pytest.approx((-qk_max, qk_max))
    marked = [t.get_text() for t in body[0].get_yticklabels() if t.get_fontweight() == "bold"]
    assert marked == [rows[j] for j, p in enumerate(pos) if p in w.selection]


# -- generation: painted from its state (paint_generation) ---------------------------------------------------------

GENERATION_CASES: dict[str, Callable[[], aw.GenerationView]] = {
    "first step, one head": lambda: aw.GenerationView(_generation(), layer=1, head=0),
    "last step, mean of heads": lambda: aw.GenerationView(_generation(), layer=0, head=-1, step=3),
    "a prompt and a fed token selected": lambda: aw.GenerationView(_generation(), layer=1, head=2, step=2,
                                                                   selection=[1, 4]),
}


@pytest.mark.parametrize("case", list(GENERATION_CASES))
def test_the_generations_picture_has_the_pages_title_scale_and_labels(case):
    w = GENERATION_CASES[case]()
    meta, payload = w._meta, w._payload
    fig = fallback.twin_figure(w)
    text, grid, topk = fig.axes[:3]
    assert _text(fig._suptitle) == f"{meta['title']} · generated token {w.step + 1} of {len(meta['generated'])}"
    matrix = _unpack(payload["matrix"]).astype(np.float32)  # float16 on the wire
    top = float(np.nanmax(matrix)) or 1.0  # state.ts finiteMax: the map's and the text's one scale
    assert grid.get_images()[0].get_clim() == pytest.approx((0.0, top), rel=1e-3)
    np.testing.assert_allclose(np.ma.filled(grid.get_images()[0].get_array(), np.nan), matrix, atol=1e-3)
    assert [t.get_text() for t in grid.get_yticklabels()] == [token_label(t) for t in meta["generated"]]
    assert [t.get_text() for t in grid.get_xticklabels()] == [token_label(t) for t in meta["keys"][w.kind]]
    probs = _unpack(payload["topk_probs"]).astype(np.float64)[w.step]
    np.testing.assert_allclose([b.get_width() for b in topk.patches], probs, rtol=1e-6)
    assert topk.get_xlim() == (0, 1)  # paint.ts paintTopk: one 0–100 % axis
    assert [t.get_text() for t in topk.get_yticklabels()] == [token_label(t) for t in meta["topk_tokens"][w.step]]
    row = matrix[w.step]
    shaded = [t for t in text.texts if t.get_bbox_patch() is not None]
    prompt = len(meta["prompt"])
    written = shaded[prompt + w.step]  # the token the step wrote, outlined
    assert written.get_text() == token_label(meta["generated"][w.step])
    face = shaded[0].get_bbox_patch().get_facecolor()
    expect = matplotlib.colormaps["Blues"](row[0] / top)  # the first key's shade, on the map's scale
    assert face == pytest.approx(expect, abs=2e-3)
    fed = [*meta["prompt"], *meta["generated"]][: meta["n_selectable"]]  # state.ts selectable
    underlined = [t.get_text() for t in shaded if t.get_fontweight() == "bold"]
    assert underlined == [token_label(fed[p]) for p in w.selection]  # the page's .aw-sel
    assert len(text.lines) == len(w.selection)


# -- aw.plots.paint: every view with a twin is drawn from its state through the registry -----------------------------

#: views with a twin that no painter draws yet, and why; a new view with a twin must have a painter or be named here.
NO_PAINTER: dict[str, str] = {
}


def test_every_view_with_a_twin_has_a_painter_or_is_named():
    missing = {v.name for v in VIEWS if v.twin is not None and v.paint is None}
    assert missing == set(NO_PAINTER)
    for v in VIEWS:
        if v.paint is not None:
            painter = getattr(aw.plots, v.paint)
            assert painter.__name__ == v.paint and v.paint in aw.plots.__all__


BUILT: dict[str, Callable[[], Any]] = {
    "heatmap": lambda: aw.AttentionHeatmap(_result(), layer=1, head=2), **{
        name: (lambda p=p: p.values[0]()) for name, p in OTHER.items()},
}


@pytest.mark.parametrize("view", [v for v in VIEWS if v.paint is not None], ids=lambda v: v.name)
def test_paint_draws_every_painted_view_and_its_state(view):
    w = BUILT[view.name]()
    assert type(w.page_state()) is view.state
    by_view = _titles(aw.plots.paint(w))
    assert by_view and by_view == _titles(fallback.twin_figure(w))  # the picture a notebook keeps is this one
    assert _titles(aw.plots.paint(w.page_state()))


#: a view built, then moved to another map by its traits (the page fetches that map by a request: the synced
#: ``_payload`` keeps the first one), and what the picture's title must then say.
MOVED: dict[str, tuple[Callable[[], Any], dict[str, Any], str]] = {
    "heatmap": (lambda: aw.AttentionHeatmap(_result(), layer=1, head=2), {"layer": 0, "head": 3},
                "layer 0 · head 3"),
    "qk": (lambda: aw.QKStepThrough(_captures(), layer=1, head=1), {"layer": 0, "head": 2}, "layer 0 · head 2"),
    "qk window": (lambda: aw.QKStepThrough(_captures(), layer=1, head=1, query=2, window=[1, 4]),
                  {"window": [2, 5]}, "keys 2–4 of 6"),
    "generation": (lambda: aw.GenerationView(_generation(), layer=1, head=0),
                   {"layer": 0, "head": 2, "step": 1}, "generated token 2 of 4"),
}


@pytest.mark.parametrize("case", list(MOVED))
def test_the_picture_follows_the_view_the_traits_choose_after_it_is_built(case):
    make, moves, says = MOVED[case]
    w = make()
    for name, value in moves.items():
        setattr(w, name, value)
    titles = " | ".join(_titles(fallback.twin_figure(w)))
    assert says in titles, titles
    if "layer" in moves:
        assert f"layer {moves['layer']}" in titles


def test_paint_reads_the_pages_traits_and_refuses_a_stranger():
    w = aw.EntropyBars(_result(5), rows="cls")
    assert _titles(aw.plots.paint(w))[0].endswith("[CLS] row")
    assert _titles(aw.plots.paint(w.page_state()))[0].endswith("all rows")  # a bare state: the painter's default
    assert _titles(aw.plots.paint(w, rows="all"))[0].endswith("all rows")
    with pytest.raises(ValueError, match="no view's state"):
        aw.plots.paint(object())
