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
    path = aw.save_html(w, tmp_path / "page.html")
    page = path.read_text(encoding="utf-8")
    assert page.lower().count("</script>") == 3, "only our own three script blocks end"
    assert "<img" not in page
    urls = set(re.findall(r"https?://[^\"'\\ ]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, f"no URL but the SVG namespace: {urls}"
    assert "default-src 'none'" in page, "a CSP forbids every fetch"
    data = _data(page)
    assert data["state"]["_meta"]["tokens"]["self"][0] == EVIL, "tokens survive the round trip exactly"
    assert data["esm"] and "render" in data["esm"]
    assert data["state"]["_payload"]["matrix"]["dtype"] == "float16", "the first view is stored at the same precision"
    # every layer x (heads + mean), token- and word-level, is precomputed, float16 by default, and the word labels;
    # and the row a click on each of the 5 tokens selects in the map on screen
    assert len(data["replies"]) == 2 * 2 * (3 + 1) + 1 + 5
    click = {"what": "span", "kind": "self", "layer": 1, "head": 2, "words": False, "selection": [3], "combine": "mean"}
    assert request_key(click) in data["replies"], "a click on a token is answered without a kernel"
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
    saved = {"view": len(json.dumps(_data(view)["replies"])),  # the data each page carries (its JS is the same)
             "all": len(json.dumps(_data(page_html(w, precision="uint8"))["replies"]))}
    assert saved["view"] < saved["all"] / 10
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


def _replies_of(data: dict, what: str) -> dict:
    return {k: v for k, v in data["replies"].items() if json.loads(k)["what"] == what}


def test_model_view_page_saves_every_head_at_the_page_precision():
    w = aw.ModelView(_evil_result(), layer=1, head=2)
    data = _data(page_html(w))
    maps = {k for k in data["replies"] if '"what":"matrix"' in k}
    assert maps == {request_key({"what": "matrix", "kind": "self", "layer": layer, "head": head})
                    for layer in range(2) for head in range(3)}, "every head of every layer"
    assert set(data["replies"]) - maps == {request_key({"what": "span", "kind": "self", "layer": 1, "head": 2,
                                                        "selection": [i], "combine": "mean"}) for i in range(5)}, \
        "and the row a click on each token selects in the head on screen"
    reply = data["replies"][request_key({"what": "matrix", "kind": "self", "layer": 1, "head": 0})]
    assert reply["content"]["dtype"] == "float16" and reply["content"]["shape"] == [5, 5]
    got = np.frombuffer(base64.b64decode(reply["buffers"][0]), "<f2").reshape(5, 5)
    np.testing.assert_allclose(got, w.matrix("self", 1, 0), atol=1e-3)
    uint8 = _data(page_html(w, precision="uint8"))
    assert {r["content"]["dtype"] for r in uint8["replies"].values()} == {"uint8"}
    view = _data(page_html(w, scope="view"))
    assert list(view["replies"]) == [request_key({"what": "matrix", "kind": "self", "layer": 1, "head": 2})]


def test_model_view_page_of_an_encoder_decoder_saves_every_kind():
    rng = np.random.default_rng(1)
    enc, dec = rng.random((2, 3, 5, 5), np.float32), np.tril(rng.random((2, 3, 7, 7), np.float32))
    cross = rng.random((2, 3, 7, 5), np.float32)
    enc, dec, cross = (x / x.sum(-1, keepdims=True) for x in (enc, dec, cross))  # rows of probabilities
    r = aw.AttentionResult.from_arrays(enc, list("abcde"), kind="encoder-decoder", target_tokens=list("ABCDEFG"),
                                       decoder_attention=dec, cross_attention=cross)
    data = _data(page_html(aw.ModelView(r)))
    matrices = _replies_of(data, "matrix")
    assert len(matrices) == 3 * 2 * 3
    thumbs = _replies_of(data, "thumbs")
    assert {json.loads(k)["kind"] for k in thumbs} == {"decoder", "cross"}, "the kind selector works offline"
    cross = thumbs[request_key({"what": "thumbs", "kind": "cross"})]["content"]
    assert cross["shape"] == [2, 3, 7, 5] and cross["dtype"] == "uint8"
    masked = matrices[request_key({"what": "matrix", "kind": "decoder", "layer": 0, "head": 0})]
    got = np.frombuffer(base64.b64decode(masked["buffers"][0]), "<f2").reshape(7, 7)
    assert np.isnan(got[0, 1]) and not np.isnan(got[1, 0]), "the causal mask survives as NaN"


def test_head_view_page_saves_every_layer_as_sparse_rows():
    from attnwidgets.viewdata.lines import unpack

    rng = np.random.default_rng(2)
    a = rng.random((3, 4, 40, 40)).astype(np.float32) ** 30  # peaky rows: few weights above min_weight
    a /= a.sum(-1, keepdims=True)
    w = aw.HeadView(aw.AttentionResult.from_arrays(a, [f"t{i}" for i in range(39)] + ["</script>"]), layer=1)
    data = _data(page_html(w))
    assert set(data["replies"]) == {request_key({"what": "layer", "kind": "self", "layer": layer, "words": words})
                                    for layer in range(3) for words in (False, True)} | {
        request_key({"what": "labels", "words": True})}, "both levels of every layer, and the word labels"
    assert data["state"]["_payload"]["heads"]["format"] == "sparse"
    for layer in range(3):
        reply = data["replies"][request_key({"what": "layer", "kind": "self", "layer": layer, "words": False})]
        c = reply["content"]
        assert c["format"] == "sparse" and c["floor"] == w.min_weight
        parts = {p["name"]: {**p, "buffer": base64.b64decode(b)} for p, b in zip(c["parts"], reply["buffers"],
                                                                                 strict=True)}
        got = unpack({**c, **parts})
        a16 = a[layer].astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(got, np.where(a16 >= w.min_weight, a16, 0))
    def saved_bytes(widget: aw.HeadView) -> int:
        return sum(len(b) for r in _data(page_html(widget))["replies"].values() for b in r["buffers"])

    assert saved_bytes(w) < saved_bytes(aw.HeadView(w.result, min_weight=0.0)) / 3, "sparse rows: a smaller page"
    view = _data(page_html(w, scope="view"))
    assert list(view["replies"]) == [request_key({"what": "layer", "kind": "self", "layer": 1, "words": False})]


def _decode_uint8(spec: dict, b64: str) -> np.ndarray:
    """What js/src/shared/buffers.ts decode() makes of a saved uint8 array."""
    raw = np.frombuffer(base64.b64decode(b64), np.uint8).reshape(spec["shape"])
    out = raw * (spec["scale"] / spec.get("top", 255))
    return np.where(raw == spec.get("masked", -1), np.nan, out)


def _causal_result() -> aw.AttentionResult:
    rng = np.random.default_rng(3)
    a = np.tril(rng.random((2, 3, 6, 6), np.float32)) + 0.01 * np.eye(6, dtype=np.float32)
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), list("abcdef"), kind="decoder")


@pytest.mark.parametrize("view", ["heatmap", "model"])
def test_uint8_pages_keep_the_causal_mask(view):
    # uint8 used to turn NaN (a future key) into byte 0: masked cells looked like a weight of zero.
    r = _causal_result()
    w = aw.AttentionHeatmap(r, layer=1, head=2) if view == "heatmap" else aw.ModelView(r, layer=1, head=2)
    data = _data(page_html(w, precision="uint8"))
    key = {"what": "matrix", "kind": "self", "layer": 1, "head": 2}
    reply = data["replies"][request_key({**key, "words": False} if view == "heatmap" else key)]
    spec = reply["content"]
    assert spec["dtype"] == "uint8" and spec["masked"] == 255 and spec["top"] == 254
    got = _decode_uint8(spec, reply["buffers"][0])
    want = np.where(np.triu(np.ones((6, 6), bool), 1), np.nan, r.attention[1, 2])  # the future: masked
    assert np.array_equal(np.isnan(got), np.isnan(want)), "every future key is masked, and nothing else"
    assert np.isnan(want).sum() == 15
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], atol=want[~np.isnan(want)].max() / 254)
    if view == "heatmap":  # the first view travels in the state, quantised the same way
        first = data["state"]["_payload"]["matrix"]
        assert first["dtype"] == "uint8" and first["masked"] == 255
        assert np.array_equal(np.isnan(_decode_uint8(first, first["buffer"]["$b64"])), np.isnan(want))
    # An array without NaN keeps all 256 levels and no masked byte.
    plain = _data(page_html(aw.AttentionHeatmap(_evil_result()), precision="uint8"))
    spec = next(iter(plain["replies"].values()))["content"]
    assert "masked" not in spec and spec.get("top", 255) == 255


@pytest.mark.parametrize("view", ["heatmap", "head"])
def test_saved_pages_carry_what_the_words_toggle_needs(view):
    # The page used to keep token labels over word-level matrices (heatmap) or to save no word level at all
    # (HeadView): its words checkbox garbled the picture or only said "not saved".
    toks = ["[CLS]", "play", "##ing", "[SEP]", "it", "[SEP]"]
    a = np.random.default_rng(4).random((2, 3, 6, 6)).astype(np.float32)
    r = aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), toks,
                                       word_ids=np.array([-1, 0, 0, -1, 1, -1]))
    w = aw.AttentionHeatmap(r) if view == "heatmap" else aw.HeadView(r)
    data = _data(page_html(w))
    words = ["[CLS]", "playing", "[SEP]", "it", "[SEP]"]
    assert data["state"]["_meta"]["tokens"]["self"] == [toks, toks], "token labels in the state"
    labels = data["replies"][request_key({"what": "labels", "words": True})]["content"]
    assert labels["tokens"]["self"] == [words, words], "word labels saved for the toggle"
    what = "matrix" if view == "heatmap" else "layer"
    saved = [json.loads(k) for k in data["replies"] if json.loads(k)["what"] == what]
    assert {q["words"] for q in saved} == {False, True}
    assert data["state"]["_meta"]["can_words"] is True
    # Saved while showing words, the first view carries its word labels for the first paint.
    w.words = True
    first = _data(page_html(w))["state"]["_payload"]
    assert first["key"].endswith("/w") and first["labels"] == labels


def test_a_page_without_word_level_views_offers_no_words_toggle():
    toks = [f"t{i}" for i in range(300)]  # > 256 tokens: word level is not saved unless it is on screen
    a = np.full((1, 2, 300, 300), 1 / 300, np.float32)
    w = aw.HeadView(aw.AttentionResult.from_arrays(a, toks))
    assert w._meta["can_words"]
    data = _data(page_html(w))
    assert {json.loads(k)["words"] for k in data["replies"]} == {False}
    assert data["state"]["_meta"]["can_words"] is False, "no checkbox that could only say 'not saved'"


@pytest.mark.parametrize("view", ["AttentionHeatmap", "ModelView", "HeadView", "EntropyBars", "HeadStatsGrid",
                                  "HeadClusterMap", "QKStepThrough"])
def test_every_view_page_keeps_hostile_text_inside_its_data(view):
    # Tokens in the views that show them; the model name and the text in every title (the stat views).
    r = _evil_result()
    r = aw.AttentionResult.from_arrays(r.attention, EVIL, name="</script><svg onload=alert(3)>", text=EVIL[1])
    if view == "QKStepThrough":
        rng = np.random.default_rng(5)
        w = QKStepThrough(QKCapture.from_vectors(*(rng.normal(size=(2, 5, 4)) for _ in range(3)), EVIL))
    else:
        w = getattr(aw, view)(r)
    page = page_html(w)
    assert page.lower().count("</script") == 3, "only the page's own three script blocks end"
    assert "<img" not in page and "<svg" not in page
    state = json.dumps(_data(page)["state"], ensure_ascii=False)
    assert EVIL[1] in state or "</script><svg onload=alert(3)>" in state, "the hostile text survives, escaped"


def _long_heatmap() -> aw.AttentionHeatmap:
    """2 layers x 4 heads x 1024 tokens, made with from_arrays (no model): its full page is about 28 MB."""
    rng = np.random.default_rng(0)
    n = 1024
    a = rng.random((2, 4, n, n), dtype=np.float32)
    a /= a.sum(-1, keepdims=True)
    return aw.AttentionHeatmap(aw.AttentionResult.from_arrays(a, [f"w{i}" for i in range(n)]))


def test_a_page_past_the_limit_saves_the_view_on_screen_and_says_so(tmp_path, capsys):
    from attnwidgets.export import PAGE_LIMIT

    w = _long_heatmap()
    with pytest.warns(UserWarning, match="scope='all'") as caught:
        path = aw.save_html(w, tmp_path / "long.html")
    message = str(caught[0].message)
    size = path.stat().st_size
    assert size < PAGE_LIMIT and _data(path.read_text(encoding="utf-8"))["scope"] == "view"
    assert "over the 20.0 MB limit" in message and "scope='view'" in message, message
    printed = capsys.readouterr().out
    assert f"wrote {path} (" in printed and "MB" in printed and "the view on screen only" in printed, printed
    # The estimate (made before the page was written, from the replies encoded so far) is near the real full size.
    full = len(page_html(w, scope="all").encode("utf-8"))
    estimate = float(re.search(r"would be about ([\d.]+) MB", message).group(1)) * 1e6
    assert full > PAGE_LIMIT and abs(estimate - full) < 0.1 * full, (estimate, full)


def test_scope_all_forces_the_full_page_and_a_small_page_is_full_by_default(tmp_path, recwarn):
    w = _long_heatmap()
    path = aw.save_html(w, tmp_path / "full.html", scope="all")
    assert path.stat().st_size > 20_000_000 and _data(path.read_text(encoding="utf-8"))["scope"] == "all"
    small = aw.AttentionHeatmap(_evil_result())
    assert _data(page_html(small))["scope"] == "all"
    assert not [x for x in recwarn if issubclass(x.category, UserWarning)], "no warning when nothing is left out"
    with pytest.warns(UserWarning, match="over the 1 kB limit"):
        assert _data(page_html(small, limit=1000))["scope"] == "view"


def test_the_tab_title_shows_invisible_characters_as_the_views_do():
    page = page_html(aw.AttentionHeatmap(_evil_result()), title="gpt\u202e-x\u200b")
    assert "<title>gpt⟨U+202E⟩-x⟨U+200B⟩</title>" in page
