"""device= and dtype= on the runner: bfloat16 weights, float32 attention; clear errors for what this machine lacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnwidgets as aw
from attnwidgets.runner import get_runner
from attnwidgets.runner.ablation import Ablation
from attnwidgets.runner.loading import DeviceUnavailableError, resolve_device, resolve_dtype

TEXT = "The cat sat on the mat because it was tired."
# Rows: the softmax is float32, so they sum to 1 within float32 rounding (a bfloat16 softmax is off by up to ~4e-3).
# Closeness: bfloat16 keeps 8 bits of mantissa (eps 2**-7 = 7.8e-3) in the weights and activations between attention
# layers; on these 2-layer fixtures the weights move by at most 6.5e-5 (measured), so 2e-3 leaves room and still
# catches a softmax done in bfloat16.
ROW_TOL = 1e-5
CLOSE_TOL = 2e-3


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2", "tiny_llama"])
def test_bfloat16_weights_give_float32_attention_close_to_float32(fixture, request):
    path = request.getfixturevalue(fixture)
    r16 = get_runner(path, dtype="bfloat16")
    r32 = get_runner(path)
    assert r16 is not r32 and r16.dtype == torch.bfloat16 and r32.dtype == torch.float32
    assert next(r16.model.parameters()).dtype == torch.bfloat16
    assert r16.info.dtype == "bfloat16" and r32.info.dtype == "float32" and r16.info.device == "cpu"
    a16, a32 = r16.run(TEXT), r32.run(TEXT)
    assert a16.attention.dtype == np.float32 and a16.tokens == a32.tokens
    np.testing.assert_allclose(a16.attention.sum(-1), 1.0, atol=ROW_TOL)
    np.testing.assert_allclose(a16.attention, a32.attention, atol=CLOSE_TOL)
    for value in a16.outputs.values():
        assert value.dtype in (np.float32, np.int64)


def test_runner_cache_key_holds_device_and_dtype(tiny_bert):
    assert get_runner(tiny_bert, device="cpu", dtype="float32") is get_runner(tiny_bert)
    assert get_runner(tiny_bert, dtype=torch.bfloat16) is get_runner(tiny_bert, dtype="bfloat16")
    assert get_runner(tiny_bert, device="auto", dtype="bfloat16") is get_runner(tiny_bert, dtype="bfloat16") \
        or torch.cuda.is_available()


def test_run_and_run_batch_take_device_and_dtype(tiny_gpt2):
    res = aw.run(TEXT, model=tiny_gpt2, dtype="bfloat16", device="cpu")
    assert res.model.dtype == "bfloat16" and res.attention.dtype == np.float32
    batch = aw.run_batch([TEXT, "A dog."], model=tiny_gpt2, dtype="bfloat16", progress=False)
    assert batch[0] is res


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama"])
def test_ablation_and_partial_replay_in_bfloat16(fixture, request):
    runner = get_runner(request.getfixturevalue(fixture), dtype="bfloat16")
    clean = runner.run(TEXT)
    ablation = Ablation.heads([(1, 2)])
    replayed = runner.run(TEXT, ablation=ablation)  # the clean run is cached: layer 0 is replayed
    assert replayed.attention.dtype == np.float32
    np.testing.assert_array_equal(replayed.attention[1, 2], 0.0)
    np.testing.assert_array_equal(replayed.attention[0], clean.attention[0])
    runner.partial_recompute = False
    try:
        (full,) = runner.iter_results([TEXT], ablation=ablation, cache=False, progress=False)
    finally:
        runner.partial_recompute = True
    np.testing.assert_allclose(replayed.attention, full.attention, atol=1e-6)
    assert not np.allclose(replayed.outputs["embedding"], clean.outputs["embedding"])


def test_unavailable_device_says_what_torch_sees(tiny_bert):
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="cuda was asked for but torch sees no CUDA device"):
            get_runner(tiny_bert, device="cuda")
        with pytest.raises(DeviceUnavailableError, match="cuda:1 was asked for"):
            resolve_device("cuda:1")
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_available():
        with pytest.raises(DeviceUnavailableError, match="mps was asked for but torch sees no MPS device"):
            resolve_device("mps")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        get_runner(tiny_bert, device="gpu")
    assert resolve_device("auto").type in ("cuda", "mps", "cpu")


def test_unknown_dtype_is_refused(tiny_bert):
    with pytest.raises(ValueError, match=r"unknown dtype 'float8'.*'bfloat16'"):
        get_runner(tiny_bert, dtype="float8")
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype(torch.int8)
    runner = get_runner(tiny_bert)
    with pytest.raises(ValueError, match=r"not on cpu in bfloat16"):
        get_runner(runner, dtype="bfloat16")
    assert get_runner(runner, device="cpu", dtype="float32") is runner
