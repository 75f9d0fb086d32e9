"""capture_qk on an input past the dense budget goes through the capture path: no eager forward with every layer's
dense weights, and the same queries, keys, values and weights as the eager path."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.attention_stack import set_dense_budget
from attnwidgets.runner import get_runner
from attnwidgets.runner.qk import capture_qk_layers
from tests.runner.test_lazy_attention import TEXT


@pytest.mark.parametrize("family", ["tiny_gpt2", "tiny_llama", "tiny_bert", "tiny_t5"])
def test_long_capture_qk_runs_no_dense_forward_and_equals_eager(family, request, monkeypatch) -> None:
    path = request.getfixturevalue(family)
    runner = get_runner(path)
    stack = "encoder" if family == "tiny_t5" else "self"
    eager = capture_qk_layers(TEXT, model=runner, layers=[0, 1], stack=stack)
    forwards: list[bool] = []
    real = runner.forward

    def counted(enc, hooks=(), grad=False, capture=None, **kwargs):
        forwards.append(capture is not None)
        return real(enc, hooks, grad, capture, **kwargs)

    monkeypatch.setattr(runner, "forward", counted)
    old = set_dense_budget(0)
    try:
        runner.cache.clear()
        long = capture_qk_layers(TEXT, model=runner, layers=[0, 1], stack=stack)
    finally:
        set_dense_budget(old)
    assert forwards and all(forwards), "a forward ran without capture (dense eager attention)"
    for a, b in zip(eager, long, strict=True):
        assert a.layer == b.layer and a.tokens == b.tokens
        for name in ("q", "k", "v", "weights", "output"):
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), atol=1e-5, err_msg=f"{family} {name}")
        np.testing.assert_array_equal(a.mask, b.mask)
        assert b.recompute_error < 1e-5
