"""The rest of the block: norm variants, residual-stream write ratios (toy and Hugging Face, against explicit torch),
the attention-cost measurement and its slope fit, and their figures."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnwidgets.analysis.residual import ResidualContributions, loglog_slope, write_ratio
from attnwidgets.teaching.block import VARIANTS, attention_cost, compare_norms, toy_residual_contributions
from attnwidgets.teaching.tasks import get_task
from attnwidgets.teaching.training import train
from attnwidgets.teaching.transformer import DecoderOnlyTransformer, RMSNorm, TransformerConfig


def ratio_by_hand(write: torch.Tensor, stream: torch.Tensor) -> float:
    return float((write.double().norm(dim=-1) / stream.double().norm(dim=-1)).mean())


# -- analysis -------------------------------------------------------------------------------------------------------

def test_write_ratio_by_hand_and_valid_mask():
    stream = np.array([[3.0, 4.0], [0.0, 2.0], [1.0, 0.0]])
    write = np.array([[0.0, 1.0], [1.0, 0.0], [9.0, 9.0]])
    assert write_ratio(write[:2], stream[:2]) == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert write_ratio(write, stream, valid=np.array([True, True, False])) == pytest.approx(0.35)


@pytest.mark.parametrize("bad", [dict(write=np.ones((2, 3)), stream=np.ones((2, 2))),
                                 dict(write=np.ones(3), stream=np.ones(3)),
                                 dict(write=np.ones((2, 2)), stream=np.zeros((2, 2))),
                                 dict(write=np.ones((2, 2)), stream=np.ones((2, 2)), valid=np.zeros(2, bool))])
def test_write_ratio_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        write_ratio(**bad)


def test_slope_fit_on_synthetic_timings():
    rng = np.random.default_rng(0)
    n = np.array([128, 256, 512, 1024, 2048])
    quadratic = 3e-9 * n**2 * np.exp(rng.normal(0, 0.05, n.size))  # 5 % timing noise
    assert loglog_slope(n, quadratic) == pytest.approx(2.0, abs=0.1)
    d = np.array([32, 64, 128, 256])
    assert loglog_slope(d, 1e-6 * d) == pytest.approx(1.0)
    assert loglog_slope(d, 1e-6 * d + 1e-3) < 0.5  # a fixed cost flattens the slope: what a small d shows


@pytest.mark.parametrize("x, y", [([1, 2], [1, 0]), ([1, 1], [1, 2]), ([1, 2, 3], [1, 2]), ([0, 1], [1, 2]),
                                  ([1, np.nan], [1, 2])])
def test_slope_fit_rejects_bad_input(x, y):
    with pytest.raises(ValueError):
        loglog_slope(x, y)


# -- norm variants --------------------------------------------------------------------------------------------------

def build(variant: str) -> DecoderOnlyTransformer:
    torch.manual_seed(0)
    return DecoderOnlyTransformer(TransformerConfig(vocab_size=14, d_model=16, d_ff=32, **VARIANTS[variant]))


def test_variants_differ_only_in_norm_placement_and_type():
    models = {v: build(v) for v in VARIANTS}
    norm_types = (torch.nn.LayerNorm, RMSNorm)
    for v, model in models.items():
        norms = [m for m in model.modules() if isinstance(m, norm_types)]
        want = RMSNorm if VARIANTS[v]["norm"] == "rms" else torch.nn.LayerNorm
        assert norms and all(type(m) is want for m in norms), v
        assert all(block.res1.norm_first == VARIANTS[v]["norm_first"] for block in model.blocks)
        # pre-LN has one more norm, before the LM head
        assert len(norms) == 2 * len(model.blocks) + (1 if VARIANTS[v]["norm_first"] else 0)
    # every weight outside the norms is the same tensor in all four: same seed, same initial weights
    reference = {k: p for k, p in models["pre-LN"].state_dict().items() if "norm" not in k}
    for v, model in models.items():
        others = {k: p for k, p in model.state_dict().items() if "norm" not in k}
        assert others.keys() == reference.keys(), v
        assert all(torch.equal(others[k], reference[k]) for k in reference), v


def test_compare_norms_same_data_and_only_the_norm_changes():
    cmp = compare_norms(steps=3, variants=["pre-LN", "post-RMSNorm"], n_held_out=5, progress=False)
    assert cmp.losses.shape == cmp.grad_norms.shape == (2, 3)
    assert np.isfinite(cmp.losses).all() and (cmp.grad_norms > 0).all()
    a, b = (dataclasses.asdict(r.model.cfg) for r in cmp.runs)
    assert {k for k in a if a[k] != b[k]} == {"norm_first", "norm"}
    # the same seed twice gives the same run (data and weights), so a difference between variants is the norm's
    again = compare_norms(steps=3, variants=["pre-LN"], n_held_out=5, progress=False)
    np.testing.assert_array_equal(again.losses[0], cmp.losses[0])
    assert set(cmp.table().columns) >= {"final loss", "max grad norm"}


def test_grad_norm_is_recorded_before_clipping():
    clipped = train(steps=2, n_held_out=5, progress=False, clip=1e-3)
    free = train(steps=2, n_held_out=5, progress=False, clip=None)
    assert clipped.grad_norms[0] == pytest.approx(free.grad_norms[0])  # step 0: same weights, same batch
    assert clipped.grad_norms[0] > 1e-3  # so clipping would have acted: the norm is the one before it
    assert clipped.losses[1] != free.losses[1]


@pytest.mark.parametrize("kwargs, match", [
    (dict(variants=["pre-LN", "sideways"]), "unknown variant"),
    (dict(variants=[]), "unknown variant"),
    (dict(variants=["pre-LN", "pre-LN"]), "each variant once"),
    (dict(config={"norm": "rms"}), "must not set"),
    (dict(steps=0), "steps"),
    (dict(lr=-1.0), "lr"),
    (dict(warmup=-1), "warmup"),
    (dict(clip=0), "clip"),
])
def test_compare_norms_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        compare_norms(**{"steps": 1, "n_held_out": 2, "progress": False, **kwargs})


# -- residual contributions, toy ------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [True, False])
def test_toy_residual_contributions_by_hand(norm_first):
    task = get_task("reverse")
    torch.manual_seed(1)
    cfg = TransformerConfig(vocab_size=len(task.vocab), pad_id=task.vocab.pad_id, d_model=16, n_heads=2, d_ff=32,
                            n_decoder_layers=1, norm_first=norm_first)
    model = DecoderOnlyTransformer(cfg).eval()
    for p in model.parameters():  # move the norms away from their identity initialisation
        p.data += 0.1 * torch.randn_like(p)
    rc = toy_residual_contributions(model, "3 1 4", task=task)

    tokens = ["<bos>", "3", "1", "4", "<sep>", "4", "1", "3"]
    ids = torch.tensor(task.vocab.encode(tokens))
    block = model.blocks[0]
    x = model.embed.tok.weight[ids] * math.sqrt(16) + model.embed.pos[: len(ids)]  # (n, C)

    def ln(h, norm):
        return F.layer_norm(h, (16,), norm.weight, norm.bias, norm.eps)

    def attn(h):
        m = block.self_attn
        q, k, v = (F.linear(h, p.weight, p.bias).view(-1, 2, 8).transpose(0, 1) for p in (m.q_proj, m.k_proj, m.v_proj))
        s = q @ k.transpose(-1, -2) / math.sqrt(8)
        s = s.masked_fill(~torch.tril(torch.ones(len(h), len(h), dtype=torch.bool)), float("-inf"))
        return F.linear((s.softmax(-1) @ v).transpose(0, 1).reshape(-1, 16), m.out_proj.weight, m.out_proj.bias)

    def ff(h):
        lin1, _, lin2, _ = block.ff.net
        return F.linear(torch.relu(F.linear(h, lin1.weight, lin1.bias)), lin2.weight, lin2.bias)

    with torch.no_grad():
        if norm_first:
            a = attn(ln(x, block.res1.norm))
            f = ff(ln(x + a, block.res2.norm))
            want = [ratio_by_hand(a, x), ratio_by_hand(f, x + a)]
        else:
            a = attn(x)
            h = ln(x + a, block.res1.norm)
            f = ff(h)
            want = [ratio_by_hand(a, x), ratio_by_hand(f, h)]
    assert rc.layers == ["L0"] and rc.sublayers == ["attention", "feed-forward"]
    np.testing.assert_allclose(rc.ratio[0], want, rtol=1e-4)
    assert rc.norm_first is norm_first and rc.tokens == tokens


def test_toy_residual_contributions_encoder_decoder_rows():
    run = train(steps=1, n_held_out=2, progress=False)
    rc = toy_residual_contributions(run)
    assert rc.layers == ["enc 0", "enc 1", "dec 0", "dec 1"]
    assert rc.sublayers == ["attention", "cross-attention", "feed-forward"]
    assert np.isnan(rc.ratio[:2, 1]).all() and np.isfinite(rc.ratio[2:]).all()
    assert np.isfinite(rc.ratio[:, [0, 2]]).all()


def test_toy_residual_contributions_rejects_bad_input():
    with pytest.raises(TypeError, match="TrainingRun"):
        toy_residual_contributions("reverse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task="):
        toy_residual_contributions(build("pre-LN"), "3 1 4")


# -- residual contributions, Hugging Face ---------------------------------------------------------------------------

def test_residual_contributions_gpt2_by_hand(tiny_gpt2):
    from attnwidgets.runner import get_runner
    from attnwidgets.studies.residual import residual_contributions

    text = "the cat sat on the mat"
    rc = residual_contributions(text, model=tiny_gpt2)
    runner = get_runner(tiny_gpt2)
    enc = runner.encode([text])
    ids = enc.inputs["input_ids"][0]
    tf = runner.model.transformer
    assert rc.norm_first is True and rc.ratio.shape == (2, 2)
    with torch.no_grad():
        x = tf.wte.weight[ids] + tf.wpe.weight[: len(ids)]
        for i, block in enumerate(tf.h):
            h = F.layer_norm(x, (32,), block.ln_1.weight, block.ln_1.bias, block.ln_1.eps)
            q, k, v = (h @ block.attn.c_attn.weight + block.attn.c_attn.bias).split(32, dim=-1)
            q, k, v = (t.view(-1, 4, 8).transpose(0, 1) for t in (q, k, v))
            s = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(
                ~torch.tril(torch.ones(len(ids), len(ids), dtype=torch.bool)), float("-inf"))
            a = (s.softmax(-1) @ v).transpose(0, 1).reshape(-1, 32) @ block.attn.c_proj.weight + block.attn.c_proj.bias
            h2 = F.layer_norm(x + a, (32,), block.ln_2.weight, block.ln_2.bias, block.ln_2.eps)
            inner = F.gelu(h2 @ block.mlp.c_fc.weight + block.mlp.c_fc.bias, approximate="tanh")
            m = inner @ block.mlp.c_proj.weight + block.mlp.c_proj.bias
            np.testing.assert_allclose(rc.ratio[i], [ratio_by_hand(a, x), ratio_by_hand(m, x + a)], rtol=1e-4)
            x = x + a + m


def test_residual_contributions_bert_by_hand(tiny_bert):
    from attnwidgets.runner import get_runner
    from attnwidgets.studies.residual import residual_contributions

    text = "the cat sat on the mat"
    rc = residual_contributions(text, model=tiny_bert)
    runner = get_runner(tiny_bert)
    out = runner.forward(runner.encode([text]))
    assert rc.norm_first is False and rc.layers == ["L0", "L1"]
    with torch.no_grad():
        for i, layer in enumerate(runner.model.encoder.layer):
            x = out.hidden_states[i][0]
            sa = layer.attention.self
            q, k, v = (F.linear(x, p.weight, p.bias).view(-1, 4, 8).transpose(0, 1)
                       for p in (sa.query, sa.key, sa.value))
            ctx = ((q @ k.transpose(-1, -2) / math.sqrt(8)).softmax(-1) @ v).transpose(0, 1).reshape(-1, 32)
            a = F.linear(ctx, layer.attention.output.dense.weight, layer.attention.output.dense.bias)
            ln1 = layer.attention.output.LayerNorm
            h = F.layer_norm(x + a, (32,), ln1.weight, ln1.bias, ln1.eps)
            f = layer.output.dense(F.gelu(layer.intermediate.dense(h)))
            ln2 = layer.output.LayerNorm
            torch.testing.assert_close(F.layer_norm(h + f, (32,), ln2.weight, ln2.bias, ln2.eps),
                                       out.hidden_states[i + 1][0], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(rc.ratio[i], [ratio_by_hand(a, x), ratio_by_hand(f, h)], rtol=1e-4)


def test_residual_contributions_llama_and_unsupported(tiny_llama, tiny_bart):
    from attnwidgets.studies.residual import ResidualUnavailableError, residual_contributions

    rc = residual_contributions("the cat sat", model=tiny_llama)  # GQA, RMSNorm, pre-LN: the output check passes
    assert rc.norm_first is True and np.isfinite(rc.ratio).all() and (rc.ratio > 0).all()
    with pytest.raises(ResidualUnavailableError, match="encoder-decoder"):
        residual_contributions("the cat sat", model=tiny_bart)


# -- attention cost -------------------------------------------------------------------------------------------------

def test_attention_cost_small_and_its_checks():
    cost = attention_cost(ns=(32, 64, 128), ds=(8, 16), repeats=1, n_fixed=32, d_fixed=8)
    assert cost.weight_bytes.tolist() == [32 * 32 * 4, 64 * 64 * 4, 128 * 128 * 4]
    assert (cost.seconds_n > 0).all() and (cost.seconds_d > 0).all()
    assert cost.slope_n == pytest.approx(loglog_slope(cost.ns, cost.seconds_n))
    assert torch.get_num_threads() >= 1
    for bad in (dict(ns=(64,)), dict(ns=(64, 64)), dict(ds=(0, 8)), dict(ds=(8.5, 16)), dict(repeats=0),
                dict(n_fixed=True), dict(ns=(128, 20000))):
        with pytest.raises(ValueError):
            attention_cost(**bad)


# -- figures --------------------------------------------------------------------------------------------------------

def test_figures_draw_what_they_are_given():
    from types import SimpleNamespace

    from attnwidgets.plots.block import plot_attention_cost, plot_norm_comparison, plot_residual_contributions

    c = SimpleNamespace(variants=["pre-LN", "post-LN"], losses=np.array([[3.0, 2.0, 1.0], [3.0, 3.0, 3.0]]),
                        grad_norms=np.ones((2, 3)), settings={"lr": 0.01, "warmup": 0, "clip": None})
    fig = plot_norm_comparison(c, smooth=1)
    lines = fig.axes[0].get_lines()
    assert [ln.get_label() for ln in lines] == ["pre-LN", "post-LN"]
    np.testing.assert_array_equal(lines[0].get_ydata(), [3.0, 2.0, 1.0])
    assert fig._suptitle.get_text() == "lr 0.01, warmup 0, clip None"
    with pytest.raises(ValueError, match="variants"):
        plot_norm_comparison(SimpleNamespace(variants=["a"], losses=np.ones((2, 3)), grad_norms=np.ones((2, 3))))

    rc = ResidualContributions(np.array([[0.2, 0.5], [0.3, np.nan]]), np.ones((2, 2)), np.ones((2, 2)), ["L0", "L1"],
                               ["attention", "feed-forward"], "toy", False, ["a"])
    fig = plot_residual_contributions([rc, rc])
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx([0.2, 0.3, 0.5, 0.0])
    with pytest.raises(TypeError):
        plot_residual_contributions("toy")  # type: ignore[arg-type]

    cost = SimpleNamespace(ns=np.array([100, 200, 400]), seconds_n=np.array([1.0, 4.0, 16.0]) * 1e-3,
                           ds=np.array([10, 20]), seconds_d=np.array([1.0, 2.0]) * 1e-3, n_fixed=400, d_fixed=10)
    fig = plot_attention_cost(cost)
    assert fig.axes[0].get_title() == "time ∝ n^2.00 (d = 10)"
    assert fig.axes[1].get_title() == "time ∝ d^1.00 (n = 400)"
