"""The QK step-through's RoPE step: q and k before the rotation, the angle of each pair of dimensions at each
position, and q·k before it, for Llama, Mistral (sliding window) and GPT-NeoX (partial rotary).

Checked against transformers' own eager model: q and k before the rotation equal its query/key projections (hooked
there, not turned back), the angles equal position × θ_p worked out from the config's base, and the softmax of the
re-rotated q·k (scaled, masked) equals its eager attention weights to 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.qk_result import QKCapture, masked_softmax, rotate_pairs
from attnwidgets.runner.qk import capture_qk, capture_qk_layers

TEXT = "The cat sat on the mat because it was tired."
FAMILIES = ["tiny_llama", "tiny_mistral", "tiny_gpt_neox"]


def _eager_reference(path: str, runner) -> tuple[tuple[torch.Tensor, ...], dict[int, tuple[np.ndarray, np.ndarray]]]:
    """The eager model's attention weights per layer and each layer's q, k straight from its projections."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    cfg = model.config
    n_heads, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", n_heads) or n_heads
    projected: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    handles = []
    for name, module in model.named_modules():
        layer = next((int(p) for p in name.split(".") if p.isdigit()), None)
        if name.endswith("self_attn"):  # Llama, Mistral: q_proj and k_proj
            def grab(mod, args, kwargs, out, layer=layer):
                x = kwargs.get("hidden_states", args[0] if args else None)
                t = x.shape[1]
                q = mod.q_proj(x).view(1, t, n_heads, d).transpose(1, 2)[0].numpy()
                k = mod.k_proj(x).view(1, t, n_kv, d).transpose(1, 2)[0].numpy()
                projected[layer] = (q, k)
            handles.append(module.register_forward_hook(grab, with_kwargs=True))
        elif name.endswith("attention.query_key_value"):  # GPT-NeoX: one fused projection, (q, k, v) per head
            def grab_fused(mod, args, out, layer=layer):
                t = out.shape[1]
                qkv = out.view(1, t, n_heads, 3 * d).transpose(1, 2)[0].numpy()
                projected[layer] = (qkv[..., :d], qkv[..., d:2 * d])
            handles.append(module.register_forward_hook(grab_fused))
    enc = runner.encode([TEXT], [None], [None])
    with torch.no_grad():
        out = model(**enc.inputs, output_attentions=True, return_dict=True)
    for h in handles:
        h.remove()
    return out.attentions, projected


def _hand_angles(path: str, n: int) -> np.ndarray:
    """(n, r/2) position × θ_p with θ_p = base^(-2p/r), r the rotary dimensions, wrapped to (-π, π]."""
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(path)
    d = cfg.hidden_size // cfg.num_attention_heads
    params = cfg.rope_parameters
    r = int(d * params.get("partial_rotary_factor", 1.0))
    theta = params["rope_theta"] ** (-np.arange(0, r, 2) / r)
    return np.angle(np.exp(1j * np.arange(n)[:, None] * theta[None, :]))


@pytest.mark.parametrize("family", FAMILIES)
def test_rope_step_matches_eager_attention(family, request):
    path = request.getfixturevalue(family)
    runner = aw.runner.get_runner(path)
    caps = capture_qk_layers(TEXT, model=runner, rope=True)
    eager, projected = _eager_reference(path, runner)
    for cap in caps:
        rope = cap.rope
        assert rope is not None and rope.pairs == "halves" and rope.scale == pytest.approx(1.0)
        q_ref, k_ref = projected[cap.layer]
        np.testing.assert_allclose(rope.q, q_ref, atol=1e-5)  # before the rotation: the projections themselves
        np.testing.assert_allclose(rope.k, k_ref, atol=1e-5)
        n = len(cap.tokens)
        np.testing.assert_allclose(rope.angle, _hand_angles(path, n), atol=1e-5)
        rq, rk = rope.rotated()
        np.testing.assert_allclose(rq, cap.q, atol=1e-5)
        logits = np.einsum("hnd,hmd->hnm", rq, rk[cap.kv_head])
        weights = masked_softmax(logits * cap.scaling, cap.mask)
        np.testing.assert_allclose(weights, eager[cap.layer][0].numpy(), atol=1e-5)
        np.testing.assert_allclose(rope.logits, np.einsum("hnd,hmd->hnm", q_ref, k_ref[cap.kv_head]), atol=1e-4)
        # the rotation changes q·k: position information is in it (else the step would show nothing)
        assert np.abs(rope.logits - cap.logits)[:, 1:, 1:].max() > 1e-3


def test_partial_rotary_keeps_the_other_dimensions(tiny_gpt_neox):
    cap = capture_qk(TEXT, model=tiny_gpt_neox, layer=1)
    assert cap.rope is not None and cap.head_dim == 8 and cap.rope.rotary_dim == 4  # rotary_pct = 0.5
    np.testing.assert_allclose(cap.q[..., 4:], cap.rope.q[..., 4:], atol=1e-6)
    assert np.abs(cap.q[:, 1:, :4] - cap.rope.q[:, 1:, :4]).max() > 1e-3


def test_rotation_depends_on_distance_only():
    # Two positions with the same distance give the same rotated q·k for the same vectors (hand-made angles).
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(4,)), rng.normal(size=(4,))
    theta = np.array([1.0, 0.1])
    at = lambda pos, x: rotate_pairs(x[None], (pos * theta)[None])[0]  # noqa: E731
    assert at(5, q) @ at(3, k) == pytest.approx(at(9, q) @ at(7, k), abs=1e-5)
    assert at(5, q) @ at(3, k) != pytest.approx(at(5, q) @ at(4, k), abs=1e-3)


def test_non_rotary_model_asked_for_rope_is_a_clear_error(tiny_gpt2):
    with pytest.raises(ValueError, match=r"no rotary position embeddings.*Llama"):
        capture_qk(TEXT, model=tiny_gpt2, rope=True)
    assert capture_qk(TEXT, model=tiny_gpt2).rope is None  # asked for nothing: no step, no error


def test_rope_false_skips_the_step(tiny_llama):
    assert capture_qk(TEXT, model=tiny_llama, rope=False).rope is None
    assert isinstance(capture_qk(TEXT, model=tiny_llama), QKCapture)


def _hand_rotary_capture() -> QKCapture:
    """2 heads (1 key/value head), 5 tokens, d = 6 of which r = 4 rotate: angles position × (1, 0.1)."""
    from attnwidgets.qk_result import Rotary

    rng = np.random.default_rng(1)
    angle = np.arange(5)[:, None] * np.array([[1.0, 0.1]])
    rot = Rotary.from_vectors(rng.normal(size=(2, 5, 6)), rng.normal(size=(1, 5, 6)), angle)
    q, k = rot.rotated()
    return QKCapture.from_vectors(q, k, rng.normal(size=(1, 5, 6)), list("abcde"), mask=np.tril(np.ones((5, 5))),
                                  rope=rot)


def test_view_state_window_widget_and_twin_carry_the_rope_step():
    from attnwidgets.plots.qk import plot_qk
    from attnwidgets.viewdata.views.qk import QKOptions, qk_state
    from attnwidgets.widgets.qk import QKStepThrough

    cap = _hand_rotary_capture()
    rope = cap.rope
    assert rope is not None and rope.rotary_dim == 4
    np.testing.assert_allclose(rope.angle[3], [3.0 - 2 * np.pi * 0, 0.3], atol=1e-6)  # 3 rad is inside (-π, π]
    np.testing.assert_allclose(rope.angle[4, 0], 4.0 - 2 * np.pi, atol=1e-6)  # 4 rad wraps
    state = qk_state({0: cap}, QKOptions(layer=0, head=1, query=3, window=(0, 5)))
    a = state.payload.arrays
    assert state.meta.rope and state.meta.rotary_dim == 4
    np.testing.assert_array_equal(a.q_pre, rope.q[1])
    np.testing.assert_array_equal(a.k_pre, rope.k[0])
    np.testing.assert_allclose(a.logits_pre, rope.q[1] @ rope.k[0].T, atol=1e-6)
    np.testing.assert_array_equal(a.angle, rope.angle)
    win = qk_state({0: cap}, QKOptions(layer=0, head=1, query=3, window=(1, 4))).payload.arrays
    assert win.keys is not None
    cols = win.keys.astype(int)
    np.testing.assert_array_equal(win.k_pre, rope.k[0][cols])
    np.testing.assert_array_equal(win.angle, rope.angle[cols])
    np.testing.assert_array_equal(win.q_angle, rope.angle[3][None])
    np.testing.assert_allclose(win.logits_pre, (rope.q[1, 3] @ rope.k[0][cols].T)[None], atol=1e-6)
    w = QKStepThrough(cap, head=1, query=3)
    v = w.values()
    np.testing.assert_array_equal(v["q_angle"], rope.angle[3])
    np.testing.assert_array_equal(v["logits_pre"], rope.logits[1, 3])
    titles = [ax.get_title() for ax in plot_qk(cap, head=1, query=3).axes[:9]]
    assert titles[:4] == ["① q, k before RoPE", "② q · k before RoPE", "③ angle per pair", "④ q, k after RoPE"]
    assert titles[8] == "⑨ Σ weight × v"
    assert [ax.get_title() for ax in plot_qk(cap, head=1, query=3, rope=False).axes[:1]] == ["① query q, keys k"]


def test_twin_asked_for_rope_on_a_capture_without_it_is_a_clear_error():
    from attnwidgets.plots.qk import plot_qk

    rng = np.random.default_rng(0)
    plain = QKCapture.from_vectors(*rng.normal(size=(3, 2, 3, 4)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="no rotary step"):
        plot_qk(plain, rope=True)
