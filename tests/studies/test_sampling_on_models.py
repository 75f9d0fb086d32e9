"""The sampling playground's reshaping, checked against transformers' own logits warpers (temperature, top-k, top-p,
min-p, in generate's order) on the same candidates, and its bad settings refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from attnwidgets.analysis.sampling import reshape


def _hf(probs: np.ndarray, temperature: float, top_k: int, top_p: float, min_p: float) -> np.ndarray:
    scores = torch.log(torch.tensor(probs, dtype=torch.float64))[None]
    ids = torch.zeros((1, 1), dtype=torch.long)
    for warper in (TemperatureLogitsWarper(temperature), TopKLogitsWarper(top_k),
                   *([TopPLogitsWarper(top_p)] if top_p < 1 else []), *([MinPLogitsWarper(min_p)] if min_p else [])):
        scores = warper(ids, scores)
    return torch.softmax(scores, -1)[0].numpy()


@pytest.mark.parametrize("seed", range(20))
def test_matches_transformers_warpers(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 12))
    probs = np.sort(rng.dirichlet(np.full(k + 3, 0.5)))[::-1][:k].copy()  # the top k of a bigger vocabulary: sum < 1
    temperature = float(rng.choice([0.3, 0.7, 1.0, 1.5, 3.0]))
    top_k = int(rng.integers(1, k + 1))
    top_p = float(rng.choice([1.0, 0.95, 0.8, 0.5, 0.2]))
    min_p = float(rng.choice([0.0, 0.05, 0.2, 0.5]))
    after, cut = reshape(probs, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)
    np.testing.assert_allclose(after, _hf(probs, temperature, top_k, top_p, min_p), atol=1e-12)
    assert after.sum() == pytest.approx(1.0)
    assert all((c == "") == (a > 0) for a, c in zip(after, cut))


def test_hand_case_and_rule_names():
    p = np.array([0.4, 0.3, 0.2, 0.05])
    after, cut = reshape(p, top_k=3)
    np.testing.assert_allclose(after, [4 / 9, 3 / 9, 2 / 9, 0])
    assert cut == ["", "", "", "top-k"]
    after, cut = reshape(p, top_p=0.6)  # 0.4 < 0.6 keeps the second; 0.7 ≥ 0.6 cuts the third
    assert cut == ["", "", "top-p", "top-p"]
    after, cut = reshape(p, min_p=0.6)  # floor 0.6 · 0.4/0.95
    assert cut == ["", "", "min-p", "min-p"]
    after, _ = reshape(p, temperature=0.01)
    assert after[0] == pytest.approx(1.0)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"temperature": 0}, "temperature must be above 0"), ({"temperature": float("nan")}, "finite"),
    ({"top_k": 0}, "top_k must be an integer from 1 to 3"), ({"top_k": 4}, "1 to 3"), ({"top_k": 2.5}, "top_k"),
    ({"top_p": 0}, "top_p must be in"), ({"top_p": 1.5}, "top_p"), ({"min_p": -0.1}, "min_p"),
    ({"min_p": True}, "finite number"),
])
def test_out_of_range_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reshape(np.array([0.5, 0.3, 0.2]), **kwargs)
