"""The norm comparisons notebook 01 §6b shows, shipped: each trains a toy model two or four times (minutes on a
laptop), so a class should not wait for them.

:data:`COMPARISONS` holds the arguments of each :func:`~attnwidgets.teaching.block.compare_norms` call;
``python benchmarks/train_shipped.py --only norms`` runs them all from their fixed seed and writes
``attnwidgets/data/shipped_norms.npz`` (each comparison's losses, gradient norms and accuracies, and the CPU time it
took). :func:`shipped_norms` loads one, checked against its arguments today, or trains it here with ``train=True``.
A loaded comparison has no ``runs`` (the models are not stored): its table, curves and printout are the run's.

Examples
--------
>>> c = shipped_norms("four-norms")
>>> c.variants, c.losses.shape
(['pre-LN', 'post-LN', 'pre-RMSNorm', 'post-RMSNorm'], (4, 60))
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..persist import SavedFileError, read, write
from .block import VARIANTS, NormComparison, compare_norms

__all__ = ["COMPARISONS", "KIND", "NORMS_FILE", "make_norms", "norms_path", "shipped_norms"]

KIND = "NormComparisons"
NORMS_FILE = "shipped_norms.npz"
SCRIPT = "benchmarks/train_shipped.py"
_DEEP = {"d_model": 32, "d_ff": 64, "n_encoder_layers": 6, "n_decoder_layers": 6}

#: name -> the keyword arguments of its ``compare_norms("reverse", ...)`` call (notebook 01 §6b and Exercise 3b).
COMPARISONS: dict[str, dict[str, Any]] = {
    "post-ln-no-warmup": {"variants": ["pre-LN", "post-LN"], "steps": 60, "lr": 1e-2, "warmup": 0, "clip": None,
                          "config": _DEEP, "n_held_out": 20},
    "four-norms": {"steps": 60, "lr": 1e-2, "warmup": 0, "clip": None, "n_held_out": 20},
    "post-ln-warmup": {"variants": ["pre-LN", "post-LN"], "steps": 60, "lr": 1e-2, "warmup": 30, "clip": None,
                       "config": _DEEP, "n_held_out": 20},
}


def norms_path() -> Path:
    """Where the shipped comparisons live (``attnwidgets/data/shipped_norms.npz``)."""
    from .. import data

    return Path(data.__file__).resolve().parent / NORMS_FILE


def _remake() -> str:
    return f"make it again with `python {SCRIPT} --only norms` (or pass train=True to train it here)"


def _variants(name: str) -> list[str]:
    return list(COMPARISONS[name].get("variants", VARIANTS))


def make_norms(path: str | os.PathLike[str] | None = None, *, progress: bool = False) -> Path:
    """Run every comparison of :data:`COMPARISONS` and write them to ``path`` (default :func:`norms_path`)."""
    arrays: dict[str, np.ndarray] = {}
    attrs: dict[str, Any] = {}
    for name, kwargs in COMPARISONS.items():
        c = compare_norms("reverse", progress=progress, **kwargs)
        arrays[f"{name}.losses"], arrays[f"{name}.grad_norms"] = c.losses, c.grad_norms
        arrays[f"{name}.accuracy"] = c.accuracy
        attrs[name] = {"variants": c.variants, "settings": c.settings, "seconds": c.seconds,
                       "cpu_seconds": c.cpu_seconds}
    from ..persist import machine_description

    attrs["machine"] = machine_description()
    return write(path or norms_path(), KIND, arrays, settings={"comparisons": COMPARISONS}, attrs=attrs)


def shipped_norms(name: str, train: bool = False, *, path: str | os.PathLike[str] | None = None,
                  progress: bool = True) -> NormComparison:
    """The comparison ``name`` (one of :data:`COMPARISONS`): loaded from the package, or trained here with
    ``train=True`` (what ``compare_norms("reverse", **COMPARISONS[name])`` does, minutes on a laptop).
    :class:`~attnwidgets.persist.SavedFileError` for a file that does not hold it as its arguments say today."""
    if name not in COMPARISONS:
        raise ValueError(f"unknown comparison {name!r}; choose one of {sorted(COMPARISONS)}")
    if train:
        return compare_norms("reverse", progress=progress, **COMPARISONS[name])
    file = Path(path) if path is not None else norms_path()
    where = repr(str(file))
    if not file.is_file():
        raise SavedFileError(f"the shipped norm comparisons are missing ({where}): {_remake()}")
    saved = read(file, KIND)
    stored = saved.settings.get("comparisons")
    if not isinstance(stored, dict) or stored.get(name) != json.loads(json.dumps(COMPARISONS[name])):
        raise SavedFileError(f"{where} holds {name!r} made with other arguments than today's "
                             f"({COMPARISONS[name]}): {_remake()}")
    variants, steps = _variants(name), int(COMPARISONS[name]["steps"])
    try:
        info = saved.attrs[name]
        if list(info["variants"]) != variants:
            raise SavedFileError(f"{where} holds {name!r} for variants {info['variants']}, not {variants}: "
                                 f"{_remake()}")
        losses = saved.array(f"{name}.losses", (len(variants), steps), "f")
        grads = saved.array(f"{name}.grad_norms", (len(variants), steps), "f")
        accuracy = saved.array(f"{name}.accuracy", (len(variants),), "f")
        if not np.isfinite(accuracy).all() or not ((accuracy >= 0) & (accuracy <= 1)).all():
            raise SavedFileError(f"{where}: {name!r} has accuracies outside 0..1: {_remake()}")
        return NormComparison(variants, losses, grads, accuracy, dict(info["settings"]), [],
                              float(info["seconds"]), float(info["cpu_seconds"]))
    except SavedFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SavedFileError(f"{where} is damaged or does not hold {name!r} ({type(exc).__name__}: {exc}): "
                             f"{_remake()}") from exc
