"""Kovaleva pattern classes on synthetic maps of each class, and the features against hand values."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import classify_patterns, pattern_features
from attnwidgets.result import AttentionResult

SINGLE = ["[CLS]", "a", "b", "c", "d", "e", "f", "g", "h", "[SEP]"]
PAIR = ["[CLS]", "a", "b", "c", "d", "[SEP]", "e", "f", "g", "h", "[SEP]"]
PAIR_SEGMENTS = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1])


def _norm(a: np.ndarray) -> np.ndarray:
    return a / a.sum(-1, keepdims=True)


def _maps(n: int, special: list[int], segments: np.ndarray | None) -> dict[str, np.ndarray]:
    eye_prev = np.eye(n, k=-1)
    eye_prev[0, 1] = 1.0
    vertical = np.full((n, n), 0.01)
    vertical[:, special] = 1.0
    diagonal = eye_prev + 0.01
    mixed = np.full((n, n), 0.01) + 0.5 * eye_prev
    mixed[:, special[-1]] += 0.5
    hetero = np.random.default_rng(0).random((n, n)) + 0.5
    maps = {"vertical": vertical, "diagonal": diagonal, "vertical+diagonal": mixed, "heterogeneous": hetero}
    if segments is not None:
        block = np.full((n, n), 0.002)
        same = segments[:, None] == segments[None, :]
        block[same] = 1.0
        block[:, special] = 0.01
        maps["block"] = block
    return {k: _norm(v) for k, v in maps.items()}


@pytest.mark.parametrize("pair", [False, True])
def test_each_class_on_synthetic_maps(pair):
    tokens = PAIR if pair else SINGLE
    segments = PAIR_SEGMENTS if pair else None
    special = [i for i, t in enumerate(tokens) if t.startswith("[")]
    maps = _maps(len(tokens), special, segments)
    names = list(maps)
    a = np.stack([maps[k] for k in names])[None]  # one layer, one head per class
    r = AttentionResult.from_arrays(a.astype(np.float32), tokens, segment_ids=segments)
    assert classify_patterns(r)[0].tolist() == names


def test_uniform_map_is_heterogeneous_not_block():
    n = len(PAIR)
    r = AttentionResult.from_arrays(np.full((n, n), 1 / n, np.float32), PAIR, segment_ids=PAIR_SEGMENTS)
    f = pattern_features(r)
    assert f["vertical"][0, 0] == pytest.approx(3 / n, rel=1e-5)
    assert f["block"][0, 0] == pytest.approx(0.5, rel=1e-5)  # 4 of the 8 words are in each row's own segment
    assert classify_patterns(r)[0, 0] == "heterogeneous"


def test_features_by_hand():
    # 5 tokens [CLS] a b c [SEP]; row i: 0.6 on [SEP], 0.4 on the previous word (row 0 and row 1 have none)
    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    a = np.zeros((5, 5))
    a[:, 4] = 0.6
    for i in range(5):
        if i >= 2:
            a[i, i - 1] = 0.4
        else:
            a[i, 4] = 1.0
    a[4, 3] = 0.4
    a[4, 4] = 0.6
    f = pattern_features(AttentionResult.from_arrays(a, tokens))
    # rows 2, 3, 4 put 0.4 on a non-special neighbour: (0.4 * 3) / 5
    assert f["diagonal"][0, 0] == pytest.approx(1.2 / 5)
    assert f["vertical"][0, 0] == pytest.approx((1 + 1 + 0.6 * 3) / 5)
    assert np.isnan(f["block"][0, 0])  # a single segment has no blocks
