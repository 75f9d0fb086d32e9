"""Copies of the tiny test models with random biases: random initialisation leaves every bias 0, which would hide
b_V and b_O in the norm-based maps (Kobayashi et al. 2020) and b_V in value zeroing's v_j (Mohebbi et al. 2023), so
the tests that check those by hand run on a copy made here."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import torch


def with_random_biases(path: str, tmp_path: Path, cls: Any, seed: int) -> str:
    """A copy of the model saved at ``path`` (loaded with ``cls``) in ``tmp_path / "biased"``, every bias drawn from
    N(0, 0.5²) with ``seed``; returns the copy's folder."""
    out = tmp_path / "biased"
    shutil.copytree(path, out)
    model = cls.from_pretrained(out)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(out)
    return str(out)
