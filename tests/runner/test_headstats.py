"""Statistics made in torch with the weights (runner.headstats) against the numpy path they replace.

Every family the lazy tests cover: each statistic (surface statistics, entropies, sink shares, pattern features, the
corpus sums) from the runner's summary equals the numpy computation over rebuilt rows to 1e-5; the overview a heatmap
and a model view draw is the exact block max / mean; an out-of-memory block says its size and what to try; an
interrupted pass caches nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnwidgets.analysis.blocks import run_blocks
from attnwidgets.analysis.corpus import CorpusStats
from attnwidgets.analysis.patterns import PatternBlocks
from attnwidgets.analysis.sinks import sink_shares
from attnwidgets.analysis.surface import SurfaceBlocks, surface_from_summary, surface_stats
from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack, RelativeBias
from attnwidgets.result import AttentionResult, ModelInfo
from attnwidgets.runner import get_runner, headstats
from attnwidgets.viewdata.display import block_reduce, mask_future, reduce_head, region_of, result_thumbnails
from tests.runner.test_lazy_attention import FAMILIES, TEXT

PAIR = "The dog barked."


def _without_summary(result: AttentionResult) -> AttentionResult:
    """The same queries and keys in a stack that holds no summary: the numpy path."""
    stack = result.stack("self")
    assert isinstance(stack, LazyStack)
    return result.replace(attention=LazyStack(stack.layers))


def _deferred(result: AttentionResult) -> tuple[AttentionResult, LazyStack, list[tuple[int, ...]]]:
    """``result`` on a fresh stack whose summary is deferred as a run defers it, and the shapes of the stacks the
    maker was run on (the whole stack, or one head's), in order."""
    stack = LazyStack(result.stack().layers)
    made: list[tuple[int, ...]] = []

    def maker(s: LazyStack) -> dict[str, np.ndarray]:
        made.append(s.shape)
        return headstats.summarise(s, causal=True)

    stack.defer_summary(maker)
    return result.replace(attention=stack), stack, made


def _numpy_surface(result: AttentionResult) -> dict[str, np.ndarray]:
    acc = SurfaceBlocks(_without_summary(result))
    run_blocks(_without_summary(result), [acc])
    return acc.finish()


def _run(family: str, request: pytest.FixtureRequest) -> AttentionResult:
    path = request.getfixturevalue(family)
    runner = get_runner(path)
    pair = PAIR if family == "tiny_bert" else None  # sentence pairs: two [SEP] rows, segments
    return runner.run(TEXT, pair, truncation="error")


@pytest.mark.parametrize("family", FAMILIES)
def test_surface_statistics_from_the_summary_equal_numpy(family, request, no_dense) -> None:
    result = _run(family, request)
    assert result.is_lazy and result.stack().summary, "the runner made no summary"
    fast = surface_from_summary(result)
    assert fast is not None
    slow = _numpy_surface(result)
    assert list(fast) == list(slow)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-5, err_msg=f"{family}: {name}")
    assert surface_stats(result)["entropy"] is not None


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("keys", [(0,), (0, 1), (2,)])
def test_sink_shares_from_the_summary_equal_numpy(family, keys, request, no_dense) -> None:
    result = _run(family, request)
    fast = sink_shares(result, keys)
    slow = sink_shares(_without_summary(result), keys)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-5, err_msg=f"{family}: {keys}")


@pytest.mark.parametrize("family", FAMILIES)
def test_pattern_features_and_corpus_sums_from_the_summary_equal_numpy(family, request, no_dense) -> None:
    result = _run(family, request)
    slow_result = _without_summary(result)
    acc = PatternBlocks(slow_result)
    run_blocks(slow_result, [acc])
    slow = acc.finish()
    fast = PatternBlocks.from_summary(result)
    if bool((result.segment_ids == 1).any()):
        assert fast is None  # the within-segment share needs each row's mass per segment: numpy path
    else:
        assert fast is not None
        for name in slow:
            np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-5, err_msg=f"{family}: {name}")
    a, b = CorpusStats(), CorpusStats()
    a.add(result)
    b.add(slow_result)
    for name, value in b.mean().items():
        np.testing.assert_allclose(a.mean()[name], value, rtol=0, atol=1e-5, err_msg=f"{family}: {name}")


@pytest.mark.parametrize("family", ["tiny_gpt2", "tiny_bert", "tiny_mistral", "tiny_gpt_oss", "tiny_t5"])
@pytest.mark.parametrize("factor", [2, 5])
def test_every_heads_overview_is_the_exact_block_reduction(family, factor, request, no_dense) -> None:
    result = _run(family, request)
    stack = result.stack("self")
    causal = result.model.kind == "decoder"
    kept = headstats.summarise(stack, causal=causal, factor=factor)
    slow = _without_summary(result)
    fast = result.replace(attention=LazyStack(stack.layers))
    fast.stack().set_summary(kept)
    L = result.attention_shape()[0]
    for layer in range(L):
        for head in (None, -1):
            for how in ("max", "mean"):
                for discount in ((), (0,)):
                    want = reduce_head(slow, "self", layer, head, factor, how, budget=1 << 40, discount=discount)
                    got = reduce_head(fast, "self", layer, head, factor, how, discount=discount)
                    assert got.exact and got.factor == factor
                    # stored as float16: 3 significant digits are what a colour map shows
                    np.testing.assert_allclose(got.matrix, want.matrix, rtol=2e-3, atol=1e-4)
                    assert math.isclose(got.vmax, want.vmax, rel_tol=2e-3, abs_tol=1e-4)


def test_a_head_switch_at_length_is_a_lookup_and_tiles_stay_exact(no_dense, monkeypatch) -> None:
    """Past 1,024 tokens the heatmap's overview of any head and the model view's thumbnails come from the kept
    overviews (no row rebuilt; every row read, so exact); a tile is still computed, exactly, on demand."""
    import attnwidgets as aw
    from tests.lazy_helpers import lazy_result

    n = 2048
    r = lazy_result(n, layers=2, heads=3, kv_heads=3, seed=5)
    slow = _without_summary(r)
    assert headstats.attach_summary(r)
    w = aw.AttentionHeatmap(r, head=1)
    rebuilt: list[int] = []
    real_rows = LazyStack.rows

    def counted(self, *args, **kwargs):
        rebuilt.append(1)
        return real_rows(self, *args, **kwargs)

    monkeypatch.setattr(LazyStack, "rows", counted)
    reply = w.answer({"what": "matrix", "kind": "self", "layer": 1, "head": 2})[0]
    thumbs, factor, used = result_thumbnails(r, "self")
    assert not rebuilt, "a head switch or the thumbnails rebuilt rows"
    assert reply["factor"] == 4 and reply["rows_used"] == 4
    want = reduce_head(slow, "self", 1, 2, 4, budget=1 << 40)
    got = reduce_head(r, "self", 1, 2, 4)
    np.testing.assert_allclose(got.matrix, want.matrix, rtol=2e-3, atol=1e-4)
    want_thumbs, want_factor, _ = result_thumbnails(slow, "self", budget=1 << 40)
    assert (factor, used) == (want_factor, want_factor) == (64, 64)
    assert np.abs(thumbs.astype(int) - want_thumbs.astype(int)).max() <= 1
    block, q0, k0 = region_of(r, "self", 1, 2, 1000, 1010, 990, 1010)
    assert rebuilt, "a tile must be computed from queries and keys"
    exact = slow.rows(1, 1000, 1010, head=2)[:, 990:1010].copy()
    exact[np.arange(20)[None, :] + 990 > np.arange(1000, 1010)[:, None]] = np.nan  # the causal future, as drawn
    np.testing.assert_array_equal(block, exact)
    assert (q0, k0) == (1000, 990)


def test_hand_computed_uniform_causal_attention() -> None:
    """Equal keys: row i spreads 1 / (i + 1) over keys 0..i. Entropy ln(i + 1), key 0's column sum H_n, self and
    previous 1 / (i + 1) (previous from row 1 on), next 0."""
    n, heads = 6, 2
    q = np.ones((heads, n, 4), np.float32)
    k = np.ones((1, n, 4), np.float32)
    stack = LazyStack((LayerQK(q, k, 0.5, KeyMask.causal(n, n)),))
    s = headstats.summarise(stack, causal=True, factor=1)
    i = np.arange(n)
    np.testing.assert_allclose(s["entropy"][0, 0], np.log(i + 1), atol=1e-6)
    np.testing.assert_allclose(s["colsum"][0, 1, 0], (1 / (i + 1)).sum(), atol=1e-6)
    np.testing.assert_allclose(s["colsum"][0, 0, n - 1], 1 / n, atol=1e-7)
    np.testing.assert_allclose(s["diag"][0, 0, 1], 1 / (i + 1), atol=1e-7)
    np.testing.assert_allclose(s["diag"][0, 0, 0], np.r_[0, 1 / (i[1:] + 1)], atol=1e-7)
    assert not s["diag"][0, :, 2].any()
    info = ModelInfo(name="hand", kind="decoder", n_layers=1, n_heads=heads, max_length=n)
    toks = ["<s>"] + ["a"] * (n - 1)
    r = AttentionResult(tokens=toks, token_ids=np.arange(n), word_ids=np.r_[-1, np.arange(n - 1)],
                        segment_ids=np.zeros(n, np.int64), special_mask=np.r_[True, np.zeros(n - 1, bool)],
                        attention=stack, model=info)
    stack.set_summary(s)
    # sink share on key 0 over rows 1..5: mean of 1 / (i + 1)
    np.testing.assert_allclose(sink_shares(r), (1 / (i[1:] + 1)).mean(), atol=1e-6)
    np.testing.assert_allclose(surface_stats(r)["entropy"], np.log(i + 1).mean(), atol=1e-6)


def test_a_loaded_result_says_once_that_it_uses_numpy(no_dense) -> None:
    from attnwidgets.analysis import blocks
    from tests.lazy_helpers import lazy_result

    blocks._said.clear()
    r = lazy_result(32)
    with pytest.warns(UserWarning, match="said once"):
        surface_stats(r)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        surface_stats(lazy_result(32, seed=1))  # not again
    assert headstats.attach_summary(r)
    np.testing.assert_allclose(surface_stats(r)["entropy"], _numpy_surface(r)["entropy"], atol=1e-5)


def test_bfloat16_queries_are_measured_in_float32(no_dense) -> None:
    """A bf16 model's captured queries and keys are float32 copies; the pass accumulates in float32 and float64."""
    from tests.lazy_helpers import lazy_result

    r = lazy_result(40, seed=3)
    stack = r.stack()
    rounded = LazyStack(tuple(LayerQK(torch.from_numpy(x.query).bfloat16().float().numpy(),
                                      torch.from_numpy(x.key).bfloat16().float().numpy(), x.scaling, x.mask)
                              for x in stack.layers))
    r = r.replace(attention=rounded)
    s = headstats.summarise(rounded, causal=True, factor=1)
    assert s["colsum"].dtype == np.float64 and s["entropy"].dtype == np.float64
    rounded.set_summary(s)
    fast, slow = surface_stats(r), _numpy_surface(r)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], atol=1e-5, err_msg=name)


def test_out_of_memory_names_the_block_and_what_to_try(tiny_gpt2, no_dense, monkeypatch) -> None:
    """The pass runs when a statistic first asks: out of memory there is a DeviceMemoryError naming the block and
    what to try, the result keeps no summary, and the next ask (memory freed) makes it whole."""
    runner = get_runner(tiny_gpt2)
    result = runner.run(TEXT + " out of memory", truncation="error")
    real = headstats._weights

    def full(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    monkeypatch.setattr(headstats, "_weights", full)
    with pytest.raises(headstats.DeviceMemoryError, match=r"rows x \d+ keys x \d+ heads is .*B.*block_bytes=.*"
                                                          r"device='cpu'"):
        surface_stats(result)
    assert result.stack().summary_pending and not result.stack()._summary
    monkeypatch.setattr(headstats, "_weights", real)
    fast, slow = surface_stats(result), _numpy_surface(result)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], atol=1e-5, err_msg=name)


def test_a_run_pays_for_its_forward_and_the_first_ask_for_the_pass(tiny_gpt2, no_dense, monkeypatch) -> None:
    """``run`` leaves the pass as a maker on the stack: no block is computed until a statistic (or a view) asks;
    then it runs once, and the cached result shares it with every later run of the input."""
    runner = get_runner(tiny_gpt2)
    text = TEXT + " deferred pass"
    real = headstats._weights
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(headstats, "_weights", counted)
    result = runner.run(text, truncation="error")
    assert not calls and result.stack().summary_pending
    first = surface_stats(result)
    made = len(calls)
    assert made >= result.attention_shape()[0] and not result.stack().summary_pending
    again = runner.run(text, truncation="error")
    assert again.stack() is result.stack()
    second = surface_stats(again)
    assert len(calls) == made, "the pass ran twice"
    np.testing.assert_array_equal(first["entropy"], second["entropy"])
    assert not headstats.attach_summary(result)  # made already: nothing to do


def test_a_view_opens_from_rows_and_makes_the_pass_in_the_background(tiny_gpt2, no_dense, monkeypatch) -> None:
    """Opening a view of a pending result never waits for the pass in the kernel's thread: its first map comes from
    rows, the pass starts in a background thread (once), and a statistic asked meanwhile waits for that pass instead
    of making a second one; afterwards the map is the pass's overview, equal to the rows' block max."""
    import threading

    import attnwidgets as aw

    runner = get_runner(tiny_gpt2)
    result = runner.run(TEXT + " warmed in the background", truncation="error")
    stack = result.stack()
    assert stack.summary_pending
    real = headstats._weights
    gate, threads = threading.Event(), set()

    def held(*args, **kwargs):
        threads.add(threading.current_thread().name)
        gate.wait(30)  # the pass waits until the view has opened
        return real(*args, **kwargs)

    monkeypatch.setattr(headstats, "_weights", held)
    view = aw.AttentionHeatmap(result, layer=1, head=0)
    assert stack.summary_pending and not stack.summary_made  # the first map came from rows
    first = view.answer({"what": "matrix", "kind": "self", "layer": 1, "head": 0, "words": False})
    assert not stack.warm_summary()  # one pass at a time
    gate.set()
    stats = surface_stats(result)  # waits for the background pass
    assert threads == {"attnwidgets-summary"}, threads
    assert not stack.summary_pending and stack.summary_made
    np.testing.assert_allclose(stats["entropy"], _numpy_surface(result)["entropy"], atol=1e-5)
    again = view.answer({"what": "matrix", "kind": "self", "layer": 1, "head": 0, "words": False})
    assert again[0]["shape"] == first[0]["shape"]
    np.testing.assert_allclose(np.frombuffer(again[1][0], np.float32), np.frombuffer(first[1][0], np.float32),
                               atol=1e-6)


def test_an_interrupted_pass_caches_nothing_and_a_rerun_is_whole(tiny_gpt2, no_dense, monkeypatch) -> None:
    runner = get_runner(tiny_gpt2)
    text = TEXT + " interrupted pass"
    result = runner.run(text, truncation="error")
    real = headstats._weights
    calls: list[int] = []

    def interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # after the first block's sums went into the arrays
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(headstats, "_weights", interrupt)
    with pytest.raises(KeyboardInterrupt):
        surface_stats(result)
    assert len(calls) == 2 and not result.stack()._summary and result.stack().summary_pending
    monkeypatch.setattr(headstats, "_weights", real)
    fast, slow = surface_stats(result), _numpy_surface(result)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], atol=1e-5, err_msg=name)
    assert runner.cached(runner.cache_key(text, truncation="error")) is result


def test_the_summary_is_read_only_and_counted(tiny_gpt2, no_dense) -> None:
    result = get_runner(tiny_gpt2).run(TEXT, truncation="error")
    stack = result.stack()
    assert all(not a.flags.writeable for a in stack.summary.values())
    qk = sum(x.query.nbytes + x.key.nbytes for x in stack.layers)
    assert result.nbytes >= qk + sum(a.nbytes for a in stack.summary.values())


@pytest.mark.parametrize("family", ["tiny_llama", "tiny_bert"])
def test_a_bfloat16_model_is_measured_in_float32(family, request, no_dense) -> None:
    """bfloat16 weights: the captured queries and keys are float32 copies, the pass computes and sums in float32
    (rows, blocks) and float64 (over blocks), and agrees with the numpy path to 1e-5."""
    runner = get_runner(request.getfixturevalue(family), dtype="bfloat16")
    result = runner.run(TEXT, truncation="error")
    stack = result.stack()
    assert stack.layers[0].query.dtype == np.float32 and stack.summary["colsum"].dtype == np.float64
    fast, slow = surface_stats(result), _numpy_surface(result)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-5, err_msg=f"{family}: {name}")


def _stack(causal: bool, n: int = 300, heads: int = 4, kv: int = 2, d: int = 8) -> LazyStack:
    """Three layers that take every path of the pass: grouped-query keys, a causal / sliding-window / packed mask
    (keys outside an interval, and a row that sees no key), a position bias with a soft-cap, sinks."""
    rng = np.random.default_rng(11)

    def qk() -> tuple[np.ndarray, np.ndarray]:
        return (rng.normal(size=(heads, n, d)).astype(np.float32) * 1.5,
                rng.normal(size=(kv, n, d)).astype(np.float32))

    if causal:
        masks = [KeyMask.causal(n, n), KeyMask.causal(n, n, window=37), KeyMask.causal(n, n)]
    else:
        allowed = (np.arange(n)[:, None] // 60 == np.arange(n)[None, :] // 60) | (np.arange(n)[None, :] % 7 == 0)
        allowed[5] = False  # a row that sees no key: weights 0, entropy 0
        masks = [KeyMask.full(n, n), KeyMask.from_allowed(allowed), KeyMask.full(n, n)]
    dist = np.arange(n)[None, :] - np.arange(n)[:, None]
    bias = RelativeBias.from_dense(np.stack([-0.05 * (h + 1) * np.abs(dist) for h in range(heads)]).astype(np.float32))
    layers = []
    for i, mask in enumerate(masks):
        q, k = qk()
        layers.append(LayerQK(q, k, d ** -0.5, mask, bias=bias if i == 0 else None,
                              softcap=3.0 if i == 0 else None,
                              sinks=rng.normal(size=heads).astype(np.float32) if i == 2 else None))
    return LazyStack(tuple(layers))


def _reference(stack: LazyStack, causal: bool, factor: int, special: np.ndarray) -> dict[str, np.ndarray]:
    """Every array of the summary from the dense weights in numpy (LayerQK.rows), written out by its definition."""
    L, _H, T, S = stack.shape
    out: dict[str, list[np.ndarray]] = {}
    for layer in range(L):
        a = stack.rows(layer, 0, T).astype(np.float64)  # (H, T, S)
        i = np.arange(T)
        prev = np.where(i >= 1, a[:, i, np.maximum(i - 1, 0)], 0.0)
        nxt = np.where(i + 1 < S, a[:, i, np.minimum(i + 1, S - 1)], 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(a > 0, a * np.log(a), 0.0).sum(-1)
        got = {"colsum": a.sum(1), "diag": np.stack([prev, a[:, i, i], nxt], 1), "entropy": ent,
               "corner": a[:, :headstats.CORNER, :headstats.CORNER], "special_weights": a[:, special]}
        if factor > 1:
            shown = mask_future(a) if causal else a.astype(np.float32)
            got["overview_max"] = block_reduce(shown, factor, "max")
            got["overview_mean"] = block_reduce(shown, factor, "mean")
            got["overview_head_max"] = block_reduce(mask_future(a.mean(0)) if causal else a.mean(0), factor, "max")
            rest = shown.copy()
            rest[..., 0] = np.where(np.isnan(rest[..., 0]), np.nan, 0.0)  # key 0: a visible cell holding 0
            first = rest[..., : min(factor, S)]
            got["overview_max_rest0"] = block_reduce(first, factor, "max")[..., 0]
            got["overview_mean_rest0"] = block_reduce(first, factor, "mean")[..., 0]
        for name, value in got.items():
            out.setdefault(name, []).append(value)
    return {name: np.stack(v) for name, v in out.items()}


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("factor", [1, 5, 64])
@pytest.mark.parametrize("block_bytes", [1, 2 * 32 * 300 * 4, 1 << 30])
def test_every_block_plan_gives_the_dense_numbers(causal, factor, block_bytes) -> None:
    """Blocks of one head and 32 rows, of a key head's two query heads, of every head at once; rows a divisor of the
    overview's factor (64) or a multiple (5) of it: each array equals its definition over the dense weights."""
    stack = _stack(causal)
    special = np.array([0, 150, 299])
    got = headstats.summarise(stack, causal=causal, special_rows=special, factor=factor, block_bytes=block_bytes)
    want = _reference(stack, causal, factor, special)
    for name, value in want.items():
        tol = dict(rtol=2e-3, atol=1e-4) if name.startswith("overview") else dict(rtol=0, atol=1e-5)
        np.testing.assert_allclose(got[name].astype(np.float64), value, equal_nan=True, err_msg=name, **tol)
    if not causal:
        assert not got["entropy"][1, :, 5].any() and not got["diag"][1, :, :, 5].any()  # the row that sees no key


@pytest.mark.parametrize("how", ["max", "mean"])
def test_a_pending_views_first_map_is_its_own_heads_exact_overview_and_never_waits(no_dense, monkeypatch, how):
    """A long result's view opens while the whole pass is pending (held in its background thread here): its first
    map is the maker run over the head shown alone (every row read, not sampled rows), equal to numpy's block
    max / mean of that head's dense weights to 1e-5 (a map of another head, layer or of sampled rows differs); a
    head switch meanwhile does the same for its head; the whole pass still runs once, in the background thread."""
    import threading

    import attnwidgets as aw
    from attnwidgets.viewdata import display
    from tests.lazy_helpers import lazy_result

    r = lazy_result(1100, layers=3, heads=4, kv_heads=2, head_dim=8, sink=4.0)  # GQA: heads 2, 3 read key head 1
    fresh, stack, made = _deferred(r)
    real, gate = headstats._weights, threading.Event()

    def held(*args, **kwargs):
        if threading.current_thread().name == "attnwidgets-summary":
            gate.wait(30)  # the whole pass waits until the views below have drawn
        return real(*args, **kwargs)

    monkeypatch.setattr(headstats, "_weights", held)
    monkeypatch.setattr(display, "OVERVIEW_BUDGET", 1100 * 1100 // 4)  # rows would be sampled: 1 row in 3
    f = 3  # ceil(1100 / 512)

    def want(layer: int, head: int) -> np.ndarray:
        dense = stack.layers[layer].rows(0, 1100)[head]  # numpy's weights of that head, every row
        return block_reduce(mask_future(dense), f, how)

    w = aw.AttentionHeatmap(fresh, layer=1, head=2, reduce=how)
    p = w._payload
    assert stack.summary_pending, "opening the view waited for the whole pass"
    assert (p["factor"], p["rows_used"]) == (f, f)
    got = np.frombuffer(p["matrix"]["buffer"], "<f4").reshape(p["matrix"]["shape"])
    np.testing.assert_allclose(got, want(1, 2), rtol=1e-5, atol=1e-7, equal_nan=True)
    for other in (want(1, 3), want(0, 2), want(1, 1)):  # the test tells heads and layers apart
        assert not np.allclose(got, other, rtol=1e-3, equal_nan=True)
    sent: list = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_msg(w, {"type": "request", "id": 1, "what": "matrix", "kind": "self", "layer": 2, "head": 1,
                  "words": False}, [])
    (content, buffers), = sent
    switched = np.frombuffer(buffers[0], "<f4").reshape(content["shape"])
    np.testing.assert_allclose(switched, want(2, 1), rtol=1e-5, atol=1e-7, equal_nan=True)
    assert content["vmax"] == pytest.approx(float(np.nanmax(want(2, 1))), rel=1e-5)
    assert stack.summary_pending and sorted(made) == [(1, 1, 1100, 1100)] * 2 + [(3, 4, 1100, 1100)], made
    gate.set()
    surface_stats(fresh)  # waits for the background pass: no second one
    assert sorted(made).count((3, 4, 1100, 1100)) == 1 and len(made) == 3, made
    assert not stack.summary_pending and not stack._heads  # the heads' own maps go once the whole pass is made


def test_a_pending_heads_own_pass_is_bounded_and_made_once(no_dense, monkeypatch) -> None:
    """The first map's own pass runs for a head within ``FIRST_MAP_BUDGET`` whose rows would be sampled, once per
    head (a redraw is a lookup); a longer head, or a discount the overview does not carry, samples rows as before."""
    from attnwidgets.viewdata import display
    from tests.lazy_helpers import lazy_result

    r = lazy_result(1100, layers=2, heads=2, kv_heads=1, head_dim=8)
    fresh, stack, made = _deferred(r)
    small = 1100 * 1100 // 4  # rows sampled: 1 in 3
    assert reduce_head(fresh, "self", 1, 1, 3, budget=small, discount=(5,)).rows_used < 3 and not made
    monkeypatch.setattr(display, "FIRST_MAP_BUDGET", 1100 * 1100 - 1)
    assert reduce_head(fresh, "self", 1, 1, 3, budget=small).rows_used < 3 and not made
    monkeypatch.undo()
    first = reduce_head(fresh, "self", 1, 1, 3, budget=small)
    again = reduce_head(fresh, "self", 1, 1, 3, budget=small, how="mean")
    assert (first.rows_used, again.rows_used) == (3, 3) and made == [(1, 1, 1100, 1100)]
    np.testing.assert_allclose(first.matrix, block_reduce(mask_future(stack.layers[1].rows(0, 1100)[1]), 3, "max"),
                               rtol=1e-5, atol=1e-7, equal_nan=True)
    assert stack.summary_pending  # a head's own pass is not the whole one


def test_a_head_pass_out_of_device_memory_leaves_the_first_map_to_rows(no_dense) -> None:
    """A head's own pass that finds no room on the device (DeviceMemoryError) does not stop the view opening: its
    first map samples rows, and the whole pass stays pending (it says the error itself when it is asked for)."""
    from tests.lazy_helpers import lazy_result

    r = lazy_result(1100, layers=1, heads=2, kv_heads=2, head_dim=8)
    stack = LazyStack(r.stack().layers)

    def maker(s: LazyStack) -> dict[str, np.ndarray]:
        raise headstats.DeviceMemoryError("no room for one block")

    stack.defer_summary(maker)
    red = reduce_head(r.replace(attention=stack), "self", 0, 1, 3, budget=1100 * 1100 // 4)
    assert red.rows_used < 3 and stack.summary_pending and not stack._heads


@pytest.mark.parametrize("heads", [1, 3, 5])
def test_sharp_rows_and_an_odd_number_of_one_head_blocks_give_the_dense_numbers(heads) -> None:
    """The fast path (torch's softmax, hidden keys at a finite -1e30) on rows so sharp that most weights are 0 in
    float32, and one-head blocks over an odd number of heads (the heads' sum made by turns in two buffers, the last
    head landing in the first): every array equals its definition over the dense weights."""
    n, d = 200, 8
    rng = np.random.default_rng(5)
    q = rng.normal(size=(heads, n, d)).astype(np.float32) * 30  # logits in the hundreds: rows near one-hot
    k = rng.normal(size=(heads, n, d)).astype(np.float32)
    masks = [KeyMask.causal(n, n), KeyMask.causal(n, n, window=23)]
    stack = LazyStack(tuple(LayerQK(q, k, d ** -0.5, mask) for mask in masks))
    special = np.array([0, 99])
    got = headstats.summarise(stack, causal=True, special_rows=special, factor=8, block_bytes=32 * n * 4)
    want = _reference(stack, True, 8, special)
    for name, value in want.items():
        assert np.isfinite(got[name][~np.isnan(value)]).all(), name
        tol = dict(rtol=2e-3, atol=1e-4) if name.startswith("overview") else dict(rtol=0, atol=1e-5)
        if name == "entropy":  # log z - Σ p·s in float32 with logits in the hundreds: ~|s| x 6e-8 (as before)
            tol = dict(rtol=0, atol=5e-5)
        elif name == "colsum":  # near one-hot rows summed in float32 to ~6: a few ulp of the sum
            tol = dict(rtol=5e-6, atol=1e-5)
        np.testing.assert_allclose(got[name].astype(np.float64), value, equal_nan=True, err_msg=name, **tol)
