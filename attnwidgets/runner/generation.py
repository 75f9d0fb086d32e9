"""Attention while a model writes: ``model.generate`` in capture mode, one :class:`GenerationResult` back.

Inside :func:`~attnwidgets.runner.capture.capturing`, every attention call of ``model.generate`` (the prompt, then
one query per step against the growing key/value cache) keeps its queries and keys, and
:meth:`~attnwidgets.runner.capture.Capture.stack` joins a site's calls into one causal
:class:`~attnwidgets.attention_stack.LazyStack` over the fed positions (prompt + generated[:-1]). No n x n weights
exist during generation; a step's row is rebuilt on demand and equals eager attention of a forward over the whole
sequence (``tests/runner/test_generation.py``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, cast

import numpy as np
import torch

from ..generation_result import GenerationResult
from ..result import AttentionResult
from .capture import Capture, capturing
from .encoding import Encoded, check_text
from .loading import AttentionUnavailableError
from .logits import LogitsUnavailableError, lens_readout, stream_hooks
from .runner import Runner, get_runner

__all__ = ["generate"]

_OURS = ("output_logits", "return_dict_in_generate", "output_attentions", "output_scores", "streamer")


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def _texts(runner: Runner, ids: list[int]) -> list[str]:
    """Display text of token ids, by the runner's own rule for a target side (special tokens kept as they are)."""
    if not ids:
        return []
    t = torch.tensor([ids], dtype=torch.long)
    enc = Encoded({"decoder_input_ids": t, "decoder_attention_mask": torch.ones_like(t)}, [""], [None], [None])
    return list(runner.token_fields(enc, 0, side="target")["tokens"])


def _fields(runner: Runner, ids: list[int], after_words: int) -> dict[str, Any]:
    """Token fields of generated ids fed back to a decoder: each piece a word of its own after the prompt's words."""
    t = torch.tensor([ids], dtype=torch.long)
    enc = Encoded({"decoder_input_ids": t, "decoder_attention_mask": torch.ones_like(t)}, [""], [None], [None])
    f = runner.token_fields(enc, 0, side="target")
    special = np.array([w < 0 for w in f["word_ids"]], dtype=bool)
    words = np.where(special, -1, np.cumsum(~special) - 1 + after_words)
    return dict(
        tokens=list(f["tokens"]),
        token_ids=np.asarray(f["token_ids"], np.int64),
        word_ids=words,
        segment_ids=np.zeros(len(ids), np.int64),
        special_mask=special,
    )


def generate(
    prompt: str,
    model: str | os.PathLike[str] | Runner | None = None,
    max_new_tokens: int = 32,
    *,
    top_k: int = 5,
    lens_k: int | None = None,
    do_sample: bool = False,
    seed: int | None = None,
    revision: str | None = None,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    **generation_kwargs: Any,
) -> GenerationResult:
    """Let ``model`` continue ``prompt`` and record, at every step, its attention and its top-k next tokens.

    Greedy by default; ``do_sample=True`` samples (with ``seed``, reproducibly; the global torch RNG is left as it
    was). Encoder-decoders (BART, Marian, T5) translate/summarise ``prompt``: the encoder's self-attention is
    recorded once, the decoder's self- and cross-attention per step (the alignment with the source forming word by
    word). Attention is kept as queries and keys (no n x n weights during generation); see
    :class:`~attnwidgets.generation_result.GenerationResult` for which row is which step.

    Parameters
    ----------
    prompt : str
        The text to continue (the source of an encoder-decoder), tokenised with the model's tokenizer and its special
        tokens, as :func:`attnwidgets.run` does.
    model : str, path or Runner, optional
        A causal LM (GPT-2, Llama, Mistral, ...) or a sequence-to-sequence model; see :func:`get_runner`.
    max_new_tokens : int
        At most this many tokens are generated (fewer when the model writes its end-of-sequence token).
    top_k : int
        How many of the most probable next tokens to keep per step (probabilities: softmax of the raw logits).
    lens_k : int, optional
        Also keep the logit lens (nostalgebraist 2020) of every step: the ``lens_k`` most probable tokens read from
        the new position's residual stream after the embeddings and after each layer, through the final norm and
        the unembedding (``lens_ids``, ``lens_probs``, ``lens_tokens`` of the result; the last row is the step's own
        distribution). Read from the streams the generation's own forwards produce (hooks; no second forward).
        Decoders only.
    do_sample, seed
        Sample instead of greedy decoding; ``seed`` makes it reproducible.
    **generation_kwargs
        Passed on to ``model.generate`` (``temperature``, ``top_p``, ``repetition_penalty``, ``eos_token_id``, ...).

    Raises
    ------
    LogitsUnavailableError
        ``lens_k`` for a model whose stream cannot be read through a final norm and an unembedding (see
        :func:`attnwidgets.runner.logits.lens_readout`).
    ValueError
        ``lens_k`` for an encoder-decoder; for an encoder-only model (BERT), a model without a language-model head,
        a prompt that leaves no room in the model's positions, ``max_new_tokens`` below 1, or a generation that
        ended before any token (``max_length`` at or below the prompt's length).
    TypeError
        For a prompt that is not a string, or a count that is not an integer.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> g = aw.generate("The cat", model="gpt2", max_new_tokens=5)      # doctest: +SKIP
    >>> g.step_attention(0, layer=5, head=-1)                           # doctest: +SKIP
    """
    max_new_tokens, top_k, lens_k = _check_arguments(prompt, max_new_tokens, top_k, lens_k, seed, generation_kwargs)
    runner = get_runner(model, revision, device=device, dtype=dtype)
    _check_model(runner, lens_k)
    readout = lens_readout(runner) if lens_k is not None else None  # its clear error before generating
    batch, inputs, n_prompt = _prompt(runner, prompt, max_new_tokens, generation_kwargs.get("max_length"))
    out, held, streams = _generate(
        runner, inputs, max_new_tokens, do_sample, seed, readout is not None, generation_kwargs
    )
    enc_dec = runner.info.kind == "encoder-decoder"
    sequences = out.sequences[0].cpu()
    start = 1 if enc_dec else n_prompt  # an encoder-decoder's sequences begin with the decoder start token
    generated = sequences[start:].tolist()
    n = len(generated)
    if n == 0:
        raise ValueError(
            f"generation ended before any token was written (settings {generation_kwargs or 'default'}"
            f", prompt of {n_prompt} tokens): raise max_length or use max_new_tokens"
        )
    topk_ids, topk_probs, topk_tokens = _top_k(runner, out.logits[:n], top_k)
    lens = _lens(runner, readout, streams, n, lens_k) if readout is not None and lens_k is not None else {}
    enc = Encoded({k_: v.cpu() for k_, v in inputs.items()}, [prompt], [None], [None], [0], encodings=batch)
    src = runner.token_fields(enc, 0)
    src.pop("valid")
    gen_tokens = _texts(runner, generated)
    result = _attention_result(runner, held, prompt, src, sequences, generated, n_prompt)
    return GenerationResult(
        result=result,
        prompt=prompt,
        prompt_tokens=list(src["tokens"]),
        prompt_ids=np.asarray(src["token_ids"]),
        generated_tokens=gen_tokens,
        generated_ids=np.array(generated, np.int64),
        topk_ids=topk_ids,
        topk_probs=topk_probs,
        topk_tokens=topk_tokens,
        text=runner.tokenizer.decode(generated, skip_special_tokens=True),
        **lens,
        settings=dict(
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            seed=seed,
            top_k=top_k,
            **{k_: v for k_, v in generation_kwargs.items() if isinstance(v, (int, float, str, bool))},
        ),
    )


def _check_arguments(
    prompt: object, max_new_tokens: Any, top_k: Any, lens_k: Any, seed: Any, generation_kwargs: dict[str, Any]
) -> tuple[int, int, int | None]:
    """:func:`generate`'s arguments checked before a model is loaded: (max_new_tokens, top_k, lens_k) as ints."""
    check_text(prompt, "prompt")
    max_new_tokens = _check_count(max_new_tokens, "max_new_tokens")
    top_k = _check_count(top_k, "top_k")
    if lens_k is not None:
        lens_k = _check_count(lens_k, "lens_k")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed must be an integer or None, got {type(seed).__name__} {seed!r}")
    given = sorted(k for k in generation_kwargs if k in _OURS)
    if given:
        raise ValueError(f"generate sets {given} itself (it records logits and attention its own way); leave them out")
    return max_new_tokens, top_k, lens_k


def _check_model(runner: Runner, lens_k: int | None) -> None:
    """The model can write (a decoder or an encoder-decoder with a language-model head), and be read by the lens."""
    info = runner.info
    if info.kind == "encoder":
        raise ValueError(
            f"{info.name!r} is an encoder-only model ({info.model_type}): it reads a whole text at once "
            "and writes nothing. Generate with a decoder (GPT-2, Llama) or an encoder-decoder (BART, T5, "
            "Marian); use attnwidgets.run to see this model's attention"
        )
    if runner.head not in ("causal-lm", "seq2seq-lm") or not hasattr(runner.model, "generate"):
        raise ValueError(
            f"{info.name!r} was loaded without a language-model head ({runner.head!r}), so it cannot "
            "predict tokens: give a checkpoint whose architecture ends in ForCausalLM, LMHeadModel or "
            "ForConditionalGeneration"
        )
    if lens_k is not None and info.kind != "decoder":
        raise ValueError(
            f"lens_k: the logit lens of a generation reads a decoder's residual stream; {info.name!r} is an {info.kind}"
        )


def _prompt(
    runner: Runner, prompt: str, max_new_tokens: int, max_length: int | None
) -> tuple[Any, dict[str, torch.Tensor], int]:
    """The prompt tokenised (the batch, its model inputs (1, n) on the CPU, n), checked to leave room for
    ``max_new_tokens`` in the model's positions and to be shorter than a given ``max_length``."""
    info = runner.info
    batch = runner.tokenizer([prompt], return_tensors="pt", verbose=False)
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    n_prompt = int(inputs["input_ids"].shape[1])
    if n_prompt == 0:
        raise ValueError(f"prompt {prompt!r} has no tokens once tokenised")
    limit = info.max_length
    enc_dec = info.kind == "encoder-decoder"
    if n_prompt > limit or (not enc_dec and n_prompt >= limit):
        raise ValueError(
            f"the prompt is {n_prompt} tokens, and {info.name!r} has {limit} positions: "
            f"{'that is more than the encoder takes' if enc_dec else 'no room is left for a new token'}. "
            "Shorten the prompt"
        )
    room = limit - (1 if enc_dec else n_prompt)
    if max_new_tokens > room:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} does not fit: {info.name!r} has {limit} positions and "
            f"{'the decoder starts with one token' if enc_dec else f'the prompt takes {n_prompt}'}, "
            f"so at most {room} new tokens; ask for fewer or shorten the prompt"
        )
    if max_length is not None and not enc_dec and max_length <= n_prompt:
        raise ValueError(
            f"max_length={max_length} stops generation before any token: the prompt alone is "
            f"{n_prompt} tokens (max_length counts the prompt). Use max_new_tokens instead"
        )
    return batch, inputs, n_prompt


def _generate(
    runner: Runner,
    inputs: dict[str, torch.Tensor],
    max_new_tokens: int,
    do_sample: bool,
    seed: int | None,
    lens: bool,
    generation_kwargs: dict[str, Any],
) -> tuple[Any, Capture, list[torch.Tensor]]:
    """``model.generate`` in capture mode (with ``seed``, the global torch RNG left as it was): its output (logits
    kept), the capture of every attention call, and, with ``lens``, the new position's residual stream (D,) of
    every layer (n_layers + 1 per forward). Counted in ``runner.n_forward``, one per step."""
    tok = runner.tokenizer
    kwargs: dict[str, Any] = dict(
        max_new_tokens=max_new_tokens, do_sample=do_sample, output_logits=True, return_dict_in_generate=True
    )
    if tok.pad_token_id is not None:
        kwargs["pad_token_id"] = tok.pad_token_id
    kwargs.update(generation_kwargs)
    device_ = runner.device
    inputs = {k: v.to(device_) for k, v in inputs.items()}
    rng_devices = [device_] if device_.type == "cuda" else []
    held = Capture()
    streams: list[torch.Tensor] = []
    hooks = stream_hooks(runner, lambda s: streams.append(s[0, -1])) if lens else nullcontext()
    with torch.random.fork_rng(devices=rng_devices, enabled=seed is not None):
        if seed is not None:
            torch.manual_seed(int(seed))
        with torch.inference_mode(), capturing(held), hooks, _one_unpadded_prompt():
            out = cast(Any, runner.model).generate(**inputs, **kwargs)
    runner.n_forward += len(out.logits)
    return out, held, streams


def _top_k(runner: Runner, step_logits: Any, top_k: int) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Each step's ``top_k`` most probable next tokens (softmax of its raw logits): ids (N, k) int64, probabilities
    (N, k) float32, and their display text per step."""
    logits = torch.stack([lg[0] for lg in step_logits]).float().cpu()  # (N, V) raw
    probs = torch.softmax(logits, -1)
    k = min(top_k, probs.shape[-1])
    top = torch.topk(probs, k, dim=-1)
    topk_ids = top.indices.numpy().astype(np.int64)
    flat = _texts(runner, topk_ids.reshape(-1).tolist())
    return topk_ids, top.values.numpy().astype(np.float32), [flat[i * k : (i + 1) * k] for i in range(len(topk_ids))]


#: What transformers' models log (once) when a forward gets no attention mask and a pad id first or last.
_PADDING_WARNING = "We strongly recommend passing in an `attention_mask`"


class _DropPaddingWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_PADDING_WARNING)


@contextmanager
def _one_unpadded_prompt() -> Iterator[None]:
    """Silence transformers' padding warning while ``generate`` continues its one prompt.

    The prompt is one text, never padded, and its attention mask is passed; but ``model.generate`` drops an all-ones
    mask (nothing to mask), and the model's forward then warns about padding whenever the pad id is the first or
    last input token. That is every prompt of a model whose pad token is its ``<bos>`` (the shipped copying decoder,
    Llama-style configs), and every step that feeds back a generated ``<eos>`` that is also the pad token: a false
    alarm printed into the user's cell.
    """
    log = logging.getLogger("transformers.modeling_utils")
    quiet = _DropPaddingWarning()
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)


def _lens(runner: Runner, readout: Any, streams: list[torch.Tensor], n: int, k: int) -> dict[str, Any]:
    """The logit lens of each step from its streams: lens_ids (N, L+1, k) int64, lens_probs float32, lens_tokens."""
    rows = runner.info.n_layers + 1
    if len(streams) < n * rows:
        raise LogitsUnavailableError(
            f"{runner.info.name!r}: {len(streams)} residual streams were read while "
            f"generating, {n} steps of {rows} need {n * rows}"
        )
    ids, probs = [], []
    with torch.inference_mode():
        for step in range(n):
            p = torch.softmax(readout(torch.stack(streams[step * rows : (step + 1) * rows])).float(), -1)  # (L+1, V)
            top = torch.topk(p, min(k, p.shape[-1]), dim=-1)
            ids.append(top.indices.cpu())
            probs.append(top.values.cpu())
    lens_ids = torch.stack(ids).numpy().astype(np.int64)
    flat = _texts(runner, lens_ids.reshape(-1).tolist())
    k = lens_ids.shape[-1]
    tokens = [[flat[(s * rows + r) * k : (s * rows + r + 1) * k] for r in range(rows)] for s in range(n)]
    return dict(lens_ids=lens_ids, lens_probs=torch.stack(probs).numpy().astype(np.float32), lens_tokens=tokens)


def _attention_result(
    runner: Runner,
    held: Capture,
    prompt: str,
    src: dict[str, Any],
    sequences: torch.Tensor,
    generated: list[int],
    n_prompt: int,
) -> AttentionResult:
    """The captured stacks as one AttentionResult over the fed positions, checked like any lazy run."""
    info = runner.info
    name = info.name
    if info.kind == "encoder-decoder":
        encoder, decoder, cross = (held.stack(s, 0) for s in ("encoder", "decoder", "cross"))
        if encoder is None or decoder is None or cross is None:
            raise AttentionUnavailableError(
                f"{name!r} made no attention call through attnwidgets' attention function while generating"
            )
        fed = sequences[:-1].tolist()  # decoder start + generated[:-1]
        tgt = _fields(runner, fed, 0)
        for held_stack, what in (
            (encoder, "encoder self-attention"),
            (decoder, "decoder self-attention"),
            (cross, "cross-attention"),
        ):
            runner.check_lazy(held_stack, what)
        return AttentionResult(
            attention=cast(np.ndarray, encoder),
            model=info,
            text=prompt,
            target_text=None,
            target_tokens=tgt["tokens"],
            target_token_ids=tgt["token_ids"],
            decoder_attention=cast(np.ndarray, decoder),
            cross_attention=cast(np.ndarray, cross),
            **src,
        ).freeze()
    stack = held.stack("self", 0)
    if stack is None:
        raise AttentionUnavailableError(
            f"{name!r} made no attention call through attnwidgets' attention function while generating"
        )
    runner.check_lazy(stack, "self-attention")
    words = int(src["word_ids"].max()) + 1 if src["word_ids"].size and src["word_ids"].max() >= 0 else 0
    more = _fields(runner, generated[:-1], words) if len(generated) > 1 else None
    fields = dict(src)
    if more is not None:
        fields = {
            key: (list(src[key]) + more[key]) if key == "tokens" else np.concatenate([src[key], more[key]])
            for key in ("tokens", "token_ids", "word_ids", "segment_ids", "special_mask")
        }
    return AttentionResult(attention=cast(np.ndarray, stack), model=info, text=prompt, **fields).freeze()
