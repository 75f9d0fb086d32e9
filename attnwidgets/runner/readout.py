"""One batch row of a forward pass's output, read out as numpy: the attention of every layer with padding removed
(:func:`stack_row`), and what the model's head gave (:func:`head_outputs`). The runner builds each result from these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["head_outputs", "stack_row"]


def stack_row(layers: Sequence[torch.Tensor], row: int, qvalid: torch.Tensor, kvalid: torch.Tensor) -> np.ndarray:
    """Per-layer (B, H, T, S) tensors -> one [layer, head, query, key] float32 array for one row, padding removed.

    Each layer is copied once, straight into the output: ``torch.stack`` and a contiguous copy after it cost two to
    three times as much, and this is on the path of every run (a 512-token result of 6 x 12 heads is 75 MB).
    """
    first = layers[0][row]
    kvalid = kvalid[: first.shape[-1]]
    nq, nk = int(qvalid.sum()), int(kvalid.sum())
    prefix = bool(qvalid[:nq].all()) and bool(kvalid[:nk].all())  # right padding: slice views, no index copies
    out = np.empty((len(layers), first.shape[0], nq, nk), dtype=np.float32)  # (L, H, T, S)
    for i, layer in enumerate(layers):
        a = layer[row].detach()
        a = a[:, :nq, :nk] if prefix else a[:, qvalid][:, :, kvalid]
        out[i] = a.float().cpu().numpy()
    return out


def head_outputs(out: Any, row: int, valid: torch.Tensor, head: str, input_ids: torch.Tensor,
                 tokenizer: Any) -> dict[str, np.ndarray]:
    """What the model's ``head`` gave for batch row ``row`` of a forward pass's output ``out``, padding removed
    (``valid``: the row's (T,) bool mask; ``input_ids`` (B, T): the batch, where [MASK] positions are found): mean
    and [CLS] embeddings, the pooler's output, a classifier's logits and probabilities, the masked-LM logits at each
    [MASK], a causal LM's next-token logits."""
    outputs: dict[str, np.ndarray] = {}
    hidden = getattr(out, "encoder_last_hidden_state", None)
    if hidden is None:
        hidden = getattr(out, "last_hidden_state", None)
    if hidden is None and getattr(out, "hidden_states", None):
        hidden = out.hidden_states[-1]
    if hidden is not None:
        h = hidden[row].detach().float().cpu()[valid]
        outputs["embedding"] = h.mean(0).numpy().astype(np.float32)
        outputs["cls_embedding"] = h[0].numpy().astype(np.float32)
    pooled = getattr(out, "pooler_output", None)
    if pooled is not None:
        outputs["pooler_output"] = pooled[row].detach().float().cpu().numpy()
    logits = getattr(out, "logits", None)
    if logits is not None:
        logits = logits[row].detach().float().cpu()
        if head == "classification":
            outputs["logits"] = logits.numpy()
            outputs["probs"] = torch.softmax(logits, -1).numpy()
        elif head == "masked-lm":
            ids = input_ids[row][valid]
            positions = torch.nonzero(ids == tokenizer.mask_token_id).flatten()
            outputs["mask_positions"] = positions.numpy().astype(np.int64)
            outputs["mask_logits"] = logits[valid][positions].numpy()
        elif head == "causal-lm":
            kept = logits[valid] if logits.shape[0] == valid.shape[0] else logits  # logits_to_keep=1: the last
            outputs["next_token_logits"] = kept[-1].numpy()
    return outputs
