"""Jensen–Shannon head distances against scipy and a plain loop; the MDS map."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from attnwidgets.analysis import HeadDistances, head_distances, head_embedding, js_divergence
from attnwidgets.result import AttentionResult


def test_js_divergence_matches_scipy():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = int(rng.integers(2, 30))
        p, q = rng.random(k), rng.random(k)
        p[rng.random(k) < 0.2] = 0.0  # zeros are allowed
        p[0] += 1e-3
        assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q) ** 2, rel=1e-6, abs=1e-12)
    p, q = rng.random((4, 5, 9)), rng.random((4, 5, 9))
    assert np.allclose(js_divergence(p, q), jensenshannon(p, q, axis=-1) ** 2)


def _results(seed: int) -> list[AttentionResult]:
    rng = np.random.default_rng(seed)
    out = []
    for n in (4, 6, 5):
        a = rng.random((2, 3, n, n)) ** 3
        a /= a.sum(-1, keepdims=True)
        out.append(AttentionResult.from_arrays(a, [f"t{i}" for i in range(n)]))
    return out


def test_head_distances_against_a_loop_with_clarks_smoothing():
    results = _results(1)
    d = head_distances(results)
    k = 6
    expected = np.zeros((k, k))
    for r in results:
        n = r.n_tokens
        p = (0.999 * r.attention.reshape(k, n, n).astype(np.float64)) + 0.001 / n
        for h1 in range(k):
            for h2 in range(k):
                expected[h1, h2] += np.mean([jensenshannon(p[h1, i], p[h2, i]) ** 2 for i in range(n)])
    expected /= len(results)
    assert d.shape == (k, k)
    assert np.allclose(d, expected, atol=1e-6)
    assert np.allclose(np.diag(d), 0.0, atol=1e-9)


def test_head_distances_sum_and_batches_agree():
    results = _results(2)
    acc = HeadDistances(reduce="sum")
    for r in results:
        acc.add(r)
    summed = acc.distances()
    mean = head_distances(results)
    assert (summed > mean - 1e-12).all()  # summing over >= 4 rows exceeds the mean
    with pytest.raises(ValueError):
        HeadDistances().distances()


def test_head_embedding_separates_two_groups():
    # heads 0-2 alike, heads 3-5 alike: MDS must put the groups apart
    d = np.full((6, 6), 1.0)
    d[:3, :3] = d[3:, 3:] = 0.05
    np.fill_diagonal(d, 0.0)
    emb = head_embedding(d, n_heads=3)
    assert list(emb.columns) == ["layer", "head", "x", "y"]
    assert emb["layer"].tolist() == [0, 0, 0, 1, 1, 1]
    xy = emb[["x", "y"]].to_numpy()
    within = np.linalg.norm(xy[0] - xy[1])
    between = np.linalg.norm(xy[0] - xy[4])
    assert between > 5 * within
