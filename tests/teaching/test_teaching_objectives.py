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


# -- BERT's 80/10/10 masking -----------------------------------------------------------------------------------------

def test_bert_mask_counts_and_shares():
    from attnwidgets.teaching.objectives import bert_mask

    rng = np.random.default_rng(0)
    ids = np.arange(100, 140)
    special = np.zeros(40, bool)
    special[[0, -1]] = True
    actions: list[str] = []
    for _ in range(2000):
        m = bert_mask(ids, special, rng, mask_id=7, vocab_size=1000)
        assert len(m.positions) == round(0.15 * 38) == 6       # 15 % of the 38 ordinary tokens
        assert not special[m.positions].any()                    # [CLS] and [SEP] are never targets
        assert (m.targets == ids[m.positions]).all()
        for pos, action in zip(m.positions, m.actions, strict=True):
            if action == "[MASK]":
                assert m.ids[pos] == 7
            elif action == "unchanged":
                assert m.ids[pos] == ids[pos]
        untouched = np.setdiff1d(np.arange(40), m.positions)
        assert (m.ids[untouched] == ids[untouched]).all()
        actions += m.actions
    shares = {a: actions.count(a) / len(actions) for a in ("[MASK]", "random token", "unchanged")}
    assert shares["[MASK]"] == pytest.approx(0.8, abs=0.015)
    assert shares["random token"] == pytest.approx(0.1, abs=0.01)
    assert shares["unchanged"] == pytest.approx(0.1, abs=0.01)


def test_bert_mask_refuses_bad_input():
    from attnwidgets.teaching.objectives import bert_mask

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="special tokens only"):
        bert_mask([101, 102], [True, True], rng, mask_id=103, vocab_size=10)
    with pytest.raises(ValueError, match="same length"):
        bert_mask([101, 5, 102], [True, True], rng, mask_id=103, vocab_size=10)
    with pytest.raises(ValueError, match="rate"):
        bert_mask([101, 5, 102], [True, False, True], rng, mask_id=103, vocab_size=10, rate=1.5)


def test_shipped_text_split_is_fixed_disjoint_and_about_a_tenth():
    import zlib

    from attnwidgets.data import documents, split_documents

    docs = documents()
    parts = split_documents()
    assert sum(len(v) for v in parts.values()) == len(docs) == len(set(docs))
    assert set(parts["held_out"]).isdisjoint(parts["train"]) and set(parts["validation"]).isdisjoint(parts["train"])
    assert 0.05 < len(parts["held_out"]) / len(docs) < 0.15
    assert all(zlib.crc32(d.encode()) % 10 == 0 for d in parts["held_out"])
