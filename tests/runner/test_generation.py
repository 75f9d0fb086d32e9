"""aw.generate: generated ids, per-step attention rows and top-k probabilities against transformers' eager model; the
GenerationResult accessors, the toy decoder, the view and its static twin, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.generation_result import GenerationResult
from attnwidgets.runner import capture as capture_module
from attnwidgets.runner.generation import generate

PROMPT = "The cat sat on the mat because"
DECODERS = ["tiny_gpt2", "tiny_llama", "tiny_mistral"]
ENC_DEC = ["tiny_bart", "tiny_marian", "tiny_t5"]
STEPS = 8


def _eager(path: str, seq2seq: bool):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    cls = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    return cls.from_pretrained(path, attn_implementation="eager").eval()


def _prompt_ids(g: GenerationResult) -> torch.Tensor:
    return torch.tensor(g.prompt_ids)[None]


@pytest.mark.parametrize("family", DECODERS)
def test_decoder_generation_equals_eager(family, request) -> None:
    path = request.getfixturevalue(family)
    g = generate(PROMPT, path, max_new_tokens=STEPS, min_new_tokens=STEPS)
    assert g.n_steps == STEPS and g.prompt_length == len(g.prompt_tokens)
    model = _eager(path, False)
    ids = _prompt_ids(g)
    with torch.no_grad():
        plain = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS, min_new_tokens=STEPS,
                               do_sample=False, pad_token_id=0)
        # (a) the same tokens as plain greedy generate
        assert plain[0, ids.shape[1]:].tolist() == g.generated_ids.tolist()
        fed = plain[:, :-1]  # prompt + generated[:-1]: what the model was fed
        out = model(fed, output_attentions=True)
    P = g.prompt_length
    assert g.result.n_tokens == fed.shape[1] == P + STEPS - 1
    L = len(out.attentions)
    for layer in range(L):
        eager = out.attentions[layer][0].numpy()  # (H, T, T)
        # (b) every step's row equals eager attention of the full forward, per head and as the mean
        for step in range(STEPS):
            row = P - 1 + step
            for head in range(eager.shape[0]):
                got = g.step_attention(step, layer, head)
                assert got.shape == (row + 1,)
                np.testing.assert_allclose(got, eager[head, row, :row + 1], atol=1e-5)
            np.testing.assert_allclose(g.step_attention(step, layer), eager[:, row, :row + 1].mean(0), atol=1e-5)
        m = g.steps_matrix(layer, 1)
        want = eager[1, P - 1:].copy()
        want[np.triu(np.ones_like(want, dtype=bool), k=P)] = np.nan  # keys not yet written
        np.testing.assert_allclose(m, want, atol=1e-5)
    # (c) top-k probabilities are the softmax of the eager logits at each step
    probs = torch.softmax(out.logits[0, P - 1:].float(), -1).numpy()
    top = np.argsort(-probs, axis=1)[:, :g.k]
    np.testing.assert_array_equal(g.topk_ids, top)
    np.testing.assert_allclose(g.topk_probs, np.take_along_axis(probs, top, 1), atol=1e-6)
    assert g.topk_ids[:, 0].tolist() == g.generated_ids.tolist()  # greedy: each step took its top token


@pytest.mark.parametrize("family", ENC_DEC)
def test_encoder_decoder_generation_equals_eager(family, request) -> None:
    path = request.getfixturevalue(family)
    g = generate(PROMPT, path, max_new_tokens=STEPS, min_new_tokens=STEPS)
    assert g.kinds == ["decoder", "cross"] and g.default_kind == "cross" and g.first_row == 0
    model = _eager(path, True)
    ids = _prompt_ids(g)
    with torch.no_grad():
        plain = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS, min_new_tokens=STEPS,
                               do_sample=False)
        assert plain[0, 1:].tolist() == g.generated_ids.tolist()
        out = model(ids, decoder_input_ids=plain[:, :-1], output_attentions=True)
    n_src = g.prompt_length
    for layer in range(len(out.decoder_attentions)):
        dec = out.decoder_attentions[layer][0].numpy()
        cross = out.cross_attentions[layer][0].numpy()
        for step in range(STEPS):
            for head in range(dec.shape[0]):
                np.testing.assert_allclose(g.step_attention(step, layer, head, "decoder"), dec[head, step, :step + 1],
                                           atol=1e-5)
                got = g.step_attention(step, layer, head, "cross")
                assert got.shape == (n_src,)
                np.testing.assert_allclose(got, cross[head, step], atol=1e-5)
    enc = out.encoder_attentions[0][0].numpy()
    np.testing.assert_allclose(g.result.head(0, 2, "encoder"), enc[2], atol=1e-5)
    probs = torch.softmax(out.logits[0].float(), -1).numpy()
    top = np.argsort(-probs, axis=1)[:, :g.k]
    np.testing.assert_allclose(g.topk_probs, np.take_along_axis(probs, top, 1), atol=1e-6)
    step = g.at_step(3)
    assert step.attention_shape("cross") == (len(out.cross_attentions), dec.shape[0], 4, n_src)
    np.testing.assert_allclose(step.head(1, 0, "cross"), out.cross_attentions[1][0, 0, :4].numpy(), atol=1e-5)


def test_at_step_is_the_prefix_and_views_accept_it(tiny_llama) -> None:
    g = generate(PROMPT, tiny_llama, max_new_tokens=5, min_new_tokens=5)
    r = g.at_step(2)
    n = g.prompt_length + 2  # the prompt and tokens 0, 1: the query at row P + 1 wrote token 2
    assert r.n_tokens == n and r.tokens == g.result.tokens[:n]
    np.testing.assert_allclose(r.head(1, 3)[-1, :], g.step_attention(2, 1, 3), atol=1e-7)
    assert r.attention.shape == (2, 4, n, n)  # within the dense budget it materialises as usual
    assert aw.AttentionHeatmap(r, layer=1, head=3).matrix().shape == (n, n)
    assert r.model.n_kv_heads == 2


def test_sampling_with_a_seed_is_reproducible_and_leaves_the_rng(tiny_gpt2) -> None:
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = generate(PROMPT, tiny_gpt2, max_new_tokens=6, do_sample=True, seed=7, min_new_tokens=6)
    after = torch.rand(1)
    assert torch.equal(before, after)  # the global RNG did not move
    b = generate(PROMPT, tiny_gpt2, max_new_tokens=6, do_sample=True, seed=7, min_new_tokens=6)
    c = generate(PROMPT, tiny_gpt2, max_new_tokens=6, do_sample=True, seed=8, min_new_tokens=6)
    assert a.generated_ids.tolist() == b.generated_ids.tolist() != c.generated_ids.tolist()
    greedy = generate(PROMPT, tiny_gpt2, max_new_tokens=6, min_new_tokens=6)
    assert a.generated_ids.tolist() != greedy.generated_ids.tolist()
    assert a.settings["do_sample"] is True and a.settings["seed"] == 7


def test_eos_as_the_first_token_is_a_one_step_result(tiny_gpt2) -> None:
    """A generation the model ends at once (eos forced at step 0) has one step: the eos token, its row, its top-k."""
    first = int(generate(PROMPT, tiny_gpt2, max_new_tokens=1).generated_ids[0])
    g = generate(PROMPT, tiny_gpt2, max_new_tokens=5, eos_token_id=first)  # the first token is the end
    assert g.n_steps == 1 and g.generated_ids.tolist() == [first]
    assert g.steps_matrix(0).shape == (1, g.prompt_length) and g.result.n_tokens == g.prompt_length
    assert g.at_step(0).n_tokens == g.prompt_length


# -- bad input ----------------------------------------------------------------------------------------------------

def test_encoder_only_model_is_refused(tiny_bert) -> None:
    with pytest.raises(ValueError, match="encoder-only"):
        generate(PROMPT, tiny_bert)


def test_prompt_longer_than_the_positions_is_refused(tiny_gpt2) -> None:
    with pytest.raises(ValueError, match="64 positions"):
        generate("the cat sat " * 40, tiny_gpt2)
    with pytest.raises(ValueError, match="at most"):
        generate(PROMPT, tiny_gpt2, max_new_tokens=60)


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError),
                                              ("4", TypeError)])
def test_max_new_tokens_must_be_a_positive_int(tiny_gpt2, value, error) -> None:
    with pytest.raises(error, match="max_new_tokens"):
        generate(PROMPT, tiny_gpt2, max_new_tokens=value)


def test_a_stop_before_any_token_is_refused(tiny_gpt2) -> None:
    with pytest.raises(ValueError, match="before any token"):
        generate(PROMPT, tiny_gpt2, max_length=3)
    with pytest.raises(ValueError, match="sets"):
        generate(PROMPT, tiny_gpt2, output_attentions=True)
    with pytest.raises(TypeError, match="prompt must be a string"):
        generate(["a"], tiny_gpt2)  # type: ignore[arg-type]


def test_keyboard_interrupt_leaves_no_capture_and_a_rerun_works(tiny_gpt2, monkeypatch) -> None:
    real = capture_module.captured_attention
    calls = []

    def boom(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:  # in the middle of the steps
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(capture_module, "captured_attention", boom)
    with pytest.raises(KeyboardInterrupt):
        generate(PROMPT, tiny_gpt2, max_new_tokens=6)
    assert capture_module.current() is None
    monkeypatch.setattr(capture_module, "captured_attention", real)
    g = generate(PROMPT, tiny_gpt2, max_new_tokens=6, min_new_tokens=6)
    assert g.n_steps == 6
    assert aw.run(PROMPT, model=tiny_gpt2).attention.shape[2] == g.prompt_length  # plain runs are dense again


def test_result_accessors_check_their_arguments(tiny_gpt2) -> None:
    g = generate(PROMPT, tiny_gpt2, max_new_tokens=3, min_new_tokens=3)
    with pytest.raises(IndexError, match="step 3"):
        g.step_attention(3, 0)
    with pytest.raises(TypeError, match="step"):
        g.step_row(1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cross"):
        g.steps_matrix(0, kind="cross")
    with pytest.raises(IndexError, match="layer 4"):
        g.steps_matrix(4)
    assert "3 generated" in repr(g)
    assert g.step_topk(-1)[0][0] == g.generated_tokens[-1]


# -- the toy decoder ---------------------------------------------------------------------------------------------

def test_toy_decoder_attends_to_the_mirrored_position_while_it_writes() -> None:
    """A decoder-only toy trained briefly on reversal (lengths 3-4): while it writes target token t, some head looks
    at the source token it copies, the mirrored position (``<bos>`` s0 .. s3 ``<sep>``: source index n-1-t sits at
    position n - t)."""
    from attnwidgets.teaching import train
    from attnwidgets.teaching.tasks import reverse_task

    run = train(reverse_task(3, 4), architecture="decoder", seed=0, steps=250, n_held_out=30, lr=5e-3, warmup=30)
    g = run.generate("3 1 4 2")
    assert g.generated_tokens == ["2", "4", "1", "3", "<eos>"]
    n = 4
    mirrored = [n - t for t in range(n)]
    best = max(
        (np.mean([int(np.nanargmax(g.steps_matrix(layer, head)[t])) == mirrored[t] for t in range(n)]), layer, head)
        for layer in range(g.model.n_layers) for head in range(g.model.n_heads)
    )
    assert best[0] == 1.0, best
    # the toy's rows equal its own forward's attention (it recomputes every step without a cache)
    r = run.result("3 1 4 2", target="2 4 1 3")
    layer, head = best[1], best[2]
    np.testing.assert_allclose(g.steps_matrix(layer, head)[:, :5], r.attention[layer, head, 5:10, :5], atol=1e-6)
    assert g.topk_ids[:, 0].tolist() == g.generated_ids.tolist()


def test_toy_generation_checks_its_arguments() -> None:
    from attnwidgets.teaching import generate_toy, train

    run = train("reverse", steps=1, n_held_out=5, architecture="decoder")
    with pytest.raises(ValueError, match="at least 1"):
        generate_toy(run.model, run.task, "3 1", max_new_tokens=0)
    with pytest.raises(ValueError, match="does not fit"):
        generate_toy(run.model, run.task, "3 1", max_new_tokens=500)
    enc_dec = train("reverse", steps=1, n_held_out=5)
    g = enc_dec.generate("3 1 4", max_new_tokens=3)
    assert g.kinds == ["decoder", "cross"] and g.steps_matrix(0, 0, "cross").shape == (3, 4)


# -- the view and its twin ---------------------------------------------------------------------------------------

def test_generation_view_payload_and_requests(tiny_gpt2) -> None:
    import traitlets

    g = generate(PROMPT, tiny_gpt2, max_new_tokens=5, min_new_tokens=5)
    w = aw.GenerationView(g, layer=1, head=2, step=-1)
    assert w.step == 4 and w.kind == "self"
    p = w._payload
    n_keys = g.prompt_length + 4
    assert p["key"] == "self/1/2" and p["matrix"]["dtype"] == "float16" and p["matrix"]["shape"] == [5, n_keys]
    sent = np.frombuffer(bytes(p["matrix"]["buffer"]), "<f2").reshape(5, n_keys).astype(np.float32)
    np.testing.assert_allclose(sent, g.steps_matrix(1, 2), atol=1e-3, equal_nan=True)
    assert np.isnan(sent[0, -1])
    reply, buffers = w.answer({"what": "matrix", "kind": "self", "layer": 0, "head": -1})
    got = np.frombuffer(bytes(buffers[0]), "<f2").reshape(reply["shape"]).astype(np.float32)
    np.testing.assert_allclose(got, g.steps_matrix(0, -1), atol=1e-3, equal_nan=True)
    assert w._meta["generated"] == g.generated_tokens and w._meta["prompt"] == g.prompt_tokens
    for bad in ({"step": 5}, {"layer": 2}, {"head": 4}, {"kind": "cross"}):
        with pytest.raises(traitlets.TraitError):
            aw.GenerationView(g, **bad)
    with pytest.raises(TypeError, match="GenerationResult"):
        aw.GenerationView(g.result)
    assert len(w._export_requests("all")) == 2 * 5
    fig = aw.plots.plot_generation(g, step=2, layer=1, head=2)
    assert fig.axes[1].get_title() == "steps x keys · self attention · layer 1 · head 2"
    from attnwidgets.viewdata.labels import token_label

    assert fig.axes[2].get_yticklabels()[0].get_text() == token_label(g.topk_tokens[2][0])
    with pytest.raises(ValueError, match="step 9"):
        aw.plots.plot_generation(g, step=9)


def test_generating_from_a_model_whose_pad_is_bos_logs_no_padding_warning() -> None:
    """Notebook 01 §7b: the shipped copying decoder's pad token is its <bos>, the first token of every prompt, and
    transformers printed a padding warning into the cell (generate drops the all-ones mask it is given, then the
    model's forward sees no mask and a pad id)."""
    import logging

    from transformers.utils import logging as hf_logging

    from attnwidgets.studies.induction_model import copy_text, induction_decoder

    runner = aw.runner.get_runner(induction_decoder())
    assert runner.tokenizer.pad_token_id == runner.tokenizer.bos_token_id, "the case this test is about"
    prompt = " ".join(copy_text(6, seed=4).split()[:9])
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    library = logging.getLogger("transformers")
    verbosity = hf_logging.get_verbosity()
    logging.Logger.warning_once.cache_clear()  # type: ignore[attr-defined]  # printed once per process, else never
    hf_logging.set_verbosity_warning()  # the tests run at TRANSFORMERS_VERBOSITY=error, users at warning
    library.addHandler(handler)
    try:
        g = generate(prompt, runner, max_new_tokens=4, top_k=8)
    finally:
        library.removeHandler(handler)
        hf_logging.set_verbosity(verbosity)
    assert g.n_steps == 4
    assert [r.getMessage() for r in records] == []
