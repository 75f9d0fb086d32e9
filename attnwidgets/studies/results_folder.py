"""The results folder of a sharded study (``results_dir=``): every finished shard written as it arrives, and read
back on a rerun, after checks, instead of being run again.

A folder holds ``manifest.json`` (the run's tags, the plan, and each finished shard's arrays, their shapes and dtypes,
and checksums) and ``shard-NNNNN.npz`` + ``.json`` per finished shard. A folder of another run (model, revision,
package version, settings or plan) is refused, and so is a shard changed, cut or lost since it was written, by name,
with how to compute it again (:class:`ResultsFolderError`). :mod:`attnwidgets.studies.shards` is its one user.

**A results folder is trusted like code.** The checksums in ``manifest.json`` catch a shard changed, cut or lost by
accident (a copy cut short, a shard of another run dropped in, a hand edit that forgot the manifest); they are not a
signature: whoever can write the folder can also write the manifest, recompute a shard's checksum, and have numbers of
their choosing merged into the result. What a shard holds is still read as untrusted input (sizes bounded and the
checksum checked before anything is decompressed, nothing unpickled, each partial through the checks of its kind), so a
hostile folder cannot run code or fill the memory, but it can change the numbers. Resume only from a folder that you (or
someone you trust with your results) wrote, as you would only run code you trust; for a folder from elsewhere, pass a
fresh ``results_dir`` and compute again.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ResultsFolder", "ResultsFolderError", "Shard", "json_default", "package_version"]


@dataclass(frozen=True)
class Shard:
    """One piece of a study's work: its index in the plan, its items, how many items it counts for on the progress
    bar, and a key (a hash of the items) that a results folder checks on resume."""

    index: int
    items: list[Any]
    size: int
    key: str


class ResultsFolderError(ValueError):
    """A ``results_dir`` holds shards of another run (another model, revision, package version or settings)."""


def package_version() -> str:
    """The version of attnwidgets that shard files are tagged with."""
    from .._version import __version__

    return str(__version__)


class ResultsFolder:
    """Finished shards on disk: ``manifest.json`` (tags, plan, and each finished shard's arrays, their shapes and
    dtypes, and the sha256 of its file) and ``shard-NNNNN.npz`` + ``.json`` per shard.

    The one place shard files are written and read. Every file is written whole through
    :func:`attnwidgets.persist.atomic_write` (a fresh temporary file, then a rename: a link planted in the folder is
    never written through). A shard is written in the order: its arrays, its JSON, its record in the manifest; so it
    counts as finished only once all three are complete. On resume a finished shard is read only if its files are
    there with the checksums the manifest recorded, its arrays have the recorded shapes and dtypes, and its partial
    passes the checks of its kind; otherwise :class:`ResultsFolderError` names it and says how to compute it again.
    """

    def __init__(self, path: str | os.PathLike[str], tags: dict[str, Any], shards: Sequence[Shard],
                 kind: type[Any]) -> None:
        self.path = Path(path)
        self.tags = tags
        self.kind = kind  # what every shard holds: a partial result with to_state/from_state and merge
        self.manifest: dict[str, Any] = {**tags, "shards": [s.key for s in shards], "files": {}}
        if self.path.exists() and not self.path.is_dir():
            raise ResultsFolderError(f"results_dir {str(self.path)!r} is a file, not a folder: pass a folder (it is "
                                     "made if missing) where the finished shards can be kept")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:   # a file where a parent folder should be
            raise ResultsFolderError(f"results_dir {str(self.path)!r} cannot be made: part of its path is a file "
                                     f"({exc.strerror}). Pass a folder whose parents are folders.") from None
        mf = self.path / "manifest.json"
        if mf.exists():
            old = self._read_manifest(mf)
            for key, value in self.manifest.items():
                if key != "files" and old.get(key) != value:
                    what = "the plan (the inputs or how they are cut into shards)" if key == "shards" else \
                        f"{key}={old.get(key)!r}, this run {key}={value!r}"
                    raise ResultsFolderError(f"results_dir {str(self.path)!r} holds shards of another run: it has "
                                             f"{what}. Use another folder for this run, or empty this one.")
            self.manifest["files"] = old["files"]
        else:
            self._write_manifest()

    def _read_manifest(self, mf: Path) -> dict[str, Any]:
        def broken(what: str) -> ResultsFolderError:
            return ResultsFolderError(f"results_dir {str(self.path)!r}: its manifest.json is damaged ({what}), so "
                                      "which shards are finished, and what they hold, is unknown. Pass a fresh "
                                      "results_dir (or empty this one) to compute them again.")

        try:
            old = json.loads(mf.read_bytes())
        except RecursionError:  # json nests by recursion: no manifest this package wrote nests that deep
            raise broken("it nests deeper than Python's JSON reader can go") from None
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise broken(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(old, dict):
            raise broken(f"it holds a {type(old).__name__}, not a mapping")
        missing = [k for k in self.manifest if k not in old]
        if missing:
            raise broken(f"it has no {', '.join(missing)}")
        if not isinstance(old["shards"], list) or not all(isinstance(k, str) for k in old["shards"]):
            raise broken("its plan is not a list of shard keys")
        files = old["files"]
        if not isinstance(files, dict) or not all(_record_ok(k, v) for k, v in files.items()):
            raise broken("its records of finished shards are not {index: {sha256, json_sha256, arrays: {name: {dtype, "
                         "shape}}}}")
        return old

    def _write_manifest(self) -> None:
        from ..persist import atomic_write

        data = json.dumps(self.manifest, indent=1).encode()
        atomic_write(self.path / "manifest.json", lambda f: f.write(data))

    def _stem(self, shard: Shard) -> Path:
        return self.path / f"shard-{shard.index:05d}"

    def _refuse(self, shard: Shard, what: str) -> ResultsFolderError:
        stem = self._stem(shard)
        return ResultsFolderError(f"results_dir {str(self.path)!r}: shard {shard.index} ({stem.name}.npz) {what}, so "
                                  f"it is not merged. Delete {stem.name}.npz and {stem.name}.json to compute that "
                                  "shard again on the next run, or pass a fresh results_dir.")

    def load(self, shard: Shard) -> Any | None:
        """The shard's partial result if it was finished, else None; :class:`ResultsFolderError` for a finished shard
        whose files fail a check."""
        from ..persist import MAX_ELEMENTS, SavedFileError, read_entry

        record = self.manifest["files"].get(str(shard.index))
        if record is None:  # not finished (a run stopped before its record was written): run it again
            return None
        stem = self._stem(shard)
        meta_path, npz = stem.with_suffix(".json"), stem.with_suffix(".npz")
        if not meta_path.exists() and not npz.exists():  # both deleted, as _refuse says to: run it again
            return None
        if not meta_path.is_file():
            raise self._refuse(shard, f"has no {meta_path.name}")
        text = meta_path.read_bytes()
        if hashlib.sha256(text).hexdigest() != record["json_sha256"]:
            raise self._refuse(shard, f"has a {meta_path.name} that has changed since it was written (its sha256 is "
                               "not the one manifest.json recorded)")
        try:
            meta = json.loads(text)
        except RecursionError:
            raise self._refuse(shard, f"has a {meta_path.name} nested deeper than Python's JSON reader can go") \
                from None
        except ValueError as exc:
            raise self._refuse(shard, f"has a damaged {meta_path.name} ({type(exc).__name__}: {exc})") from exc
        if not isinstance(meta, dict):
            raise self._refuse(shard, f"has a {meta_path.name} that is not a mapping")
        if meta.get("key") != shard.key or any(meta.get(k) != v for k, v in self.tags.items()):
            return None
        if not npz.is_file():
            raise self._refuse(shard, "is missing")
        # The checksum first: hashing reads the compressed file once, while reading an entry decompresses it, so a
        # shard swapped for a zip bomb is refused before any of it is inflated.
        digest = _sha256(npz)
        if digest != record["sha256"]:
            raise self._refuse(shard, f"has changed since it was written (sha256 {digest[:12]}..., the manifest "
                               f"recorded {record['sha256'][:12]}...)")
        arrays = {}
        try:
            for name, spec in record["arrays"].items():
                dtype = np.dtype(spec["dtype"])
                arr = read_entry(npz, name, spec["shape"], dtype.kind,
                                 limit=min(math.prod(spec["shape"]), MAX_ELEMENTS), what="the shard",
                                 expected_by="manifest.json")
                if arr.dtype != dtype:
                    raise SavedFileError(f"holds {name!r} as {arr.dtype}, the manifest recorded {dtype}")
                arrays[name] = arr
        except (SavedFileError, TypeError, ValueError) as exc:
            raise self._refuse(shard, "does not hold the arrays manifest.json recorded: "
                               + str(exc).split(": ", 1)[-1].split("; such a file")[0]) from exc
        if meta.get("type") != self.kind.__name__:
            raise self._refuse(shard, f"holds a {meta.get('type')!r}, not a {self.kind.__name__}")
        try:
            return self.kind.from_state(arrays, meta["state"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            what = f"has no field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise self._refuse(shard, f"holds a {meta['type']} that fails its checks ({what})") from exc

    def save(self, shard: Shard, partial: Any) -> None:
        from ..persist import atomic_write

        state_arrays, state = partial.to_state()
        arrays = {name: np.asarray(value) for name, value in state_arrays.items()}
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        data = buffer.getvalue()
        stem = self._stem(shard)
        atomic_write(stem.with_suffix(".npz"), lambda f: f.write(data))
        meta = {**self.tags, "key": shard.key, "index": shard.index, "type": type(partial).__name__, "state": state}
        text = json.dumps(meta, default=json_default).encode()
        atomic_write(stem.with_suffix(".json"), lambda f: f.write(text))
        # the record is written last: a shard counts as finished only once it is there
        self.manifest["files"][str(shard.index)] = {
            "sha256": hashlib.sha256(data).hexdigest(), "json_sha256": hashlib.sha256(text).hexdigest(),
            "arrays": {name: {"dtype": a.dtype.str, "shape": list(a.shape)} for name, a in arrays.items()}}
        self._write_manifest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record_ok(index: Any, record: Any) -> bool:
    """Whether a manifest's record of a finished shard has the fields and types :meth:`ResultsFolder.save` writes."""
    if not isinstance(index, str) or not index.isdigit() or not isinstance(record, dict):
        return False
    arrays = record.get("arrays")
    if not all(isinstance(record.get(k), str) and len(record[k]) == 64 for k in ("sha256", "json_sha256")) \
            or not isinstance(arrays, dict):
        return False
    for spec in arrays.values():
        if not isinstance(spec, dict) or not isinstance(spec.get("dtype"), str) \
                or not isinstance(spec.get("shape"), list) \
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in spec["shape"]):
            return False
    return True


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default=`` for settings and shard metadata: numpy numbers as numbers, tuples as lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} to a shard file")
