"""``aw.save(obj, path)`` and ``aw.load(path, model=...)``: any analysis to a file and back, whatever its kind.

The file format, its tags and the model check are :mod:`attnwidgets.persist`; each analysis saves itself
(``stats.save(path)``, ``CorpusStats.load(path)``), and this module picks the right one. The two kinds that have no
``save`` of their own, a (small) :class:`~attnwidgets.result.AttentionResult` and a bare (layer, head) head-importance
array, are written and read here (:func:`save_result`, :func:`load_result`, :func:`save_importance`,
:func:`load_importance`). It sits where every kind of object is visible: above analysis (CorpusStats,
DependencyScores) and beside the sweeps and pruning curves (SweepResult, PruningCurve). Loading imports only the module
of the kind the file holds (a CorpusStats file loads without torch).

Examples
--------
>>> import tempfile
>>> from attnwidgets.result import AttentionResult
>>> from attnwidgets.analysis.corpus import aggregate_stats
>>> r = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
>>> path = save(aggregate_stats([r] * 2), tempfile.mkdtemp() + "/stats.npz")
>>> load(path, model=r.model)
CorpusStats('arrays', 2 inputs, 4 tokens, words=False)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..persist import Saved, SavedFileError, info_from_tags, load_checked, model_info, read_tags, write
from ..result import AttentionResult, InvalidAttentionError, ModelInfo

__all__ = ["KINDS", "load", "load_importance", "load_result", "row_tolerance", "save", "save_importance",
           "save_result"]

KINDS = ("CorpusStats", "DependencyScores", "SweepResult", "PruningCurve", "AttentionResult", "HeadImportance")
"""What :func:`save` writes and :func:`load` reads."""


def save(obj: Any, path: str | os.PathLike[str], *, model: Any = None,
         settings: Mapping[str, Any] | None = None) -> Path:
    """Save a CorpusStats, DependencyScores, SweepResult, PruningCurve, a (small) AttentionResult, or a (layer, head)
    head-importance array to ``path`` (an ``.npz`` archive tagged with the model, the settings, the package version).

    Parameters
    ----------
    obj
        What to save. The objects know their model; a bare importance array
        (:func:`~attnwidgets.studies.importance.head_importance`) does not, so it needs ``model=``.
    path : str or Path
        Where; an existing file is replaced (once the new one is complete).
    model : Runner or ModelInfo, optional
        For an importance array only: the model whose heads it scores.
    settings : dict, optional
        For an importance array only: how it was computed (``{"task": "sts", "normalize": "layer"}``).

    Returns
    -------
    Path
    """
    if isinstance(obj, np.ndarray):
        return save_importance(obj, path, model=model, settings=settings)
    if model is not None or settings is not None:
        raise TypeError(f"a {type(obj).__name__} carries its own model and settings: model= and settings= are for a "
                        "bare head-importance array")
    if isinstance(obj, AttentionResult):
        return save_result(obj, path)
    if type(obj).__name__ in KINDS and callable(getattr(obj, "save", None)):
        return Path(obj.save(path))
    raise TypeError(f"cannot save a {type(obj).__name__}: aw.save takes one of {', '.join(KINDS[:-1])}, or a (layer, "
                    "head) head-importance array")


def load(path: str | os.PathLike[str], model: Any = None) -> Any:
    """Load what :func:`save` (or an object's ``.save``) wrote, as the object it was.

    Parameters
    ----------
    path : str or Path
    model : Runner, ModelInfo, str or None
        The model you will use the object with: when the file came from another one,
        :class:`~attnwidgets.persist.ModelMismatchError` says which (both names); None loads without the check.

    Raises
    ------
    ModelMismatchError
        The file came from another model.
    SavedFileError
        Not an attnwidgets file, damaged (cut short), written by a newer file format, or of a kind this version does
        not know; or changed since it was saved so that it fails the checks the object passes in memory (attention
        rows that do not sum to 1, negative counts, scores out of range, arrays shaped otherwise than its tags say),
        or an archive entry declaring more than its tags imply. The message names the file and what is wrong.
    """
    tags = read_tags(path)
    kind = tags["kind"]
    if kind == "CorpusStats":
        from ..analysis.corpus import CorpusStats

        return CorpusStats.load(path, model=model)
    if kind == "DependencyScores":
        from ..analysis.dependency import DependencyScores

        return DependencyScores.load(path, model=model)
    if kind == "SweepResult":
        from .sweeps import SweepResult

        return SweepResult.load(path, model=model)
    if kind == "PruningCurve":
        from .pruning import PruningCurve

        return PruningCurve.load(path, model=model)
    if kind == "AttentionResult":
        return load_result(path, model=model)
    if kind == "HeadImportance":
        return load_importance(path, model=model)
    raise SavedFileError(f"{str(path)!r} holds a {kind!r}, which this attnwidgets ({tags.get('attnwidgets')} wrote "
                         f"it) cannot load; it loads {', '.join(KINDS)}")


# -- the kinds that do not save themselves: a (small) result, a bare head-importance array -------------------

_RESULT_ARRAYS = ("token_ids", "word_ids", "segment_ids", "special_mask", "target_token_ids", "decoder_attention",
                  "cross_attention")


def save_result(result: AttentionResult, path: str | os.PathLike[str]) -> Path:
    """Save a (small) :class:`AttentionResult`: its tokens, ids, attention (every kind) and outputs.

    A long input's result (``result.is_lazy``: attention kept as queries and keys) and an ablated result are refused:
    save what you measured from it instead (``aw.studies.corpus_stats([result]).save(path)``), or the text, model and
    ablation (``ablation.to_dict()``) to run it again.

    Examples
    --------
    >>> import tempfile
    >>> r = AttentionResult.from_arrays(np.full((1, 1, 2, 2), 0.5, np.float32), ["[CLS]", "hi"], text="hi")
    >>> path = save_result(r, tempfile.mkdtemp() + "/hi.npz")
    >>> back = load_result(path, model=r.model)
    >>> back.tokens, back.text, bool((back.attention == r.attention).all())
    (['[CLS]', 'hi'], 'hi', True)
    """
    if not isinstance(result, AttentionResult):
        raise TypeError(f"save_result takes an AttentionResult, got {type(result).__name__}")
    if result.is_lazy:
        mib = result.dense_nbytes() / 2**20
        raise ValueError(f"this result keeps its attention as queries and keys (a long input, {result.n_tokens} "
                         f"tokens: {mib:,.0f} MiB as a dense array), and only small results are saved; save what you "
                         "measured from it instead (e.g. aw.studies.corpus_stats([result]).save(path)), or the text to "
                         "run it again")
    if result.ablation is not None:
        raise ValueError("this result is ablated, and an ablation is not saved with it; save the clean result "
                         "(and ablation.to_dict() beside it, to apply it again), or what you measured from it")
    info = result.model
    if result.attention.shape[:2] != (info.n_layers, info.n_heads):
        raise ValueError(f"this result's attention has {result.attention.shape[0]} layers x "
                         f"{result.attention.shape[1]} heads, but its model {info.name!r} has {info.n_layers} x "
                         f"{info.n_heads}: a file of it could not be checked when loaded; build it with the model it "
                         "came from (or AttentionResult.from_arrays without model=)")
    arrays: dict[str, np.ndarray] = {"attention": result.attention}
    for name in _RESULT_ARRAYS:
        value = result.__dict__[name]
        if value is not None:
            arrays[name] = value
    for key, value in result.outputs.items():
        arrays[f"outputs.{key}"] = np.asarray(value)
    sums = result.attention.sum(-1)
    attrs = {"tokens": list(result.tokens), "target_tokens": result.target_tokens, "text": result.text,
             "text_pair": result.text_pair, "target_text": result.target_text, "truncated": int(result.truncated),
             "outputs": list(result.outputs),
             # rows keeping less than 1 come from a model with attention sinks (gpt-oss): loading checks them so
             "sinks": bool(sums.size and sums.min() < 1 - row_tolerance(result.model))}
    return write(path, "AttentionResult", arrays, model=result.model, attrs=attrs)


def row_tolerance(info: ModelInfo) -> float:
    """How far from 1 a row of this model's attention may sum (the runner's: bfloat16 rounds to 2**-7)."""
    return 2.0**-7 if info.dtype == "bfloat16" else 1e-3


def _text(value: Any, what: str, optional: bool = False) -> Any:
    if (value is None and optional) or isinstance(value, str):
        return value
    raise ValueError(f"its {what} is {type(value).__name__}, not text")


def load_result(path: str | os.PathLike[str], model: Any = None) -> AttentionResult:
    """Load a result :func:`save_result` saved (read-only arrays, like the runner's); ``model`` as in
    :func:`check_provenance`.

    The file must hold what a result built in memory holds: attention of floats shaped (layers, heads, tokens,
    tokens) as its model tags and tokens say, through :func:`~attnwidgets.result.check_attention` (the checks of
    :meth:`AttentionResult.from_arrays`: finite, not negative, rows summing to 1), ids of whole numbers in their
    ranges. Anything else is a :class:`SavedFileError` naming the file and what is wrong.
    """
    return load_checked(path, "AttentionResult", _build_result, model=model)


def _build_result(saved: Saved) -> AttentionResult:
    attrs, info = saved.attrs, info_from_tags(saved.model)
    if info is None:
        raise saved.damaged("the result in it has no model tags")
    tokens = attrs["tokens"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise ValueError("its tokens are not a list of text, one per token")
    n = len(tokens)
    att = saved.array("attention", (info.n_layers, info.n_heads, n, n), "f")
    ids = {name: saved.array(name, (n,), "b" if name == "special_mask" else "iu")
           for name in ("token_ids", "word_ids", "segment_ids", "special_mask")}
    fields: dict[str, Any] = {}
    target = attrs["target_tokens"]
    if target is not None:
        if not isinstance(target, list) or not target or not all(isinstance(t, str) for t in target):
            raise ValueError("its target tokens are not a list of text")
        m = len(target)
        fields["target_tokens"] = target
        fields["target_token_ids"] = saved.array("target_token_ids", (m,), "iu")
        # the runner's model tags give the decoder's layers and heads; a result from arrays knows only the arrays
        dec: tuple[int | None, ...] = (info.n_decoder_layers, info.n_decoder_heads) if info.n_decoder_layers \
            else (None, None)
        for name in ("decoder_attention", "cross_attention"):
            if saved.has(name):
                fields[name] = saved.array(name, (*dec, m, m if name == "decoder_attention" else n), "f",
                                           limit=max(info.n_layers * info.n_heads, 1024) * m * max(m, n))
                dec = fields[name].shape[:2]
    elif saved.has("decoder_attention") or saved.has("cross_attention"):
        raise ValueError("it holds decoder attention but no target tokens")
    keys = attrs["outputs"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValueError("its list of outputs is not a list of names")
    outputs = {key: saved.array(f"outputs.{key}", None, "biuf", limit=n * 2**20) for key in keys}
    nan = next((key for key, v in outputs.items() if v.dtype.kind == "f" and np.isnan(v).any()), None)
    if nan is not None:
        raise ValueError(f"its output {nan!r} holds NaN")
    truncated = attrs["truncated"]
    if isinstance(truncated, bool) or not isinstance(truncated, int) or truncated < 0:
        raise ValueError(f"its count of truncated tokens is {truncated!r}, not a whole number of 0 or more")
    sinks = attrs.get("sinks", False) is True
    try:
        return _from_arrays(att, tokens, ids, sinks, info, attrs, truncated, outputs, fields)
    except InvalidAttentionError as exc:  # the checks of from_arrays, in the words of a file
        raise ValueError(str(exc).replace("from_arrays got", "it holds")) from exc


def _from_arrays(att: np.ndarray, tokens: list[str], ids: dict[str, np.ndarray], sinks: bool, info: ModelInfo,
                 attrs: dict[str, Any], truncated: int, outputs: dict[str, np.ndarray], fields: dict[str, Any]
                 ) -> AttentionResult:
    return AttentionResult.from_arrays(
        att, tokens, word_ids=ids["word_ids"], segment_ids=ids["segment_ids"], special_mask=ids["special_mask"],
        sinks=sinks, tol=row_tolerance(info), copy=False, model=info, token_ids=ids["token_ids"],
        text=_text(attrs["text"], "text"), text_pair=_text(attrs["text_pair"], "text pair", True),
        target_text=_text(attrs["target_text"], "target text", True), truncated=truncated, outputs=outputs, **fields)


def save_importance(importance: np.ndarray, path: str | os.PathLike[str], *, model: Any,
                    settings: Mapping[str, Any] | None = None) -> Path:
    """Save a (layer, head) head-importance array (:func:`~attnwidgets.studies.importance.head_importance`) with the
    model it was measured on and its settings (task, normalize, ...). ``model`` (a runner or ModelInfo) is required:
    a bare array does not know which model's heads it scores.

    Examples
    --------
    >>> import tempfile
    >>> info = ModelInfo("tiny", "encoder", n_layers=1, n_heads=2, max_length=8)
    >>> path = save_importance(np.array([[0.6, 0.8]]), tempfile.mkdtemp() + "/imp.npz", model=info,
    ...                        settings={"task": "sts", "normalize": "layer"})
    >>> load_importance(path, model=info).tolist(), read_tags(path)["settings"]["task"]
    ([[0.6, 0.8]], 'sts')
    """
    arr = np.asarray(importance)
    info = model_info(model)
    if info is None:
        raise ValueError("pass model= (the runner or its ModelInfo) so the file says which model's heads these are")
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"head importance is a (layer, head) array of numbers, got {arr.dtype} {arr.shape}")
    if arr.shape not in {(info.n_layers, info.n_heads), (info.n_decoder_layers, info.n_decoder_heads)}:
        raise ValueError(f"head importance of shape {arr.shape} does not fit {info.name!r} "
                         f"({info.n_layers} layers x {info.n_heads} heads)")
    return write(path, "HeadImportance", {"importance": arr}, model=info, settings=settings)


def load_importance(path: str | os.PathLike[str], model: Any = None) -> np.ndarray:
    """The (layer, head) array :func:`save_importance` saved; its settings are in :func:`read_tags`.

    Importance is a mean of absolute gradients (normalised or not): the array must be shaped as its model's heads,
    real numbers, none negative or infinite (NaN marks a head already pruned); else :class:`SavedFileError`."""
    return load_checked(path, "HeadImportance", _build_importance, model=model)


def _build_importance(saved: Saved) -> np.ndarray:
    info = info_from_tags(saved.model)
    if info is None:
        raise saved.damaged("the head importance in it has no model tags")
    arr = saved.array("importance", (None, None), "iuf", limit=max(info.n_layers * info.n_heads,
                                                                  info.n_decoder_layers * info.n_decoder_heads))
    if arr.shape not in {(info.n_layers, info.n_heads), (info.n_decoder_layers, info.n_decoder_heads)}:
        raise ValueError(f"its importance is shaped {arr.shape}, its model {info.name!r} has {info.n_layers} layers "
                         f"x {info.n_heads} heads")
    if np.isinf(arr).any() or (arr < 0).any():
        raise ValueError("its importance holds negative or infinite values (importance is a mean of absolute "
                         "gradients: 0 or more)")
    return arr
