"""Surface statistics against values worked out by hand or by explicit loops, on crafted maps."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from attnwidgets.analysis import (
    key_share,
    mean_entropy,
    offset_share,
    row_entropy,
    stats_to_frame,
    surface_stats,
    token_kinds,
    uniform_entropy,
)
from attnwidgets.result import AttentionResult


def _rows(q: int, k: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).random((q, k))
    return a / a.sum(-1, keepdims=True)


def test_import_does_not_pull_torch_or_widgets():
    code = (
        "import sys, attnwidgets.analysis, attnwidgets.data\n"
        "bad = [m for m in ('torch', 'transformers', 'anywidget', 'ipywidgets', 'attnwidgets.runner',"
        " 'attnwidgets.widgets') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing attnwidgets.analysis imported {out.stdout.strip()}"


def test_key_share_non_square_against_loops():
    a = _rows(5, 7, 0)  # 5 queries x 7 keys
    keys = np.array([1, 0, 0, 1, 0, 0, 1], bool)
    expected = sum(sum(a[i, j] for j in range(7) if keys[j]) for i in range(5)) / 5
    assert key_share(a, keys) == pytest.approx(expected)
    rows = np.array([0, 1, 1, 0, 0], bool)
    expected_rows = (sum(a[1, j] for j in (0, 3, 6)) + sum(a[2, j] for j in (0, 3, 6))) / 2
    assert key_share(a, keys, rows) == pytest.approx(expected_rows)


def test_key_share_by_hand():
    a = np.array([[0.2, 0.8], [0.6, 0.4], [1.0, 0.0]])
    assert key_share(a, np.array([True, False])) == pytest.approx((0.2 + 0.6 + 1.0) / 3)
    assert np.isnan(key_share(a, np.array([True, False]), np.zeros(3, bool)))


@pytest.mark.parametrize("offset", [-1, 0, 1, 3])
def test_offset_share_non_square_against_loops(offset):
    a = _rows(5, 7, 1)
    expected = sum(a[i, i + offset] for i in range(5) if 0 <= i + offset < 7) / 5
    assert offset_share(a, offset) == pytest.approx(expected)


def test_offset_share_by_hand_and_padding():
    a = np.array([[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.1, 0.5, 0.4]])
    assert offset_share(a, -1) == pytest.approx((0.3 + 0.5) / 3)
    assert offset_share(a, 1) == pytest.approx(0.0)
    assert offset_share(a, 0) == pytest.approx((1.0 + 0.7 + 0.4) / 3)
    # the last row is padding: only the first two rows count
    assert offset_share(a, 0, np.array([1, 1, 0], bool)) == pytest.approx((1.0 + 0.7) / 2)


def test_entropy_by_hand_non_square():
    a = np.zeros((5, 7))
    a[0, 0] = 1.0  # 0 nats
    a[1, :2] = 0.5  # ln 2
    a[2, :4] = 0.25  # ln 4
    a[3] = 1 / 7  # ln 7
    a[4, [0, 6]] = [0.9, 0.1]
    h = row_entropy(a)
    expected = [0.0, math.log(2), math.log(4), math.log(7), -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))]
    assert h == pytest.approx(expected, abs=1e-6)
    assert mean_entropy(a) == pytest.approx(np.mean(expected), abs=1e-6)


def test_entropy_smoothing_is_clarks():
    a = np.array([[1.0, 0.0, 0.0, 0.0]])
    eps = 1e-4
    p = (1 - eps) * a[0] + eps / 4
    assert row_entropy(a, smoothing=eps)[0] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-6)  # float32 maps
    # smoothing only over the keys a row may see
    mask = np.array([True, True, False, False])
    p2 = (1 - eps) * a[0, :2] + eps / 2
    assert row_entropy(a, smoothing=eps, key_mask=mask)[0] == pytest.approx(-(p2 * np.log(p2)).sum(), abs=1e-6)


def _entropy_by_loops(a: np.ndarray, sees: np.ndarray, eps: float) -> float:
    """Entropy of one row in float64: smoothed over the keys it sees, the others left out."""
    p = a[sees].astype(np.float64)
    p = (1 - eps) * p + eps / p.size
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


@pytest.mark.parametrize("n_heads", [3, 2])  # 3 == n: a (q, k) mask was misread as one key mask per head
def test_entropy_causal_qk_mask_on_heads(n_heads):
    n = 3
    causal = np.tril(np.ones((n, n), bool))  # (q, k)
    a = np.tile(np.eye(n), (n_heads, 1, 1))  # (H, q, k): every row on itself
    a[1] = np.tril(_rows(n, n, 5))
    a[1] /= a[1].sum(-1, keepdims=True)
    h = row_entropy(a, smoothing=0.1, key_mask=causal)
    assert h.shape == (n_heads, n)
    for head in range(n_heads):
        for i in range(n):
            assert h[head, i] == pytest.approx(_entropy_by_loops(a[head, i], causal[i], 0.1), rel=1e-12), (head, i)
    assert h[:, 0] == pytest.approx(0.0, abs=1e-15)  # row 0 sees one key: nothing to be uncertain about
    expected = [np.mean([_entropy_by_loops(a[k, i], causal[i], 0.1) for i in range(n)]) for k in range(n_heads)]
    assert mean_entropy(a, 0.1, causal) == pytest.approx(expected, rel=1e-12)
    # the same mask given per head, (H, q, k), and a 1-D key mask, (k,), mean the same thing for every row
    assert np.array_equal(row_entropy(a, 0.1, np.broadcast_to(causal, a.shape)), h)
    keys = np.array([True, True, False])
    assert row_entropy(a, 0.1, keys)[1, 2] == pytest.approx(_entropy_by_loops(a[1, 2], keys, 0.1), rel=1e-12)


def test_entropy_mask_shapes_that_do_not_fit_are_refused():
    a = np.full((2, 3, 4), 0.25)  # (H, q, k)
    with pytest.raises(ValueError, match=r"key_mask\[\.\.\., None, :\]"):
        row_entropy(a, key_mask=np.ones((2, 4), bool))  # a per-head key mask (H, k) needs its query axis
    with pytest.raises(ValueError, match="does not fit"):
        row_entropy(a, key_mask=np.ones((5, 3, 4), bool))  # would broadcast the result to 5 maps
    assert np.allclose(row_entropy(a, key_mask=np.ones((2, 4), bool)[:, None, :]), np.log(4))


def test_entropy_is_float64_on_float32_maps():
    eps = 1e-4
    a = np.array([[1.0, 0.0, 0.0, 0.0]], dtype=np.float32)  # a one-hot row, smoothed: entropy ~8.7e-4 nats
    p = (1 - eps) * np.array([1.0, 0.0, 0.0, 0.0]) + eps / 4
    exact = -(p * np.log(p)).sum()
    h = row_entropy(a, smoothing=eps)
    assert h.dtype == np.float64
    assert h[0] == pytest.approx(exact, rel=1e-9)  # float32 arithmetic was 5e-5 off
    s = surface_stats(AttentionResult.from_arrays(np.tile(a, (4, 1)), ["a", "b", "c", "d"]), smoothing=eps)
    assert s["entropy_cls"][0, 0] == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("chunk", [1, 40, 200])  # per query row; several maps; several first-axis indices
def test_entropy_in_blocks_is_entropy_in_one(chunk, monkeypatch):
    import attnwidgets.analysis.surface as surface

    rng = np.random.default_rng(7)
    a = rng.random((3, 2, 5, 7)).astype(np.float32) * (rng.random((3, 2, 5, 7)) > 0.3)
    a /= np.maximum(a.sum(-1, keepdims=True), 1e-9)
    masks = [None, np.tril(np.ones((5, 7), bool)), np.ones(7, bool), rng.random((3, 1, 5, 7)) > 0.2]
    whole = [row_entropy(a, 1e-3, m) for m in masks]
    monkeypatch.setattr(surface, "_CHUNK", chunk)
    for m, expected in zip(masks, whole, strict=True):
        assert np.array_equal(row_entropy(a, 1e-3, m), expected)


def test_uniform_entropy():
    assert uniform_entropy(7) == pytest.approx(math.log(7))
    assert uniform_entropy(4, causal=True) == pytest.approx(np.mean([math.log(i) for i in (1, 2, 3, 4)]))


def _pair_result() -> AttentionResult:
    tokens = ["[CLS]", "a", "b", "[SEP]", "c", ",", "[SEP]"]
    rng = np.random.default_rng(3)
    a = rng.random((2, 3, 7, 7))
    a /= a.sum(-1, keepdims=True)
    return AttentionResult.from_arrays(a, tokens, segment_ids=np.array([0, 0, 0, 0, 1, 1, 1]))


def test_surface_stats_pair_against_loops():
    r = _pair_result()
    s = surface_stats(r)
    a = r.attention.astype(np.float64)
    n = 7
    seps, cls, punct = [3, 6], [0], [5]
    for layer in range(2):
        for head in range(3):
            m = a[layer, head]
            assert s["sep"][layer, head] == pytest.approx(sum(m[i, j] for i in range(n) for j in seps) / n, rel=1e-5)
            assert s["cls"][layer, head] == pytest.approx(sum(m[i, 0] for i in range(n)) / n, rel=1e-5)
            assert s["first"][layer, head] == pytest.approx(s["cls"][layer, head], rel=1e-6)
            assert s["punct"][layer, head] == pytest.approx(sum(m[i, 5] for i in range(n)) / n, rel=1e-5)
            sep_sep = sum(m[i, j] for i in seps for j in seps) / 2
            rest = [i for i in range(n) if i not in seps]
            rest_sep = sum(m[i, j] for i in rest for j in seps) / len(rest)
            assert s["sep_sep"][layer, head] == pytest.approx(sep_sep, rel=1e-5)
            assert s["rest_sep"][layer, head] == pytest.approx(rest_sep, rel=1e-5)
            assert s["prev"][layer, head] == pytest.approx(sum(m[i, i - 1] for i in range(1, n)) / n, rel=1e-5)
            assert s["next"][layer, head] == pytest.approx(sum(m[i, i + 1] for i in range(n - 1)) / n, rel=1e-5)
            assert s["self"][layer, head] == pytest.approx(np.trace(m) / n, rel=1e-5)
            h = [-(m[i] * np.log(m[i])).sum() for i in range(n)]
            assert s["entropy"][layer, head] == pytest.approx(np.mean(h), rel=1e-5)
            assert s["entropy_cls"][layer, head] == pytest.approx(h[0], rel=1e-5)
            assert s["entropy_last"][layer, head] == pytest.approx(h[-1], rel=1e-5)
    assert np.allclose(s["entropy_uniform"], math.log(7))
    del cls, punct


def test_token_kinds_bpe_and_specials():
    k = token_kinds(["<s>", " Hello", " .", ",", "</s>"], np.array([1, 0, 0, 0, 1], bool))
    assert k["cls"].tolist() == [True, False, False, False, False]
    assert k["sep"].tolist() == [False, False, False, False, True]
    assert k["punct"].tolist() == [False, False, True, True, False]
    assert k["other"].tolist() == [False, True, False, False, False]


def test_stats_to_frame_is_tidy():
    df = stats_to_frame({"cls": np.array([[0.1, 0.2], [0.3, 0.4]]), "sep": np.zeros((2, 2))})
    assert list(df.columns) == ["layer", "head", "statistic", "value"]
    assert df.query("statistic == 'cls' and layer == 1 and head == 0")["value"].item() == pytest.approx(0.3)
    assert len(df) == 8
