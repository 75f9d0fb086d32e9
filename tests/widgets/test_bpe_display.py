"""Byte-level BPE tokens read as the text they stand for (issue 13 §3): `` café``, not ``ĠcafÃ©``; `` 東京``, not
``ĠæĿ±äº¬``; a character cut between tokens shows whole on the token that completes it, the bytes before as
``⟨E6 9D⟩``. The same strings in the result, word level, every view's page and every static twin; WordPiece
tokens unchanged. The rule: :mod:`attnwidgets.token_text`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bpe_models import TEXT, merged_tokenizer, save_bart, save_gpt2, split_tokenizer
from matplotlib.text import Text
from test_view_contract import VIEWS, Inputs

import attnwidgets as aw
from attnwidgets.analysis import CorpusStats, word_level
from attnwidgets.fallback import describe, twin_figure
from attnwidgets.runner import get_runner
from attnwidgets.runner.encoding import token_texts
from attnwidgets.token_text import BYTE_MARKER, display_tokens, merge_partials
from attnwidgets.viewdata.labels import token_label

#: The byte alphabet's spellings of the test text's bytes (Ġ = space, Ã© = é, æĿ± = 東, ðŁĻĤ = 🙂): none may be
#: shown. Whole spellings, not their characters: "±" alone is the ablation's "±0.0000", not half of 東.
MOJIBAKE = ("Ġ", "Ċ", "ĉ", "Ã©", "æĿ±", "äº¬", "ðŁĻĤ", "ðŁ", "æĿ", "äº")

# DejaVu Sans (matplotlib's default) has no CJK or emoji glyphs: a twin's text is right, the font draws boxes.
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font")

SPLIT = ["<s>", " ca", "f", "⟨C3⟩", "é", " ⟨E6⟩", "東", "⟨E4⟩", "⟨BA⟩", "京", " ", "⟨F0 9F 99⟩", "🙂", "</s>"]
MERGED = ["<s>", " café", " 東京", " 🙂", "</s>"]
TARGET = " 東京 🙂 café"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bpe")
    return {"merged": save_gpt2(merged_tokenizer(), root / "merged"),
            "split": save_gpt2(split_tokenizer(), root / "split"),
            "bart": save_bart(split_tokenizer(), root / "bart")}


def _no_mojibake(strings: Any, where: str) -> None:
    bad = [s for s in strings if any(m in s for m in MOJIBAKE)]
    assert not bad, f"{where}: byte-alphabet spellings shown: {bad[:5]}"


def _text_of(tokens: list[str], special: np.ndarray) -> str:
    return merge_partials("".join(t for t, s in zip(tokens, special, strict=True) if not s))


# -- the rule, by hand ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("pieces", "shown"), [
    ([b" caf\xc3\xa9"], [" café"]),  # ĠcafÃ©
    ([b" \xe6\x9d\xb1\xe4\xba\xac"], [" 東京"]),  # ĠæĿ±äº¬
    ([b" \xe6", b"\x9d\xb1", b"\xe4\xba\xac"], [" ⟨E6⟩", "東", "京"]),  # Ġæ Ŀ± äº¬
    ([b" \xe6\x9d", b"\xb1\xe4", b"\xba\xac"], [" ⟨E6 9D⟩", "東⟨E4⟩", "京"]),  # a token ends one and starts the next
    ([b"\xe6", b"\x9d", b"\xb1"], ["⟨E6⟩", "⟨9D⟩", "東"]),  # <0xE6> <0x9D> <0xB1>
    ([b"\xf0\x9f\x99", b"\x82"], ["⟨F0 9F 99⟩", "🙂"]),  # ðŁĻ Ĥ
    ([b"\xe6\x9d", "</s>", b"\xb1a"], ["⟨E6 9D⟩", "</s>", "⟨B1⟩a"]),  # a special token cuts the character: no 東
    ([b"\xe6\x9d"], ["⟨E6 9D⟩"]),  # the input ends inside a character
    ([b"\xff\xc0\xaf", b"\xed\xa0\x80"], ["⟨FF C0 AF⟩", "⟨ED A0 80⟩"]),  # never UTF-8; an overlong form; a surrogate
    ([b"\n\t"], ["\n\t"]),  # Ċĉ
])
def test_display_rule(pieces, shown):
    assert display_tokens(pieces) == shown


def test_merge_partials_gives_back_the_text():
    assert merge_partials("".join([" ⟨E6 9D⟩", "東⟨E4⟩", "京"])) == " 東京"
    assert merge_partials("⟨E6⟩⟨9D⟩東") == "東"
    assert merge_partials("⟨E6 9D⟩a") == "⟨E6 9D⟩a", "bytes a character does not complete stay marked"
    assert merge_partials("⟨B1⟩⟨E6 9D⟩東") == "⟨B1⟩東"


def test_sentencepiece_byte_fallback_tokens():
    """Llama-2 style: "▁" for a space, ``<0xE6>`` for a byte without a piece; the bytes make 東 whole."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "▁": 1, "c": 2, "é": 3, "▁c": 4, **{f"<0x{b:02X}>": 5 + b for b in range(256)}}
    tok = Tokenizer(models.BPE(vocab, [("▁", "c")], unk_token="<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    ids = fast(" 東", add_special_tokens=False)["input_ids"]
    assert fast.convert_ids_to_tokens(ids) == ["▁", "<0xE6>", "<0x9D>", "<0xB1>"]
    assert token_texts(fast, ids, [False] * 4) == [" ", "⟨E6⟩", "⟨9D⟩", "東"]
    assert token_texts(fast, [4, 3], [False, False]) == [" c", "é"]


# -- runner results ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "tokens"), [("split", SPLIT), ("merged", MERGED)])
def test_gpt2_tokens_read_as_text(models, name, tokens):
    r = aw.run(TEXT, model=models[name])
    raw = get_runner(models[name]).tokenizer.convert_ids_to_tokens(r.token_ids.tolist())
    assert any(m in t for t in raw for m in MOJIBAKE), "the tokenizer spells bytes (the case under test)"
    assert r.tokens == tokens
    assert _text_of(r.tokens, r.special_mask) == TEXT
    _no_mojibake(r.tokens, "tokens")
    for t in r.tokens:  # every marker is a run of bytes that starts the next character: honest hex, upper case
        for m in BYTE_MARKER.finditer(t):
            assert bytes.fromhex(m.group(1))[0] >= 0x80
    assert word_level(r).tokens == ["<s>", "café", "東京", "🙂", "</s>"]


def test_encoder_decoder_source_and_target_tokens(models):
    r = aw.run(TEXT, model=models["bart"], target=TARGET)
    assert r.tokens == SPLIT
    assert r.target_tokens == ["</s>", "<s>", " ⟨E6⟩", "東", "⟨E4⟩", "⟨BA⟩", "京", " ", "⟨F0 9F 99⟩", "🙂",
                               " ca", "f", "⟨C3⟩", "é"]  # shifted right: the decoder start, then <s> and the text


def test_batches_show_the_same_tokens(models):
    rows = aw.run_batch([TEXT, "The cat sat."], model=models["split"])
    assert rows[0].tokens == SPLIT


def test_wordpiece_tokens_do_not_change(tiny_bert):
    """The bundled BERT lowercases and strips accents: `café` is `cafe`, the emoji [UNK]; all as before."""
    r = aw.run(TEXT, model=tiny_bert)
    assert r.tokens == ["[CLS]", "cafe", "東", "京", "[UNK]", "[SEP]"]
    r = aw.run("unaffable playing", model=tiny_bert)
    assert r.tokens == ["[CLS]", *get_runner(tiny_bert).tokenizer.tokenize("unaffable playing"), "[SEP]"]
    assert any(t.startswith("##") for t in r.tokens)


# -- every view and every static twin ------------------------------------------------------------------------------

def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _page_strings(w: Any) -> list[str]:
    """Every string the page gets: synced state and the replies a saved page holds."""
    out = _strings({k: v for k, v in w.get_state().items() if not k.startswith("_dom")})
    handlers = w._handlers()
    try:
        requests = w._export_requests("all")
    except TypeError:  # a view that cannot be saved
        requests = []
    for req in requests[-5:]:  # the labels requests come last
        out += _strings(handlers[req["what"]](req)[0])
    return out


@pytest.fixture(scope="module")
def bpe_inputs(models) -> Inputs:
    encdec = aw.run(TEXT, model=models["bart"], target=TARGET)
    merged = aw.run(TEXT, model=models["merged"])
    split = aw.run(TEXT, model=models["split"])
    corpus = CorpusStats(patterns=False)
    corpus.update([merged, split])
    capture = aw.runner.capture_qk(TEXT, model=models["split"])
    generation = aw.generate(TEXT, model=models["split"], max_new_tokens=3)
    return Inputs(encdec, merged, [merged, split], corpus, capture, generation)


#: What each view's page must carry, beyond no byte-alphabet spelling anywhere (views without tokens carry none).
SHOWN = {
    "AttentionHeatmap": SPLIT[1:-1],  # cross attention of the BART: target and source tokens
    "ModelView": SPLIT[1:-1],
    "HeadView": MERGED,
    "QKStepThrough": SPLIT,
    "GenerationView": SPLIT,  # the prompt, as the page lists it
    "AblationWidget": [" café", " 東京"],  # the watched text's tokens, as the drift table names them
}
#: Static twins that label tokens (the model view's thumbnails have none).
TWIN_LABELS = {"AttentionHeatmap", "HeadView", "QKStepThrough"}


@pytest.mark.parametrize("case", VIEWS, ids=[v.id for v in VIEWS])
def test_every_view_and_twin_shows_text(bpe_inputs, case):
    w = case.make(bpe_inputs)
    strings = _page_strings(w)
    _no_mojibake(strings, f"{case.id} page")
    missing = [t for t in SHOWN.get(case.id, []) if t not in strings]
    assert not missing, f"{case.id}: the page lacks {missing}"
    _no_mojibake([describe(w)], f"{case.id} description")
    fig = twin_figure(w)
    if fig is None:
        return
    texts = [t.get_text() for t in fig.findobj(Text)]
    _no_mojibake(texts, f"{case.id} static twin")
    if case.id not in TWIN_LABELS:
        return
    labels = [token_label(t) for t in SHOWN[case.id] if t.strip()]
    drawn = set(texts) | {s for t in texts for s in t.split()}
    missing = [t for t in labels if t not in drawn]
    assert not missing, f"{case.id} static twin lacks {missing} (drew {sorted(set(texts))[:40]})"


def test_word_level_heatmap_page_and_twin(bpe_inputs):
    w = aw.AttentionHeatmap(bpe_inputs.results[1], words=True)  # the split GPT-2
    strings = _page_strings(w)
    assert {"café", "東京", "🙂"} <= set(strings)
    _no_mojibake(strings, "word-level page")
    texts = {t.get_text() for t in twin_figure(w).findobj(Text)}
    assert {"café", "東京", "🙂"} <= texts
    assert not any("⟨" in t for t in texts), "no partial bytes are left in word labels"


def test_twin_labels_of_split_tokens(bpe_inputs):
    fig = aw.plots.plot_heatmap(bpe_inputs.results[1], 0, 0)
    texts = {t.get_text() for t in fig.findobj(Text)}
    assert {"·ca", "⟨C3⟩", "é", "·⟨E6⟩", "東", "京", "⟨F0 9F 99⟩", "🙂"} <= texts, sorted(texts)


def test_the_same_tokens_in_a_saved_page(bpe_inputs, tmp_path: Path):
    page = aw.save_html(aw.HeadView(bpe_inputs.bert), tmp_path / "head.html").read_text(encoding="utf-8")
    assert '[["\\u003cs\\u003e"," café"," 東京"," 🙂","\\u003c/s\\u003e"]' in page
    assert "ĠcafÃ©" not in page
