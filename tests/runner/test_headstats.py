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
from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack
from attnwidgets.result import AttentionResult, ModelInfo
from attnwidgets.runner import get_runner, headstats
from attnwidgets.viewdata.display import reduce_head, region_of, result_thumbnails
from tests.runner.test_lazy_attention import FAMILIES, TEXT

PAIR = "The dog barked."


def _without_summary(result: AttentionResult) -> AttentionResult:
    """The same queries and keys in a stack that holds no summary: the numpy path."""
    stack = result.stack("self")
    assert isinstance(stack, LazyStack)
    return result.replace(attention=LazyStack(stack.layers))


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
    runner = get_runner(tiny_gpt2)
    text = TEXT + " out of memory"
    key = runner.cache_key(text, truncation="error")

    def full(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    monkeypatch.setattr(headstats, "_weights", full)
    with pytest.raises(headstats.DeviceMemoryError, match=r"rows x \d+ keys x \d+ heads is .*B.*block_bytes=.*"
                                                          r"device='cpu'"):
        runner.run(text, truncation="error")
    assert runner.cache.get(key) is None


def test_an_interrupted_pass_caches_nothing_and_a_rerun_is_whole(tiny_gpt2, no_dense, monkeypatch) -> None:
    runner = get_runner(tiny_gpt2)
    text = TEXT + " interrupted pass"
    key = runner.cache_key(text, truncation="error")
    real = headstats._weights
    calls: list[int] = []

    def interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # after the first block's sums went into the arrays
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(headstats, "_weights", interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.run(text, truncation="error")
    assert runner.cache.get(key) is None and len(calls) == 2
    monkeypatch.setattr(headstats, "_weights", real)
    result = runner.run(text, truncation="error")
    fast, slow = surface_stats(result), _numpy_surface(result)
    for name in slow:
        np.testing.assert_allclose(fast[name], slow[name], atol=1e-5, err_msg=name)
    assert runner.cache.get(key) is result


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
