"""The test of tests/analysis/test_parser_errors.py that needs a model: a lone surrogate given to aw.run."""

from __future__ import annotations

import pytest

import attnwidgets as aw


def test_a_lone_surrogate_is_a_clear_error():
    with pytest.raises(ValueError, match=r"text holds a lone surrogate \(U\+DC80 at character 1\).*surrogateescape"):
        aw.run("a\udc80b")
