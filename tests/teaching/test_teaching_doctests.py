"""The teaching kit's docstring examples run and print what they say (they are what lecturers copy first)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["positional", "masks", "tasks", "transformer", "training", "__init__", "induction", "pretrain", "embeddings",
           "extrapolation"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in ("transformer", "training", "pretrain"):
        pytest.importorskip("torch")
    module = importlib.import_module("attnwidgets.teaching" + ("" if name == "__init__" else f".{name}"))
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0  # training's examples train for two steps, so they run too
