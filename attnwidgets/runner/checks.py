"""What the runner refuses, in one place: its inputs (texts, pairs, targets, batch sizes, a runner asked for on
another device or dtype) and the attention a model hands back (one map per layer, weights that are probabilities).
Each error says what went wrong and what to do next.

:mod:`.runner` and :mod:`.encoding` call these; ``check_text`` is also importable from :mod:`.encoding`, where it
was first.

Examples
--------
>>> check_text("The cat sat.", "text")
'The cat sat.'
>>> check_inputs(["a", "b"], None, None, batch_size=2)
([None, None], [None, None])
>>> check_inputs(["a"], ["x", "y"], None, batch_size=2)
Traceback (most recent call last):
...
ValueError: got 1 texts but 2 pairs and 1 targets
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..attention_stack import LazyStack, dense_budget, format_bytes
from ..result import InvalidAttentionError
from .loading import AttentionUnavailableError, resolve_device, resolve_dtype

__all__ = [
    "attention_error",
    "check_captured",
    "check_encode_inputs",
    "check_inputs",
    "check_layer_shapes",
    "check_run_inputs",
    "check_same_runner",
    "check_text",
    "check_weights_returned",
    "dense_ablation_error",
    "lazy_sample",
    "require_tokens",
]


# -- what goes in ----------------------------------------------------------------------------------------------------


def check_text(value: object, what: str) -> str:
    """``value`` if it is a string with a non-space character and no lone surrogate; else a TypeError or ValueError
    that says so."""
    if not isinstance(value, str):
        hint = "; use run_batch() for several texts" if what == "text" and isinstance(value, list | tuple) else ""
        raise TypeError(f"{what} must be a string, got {type(value).__name__}{hint}")
    if not value.strip():
        raise ValueError(f"{what} is empty or only whitespace: give at least one word")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, which no tokenizer takes
        raise ValueError(
            f"{what} holds a lone surrogate (U+{ord(value[exc.start]):04X} at character {exc.start}), "
            "which is not text: it comes from bytes decoded with errors='surrogateescape'; decode them "
            "with their real encoding, or with errors='replace'"
        ) from None
    return value


def check_run_inputs(text: object, text_pair: object, target: object) -> None:
    """:meth:`Runner.run`'s text, pair and target (before the cache key: a list would fail there as 'unhashable')."""
    check_text(text, "text")
    if text_pair is not None:
        check_text(text_pair, "text_pair")
    if target is not None:
        check_text(target, "target")


def check_inputs(
    texts: Sequence[str], text_pairs: Sequence[str | None] | None, targets: Sequence[str | None] | None, batch_size: int
) -> tuple[list[str | None], list[str | None]]:
    """:meth:`Runner.run_batch`'s inputs checked; returns the pairs and targets, one per text (None where absent)."""
    if isinstance(texts, str):
        raise TypeError("run_batch takes a list of texts; use run() for a single text")
    n = len(texts)
    pairs: list[str | None] = list(text_pairs) if text_pairs is not None else [None] * n
    tgts: list[str | None] = list(targets) if targets is not None else [None] * n
    if len(pairs) != n or len(tgts) != n:
        raise ValueError(f"got {n} texts but {len(pairs)} pairs and {len(tgts)} targets")
    for i in range(n):  # before the cache keys: a list would fail there as 'unhashable'
        check_text(texts[i], f"texts[{i}]")
        if pairs[i] is not None:
            check_text(pairs[i], f"text_pairs[{i}]")
        if tgts[i] is not None:
            check_text(tgts[i], f"targets[{i}]")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    return pairs, tgts


def check_encode_inputs(
    texts: Sequence[str],
    pairs: Sequence[str | None] | None,
    targets: Sequence[str | None] | None,
    truncation: str,
    kind: str,
    name: str,
) -> tuple[list[str], list[str | None], list[str | None]]:
    """:meth:`Tokenising.encode`'s inputs checked for a model of ``kind``: the texts, the pairs and the targets, one
    per text (an encoder-decoder's missing targets are its sources)."""
    texts = [check_text(t, "text") for t in texts]
    if not texts:
        raise ValueError("no texts given")
    pairs_l: list[str | None] = list(pairs) if pairs is not None else [None] * len(texts)
    targets_l: list[str | None] = list(targets) if targets is not None else [None] * len(texts)
    if len(pairs_l) != len(texts) or len(targets_l) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(pairs_l)} pairs and {len(targets_l)} targets")
    for p in pairs_l:
        if p is not None:
            check_text(p, "text_pair")
    if truncation not in ("warn", "error"):
        raise ValueError(f"truncation must be 'warn' or 'error', got {truncation!r}")
    if kind == "encoder-decoder":
        if any(p is not None for p in pairs_l):
            raise ValueError("sentence pairs are for encoders; give an encoder-decoder a source and a target")
        targets_l = [t if t is not None else s for s, t in zip(texts, targets_l, strict=True)]
        for t in targets_l:
            check_text(t, "target")
    elif any(t is not None for t in targets_l):
        raise ValueError(f"target text is only for encoder-decoder models; {name!r} is an {kind}")
    return texts, pairs_l, targets_l


def require_tokens(text: str | None, n: int | None, what: str) -> None:
    """A text that tokenises to nothing but special tokens (say a zero-width space) has no attention to show."""
    if text is not None and n == 0:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(
            f"{what} {shown!r} has no tokens once tokenised (only characters the tokenizer drops, such "
            "as zero-width or control characters): give at least one word"
        )


def dense_ablation_error(name: str, longest: int, nbytes: int) -> ValueError:
    """The error for an ablation of a batch whose attention is too big to hold dense (an ablation edits dense
    weights): ``longest`` tokens would take ``nbytes``."""
    return ValueError(
        f"an ablation edits dense attention weights, and {longest} tokens of {name!r} would take "
        f"{format_bytes(nbytes)} of them, more than the dense budget ({format_bytes(dense_budget())}). Ablate a "
        "shorter text, or raise the budget with attnwidgets.runner.set_dense_budget(nbytes)"
    )


def check_same_runner(runner: Any, device: Any, dtype: Any) -> None:
    """``get_runner(runner, device=..., dtype=...)``: a runner passed in is handed back only if it runs where and in
    what it is asked to."""
    if (device is not None and resolve_device(device) != runner.device) or (
        dtype is not None and resolve_dtype(dtype) != runner.dtype
    ):
        raise ValueError(
            f"this runner holds {runner.info.name!r} on {runner.device} in {runner.dtype}, not on "
            f"{device or runner.device} in {dtype or runner.dtype}: pass the model's name with "
            "device= and dtype= to get a runner for those"
        )


# -- what comes out --------------------------------------------------------------------------------------------------


_OWN_WAY = (
    "attnwidgets needs a model whose attention layers go through transformers' attention interface (most "
    "models since transformers 5); this one computes attention its own way. Try another checkpoint of a "
    "supported architecture (BERT, GPT-2, BART, Llama)."
)


def check_weights_returned(name: str, layers: Sequence[Any] | None) -> Sequence[Any]:
    """``layers``, if a dense forward handed back one attention tensor per layer; else the model computes attention
    its own way, and :class:`AttentionUnavailableError` says what to do."""
    if not layers or any(a is None for a in layers):
        raise AttentionUnavailableError(f"{name!r} returned no attention weights. {_OWN_WAY}")
    return layers


def check_captured(name: str, stack: LazyStack | None, what: str | None = None) -> LazyStack:
    """A capture-mode forward must have sent ``what`` (the first stack when None) through our attention function."""
    if stack is None:
        if what is None:
            raise AttentionUnavailableError(
                f"{name!r} made no attention call through attnwidgets' attention function. {_OWN_WAY}"
            )
        raise AttentionUnavailableError(f"{name!r} made no {what} call through attnwidgets' attention function")
    return stack


def check_layer_shapes(name: str, what: str, shapes: Sequence[tuple[int, ...]], n_q: int, n_k: int) -> None:
    """Every layer's ``what`` must be one (batch, head, query, key) map over the batch's ``n_q`` query and at most
    ``n_k`` key positions, all of one shape; else :class:`AttentionUnavailableError` says so, rather than a numpy
    broadcast error or silently wrong maps."""
    odd = next(
        (k for k, sh in enumerate(shapes) if len(sh) != 4 or sh != shapes[0] or sh[2] != n_q or sh[3] > n_k), None
    )
    if odd is not None:
        raise AttentionUnavailableError(
            f"{name!r} returned {what} that is not one (batch, head, query, key) map per layer over its {n_q} "
            f"positions: layer 0 is {shapes[0]}, layer {odd} is {shapes[odd]}. Models that pool or shorten the "
            "sequence between layers (such as Funnel Transformer) have no token-by-token map in every layer, so "
            "attnwidgets cannot show them; use a model of a supported architecture (BERT, GPT-2, BART, Llama)."
        )


def attention_error(exc: InvalidAttentionError) -> AttentionUnavailableError:
    """:func:`attnwidgets.result.check_attention`'s refusal of a model's attention, with what to do next: a model
    with NaN or inf weights needs its checkpoint checked, one whose attention is not softmax weights a supported
    architecture."""
    if exc.problem == "not finite":
        advice = (
            "; the model's parameters (or its computation, e.g. an overflow in half precision) hold NaN "
            "or inf. Check the checkpoint (any(not p.isfinite().all() for p in model.parameters())) "
            "or run it in float32"
        )
    else:
        advice = (
            ". Its attention layers hand back something other than softmax weights (scores, or another "
            "normalisation), so maps, entropies and rollouts would be wrong; use a model of a supported "
            "architecture (BERT, GPT-2, BART, Llama)"
        )
    return AttentionUnavailableError(f"{exc}{advice}.")


def lazy_sample(stack: LazyStack, sample: int = 16) -> np.ndarray:
    """The rows of a captured stack that are checked: the first and last ``sample`` of every layer, rebuilt from
    queries and keys, [layer, head, rows, key]. Two blocks of rows per layer, not one call per row: at 8k tokens
    the row-by-row check was half of a run's time on a GPU (benchmarks/gpu_check.py --profile)."""
    L, _H, T, _S = stack.shape
    spans = [(0, min(T, sample))] + ([(max(sample, T - sample), T)] if T > sample else [])
    return np.stack([np.concatenate([stack.rows(layer, a, b) for a, b in spans], axis=1) for layer in range(L)])
