"""A model's learned absolute position table as numpy, for :class:`~attnwidgets.widgets.PositionalExplorer`.

Only the runner touches torch, so this is where the table is read out of the model; what leaves is a plain
``[position, dim]`` float32 array.
"""

from __future__ import annotations

import numpy as np
import torch

from .runner import Runner, get_runner

__all__ = ["position_embeddings"]

# Attribute paths of learned absolute position tables, in the order they are tried (BERT family, GPT-2, OPT/BART).
_NAMES = ("position_embeddings", "wpe", "embed_positions", "position_embedding")
# Models whose position table starts with rows that are not positions (BART/OPT/RoBERTa: an offset of 2).
_OFFSETS = {"bart": 2, "mbart": 2, "opt": 2, "roberta": 2, "xlm-roberta": 2, "camembert": 2}


def position_embeddings(model: str | Runner | None = None, revision: str | None = None) -> np.ndarray:
    """The learned position-embedding table of ``model`` ``[position, dim]``, (max_positions, d_model) float32.

    Parameters
    ----------
    model : str | Runner, optional
        Hub id, local folder or runner; the bundled all-MiniLM-L6-v2 (BERT architecture, 512 x 384) by default.
    revision : str, optional
        Hub revision.

    Raises
    ------
    ValueError
        When the model has no learned absolute table (rotary, ALiBi or relative-bias models add position inside
        attention instead).

    Examples
    --------
    >>> table = position_embeddings()
    >>> table.shape, table.dtype
    ((512, 384), dtype('float32'))
    """
    runner = get_runner(model, revision)
    offset = _OFFSETS.get(runner.info.model_type, 0)
    for name, module in runner.model.named_modules():
        if name.rsplit(".", 1)[-1] in _NAMES and isinstance(module, torch.nn.Embedding):
            weight = module.weight.detach().to(torch.float32).cpu().numpy()  # (max_positions + offset, d)
            return np.ascontiguousarray(weight[offset:])
    raise ValueError(
        f"model {runner.info.name!r} ({runner.info.model_type}) has no learned absolute position table: it puts "
        "position inside attention (rotary, ALiBi or a relative bias). Use PositionalExplorer(encoding='rope'), "
        "'alibi' or 't5' to look at those, or pass a BERT/GPT-2 style model."
    )
