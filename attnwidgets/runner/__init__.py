"""The runner: the only part of attnwidgets that imports torch or transformers.

It loads a model once per (id, revision) with an attention function we control, runs text (single, pairs,
batches, source + target), caches results by (model, inputs, ablation) and hands back plain
:class:`~attnwidgets.result.AttentionResult` objects.
"""

from ..attention_stack import dense_budget, set_dense_budget
from .ablation import Ablation, mean_pattern
from .chat import chat_prompt
from .generation import generate
from .loading import AttentionUnavailableError, ModelLoadError, default_model_path, load
from .positions import position_embeddings
from .qk import capture_qk, capture_qk_layers
from .routers import route
from .runner import Encoded, Runner, get_runner, run, run_batch

__all__ = [
    "Ablation",
    "AttentionUnavailableError",
    "Encoded",
    "ModelLoadError",
    "Runner",
    "capture_qk",
    "capture_qk_layers",
    "chat_prompt",
    "default_model_path",
    "dense_budget",
    "generate",
    "get_runner",
    "load",
    "mean_pattern",
    "position_embeddings",
    "route",
    "run",
    "run_batch",
    "set_dense_budget",
]
