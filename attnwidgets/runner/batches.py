"""Padded batches of attention straight from the model, for corpus statistics.

:meth:`Runner.iter_results` makes one :class:`~attnwidgets.result.AttentionResult` per input (slicing every layer,
pooling embeddings), which costs about as much as the forward pass itself for a small model. Corpus statistics
need neither: they take the whole padded batch as one numpy array, with padded rows and keys set to zero, plus each
row's tokens. This is that path; it still goes through :meth:`Runner.encode` and :meth:`Runner.forward`, so ablation
hooks and the forward-pass count behave the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .runner import Runner, Truncation

__all__ = ["PaddedAttention", "iter_padded"]


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
