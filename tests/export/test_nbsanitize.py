"""What of a notebook reaches an exported page (attnwidgets/nbsanitize.py): inert HTML only, no script outputs.

The browser half (tests/browser/test_nbexport_browser.py) opens such a page and counts dialogs and requests.
"""

from __future__ import annotations

import nbformat
import pytest

from attnwidgets.nbsanitize import clean_html, sanitize_notebook

pytest.importorskip("nh3")

RUNS = [
    "<script>alert(1)</script>",
    "<script src=https://evil.example/x.js></script>",
    "<img src=x onerror=alert(1)>",
    '<img src="https://evil.example/pixel.png">',
    '<a href="javascript:alert(1)">click</a>',
    '<a href=" JaVaScRiPt:alert(1)">click</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<svg onload=alert(1)><circle r=4 /></svg>',
    '<object data="https://evil.example/x.swf"></object>',
    '<embed src="https://evil.example/x">',
    '<link rel=stylesheet href="https://evil.example/x.css">',
    '<style>@import url(https://evil.example/x.css)</style>',
    '<div style="background:url(https://evil.example/bg.png)">x</div>',
    '<form action="https://evil.example"><input name=q></form>',
    '<meta http-equiv="refresh" content="0;url=https://evil.example">',
    '<base href="https://evil.example/">',
    '<math><mtext><img src=x onerror=alert(1)></mtext></math>',
    '<details open ontoggle=alert(1)>x</details>',
    '<b onmouseover=alert(1)>hover</b>',
]


@pytest.mark.parametrize("payload", RUNS)
def test_nothing_that_runs_or_fetches_survives(payload):
    out = clean_html(payload).lower()
    for bad in ("<script", "onerror", "onload", "onmouseover", "ontoggle", "javascript:", "<iframe", "<svg", "<object",
                "<embed", "<link", "<style", "url(", "<form", "<meta", "<base", "https://evil.example"):
        assert bad not in out, f"{payload!r} -> {out!r}"


def test_what_a_notebook_means_to_show_stays():
    html = ('<table class="dataframe"><tr><th>a</th><td style="color: red">1</td></tr></table>'
            '<a href="https://example.org/paper">paper</a> <a href="#sec-2">§2</a>'
            '<img alt="dot" src="data:image/png;base64,iVBORw0KGgo=">'
            '<details><summary>Show answer</summary><p>$x^2$</p></details>')
    out = clean_html(html)
    assert '<td style="color: red">1</td>' in out and 'href="https://example.org/paper"' in out
    assert 'href="#sec-2"' in out and 'src="data:image/png;base64,iVBORw0KGgo="' in out
    assert "<details><summary>Show answer</summary><p>$x^2$</p></details>" in out


def test_script_outputs_are_dropped_and_html_is_cleaned():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"application/javascript": "alert(1)"}),
        nbformat.v4.new_output("display_data", data={"text/html": "<b onclick=alert(1)>b</b>", "text/plain": "b"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg onload=alert(1)/>", "text/plain": "fig"}),
        nbformat.v4.new_output("display_data", data={"application/vnd.attnwidgets.view+json": {"version": 1}}),
        nbformat.v4.new_output("stream", name="stdout", text="<script>alert(1)</script>"),
    ]
    raw = nbformat.v4.new_raw_cell("<script>alert(1)</script><p>raw</p>")
    raw.metadata["raw_mimetype"] = "text/html"
    nb.cells = [cell, raw]
    dropped = sanitize_notebook(nb, keep=frozenset({"application/vnd.attnwidgets.view+json"}))
    js, html, svg, view, stream = (o for o in nb.cells[0].outputs)
    assert js["data"] == {"text/plain": "[output not shown in this page: application/javascript]"}
    assert html["data"] == {"text/html": "<b>b</b>", "text/plain": "b"}
    assert svg["data"] == {"text/plain": "fig"}
    assert view["data"] == {"application/vnd.attnwidgets.view+json": {"version": 1}}  # the caller draws it
    assert stream["text"] == "<script>alert(1)</script>"  # the templates escape streams
    assert nb.cells[1].source == "<p>raw</p>"
    assert dropped == 2
