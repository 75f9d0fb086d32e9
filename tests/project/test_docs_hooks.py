"""The docs site's hook (docs/hooks.py) turns the docstrings' Sphinx roles into cross-references (issue 33 §2: 599
roles showed as raw text on the API pages); .ci/run's docs tier checks the built site has none left."""

from __future__ import annotations

import doctest
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hooks_examples_hold():
    failed, tried = doctest.testmod(_hooks())
    assert tried and not failed


def test_every_role_form_in_the_docstrings_is_turned():
    hooks = _hooks()
    html = ("see :class:<code>~attnwidgets.result.AttentionResult</code>, :py:meth:<code>Runner.run()</code>, "
            ":attr:<code>x.y</code> and <code>as in :func:`~a.b`</code>")
    out = hooks.sphinx_roles_to_refs(html)
    assert ":class:" not in out and ":meth:" not in out and ":attr:" not in out and ":func:" not in out
    assert '<autoref identifier="attnwidgets.result.AttentionResult" optional><code>AttentionResult</code>' in out
    assert "<code>Runner.run()</code>" in out and "<code>as in b</code>" in out
