"""GenerationResult.span_share (issue 27 §3): the share of each generated step's attention on a span of the prompt,
against a hand-computed case, against transformers' eager attention (tiny GPT-2 and a Llama with GQA), on a lazy
result without building its attention, and its checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lazy_helpers import dense_twin, lazy_result

from attnwidgets.generation_result import GenerationResult
from attnwidgets.result import AttentionResult
from attnwidgets.runner.generation import generate

PROMPT = "The cat sat on the mat because"
STEPS = 6


def _generation(result: AttentionResult, n_prompt: int) -> GenerationResult:
    """A generation over ``result``'s fed tokens: the first ``n_prompt`` are the prompt, the rest were generated."""
    n = result.n_tokens - n_prompt + 1
    toks = list(result.tokens)
    gen = [*toks[n_prompt:], "<end>"]
    return GenerationResult(result, "".join(toks[:n_prompt]), toks[:n_prompt], np.arange(n_prompt),
                            gen, np.arange(n), np.arange(n)[:, None], np.ones((n, 1), np.float32),
                            [[t] for t in gen])


@pytest.fixture
def hand() -> GenerationResult:
    """One layer, two heads over 5 fed tokens (prompt a b c, generated d e f): rows typed by hand."""
    h0 = np.array([[1, 0, 0, 0, 0],
                   [.5, .5, 0, 0, 0],
                   [.2, .3, .5, 0, 0],        # step 0: the query at position 2 wrote "d"
                   [.1, .1, .2, .6, 0],       # step 1 wrote "e"
                   [0, .4, .4, .1, .1]],      # step 2 wrote "f"
                  np.float32)
    h1 = np.array([[1, 0, 0, 0, 0],
                   [0, 1, 0, 0, 0],
                   [0, 0, 1, 0, 0],
                   [.25, .25, .25, .25, 0],
                   [.7, 0, 0, .1, .2]], np.float32)
    r = AttentionResult.from_arrays(np.stack([h0, h1])[None], list("abcde"), kind="decoder")
    return _generation(r, 3)


def test_share_is_the_hand_sum_of_the_span_keys(hand):
    # span (1, 3): keys b, c. Head 0: .3+.5, .1+.2, .4+.4; head 1: 0+1, .25+.25, 0+0
    got = hand.span_share((1, 3))
    assert got.shape == (3, 1, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got[:, 0, 0], [0.8, 0.3, 0.8], atol=1e-6)
    np.testing.assert_allclose(got[:, 0, 1], [1.0, 0.5, 0.0], atol=1e-6)
    # the whole prompt, one head, as an int; a range and a slice name the same span
    np.testing.assert_allclose(hand.span_share((0, 3), heads=1)[:, 0, 0], [1.0, 0.75, 0.7], atol=1e-6)
    np.testing.assert_array_equal(hand.span_share(range(1, 3)), got)
    np.testing.assert_array_equal(hand.span_share(slice(1, None)), got)
    np.testing.assert_array_equal(hand.span_share((-2, 3)), got)  # negatives count from the prompt's end
    # heads in the order asked; the heads' mean is the share of the mean row
    np.testing.assert_array_equal(hand.span_share((1, 3), heads=[1, 0])[..., 0], got[..., 1])
    mean_row = np.stack([hand.step_attention(t, 0, -1)[1:3].sum() for t in range(3)])
    np.testing.assert_allclose(got.mean(-1)[:, 0], mean_row, atol=1e-6)


@pytest.mark.parametrize("family", ["tiny_gpt2", "tiny_llama"])
def test_share_equals_eager_attention(family, request):
    from transformers import AutoModelForCausalLM

    path = request.getfixturevalue(family)
    g = generate(PROMPT, path, max_new_tokens=STEPS, min_new_tokens=STEPS)
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    fed = torch.tensor(np.concatenate([g.prompt_ids, g.generated_ids[:-1]]))[None]
    with torch.no_grad():
        att = np.stack([a[0].numpy() for a in model(fed, output_attentions=True).attentions])  # (L, H, T, T)
    P = g.prompt_length
    rows = att[:, :, P - 1:P - 1 + STEPS]  # (L, H, steps, keys): the query of step t is row P - 1 + t
    for span in ((0, P), (1, 3), (P - 2, P)):
        want = rows[..., span[0]:span[1]].sum(-1).transpose(2, 0, 1)  # (steps, L, H)
        np.testing.assert_allclose(g.span_share(span), want, atol=1e-5)
    np.testing.assert_allclose(g.span_share((0, 2), heads=[3, 0], layers=1)[:, 0],
                               rows[1][[3, 0]][..., 0:2].sum(-1).T, atol=1e-5)


def test_a_lazy_generation_is_read_by_blocks_never_whole(no_dense, monkeypatch):
    lazy = lazy_result(300, layers=2, heads=4, kv_heads=2, seed=7)
    g, dense = _generation(lazy, 120), _generation(dense_twin(lazy), 120)
    import attnwidgets.generation_result as gr

    monkeypatch.setattr(gr, "block_rows", lambda h, s: 16)  # several blocks of rows, the last one short
    with pytest.raises(MemoryError):
        _ = lazy.attention
    want = dense.result.attention[:, :, 119:300, 10:40].sum(-1).transpose(2, 0, 1)
    np.testing.assert_allclose(g.span_share((10, 40)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.span_share((10, 40)), dense.span_share((10, 40)), rtol=1e-5, atol=1e-6)


def test_bad_spans_heads_and_layers_say_what_is_wrong(hand):
    with pytest.raises(ValueError, match=r"span \(2, 2\) is empty"):
        hand.span_share((2, 2))
    with pytest.raises(ValueError, match=r"span \(2, 1\) is empty"):
        hand.span_share((2, 1))
    with pytest.raises(ValueError, match="outside the text: the keys are 5 tokens"):
        hand.span_share((0, 9))
    with pytest.raises(ValueError, match="outside the text"):
        hand.span_share((-7, 2))
    with pytest.raises(ValueError, match="overlaps the generated part"):
        hand.span_share((1, 4))
    # The message names the span as it was given (it said "(2, 2)" for (-1, 2)), and how a negative one was read.
    with pytest.raises(ValueError, match=r"span \(-1, 2\) \(read as \(\d+, 2\): negative positions count back"):
        hand.span_share((-1, 2))
    with pytest.raises(TypeError, match=r"\(start, stop\) token positions"):
        hand.span_share(2)
    with pytest.raises(TypeError, match=r"\(start, stop\) token positions"):
        hand.span_share([0, 1, 2])
    with pytest.raises(TypeError, match="start must be an integer token position, got float"):
        hand.span_share((0.0, 2))
    with pytest.raises(ValueError, match="contiguous"):
        hand.span_share(range(0, 3, 2))
    with pytest.raises(IndexError, match=r"head 2 is out of range: the model has 2 heads \(0..1\)"):
        hand.span_share((0, 2), heads=2)
    with pytest.raises(IndexError, match="layer 1 is out of range: the model has 1 layers"):
        hand.span_share((0, 2), layers=[0, 1])
    with pytest.raises(TypeError, match="non-empty list"):
        hand.span_share((0, 2), heads=[])
    with pytest.raises(TypeError, match="a head must be an integer, got str"):
        hand.span_share((0, 2), heads=["0"])
    with pytest.raises(ValueError, match="not 'cross'"):
        hand.span_share((0, 2), kind="cross")


def test_encoder_decoder_share_is_over_the_source(tiny_bart):
    g = generate("The cat sat on the mat.", tiny_bart, max_new_tokens=4, min_new_tokens=4)
    src = g.result.n_tokens
    share = g.span_share((0, src))
    np.testing.assert_allclose(share, 1.0, atol=1e-5)  # cross-attention is all on the source
    want = np.stack([[g.steps_matrix(layer, head, "cross")[:, 1:3].sum(-1) for head in range(share.shape[2])]
                     for layer in range(share.shape[1])]).transpose(2, 0, 1)
    np.testing.assert_allclose(g.span_share((1, 3)), want, atol=1e-6)
    with pytest.raises(ValueError, match="outside the text"):
        g.span_share((0, src + 1))
    with pytest.raises(ValueError, match="decoder's own keys are the generated tokens"):
        g.span_share((0, 1), kind="decoder")


# -- the view's panel, its selection and its twin ------------------------------------------------------------------


def _lines(w) -> np.ndarray:
    p = w._share["lines"]
    return np.frombuffer(bytes(p["buffer"]), np.float32).reshape(p["shape"])


def test_view_panel_is_the_share_of_the_selection(hand):
    import attnwidgets as aw

    w = aw.GenerationView(hand, selection=[1, 2])
    assert w.combine == "sum" and w.share_by == "layer" and w._share["key"] == "1:3/sum/layer"
    # a line per layer: the mean of the heads' shares (head 0: .8 .3 .8; head 1: 1 .5 0)
    np.testing.assert_allclose(_lines(w)[:, 0], [0.9, 0.4, 0.4], atol=1e-6)
    assert w._share["labels"] == ["layer 0"]
    w.share_by = "head"
    np.testing.assert_allclose(_lines(w), [[0.8, 1.0], [0.3, 0.5], [0.8, 0.0]], atol=1e-6)
    assert w._share["labels"] == ["head 0-0", "head 0-1"] and w._share["key"] == "1:3/sum/head/0"
    w.combine = "mean"  # per selected token
    np.testing.assert_allclose(_lines(w), [[0.4, 0.5], [0.15, 0.25], [0.4, 0.0]], atol=1e-6)
    w.selection = [0, 2]  # two runs: their shares add up
    w.combine = "sum"
    np.testing.assert_allclose(_lines(w)[:, 0], [0.7, 0.3, 0.4], atol=1e-6)
    lines, _labels = w.share()
    np.testing.assert_array_equal(lines, _lines(w))
    # a selection that reaches into the generated part: the panel says why, the page stays up
    w.selection = [3]
    assert "overlaps the generated part" in w._share["error"] and "lines" not in w._share
    w.selection = []
    assert w._share == {}


def test_view_checks_selection_combine_and_share_by(hand):
    import traitlets

    import attnwidgets as aw

    w = aw.GenerationView(hand)
    assert w._meta["n_selectable"] == 5
    for bad, match in (([5], "out of range: there are 5 query tokens"), ([1, 1], "repeats"),
                       ([1.0], "must be an integer"), (["a"], "must be an integer, got str")):
        with pytest.raises(traitlets.TraitError, match=match):
            w.selection = bad
    with pytest.raises(traitlets.TraitError, match="unknown combine 'max'"):
        w.combine = "max"
    with pytest.raises(traitlets.TraitError, match="share_by must be 'layer'"):
        w.share_by = "token"
    assert w.selection == [] and w.combine == "sum" and w.share_by == "layer"


def test_link_span_links_a_heatmap_and_a_generation_view(hand):
    import attnwidgets as aw

    heat, view = aw.AttentionHeatmap(hand.result), aw.GenerationView(hand)
    link = aw.widgets.link_span(heat, view, js=False)
    heat.selection = [0, 1]  # what a click and a shift-click in the heatmap do
    assert view.selection == [0, 1] and view._share["key"] == "0:2/mean/layer"  # the heatmap's combine came along
    view.selection = [2]  # and back
    assert heat.selection == [2]
    view.combine = "sum"
    assert heat.combine == "sum"
    link.unlink()
    other = aw.AttentionHeatmap(AttentionResult.from_arrays(np.full((1, 1, 4, 4), .25, np.float32), list("abcd")))
    with pytest.raises(ValueError, match="different query tokens"):
        aw.widgets.link_span(other, view)


def test_twin_draws_the_same_lines(hand):
    import attnwidgets as aw
    from attnwidgets.plots import plot_span_share

    fig = plot_span_share(hand, (1, 3), step=1)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [0.9, 0.4, 0.4], atol=1e-6)
    assert "attention on 2 tokens: b c" in fig.axes[0].get_title()
    w = aw.GenerationView(hand, selection=[0, 2], share_by="head")
    fig = plot_span_share(hand, selection=[0, 2], by="head", theme="lecture")
    for j, line in enumerate(fig.axes[0].lines[:2]):
        np.testing.assert_allclose(line.get_ydata(), _lines(w)[:, j], atol=1e-6)
    with pytest.raises(TypeError, match="one of them"):
        plot_span_share(hand)
    with pytest.raises(ValueError, match="overlaps the generated part"):
        plot_span_share(hand, (2, 4))
    with pytest.raises(ValueError, match="step 3 is out of range"):
        plot_span_share(hand, (0, 1), step=3)
