"""Attention rollout against a 3-layer case worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import attention_flow, attention_rollout
from attnwidgets.result import AttentionResult


def test_rollout_three_layers_by_hand():
    # 2 tokens, 2 heads per layer; head means: L1 = [[1,0],[1,0]] , L2 = [[.5,.5],[.5,.5]], L3 = [[0,1],[0,1]]
    a = np.zeros((3, 2, 2, 2))
    a[0, 0] = a[0, 1] = [[1, 0], [1, 0]]
    a[1, 0] = [[1, 0], [0, 1]]
    a[1, 1] = [[0, 1], [1, 0]]
    a[2, 0] = a[2, 1] = [[0, 1], [0, 1]]
    # Ã = (mean A + I) / 2
    # Ã1 = [[1, 0], [.5, .5]]; Ã2 = [[.75, .25], [.25, .75]]; Ã3 = [[.5, .5], [0, 1]]
    # R2 = Ã2 Ã1 = [[.875, .125], [.625, .375]]
    # R3 = Ã3 R2 = [[.75, .25], [.625, .375]]
    r = attention_rollout(a)
    assert r == pytest.approx(np.array([[0.75, 0.25], [0.625, 0.375]]))
    steps = attention_rollout(a, all_layers=True)
    assert steps.shape == (3, 2, 2)
    assert steps[0] == pytest.approx(np.array([[1.0, 0.0], [0.5, 0.5]]))
    assert steps[1] == pytest.approx(np.array([[0.875, 0.125], [0.625, 0.375]]))
    assert np.allclose(steps.sum(-1), 1.0)


def test_rollout_options():
    a = np.random.default_rng(0).random((3, 4, 5, 5))
    a /= a.sum(-1, keepdims=True)
    plain = attention_rollout(a, residual=False)
    fused = a.mean(1)
    assert plain == pytest.approx(fused[2] @ fused[1] @ fused[0])
    assert attention_rollout(a, start_layer=2) == pytest.approx((fused[2] + np.eye(5)) / 2)
    result = AttentionResult.from_arrays(a.astype(np.float32), [str(i) for i in range(5)])
    assert attention_rollout(result) == pytest.approx(attention_rollout(a), abs=1e-6)
    with pytest.raises(ValueError):
        attention_rollout(a[..., :4])


# --- attention flow ---------------------------------------------------------------------------------------------


def _random_attention(rng, layers, heads, n):
    a = rng.random((layers, heads, n, n))
    return a / a.sum(-1, keepdims=True)


def test_max_flow_matches_scipy_on_random_integer_graphs():
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    from attnwidgets.analysis.rollout import max_flow

    rng = np.random.default_rng(1)
    for trial in range(40):
        size = int(rng.integers(4, 14))
        cap = rng.integers(0, 20, (size, size)) * (rng.random((size, size)) < 0.4)
        np.fill_diagonal(cap, 0)
        s, t = rng.choice(size, 2, replace=False)
        expected = maximum_flow(csr_matrix(cap.astype(np.int32)), int(s), int(t)).flow_value
        assert max_flow(cap.astype(float), int(s), int(t)) == pytest.approx(expected), trial


def test_flow_through_one_layer_is_the_capacity_itself():
    a = _random_attention(np.random.default_rng(2), 1, 3, 5)
    step = (a[0].mean(0) + np.eye(5)) / 2
    assert attention_flow(a, normalize=False) == pytest.approx(step)
    assert attention_flow(a) == pytest.approx(step)  # rows of Ã already sum to 1


def test_flow_through_two_layers_sums_the_narrowest_edge_of_each_path():
    # Two layers: the paths j -> (1, m) -> i are edge-disjoint, so the max flow is sum_m min(Ã1[m, j], Ã2[i, m]).
    a = _random_attention(np.random.default_rng(3), 2, 2, 6)
    s1, s2 = [(a[layer].mean(0) + np.eye(6)) / 2 for layer in range(2)]
    by_hand = np.array([[np.minimum(s1[:, j], s2[i, :]).sum() for j in range(6)] for i in range(6)])
    assert attention_flow(a, normalize=False) == pytest.approx(by_hand)
    norm = attention_flow(a)
    assert norm.sum(-1) == pytest.approx(np.ones(6))
    assert norm == pytest.approx(by_hand / by_hand.sum(-1, keepdims=True))


def test_flow_is_bounded_and_agrees_with_rollout_on_a_pure_residual_stream():
    rng = np.random.default_rng(4)
    a = _random_attention(rng, 4, 3, 7)
    raw = attention_flow(a, normalize=False)
    assert (raw >= -1e-12).all() and (raw <= 1 + 1e-9).all()  # at most the capacity into the output node
    eye = np.broadcast_to(np.eye(5), (3, 2, 5, 5))  # every head attends to itself: only the diagonal carries
    assert attention_flow(eye) == pytest.approx(np.eye(5))
    assert attention_rollout(eye) == pytest.approx(np.eye(5))


def test_flow_refuses_long_inputs_with_advice():
    a = _random_attention(np.random.default_rng(5), 1, 1, 9)
    with pytest.raises(ValueError, match="max_tokens=9"):
        attention_flow(a, max_tokens=8)
