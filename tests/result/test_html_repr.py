"""Results and analyses show as one compact HTML table in a notebook (``_repr_html_``, attnwidgets/html_repr.py), and
no string that goes in (token text, frame cells, column names) ever becomes markup; ``surface_stats`` returns the
same kind of thing as ``corpus_stats`` (``.mean()``, ``.frame()``) and still reads as a dict."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from attnwidgets.analysis import CorpusStats, SurfaceStats, stats_to_frame, surface_stats
from attnwidgets.html_repr import ROWS, TOKENS, repr_html
from attnwidgets.result import AttentionResult

HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", '"><b onmouseover=x>', "&amp;"]

#: what the table may contain: these tags, these attributes, nothing else.
TAGS = {"div", "b", "table", "tr", "th", "td"}
ATTRS = {"style", "class"}


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs |= {name for name, _ in attrs}

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> _Markup:
    p = _Markup()
    p.feed(html)
    p.close()
    return p


def hostile_result() -> AttentionResult:
    n = len(HOSTILE) + 1
    a = np.full((2, 3, n, n), 1.0 / n, dtype=np.float32)
    return AttentionResult.from_arrays(a, ["[CLS]", *HOSTILE])


def test_hostile_tokens_show_as_text_never_as_markup():
    html = hostile_result()._repr_html_()
    p = parsed(html)
    assert set(p.tags) <= TAGS, f"markup from the data: {set(p.tags) - TAGS}"
    assert p.attrs <= ATTRS, f"attributes from the data: {p.attrs - ATTRS}"
    text = "".join(p.text)
    for token in HOSTILE:  # each token reads back as itself, as text
        assert token in text
    assert "<img" not in html and "<script" not in html and "onerror=alert(1)>" not in html


def test_hostile_frame_cells_and_column_names_are_escaped():
    class Holder:  # any object with a frame attribute, as SweepResult has
        frame = pd.DataFrame({"<th onclick=x>unit": HOSTILE, "value": [0.123456, 1, 2.5, np.nan]})

        def __repr__(self) -> str:
            return "Holder(<script>)"

    p = parsed(repr_html(Holder()))
    assert set(p.tags) <= TAGS and p.attrs <= ATTRS
    text = "".join(p.text)
    assert "<th onclick=x>unit" in text and "Holder(<script>)" in text and all(t in text for t in HOSTILE)
    assert "0.1235" in text and "nan" in text


def test_frame_rows_shown_and_counted():
    r = hostile_result()
    acc = CorpusStats(patterns=False)
    acc.add(r)
    frame = acc.frame()
    assert len(frame) > ROWS
    html = acc._repr_html_()
    p = parsed(html)
    # the token table is absent (CorpusStats has no tokens); the frame table: a header row + ROWS rows
    assert p.tags.count("tr") == 1 + ROWS
    assert f"{len(frame)} rows × {len(frame.columns)} columns, first {ROWS} shown" in "".join(p.text)
    # first shown row is the frame's first row, to 4 significant digits
    first = frame.iloc[0]
    assert f"{first['value']:.4g}" in "".join(p.text)


def test_token_row_counts_tokens_past_the_limit():
    n = TOKENS + 5
    r = AttentionResult.from_arrays(np.eye(n, dtype=np.float32), [f"t{i}" for i in range(n)])
    text = "".join(parsed(r._repr_html_()).text)
    assert f"tokens ({n})" in text and "… 5 more" in text and f"t{TOKENS - 1}" in text and f"t{TOKENS}" not in text


def test_an_empty_corpus_shows_its_summary_without_a_table():
    html = CorpusStats()._repr_html_()
    assert "no model yet" in html and "<table" not in html


# -- surface_stats: the shape corpus_stats has ------------------------------------------------------------------


def test_surface_stats_reads_like_corpus_stats_and_like_the_dict_it_was():
    a = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    r = AttentionResult.from_arrays(a, ["[CLS]", "hi", "[SEP]"])
    s = surface_stats(r)
    assert isinstance(s, SurfaceStats) and isinstance(s, dict)
    # hand-computed: [SEP] gets (0 + 1 + 1) / 3 of the rows' mass, [CLS] 0.5 / 3, previous token 0
    assert s["sep"][0, 0] == pytest.approx(2 / 3) and s["cls"][0, 0] == pytest.approx(0.5 / 3)
    assert s["prev"][0, 0] == 0.0 and set(s) == set(s.mean())
    assert s.n_docs == 1 and s.n_tokens == 3 and s.model is r.model and s.words is False
    acc = CorpusStats(patterns=False)
    acc.add(r)
    pd.testing.assert_frame_equal(s.frame(), acc.frame())  # one input: its corpus frame
    pd.testing.assert_frame_equal(s.frame(), stats_to_frame(dict(s)))
    assert {**s}.keys() == s.keys()


def test_surface_stats_displays_as_a_table_in_ipython():
    from IPython.core.formatters import HTMLFormatter

    html = HTMLFormatter()(surface_stats(hostile_result()))
    assert html is not None and html.startswith('<div class="aw-repr">') and "SurfaceStats" in html


def test_a_right_to_left_override_in_a_token_or_the_summary_is_shown_as_a_marker():
    # U+202E reversed the rest of the cell in the notebook (and the model name in the summary line) before.
    a = np.full((1, 1, 3, 3), 1 / 3, np.float32)
    r = AttentionResult.from_arrays(a, ["[CLS]", "\u202eevil.exe", "[SEP]"], text="a \u202etxt.exe")
    html = r._repr_html_()
    assert "\u202e" not in html and "⟨U+202E⟩evil.exe" in "".join(parsed(html).text)
