"""The teaching kit: a small Transformer written to be read, a synthetic task it learns in seconds, positional
encodings and attention masks.

The runner is otherwise the only code that imports torch; the teaching kit is the deliberate second exception,
because it *is* a model. Only :mod:`~attnwidgets.teaching.transformer`, :mod:`~attnwidgets.teaching.training`,
:mod:`~attnwidgets.teaching.induction`, :mod:`~attnwidgets.teaching.pretrain` (a tiny BERT pre-trained with
masked-LM and next-sentence prediction), :mod:`~attnwidgets.teaching.extrapolation` (the toy with four position
schemes, tested on longer inputs than it saw) and :mod:`~attnwidgets.teaching.embeddings` (a BERT's input taken apart
into token + segment + position) import torch. :mod:`~attnwidgets.teaching.positional`,
:mod:`~attnwidgets.teaching.masks` and :mod:`~attnwidgets.teaching.tasks` are numpy only, and importing this
package imports none of them until a name is used. ``positional`` and ``masks`` re-export
:mod:`attnwidgets.viewdata.positional` and :mod:`attnwidgets.viewdata.masks`, where the widgets that draw them take
them from.

>>> from attnwidgets.teaching import positional, masks
>>> positional.sinusoidal(4, 8).shape, masks.causal_mask(4).shape
((4, 8), (4, 4))
"""

from __future__ import annotations

from ..lazy import attach

# name -> module that defines it; resolved on first use so that numpy-only submodules never pull in torch.
_LAZY: dict[str, str] = {
    "train": "attnwidgets.teaching.training",
    "span_corruption": "attnwidgets.teaching.objectives",
    "random_spans_noise_mask": "attnwidgets.teaching.objectives",
    "TrainingRun": "attnwidgets.teaching.training",
    "attention_result": "attnwidgets.teaching.training",
    "evaluate": "attnwidgets.teaching.training",
    "generate_toy": "attnwidgets.teaching.training",
    "checkpoint_attention": "attnwidgets.teaching.training",
    "TransformerConfig": "attnwidgets.teaching.transformer",
    "EncoderDecoderTransformer": "attnwidgets.teaching.transformer",
    "DecoderOnlyTransformer": "attnwidgets.teaching.transformer",
    "Task": "attnwidgets.teaching.tasks",
    "get_task": "attnwidgets.teaching.tasks",
    "train_induction": "attnwidgets.teaching.induction",
    "InductionRun": "attnwidgets.teaching.induction",
    "compare_norms": "attnwidgets.teaching.block",
    "NormComparison": "attnwidgets.teaching.block",
    "toy_residual_contributions": "attnwidgets.teaching.block",
    "attention_cost": "attnwidgets.teaching.block",
    "AttentionCost": "attnwidgets.teaching.block",
    "pretrain_bert": "attnwidgets.teaching.pretrain",
    "PretrainRun": "attnwidgets.teaching.pretrain",
    "nsp_pairs": "attnwidgets.teaching.pretrain",
    "NSPPair": "attnwidgets.teaching.pretrain",
    "make_example": "attnwidgets.teaching.pretrain",
    "nsp_probabilities": "attnwidgets.teaching.pretrain",
    "shipped_run": "attnwidgets.teaching.shipped",
    "input_embeddings": "attnwidgets.teaching.embeddings",
    "InputEmbeddings": "attnwidgets.teaching.embeddings",
    "train_extrapolation": "attnwidgets.teaching.extrapolation",
    "ExtrapolationRun": "attnwidgets.teaching.extrapolation",
}

__all__ = [*_LAZY]


_SUBMODULES = ["masks", "positional", "tasks", "training", "transformer", "induction", "block", "pretrain", "shipped",
               "embeddings", "extrapolation"]
__getattr__, __dir__ = attach("attnwidgets.teaching", _LAZY, _SUBMODULES)
