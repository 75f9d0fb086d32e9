"""What every mergeable result checks before it adds its parts: the same model and the same settings.

Results that are sums and counts underneath (:class:`~attnwidgets.analysis.corpus.CorpusStats`,
:class:`~attnwidgets.analysis.dependency.DependencyScores`, :class:`~attnwidgets.studies.sweeps.SweepResult`,
:class:`~attnwidgets.studies.importance.ImportanceSums`) merge partial results computed on shards of the input into
the result over the whole. Merging parts of different models, or measured with different settings, would give a
plausible wrong number, so it is refused here with a message that names what differs.

Examples
--------
>>> check_same_settings("CorpusStats", [{"words": False}, {"words": False}])
>>> check_same_settings("CorpusStats", [{"words": False}, {"words": True}])
Traceback (most recent call last):
...
ValueError: cannot merge CorpusStats measured with different settings: words=False in part 0 but words=True in part 1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["check_same_model", "check_same_settings", "model_tag"]


def model_tag(model: Any) -> tuple[str, str | None, int, int] | None:
    """(name, revision, layers, heads) of a ModelInfo, a model name as (name, None, 0, 0), or None when unknown."""
    if model is None or model == "":
        return None
    if isinstance(model, str):
        return (model, None, 0, 0)
    return (str(model.name), getattr(model, "revision", None), int(model.n_layers), int(model.n_heads))


def check_same_model(kind: str, models: Sequence[Any]) -> Any:
    """The first known model of ``models`` (ModelInfo or name); ValueError if two parts name different models.

    Parts whose model is unknown (None or "": nothing was added to them yet) merge with anything.
    """
    first: Any = None
    first_tag: tuple[str, str | None, int, int] | None = None
    for i, model in enumerate(models):
        tag = model_tag(model)
        if tag is None:
            continue
        if first_tag is None:
            first, first_tag = model, tag
            continue
        same_name = tag[0] == first_tag[0] and tag[1] == first_tag[1]
        same_shape = 0 in (tag[2], first_tag[2]) or tag[2:] == first_tag[2:]
        if not (same_name and same_shape):
            raise ValueError(f"cannot merge {kind} of different models: part {i} is {_describe(tag)}, an earlier "
                             f"part {_describe(first_tag)}")
    return first


def check_same_settings(kind: str, settings: Sequence[dict[str, Any]]) -> None:
    """ValueError naming the first setting whose value differs between two parts (a part without a key did not
    record that setting and merges with any value of it)."""
    first: dict[str, tuple[int, Any]] = {}
    for i, part in enumerate(settings):
        for key, value in part.items():
            if key not in first:
                first[key] = (i, value)
            elif value != first[key][1]:
                j, ref = first[key]
                raise ValueError(f"cannot merge {kind} measured with different settings: {key}={ref!r} in part {j} "
                                 f"but {key}={value!r} in part {i}")


def _describe(tag: tuple[str, str | None, int, int]) -> str:
    name, revision, layers, heads = tag
    out = repr(name) + (f" at revision {revision!r}" if revision else "")
    return out + (f" ({layers} layers x {heads} heads)" if layers else "")
