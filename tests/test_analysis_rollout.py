"""Attention rollout against a 3-layer case worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.analysis import attention_rollout
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
