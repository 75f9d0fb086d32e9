"""The logit lens of a generation (``aw.generate(..., lens_k=k)``): each step's rows against an explicit torch
computation on the same model (hidden_states[l] of the new position → final norm → lm_head), the last row against the
step's own distribution, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.generation_result import GenerationResult
from attnwidgets.runner.generation import generate
from attnwidgets.runner.logits import LogitsUnavailableError

PROMPT = "The cat sat on the mat because"
STEPS = 4


def _explicit_lens(path: str, ids: list[int]) -> torch.Tensor:
    """Probabilities (L + 1, V) of the last position of ``ids``, read by hand: ln_f and lm_head on each stream
    before the last layer; hidden_states[L] is already normalised by GPT-2 / Llama (so only lm_head)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    norm = model.model.norm if hasattr(model, "model") else model.transformer.ln_f
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True)
        hs = [h[0, -1] for h in out.hidden_states]
        rows = [model.lm_head(norm(h)) for h in hs[:-1]] + [model.lm_head(hs[-1])]
        assert torch.allclose(rows[-1], out.logits[0, -1], atol=1e-5)
    return torch.softmax(torch.stack(rows).double(), -1)


@pytest.mark.parametrize("family", ["tiny_gpt2", "tiny_llama"])
def test_lens_rows_equal_an_explicit_torch_computation(family, request) -> None:
    path = request.getfixturevalue(family)
    g = generate(PROMPT, path, max_new_tokens=STEPS, min_new_tokens=STEPS, lens_k=3)
    assert g.has_lens and g.lens_ids is not None and g.lens_probs is not None and g.lens_tokens is not None
    n_layers = g.model.n_layers
    assert g.lens_ids.shape == (STEPS, n_layers + 1, 3) == g.lens_probs.shape
    for step in (0, STEPS - 1):
        fed = list(g.prompt_ids) + list(g.generated_ids[:step])
        want = _explicit_lens(path, [int(i) for i in fed])
        for row in range(n_layers + 1):
            top = want[row].topk(3)
            np.testing.assert_allclose(g.lens_probs[step, row], top.values.numpy(), atol=1e-5)
            # ties aside, the same tokens: compare the probability of our ids under the explicit read-out
            np.testing.assert_allclose(want[row][torch.tensor(g.lens_ids[step, row])].numpy(),
                                       g.lens_probs[step, row], atol=1e-5)
    # the display text is the tokenizer's, and step_lens pairs it with the probabilities
    assert g.step_lens(1)[0][0] == (g.lens_tokens[1][0][0], float(g.lens_probs[1, 0, 0]))


def test_last_lens_row_is_the_steps_own_distribution(tiny_gpt2) -> None:
    g = generate(PROMPT, tiny_gpt2, max_new_tokens=STEPS, min_new_tokens=STEPS, top_k=4, lens_k=4)
    assert g.lens_ids is not None and g.lens_probs is not None
    np.testing.assert_array_equal(g.lens_ids[:, -1], g.topk_ids)
    np.testing.assert_allclose(g.lens_probs[:, -1], g.topk_probs, atol=1e-6)
    # greedy: the last row's top token is the one written
    np.testing.assert_array_equal(g.lens_ids[:, -1, 0], g.generated_ids)


def test_lens_adds_no_forward_and_is_off_by_default(tiny_gpt2) -> None:
    from attnwidgets.runner import get_runner

    runner = get_runner(tiny_gpt2)
    before = runner.n_forward
    plain = generate(PROMPT, runner, max_new_tokens=3, min_new_tokens=3)
    mid = runner.n_forward
    lensed = generate(PROMPT, runner, max_new_tokens=3, min_new_tokens=3, lens_k=2)
    assert runner.n_forward - mid == mid - before == 3
    assert not plain.has_lens and plain.lens_ids is None
    np.testing.assert_array_equal(plain.generated_ids, lensed.generated_ids)
    with pytest.raises(ValueError, match="lens_k=5"):
        plain.step_lens(0)


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)])
def test_lens_k_must_be_a_positive_integer(tiny_gpt2, value, error) -> None:
    with pytest.raises(error, match="lens_k"):
        generate(PROMPT, tiny_gpt2, max_new_tokens=2, lens_k=value)


def test_lens_of_an_encoder_decoder_is_refused(tiny_bart) -> None:
    with pytest.raises(ValueError, match="lens_k: the logit lens of a generation reads a decoder"):
        generate("The cat sat.", tiny_bart, max_new_tokens=2, lens_k=3)


def test_a_model_without_an_unembedding_is_a_clear_error(tiny_gpt2, monkeypatch) -> None:
    from attnwidgets.runner import get_runner

    runner = get_runner(tiny_gpt2)
    monkeypatch.setattr(runner.model, "get_output_embeddings", lambda: None)
    with pytest.raises(LogitsUnavailableError, match="output embedding could not be found"):
        generate(PROMPT, runner, max_new_tokens=2, lens_k=3)


def test_result_checks_the_lens_arrays() -> None:
    from attnwidgets.result import AttentionResult

    att = np.tril(np.ones((3, 3), np.float32))
    att /= att.sum(1, keepdims=True)
    r = AttentionResult.from_arrays(att, ["a", "b", "c"], kind="decoder")
    base = (r, "a b", ["a", "b"], np.array([0, 1]), ["c", "d"], np.array([2, 3]), np.array([[2], [3]]),
            np.array([[0.9], [0.8]], np.float32), [["c"], ["d"]])
    ids = np.zeros((2, 2, 1), np.int64)
    ok = GenerationResult(*base, lens_ids=ids, lens_probs=np.ones((2, 2, 1), np.float32),
                          lens_tokens=[[["a"], ["b"]], [["c"], ["d"]]])
    assert ok.step_lens(-1) == [[("c", 1.0)], [("d", 1.0)]]
    with pytest.raises(ValueError, match="come together"):
        GenerationResult(*base, lens_ids=ids)
    with pytest.raises(ValueError, match=r"must both be \(2, layers \+ 1, k\)"):
        GenerationResult(*base, lens_ids=ids, lens_probs=np.ones((2, 3, 1), np.float32),
                         lens_tokens=[[["a"], ["b"]], [["c"], ["d"]]])
    with pytest.raises(ValueError, match="lens_tokens must be 2 x 2 rows of 1 strings"):
        GenerationResult(*base, lens_ids=ids, lens_probs=np.ones((2, 2, 1), np.float32),
                         lens_tokens=[[["a"], ["b"]], [["c"]]])
