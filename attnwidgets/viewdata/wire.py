"""The wire format: how arrays and front-end bundles reach a page, in the notebook and in a saved HTML file alike.

An array crosses as ``{buffer, dtype, shape}`` (:func:`pack`; ipywidgets sends the bytes as a binary buffer, and
:mod:`attnwidgets.export` inlines the same bytes as base64), and a widget's front end is the built bundle
``attnwidgets/static/<name>.js`` (:func:`bundle_text`). ``js/src/shared/buffers.ts`` decodes what :func:`pack`
and :func:`quantise_uint8` write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MASKED_BYTE", "STATIC", "bundle", "bundle_text", "pack", "quantise_uint8"]

#: Where the built front-end bundles live (``npm run build`` in js/ writes them; the wheel ships them).
STATIC = Path(__file__).resolve().parent.parent / "static"


def bundle(name: str) -> Path:
    """Path of a built widget bundle, with a clear error when the JS was never built.

    Examples
    --------
    >>> bundle("heatmap").name
    'heatmap.js'
    """
    path = STATIC / f"{name}.js"
    if not path.exists():
        raise FileNotFoundError(
            f"the widget bundle {path.name} is missing from {STATIC}. Build the front end with "
            "`npm install && npm run build` in js/, or reinstall with `pip install .` (which builds it)."
        )
    return path


def bundle_text(name: str) -> str:
    """The bundle's source, re-read when the file changed (so `npm run watch` + a new widget picks up edits).

    Examples
    --------
    >>> bundle_text("heatmap") == bundle("heatmap").read_text(encoding="utf-8")
    True
    """
    path = bundle(name)
    stamp = path.stat().st_mtime_ns
    hit = _BUNDLES.get(name)
    if hit is None or hit[0] != stamp:
        hit = (stamp, path.read_text(encoding="utf-8"))
        _BUNDLES[name] = hit
    return hit[1]


_BUNDLES: dict[str, tuple[int, str]] = {}

#: The byte a uint8 array reserves for NaN (a masked cell) when it has any; its values then use 0..254.
MASKED_BYTE = 255


def quantise_uint8(array: np.ndarray) -> tuple[bytes, dict[str, Any]]:
    """A non-negative array as bytes of 0..255 of its maximum, and the spec that decodes them.

    ``scale`` is the value byte ``top`` stands for (``top`` 255 unless given). NaN, a masked cell (a causal head's
    future keys), must not become 0 (a weight of zero looks the same): when the array has NaN, byte 255 stands for
    NaN (``masked``) and the values use 0..254 (``top`` 254). js/src/shared/buffers.ts ``decode`` reads both forms.

    Examples
    --------
    >>> data, spec = quantise_uint8(np.array([0.5, 1.0, np.nan]))
    >>> list(data), spec
    ([127, 254, 255], {'dtype': 'uint8', 'scale': 1.0, 'top': 254, 'masked': 255})
    """
    a = np.asarray(array, dtype=np.float32)
    nan = np.isnan(a)
    values = a[~nan]
    scale = float(values.max()) if values.size and values.max() > 0 else 1.0
    top = 254 if nan.any() else 255
    q = np.clip(np.rint(np.where(nan, 0, a) / scale * top), 0, top).astype(np.uint8)
    spec: dict[str, Any] = {"dtype": "uint8", "scale": scale}
    if nan.any():
        q[nan] = MASKED_BYTE
        spec.update(top=top, masked=MASKED_BYTE)
    return np.ascontiguousarray(q).tobytes(), spec


def pack(array: np.ndarray, dtype: str = "float32") -> dict[str, Any]:
    """A numpy array as ``{buffer, dtype, shape}`` for the front end (ipywidgets sends the bytes as a binary buffer).

    ``dtype`` "float32" keeps exact values, "float16" halves the bytes, "uint8" quantises to 0..255 of the maximum
    (``scale`` tells the front end what 255 means; NaN keeps its own byte, see :func:`quantise_uint8`).

    Examples
    --------
    >>> p = pack(np.array([[0.5, 1.0]]), "uint8")
    >>> p["shape"], p["dtype"], p["scale"], bytes(p["buffer"])
    ([1, 2], 'uint8', 1.0, b'\\x80\\xff')
    """
    a = np.asarray(array)
    out: dict[str, Any] = {"shape": [int(s) for s in a.shape], "dtype": dtype}
    if dtype == "float32":
        data = np.ascontiguousarray(a, dtype="<f4").tobytes()
    elif dtype == "float16":
        data = np.ascontiguousarray(a, dtype="<f2").tobytes()
    elif dtype == "uint8":
        data, spec = quantise_uint8(a)
        out.update(spec)
    else:
        raise ValueError(f"unknown dtype {dtype!r}: use float32, float16 or uint8")
    out["buffer"] = memoryview(data)
    return out
