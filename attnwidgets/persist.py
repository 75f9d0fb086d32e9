"""Saving analyses to a file and loading them back, tagged with the model they came from.

One file format for everything: a NumPy ``.npz`` archive (a zip of ``.npy`` arrays) holding the object's arrays and
one more entry, ``__tags__``, a JSON text that says what the file is::

    {"attnwidgets_file": 1,                      # the file format's version
     "kind": "CorpusStats",                      # what object it holds
     "attnwidgets": "0.1.0",                     # the package version that wrote it
     "created": "2026-11-24T01:02:03+00:00",
     "model": {"name": ..., "commit": ..., "revision": ..., "n_layers": ..., ...},   # provenance(), or null
     "settings": {"words": false, "smoothing": 0.0, ...},                            # how it was computed
     "attrs": {...}}                             # the object's other plain fields (counts, names, column lists)

Why one ``.npz`` rather than Parquet for tables and npz for arrays: what these objects *are* is arrays (running sums
and counts, (L, H) grids, (direction, layer, head, relation) counts); their tables are computed from the arrays by
``.frame()`` / ``.table()``, so saving the arrays saves the tables too. NumPy is already what the numpy layers use,
so no new dependency (pyarrow is not one of ours, and is large); one file per object is one thing to move, mail or
check in; and ``np.load(..., allow_pickle=False)`` reads only numbers and fixed-width text, so loading a file never
runs code from it (no pickle anywhere). The few real tables (a sweep's frame) are stored column by column.

Every file is tagged with the model (:func:`provenance`): its name, the exact files loaded (``commit``: the hub
commit hash, or a hash of a local folder's ``config.json``), the hub revision asked for, its shape. Loading with
``model=`` (a runner, a :class:`~attnwidgets.result.ModelInfo`, or a model id or folder) checks it first
(:func:`check_provenance`) and refuses a file from another model with a message naming both.

The objects save themselves (``stats.save(path)``, ``CorpusStats.load(path, model=...)``); ``aw.save`` and
``aw.load`` (:mod:`attnwidgets.studies.saved`) take any of them. This module is the format and the check, in the
result layer (numpy only), so every layer above can write its own objects with it.

Examples
--------
>>> import tempfile, numpy as np
>>> from attnwidgets.result import ModelInfo
>>> info = ModelInfo("tiny", "encoder", n_layers=1, n_heads=2, max_length=8)
>>> path = tempfile.mkdtemp() + "/grid.npz"
>>> _ = write(path, "Example", {"grid": np.eye(2)}, model=info, settings={"words": True})
>>> saved = read(path, "Example", model=info)
>>> saved.array("grid").tolist(), saved.settings, saved.tags["model"]["name"]
([[1.0, 0.0], [0.0, 1.0]], {'words': True}, 'tiny')
>>> read(path, model=ModelInfo("other", "encoder", 1, 2, 8))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
attnwidgets.persist.ModelMismatchError: ... was saved from model 'tiny', not from 'other': load it with that model, ...
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .result import AttentionResult, ModelInfo

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "ModelMismatchError", "Saved", "SavedFileError", "check_provenance", "frame_arrays",
           "frame_from_arrays", "info_from_tags", "load_importance", "load_result", "model_info", "provenance", "read",
           "read_tags", "save_importance", "save_result", "write"]

FORMAT = 1
"""The file format's version: a file written by a newer format is refused with a message to upgrade."""

TAGS = "__tags__"
"""The archive entry that holds the JSON tags."""


class SavedFileError(ValueError):
    """A file that is not a saved attnwidgets object, is damaged, is newer than this package, or holds another kind."""


class ModelMismatchError(ValueError):
    """A saved file was loaded against a different model than the one it came from."""


# -- provenance ---------------------------------------------------------------------------------------------------


def model_info(model: Any) -> ModelInfo | None:
    """The :class:`ModelInfo` of ``model``: a ModelInfo, or anything with one as ``.info`` (a runner) or ``.model``
    (a result, CorpusStats); None for None."""
    if model is None or isinstance(model, ModelInfo):
        return model
    for attr in ("info", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, ModelInfo):
            return value
    raise TypeError(f"expected a runner, a ModelInfo, a model id or folder, or None, got {type(model).__name__}")


def provenance(model: Any) -> dict[str, Any] | None:
    """The tags that say which model made something: every :class:`ModelInfo` field (``name``, ``commit``, the
    ``revision`` asked for, ``n_layers``, ``n_heads``, ...) plus ``path``, the absolute folder for a model loaded from
    a local folder (else None). None for ``model=None``.

    ``model`` is a runner, a ModelInfo, or an object holding one (a result, CorpusStats); a bare name (str) gives
    only ``name`` and ``path``.

    Examples
    --------
    >>> tags = provenance(ModelInfo("tiny", "encoder", n_layers=1, n_heads=2, max_length=8, commit="abc"))
    >>> tags["name"], tags["commit"], tags["n_heads"], tags["path"]
    ('tiny', 'abc', 2, None)
    """
    if isinstance(model, (str, os.PathLike)):  # only the name is known
        folder = Path(model).expanduser()
        return {"name": str(model), "path": str(folder.resolve()) if folder.is_dir() else None}
    info = model_info(model)
    if info is None:
        return None
    tags = dataclasses.asdict(info)
    folder = Path(info.name).expanduser()
    tags["path"] = str(folder.resolve()) if folder.is_dir() else None
    return tags


def _describe(tags: Mapping[str, Any]) -> str:
    commit = tags.get("commit") or tags.get("revision")
    return f"{tags.get('name')!r}" + (f" ({commit})" if commit else "")


def _same_name(tags: Mapping[str, Any], name: str) -> bool:
    if name == tags.get("name"):
        return True
    folder = Path(name).expanduser()
    return bool(tags.get("path")) and folder.is_dir() and str(folder.resolve()) == tags.get("path")


def check_provenance(tags: Mapping[str, Any], model: Any, *, what: str = "this file") -> None:
    """Refuse (:class:`ModelMismatchError`) when ``model`` is not the model ``tags`` (a file's tags, or its
    ``"model"`` entry) came from; ``model=None`` checks nothing.

    ``model`` may be a runner or a :class:`ModelInfo` (the name, the commit when both know it, and the number of
    layers and heads must agree; two names of one hub commit count as the same model), or a model id or folder (the
    name, or the folder, must agree). The bundled model is named ``"all-MiniLM-L6-v2 (bundled)"``; pass its runner.
    Whether a model saved in float16 is read against the same model in float32, or on another device, is not checked.

    Examples
    --------
    >>> tags = provenance(ModelInfo("bert-base-uncased", "encoder", 12, 12, 512, commit="86b5e09"))
    >>> check_provenance(tags, "bert-base-uncased")         # the same model: nothing happens
    >>> check_provenance(tags, "roberta-base")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnwidgets.persist.ModelMismatchError: this file was saved from model 'bert-base-uncased' (86b5e09), not from ...
    """
    if model is None:
        return
    saved = tags.get("model") if "attnwidgets_file" in tags else tags
    if isinstance(model, (str, os.PathLike)):
        other: dict[str, Any] = {"name": str(model)}
    else:
        info = model_info(model)
        other = provenance(info) or {}
    if saved is None or not saved.get("name"):
        raise ModelMismatchError(f"{what} does not say which model it came from (it was saved without one), so it "
                                 f"cannot be checked against {_describe(other)}: pass model=None to load it anyway")
    advice = "load it with that model, or pass model=None to load it without the check"
    same_files = bool(other.get("commit")) and other.get("commit") == saved.get("commit") \
        and not str(other["commit"]).startswith("config-sha256:")  # one hub commit under two names (an alias)
    if not _same_name(saved, other["name"]) and not same_files \
            and not (other.get("path") and other.get("path") == saved.get("path")):
        raise ModelMismatchError(f"{what} was saved from model {_describe(saved)}, not from {_describe(other)}: "
                                 f"{advice}")
    if other.get("commit") and saved.get("commit") and other["commit"] != saved["commit"]:
        raise ModelMismatchError(f"{what} was saved from model {saved['name']!r} at {saved['commit']}, but this model "
                                 f"{other['name']!r} is at {other['commit']} (other weights or config): {advice}")
    for key in ("n_layers", "n_heads"):
        if key in other and saved.get(key) is not None and other[key] != saved[key]:
            raise ModelMismatchError(f"{what} was saved from model {saved['name']!r} with {key}={saved[key]}, this "
                                     f"model has {key}={other[key]}: {advice}")


# -- the file ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Saved:
    """What :func:`read` found in a file: its kind, its arrays (by name) and its tags."""

    kind: str
    arrays: dict[str, np.ndarray]
    tags: dict[str, Any]
    path: Path

    @property
    def settings(self) -> dict[str, Any]:
        """How the object was computed (``words``, ``smoothing``, ``rows``, ...)."""
        return dict(self.tags.get("settings") or {})

    @property
    def attrs(self) -> dict[str, Any]:
        """The object's other plain fields."""
        return dict(self.tags.get("attrs") or {})

    @property
    def model(self) -> dict[str, Any] | None:
        """The model's tags (:func:`provenance`), or None."""
        return self.tags.get("model")

    def array(self, name: str) -> np.ndarray:
        """One array; :class:`SavedFileError` when the file lacks it."""
        if name not in self.arrays:
            raise SavedFileError(f"{self.path} is damaged: the {self.kind} in it has no array {name!r}")
        return self.arrays[name]


def _version() -> str:
    from . import __version__

    return __version__


def _plain(value: Any) -> Any:
    """numpy scalars and tuples in tags as JSON numbers and lists; anything else is not JSON."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} {value!r} is not JSON")


def write(path: str | os.PathLike[str], kind: str, arrays: Mapping[str, np.ndarray], *, model: Any = None,
          settings: Mapping[str, Any] | None = None, attrs: Mapping[str, Any] | None = None) -> Path:
    """Write ``arrays`` and their tags to ``path`` (an ``.npz`` archive; written to a temporary file first and
    renamed, so a crash never leaves half a file under the name). Returns the path.

    Arrays must be numbers, booleans or fixed-width text (numpy ``U`` dtype): object arrays would need pickle to
    read back, and are refused. ``settings`` and ``attrs`` must be JSON (NaN allowed).
    """
    path = Path(path)
    tags = {"attnwidgets_file": FORMAT, "kind": kind, "attnwidgets": _version(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "model": provenance(model), "settings": dict(settings or {}), "attrs": dict(attrs or {})}
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise TypeError(f"array {name!r} holds Python objects ({arr.dtype}); save numbers or text only")
        if name == TAGS:
            raise ValueError(f"{TAGS!r} is reserved for the tags")
        out[name] = arr
    try:
        text = json.dumps(tags, default=_plain)
    except TypeError as exc:
        raise TypeError(f"the tags of this {kind} are not JSON: {exc}") from exc
    out[TAGS] = np.array(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **out)  # type: ignore[arg-type]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _open(path: Path, names: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if not path.is_file():
        raise FileNotFoundError(f"no saved file at {str(path)!r}")
    damaged = (f"{str(path)!r} is not a file attnwidgets saved, or it is damaged (cut short while copying?); save the "
               "object again")
    if not zipfile.is_zipfile(path):  # checked first: np.load would read a bare .npy as an array
        raise SavedFileError(f"{damaged} (it is not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if TAGS not in archive.files:
                raise SavedFileError(f"{damaged} (it has no {TAGS} entry)")
            tags = json.loads(str(archive[TAGS]))
            arrays = {name: archive[name] for name in archive.files if name != TAGS} if names else {}
    except SavedFileError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError) as exc:
        raise SavedFileError(f"{damaged} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(tags, dict) or "attnwidgets_file" not in tags or "kind" not in tags:
        raise SavedFileError(f"{damaged} (its tags are not attnwidgets tags)")
    fmt = tags["attnwidgets_file"]
    if not isinstance(fmt, int) or fmt > FORMAT:
        raise SavedFileError(f"{str(path)!r} was written by attnwidgets {tags.get('attnwidgets')} in file format "
                             f"{fmt}; this attnwidgets ({_version()}) reads format {FORMAT} and older: upgrade "
                             "attnwidgets to load it")
    return tags, arrays


def read_tags(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved file's tags (kind, model, settings, version) without reading its arrays."""
    return _open(Path(path), names=False)[0]


def read(path: str | os.PathLike[str], kind: str | None = None, *, model: Any = None) -> Saved:
    """Read a file :func:`write` wrote, checking that it holds ``kind`` (None: any) and came from ``model``
    (None: no check; see :func:`check_provenance`)."""
    path = Path(path)
    tags, arrays = _open(path)
    if kind is not None and tags["kind"] != kind:
        raise SavedFileError(f"{str(path)!r} holds a {tags['kind']}, not a {kind}: load it with aw.load(path), or "
                             f"with {tags['kind']}.load(path)")
    check_provenance(tags.get("model") or {}, model, what=f"{str(path)!r}")
    return Saved(str(tags["kind"]), arrays, tags, path)


# -- tables column by column ---------------------------------------------------------------------------------------


def frame_arrays(frame: pd.DataFrame, prefix: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A DataFrame as arrays (one per column, ``<prefix>.<i>``) and the attrs to rebuild it (names, dtypes); text
    columns become fixed-width text. A column of other Python objects (lists, tuples) raises TypeError."""
    import pandas as pd

    arrays: dict[str, np.ndarray] = {}
    kinds: list[str] = []
    for i, name in enumerate(frame.columns):
        col = frame[name]
        if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
            if not all(isinstance(v, str) for v in col):
                raise TypeError(f"column {name!r} holds Python objects other than text (or missing text); it cannot "
                                "be saved as is")
            arrays[f"{prefix}.{i}"] = np.asarray(col.tolist(), dtype=str).reshape(len(col))
            kinds.append(f"text:{col.dtype}")  # object, or pandas' own string dtype
        else:
            arrays[f"{prefix}.{i}"] = col.to_numpy()
            kinds.append(str(col.dtype))
    return arrays, {"columns": [str(c) for c in frame.columns], "dtypes": kinds}


def frame_from_arrays(saved: Saved, prefix: str, spec: Mapping[str, Any]) -> pd.DataFrame:
    """Inverse of :func:`frame_arrays`."""
    import pandas as pd

    data = {}
    for i, (name, kind) in enumerate(zip(spec["columns"], spec["dtypes"])):
        arr = saved.array(f"{prefix}.{i}")
        text = kind.startswith("text:")
        data[name] = pd.Series(arr.tolist() if text else arr, dtype=kind.removeprefix("text:"))
    return pd.DataFrame(data, columns=list(spec["columns"]))


# -- results and bare arrays ---------------------------------------------------------------------------------------

_RESULT_ARRAYS = ("token_ids", "word_ids", "segment_ids", "special_mask", "target_token_ids", "decoder_attention",
                  "cross_attention")


def save_result(result: AttentionResult, path: str | os.PathLike[str]) -> Path:
    """Save a (small) :class:`AttentionResult`: its tokens, ids, attention (every kind) and outputs.

    A long input's result (``result.is_lazy``: attention kept as queries and keys) and an ablated result are refused:
    save what you measured from it instead (``aw.corpus_stats([result]).save(path)``), or the text, model and
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
                         "measured from it instead (e.g. aw.corpus_stats([result]).save(path)), or the text to run "
                         "it again")
    if result.ablation is not None:
        raise ValueError("this result is ablated, and an ablation is not saved with it; save the clean result "
                         "(and ablation.to_dict() beside it, to apply it again), or what you measured from it")
    arrays: dict[str, np.ndarray] = {"attention": result.attention}
    for name in _RESULT_ARRAYS:
        value = result.__dict__[name]
        if value is not None:
            arrays[name] = value
    for key, value in result.outputs.items():
        arrays[f"outputs.{key}"] = np.asarray(value)
    attrs = {"tokens": list(result.tokens), "target_tokens": result.target_tokens, "text": result.text,
             "text_pair": result.text_pair, "target_text": result.target_text, "truncated": int(result.truncated),
             "outputs": list(result.outputs)}
    return write(path, "AttentionResult", arrays, model=result.model, attrs=attrs)


def info_from_tags(tags: Mapping[str, Any] | None) -> ModelInfo | None:
    """The :class:`ModelInfo` a file's ``"model"`` tags describe (None for None); tags it does not know (a newer
    package's) are left out."""
    names = {f.name for f in dataclasses.fields(ModelInfo)}
    if not tags or not all(f.name in tags for f in dataclasses.fields(ModelInfo)
                           if f.default is dataclasses.MISSING):  # a file that knew only the model's name
        return None
    return ModelInfo(**{k: v for k, v in tags.items() if k in names})


def load_result(path: str | os.PathLike[str], model: Any = None) -> AttentionResult:
    """Load a result :func:`save_result` saved (read-only arrays, like the runner's); ``model`` as in
    :func:`check_provenance`."""
    saved = read(path, "AttentionResult", model=model)
    attrs, info = saved.attrs, info_from_tags(saved.model)
    if info is None:
        raise SavedFileError(f"{str(saved.path)!r} is damaged: the result in it has no model tags")
    fields: dict[str, Any] = {name: saved.arrays[name] for name in _RESULT_ARRAYS if name in saved.arrays}
    return AttentionResult(
        tokens=list(attrs["tokens"]), attention=saved.array("attention"), model=info,
        text=attrs["text"], text_pair=attrs["text_pair"], target_text=attrs["target_text"],
        target_tokens=attrs["target_tokens"], truncated=attrs["truncated"],
        outputs={key: saved.array(f"outputs.{key}") for key in attrs["outputs"]},
        token_ids=saved.array("token_ids"), word_ids=saved.array("word_ids"), segment_ids=saved.array("segment_ids"),
        special_mask=saved.array("special_mask"), target_token_ids=fields.get("target_token_ids"),
        decoder_attention=fields.get("decoder_attention"), cross_attention=fields.get("cross_attention"),
    ).freeze()


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
    """The (layer, head) array :func:`save_importance` saved; its settings are in :func:`read_tags`."""
    return read(path, "HeadImportance", model=model).array("importance")
