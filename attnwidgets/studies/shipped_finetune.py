"""Notebook 02 §7's fine-tuning comparison, shipped for the bundled model: fine-tuning the encoder and running the
held-out sentences twice takes a class's attention away for a quarter of a minute.

``python benchmarks/train_shipped.py --only finetune`` runs ``compare_finetuning(get_runner(), **ARGS)`` from its
seed and writes ``attnwidgets/data/shipped_finetune.npz``: each head's before/after similarity, the training losses,
the held-out accuracy, the time it took, and the fine-tuned model's attention on the first held-out sentence (for the
before/after maps). :func:`shipped_finetune` loads it, checked against the bundled model (by provenance) and the
arguments today, or runs the comparison here (``train=True``, or another model). A loaded comparison has no
``tuned`` runner (the fine-tuned weights are not stored); its ``example`` holds the one run the notebook draws.

Examples
--------
>>> import attnwidgets as aw
>>> cmp = shipped_finetune(aw.runner.get_runner(), progress=False)   # doctest: +ELLIPSIS
finetune shipped with attnwidgets: ...
>>> cmp.similarity.shape, cmp.tuned is None
((6, 12), True)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.compare import similarity_by_layer
from ..persist import ModelMismatchError, SavedFileError, check_provenance, load_checked, read_tags, write
from .finetune import FinetuneComparison, compare_finetuning

__all__ = ["ARGS", "KIND", "finetune_path", "make_finetune", "shipped_finetune"]

KIND = "FinetuneComparison"
SCRIPT = "benchmarks/train_shipped.py"
#: the keyword arguments of the shipped ``compare_finetuning(runner, ...)`` call (notebook 02 §7)
ARGS: dict[str, Any] = {"epochs": 1, "seed": 0}


def finetune_path() -> Path:
    """Where the shipped comparison lives (``attnwidgets/data/shipped_finetune.npz``)."""
    from .. import data

    return Path(data.__file__).resolve().parent / "shipped_finetune.npz"


def _remake() -> str:
    return f"make it again with `python {SCRIPT} --only finetune` (or pass train=True to run it here)"


def _texts() -> list[str]:
    from ..data.labelled import load_sentiment, train_test_split_frame

    return list(train_test_split_frame(load_sentiment(), test_size=0.3, seed=int(ARGS["seed"]))[1].text)


def make_finetune(path: str | os.PathLike[str] | None = None, *, progress: bool = True) -> Path:
    """Run the comparison on the bundled model and write it to ``path`` (default :func:`finetune_path`)."""
    from ..persist import machine_description
    from ..runner import get_runner

    runner = get_runner()
    start, cpu = time.perf_counter(), time.process_time()
    cmp = compare_finetuning(runner, progress=progress, **ARGS)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    example = cmp.example
    arrays: dict[str, np.ndarray] = {"similarity": np.asarray(cmp.similarity, np.float64),
              "losses": np.asarray(cmp.log["losses"], np.float64),
              "example_after": np.asarray(example.attention, np.float32)}
    attrs = {"heldout_accuracy": float(cmp.log["heldout_accuracy"]), "train_accuracy": float(cmp.log["train_accuracy"]),
             "classes": [str(c) for c in cmp.log["classes"]], "seconds": seconds, "cpu_seconds": cpu_seconds,
             "training_seconds": float(cmp.log["seconds"]), "machine": machine_description(),
             "n_texts": len(cmp.texts)}
    return write(path or finetune_path(), KIND, arrays, model=runner, settings={"args": ARGS}, attrs=attrs)


def shipped_finetune(runner: Any, train: bool = False, *, path: str | os.PathLike[str] | None = None,
                     progress: bool = True) -> FinetuneComparison:
    """Notebook 02 §7's comparison: loaded from the package for the bundled model, or run here
    (``compare_finetuning(runner, **ARGS)``) with ``train=True`` or another model. Prints which, and what it cost."""
    file = Path(path) if path is not None else finetune_path()
    reason = "train=True" if train else None
    if reason is None:
        try:
            check_provenance(read_tags(file), runner, what="the shipped fine-tuning comparison")
        except ModelMismatchError:
            reason = f"the shipped copy is of the bundled model, this is {runner.info.name!r}"
        except FileNotFoundError:
            raise SavedFileError(f"the shipped fine-tuning comparison is missing ({str(file)!r}): {_remake()}") \
                from None
    if reason is not None:
        print(f"running compare_finetuning here ({reason}): a quarter of a minute or more on a laptop")
        return compare_finetuning(runner, progress=progress, **ARGS)
    cmp = load_checked(file, KIND, lambda saved: _build(saved, runner, file), model=runner)
    made = read_tags(file)["attrs"]
    print(f"finetune shipped with attnwidgets: compare_finetuning(runner, epochs={ARGS['epochs']}, "
          f"seed={ARGS['seed']}) took {made['cpu_seconds']:.0f} s of one CPU core ({made['seconds']:.0f} s wall clock) "
          f"on {made['machine']} when {SCRIPT} made it; LIVE = True runs it here")
    return cmp


def _build(saved: Any, runner: Any, file: Path) -> FinetuneComparison:
    where = repr(str(file))
    if saved.settings.get("args") != json.loads(json.dumps(ARGS)):
        raise SavedFileError(f"{where} was made with other arguments ({saved.settings.get('args')}) than today's "
                             f"({ARGS}): {_remake()}")
    info = runner.info
    texts = _texts()
    attrs = saved.attrs
    if attrs.get("n_texts") != len(texts):
        raise SavedFileError(f"{where} compared {attrs.get('n_texts')} held-out texts, the split has {len(texts)} "
                             f"today: {_remake()}")
    similarity = saved.array("similarity", (info.n_layers, info.n_heads), "f")
    losses = saved.array("losses", (None,), "f")
    example = runner.run(texts[0])
    after = saved.array("example_after", example.attention.shape, "f")
    if not (np.isfinite(similarity).all() and np.isfinite(after).all()):
        raise SavedFileError(f"{where} holds NaN or infinity: {_remake()}")
    import dataclasses

    example = example.replace(attention=after.astype(np.float32),
                              model=dataclasses.replace(info, name=f"{info.name} (fine-tuned)", source=None))
    log = {"losses": losses.tolist(), "classes": list(attrs["classes"]), "heldout_accuracy": float(
        attrs["heldout_accuracy"]), "train_accuracy": float(attrs["train_accuracy"]),
        "seconds": float(attrs["training_seconds"]), "head": None}
    return FinetuneComparison(similarity, similarity_by_layer(similarity), None, log, texts, example)
