"""``aw.save(obj, path)`` and ``aw.load(path, model=...)``: any analysis to a file and back, whatever its kind.

The file format, its tags and the model check are :mod:`attnwidgets.persist`; each object saves itself
(``stats.save(path)``, ``CorpusStats.load(path)``). This module only picks the right one, so it sits where every kind
of object is visible: above analysis (CorpusStats, DependencyScores) and beside the sweeps (SweepResult,
PruningCurve). Loading imports only the module of the kind the file holds (a CorpusStats file loads without torch).

Examples
--------
>>> import tempfile
>>> from attnwidgets.result import AttentionResult
>>> from attnwidgets.analysis.corpus import corpus_stats
>>> r = AttentionResult.from_arrays(np.array([[0.5, 0.5], [0.0, 1.0]]), ["[CLS]", "[SEP]"])
>>> path = save(corpus_stats([r] * 2), tempfile.mkdtemp() + "/stats.npz")
>>> load(path, model=r.model)
CorpusStats('arrays', 2 inputs, 4 tokens, words=False)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..persist import SavedFileError, load_importance, load_result, read_tags, save_importance, save_result
from ..result import AttentionResult

__all__ = ["KINDS", "load", "save"]

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
    if kind in ("SweepResult", "PruningCurve"):
        from . import sweeps

        return getattr(sweeps, kind).load(path, model=model)
    if kind == "AttentionResult":
        return load_result(path, model=model)
    if kind == "HeadImportance":
        return load_importance(path, model=model)
    raise SavedFileError(f"{str(path)!r} holds a {kind!r}, which this attnwidgets ({tags.get('attnwidgets')} wrote "
                         f"it) cannot load; it loads {', '.join(KINDS)}")
