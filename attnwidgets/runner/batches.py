"""Padded batches of attention straight from the model, for corpus statistics.

:meth:`Runner.iter_results` makes one :class:`~attnwidgets.result.AttentionResult` per input (slicing every layer,
pooling embeddings), which costs about as much as the forward pass itself for a small model. Corpus statistics
need neither: they take the whole padded batch as one numpy array, with padded rows and keys set to zero, plus each
row's tokens. This is that path; it still goes through :meth:`Runner.encode` and :meth:`Runner.forward`, so ablation
hooks and the forward-pass count behave the same.

:func:`iter_sums` goes one step further: the weights are summed in the forward itself
(:class:`~attnwidgets.runner.corpus_sums.CorpusSums`, on the model's device), so no layer's weights outlive the
layer and only (B, L, H) sums come back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from . import control
from .corpus_sums import CorpusSums
from .runner import Runner, Truncation

__all__ = ["BatchSums", "PaddedAttention", "iter_padded", "iter_sums"]


@dataclass
class PaddedAttention:
    """One batch: attention (B, L, H, T, T) float32 with zero padding, and per-row token fields.

    Attributes
    ----------
    attention : np.ndarray
        (B, L, H, T, T) [batch, layer, head, query, key]; rows and keys of padding are 0.
    valid : np.ndarray
        (B, T) bool; real tokens are at the start of each row (the runner pads on the right).
    tokens : list[list[str]]
        Display tokens of each row, padding removed.
    special_mask, word_ids, segment_ids : list[np.ndarray]
        Per row, as in :class:`~attnwidgets.result.AttentionResult`.
    """

    attention: np.ndarray
    valid: np.ndarray
    tokens: list[list[str]]
    special_mask: list[np.ndarray]
    word_ids: list[np.ndarray]
    segment_ids: list[np.ndarray]


def iter_padded(
    runner: Runner,
    texts: Sequence[str],
    pairs: Sequence[str | None] | None = None,
    *,
    batch_size: int = 32,
    truncation: Truncation = "warn",
    hooks: Sequence = (),
) -> Iterator[PaddedAttention]:
    """Yield the self-attention of ``texts`` (encoders and decoders), ``batch_size`` inputs at a time."""
    if runner.info.kind == "encoder-decoder":
        raise ValueError("padded corpus batches are for encoders and decoders; use Runner.iter_results instead")
    pair_list = list(pairs) if pairs is not None else [None] * len(texts)
    for start in range(0, len(texts), batch_size):
        enc = runner.encode(texts[start : start + batch_size], pair_list[start : start + batch_size], None, truncation)
        out = runner.forward(enc, hooks)
        mask = enc.inputs.get("attention_mask")
        if mask is None:
            mask = torch.ones_like(enc.inputs["input_ids"])
        valid_t = mask.bool().to(out.attentions[0].device)
        att_t = torch.stack(list(out.attentions), dim=1)  # (B, L, H, T, T)
        both = valid_t[:, None, None, :, None] & valid_t[:, None, None, None, :]
        att_t = torch.where(both, att_t, 0.0)  # not a product: NaN * 0 is NaN, and padding must be 0
        att = att_t.float().cpu().numpy()
        valid = valid_t.cpu().numpy()
        lead = np.argmax(valid, axis=1)  # left padding: move each row's tokens to the front
        for row in np.flatnonzero(lead):
            att[row] = np.roll(att[row], (-lead[row], -lead[row]), axis=(-2, -1))
            valid[row] = np.roll(valid[row], -lead[row])
        dtype = out.attentions[0].dtype  # the same rule and messages as every single run (Runner._attention)
        tol = max(1e-3, torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-3
        runner.check_attention(att, "self-attention", ablated=bool(hooks), tol=tol,
                               query_mask=valid[:, None, None, :])
        fields = [runner.token_fields(enc, row) for row in range(enc.batch_size)]
        yield PaddedAttention(
            attention=att,
            valid=valid,
            tokens=[f["tokens"] for f in fields],
            special_mask=[f["special_mask"] for f in fields],
            word_ids=[f["word_ids"] for f in fields],
            segment_ids=[f["segment_ids"] for f in fields],
        )


@dataclass
class BatchSums:
    """One batch's sums made in the forward (:class:`~attnwidgets.runner.corpus_sums.CorpusSums`).

    Attributes
    ----------
    sums : dict[str, np.ndarray]
        Each (B, L, H) float32, the names of :data:`~attnwidgets.runner.corpus_sums.SUMS`.
    sets : list[Mapping[str, np.ndarray]]
        Per input, the sets it was summed over (what ``sets_of`` made of its token fields).
    lengths : np.ndarray
        (B,) int64 real tokens of each input.
    """

    sums: dict[str, np.ndarray]
    sets: list[Mapping[str, np.ndarray]]
    lengths: np.ndarray


def iter_sums(
    runner: Runner,
    texts: Sequence[str],
    pairs: Sequence[str | None] | None = None,
    *,
    sets_of: Callable[[dict[str, Any]], Mapping[str, np.ndarray]],
    smoothing: float = 0.0,
    batch_size: int = 32,
    truncation: Truncation = "warn",
) -> Iterator[BatchSums]:
    """Yield the self-attention sums of ``texts`` (encoders and decoders), ``batch_size`` inputs at a time.

    ``sets_of(fields)`` names an input's key sets from its :meth:`Runner.token_fields` (see
    :mod:`~attnwidgets.runner.corpus_sums`). One forward per batch, counted in ``n_forward``, with no attention
    returned: each layer's eager weights are summed by an attention hook as the layer makes them and dropped with it.
    A batch whose weights are not finite, or whose rows do not sum to 1, is run once more through :func:`iter_padded`,
    whose check names the layer, head and row (:class:`~attnwidgets.runner.AttentionUnavailableError`).
    """
    info = runner.info
    if info.kind == "encoder-decoder":
        raise ValueError("padded corpus batches are for encoders and decoders; use Runner.iter_results instead")
    pair_list = list(pairs) if pairs is not None else [None] * len(texts)
    causal = info.kind == "decoder"
    for start in range(0, len(texts), batch_size):
        chunk = slice(start, start + batch_size)
        enc = runner.encode(texts[chunk], pair_list[chunk], None, truncation)
        fields = [runner.token_fields(enc, row) for row in range(enc.batch_size)]
        sets = [sets_of(f) for f in fields]
        device = runner.device
        inputs = {k: v.to(device) for k, v in enc.inputs.items()}
        mask = inputs.get("attention_mask")
        valid = mask.bool() if mask is not None else torch.ones_like(inputs["input_ids"], dtype=torch.bool)
        sums = CorpusSums(valid, sets, n_layers=info.n_layers, n_heads=info.n_heads, causal=causal,
                          smoothing=smoothing, has_sinks=runner.has_sinks)
        extra = {"logits_to_keep": 1} if runner.head == "causal-lm" else {}  # no n x vocab logits: none are read
        runner.n_forward += 1
        with torch.inference_mode(), control.attention_hooks([sums]):
            runner.model(**inputs, output_attentions=False, output_hidden_states=False, return_dict=True, **extra)
        dtype = runner.dtype
        tol = max(1e-3, torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-3
        if not sums.checked(info.n_layers, tol):
            for _ in iter_padded(runner, texts[chunk], pair_list[chunk], batch_size=batch_size,
                                 truncation=truncation):
                pass  # its check raises, naming where
            raise RuntimeError(f"{info.name!r}: the attention sums of texts {start}..{start + enc.batch_size - 1} "
                               "failed their check (a layer not seen, or rows not summing to 1) where the dense "
                               "weights pass theirs; please report this with the model and texts")
        yield BatchSums(sums=sums.sums(), sets=sets, lengths=valid.sum(1).cpu().numpy().astype(np.int64))
