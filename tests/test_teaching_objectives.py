"""T5 span corruption (teaching/objectives.py) against the paper's example and T5's released preprocessor's rules."""

from __future__ import annotations

import numpy as np
import pytest

from attnwidgets.teaching.objectives import random_spans_noise_mask, sentinel, span_corruption


def _rebuild(inputs: list[str], targets: list[str]) -> list[str]:
    """Put the dropped spans back where their sentinels stand (what a perfect T5 decoder would let you do)."""
    spans: dict[str, list[str]] = {}
    current = None
    for t in targets:
        if t.startswith("<extra_id_"):
            current = t
            spans[current] = []
        else:
            spans[current].append(t)
    out: list[str] = []
    for t in inputs:
        out += spans[t] if t.startswith("<extra_id_") else [t]
    return out


def test_the_paper_s_figure():
    words = "Thank you for inviting me to your party last week .".split()
    got = span_corruption(words, noise=[w in ("for", "inviting", "last") for w in words])
    assert got.inputs == ["Thank", "you", "<extra_id_0>", "me", "to", "your", "party", "<extra_id_1>", "week", "."]
    assert got.targets == ["<extra_id_0>", "for", "inviting", "<extra_id_1>", "last", "<extra_id_2>"]


@pytest.mark.parametrize("length", [1, 2, 5, 13, 40, 111, 512])
@pytest.mark.parametrize("seed", [0, 3, 7])
def test_counts_follow_t5_and_spans_alternate(length, seed):
    m = random_spans_noise_mask(length, rng=seed)
    n = max(length, 2)
    n_noise = min(max(round(n * 0.15), 1), n - 1)
    n_spans = max(round(n_noise / 3.0), 1)
    full = random_spans_noise_mask(n, rng=seed)
    assert int(full.sum()) == n_noise                                  # the count is fixed by the length
    assert int((np.diff(np.r_[0, full.astype(int)]) == 1).sum()) == n_spans  # so is the number of spans
    assert not full[0] and full[-1]                                    # kept run first; T5's last span is noise
    np.testing.assert_array_equal(m, full[:length])


@pytest.mark.parametrize("seed", range(5))
def test_inputs_and_targets_rebuild_the_text(seed):
    words = [f"w{i}" for i in range(57)]
    got = span_corruption(words, seed=seed)
    assert _rebuild(got.inputs, got.targets) == words
    k = sum(t.startswith("<extra_id_") for t in got.inputs)
    assert got.targets[-1] == sentinel(k) and len(got.inputs) + len(got.targets) == len(words) + 2 * k + 1


def test_seeds_differ_and_repeat():
    a, b = (random_spans_noise_mask(200, rng=s) for s in (0, 1))
    assert not np.array_equal(a, b) and np.array_equal(a, random_spans_noise_mask(200, rng=0))


@pytest.mark.parametrize(("kwargs", "match"), [(dict(text=""), "empty"), (dict(text="a b", noise=[True]), "one entry"),
                                               (dict(text="a b", noise_density=1.5), "noise_density")])
def test_bad_input_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        span_corruption(**kwargs)
