"""The statistics pass's algebra (runner.headstats) against hand-computed cases and float64 references: each row's
log z read off one weight (and its fallback where the picked weights underflow), the heads' sum made in stacks."""

from __future__ import annotations

import math

import numpy as np
import torch

from attnwidgets.attention_stack import KeyMask, LayerQK, LazyStack
from attnwidgets.runner import headstats, overview_pass


def _float64_entropy(q: np.ndarray, k: np.ndarray, scale: float, mask: KeyMask) -> np.ndarray:
    """(H, T) each row's entropy in nats from float64 logits, by its definition -Σ p ln p."""
    s = np.einsum("htd,hsd->hts", q.astype(np.float64), k.astype(np.float64)) * scale
    allowed = mask.rows(0, q.shape[1], k.shape[1])
    s = np.where(allowed, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(-1)


def _log_z(s: torch.Tensor, cols: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``_LogZ`` over one head's logits ``s`` (r, w), reading the columns ``cols`` (r x 2)."""
    lz = headstats._LogZ(1, s.shape[0], torch.device("cpu"))
    lz.cols = torch.tensor([cols])
    lz.read(0, 1, torch.softmax(s, -1)[None], s[None])
    return lz.finish()


def test_log_z_is_read_off_the_heavier_picked_weight() -> None:
    """Logits 0, ln 2, ln 3 and a hidden key: z = 6. The row's own key (column 3) is hidden (weight 0), so log z
    comes from the first key's weight 1/6: 0 - ln(1/6) = ln 6; a second row (logits 0, 0, ln 3, 0: z = 6 again)
    reads it off its own key (column 2, weight 1/2, heavier than the first key's 1/6): ln 3 - ln(1/2) = ln 6."""
    s = torch.tensor([[0.0, math.log(2), math.log(3), -1e30], [0.0, 0.0, math.log(3), 0.0]])
    got, redo = _log_z(s, [[3, 0], [2, 0]])
    np.testing.assert_allclose(got.numpy(), [[math.log(6), math.log(6)]], rtol=0, atol=2e-7)
    assert not redo.any()


def test_log_z_says_which_heads_to_make_again_where_the_picked_weights_underflow() -> None:
    """Both picked keys 110 and 120 below the row's peak: their float32 weights are 0 (log 0 = -inf would make
    log z infinite), so the head is to be made again on the peak path; with the peak picked, it is not."""
    s = torch.tensor([[-110.0, -120.0, 0.0], [0.0, 1.0, 2.0]])
    assert _log_z(s, [[0, 1], [0, 1]])[1].tolist() == [True]
    got, redo = _log_z(s, [[0, 2], [0, 2]])
    assert redo.tolist() == [False]
    np.testing.assert_allclose(got.numpy()[0], [0.0, math.log(1 + math.e + math.e**2)], rtol=0, atol=5e-7)


def test_entropy_from_the_picked_log_z_is_float64s_to_float32_rounding() -> None:
    """A causal and a sliding-window layer, rows from flat to sharp (query scales 0.1 .. 40: the last head's logits
    reach the hundreds, its own and first keys' weights underflow in some rows, and its blocks are made again on the
    peak path): the pass's entropies equal float64's -Σ p ln p to float32 rounding of the logits, within
    1e-6 x (1 + the head's largest |logit|), a few ulps (a log z read off a wrong weight is off by 0.1 nats or more)."""
    n, d, heads = 300, 16, 5
    rng = np.random.default_rng(3)
    scale = np.array([0.1, 1, 3, 8, 40], np.float32)[:, None, None]
    q = rng.normal(size=(heads, n, d)).astype(np.float32) * scale
    k = rng.normal(size=(heads, n, d)).astype(np.float32)
    masks = [KeyMask.causal(n, n), KeyMask.causal(n, n, window=40)]
    stack = LazyStack(tuple(LayerQK(q, k, d**-0.5, m) for m in masks))
    got = headstats.summarise(stack, causal=True, factor=4, block_bytes=32 * n * 4)["entropy"]
    top = np.abs(np.einsum("htd,hsd->hts", q, k) * d**-0.5).max((1, 2))  # (H,)
    for li, m in enumerate(masks):
        err = np.abs(got[li] - _float64_entropy(q, k, d**-0.5, m)).max(-1)
        assert (err < 1e-6 * (1 + top)).all(), (err, top)


def test_column_groups_by_pooling_and_gemv_with_a_short_last_group() -> None:
    """Rows 0..5 and 6..11 in groups of 5 columns: max (4, 5) and (10, 11), sums 0+1+2+3+4 = 10, 5 and
    6+...+10 = 40, 11; in groups of 4: 0+1+2+3 = 6, 4+5 = 9, 6+7+8+9 = 30, 10+11 = 21; a group wider than the row
    (3 columns, groups of 4) is the row's max and sum."""
    x = torch.arange(12, dtype=torch.float32).view(1, 2, 6)
    assert overview_pass.by_columns(x, 5, "max").tolist() == [[[4, 5], [10, 11]]]
    assert overview_pass.by_columns(x, 5, "sum").tolist() == [[[10, 5], [40, 11]]]
    assert overview_pass.by_columns(x, 4, "sum").tolist() == [[[6, 9], [30, 21]]]  # f <= 4: strided adds
    assert overview_pass.by_columns(x, 2, "max").tolist() == [[[1, 3, 5], [7, 9, 11]]]
    y = torch.tensor([[1.0, 7.0, 2.0]])
    assert overview_pass.by_columns(y, 4, "max").tolist() == [[7.0]]
    assert overview_pass.by_columns(y, 4, "sum").tolist() == [[10.0]]


def test_keys_transposed_in_chunks_are_the_keys_transposed() -> None:
    """(2 key heads, 7 keys, 3 dims) in chunks of 3 keys (the last chunk short): key j's dims land in column j."""
    k = torch.arange(42, dtype=torch.float32).view(2, 7, 3)
    got = headstats._transposed(k, chunk=3)
    assert got.shape == (2, 3, 7) and got.is_contiguous()
    assert got[1, 2, 6].item() == 41.0 and got[0, 1, 4].item() == 13.0  # head 1, dim 2, key 6; head 0, dim 1, key 4
    assert torch.equal(got, k.transpose(1, 2))
