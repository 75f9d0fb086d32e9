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

Size (``scope=``): by default (``scope="auto"``) a page saves every view (``"all"``) unless that page would pass
``PAGE_LIMIT`` (20 MB); then it saves only the view on screen (``"view"``) and warns with both sizes and how to force
the full page (``scope="all"``). 20 MB because a browser still opens such a page in a second or two and it can still
be mailed or attached to an issue; a 10,000-word heatmap's full page was 55 MB, a 308-token QK page 72 MB. The size is
estimated before anything is written, from the replies to the export requests as they are encoded: once the running
total passes the limit, the rest is not computed, and the estimate is the mean reply so far times the number of
requests. ``save_html`` prints the size it wrote. A lighter page rather than a refusal: the call that wrote 55 MB
still writes a page (the one view the notebook shows, which is what most calls want), the warning says what was left
out and the one argument that brings it back, and scripts that save many pages do not stop half-way.

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
import warnings
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from .viewdata.labels import visible_text
from .viewdata.wire import bundle_text, quantise_uint8


class SavableView(Protocol):
    """What saving a view needs of it (every :class:`attnwidgets.widgets.AttnWidget` has it). A protocol rather than
    an import of the widgets: the widgets' display bundle saves itself through :mod:`attnwidgets.view_mime`, which
    builds on this module, and an import back would make a circle."""

    _esm: Any

    def get_state(self) -> dict[str, Any]: ...

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]: ...

    def _export_requests(self, scope: str) -> list[dict[str, Any]]: ...


Precision = Literal["float16", "uint8", "float32"]
Scope = Literal["auto", "all", "view"]

#: Bytes a page may have before ``scope="auto"`` saves only the view on screen (20 MB; see the module docstring).
PAGE_LIMIT = 20_000_000

__all__ = ["PAGE_LIMIT", "Precision", "SavableView", "Scope", "format_size", "page_html", "request_key", "save_html",
           "saved_parts", "script_json"]

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

    Packed float32 arrays (``{buffer, dtype, shape}``, see :func:`attnwidgets.viewdata.wire.pack`) are stored at
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


def _state(widget: SavableView, precision: Precision, requests: list[dict[str, Any]], scope: Scope) -> dict[str, Any]:
    state = widget.get_state()
    meta = state.get("_meta")
    if scope == "all" and isinstance(meta, dict) and meta.get("can_words"):
        # A words toggle is offered only when the page saved both levels; else it could only say "not saved".
        levels = {bool(r["words"]) for r in requests if r.get("what") != "labels" and "words" in r}
        if levels != {False, True}:
            state["_meta"] = {**meta, "can_words": False}
    return {k: _encode_buffers(v, precision) for k, v in state.items() if k not in _SKIP}


def format_size(n: int) -> str:
    """A byte count as people read it (powers of 1000, as file managers show sizes).

    Examples
    --------
    >>> format_size(512), format_size(2_345_678), format_size(55_000_000)
    ('512 bytes', '2.3 MB', '55.0 MB')
    """
    if n < 1000:
        return f"{n} bytes"
    return f"{n / 1000:.0f} kB" if n < 1_000_000 else f"{n / 1_000_000:.1f} MB"


def _replies(widget: SavableView, requests: list[dict[str, Any]], precision: Precision, limit: float | None
             ) -> tuple[dict[str, dict[str, Any]], int]:
    """The encoded replies to ``requests`` and their estimated size in the page (bytes of their JSON).

    With a ``limit``, encoding stops once the running size passes it; the size returned is then the estimate for all
    of them (the mean reply so far times the number of requests) and the replies are incomplete.
    """
    replies: dict[str, dict[str, Any]] = {}
    size = 0
    for i, request in enumerate(requests, 1):
        content, buffers = widget.answer(request)
        key = request_key(request)
        replies[key] = _shrink_reply(content, list(buffers), precision)
        size += len(script_json(replies[key])) + len(script_json(key)) + 2  # the key, ":" and ","
        if limit is not None and size > limit and i < len(requests):
            return replies, round(size / i * len(requests))
    return replies, size


def saved_parts(widget: SavableView, precision: Precision, scope: Literal["all", "view"], limit: float | None,
                overhead: int = 0) -> tuple[dict[str, Any], dict[str, dict[str, Any]], int]:
    """What a saved view carries with ``scope`` ("all" or "view"): (``{"state", "widget", "scope"}``, replies keyed
    by :func:`request_key`, its size in bytes). ``save_html`` and the notebook MIME state
    (:mod:`attnwidgets.view_mime`) both save a view with it.

    The size is that of the data's and the replies' JSON plus ``overhead`` (what else the container holds: the
    page's scripts and markup). With a ``limit``, replies stop being computed once the size passes it; the size is
    then an estimate (see :func:`_replies`) and the replies are incomplete.
    """
    requests = widget._export_requests(scope)
    data = {"state": _state(widget, precision, requests, scope), "widget": type(widget).__name__, "scope": scope}
    base = len(script_json(data)) + overhead
    replies, size = _replies(widget, requests, precision, None if limit is None else limit - base)
    return data, replies, base + size


def _parts(widget: SavableView, precision: Precision, scope: Literal["all", "view"], limit: float | None
           ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], int]:
    """(data block, replies, estimated page size) of ``widget``'s page saved with ``scope`` ("all" or "view")."""
    esm = widget._esm
    overhead = len(script_json(esm)) + 7 + len(bundle_text("page")) + 2000  # ',"esm":' and it, the host, the markup
    data, replies, size = saved_parts(widget, precision, scope, limit, overhead)
    return {"esm": esm, **data}, replies, size


def _choose(widget: SavableView, precision: Precision, scope: Scope, limit: float
            ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], int]:
    """The page's parts for ``scope``; "auto" is "all" unless that passes ``limit``, then "view" with a warning."""
    if scope != "auto":
        return _parts(widget, precision, scope, None)
    data, replies, size = _parts(widget, precision, "all", limit)
    if size <= limit:
        return data, replies, size
    data, replies, light = _parts(widget, precision, "view", None)
    warnings.warn(
        f"the full page of this {type(widget).__name__} (every view saved, scope='all') would be about "
        f"{format_size(size)}, over the {format_size(int(limit))} limit (attnwidgets.export.PAGE_LIMIT), so only the "
        f"view on screen is saved (scope='view', {format_size(light)}); other views say 'not saved in this page'. "
        f"For the full page pass scope='all'" + ("" if precision == "uint8" else " (precision='uint8' makes it "
                                                  "smaller)") + ".",
        UserWarning, stacklevel=5)  # the call of save_html or page_html
    return data, replies, light


def page_html(widget: SavableView, *, title: str | None = None, precision: Precision = "float16",
              scope: Scope = "auto", limit: float = PAGE_LIMIT) -> str:
    """The self-contained HTML page of a widget (see :func:`save_html`)."""
    return _page(widget, title, precision, scope, limit)[0]


def _page(widget: SavableView, title: str | None, precision: Precision, scope: Scope, limit: float
          ) -> tuple[str, str]:
    """(the page, the scope it saved: "all" or "view")."""
    if precision not in ("float16", "uint8", "float32"):
        raise ValueError(f"precision must be 'float16', 'uint8' or 'float32', got {precision!r}")
    if scope not in ("auto", "all", "view"):
        raise ValueError("scope must be 'auto' (every view unless the page would pass PAGE_LIMIT), 'all' (every view "
                         f"precomputed) or 'view' (the one on screen), got {scope!r}")
    esm = widget._esm  # anywidget's trait: the front end this widget runs (our bundle's text)
    if not isinstance(esm, str) or not esm:
        raise TypeError(f"{type(widget).__name__} has no front-end bundle to export")
    host = bundle_text("page")
    if "</script" in host.lower():  # esbuild output never has it, but a page must never be cut short
        host = host.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    data, replies, _ = _choose(widget, precision, scope, limit)
    # The tab title shows user text too: invisible and bidi-control characters as ⟨U+XXXX⟩, as the views do.
    heading = visible_text(title) if title is not None else f"{type(widget).__name__} · attnwidgets"
    page = (
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
    return page, str(data["scope"])


def save_html(widget: SavableView, path: str | Path, *, title: str | None = None, precision: Precision = "float16",
              scope: Scope = "auto", limit: float = PAGE_LIMIT) -> Path:
    """Write ``widget`` as one self-contained HTML file (JS and data inlined, no network), print its size and return
    its path.

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
    scope : {"auto", "all", "view"}
        "all": every view the page can switch to is precomputed (heatmap: all layers x heads + mean, of each kind).
        "view": only the view on screen (smallest file; other views show a "not saved in this page" message).
        "auto" (default): "all", unless that page would pass ``limit`` bytes; then "view", with a warning that gives
        both sizes and says to pass ``scope="all"`` for the full page.
    limit : float
        The size "auto" keeps to, in bytes (default ``PAGE_LIMIT``, 20 MB).
    """
    path = Path(path)
    text, saved = _page(widget, title, precision, scope, limit)
    path.write_text(text, encoding="utf-8")
    what = "every view works offline" if saved == "all" else "the view on screen only"
    print(f"wrote {path} ({format_size(path.stat().st_size)}, {what})")
    return path

