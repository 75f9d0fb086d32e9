"""What of a notebook may reach an exported page (``attnwidgets export``): its HTML sanitised, its scripts dropped.

A notebook is a file someone else may have written. Its markdown cells, ``text/html`` outputs and raw HTML cells can
carry ``<script>``, ``on*=`` handlers, ``javascript:`` links, iframes and remote ``src`` URLs; an
``application/javascript`` output is a script. An exported page runs none of it (as nbconvert's ``SanitizeHTML``
preprocessor decides, with nh3 instead of bleach):

- HTML is cleaned by :func:`clean_html`: an allow-list of tags and attributes (no script, style element, iframe,
  object, form or SVG), ``href`` only to ``http(s)``, ``mailto`` or an anchor on the page, ``src`` only ``data:`` images
  (so nothing is requested), ``style`` attributes only without ``url(``/``expression``/``@import``.
- Outputs keep only what is inert or cleaned (:data:`SAFE_OUTPUT`; ``text/html`` cleaned); others (JavaScript, SVG,
  other libraries' MIME types) are dropped, and an output left with nothing says so in ``text/plain``.
- Markdown is cleaned after it is rendered (the exporter's ``markdown2html``, see :mod:`attnwidgets.nbexport`).

The page's Content-Security-Policy (``script-src`` with the page's own nonce only, nothing remote) is the second wall:
a handler that slipped past the cleaner could still not run. ``--trust`` (one's own notebooks) skips both.
This module imports nothing of ours.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SAFE_OUTPUT", "clean_html", "sanitize_notebook"]

#: Output MIME types kept as they are: the templates escape text and inline images as data: URIs.
SAFE_OUTPUT = frozenset({"text/plain", "image/png", "image/jpeg", "image/gif", "text/markdown", "text/latex"})

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "details", "div", "dl",
    "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
    "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody",
    "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}
_ATTRIBUTES = {
    "*": {"class", "id", "title", "style", "dir", "lang", "align", "role", "aria-label", "aria-hidden"},
    "a": {"href", "name"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "ol": {"start", "type"},
    "details": {"open"},
}
_DATA_IMAGE = re.compile(r"^data:image/(png|jpe?g|gif|webp);base64,[A-Za-z0-9+/=\s]*$", re.IGNORECASE)
_LINK = re.compile(r"^(https?://|mailto:|#)", re.IGNORECASE)
_NO_SRC = re.compile(r"<img(?![^>]*\ssrc=)[^>]*>")
_BAD_STYLE = re.compile(r"url\s*\(|expression\s*\(|@import|javascript:|behavior\s*:", re.IGNORECASE)


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's attribute filter: None drops the attribute."""
    if name == "src":
        return value if _DATA_IMAGE.match(value.strip()) else None
    if name == "href":
        return value if _LINK.match(value.strip()) else None
    if name == "style":
        return None if _BAD_STYLE.search(value) else value
    return value


def clean_html(text: str) -> str:
    """``text`` with everything that could run or fetch taken out (see the module docstring).

    Examples
    --------
    >>> clean_html('<b onclick="x()">hi</b><script>alert(1)</script><img src="https://e.x/a.png" onerror=alert(1)>')
    '<b>hi</b>'
    >>> clean_html('<a href="javascript:alert(1)">x</a> <a href="https://example.org">y</a>')
    '<a rel="noopener noreferrer">x</a> <a href="https://example.org" rel="noopener noreferrer">y</a>'
    """
    import nh3

    clean = str(nh3.clean(text, tags=_TAGS, attributes=_ATTRIBUTES, attribute_filter=_attribute, strip_comments=True,
                          link_rel="noopener noreferrer", url_schemes={"http", "https", "mailto", "data"}))
    return _NO_SRC.sub("", clean)  # an image whose source was removed would show as a broken-image box


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def sanitize_notebook(nb: Any, keep: frozenset[str] = frozenset()) -> int:
    """Clean ``nb`` in place for an untrusted page; returns how many outputs or parts of outputs were dropped.

    ``keep``: MIME types the caller handles itself (the views' saved state, which the page draws with its own code).
    Raw cells are cleaned as HTML (the templates write a raw HTML cell into the page as it is).
    """
    dropped = 0
    for cell in nb.cells:
        if cell.get("cell_type") == "raw":
            cell.source = clean_html(_text(cell.get("source", "")))
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if not isinstance(data, dict):  # streams and errors: the templates escape their text
                outputs.append(out)
                continue
            kept = {k: v for k, v in data.items() if k in SAFE_OUTPUT or k in keep}
            if "text/html" in data:
                kept["text/html"] = clean_html(_text(data["text/html"]))
            gone = sorted(set(data) - set(kept))
            if gone:
                dropped += 1
            if not kept:
                kept = {"text/plain": f"[output not shown in this page: {', '.join(gone)}]"}
            out["data"] = kept
            outputs.append(out)
        if "outputs" in cell:
            cell.outputs = outputs
    return dropped
