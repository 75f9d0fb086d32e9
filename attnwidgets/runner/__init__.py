"""The runner: the only part of attnwidgets that imports torch or transformers.

It loads a model once per (id, revision) with an attention function we control, runs text (single, pairs,
batches, source + target), caches results by (model, inputs, ablation) and hands back plain
:class:`~attnwidgets.result.AttentionResult` objects.
"""

from .loading import AttentionUnavailableError, ModelLoadError, default_model_path, load
from .runner import Encoded, Runner, get_runner, run, run_batch

__all__ = [
    "AttentionUnavailableError",
    "Encoded",
    "ModelLoadError",
    "Runner",
    "default_model_path",
    "get_runner",
    "load",
    "run",
    "run_batch",
]
