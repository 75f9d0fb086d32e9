"""``save_html``: one self-contained HTML file per view, that renders offline in any modern browser.

What goes in the file:

- the widget's own ES module (the same ``static/<name>.js`` the notebook loads) and a small host
  (``static/page.js``, from ``js/src/page.ts``) that imports it from a ``blob:`` URL;
- the widget's synced state, binary buffers base64-encoded;
- precomputed replies to the requests the page would otherwise send to the kernel (for the heatmap: every layer x
  head, plus the mean of heads, of each attention kind; word level too, with its labels, for inputs up to 256 tokens;
  without it the page offers no words toggle). They sit in a
  second JSON block after the host script and are parsed on the first request, so they never delay the first
  paint. The host's static model answers from them; a request that was not precomputed gets an error reply, which
  the widget shows in its red message box ("not saved in this page") rather than a blank view.

Everything is inlined: no CDN, no network. A Content-Security-Policy (``default-src 'none'``) makes that a promise:
the page could not fetch anything even if it tried. All data sits in one ``<script type="application/json">`` block
with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so no token (not even ``</script>``) can end the block or run.

Precision trade-off (``precision=``): replies are stored as ``"float16"`` by default (half the bytes of float32;
about 3 significant digits, so the 4th decimal the tooltips show can be off by one), ``"uint8"`` for non-negative
arrays such as attention weights (a quarter of float32: 1/255 of the map's maximum, which no colour map can show
anyway, but coarse numbers on hover; a causal mask's NaN keeps byte 255 of its own, so masked cells stay grey and say
"masked"; signed arrays such as q and k fall back to float16), or ``"float32"`` (exact).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .viewdata.wire import bundle_text, quantise_uint8

if TYPE_CHECKING:
    from .widgets import AttnWidget

Precision = Literal["float16", "uint8", "float32"]
Scope = Literal["all", "view"]

__all__ = ["Precision", "Scope", "page_html", "request_key", "save_html", "script_json"]

# ipywidgets' own traits, which the page does not need.
_SKIP = {"_esm", "_css", "_anywidget_id", "_dom_classes", "comm", "keys", "layout", "log", "tabbable", "tooltip",
         "_model_module", "_model_module_version", "_model_name", "_view_count", "_view_module",
         "_view_module_version", "_view_name"}

CSP = ("default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; img-src data: blob:; "
       "connect-src 'none'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'")


def script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: ``<``, ``>``, ``&``, U+2028 and U+2029 escaped.

    Those characters can only occur inside JSON strings, where ``\\u003c`` etc. mean the same thing.

    Examples
    --------
    >>> script_json({"t": "</script><b>&"})
    '{"t":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, safe in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                      ("\u2029", "\\u2029")):
        text = text.replace(raw, safe)
    return text


def request_key(request: dict[str, Any]) -> str:
    """The key a request is stored under: its fields but ``type`` and ``id``, sorted, compact JSON.

    js/src/page.ts computes the same string (``requestKey``) for each request the widget sends.

    Examples
    --------
    >>> request_key({"type": "request", "id": 7, "what": "matrix", "layer": 2, "head": -1})
    '{"head":-1,"layer":2,"what":"matrix"}'
    """
    fields = {k: v for k, v in request.items() if k not in ("type", "id")}
    return json.dumps(fields, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _b64(buffer: Any) -> dict[str, str]:
    return {"$b64": base64.b64encode(bytes(buffer)).decode("ascii")}


def _encode_buffers(value: Any, precision: Precision = "float32") -> Any:
    """Replace every bytes-like value in nested state with ``{"$b64": ...}`` (the page turns it back into bytes).

    Packed float32 arrays (``{buffer, dtype, shape}``, see :func:`attnwidgets.widgets.pack`) are stored at
    ``precision`` on the way.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if isinstance(value, dict):
        packed = isinstance(value.get("buffer"), (bytes, memoryview)) and "shape" in value
        if packed and value.get("dtype") == "float32":
            spec, data = _shrink({k: v for k, v in value.items() if k != "buffer"}, value["buffer"], precision)
            return {**spec, "buffer": _b64(data)}
        return {k: _encode_buffers(v, precision) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode_buffers(v, precision) for v in value]
    return value


def _shrink(spec: dict[str, Any], buffer: Any, precision: Precision) -> tuple[dict[str, Any], bytes]:
    """Re-encode one float32 array described by ``spec`` (shape, dtype) at ``precision``."""
    if spec.get("dtype") != "float32" or precision == "float32":
        return spec, bytes(buffer)
    a = np.frombuffer(bytes(buffer), dtype="<f4")
    spec = dict(spec)
    values = a[~np.isnan(a)]
    # uint8 for non-negative finite arrays; NaN (a masked cell) keeps a byte of its own (quantise_uint8).
    if precision == "uint8" and (values.size == 0 or (values.min() >= 0 and np.isfinite(values).all())):
        data, extra = quantise_uint8(a)
        spec.update(extra)
        return spec, data
    spec["dtype"] = "float16"
    return spec, a.astype("<f2").tobytes()


def _shrink_reply(content: dict[str, Any], buffers: list[Any], precision: Precision) -> dict[str, Any]:
    """A reply with its buffers at ``precision``: handles ``{shape, dtype}`` + one buffer and ``{arrays: [...]}``."""
    content = dict(content)
    out: list[bytes] = [bytes(b) for b in buffers]
    if "dtype" in content and "shape" in content and out:
        spec, out[0] = _shrink({"dtype": content["dtype"], "shape": content["shape"]}, out[0], precision)
        content.update(spec)
    elif isinstance(content.get("arrays"), list):
        arrays = []
        for i, spec in enumerate(content["arrays"]):
            spec, out[i] = _shrink(spec, out[i], precision)
            arrays.append(spec)
        content["arrays"] = arrays
    return {"content": content, "buffers": [_b64(b)["$b64"] for b in out]}


def _state(widget: AttnWidget, precision: Precision, requests: list[dict[str, Any]], scope: Scope) -> dict[str, Any]:
    state = widget.get_state()
    meta = state.get("_meta")
    if scope == "all" and isinstance(meta, dict) and meta.get("can_words"):
        # A words toggle is offered only when the page saved both levels; else it could only say "not saved".
        levels = {bool(r["words"]) for r in requests if r.get("what") != "labels" and "words" in r}
        if levels != {False, True}:
            state["_meta"] = {**meta, "can_words": False}
    return {k: _encode_buffers(v, precision) for k, v in state.items() if k not in _SKIP}


def _replies(widget: AttnWidget, requests: list[dict[str, Any]], precision: Precision
             ) -> Iterator[tuple[str, dict[str, Any]]]:
    for request in requests:
        content, buffers = widget.answer(request)
        yield request_key(request), _shrink_reply(content, list(buffers), precision)


def page_html(widget: AttnWidget, *, title: str | None = None, precision: Precision = "float16",
              scope: Scope = "all") -> str:
    """The self-contained HTML page of a widget (see :func:`save_html`)."""
    if precision not in ("float16", "uint8", "float32"):
        raise ValueError(f"precision must be 'float16', 'uint8' or 'float32', got {precision!r}")
    if scope not in ("all", "view"):
        raise ValueError(f"scope must be 'all' (every view precomputed) or 'view' (the one on screen), got {scope!r}")
    esm = widget._esm  # anywidget's trait: the front end this widget runs (our bundle's text)
    if not isinstance(esm, str) or not esm:
        raise TypeError(f"{type(widget).__name__} has no front-end bundle to export")
    host = bundle_text("page")
    if "</script" in host.lower():  # esbuild output never has it, but a page must never be cut short
        host = host.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    requests = widget._export_requests(scope)
    data = {"esm": esm, "state": _state(widget, precision, requests, scope),
            "widget": type(widget).__name__, "scope": scope}
    replies = dict(_replies(widget, requests, precision))
    heading = title if title is not None else f"{type(widget).__name__} · attnwidgets"
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(heading)}</title>\n"
        "<style>body{margin:16px;background:#fff;font-family:system-ui,sans-serif}"
        "#aw-status{color:#b00020;white-space:pre-wrap}</style>\n</head>\n<body>\n"
        "<div id=\"aw-status\" role=\"alert\"></div>\n<div id=\"aw-widget\"></div>\n"
        f"<script type=\"application/json\" id=\"aw-data\">{script_json(data)}</script>\n"
        # A classic script runs as soon as it is read, so the view paints while the saved replies still load.
        f"<script>(function () {{\n{host}\n}})();</script>\n"
        # The replies come last and are parsed on the first request, so they never delay the first paint.
        f"<script type=\"application/json\" id=\"aw-replies\">{script_json(replies)}</script>\n"
        "<noscript>This page draws with JavaScript; enable it to see the attention view.</noscript>\n"
        "</body>\n</html>\n"
    )


def save_html(widget: AttnWidget, path: str | Path, *, title: str | None = None, precision: Precision = "float16",
              scope: Scope = "all") -> Path:
    """Write ``widget`` as one self-contained HTML file (JS and data inlined, no network) and return its path.

    Parameters
    ----------
    widget : AttnWidget
        Any attnwidgets view.
    path : str or Path
        Where to write (``.html``).
    title : str, optional
        The page title (default: the widget's class name).
    precision : {"float16", "uint8", "float32"}
        How precomputed arrays are stored; see the module docstring for the trade-off.
    scope : {"all", "view"}
        "all": every view the page can switch to is precomputed (heatmap: all layers x heads + mean, of each kind).
        "view": only the view on screen (smallest file; other views show a "not saved in this page" message).
    """
    path = Path(path)
    path.write_text(page_html(widget, title=title, precision=precision, scope=scope), encoding="utf-8")
    return path
