"""token_label / visible_text, the Python twin of js/src/shared/text.ts: the same cases (tests/token_label_cases.json,
which js/test/text.test.ts checks too), the same table of invisible characters, and the labels a figure draws."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from attnwidgets.result import AttentionResult
from attnwidgets.viewdata.labels import INVISIBLE_RANGES, is_invisible, token_label, visible_text

CASES = json.loads((Path(__file__).parents[1] / "token_label_cases.json").read_text(encoding="utf-8"))["cases"]
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


@pytest.mark.parametrize(("token", "max_len", "label"), CASES, ids=[repr(c[0]) for c in CASES])
def test_token_label_matches_the_shared_cases(token, max_len, label):
    assert token_label(token, max_len) == label


@pytest.mark.parametrize("char", list(BIDI + ZERO_WIDTH), ids=lambda c: f"U+{ord(c):04X}")
def test_bidi_controls_and_zero_width_characters_become_markers(char):
    label = token_label(f"a{char}b", 40)
    assert label == f"a⟨U+{ord(char):04X}⟩b" and char not in label


def test_zero_width_space_token_is_not_blank():
    assert token_label("\u200b") == "⟨U+200B⟩"


def test_the_table_is_the_js_table():
    source = (Path(__file__).parents[2] / "js/src/shared/text.ts").read_text(encoding="utf-8")
    block = source.split("INVISIBLE_RANGES", 1)[1].split("];", 1)[0]
    js = re.findall(r"\[(0x[0-9a-f]+), (0x[0-9a-f]+)\]", block)
    assert tuple((int(lo, 16), int(hi, 16)) for lo, hi in js) == INVISIBLE_RANGES


def test_the_table_covers_every_control_and_format_character_python_knows():
    """Python's unicodedata may be older than the table (Unicode 17): a table entry Python does not know is
    unassigned here (Cn); everything Python calls Cc, Cf, Zl or Zp is in the table."""
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(c))
        if cat in ("Cc", "Cf", "Zl", "Zp"):
            assert is_invisible(chr(c)), f"U+{c:04X} ({cat}) is not marked"
        elif is_invisible(chr(c)):
            assert cat == "Cn", f"U+{c:04X} ({cat}) is marked but is not a control or format character"


def test_visible_text_keeps_spaces_and_marks_the_rest():
    assert visible_text(" gpt\u202e-x") == " gpt⟨U+202E⟩-x"


def test_a_figure_labels_a_right_to_left_override_token_visibly():
    matplotlib.use("Agg")
    from attnwidgets.plots import plot_heatmap

    tokens = ["a", "\u202eevil", "\u200b"]
    r = AttentionResult.from_arrays(np.full((1, 1, 3, 3), 1 / 3, dtype=np.float32), tokens)
    fig = plot_heatmap(r)
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert "⟨U+202E⟩evil" in labels and "⟨U+200B⟩" in labels
    assert not any(c in "".join(labels) for c in BIDI + ZERO_WIDTH)
