"""A file ``aw.save`` wrote, as the views JupyterLab shows when it is opened from the file browser, with no kernel.

:func:`document` reads the file through the validated loader (:func:`attnwidgets.studies.saved.load`: every entry's
header checked before it is decompressed, the object rebuilt through the checks an object made in memory passes) and
answers with the saved states of the views that show it, each the entry a view puts under
:data:`~attnwidgets.view_mime.VIEW_MIME` in a notebook (:func:`~attnwidgets.view_mime.view_state`), so the
extension's document (``js/src/lab/saved_file.ts``) draws them with the same code as a saved notebook's views:

==================  =============================================================================================
kind                views
==================  =============================================================================================
AttentionResult     AttentionHeatmap, ModelView, EntropyBars
CorpusStats         HeadStatsGrid (every statistic), EntropyBars
DependencyScores    HeadStatsGrid (accuracy over all relations, each way, and for the most frequent relations)
SweepResult         HeadStatsGrid (the metric with each head disabled, and its change from the clean model)
PruningCurve        the curve as a table, HeadStatsGrid (the importance that chose the first heads to prune)
HeadImportance      HeadStatsGrid (each head's importance)
==================  =============================================================================================

A file that is damaged, changed by hand, not one attnwidgets wrote, or too big is a :class:`DocumentError` with the
loader's message (the path as the file browser names it, never the server's folders) and the HTTP status the server
answers with. The server extension (:mod:`attnwidgets.server`) runs ``python -m attnwidgets.saved_doc FILE NAME`` in a
process of its own, so Jupyter Server never imports the views nor holds a file's arrays: that process prints the
answer as JSON (``{"error": ...}`` for a file it refuses).

Examples
--------
>>> import tempfile, numpy as np, attnwidgets as aw
>>> r = aw.AttentionResult.from_arrays(np.eye(2, dtype=np.float32), ["hi", "there"])
>>> path = aw.save(r, tempfile.mkdtemp() + "/r.npz")
>>> doc = document(path, "r.npz")
>>> doc["kind"], [v["state"]["widget"] for v in doc["views"]]
('AttentionResult', ['AttentionHeatmap', 'ModelView', 'EntropyBars'])
>>> _ = open(path, "wb").write(b"not a zip")
>>> document(path, "r.npz")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
attnwidgets.saved_doc.DocumentError: 'r.npz' is not a file attnwidgets saved, or it is damaged ...
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .persist import ModelMismatchError, SavedFileError, read_tags
from .view_mime import view_state

__all__ = ["MAX_FILE_BYTES", "DocumentError", "document", "main"]

#: The largest file the document opens (1 GiB; ``ATTNWIDGETS_DOC_MAX_BYTES`` in the server's environment sets it).
#: A saved result is its dense attention: 1 GiB is a 12 x 12 BERT-base result of about 1,300 tokens in float32.
MAX_FILE_BYTES = 2**30

#: Table rows a document shows at most.
TABLE_ROWS = 20

#: Relations of a DependencyScores file that get their own statistic in the grid (the most frequent first).
RELATIONS = 12


class DocumentError(ValueError):
    """A file the document cannot show: ``str(error)`` is the message for the reader, ``status`` the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def max_file_bytes() -> int:
    """:data:`MAX_FILE_BYTES`, or ``ATTNWIDGETS_DOC_MAX_BYTES`` from the environment (bytes)."""
    raw = os.environ.get("ATTNWIDGETS_DOC_MAX_BYTES", "").strip()
    try:
        return max(0, int(float(raw))) if raw else MAX_FILE_BYTES
    except ValueError:
        return MAX_FILE_BYTES


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def check_size(path: Path, name: str) -> None:
    """Refuse a file over :func:`max_file_bytes` before anything reads it (:class:`DocumentError`, 413)."""
    size = path.stat().st_size
    limit = max_file_bytes()
    if size > limit:
        raise DocumentError(f"{name!r} is {_mib(size)}, over the {_mib(limit)} a saved file may have to open here; "
                            "load it in a notebook with aw.load(path), or raise the limit with "
                            "ATTNWIDGETS_DOC_MAX_BYTES=<bytes> in the Jupyter server's environment", 413)


def document(path: str | os.PathLike[str], name: str | None = None) -> dict[str, Any]:
    """What the extension's document shows of the file at ``path`` (named ``name`` in messages; default the path).

    Returns
    -------
    dict
        ``kind``, ``name``, ``summary`` (a line saying what it holds), ``model`` (its name, or None), ``saved_by`` (the
        attnwidgets version that wrote it), ``created``, ``views`` (a list of ``{"title", "state"}``, ``state`` a
        view's saved state) and ``table`` (None, or ``{"title", "columns", "rows"}`` of plain values).

    Raises
    ------
    DocumentError
        The loader's message for a file that is not an attnwidgets file, is damaged or changed by hand, or is of a
        kind this version does not read; or the file is over :func:`max_file_bytes`, or missing.
    """
    from .studies.saved import load

    path = Path(path)
    name = str(path) if name is None else name
    try:
        check_size(path, name)
        tags = read_tags(path)
        obj = load(path)
    except (SavedFileError, ModelMismatchError) as exc:
        raise DocumentError(_named(str(exc), path, name)) from None
    except FileNotFoundError:
        raise DocumentError(f"there is no file {name!r}: it may have been moved or deleted", 404) from None
    except OSError as exc:
        raise DocumentError(f"{name!r} could not be read ({type(exc).__name__}: {exc.strerror or exc})") from None
    kind = str(tags["kind"])
    summary, views, table = _VIEWS[kind](obj)
    model = tags.get("model") or {}
    return {"kind": kind, "name": name, "summary": _named(summary, path, name),
            "model": model.get("name") if isinstance(model, dict) else None,
            "saved_by": tags.get("attnwidgets"), "created": tags.get("created"),
            "views": [{"title": title, "state": _state(make)} for title, make in views], "table": table}


def _named(message: str, path: Path, name: str) -> str:
    """``message`` with the server's path of the file replaced by its name in the file browser."""
    for form in {str(path), str(path.resolve())}:
        message = message.replace(repr(form), repr(name)).replace(form, name)
    return message


def _state(make: Callable[[], Any]) -> dict[str, Any]:
    widget = make()
    try:
        return view_state(widget)
    finally:
        widget.close()  # no kernel holds it: let ipywidgets forget it


Views = list[tuple[str, Callable[[], Any]]]
Table = dict[str, Any] | None
Shown = tuple[str, Views, Table]


def _plain(value: Any) -> Any:
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _table(title: str, frame: Any, columns: Sequence[str]) -> dict[str, Any]:
    shown = [c for c in columns if c in frame.columns]
    rows = [[_plain(v) for v in row] for row in frame[shown].head(TABLE_ROWS).itertuples(index=False)]
    more = len(frame) - len(rows)
    return {"title": title + (f" (first {len(rows)} of {len(frame)} rows)" if more > 0 else ""),
            "columns": shown, "rows": rows}


def _result_views(result: Any) -> Shown:
    import attnwidgets as aw

    views: Views = [("Heatmap", lambda: aw.AttentionHeatmap(result)), ("Model view", lambda: aw.ModelView(result)),
                    ("Entropy by head", lambda: aw.EntropyBars(result))]
    return repr(result), views, None


def _corpus_views(stats: Any) -> Shown:
    import attnwidgets as aw

    return (repr(stats), [("Statistics per head", lambda: aw.HeadStatsGrid(stats)),
             ("Entropy by head", lambda: aw.EntropyBars(stats))], None)


def _grid(values: dict[str, np.ndarray], title: str, signed: tuple[str, ...] = (), **kwargs: Any) -> Any:
    from .viewdata.head_stats import HeadStats
    from .widgets import HeadStatsGrid

    return HeadStatsGrid(HeadStats(values, title, signed=signed), **kwargs)


def _dependency_views(scores: Any) -> Shown:
    acc, per_relation = scores.accuracy_all, scores.accuracy
    values = {"dependent → head, all relations": acc[0], "head → dependent, all relations": acc[1]}
    for r in np.argsort(-scores.counts, kind="stable")[:RELATIONS]:
        if scores.counts[r] > 0:
            values[f"{scores.relations[r]}: dependent → head"] = per_relation[0, :, :, r]
    title = f"{scores.model or 'model'} · dependency accuracy, {scores.n_sentences} sentences"
    columns = ["relation", "count", "label", "direction", "accuracy", "baseline_offset", "baseline_accuracy"]
    return (repr(scores), [("Accuracy per head", lambda: _grid(values, title))],
            _table("Best head per relation", scores.table(), columns))


def _sweep_views(sweep: Any) -> Shown:
    values = {f"{sweep.metric} with the head disabled": sweep.heads,
              "change from the clean model": sweep.heads - sweep.baseline}
    model = getattr(sweep.model, "name", sweep.model) or "model"
    title = f"{model} · {sweep.mode} ablation, clean {sweep.metric} {sweep.baseline:.4g}"
    frame = sweep.frame.sort_values("delta", key=lambda d: -d.abs(), kind="stable")
    n_layers, n_heads = sweep.heads.shape
    summary = (f"SweepResult of {model}: {sweep.metric} with each of its {n_layers} x {n_heads} heads disabled "
               f"({sweep.mode}); the clean model's {sweep.metric} is {sweep.baseline:.4g}")
    return (summary, [("Each head disabled", lambda: _grid(values, title, signed=("change from the clean model",)))],
            _table("Units whose removal changes the metric most", frame,
                   ["unit", "layer", "head", "metric", "delta"]))


def _pruning_views(curve: Any) -> Shown:
    model = curve.model.name if curve.model is not None else "model"
    views: Views = []
    if curve.importance:
        first = curve.importance[0]
        views.append(("Importance before pruning",
                      lambda: _grid({"importance": first}, f"{model} · head importance before pruning")))
    metric = curve.frame["metric"]
    summary = (f"PruningCurve of {model}: {curve.metric} from {metric.iloc[0]:.4g} to {metric.iloc[-1]:.4g} as "
               f"{curve.frame['share'].iloc[-1]:.0%} of the heads are pruned, {len(curve.frame)} steps")
    table = _table(f"{curve.metric} as heads are pruned", curve.frame, ["share", "n_pruned", "metric"])
    return summary, views, table


def _importance_views(importance: np.ndarray) -> Shown:
    n_layers, n_heads = np.shape(importance)
    values = {"importance": np.asarray(importance, np.float64)}
    return (f"head importance of {n_layers} layers x {n_heads} heads",
            [("Head importance", lambda: _grid(values, "head importance"))], None)


_VIEWS: dict[str, Callable[[Any], Shown]] = {
    "AttentionResult": _result_views, "CorpusStats": _corpus_views, "DependencyScores": _dependency_views,
    "SweepResult": _sweep_views, "PruningCurve": _pruning_views, "HeadImportance": _importance_views}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m attnwidgets.saved_doc FILE NAME``: print :func:`document` as JSON, or ``{"error", "status"}``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m attnwidgets.saved_doc FILE NAME", file=sys.stderr)
        return 2
    try:
        text = json.dumps(document(args[0], args[1]), allow_nan=False)
    except DocumentError as exc:
        text = json.dumps({"error": str(exc), "status": exc.status})
    except ValueError as exc:  # NaN or infinity where JSON has no word for it: a message, never invalid JSON
        text = json.dumps({"error": f"{args[1]!r} loaded, but its views could not be written as JSON ({exc}); load "
                                    "it in a notebook with aw.load(path)", "status": 422})
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
