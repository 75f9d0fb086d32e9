"""The test of tests/analysis/test_analysis_surface.py that needs a model: surface statistics of real decoders."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnwidgets.analysis import (
    surface_stats,
)


@pytest.mark.parametrize("fixture", ["tiny_llama", "tiny_gpt2"])
def test_decoder_stats(fixture, request):
    import attnwidgets as aw

    path = request.getfixturevalue(fixture)
    r = aw.run("The cat sat on the mat because it was tired.", model=path)
    assert r.model.kind == "decoder"
    a = r.attention.astype(np.float64)
    n = r.n_tokens
    assert np.allclose(np.triu(a, 1), 0.0)  # causal
    s = surface_stats(r)
    assert np.allclose(s["first"], a[..., :, 0].mean(-1), atol=1e-6)
    assert np.allclose(s["entropy_cls"], 0.0, atol=1e-5)  # row 0 sees only itself
    baseline = np.mean([math.log(i + 1) for i in range(n)])
    assert np.allclose(s["entropy_uniform"], baseline)
    assert (s["entropy"] <= baseline + 1e-5).all()
    assert (s["sep"] == 0).all()
    assert np.isnan(s["sep_sep"]).all()
    h_last = -(a[..., -1, :] * np.log(np.where(a[..., -1, :] > 0, a[..., -1, :], 1))).sum(-1)
    assert np.allclose(s["entropy_last"], h_last, atol=1e-5)
