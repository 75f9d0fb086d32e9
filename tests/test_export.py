"""save_html: one self-contained file, safe JSON, precomputed replies, precision trade-offs."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.export import page_html, request_key, script_json
from attnwidgets.qk_result import QKCapture
from attnwidgets.widgets.qk import QKStepThrough

EVIL = ["[CLS]", "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "a\u2028b&c", "[SEP]"]


def _data(page: str) -> dict:
    blocks = dict(re.findall(r'<script type="application/json" id="aw-(data|replies)">(.*?)</script>', page, re.S))
    assert set(blocks) == {"data", "replies"}, "the page carries its state and its saved replies"
    return {**json.loads(blocks["data"]), "replies": json.loads(blocks["replies"])}


def _evil_result() -> aw.AttentionResult:
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 5, 5)).astype(np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), EVIL)


def test_script_json_escapes_everything_that_could_end_a_script():
    text = script_json({"t": EVIL})
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"t": EVIL}


def test_request_key_ignores_id_and_order():
    a = request_key({"id": 1, "type": "request", "what": "matrix", "layer": 1, "head": -1})
    b = request_key({"head": -1, "what": "matrix", "layer": 1, "id": 99})
    assert a == b == '{"head":-1,"layer":1,"what":"matrix"}'


def test_heatmap_page_is_self_contained_and_inert(tmp_path):
    w = aw.AttentionHeatmap(_evil_result(), layer=1, head=2)
    path = w.save_html(tmp_path / "page.html")
    page = path.read_text(encoding="utf-8")
    assert page.lower().count("</script>") == 3, "only our own three script blocks end"
    assert "<img" not in page
    urls = set(re.findall(r"https?://[^\"'\\ ]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, f"no URL but the SVG namespace: {urls}"
    assert "default-src 'none'" in page, "a CSP forbids every fetch"
    data = _data(page)
    assert data["state"]["_meta"]["tokens"]["self"][0] == EVIL, "tokens survive the round trip exactly"
    assert data["esm"] and "render" in data["esm"]
    assert data["state"]["_initial"]["matrix"]["dtype"] == "float16", "the first view is stored at the same precision"
    # every layer x (heads + mean), token- and word-level, is precomputed, float16 by default
    assert len(data["replies"]) == 2 * 2 * (3 + 1)
    reply = data["replies"][request_key({"what": "matrix", "kind": "self", "layer": 0, "head": -1, "words": False})]
    assert reply["content"]["dtype"] == "float16"
    got = np.frombuffer(base64.b64decode(reply["buffers"][0]), "<f2").reshape(5, 5)
    np.testing.assert_allclose(got, w.matrix("self", 0, -1), atol=1e-3)


def test_precision_and_scope_trade_size(tmp_path):
    r = aw.run("The cat sat on the mat because it was tired.")
    w = aw.AttentionHeatmap(r)
    sizes = {p: len(page_html(w, precision=p)) for p in ("float32", "float16", "uint8")}
    assert sizes["uint8"] < sizes["float16"] < sizes["float32"]
    view = page_html(w, scope="view")
    assert len(view) < sizes["uint8"] / 3
    assert len(_data(view)["replies"]) == 1
    data = _data(page_html(w, precision="uint8"))
    reply = next(iter(data["replies"].values()))
    assert reply["content"]["dtype"] == "uint8" and reply["content"]["scale"] > 0
    with pytest.raises(ValueError, match="precision"):
        page_html(w, precision="float8")  # type: ignore[arg-type]


def test_qk_page_keeps_signed_vectors_float16_under_uint8():
    rng = np.random.default_rng(1)
    cap = QKCapture.from_vectors(rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)),
                                 ["a", "b", "c", "</script>"])
    w = QKStepThrough(cap)
    data = _data(page_html(w, precision="uint8"))
    assert len(data["replies"]) == 2
    specs = {s["name"]: s for s in next(iter(data["replies"].values()))["content"]["arrays"]}
    assert specs["q"]["dtype"] == "float16", "q has negative components: never quantised to uint8"
    assert specs["weights"]["dtype"] == "uint8"
    assert data["state"]["_meta"]["tokens"][-1] == "</script>"


def test_widget_requests_round_trip():
    w = aw.AttentionHeatmap(_evil_result())
    content, buffers = w.answer({"what": "matrix", "kind": "self", "layer": 1, "head": 0})
    assert content["shape"] == [5, 5] and len(buffers) == 1
