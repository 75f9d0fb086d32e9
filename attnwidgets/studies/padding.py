"""The padding mask, live: a short and a long input in one padded batch, run with the mask and with it forgotten.

A batch is as long as its longest input; shorter inputs are filled with [PAD]. The attention mask (0 at [PAD])
becomes a large negative number added to those key columns, so after the softmax every real query gives [PAD] weight
0 and a padded input reads exactly what it would read alone. Forget the mask and [PAD] is just another token: real
tokens attend to it, and the short input's vectors change with the length of whatever it was batched with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..runner import get_runner
from ..runner.encoding import Encoded

__all__ = ["padding_check"]


def _pooled(out: Any, mask: torch.Tensor) -> np.ndarray:
    """Mean of the last hidden states over the real tokens (``mask`` 1), (B, d) float64."""
    hidden = out.hidden_states[-1].detach().float().cpu()
    m = mask[..., None].float()
    return ((hidden * m).sum(1) / m.sum(1)).double().numpy()


def _pad_weight(out: Any, mask: torch.Tensor) -> np.ndarray:
    """(B,) the largest share any real query of any head of any layer gives the [PAD] keys (``mask`` 0)."""
    pad = (mask == 0).float()                                                  # (B, T)
    real = mask.bool()
    worst = np.zeros(mask.shape[0])
    for attn in out.attentions:                                                # (B, H, T, T) per layer
        to_pad = (attn.detach().float().cpu() * pad[:, None, None, :]).sum(-1)  # (B, H, T)
        to_pad = to_pad.masked_fill(~real[:, None, :], 0.0)                    # only real queries count
        worst = np.maximum(worst, to_pad.amax(dim=(1, 2)).double().numpy())
    return worst


def padding_check(texts: Sequence[str] = ("The cat sat.", "The cat sat on the mat because it was tired."), *,
                  model: Any = None) -> pd.DataFrame:
    """Run ``texts`` as one padded batch with the padding mask and with it forgotten; compare with each text alone.

    Returns one row per text: ``tokens`` (real), ``pad`` ([PAD] added to it), ``pad_weight_masked`` and
    ``pad_weight_forgotten`` (the largest share of attention any real query, in any layer and head, gives [PAD]),
    ``cosine_masked`` and ``cosine_forgotten`` (the text's mean-pooled last hidden state in the batch against the
    same text run alone: 1.0 means the batch changed nothing).

    Examples
    --------
    >>> df = padding_check()                                   # bundled model, a short and a long sentence
    >>> df[["pad", "pad_weight_masked"]].round(6).to_dict("list")
    {'pad': [7, 0], 'pad_weight_masked': [0.0, 0.0]}
    >>> bool(df["pad_weight_forgotten"][0] > 0.01), bool(df["cosine_masked"][0] > 0.9999)
    (True, True)
    >>> bool(df["cosine_forgotten"][0] < df["cosine_masked"][0])
    True
    """
    texts = [str(t) for t in texts]
    if len(texts) < 2:
        raise ValueError("give at least two texts of different lengths: padding only happens in a batch")
    runner = get_runner(model)
    if runner.info.kind == "encoder-decoder":
        raise ValueError("padding_check runs encoders and decoders; an encoder-decoder pads its source and its "
                         "target separately (run_batch handles both)")
    enc = runner.encode(texts)
    if "attention_mask" not in enc.inputs:
        raise ValueError(f"{runner.info.name!r} takes no attention mask, so it has no padding mask to forget")
    mask = enc.inputs["attention_mask"].cpu()
    if bool((mask == 1).all()):
        raise ValueError("the texts have the same length in tokens, so the batch has no [PAD]: make one shorter")
    masked = runner.forward(enc)
    forgotten = runner.forward(Encoded({**enc.inputs, "attention_mask": torch.ones_like(mask)}, enc.texts,
                                       enc.pairs, enc.targets))
    alone = np.concatenate([_pooled(out, e.inputs["attention_mask"].cpu())
                            for e in (runner.encode([t]) for t in texts) for out in [runner.forward(e)]])

    def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))

    return pd.DataFrame({
        "text": texts,
        "tokens": mask.sum(1).numpy(),
        "pad": (mask == 0).sum(1).numpy(),
        "pad_weight_masked": _pad_weight(masked, mask),
        "pad_weight_forgotten": _pad_weight(forgotten, mask),
        "cosine_masked": cosine(_pooled(masked, mask), alone),
        "cosine_forgotten": cosine(_pooled(forgotten, mask), alone),
    })
