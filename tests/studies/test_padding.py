"""The padding mask, live (studies/padding.py) and in the mask explorer: [PAD] keys get weight exactly 0 with the
mask, a padded input reads what it reads alone, and forgetting the mask lets real queries attend to [PAD]."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from traitlets import TraitError

import attnwidgets as aw
from attnwidgets.viewdata.views.mask_explorer import build_mask


def test_masked_batch_gives_pad_zero_weight_and_matches_running_alone(tiny_bert):
    df = aw.studies.padding_check(["a cat", "the cat sat on the mat because it was tired"], model=tiny_bert)
    short, long = df.iloc[0], df.iloc[1]
    assert short["pad"] > 0 and long["pad"] == 0 and short["tokens"] + short["pad"] == long["tokens"]
    assert short["pad_weight_masked"] == 0.0                      # exp(-huge) underflows to exactly 0
    assert short["cosine_masked"] == pytest.approx(1.0, abs=1e-6)
    assert short["pad_weight_forgotten"] > 0.05                   # real queries now read [PAD]
    assert short["cosine_forgotten"] < 1 - 1e-6                   # and its vectors change
    assert long["cosine_forgotten"] == pytest.approx(1.0, abs=1e-6)  # nothing to forget for the longest input


def test_pad_weight_is_the_share_a_hand_built_batch_gives_pad():
    from types import SimpleNamespace

    from attnwidgets.studies.padding import _pad_weight

    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    attn = torch.zeros(2, 1, 3, 3)
    attn[0, 0] = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.0, 0.0, 1.0]])  # row 2 is [PAD]: ignored
    attn[1, 0] = torch.full((3, 3), 1 / 3)
    got = _pad_weight(SimpleNamespace(attentions=(attn,)), mask)
    np.testing.assert_allclose(got, [0.8, 0.0], atol=1e-7)


def test_a_causal_decoder_padded_on_the_right_never_reads_its_padding(tiny_gpt2):
    df = aw.studies.padding_check(["a cat", "the cat sat on the mat because it was tired"], model=tiny_gpt2)
    short = df.iloc[0]
    side = aw.runner.get_runner(tiny_gpt2).tokenizer.padding_side
    if side == "right":  # causal: query i sees keys <= i, and every [PAD] comes after the last real token
        assert short["pad_weight_forgotten"] == 0.0 and short["cosine_forgotten"] == pytest.approx(1.0, abs=1e-5)
    else:
        assert short["pad_weight_forgotten"] > 0.0


@pytest.mark.parametrize("texts", [["only one"], ["same length", "same length"]])
def test_a_batch_without_padding_is_a_clear_error(tiny_bert, texts):
    with pytest.raises(ValueError, match=r"two texts|same length"):
        aw.studies.padding_check(texts, model=tiny_bert)


def test_mask_explorer_padding_masks_pad_columns_only():
    m = build_mask("causal", 5, padding=2)
    assert not m[:, 3:].any()                                      # no query sees a [PAD] key
    np.testing.assert_array_equal(m[:, :3], build_mask("causal", 5)[:, :3])  # the rest as before
    w = aw.MaskExplorer("full", length=6, padding=2)
    assert w.mask_array().sum() == 6 * 4 and w._meta["padding"] == 2 and "[PAD]" in w._meta["caption"]
    w.length = 2                                                   # a shorter input keeps one real token
    assert w.padding == 1
    with pytest.raises(TraitError, match="at least one real token"):
        w.padding = 2
    with pytest.raises(ValueError, match="padding must be"):
        build_mask("full", 3, padding=-1)
