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
runs code from it (no pickle anywhere). The few real tables (a sweep's frame) are stored column by column. Entries
are deflated, except a large float array that deflate barely shrinks (a result's attention: float32 mantissas are
noise to it), which is stored as it is so that reading it is a copy, not an inflate (:func:`write_npz`); readers,
``np.load`` and older attnwidgets versions read both kinds of entry alike, and files written before read as ever.

Every file is tagged with the model (:func:`provenance`): its name, the exact files loaded (``commit``: the hub
commit hash, or a hash of a local folder's ``config.json``), the hub revision asked for, its shape. Loading with
``model=`` (a runner, a :class:`~attnwidgets.result.ModelInfo`, or a model id or folder) checks it first
(:func:`check_provenance`) and refuses a file from another model with a message naming both.

A file is untrusted when it is read back. Only the entries the format names are read, each after its ``.npy`` header
says it has the shape and type the tags imply (:func:`read_entry`: an unused or oversized entry, an archive bomb, is
never decompressed), and every object is rebuilt through the checks an object built in memory passes (attention
through :func:`~attnwidgets.result.check_attention`; sums and counts consistent; scores within their ranges):
anything else is a :class:`SavedFileError` naming the file and what is wrong (:func:`load_checked`).

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
import math
import os
import platform
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import numpy as np

from .result import ModelInfo

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "ModelMismatchError", "Saved", "SavedFileError", "atomic_write", "check_provenance",
           "frame_arrays", "frame_from_arrays", "info_from_tags", "load_checked", "machine_description", "model_info",
           "provenance", "read", "read_entry", "read_tags", "write", "write_npz"]

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
    ``revision`` asked for, ``n_layers``, ``n_heads``, ``source``, ...) plus ``path``, the absolute folder of a model
    loaded from a local folder (its ``source``; else None). None for ``model=None``.

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
    # the folder is what loaded the model (``source``), never its display name: a name may be a relative path that
    # another working directory resolves elsewhere, or not a path at all
    source = Path(info.source).expanduser() if info.source is not None else None
    tags["path"] = str(source.resolve()) if source is not None and source.is_dir() else None
    return tags


def _describe(tags: Mapping[str, Any]) -> str:
    commit = tags.get("commit") or tags.get("revision")
    where = tags.get("path")
    return (f"{tags.get('name')!r}" + (f" in {where}" if where and where != tags.get("name") else "")
            + (f" ({commit})" if commit else ""))


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
    # Two folders of one name (a model is named by its folder's own name) are two models unless their files agree.
    elsewhere = bool(saved.get("path")) and bool(other.get("path")) and saved["path"] != other["path"]
    if (elsewhere or not _same_name(saved, other["name"])) and not same_files \
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


def machine_description() -> str:
    """The CPU this runs on and the torch version (read from the installed package; torch is not imported): what a
    file made by a timed run (a shipped run or study) records beside the time it took."""
    from importlib.metadata import PackageNotFoundError, version

    name = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    try:
        torch = version("torch").split("+")[0]
    except PackageNotFoundError:
        torch = "not installed"
    return f"{name}, torch {torch}"


# -- the file ------------------------------------------------------------------------------------------------------


MAX_ELEMENTS = 2**27
"""Most elements an array of a saved file may declare when its tags do not bound it closer (512 MiB of float32)."""

MAX_TAGS_BYTES = 2**26
"""Most bytes the tags entry may declare (64 MiB: a result's tokens and text, many times over)."""

MAX_BYTES = 2**31
"""Most bytes one array of a saved file may declare, whatever its tags say (2 GiB)."""

MAX_TEXT = 2**16
"""Most characters one element of a text array may declare."""


@dataclass(frozen=True)
class Saved:
    """What :func:`read` found in a file: its kind, its tags and the names of its arrays.

    An array is read only when asked for (:meth:`array`), and only after its header says it is the shape and type
    the caller expects: entries the format does not name are never decompressed, and an entry whose header asks
    for more than its tags imply (an archive bomb) is refused before it is.
    """

    kind: str
    names: frozenset[str]
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
        model = self.tags.get("model")
        return model if isinstance(model, dict) else None

    def damaged(self, what: str) -> SavedFileError:
        """The error for a file whose content fails a check: names the file and ``what`` is wrong."""
        return SavedFileError(f"{str(self.path)!r} is damaged or was changed by hand: {what}. Such a file would show "
                              f"wrong numbers, so it is not loaded; save the {self.kind} again from its source")

    def array(self, name: str, shape: Sequence[int | None] | None = None, kinds: str = "biuf", *,
              limit: int = MAX_ELEMENTS) -> np.ndarray:
        """One array, read only if its header fits: ``shape`` (None for any size on that axis; None for any
        shape), dtype kinds (``"f"`` floats, ``"iu"`` integers, ``"b"`` booleans, ``"U"`` text) and at most ``limit``
        elements. :class:`SavedFileError` when the file lacks it or it does not fit."""
        if name not in self.names:
            raise self.damaged(f"the {self.kind} in it has no array {name!r}")
        return read_entry(self.path, name, shape, kinds, limit=limit, what=f"the {self.kind} in it")

    def has(self, name: str) -> bool:
        """Whether the file holds an array ``name``."""
        return name in self.names


def _header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)  # type: ignore[no-any-return]
    if version in ((2, 0), (3, 0)):
        return np.lib.format.read_array_header_2_0(f)  # type: ignore[no-any-return]
    raise ValueError(f"an .npy entry of format version {version}")


_KIND_NAMES = {"f": "floats", "i": "integers", "u": "integers", "b": "booleans", "U": "text"}


def read_entry(path: str | os.PathLike[str], name: str, shape: Sequence[int | None] | None = None,
               kinds: str = "biuf", *, limit: int = MAX_ELEMENTS, max_text: int = MAX_TEXT,
               what: str = "it", expected_by: str = "its tags") -> np.ndarray:
    """Read one array of an ``.npz`` archive, and nothing else of it, checking its header first.

    The entry's ``.npy`` header must declare a dtype of ``kinds`` (never Python objects: nothing is unpickled),
    ``shape`` (None on an axis: any size), at most ``limit`` elements (of at most ``max_text`` characters for text),
    and the zip entry's declared size must be
    what that header implies; otherwise :class:`SavedFileError` names the file and the entry, before anything is
    decompressed. The shard files of a results folder are read with it too.
    """
    path = Path(path)
    where = f"{str(path)!r} is damaged or was changed by hand: {what}"
    advice = "; such a file would show wrong numbers (or fill the memory), so it is not loaded: save it again"
    try:
        with zipfile.ZipFile(path) as zf:
            try:
                info = zf.getinfo(name + ".npy")
            except KeyError:
                raise SavedFileError(f"{where} has no array {name!r}{advice}") from None
            with zf.open(info) as f:
                dims, _fortran, dtype = _header(f)
                header_bytes = f.tell()
            kind = dtype.kind
            if dtype.hasobject or kind not in kinds:
                got = "Python objects" if dtype.hasobject else _KIND_NAMES.get(kind, str(dtype))
                want = " or ".join(dict.fromkeys(_KIND_NAMES[k] for k in kinds))
                raise SavedFileError(f"{where} holds {name!r} as {got} ({dtype}), not {want}{advice}")
            if kind == "U" and dtype.itemsize > 4 * max_text:
                raise SavedFileError(f"{where} declares text of {dtype.itemsize // 4:,} characters per item in "
                                     f"{name!r}{advice}")
            if shape is not None and (len(dims) != len(shape)
                                      or any(want is not None and got != want for got, want in zip(dims, shape))):
                expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ("," if len(shape) == 1
                                                                                              else "") + ")"
                raise SavedFileError(f"{where} declares {name!r} of shape {tuple(dims)}, not {expected} (from "
                                     f"{expected_by}){advice}")
            count = math.prod(dims)
            if count > limit:
                raise SavedFileError(f"{where} declares {name!r} of shape {tuple(dims)} ({count:,} elements), more "
                                     f"than {limit:,} (from {expected_by}){advice}")
            if count * dtype.itemsize > MAX_BYTES:
                raise SavedFileError(f"{where} declares {name!r} of {count * dtype.itemsize:,} bytes{advice}")
            if info.file_size != header_bytes + count * dtype.itemsize:
                raise SavedFileError(f"{where}: the entry {name!r} declares {info.file_size:,} bytes, its header "
                                     f"{header_bytes + count * dtype.itemsize:,}{advice}")
            with zf.open(info) as f:
                arr = np.lib.format.read_array(f, allow_pickle=False)
    except SavedFileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError, NotImplementedError,
            RuntimeError) as exc:
        raise SavedFileError(f"{where}: its entry {name!r} cannot be read ({type(exc).__name__}: {exc}){advice}") \
            from exc
    return np.asarray(arr)


def _version() -> str:
    from ._version import __version__

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
    return atomic_write(path, lambda f: write_npz(f, out))


STORED_BYTES = 2**20
"""Float arrays of at least this many bytes are stored in the archive as they are, not deflated, when a sample of
them deflates to more than :data:`STORED_RATIO` of its size (see :func:`write_npz`)."""

STORED_RATIO = 0.8
"""Deflated size (of a sample) above which a large float array is stored uncompressed."""

_SAMPLE_BYTES = 2**22


def _deflate_pays(arr: np.ndarray) -> bool:
    """Whether deflating ``arr`` is worth what inflating it costs every reader: False for a large float array whose
    first :data:`_SAMPLE_BYTES` (whole attention maps: a decoder's zero triangle is in them) shrink by less than
    ``1 - STORED_RATIO``. Float32 weights' mantissas are noise to deflate: a 512-token 12 x 12 result shrank by 4%,
    and inflating it was a quarter of the time to open it."""
    if arr.dtype.kind != "f" or arr.nbytes < STORED_BYTES:
        return True
    flat = np.ascontiguousarray(arr).reshape(-1)
    sample = flat[: max(1, _SAMPLE_BYTES // arr.dtype.itemsize)].tobytes()
    return len(zlib.compress(sample, 1)) < STORED_RATIO * len(sample)


def write_npz(f: BinaryIO, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``f`` as an ``.npz`` archive, as ``np.savez_compressed`` does, except that a large float
    array that deflate would barely shrink is stored as it is (``ZIP_STORED``): reading it back is then a copy, not
    an inflate. Any zip reader, :func:`np.load` and every attnwidgets version read both kinds of entry alike.
    """
    import time

    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for name, value in arrays.items():
            arr = np.asanyarray(value)
            info = zipfile.ZipInfo(name + ".npy", date_time=time.localtime(time.time())[:6])
            info.compress_type = zipfile.ZIP_DEFLATED if _deflate_pays(arr) else zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, arr, allow_pickle=False)


def atomic_write(path: str | os.PathLike[str], write_to: Callable[[BinaryIO], object]) -> Path:
    """Write a file whole or not at all, and never through a link: ``write_to(f)`` fills a fresh temporary file in
    the same folder (a new name, created exclusively: a link planted there beforehand is never followed), which then
    replaces ``path`` in one rename (a ``path`` that is a link is replaced by the file, not written through). A crash
    never leaves half a file under the name. The one way this package writes its files (saved objects, results
    folders). Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write_to(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _open(path: Path) -> tuple[dict[str, Any], frozenset[str]]:
    if not path.is_file():
        raise FileNotFoundError(f"no saved file at {str(path)!r}")
    damaged = (f"{str(path)!r} is not a file attnwidgets saved, or it is damaged (cut short while copying?); save the "
               "object again")
    if not zipfile.is_zipfile(path):  # checked first: np.load would read a bare .npy as an array
        raise SavedFileError(f"{damaged} (it is not an .npz archive)")
    try:
        with zipfile.ZipFile(path) as zf:
            names = frozenset(n[:-4] for n in zf.namelist() if n.endswith(".npy"))
        if TAGS not in names:
            raise SavedFileError(f"{damaged} (it has no {TAGS} entry)")
        text = read_entry(path, TAGS, (), "U", limit=1, max_text=MAX_TAGS_BYTES // 4, what="its tags")
        tags = json.loads(str(text))
    except SavedFileError:
        raise
    except RecursionError:   # json nests by recursion: tags nested thousands deep are not tags this package wrote
        raise SavedFileError(f"{damaged} (its tags nest deeper than Python's JSON reader can go)") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError) as exc:
        raise SavedFileError(f"{damaged} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(tags, dict) or "attnwidgets_file" not in tags or "kind" not in tags:
        raise SavedFileError(f"{damaged} (its tags are not attnwidgets tags)")
    fmt = tags["attnwidgets_file"]
    if not isinstance(fmt, int) or fmt > FORMAT:
        raise SavedFileError(f"{str(path)!r} was written by attnwidgets {tags.get('attnwidgets')} in file format "
                             f"{fmt}; this attnwidgets ({_version()}) reads format {FORMAT} and older: upgrade "
                             "attnwidgets to load it")
    if not isinstance(tags["kind"], str):
        raise SavedFileError(f"{damaged} (its tags are not attnwidgets tags)")
    for key in ("model", "settings", "attrs"):
        if tags.get(key) is not None and not isinstance(tags[key], dict):
            raise SavedFileError(f"{damaged} (its tags' {key!r} is not a mapping)")
    return tags, names


def read_tags(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved file's tags (kind, model, settings, version) without reading its arrays."""
    return _open(Path(path))[0]


def read(path: str | os.PathLike[str], kind: str | None = None, *, model: Any = None) -> Saved:
    """Read a file :func:`write` wrote, checking that it holds ``kind`` (None: any) and came from ``model``
    (None: no check; see :func:`check_provenance`)."""
    path = Path(path)
    tags, names = _open(path)
    if kind is not None and tags["kind"] != kind:
        raise SavedFileError(f"{str(path)!r} holds a {tags['kind']}, not a {kind}: load it with aw.load(path), or "
                             f"with {tags['kind']}.load(path)")
    check_provenance(tags.get("model") or {}, model, what=f"{str(path)!r}")
    return Saved(str(tags["kind"]), names, tags, path)


T = TypeVar("T")


def load_checked(path: str | os.PathLike[str], kind: str, build: Callable[[Saved], T], *, model: Any = None) -> T:
    """``build(saved)`` of the file at ``path`` (see :func:`read`), any failure of it a :class:`SavedFileError`.

    What a file holds is untrusted: ``build`` reads each array with the shape and type the tags imply
    (:meth:`Saved.array`) and makes the object through the checks an object built in memory passes, so a file
    changed by hand (rows that do not sum to 1, negative counts, a missing field) is refused, naming the file and
    what is wrong, rather than loaded to show wrong numbers.
    """
    saved = read(path, kind, model=model)
    try:
        return build(saved)
    except SavedFileError:
        raise
    except KeyError as exc:
        raise saved.damaged(f"its tags have no field {exc}") from exc
    except (TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        raise saved.damaged(str(exc)) from exc


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


def frame_from_arrays(saved: Saved, prefix: str, spec: Mapping[str, Any], *, limit: int = MAX_ELEMENTS
                      ) -> pd.DataFrame:
    """Inverse of :func:`frame_arrays`: columns of one length, at most ``limit`` rows (what the tags imply)."""
    import pandas as pd

    columns, dtypes = spec["columns"], spec["dtypes"]
    if not isinstance(columns, list) or not isinstance(dtypes, list) or len(columns) != len(dtypes) \
            or not all(isinstance(c, str) for c in columns) or not all(isinstance(d, str) for d in dtypes):
        raise ValueError("its table's columns and dtypes are not two lists of names of one length")
    data = {}
    length: int | None = None
    for i, (name, kind) in enumerate(zip(columns, dtypes)):
        text = kind.startswith("text:")
        arr = saved.array(f"{prefix}.{i}", (length,), "U" if text else "biuf", limit=limit)
        length = len(arr)
        data[name] = pd.Series(arr.tolist() if text else arr, dtype=kind.removeprefix("text:"))
    return pd.DataFrame(data, columns=list(columns))


_INFO_INTS = ("n_layers", "n_heads", "max_length", "n_kv_heads", "head_dim", "n_decoder_layers", "n_decoder_heads")


def info_from_tags(tags: Mapping[str, Any] | None) -> ModelInfo | None:
    """The :class:`ModelInfo` a file's ``"model"`` tags describe (None for None); tags it does not know (a newer
    package's) are left out. ValueError for tags of the wrong types (a name that is not text, a negative number of
    layers)."""
    names = {f.name for f in dataclasses.fields(ModelInfo)}
    if not tags or not all(f.name in tags for f in dataclasses.fields(ModelInfo)
                           if f.default is dataclasses.MISSING):  # a file that knew only the model's name
        return None
    values = {k: v for k, v in tags.items() if k in names}
    for key in _INFO_INTS:
        value = values.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key in ("n_layers", "n_heads")
                                                                             else 0):
            raise ValueError(f"its model tags give {key}={value!r}, not a number of that kind")
    for key in ("name", "dtype", "device", "model_type"):
        if key in values and not isinstance(values[key], str):
            raise ValueError(f"its model tags give {key}={values[key]!r}, not text")
    if values["kind"] not in ("encoder", "decoder", "encoder-decoder"):
        raise ValueError(f"its model tags give kind={values['kind']!r}, not encoder, decoder or encoder-decoder")
    return ModelInfo(**values)
