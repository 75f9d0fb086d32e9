"""Fill in the [MASK]: the shipped MLM head of the bundled model, aw.studies.fill_mask, the held-out accuracy
measure."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.data import data_path
from attnwidgets.studies import masked_lm as fm


def test_shipped_head_is_small_float16_and_without_the_decoder_matrix():
    path = data_path(fm.HEAD_FILE)
    assert path.stat().st_size < 1_500_000
    with np.load(path) as z:
        names = set(z.files) - {"report", "layer"}
        assert names == {"dense_weight", "dense_bias", "norm_weight", "norm_bias", "bias"}
        assert all(z[n].dtype == np.float16 for n in names)
        report = json.loads(str(z["report"]))
        assert int(z["layer"]) == report["layer"] == fm.load_head().layer
    rows = {r["variant"]: r for r in report["table"]}
    # The stored table's baseline is what frequency_baseline measures now (same split, same positions).
    base = rows["word frequency (baseline)"]
    now = fm.frequency_baseline()
    assert (base["held-out top-1"], base["held-out top-5"]) == pytest.approx((now[1], now[5]))
    # float16 storage keeps the chosen head's accuracy (fill_mask_accuracy of the shipped file, measured at writing)
    chosen, check = rows[report["chosen"]], report["held_out_check"]
    assert check["top-1"] == pytest.approx(chosen["held-out top-1"], abs=0.005)
    assert check["top-5"] == pytest.approx(chosen["held-out top-5"], abs=0.005)
    assert check["n"] == now.n > 500


def test_head_matches_a_hand_built_forward_and_is_tied():
    runner = aw.runner.get_runner()
    head = fm.load_head(runner)
    emb = runner.model.get_input_embeddings().weight
    assert head.embeddings.data_ptr() == emb.data_ptr()          # the decoder IS the input embedding matrix
    assert not any(p is head.embeddings for p in head.parameters())
    with np.load(data_path(fm.HEAD_FILE)) as z:
        w, b, g, beta, bias = (z[n].astype(np.float64) for n in
                               ("dense_weight", "dense_bias", "norm_weight", "norm_bias", "bias"))
    rng = np.random.default_rng(1)
    hid = rng.normal(size=(3, w.shape[0]))
    x = hid @ w.T + b
    x = 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2)))   # exact GELU
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * g + beta
    want = x @ emb.detach().double().numpy().T + bias
    got = head(torch.from_numpy(hid).float()).detach().double().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_fill_mask_probabilities_and_positions():
    text = "The chef tasted the [MASK] and added more salt."
    df = aw.studies.fill_mask(text, k=5)
    assert list(df.columns) == ["mask", "position", "rank", "token", "probability"]
    assert list(df["rank"]) == [1, 2, 3, 4, 5]
    assert (np.diff(df["probability"]) <= 0).all()
    assert aw.run(text).tokens[int(df["position"][0])] == "[MASK]"
    _, _, logits = fm.fill_mask_logits(text)
    full = torch.softmax(torch.from_numpy(logits).double(), -1).numpy()
    assert full.sum() == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(df["probability"], np.sort(full[0])[::-1][:5], rtol=1e-9)
    df_all = aw.studies.fill_mask(text, k=30522)
    assert df_all["probability"].sum() == pytest.approx(1.0, abs=1e-6)


def test_fill_mask_on_an_easy_sentence_gives_what_was_measured():
    # The shipped head (10 epochs on the shipped text) still leans on frequent pieces: on this sentence its top five
    # are (measured) . .20, the .10, because .04, a .04, for .02; on the chef's sentence food words come in
    # ("delicious", "tomatoes" in the top five). This pins that behaviour, so a better head shows up as a failing test.
    df = aw.studies.fill_mask("The cat sat on the [MASK].")
    assert df["token"][0] == "." and 0.15 < df["probability"][0] < 0.25
    assert {"the", "a"} <= set(df["token"])
    chef = aw.studies.fill_mask("The chef tasted the [MASK] and added more salt.")
    assert {"delicious", "tomatoes"} <= set(chef["token"])


def test_fill_mask_spellings_and_several_masks():
    a = aw.studies.fill_mask("The chef tasted the [MASK] and added more salt.")
    b = aw.studies.fill_mask("The chef tasted the <mask> and added more salt.")
    c = aw.studies.fill_mask("The chef tasted the [mask] and added more salt.")
    assert list(a["token"]) == list(b["token"]) == list(c["token"])
    two = aw.studies.fill_mask("The [MASK] sat on the [MASK].", k=3)
    assert sorted(set(two["mask"])) == [0, 1] and len(two) == 6
    assert two["position"].nunique() == 2


def test_fill_mask_errors():
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        aw.studies.fill_mask("The chef tasted the soup.")
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        aw.studies.fill_mask("The chef tasted the ___.")
    with pytest.raises(ValueError, match="empty"):
        aw.studies.fill_mask("   ")
    with pytest.raises(TypeError, match="string"):
        aw.studies.fill_mask(["The [MASK]."])  # type: ignore[arg-type]
    for k in (0, -1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="k must be"):
            aw.studies.fill_mask("The [MASK].", k=k)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens long"):
        aw.studies.fill_mask("word " * 600 + "[MASK]")
    hostile = aw.studies.fill_mask("<b>bold</b> <script>alert(1)</script> \x00 [MASK] 🦜.")
    assert len(hostile) == 5 and hostile["probability"].between(0, 1).all()


def test_fill_mask_other_models(tiny_bert, tiny_bert_mlm):
    with pytest.raises(fm.NoMaskedLMHeadError, match="no masked-LM head"):
        aw.studies.fill_mask("The [MASK] sat.", model=tiny_bert)
    df = aw.studies.fill_mask("The [MASK] sat.", model=tiny_bert_mlm, k=4)
    runner = aw.runner.get_runner(tiny_bert_mlm)
    tok = runner.tokenizer
    enc = tok("The [MASK] sat.", return_tensors="pt")
    with torch.no_grad():
        logits = runner.model(**enc).logits[0, 2]
    top = torch.topk(torch.softmax(logits.double(), -1), 4)
    assert list(df["token"]) == tok.convert_ids_to_tokens(top.indices.tolist())
    np.testing.assert_allclose(df["probability"], top.values.numpy(), rtol=1e-6)


def test_the_view_says_whose_guesses_and_how_they_score_read_from_the_head_file(tiny_bert_mlm):
    scores = fm.shipped_head_scores()
    with np.load(data_path(fm.HEAD_FILE)) as z:
        report = json.loads(str(z["report"]))
    assert scores["top1"] == pytest.approx(report["held_out_check"]["top-1"])
    assert scores["baseline_top1"] == pytest.approx(report["table"][0]["held-out top-1"])
    w = aw.FillMask("The chef tasted the [MASK].", k=3)
    note = w._meta["head"]
    assert note.startswith("Not the model's own head (it has none)")
    assert f"{100 * scores['top1']:.1f} %" in note and f"{100 * scores['baseline_top1']:.1f} %" in note
    assert f"layer-{scores['layer']}" in note and f"({scores['n']} words)" in note
    own = fm.fill_mask_view("The [MASK] sat.", 2, tiny_bert_mlm)["head"]
    assert own.startswith("The model's own masked-LM head")


def test_widget_state_and_errors():
    w = aw.FillMask("The chef tasted the [MASK] and added more salt.", k=3)
    assert w.layer == 5 and w.head == -1 and w.mask == 0
    table = aw.studies.fill_mask("The chef tasted the [MASK] and added more salt.", k=3)
    assert w.fills()[0]["tokens"] == list(table["token"])
    r = aw.run("The chef tasted the [MASK] and added more salt.")
    pos = int(table["position"][0])
    np.testing.assert_allclose(w.attention_row(), r.attention[5, :, pos].mean(0), rtol=1e-6)
    w.layer, w.head = 2, 7
    np.testing.assert_allclose(w.attention_row(), r.attention[2, 7, pos], rtol=1e-6)
    assert w._payload["rows"]["shape"] == [1, 6, 12, len(r.tokens)]
    w.text = "No mask in this one."
    assert "no [MASK]" in w._error and w.fills()[0]["tokens"] == list(table["token"])   # the last good view stays
    w.text = "The [MASK] barked at the [MASK]."
    assert w._error == "" and len(w.fills()) == 2
    w.mask = 1
    with pytest.raises(Exception, match="out of range"):
        w.mask = 2
    with pytest.raises(Exception, match="out of range"):
        w.head = 12
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        aw.FillMask("nothing to fill")
    with pytest.raises(ValueError, match="k must be"):
        aw.FillMask("The [MASK].", k=0)


def test_static_twin():
    w = aw.FillMask("The [MASK] barked at the [MASK].", k=4)
    fig = aw.plots.plot_fill_mask(w.view, mask=1, layer=3, head=2, theme="lecture")
    axes = fig.axes
    assert len(axes) == 3
    bars = [p.get_width() for p in axes[1].patches]
    np.testing.assert_allclose(sorted(bars, reverse=True), w.fills()[1]["probs"], rtol=1e-6)
    heights = [p.get_height() for p in axes[2].patches]
    np.testing.assert_allclose(heights, w.view["rows"][1, 3, 2], rtol=1e-6)
    for ax in axes[:2]:                        # one fixed 0-100 % axis, however sure the top filler is
        assert ax.get_xlim() == (0, 1)
    texts = fig.get_suptitle() + " " + fig.supxlabel_text() if hasattr(fig, "supxlabel_text") else \
        fig.get_suptitle() + " " + fig._supxlabel.get_text()
    flat = texts.replace("\n", " ")
    assert "attnwidgets' head" in flat and "Not the model's own head" in flat and w._meta["head"][:40] in flat
    with pytest.raises(ValueError, match="out of range"):
        aw.plots.plot_fill_mask(w.view, mask=2)
    with pytest.raises(TypeError, match="fill_mask_view"):
        aw.plots.plot_fill_mask({"tokens": []})


# -- the measure: fill_mask_accuracy and frequency_baseline on hand-made cases -----------------------------------------

DOCS = ["The cat sat on the mat.", "A dog barked, unbelievably!"]
# Words with a letter or digit: the cat sat on the mat | a dog barked unbelievably. "unbelievably" is several pieces,
# so it is left out: 9 positions. Punctuation is never a target.
FAVOURITES = ["the", "dog", "mat", "zebra", "xylophone"]   # the rigged model's ranking, best first


def _rigged(path: str, cls_name: str = "BertForMaskedLM"):
    """The tiny BERT with its output bias set so its ranking is FAVOURITES whatever the input, and [MASK] above all
    (special tokens must be excluded from the ranking, so it never counts)."""
    import transformers

    model = getattr(transformers, cls_name).from_pretrained(path).eval()
    tok = transformers.AutoTokenizer.from_pretrained(path)
    bias = model.get_output_embeddings().bias
    with torch.no_grad():
        bias.zero_()
        for rank, word in enumerate(FAVOURITES):
            bias[tok.convert_tokens_to_ids(word)] = 1000.0 - 10 * rank
        bias[tok.mask_token_id] = 2000.0
    return model, tok


def test_mask_cases_words_and_pieces():
    tok = aw.runner.get_runner().tokenizer
    c = fm.mask_cases(tok, DOCS)
    assert [tok.convert_ids_to_tokens(t) for t in c.targets] == ["the", "cat", "sat", "on", "the", "mat", "a", "dog",
                                                                 "barked"]
    assert c.n_multi_piece == 1 and c.n_docs == 2
    for ids, pos, t in zip(c.inputs, c.positions, c.targets, strict=True):
        assert ids[pos] == tok.mask_token_id and ids.count(tok.mask_token_id) == 1   # one word masked at a time
        original = tok(DOCS[0] if len(ids) == len(tok(DOCS[0])["input_ids"]) else DOCS[1])["input_ids"]
        assert original[pos] == t and [x for i, x in enumerate(ids) if i != pos] == \
            [x for i, x in enumerate(original) if i != pos]


def test_accuracy_of_a_model_that_always_says_the_same(tiny_bert_mlm, tmp_path):
    model, tok = _rigged(tiny_bert_mlm)
    acc = fm.fill_mask_accuracy(model, DOCS, k=(1, 2, 3, 5), tokenizer=tok)
    # targets: the cat sat on the mat a dog barked -> top-1 "the" hits 2; top-2 adds "dog" (3); top-3 adds "mat" (4);
    # zebra and xylophone never occur.
    assert acc.n == 9 and acc.n_multi_piece == 1
    assert acc.top == {1: pytest.approx(2 / 9), 2: pytest.approx(3 / 9), 3: pytest.approx(4 / 9),
                       5: pytest.approx(4 / 9)}
    assert list(acc.hits[1]) == [True, False, False, False, True, False, False, False, False]
    # The same model saved to a folder and read by name (the runner path), and as BertForPreTraining
    model.save_pretrained(tmp_path / "rigged")
    tok.save_pretrained(tmp_path / "rigged")
    assert fm.fill_mask_accuracy(str(tmp_path / "rigged"), DOCS, k=(1, 3)).top == {1: pytest.approx(2 / 9),
                                                                                  3: pytest.approx(4 / 9)}
    pre, _ = _rigged(str(tmp_path / "rigged"), "BertForPreTraining")
    assert fm.fill_mask_accuracy(pre, DOCS, k=2).top == {2: pytest.approx(3 / 9)}


def test_frequency_baseline_by_hand():
    # train targets: the x3, cat x2, dog x1 -> guesses the, cat, dog
    train = ["the cat the", "The cat. The dog!"]
    b = fm.frequency_baseline(docs=DOCS, train_docs=train, k=(1, 2, 3))
    assert b.top == {1: pytest.approx(2 / 9), 2: pytest.approx(3 / 9), 3: pytest.approx(4 / 9)}
    assert b.n == 9


def test_accuracy_bad_input(tiny_bert):
    for k in (0, (), (1, -5), True, 2.5):
        with pytest.raises(ValueError, match="k must be"):
            fm.fill_mask_accuracy(docs=DOCS, k=k)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of texts"):
        fm.fill_mask_accuracy(docs="The cat sat.")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no word to mask"):
        fm.fill_mask_accuracy(docs=["... !!!"])
    with pytest.raises(fm.NoMaskedLMHeadError, match="no masked-LM head"):
        fm.fill_mask_accuracy(tiny_bert, DOCS)
    with pytest.raises(TypeError, match="model must be"):
        fm.fill_mask_accuracy(3.5, DOCS)


def test_a_head_file_from_elsewhere_is_read_as_untrusted_input(tmp_path):
    # load_head(path=) read any .npz with np.load: NaN weights loaded, another model's shapes failed late, and an
    # archive bomb was inflated before anything was checked.
    from attnwidgets.persist import SavedFileError

    with np.load(data_path(fm.HEAD_FILE)) as z:
        arrays = {k: z[k] for k in z.files}
    bad = dict(arrays, dense_bias=np.full_like(arrays["dense_bias"], np.nan))
    np.savez(tmp_path / "nan.npz", **bad)
    with pytest.raises(SavedFileError, match="dense_bias holds NaN"):
        fm.load_head(path=tmp_path / "nan.npz")
    small = dict(arrays, bias=arrays["bias"][:10])
    np.savez(tmp_path / "small.npz", **small)
    with pytest.raises(SavedFileError, match=r"'bias' of shape \(10,\), not \(30522,\)"):
        fm.load_head(path=tmp_path / "small.npz")
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(SavedFileError, match="not a masked-LM head file"):
        fm.load_head(path=tmp_path / "text.npz")
    assert fm.load_head(path=data_path(fm.HEAD_FILE)).layer == arrays["layer"]
