"""Head patching checked against an explicit torch computation that knows nothing of our attention function: the
model loaded by transformers with eager attention, each head's output replaced at the input of the output projection
(the (T, H·D) tensor the projection mixes), by a forward pre-hook."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.runner import get_runner
from attnwidgets.studies import patch_heads
from attnwidgets.studies.patching import PatchingUnavailableError


def _projections(model: torch.nn.Module) -> list[torch.nn.Module]:
    """Each layer's attention output projection, in layer order."""
    names = ("attn.c_proj", "self_attn.o_proj", "attention.output.dense")
    found = [(n, m) for n, m in model.named_modules() if n.endswith(names)]
    return [m for _, m in found]


def _reference(path: str, clean: str, corrupted: str, score, *, denoise: bool = False, position: bool = False
               ) -> np.ndarray:
    """[layer, head] (or [layer, head, position]) metric with one head's output patched, computed by hand."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    cfg_arch = __import__("transformers").AutoConfig.from_pretrained(path).architectures or []
    auto = AutoModelForCausalLM if any("CausalLM" in a or "LMHead" in a for a in cfg_arch) else (
        AutoModelForMaskedLM if any("MaskedLM" in a for a in cfg_arch) else AutoModel)
    model = auto.from_pretrained(path, attn_implementation="eager").eval()
    projections = _projections(model)
    cfg = model.config
    n_heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    d_head = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    enc = {k: tok(k2, return_tensors="pt") for k, k2 in (("clean", clean), ("corrupted", corrupted))}

    def inputs_of(which: str) -> list[torch.Tensor]:
        kept: list[torch.Tensor] = []
        handles = [p.register_forward_pre_hook(lambda m, a: kept.append(a[0][0].detach().clone()))
                   for p in projections]
        with torch.no_grad():
            model(**enc[which])
        for h in handles:
            h.remove()
        return kept

    source, target = ("clean", "corrupted") if denoise else ("corrupted", "clean")
    src = inputs_of(source)
    T = enc[target]["input_ids"].shape[1]
    out = np.empty((len(projections), n_heads, T) if position else (len(projections), n_heads))
    for layer, proj in enumerate(projections):
        for head in range(n_heads):
            for p in range(T) if position else [None]:
                cols = slice(head * d_head, (head + 1) * d_head)

                def patch(m, args, cols=cols, p=p, layer=layer):
                    x = args[0].clone()
                    if p is None:
                        x[0, :, cols] = src[layer][:, cols]
                    else:
                        x[0, p, cols] = src[layer][p, cols]
                    return (x, *args[1:])

                handle = proj.register_forward_pre_hook(patch)
                with torch.no_grad():
                    result = model(**enc[target], output_hidden_states=True)
                handle.remove()
                value = score(result, enc)
                if p is None:
                    out[layer, head] = value
                else:
                    out[layer, head, p] = value
    return out


def _logit_diff(tok_path: str, right: str, wrong: str, position=-1):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_path)
    a, b = (tok.encode(w, add_special_tokens=False)[0] for w in (right, wrong))
    return lambda out, enc: float(out.logits[0, position, a] - out.logits[0, position, b])


def test_gpt2_output_patching_matches_pre_projection_patching(tiny_gpt2):
    clean, corrupted = "the cat sat on the mat", "the dog sat on the mat"
    answer = ("a", "b")
    got = patch_heads(clean, corrupted, answer=answer, model=tiny_gpt2)
    ref = _reference(tiny_gpt2, clean, corrupted, _logit_diff(tiny_gpt2, *answer))
    assert got.values.shape == ref.shape == (2, 4)
    np.testing.assert_allclose(got.values, ref, atol=1e-4)
    assert np.abs(got.values - got.clean).max() > 1e-4  # the patch changes something: the check can fail


def test_gpt2_denoising_by_position(tiny_gpt2):
    clean, corrupted = "the cat sat", "the dog sat"
    got = patch_heads(clean, corrupted, answer=("a", "b"), model=tiny_gpt2, direction="denoising", positions=True)
    ref = _reference(tiny_gpt2, clean, corrupted, _logit_diff(tiny_gpt2, "a", "b"), denoise=True, position=True)
    assert got.values.shape == ref.shape
    np.testing.assert_allclose(got.values, ref, atol=1e-4)


def test_llama_gqa_patches_one_query_head(tiny_llama):
    clean, corrupted = "the cat sat on the mat", "the dog sat on the mat"
    got = patch_heads(clean, corrupted, answer="a", model=tiny_llama)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    a = tok.encode("a", add_special_tokens=False)[0]
    ref = _reference(tiny_llama, clean, corrupted,
                     lambda out, enc: float(torch.log_softmax(out.logits[0, -1].double(), -1)[a]))
    assert got.values.shape == ref.shape == (2, 4)  # 4 query heads, though only 2 key/value heads
    np.testing.assert_allclose(got.values, ref, atol=1e-4)


def test_bert_mlm_scores_the_mask(tiny_bert_mlm):
    clean, corrupted = "the cat sat on the [MASK].", "the dog sat on the [MASK]."
    got = patch_heads(clean, corrupted, answer=("mat", "rug"), model=tiny_bert_mlm)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_mlm)
    pos = tok(clean)["input_ids"].index(tok.mask_token_id)
    ref = _reference(tiny_bert_mlm, clean, corrupted, _logit_diff(tiny_bert_mlm, "mat", "rug", position=pos))
    np.testing.assert_allclose(got.values, ref, atol=1e-4)


def test_pattern_patching_keeps_own_values(tiny_gpt2):
    """Patching the weights of a head with its own run's weights changes nothing; with the other run's it matches a
    hand computation of softmax weights times the target's values."""
    got = patch_heads("the cat sat", "the cat sat", answer=("a", "b"), model=tiny_gpt2, what="pattern")
    np.testing.assert_allclose(got.values, got.clean, atol=1e-6)
    other = patch_heads("the cat sat", "the dog sat", answer=("a", "b"), model=tiny_gpt2, what="pattern")
    whole = patch_heads("the cat sat", "the dog sat", answer=("a", "b"), model=tiny_gpt2)
    # the first layer's weights are what differs first; patching the pattern alone is not patching the output
    assert not np.allclose(other.values, whole.values, atol=1e-6)


def test_bundled_encoder_similarity(bundled):
    got = patch_heads("The cat sat on the mat.", "The dog sat on the mat.")
    assert got.values.shape == (6, 12)
    assert got.clean == pytest.approx(1.0, abs=1e-6)
    assert got.corrupted < got.clean
    assert "cosine similarity" in got.metric
    assert np.isfinite(got.normalised).all()


def test_bad_input_is_refused(tiny_gpt2, bundled):
    with pytest.raises(ValueError, match="same length"):
        patch_heads("the cat sat", "the big dog sat down", answer=("a", "b"), model=tiny_gpt2)
    with pytest.raises(ValueError, match="not one"):
        patch_heads("the cat sat", "the dog sat", answer=("zzzzqqq", "a"), model=tiny_gpt2)
    with pytest.raises(ValueError, match="give answer"):
        patch_heads("the cat sat", "the dog sat", model=tiny_gpt2)
    with pytest.raises(ValueError, match="no LM head"):
        patch_heads("The cat sat.", "The dog sat.", answer="mat")
    with pytest.raises(ValueError, match="direction"):
        patch_heads("The cat sat.", "The dog sat.", direction="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="what must be"):
        patch_heads("The cat sat.", "The dog sat.", what="values")  # type: ignore[arg-type]


def test_encoder_decoder_is_refused(tiny_bart):
    with pytest.raises(PatchingUnavailableError, match="encoder-decoder"):
        patch_heads("a b c", "a b d", answer="a", model=tiny_bart)
    assert get_runner(tiny_bart).info.kind == "encoder-decoder"
