"""Head patching's batch size (``patch_heads(max_batch=...)``): one run at a time and every head of a layer in one
batch give the same grid (to 1e-6), for outputs, patterns and positions; the default batch is sized to the memory
budget by the row estimate; and a bad max_batch is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.runner import get_runner
from attnwidgets.runner import patching as patching_module
from attnwidgets.runner.patching import MAX_ROWS, PATCH_BUDGET, batch_rows, row_bytes
from attnwidgets.studies import patch_heads

CLEAN = "the cat sat on the mat"
CORRUPT = "the dog sat on the mat"


@pytest.mark.parametrize(("what", "positions"), [("output", False), ("pattern", False), ("output", True)])
def test_one_row_at_a_time_equals_one_batch(tiny_gpt2, what, positions) -> None:
    kw = dict(answer=("a", "b"), model=tiny_gpt2, what=what, positions=positions)
    one = patch_heads(CLEAN, CORRUPT, max_batch=1, **kw).values
    whole = patch_heads(CLEAN, CORRUPT, max_batch=64, **kw).values
    three = patch_heads(CLEAN, CORRUPT, max_batch=3, **kw).values       # batches that cut across heads
    np.testing.assert_allclose(one, whole, atol=1e-6, rtol=0)
    np.testing.assert_allclose(three, whole, atol=1e-6, rtol=0)
    assert np.ptp(whole) > 0                                             # the grid is not flat: a real comparison


def test_the_batch_size_is_what_runs(tiny_gpt2, monkeypatch) -> None:
    runner = get_runner(tiny_gpt2)
    sizes: list[int] = []
    real = patching_module._repeat

    def spy(enc, rows):
        sizes.append(rows)
        return real(enc, rows)

    monkeypatch.setattr(patching_module, "_repeat", spy)
    patch_heads(CLEAN, CORRUPT, answer=("a", "b"), model=runner, max_batch=3)
    assert sizes == [3, 1] * runner.info.n_layers                      # 4 heads: 3 + 1 per layer


def test_default_batch_follows_the_budget(tiny_gpt2, monkeypatch) -> None:
    runner = get_runner(tiny_gpt2)
    T = 20
    # the estimate by hand: logits over the vocabulary at every (or one) position + 8 x hidden per position + three
    # (heads, T, T) tensors per layer, float32 (2 layers, 4 heads, hidden 32)
    vocab = runner.model.get_output_embeddings().weight.shape[0]
    assert row_bytes(runner, T) == 4 * (T * vocab + T * 8 * 32 + 3 * 2 * 4 * T * T)
    assert row_bytes(runner, T, 1) == 4 * (vocab + T * 8 * 32 + 3 * 2 * 4 * T * T)
    assert batch_rows(runner, T, None) == min(MAX_ROWS, PATCH_BUDGET // row_bytes(runner, T))
    monkeypatch.setattr(patching_module, "PATCH_BUDGET", 3 * row_bytes(runner, T) + 1)
    assert batch_rows(runner, T, None) == 3
    monkeypatch.setattr(patching_module, "PATCH_BUDGET", 1)
    assert batch_rows(runner, T, None) == 1                               # never below one row
    assert batch_rows(runner, T, 5) == 5


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError),
                                              ("4", TypeError)])
def test_bad_max_batch_is_refused(tiny_gpt2, value, error) -> None:
    with pytest.raises(error, match="max_batch"):
        patch_heads(CLEAN, CORRUPT, answer=("a", "b"), model=tiny_gpt2, max_batch=value)
