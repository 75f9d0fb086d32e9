"""Activation patching per attention head, through the attention function every model runs through.

A head's *output* is its contribution before the output projection: ``A_h V_h``, the (T, D) slice of the (B, T, H, D)
tensor our attention function returns, which the projection then mixes with the other heads. Patching head h of
layer l runs the *target* input with that slice taken from the *source* run (one position, or all of them), and
everything after it recomputed: the head's effect flows through every later layer. Patching the *pattern* instead
takes the source run's weights A_h and multiplies them with the target run's own values.

Under grouped-query attention a query head shares its keys and values with its group; patching query head h swaps
that one head's output (or weights) and leaves its group's other query heads as they were.

The rows of one layer run as batches: row r repeats the target input and patches its own head (and position), so a
layer of H heads costs one forward pass of H rows, not H passes. A batch holds at most ``max_batch`` rows; by default
as many as fit :data:`PATCH_BUDGET` bytes of activations by :func:`row_bytes`'s estimate (between 1 and
:data:`MAX_ROWS`), so a long input runs its heads a few at a time instead of all at once. The numbers do not depend on
the batch (each row is its own run; tests/runner/test_patching_batches.py).

What is measured (:class:`Metric`):

- a decoder (causal LM): the next-token logits at the last position: the difference of two tokens' logits
  (``answer=("Mary", "John")``, the IOI set-up) or one token's log-probability;
- a masked LM: the same at the one ``[MASK]`` position;
- an encoder without an LM head (the bundled sentence encoder): the cosine similarity of the patched run's sentence
  embedding (the mean of the last hidden states over the tokens, the pooling all-MiniLM-L6-v2 was trained with) to
  the clean run's. That is a similarity, not a prediction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from . import control
from .capture import AttentionSite
from .encoding import Encoded

__all__ = ["MAX_ROWS", "PATCH_BUDGET", "Metric", "PatchingUnavailableError", "batch_rows", "head_outputs",
           "metric_values", "patch_layers", "resolve_metric", "row_bytes", "single_token"]

Direction = Literal["noising", "denoising"]
What = Literal["output", "pattern"]

#: Rows of one batched patching pass at most (positions x heads are chunked to it).
MAX_ROWS = 64

#: Bytes of activations one batched patching pass may take by :func:`row_bytes`'s estimate (the default of
#: ``max_batch``).
PATCH_BUDGET = 256 * 2**20


class PatchingUnavailableError(NotImplementedError):
    """The model cannot be patched or measured this way (an encoder-decoder, a classifier head, a model whose
    attention does not run through attnwidgets' attention function)."""


@dataclass(frozen=True)
class Metric:
    """What a patched run is scored by (see the module docstring)."""

    kind: Literal["logit_diff", "logprob", "similarity"]
    position: int
    """The position whose logits are read (unused for a similarity)."""
    tokens: tuple[int, ...]
    """The answer token ids: (right, wrong) for a logit difference, (token,) for a log-probability."""
    description: str
    reference: torch.Tensor | None = None
    """The clean run's sentence embedding (d,), for a similarity."""


def single_token(tokenizer: Any, word: str) -> int:
    """The one token id of ``word`` (as given: a BPE word usually needs its leading space, " Mary"), or a ValueError
    that shows how the tokenizer splits it."""
    if not isinstance(word, str) or not word:
        raise TypeError(f"an answer token must be a non-empty string, got {word!r}")
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        hint = "" if word.startswith(" ") else f" (a word inside a sentence may need its leading space: {' ' + word!r})"
        raise ValueError(f"the answer {word!r} is {len(ids)} tokens for this tokenizer, {pieces}, not one: a score "
                         f"reads one token's logit{hint}")
    return int(ids[0])


def resolve_metric(runner: Any, enc: Encoded, answer: str | Sequence[str] | None,
                   reference: torch.Tensor | None) -> Metric:
    """The metric for ``runner``'s model head and ``answer`` on the (one-row) clean input ``enc``."""
    head = runner.head
    tok = runner.tokenizer
    ids = enc.inputs["input_ids"][0]
    if head in ("causal-lm", "masked-lm"):
        if answer is None:
            raise ValueError(f"{runner.info.name!r} predicts tokens: give answer='token' (its log-probability) or "
                             "answer=('right', 'wrong') (their logit difference)")
        words = (answer,) if isinstance(answer, str) else tuple(answer)
        if len(words) not in (1, 2):
            raise ValueError(f"answer must be one token or a pair of tokens, got {len(words)}: {answer!r}")
        tokens = tuple(single_token(tok, w) for w in words)
        if head == "causal-lm":
            position, where = int(ids.shape[0]) - 1, "the next token after the last position"
        else:
            found = torch.nonzero(ids == tok.mask_token_id).flatten().tolist()
            if len(found) != 1:
                raise ValueError(f"a masked LM is scored at its one {tok.mask_token} token; the clean input has "
                                 f"{len(found)}")
            position, where = int(found[0]), f"the {tok.mask_token} position"
        if len(tokens) == 2:
            return Metric("logit_diff", position, tokens, f"logit({words[0]!r}) − logit({words[1]!r}) at {where}")
        return Metric("logprob", position, tokens, f"log p({words[0]!r}) at {where}")
    if head == "base" and runner.info.kind == "encoder":
        if answer is not None:
            raise ValueError(f"{runner.info.name!r} has no LM head to score an answer token with: leave answer=None "
                             "to score the cosine similarity of the sentence embedding to the clean run's (or load "
                             "a model with a masked-LM or causal-LM head)")
        return Metric("similarity", 0, (), "cosine similarity of the mean-pooled sentence embedding to the clean "
                      "run's", reference)
    raise PatchingUnavailableError(f"{runner.info.name!r} is a {runner.info.kind} with a {head!r} head: patching "
                                   "scores a decoder's or a masked LM's logits, or an encoder's sentence embedding")


def _embedding(out: Any, valid: torch.Tensor) -> torch.Tensor:
    """Mean of the last hidden states over the valid tokens, (B, d)."""
    h = out.last_hidden_state.float()
    m = valid.to(h.dtype).unsqueeze(-1)
    return (h * m).sum(1) / m.sum(1)


def metric_values(out: Any, metric: Metric, valid: torch.Tensor) -> np.ndarray:
    """The metric of every row of a forward pass's output, float64 (B,)."""
    if metric.kind == "similarity":
        emb = _embedding(out, valid)
        assert metric.reference is not None
        ref = metric.reference.to(emb.device, emb.dtype).unsqueeze(0)
        return torch.nn.functional.cosine_similarity(emb, ref, dim=-1).double().cpu().numpy()
    logits = out.logits[:, metric.position].double()
    if metric.kind == "logit_diff":
        return (logits[:, metric.tokens[0]] - logits[:, metric.tokens[1]]).cpu().numpy()
    return torch.log_softmax(logits, -1)[:, metric.tokens[0]].cpu().numpy()


Recorded = dict[AttentionSite, torch.Tensor]


def head_outputs(runner: Any, enc: Encoded) -> tuple[Recorded, Recorded, Any]:
    """One run of the one-row ``enc``: every site's head outputs (T, H, D) and weights (H, T, S), and the output."""
    outputs: dict[AttentionSite, torch.Tensor] = {}
    weights: dict[AttentionSite, torch.Tensor] = {}

    def record(site: AttentionSite, out: torch.Tensor) -> None:
        outputs[site] = out[0].detach().clone()

    def keep(call: control.AttentionCall, w: torch.Tensor) -> None:
        weights[call.site] = w[0].detach().clone()

    with control.recording(record):
        out = runner.forward(enc, hooks=[keep])
    if not outputs:
        raise PatchingUnavailableError(f"{runner.info.name!r}: no attention call went through attnwidgets' attention "
                                       "function, so no head can be patched")
    return outputs, weights, out


def _repeat(enc: Encoded, rows: int) -> Encoded:
    inputs = {k: v.repeat(rows, *([1] * (v.dim() - 1))) for k, v in enc.inputs.items()}
    return Encoded(inputs=inputs, texts=enc.texts * rows, pairs=enc.pairs * rows, targets=enc.targets * rows)


def _edits(site: AttentionSite, rows: list[tuple[int, int | None]], outputs: dict[AttentionSite, torch.Tensor],
           weights: dict[AttentionSite, torch.Tensor], what: What
           ) -> tuple[Callable[[AttentionSite, torch.Tensor], torch.Tensor | None] | None,
                      Callable[[control.AttentionCall, torch.Tensor], torch.Tensor | None] | None]:
    """The head edit (outputs) or weight hook (pattern) that patches row r's (head, position) at ``site``."""
    heads = torch.tensor([h for h, _ in rows])
    whole = [r for r, (_, p) in enumerate(rows) if p is None]
    at = [(r, h, p) for r, (h, p) in enumerate(rows) if p is not None]
    if what == "output":
        source = outputs[site]  # (T, H, D)

        def edit(s: AttentionSite, out: torch.Tensor) -> torch.Tensor | None:
            if s != site:
                return None
            out = out.clone()
            src = source.to(out.device, out.dtype)
            if whole:
                w = torch.tensor(whole)
                out[w, :, heads[w]] = src[:, heads[w]].permute(1, 0, 2)
            for r, h, p in at:
                out[r, p, h] = src[p, h]
            return out

        return edit, None
    source_w = weights[site]  # (H, T, S)

    def hook(call: control.AttentionCall, w: torch.Tensor) -> torch.Tensor | None:
        if call.site != site:
            return None
        w = w.clone()
        src = source_w.to(w.device, w.dtype)
        for r in whole:
            w[r, rows[r][0]] = src[rows[r][0]]
        for r, h, p in at:
            w[r, h, p] = src[h, p]
        return w

    return None, hook


def row_bytes(runner: Any, n_tokens: int, logit_positions: int | None = None) -> int:
    """An estimate of the bytes one patched row of ``n_tokens`` adds to a batched forward pass's peak, in float32:
    the logits over the vocabulary at ``logit_positions`` positions (default all; an LM head only), the widest hidden
    activations (the MLP's 4 x d, the residual, its norms, the head outputs and their patched copy: 8 x d per
    position) and three attention-sized tensors (scores, weights, their edited copy) per layer. Per layer, not per
    pass: measured on a 12-layer GPT-2 at 159 tokens (``benchmarks/bench_patching.py``), the peak grows with the
    number of layers even when the output keeps no weights (about 40 MiB a row there; this estimate says 47)."""
    info = runner.info
    hidden = int(getattr(runner.model.config, "hidden_size", 0) or info.n_heads * info.head_dim)
    logits = 0
    if runner.head in ("causal-lm", "masked-lm"):
        emb = runner.model.get_output_embeddings()
        vocab = int(emb.weight.shape[0]) if emb is not None and hasattr(emb, "weight") else hidden
        logits = vocab * (n_tokens if logit_positions is None else logit_positions)
    return 4 * (logits + n_tokens * 8 * hidden + 3 * info.n_layers * info.n_heads * n_tokens * n_tokens)


def batch_rows(runner: Any, n_tokens: int, max_batch: int | None, logit_positions: int | None = None) -> int:
    """How many patched rows one forward pass runs: ``max_batch`` as given (a positive integer), or by default as
    many as fit :data:`PATCH_BUDGET` (:func:`row_bytes`), at least 1 and at most :data:`MAX_ROWS`."""
    if max_batch is None:
        need = row_bytes(runner, n_tokens, logit_positions)
        return max(1, min(MAX_ROWS, PATCH_BUDGET // max(1, need)))
    if isinstance(max_batch, bool) or not isinstance(max_batch, (int, np.integer)):
        raise TypeError(f"max_batch must be a positive integer or None (sized to the memory budget), got "
                        f"{type(max_batch).__name__} {max_batch!r}")
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1 (rows of one forward pass), got {max_batch}")
    return int(max_batch)


def patch_layers(runner: Any, target: Encoded, outputs: dict[AttentionSite, torch.Tensor],
                 weights: dict[AttentionSite, torch.Tensor], metric: Metric, *, what: What = "output",
                 positions: bool = False, max_batch: int | None = None) -> np.ndarray:
    """The metric of ``target`` with each head of each self-attention layer patched from the source run's
    ``outputs`` (or ``weights``): float64 [layer, head], or [layer, head, position] with ``positions``. At most
    ``max_batch`` patched rows run in one forward pass (:func:`batch_rows`)."""
    sites = sorted((s for s in outputs if s.stack == "self"), key=lambda s: s.layer)
    if not sites:
        raise PatchingUnavailableError(f"{runner.info.name!r} has no self-attention sites to patch")
    n_heads = outputs[sites[0]].shape[1]
    T = int(target.inputs["input_ids"].shape[1])
    valid_row = target.inputs.get("attention_mask", torch.ones_like(target.inputs["input_ids"]))[0].bool()
    plan = [(h, p) for h in range(n_heads) for p in (range(T) if positions else [None])]
    extra: dict[str, Any] = {}
    if runner.head == "causal-lm" and metric.position == T - 1:   # the next token's logits only, not T x vocab
        extra["logits_to_keep"] = 1
        metric = dataclasses.replace(metric, position=-1)
    size = batch_rows(runner, T, max_batch, 1 if extra else None)
    values = np.empty((len(sites), len(plan)), dtype=np.float64)
    for li, site in enumerate(sites):
        for start in range(0, len(plan), size):
            rows = plan[start:start + size]
            edit, hook = _edits(site, rows, outputs, weights, what)
            batch = _repeat(target, len(rows))
            valid = valid_row.unsqueeze(0).expand(len(rows), -1)
            if edit is not None:
                with control.editing_heads(edit):
                    out = runner.forward(batch, keep_weights=False, **extra)
            else:
                out = runner.forward(batch, hooks=[hook], keep_weights=False, **extra)
            values[li, start:start + len(rows)] = metric_values(out, metric, valid)
    return values.reshape(len(sites), n_heads, T) if positions else values.reshape(len(sites), n_heads)
