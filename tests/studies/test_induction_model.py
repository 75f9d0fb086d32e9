"""The shipped induction decoder: its file is what its recipe makes (first steps re-made from the seed), a tampered
file is refused before any weight is used, and the shipped model copies: it predicts the second copy of a repeated
block it never saw."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.studies import induction_model as im


def test_first_steps_match_the_shipped_history():
    _, history, _ = im.load_weights()
    _, again = im.train_induction_decoder(3)
    np.testing.assert_allclose(again["loss"], history["loss"][:3], rtol=1e-4)


def test_a_tampered_file_is_refused(tmp_path):
    model, _, _ = im.load_weights()
    arrays = {f"w/{k}": v.numpy() for k, v in model.state_dict().items()}
    arrays["w/transformer.wte.weight"] = arrays["w/transformer.wte.weight"][:10]
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match="not the shipped induction decoder"):
        im.load_weights(bad)


def test_the_shipped_model_copies():
    model, history, _ = im.load_weights()
    assert history["second_copy_loss"][-50:].mean() < 0.5 * history["second_copy_loss"][:50].mean()
    tok = im.tokenizer()
    hits = total = 0
    for seed in range(5):
        text = im.copy_text(10, seed=100 + seed)
        ids = torch.tensor([tok.convert_tokens_to_ids(text.split())])
        with torch.no_grad():
            pred = model(input_ids=ids).logits[0].argmax(-1)
        second = slice(11, 20)  # predictions of the second copy's tokens 2..10
        hits += int((pred[second] == ids[0, 12:21]).sum())
        total += 9
    assert hits / total > 0.9, hits / total


def test_copy_text_and_folder():
    text = im.copy_text(5, seed=2)
    words = text.split()
    assert words[0] == "<bos>" and words[1:6] == words[6:11] and len(set(words[1:6])) == 5
    folder = im.induction_decoder()
    assert folder == im.induction_decoder()  # written once per session
    with pytest.raises(ValueError, match="steps"):
        im.train_induction_decoder(0)
